// RunRecorder (store/run_recorder.h) begun by the CLI (cli/run_store.h): a run that is never
// finished (an error path or an exception after it began) ends `failed`, not `running`; moving a
// recorder hands the run over without ending it; a sweep point held by another run makes the
// recorder report the holder and record nothing.
#include "cli/run_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace pipette::cli {
namespace {

std::string FreshDb(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "pipette_recorder_" + std::to_string(getpid()) + "_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

RunRecord Load(const std::string& path, std::int64_t id) {
  Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(path);
  EXPECT_TRUE(db.ok()) << db.status().message();
  Result<RunData> run = db->LoadRun(id, false);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? run->run : RunRecord{};
}

TEST(RunRecorder, ARunLeftUnfinishedByAnExceptionEndsFailed) {
  RecordOptions options;
  options.db = FreshDb("unfinished");
  std::int64_t id = 0;
  try {
    Result<RunRecorder> recorder = BeginRecording(options, "sim", {{"m", 2}});
    ASSERT_TRUE(recorder.ok()) << recorder.status().message();
    id = recorder->run_id();
    EXPECT_EQ(Load(options.db, id).status, kRunRunning);
    throw std::runtime_error("out of memory, say");
  } catch (const std::runtime_error&) {
  }
  const RunRecord run = Load(options.db, id);
  EXPECT_EQ(run.status, kRunFailed);
  EXPECT_NE(run.error.find("pipette ended before finishing the run"), std::string::npos)
      << run.error;
}

TEST(RunRecorder, MovingHandsTheRunOverAndFinishingKeepsItsStatus) {
  RecordOptions options;
  options.db = FreshDb("moved");
  std::int64_t id = 0;
  {
    Result<RunRecorder> recorder = BeginRecording(options, "sim", {{"m", 2}});
    ASSERT_TRUE(recorder.ok());
    RunRecorder moved = std::move(*recorder);
    id = moved.run_id();
    EXPECT_EQ(Load(options.db, id).status, kRunRunning);  // the moved-from one ended nothing
    ASSERT_TRUE(moved.Finish(RunData{}, kRunOk).ok());
  }
  EXPECT_EQ(Load(options.db, id).status, kRunOk);
}

TEST(RunRecorder, AHeldPointRecordsNothingAndNamesTheHolder) {
  RecordOptions options;
  options.db = FreshDb("held");
  options.experiment = "study";
  options.point_key = "m=2";
  Result<RunRecorder> first = BeginRecording(options, "sim", {{"m", 2}});
  ASSERT_TRUE(first.ok());
  Result<RunRecorder> second = BeginRecording(options, "sim", {{"m", 2}});
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_FALSE(second->enabled());
  ASSERT_TRUE(second->held().has_value());
  EXPECT_EQ(second->held()->run_id, first->run_id());
  EXPECT_EQ(second->held()->holder, "running");
}

}  // namespace
}  // namespace pipette::cli
