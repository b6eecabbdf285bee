// End-to-end tests of `pipette sweep`: points recorded under the spec's experiment, resuming,
// parallel children writing one database, invalid specs and invalid points, children that cannot
// use their database, dry runs, figures.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "pipette/store/experiment_db.h"
#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Pipette;
using pipette::testing::ReadFile;
using pipette::testing::ScratchDir;

// Writes `text` to `name` in the scratch directory.
void WriteSpec(const std::string& name, const std::string& text) {
  std::ofstream(ScratchDir() + "/" + name) << text;
}

// The runs of `experiment` in `db` (in the scratch directory), via `pipette runs --format json`.
nlohmann::json Runs(const std::string& db, const std::string& experiment) {
  CommandResult run = Pipette("runs --db " + db + " --experiment " + experiment + " --format json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return nlohmann::json::parse(run.out, nullptr, false);
}

using pipette::testing::Contains;

// 2 schedules x 2 microbatch counts on the ideal network.
constexpr const char* kSmall = R"(name = "small"
description = "two schedules, two m"
[fixed]
times = "F=1,I=1,W=1"
ideal-network = true
[axes]
schedule = ["1f1b", "gpipe"]
pp = [4]
m = [4, 8]
)";

TEST(SweepCli, RecordsEveryPointOnceAndResumes) {
  WriteSpec("small.toml", kSmall);
  CommandResult first = Pipette("sweep small.toml --db small.db -j 2");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(Contains(first.err, "small: 4 points, 0 already done, running 4 with -j 2"))
      << first.err;
  EXPECT_TRUE(Contains(first.out, "ran                4   (ok 4, oom 0)")) << first.out;
  nlohmann::json runs = Runs("small.db", "small");
  ASSERT_EQ(runs.size(), 4u) << runs.dump();
  std::set<std::pair<std::string, int>> points;
  for (const auto& r : runs) {
    EXPECT_EQ(r["status"], "ok");
    EXPECT_EQ(r["config"]["pp"], 4);
    points.emplace(r["config"]["schedule"].get<std::string>(), r["config"]["m"].get<int>());
  }
  EXPECT_EQ(points, (std::set<std::pair<std::string, int>>{
                        {"1f1b", 4}, {"1f1b", 8}, {"gpipe", 4}, {"gpipe", 8}}));

  CommandResult again = Pipette("sweep small.toml --db small.db -j 2");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Contains(again.err, "small: 4 points, 4 already done, running 0")) << again.err;
  EXPECT_TRUE(Contains(again.out, "ran                0")) << again.out;
  EXPECT_EQ(Runs("small.db", "small").size(), 4u);
}

TEST(SweepCli, ParallelChildrenLoseNoRows) {
  WriteSpec("wide.toml", R"([fixed]
times = "F=1,I=2,W=1"
ideal-network = true
pp = 2
[axes]
schedule = ["1f1b", "gpipe", "zb-h1"]
m = [2, 3, 4, 5]
)");
  CommandResult run = Pipette("sweep wide.toml --db wide.db -j 6");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  pipette::Result<pipette::ExperimentDb> db =
      pipette::ExperimentDb::Open(ScratchDir() + "/wide.db");
  ASSERT_TRUE(db.ok()) << db.status().message();
  pipette::Result<std::optional<std::int64_t>> experiment = db->FindExperiment("wide");
  ASSERT_TRUE(experiment.ok() && experiment->has_value());
  std::set<std::int64_t> ids;
  for (const char* schedule : {"1f1b", "gpipe", "zb-h1"}) {
    for (int m = 2; m <= 5; ++m) {
      const std::string key = "ideal-network=true;m=" + std::to_string(m) +
                              ";pp=2;schedule=" + schedule + ";times=F=1,I=2,W=1";
      pipette::Result<std::optional<std::int64_t>> id = db->FindFinishedRun(**experiment, key);
      ASSERT_TRUE(id.ok() && id->has_value()) << key;
      ids.insert(**id);
    }
  }
  EXPECT_EQ(ids.size(), 12u);
  pipette::Result<std::vector<pipette::RunRecord>> all = db->ListRuns({**experiment, std::nullopt});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 12u);
}

