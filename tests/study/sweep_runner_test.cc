// Running a sweep's points (study/sweep_runner.h): what a finished child's exit code and last JSON
// line make of its point, and RunChildren's order, parallelism bound and failure to start.
#include "pipette/study/sweep_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pipette {
namespace {

TEST(ClassifyPoint, ExitZeroWithARunIdRan) {
  const PointResult r =
      ClassifyPoint("# text\n{\"run_id\":7,\"status\":\"oom\"}\n\n", "", ExitStatus{0, 0}, 1.5);
  EXPECT_EQ(r.outcome, PointResult::Outcome::kRan);
  EXPECT_EQ(r.run_id, 7);
  EXPECT_EQ(r.status, "oom");
  EXPECT_EQ(r.seconds, 1.5);
}

TEST(ClassifyPoint, ExitZeroNamingTheHolderIsHeld) {
  const PointResult r = ClassifyPoint(
      "{\"point_key\":\"m=8\",\"held_by_run\":3,"
      "\"held_status\":\"running\"}",
      "", ExitStatus{0, 0}, 0);
  EXPECT_EQ(r.outcome, PointResult::Outcome::kHeld);
  EXPECT_EQ(r.run_id, 3);
  EXPECT_EQ(r.status, "running");
}

TEST(ClassifyPoint, ExitZeroWithoutARunIdFailed) {
  const PointResult r = ClassifyPoint("done\n", "", ExitStatus{0, 0}, 0);
  EXPECT_EQ(r.outcome, PointResult::Outcome::kFailed);
  EXPECT_EQ(r.message, "exit 0 without a run id in its JSON output: done");
}

TEST(ClassifyPoint, ExitTwoIsInvalidWithTheLastLineOfItsErrors) {
  const PointResult r =
      ClassifyPoint("", "warning\npipette simulate: -m 0: must be >= 1\n", ExitStatus{2, 0}, 0);
  EXPECT_EQ(r.outcome, PointResult::Outcome::kInvalid);
  EXPECT_EQ(r.message, "pipette simulate: -m 0: must be >= 1");
}

TEST(ClassifyPoint, AnyOtherExitFailedAndSaysHow) {
  const PointResult r = ClassifyPoint("", "database is locked\n", ExitStatus{1, 0}, 0);
  EXPECT_EQ(r.outcome, PointResult::Outcome::kFailed);
  EXPECT_EQ(r.message, "exit 1: database is locked");
}

// Three children that each mark that they started and wait until the test releases them (from
// on_tick, on this thread), so the test sees how many run at once: never more than -j 2, and 2.
TEST(RunChildren, RunsEveryCommandAtMostJobsAtATimeAndReportsEach) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "run_children";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<ChildCommand> commands;
  for (int k = 0; k < 3; ++k) {
    const std::string mark = (dir / std::to_string(k)).string();
    commands.push_back({"/bin/sh",
                        {"sh", "-c",
                         "touch " + mark + ".started; i=0; while [ ! -e " + mark +
                             ".release ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
                             "echo '{\"run_id\":" +
                             std::to_string(k + 1) + ",\"status\":\"ok\"}'"}});
  }
  commands.push_back({"/no/such/program", {"x"}});
  std::vector<std::size_t> finished;
  int most_at_once = 0;
  const auto started = [&] {
    int n = 0;
    for (int k = 0; k < 3; ++k)
      n += std::filesystem::exists(dir / (std::to_string(k) + ".started"));
    return n;
  };
  const std::vector<PointResult> results = RunChildren(
      commands, 2, [&](std::size_t k, const PointResult&) { finished.push_back(k); },
      [&] {
        int done = 0;
        for (const std::size_t k : finished) done += k < 3;
        const int running = started() - done;
        most_at_once = std::max(most_at_once, running);
        // Release the oldest running child once as many run as may.
        if (running == std::min(2, 3 - done)) {
          for (int k = 0; k < 3; ++k) {
            const std::filesystem::path release = dir / (std::to_string(k) + ".release");
            if (std::filesystem::exists(dir / (std::to_string(k) + ".started")) &&
                !std::filesystem::exists(release)) {
              std::ofstream(release.string()) << "go\n";
              break;
            }
          }
        }
      });
  ASSERT_EQ(results.size(), 4u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(results[k].outcome, PointResult::Outcome::kRan) << results[k].message;
    EXPECT_EQ(results[k].run_id, k + 1);
  }
  EXPECT_EQ(results[3].outcome, PointResult::Outcome::kFailed);
  EXPECT_NE(results[3].message.find("/no/such/program"), std::string::npos) << results[3].message;
  EXPECT_EQ(finished.size(), 4u);
  EXPECT_EQ(most_at_once, 2);
}

}  // namespace
}  // namespace pipette
