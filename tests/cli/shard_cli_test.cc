// End-to-end tests of sharded sweeps and `pipette db merge`: each shard runs its share (i mod N)
// into its own database and resumes; bad --shard values exit 2 before anything is written; shards
// draw no figures, the merged database does; the merge of the shards equals a one-process sweep
// point for point (same metrics, same events). ShardMpiCli.* starts the shards with
// `mpirun -np 2 pipette sweep SPEC --shard auto` (label mpi).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../store/sql_rows.h"
#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Contains;
using pipette::testing::Pipette;
using pipette::testing::ScratchDir;
using pipette::testing::Shell;

void WriteSpec(const std::string& name, const std::string& text) {
  std::ofstream(ScratchDir() + "/" + name) << text;
}

std::string InScratch(const std::string& name) { return ScratchDir() + "/" + name; }

void RemoveDb(const std::string& name) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(InScratch(name) + suffix);
}

// Every row of `sql` on database `name` (scratch directory), '|' between columns.
std::string Rows(const std::string& name, const std::string& sql) {
  return pipette::testing::SqlRows(InScratch(name), sql);
}

// What a study's points recorded, by point key: every metric but the host's wall-clock ones, and
// every event.
std::string PointResults(const std::string& db) {
  return Rows(db,
              "SELECT r.point_key, r.status, m.name, m.value, m.unit FROM runs r JOIN metrics m ON "
              "m.run_id = r.id WHERE m.name NOT LIKE '%wall%' ORDER BY r.point_key, m.name") +
         Rows(db,
              "SELECT r.point_key, e.rank, e.step, e.instr_id, e.kind, e.stage, e.microbatch, "
              "e.start_s, e.end_s, e.bytes FROM runs r JOIN events e ON e.run_id = r.id "
              "ORDER BY r.point_key, e.rank, e.step, e.rowid");
}

// 3 schedules x 2 microbatch counts on the ideal network: 6 points, and a bubble figure.
constexpr const char* kSpec = R"(name = "sharded"
[fixed]
times = "F=1,I=1,W=1"
ideal-network = true
pp = 4
[axes]
schedule = ["1f1b", "gpipe", "zb-h1"]
m = [4, 8]
[[figures]]
kind = "bubble"
out = "sharded-bubble.png"
)";

TEST(ShardCli, EachShardRunsItsShareIntoItsOwnDatabaseAndResumes) {
  WriteSpec("s.toml", kSpec);
  RemoveDb("r.shard-0-of-2.db");
  RemoveDb("r.shard-1-of-2.db");
  for (int k = 0; k < 2; ++k) {
    CommandResult r = Pipette("sweep s.toml --db r.db --shard " + std::to_string(k) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_TRUE(Contains(r.err, "shard " + std::to_string(k) + "/2: 3 of 6 points")) << r.err;
    EXPECT_TRUE(Contains(r.out, "ran                3   (ok 3, oom 0)")) << r.out;
    EXPECT_TRUE(Contains(r.out, "figures            0   drawn (1 not drawn, 0 failed)")) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(InScratch("r.db")));
  EXPECT_FALSE(std::filesystem::exists(InScratch("sharded-bubble.png")));
  // Points 0, 2, 4 of the expansion (schedule slowest, m fastest) are shard 0's.
  EXPECT_EQ(Rows("r.shard-0-of-2.db",
                 "SELECT json_extract(config, '$.schedule'), "
                 "json_extract(config, '$.m') FROM runs ORDER BY 1, 2"),
            "1f1b|4\ngpipe|4\nzb-h1|4\n");
  EXPECT_EQ(Rows("r.shard-1-of-2.db",
                 "SELECT json_extract(config, '$.schedule'), "
                 "json_extract(config, '$.m') FROM runs ORDER BY 1, 2"),
            "1f1b|8\ngpipe|8\nzb-h1|8\n");
  CommandResult again = Pipette("sweep s.toml --db r.db --shard 1/2");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Contains(again.err, "sharded: 3 points, 3 already done, running 0")) << again.err;
  CommandResult dry = Pipette("sweep s.toml --db r.db --shard 1/2 --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(Contains(dry.out, "3 points, 3 done, 0 to run; db r.shard-1-of-2.db")) << dry.out;
}

TEST(ShardCli, BadShardValuesExitTwoBeforeAnythingIsWritten) {
  WriteSpec("s.toml", kSpec);
  RemoveDb("bad.db");
  RemoveDb("bad.shard-2-of-2.db");
  CommandResult r = Pipette("sweep s.toml --db bad.db --shard 2/2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "--shard = '2/2': K must be less than N")) << r.err;
  r = Pipette("sweep s.toml --db bad.db --shard two");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "--shard = 'two': must be K/N")) << r.err;
  r = Shell("env -u SLURM_ARRAY_TASK_ID -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u PMIX_RANK " +
            std::string(PIPETTE_BINARY) + " sweep s.toml --db bad.db --shard auto");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "--shard = auto: no launcher's variables are set")) << r.err;
  r = Shell("env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=x " + std::string(PIPETTE_BINARY) +
            " sweep s.toml --db bad.db --shard auto");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "OMPI_COMM_WORLD_SIZE = 'x': must be a whole number")) << r.err;
  r = Pipette("sweep s.toml --db bad.db --shard 0/2 --figures-only");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const char* file : {"bad.db", "bad.shard-2-of-2.db", "bad.shard-1-of-2.db"}) {
    EXPECT_FALSE(std::filesystem::exists(InScratch(file))) << file;
  }
}