TEST(SweepCli, InvalidSpecExitsTwoNamingFileKeyAndRuleWithoutWriting) {
  WriteSpec("bad-axis.toml", "[axes]\nm = 8\n");
  CommandResult run = Pipette("sweep bad-axis.toml --db bad.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err,
            "pipette sweep: bad-axis.toml:2: [axes] m = 8: an axis must be a list of values, e.g. "
            "[8]\n");
  WriteSpec("bad-key.toml", "[fixed]\nm = 8\n[axes]\nm = [8]\n");
  run = Pipette("sweep bad-key.toml --db bad.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Contains(run.err, "[axes] m = [ 8 ]: 'm' is also in [fixed]")) << run.err;
  WriteSpec("bad-option.toml", "[axes]\nmicro-batches = [8]\n");
  run = Pipette("sweep bad-option.toml --db bad.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Contains(run.err, "[axes] micro-batches: simulate has no option --micro-batches"))
      << run.err;
  run = Pipette("sweep missing.toml --db bad.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Contains(run.err, "sweep spec 'missing.toml': no such file")) << run.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/bad.db"));
}

TEST(SweepCli, InvalidPointIsReportedAndDoesNotFailTheSweep) {
  // zb-h2 needs m >= 2p: its m = 4 point is invalid.
  WriteSpec("mixed.toml", R"([fixed]
times = "F=1,I=1,W=1"
ideal-network = true
pp = 4
[axes]
schedule = ["1f1b", "zb-h2"]
m = [4, 8]
)");
  CommandResult run = Pipette("sweep mixed.toml --db mixed.db");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.err,
                       "invalid  ideal-network=true;m=4;pp=4;schedule=zb-h2;"
                       "times=F=1,I=1,W=1: pipette simulate: "))
      << run.err;
  EXPECT_TRUE(Contains(run.out, "ran                3")) << run.out;
  EXPECT_TRUE(Contains(run.out, "invalid            1")) << run.out;
  EXPECT_TRUE(Contains(run.out, "failed             0")) << run.out;
  EXPECT_EQ(Runs("mixed.db", "mixed").size(), 3u);
}

// The point key of kSmall's point (1f1b, m = 4).
constexpr const char* kSmallKey = "ideal-network=true;m=4;pp=4;schedule=1f1b;times=F=1,I=1,W=1";

// Records a `running` run of experiment "small" at kSmallKey owned by process `pid` in `db` (a
// sweep child still running after its parent was killed, or a concurrent sweep's child); returns
// its id.
std::int64_t RunningPoint(const std::string& db, pid_t pid) {
  pipette::Result<pipette::ExperimentDb> store = pipette::ExperimentDb::Open(db);
  EXPECT_TRUE(store.ok()) << store.status().message();
  pipette::RunRecord run;
  run.experiment_id = *store->EnsureExperiment("small", "", "");
  run.engine = "sim";
  run.config = "{}";
  run.pid = pid;
  pipette::Result<std::int64_t> id = store->BeginRun(run, kSmallKey);
  EXPECT_TRUE(id.ok()) << id.status().message();
  return id.ok() ? *id : 0;
}

// A rerun after only the parent was killed (its child still runs the point), or a second sweep of
// the same spec: the point held by the live process is not run again, and reruns add no duplicate.
TEST(SweepCli, APointRunningInALiveProcessIsNotRunAgain) {
  WriteSpec("small.toml", kSmall);
  std::filesystem::remove(ScratchDir() + "/held.db");
  const std::int64_t held = RunningPoint(ScratchDir() + "/held.db", getpid());  // alive: this test
  for (int attempt = 0; attempt < 2; ++attempt) {
    CommandResult run = Pipette("sweep small.toml --db held.db -j 2");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(Contains(run.out, "held               1")) << run.out;
    EXPECT_TRUE(Contains(run.err, "held     run " + std::to_string(held))) << run.err;
  }
  nlohmann::json runs = Runs("held.db", "small");
  ASSERT_EQ(runs.size(), 4u) << runs.dump();  // the held run and the three other points, once
  int running = 0;
  for (const auto& r : runs) running += r["status"] == "running";
  EXPECT_EQ(running, 1);
  // By hand: the child reports the holder and runs nothing.
  CommandResult child = Pipette(
      "simulate --times F=1,I=1,W=1 --ideal-network -p 4 --schedule 1f1b -m 4 --db held.db "
      "--experiment small --point-key '" +
      std::string(kSmallKey) + "' --format json");
  ASSERT_EQ(child.exit_code, 0) << child.err;
  const auto json = nlohmann::json::parse(child.out);
  EXPECT_EQ(json["held_by_run"], held);
  EXPECT_EQ(json["held_status"], "running");
}