// Runs the shards with `shards_command`, merges them, and checks the merge against one sweep.
void ExpectMergeEqualsOneSweep(const std::string& shards_command, const std::string& prefix) {
  WriteSpec("s.toml", kSpec);
  for (const std::string& name : {prefix + ".shard-0-of-2.db", prefix + ".shard-1-of-2.db",
                                  prefix + "-merged.db", prefix + "-one.db"}) {
    RemoveDb(name);
  }
  std::filesystem::remove(InScratch("sharded-bubble.png"));
  CommandResult shards = Shell(shards_command);
  ASSERT_EQ(shards.exit_code, 0) << shards.err << shards.out;
  CommandResult merge = Pipette("db merge " + prefix + "-merged.db " + prefix +
                                ".shard-0-of-2.db " + prefix + ".shard-1-of-2.db --format json");
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  const nlohmann::json report = nlohmann::json::parse(merge.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << merge.out;
  EXPECT_EQ(report["inputs"][0]["copied"], 3);
  EXPECT_EQ(report["inputs"][1]["copied"], 3);
  CommandResult one = Pipette("sweep s.toml --db " + prefix + "-one.db");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string merged = PointResults(prefix + "-merged.db");
  EXPECT_GT(std::count(merged.begin(), merged.end(), '\n'), 6 * 10) << merged;
  EXPECT_EQ(merged, PointResults(prefix + "-one.db"));
  EXPECT_EQ(Rows(prefix + "-merged.db", "SELECT count(*) FROM merged_runs"), "6\n");

  // The merged database reads like any other: runs, figures drawn with nothing left to run.
  CommandResult runs = Pipette("runs --db " + prefix + "-merged.db --experiment sharded");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_TRUE(Contains(runs.out, "# 6 runs in")) << runs.out;
  std::filesystem::remove(InScratch("sharded-bubble.png"));
  CommandResult figures = Pipette("sweep s.toml --db " + prefix + "-merged.db --figures-only");
  ASSERT_EQ(figures.exit_code, 0) << figures.err;
  EXPECT_TRUE(Contains(figures.out, "ran                0")) << figures.out;
  EXPECT_TRUE(Contains(figures.out, "figures            1   drawn")) << figures.out;
  EXPECT_TRUE(std::filesystem::exists(InScratch("sharded-bubble.png")));
}

TEST(ShardCli, MergedShardsEqualOneSweepPointForPoint) {
  const std::string pipette = PIPETTE_BINARY;
  ExpectMergeEqualsOneSweep(pipette + " sweep s.toml --db k.db --shard 0/2 >/dev/null 2>&1 && " +
                                pipette + " sweep s.toml --db k.db --shard 1/2 >/dev/null",
                            "k");
}

TEST(ShardCli, DbMergeRefusesMissingAndForeignInputs) {
  RemoveDb("m-out.db");
  CommandResult r = Pipette("db merge m-out.db no-such.db");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "pipette db merge: input 'no-such.db': no such file")) << r.err;
  std::ofstream(InScratch("foreign.db")) << "not sqlite";
  r = Pipette("db merge m-out.db foreign.db");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "not a pipette database")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(InScratch("m-out.db")));
  r = Pipette("db merge m-out.db");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// ---- mpirun -np 2 pipette sweep --shard auto (label mpi: ShardMpiCli.*) ----

TEST(ShardMpiCli, MpirunShardsMergedEqualOneSweep) {
  const std::string mpirun = std::string(PIPETTE_MPIEXEC) + " -np 2 --oversubscribe" +
                             (geteuid() == 0 ? " --allow-run-as-root" : "");
  ExpectMergeEqualsOneSweep(
      mpirun + " " + PIPETTE_BINARY + " sweep s.toml --db mpi.db --shard auto >/dev/null", "mpi");
}

}  // namespace