// A point whose `running` run belongs to a process that ended is claimed and run; the stale run is
// marked failed.
TEST(SweepCli, APointOfADeadProcessIsRunAndItsStaleRunFailed) {
  WriteSpec("small.toml", kSmall);
  std::filesystem::remove(ScratchDir() + "/dead.db");
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::int64_t stale = RunningPoint(ScratchDir() + "/dead.db", gone);
  CommandResult run = Pipette("sweep small.toml --db dead.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.out, "ran                4")) << run.out;
  nlohmann::json runs = Runs("dead.db", "small");
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[0]["id"], stale);
  EXPECT_EQ(runs[0]["status"], "failed");
  EXPECT_TRUE(Contains(runs[0]["error"].get<std::string>(), "stale: process")) << runs[0];
}

TEST(SweepCli, AControlByteInASpecStringIsRefusedBeforeAnyRun) {
  WriteSpec("nul.toml",
            "[fixed]\ntimes = \"F=1\"\nideal-network = true\n[axes]\n"
            "schedule = [\"1f1b\\u0000\", \"gpipe\"]\n");
  std::filesystem::remove(ScratchDir() + "/nul.db");
  CommandResult run = Pipette("sweep nul.toml --db nul.db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(Contains(run.err, "nul.toml:5: [axes] schedule: byte 5 is the control byte 0x00"))
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/nul.db"));
}

// A database that cannot be opened is a failure (exit 1), not bad input (exit 2): a file that is
// not a database, and a path under a regular file (which root cannot open either).
TEST(SweepCli, ADatabaseThatCannotBeOpenedIsAFailureNotBadInput) {
  WriteSpec("small.toml", kSmall);
  std::ofstream(ScratchDir() + "/garbage.db") << std::string(4096, 'x');
  for (const std::string db : {"garbage.db", "garbage.db/inside.db"}) {
    CommandResult child =
        Pipette("simulate --times F=1 --ideal-network --db " + db + " --format json");
    EXPECT_EQ(child.exit_code, 1) << db << ": " << child.err;
    EXPECT_TRUE(Contains(child.err, "pipette simulate: --db = '" + db + "'")) << child.err;
    CommandResult sweep = Pipette("sweep small.toml --db " + db);
    EXPECT_EQ(sweep.exit_code, 1) << db << ": " << sweep.err;
  }
}

// A child whose database refuses its run (here a trigger stands in for a full disk or a broken
// file) exits 1, so the sweep counts its point as failed, not invalid, and exits 1. The sweep
// itself opens the same database first: only the run rows are refused.
TEST(SweepCli, AChildThatCannotRecordItsRunFailsThePointAndTheSweep) {
  WriteSpec("small.toml", kSmall);
  const std::string path = ScratchDir() + "/refusing.db";
  std::filesystem::remove(path);
  ASSERT_TRUE(pipette::ExperimentDb::Open(path).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "CREATE TRIGGER refuse_runs BEFORE INSERT ON runs BEGIN "
                         "SELECT RAISE(ABORT, 'the disk is full'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  CommandResult run = Pipette("sweep small.toml --db refusing.db");
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(Contains(run.out, "invalid            0")) << run.out;
  EXPECT_TRUE(Contains(run.out, "failed             4")) << run.out;
  EXPECT_TRUE(Contains(run.err,
                       "FAILED   ideal-network=true;m=8;pp=4;schedule=gpipe;times=F=1,I=1,W=1: "
                       "exit 1: pipette simulate: insert run: the disk is full"))
      << run.err;
}

TEST(SweepCli, DryRunListsThePointsAndWhichAreDone) {
  WriteSpec("dry.toml", R"([fixed]
times = "F=1,I=1,W=1"
ideal-network = true
pp = 2
schedule = "1f1b"
[axes]
m = [2, 4]
[[figures]]
kind = "bubble"
out = "figs/dry.png"
)");
  CommandResult dry = Pipette("sweep dry.toml --db dry.db --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/dry.db"));
  EXPECT_TRUE(Contains(dry.out, "# sweep dry (dry.toml): 2 points, 0 done, 2 to run; db dry.db"))
      << dry.out;
  EXPECT_TRUE(Contains(dry.out,
                       "       1  to run      ideal-network=true;m=2;pp=2;schedule=1f1b;"
                       "times=F=1,I=1,W=1\n"))
      << dry.out;
  EXPECT_TRUE(Contains(dry.out, "# figure bubble figs/dry.png from 2 points")) << dry.out;

  // Run one point by hand under the experiment: the dry run then shows it done.
  CommandResult one = Pipette(
      "simulate --times F=1,I=1,W=1 --ideal-network -p 2 --schedule 1f1b -m 2 --db dry.db "
      "--experiment dry --point-key 'ideal-network=true;m=2;pp=2;schedule=1f1b;"
      "times=F=1,I=1,W=1' --format json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto id = nlohmann::json::parse(one.out)["run_id"].get<std::int64_t>();
  dry = Pipette("sweep dry.toml --db dry.db --dry-run");
  EXPECT_TRUE(Contains(dry.out, "2 points, 1 done, 1 to run")) << dry.out;
  EXPECT_TRUE(Contains(dry.out, "       1  done " + std::to_string(id))) << dry.out;
}

// Every study committed under experiments/ still parses and lists its points: a spec the sweep
// code has outgrown fails here, not in the hour-long study that reruns it.
TEST(SweepCli, EveryCommittedSpecListsItsPoints) {
  int specs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(PIPETTE_EXPERIMENTS_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    ++specs;
    CommandResult dry =
        Pipette("sweep '" + entry.path().string() + "' --db committed.db --dry-run");
    EXPECT_EQ(dry.exit_code, 0) << entry.path() << ": " << dry.err;
    EXPECT_TRUE(Contains(dry.out, " points, 0 done, ")) << entry.path() << ": " << dry.out;
  }
  EXPECT_GE(specs, 12);
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/committed.db"));
}

TEST(SweepCli, FiguresAreDrawnOrWarnedAboutWithoutFailing) {
  WriteSpec("fig.toml", R"([fixed]
times = "F=1,I=1,W=1"
ideal-network = true
pp = 2
schedule = "1f1b"
[axes]
m = [2]
[[figures]]
kind = "bubble"
out = "fig.png"
)");
  // Until `pipette plot` is merged the sweep warns; once it is, the figure is drawn.
  const bool has_plot = Contains(Pipette("--help").out, "\n  plot ");
  CommandResult run = Pipette("sweep fig.toml --db fig.db");
  if (has_plot) {
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(Contains(run.err, "drew bubble figure fig.png")) << run.err;
    EXPECT_TRUE(std::filesystem::exists(ScratchDir() + "/fig.png"));
  } else {
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(Contains(run.err,
                         "warning: bubble figure fig.png not drawn: this pipette has no "
                         "`plot` command yet"))
        << run.err;
    EXPECT_TRUE(Contains(run.out, "figures            0   drawn (1 not drawn, 0 failed)"))
        << run.out;
  }
}

}  // namespace

// ---- measured points: command = "train" (label mpi: SweepTrainCli.*) ----

// Two tiny CPU training points, each `mpirun -np 2 pipette-train ...` started by the sweep.
constexpr const char* kTrain = R"(name = "measured"
command = "train"
[fixed]
engine = "cpu"
model = "tiny"
steps = 2
pp = 2
m = 4
[axes]
schedule = ["1f1b", "zb-h1"]
)";

constexpr const char* kTrainKey = "engine=cpu;m=4;model=tiny;pp=2;schedule=1f1b;steps=2";

TEST(SweepTrainCli, RunsTwoCpuPointsUnderMpirunOnceAndResumes) {
  WriteSpec("measured.toml", kTrain);
  std::filesystem::remove(ScratchDir() + "/measured.db");
  CommandResult first = Pipette("sweep measured.toml --db measured.db");
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  EXPECT_TRUE(Contains(first.out, "ran                2   (ok 2, oom 0)")) << first.out;
  nlohmann::json runs = Runs("measured.db", "measured");
  ASSERT_EQ(runs.size(), 2u) << runs.dump();
  std::set<std::string> schedules;
  for (const auto& r : runs) {
    EXPECT_EQ(r["engine"], "cpu");
    EXPECT_EQ(r["status"], "ok");
    EXPECT_EQ(r["config"]["pp"], 2);
    EXPECT_EQ(r["config"]["steps"], 2);
    EXPECT_EQ(r["config"]["model"], "tiny");
    schedules.insert(r["config"]["schedule"].get<std::string>());
  }
  EXPECT_EQ(schedules, (std::set<std::string>{"1f1b", "zb-h1"}));
  CommandResult again = Pipette("sweep measured.toml --db measured.db");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Contains(again.err, "measured: 2 points, 2 already done, running 0")) << again.err;
  EXPECT_EQ(Runs("measured.db", "measured").size(), 2u);
}

// predict = true: each measured point gets one prediction (simulate --costs-from its run) at its
// key plus ";predicted", kept on a rerun; pipette compare --experiment pairs them all.
TEST(SweepTrainCli, PredictsEachMeasuredPointOnceAndComparesThem) {
  std::string spec = kTrain;
  spec.replace(spec.find("command = \"train\"\n"), 18, "command = \"train\"\npredict = true\n");
  WriteSpec("predicted.toml", spec);
  std::filesystem::remove(ScratchDir() + "/predicted.db");
  CommandResult first = Pipette("sweep predicted.toml --db predicted.db");
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  EXPECT_TRUE(Contains(first.out, "predicted          2   (already 0, held 0, failed 0;"))
      << first.out;
  nlohmann::json runs = Runs("predicted.db", "measured");
  ASSERT_EQ(runs.size(), 4u) << runs.dump();
  int predictions = 0;
  for (const auto& r : runs) {
    if (r["engine"] != "sim") continue;
    ++predictions;
    EXPECT_EQ(r["status"], "ok");
    const std::int64_t measured = r["config"]["costs_from"].get<std::int64_t>();
    bool found = false;
    for (const auto& m : runs) found = found || (m["id"] == measured && m["engine"] == "cpu");
    EXPECT_TRUE(found) << r.dump();
  }
  EXPECT_EQ(predictions, 2);
  CommandResult again = Pipette("sweep predicted.toml --db predicted.db");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Contains(again.out, "predicted          0   (already 2, held 0, failed 0;"))
      << again.out;
  CommandResult summary = Pipette("compare --experiment measured --db predicted.db --format json");
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const nlohmann::json json = nlohmann::json::parse(summary.out);
  ASSERT_EQ(json["pairs"].size(), 2u);
  EXPECT_GT(json["pairs"][0]["measured_step_s"].get<double>(), 0);
  EXPECT_GT(json["pairs"][0]["predicted_step_s"].get<double>(), 0);
  EXPECT_GE(json["step_mape"].get<double>(), 0);
}

// A train point held by a live process is reported held by the pipette-train child (exit 0, JSON
// naming the holder), as a simulate point is, and is not run.
TEST(SweepTrainCli, AHeldTrainPointIsNotRunAgain) {
  WriteSpec("measured.toml", kTrain);
  const std::string db = ScratchDir() + "/held_train.db";
  std::filesystem::remove(db);
  std::int64_t held = 0;
  {
    pipette::Result<pipette::ExperimentDb> store = pipette::ExperimentDb::Open(db);
    ASSERT_TRUE(store.ok()) << store.status().message();
    pipette::RunRecord run;
    run.experiment_id = *store->EnsureExperiment("measured", "", "");
    run.engine = "cpu";
    run.config = "{}";
    run.pid = getpid();  // alive: this test
    held = *store->BeginRun(run, kTrainKey);
  }
  CommandResult run = Pipette("sweep measured.toml --db held_train.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.out, "ran                1")) << run.out;
  EXPECT_TRUE(Contains(run.out, "held               1")) << run.out;
  EXPECT_TRUE(Contains(run.err, "held     run " + std::to_string(held))) << run.err;
  EXPECT_EQ(Runs("held_train.db", "measured").size(), 2u);
}

// Keys are checked against train's options before anything runs; a point train refuses is
// invalid (exit 2 of its child), not failed.
TEST(SweepTrainCli, KeysAreTrainsOptionsAndARefusedPointIsInvalid) {
  WriteSpec("badkey.toml", "command = \"train\"\n[fixed]\ntimes = \"F=1\"\n");
  CommandResult bad = Pipette("sweep badkey.toml --db badkey.db");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(Contains(bad.err, "[fixed] times: train has no option --times")) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/badkey.db"));
  // zb-h2 needs m >= 2p: with pp = 2, m = 2 the child refuses the point.
  WriteSpec("invalid.toml",
            "command = \"train\"\n[fixed]\nmodel = \"tiny\"\nsteps = 1\npp = 2\nm = 2\n"
            "[axes]\nschedule = [\"zb-h2\"]\n");
  std::filesystem::remove(ScratchDir() + "/invalid.db");
  CommandResult invalid = Pipette("sweep invalid.toml --db invalid.db");
  EXPECT_EQ(invalid.exit_code, 0) << invalid.err;
  EXPECT_TRUE(Contains(invalid.out, "invalid            1")) << invalid.out;
}
