// SweepShard (study/sweep_shard.h): every point in exactly one shard, the assignment i mod N;
// --shard K/N parsing; K and N from Slurm job arrays, Open MPI, PMI and PMIx variables; the shard's
// database name.
#include "pipette/study/sweep_shard.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace pipette {
namespace {

// An environment holding exactly `vars`.
Environment Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

SweepShard Auto(std::map<std::string, std::string> vars) {
  Result<SweepShard> shard = ShardFromEnvironment(Env(std::move(vars)));
  EXPECT_TRUE(shard.ok()) << shard.status().message();
  return shard.ok() ? *shard : SweepShard{-1, -1};
}

// The message of the error ShardFromEnvironment gives for `vars` (empty if none).
std::string AutoError(std::map<std::string, std::string> vars) {
  Result<SweepShard> shard = ShardFromEnvironment(Env(std::move(vars)));
  EXPECT_FALSE(shard.ok());
  return shard.ok() ? "" : shard.status().message();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SweepShard, EveryPointBelongsToExactlyOneShard) {
  for (int n = 1; n <= 7; ++n) {
    for (std::size_t points = 0; points <= 23; ++points) {
      std::vector<int> owners(points, 0);
      std::size_t largest = 0, smallest = points;
      for (int k = 0; k < n; ++k) {
        std::size_t mine = 0;
        for (std::size_t i = 0; i < points; ++i) {
          if (SweepShard{k, n}.Holds(i)) {
            ++owners[i];
            ++mine;
          }
        }
        largest = std::max(largest, mine);
        smallest = std::min(smallest, mine);
      }
      for (std::size_t i = 0; i < points; ++i) {
        EXPECT_EQ(owners[i], 1) << "point " << i << " of " << points << ", N = " << n;
      }
      EXPECT_LE(largest - smallest, 1u) << "shards differ by at most one point";
    }
  }
}

TEST(SweepShard, TheAssignmentIsIModN) {
  std::vector<std::size_t> held;
  for (std::size_t i = 0; i < 12; ++i) {
    if (SweepShard{2, 4}.Holds(i)) held.push_back(i);
  }
  EXPECT_EQ(held, (std::vector<std::size_t>{2, 6, 10}));
  EXPECT_TRUE((SweepShard{0, 1}.Holds(12345)));
}

TEST(SweepShard, ParsesKOfN) {
  const Environment none = Env({});
  EXPECT_EQ(*ParseShardOption("2/4", none), (SweepShard{2, 4}));
  EXPECT_EQ(*ParseShardOption("0/1", none), (SweepShard{0, 1}));
  EXPECT_EQ(*ParseShardOption("auto", Env({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}})),
            (SweepShard{1, 3}));
  const std::map<std::string, std::string> bad = {
      {"4/4", "K must be less than N"},
      {"5/4", "K must be less than N"},
      {"0/0", "N (the number of shards) must be at least 1"},
      {"2", "must be K/N"},
      {"", "must be K/N"},
      {"a/b", "K and N must be whole numbers"},
      {"-1/3", "K and N must be whole numbers"},
      {" 1/3", "K and N must be whole numbers"},
      {"1/2/3", "K and N must be whole numbers"},
      {"1/99999999", "K and N must be whole numbers, 0 <= K < N <= 1048576"},
  };
  for (const auto& [text, rule] : bad) {
    Result<SweepShard> shard = ParseShardOption(text, none);
    ASSERT_FALSE(shard.ok()) << text;
    EXPECT_EQ(shard.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(shard.status().message(), "--shard = '" + text + "': " + rule))
        << shard.status().message();
  }
}

TEST(SweepShard, ReadsSlurmJobArrays) {
  // sbatch --array=3-6: tasks 3, 4, 5, 6 are shards 0..3.
  EXPECT_EQ(Auto({{"SLURM_ARRAY_TASK_ID", "5"},
                  {"SLURM_ARRAY_TASK_MIN", "3"},
                  {"SLURM_ARRAY_TASK_MAX", "6"},
                  {"SLURM_ARRAY_TASK_COUNT", "4"}}),
            (SweepShard{2, 4}));
  // sbatch --array=1-7:2: tasks 1, 3, 5, 7.
  EXPECT_EQ(Auto({{"SLURM_ARRAY_TASK_ID", "7"},
                  {"SLURM_ARRAY_TASK_MIN", "1"},
                  {"SLURM_ARRAY_TASK_STEP", "2"},
                  {"SLURM_ARRAY_TASK_COUNT", "4"}}),
            (SweepShard{3, 4}));
  // sbatch --array=1,4,9 (a list): task 4 is off MIN + k STEP.
  EXPECT_TRUE(Contains(AutoError({{"SLURM_ARRAY_TASK_ID", "4"},
                                  {"SLURM_ARRAY_TASK_MIN", "1"},
                                  {"SLURM_ARRAY_TASK_STEP", "2"},
                                  {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                       "SLURM_ARRAY_TASK_ID = 4 with SLURM_ARRAY_TASK_MIN = 1"));
  EXPECT_TRUE(Contains(AutoError({{"SLURM_ARRAY_TASK_ID", "9"},
                                  {"SLURM_ARRAY_TASK_MIN", "1"},
                                  {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                       "the task is not one of MIN, MIN+STEP"));
  EXPECT_EQ(AutoError({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "0"}}),
            "--shard = auto: SLURM_ARRAY_TASK_COUNT is not set");
  EXPECT_EQ(AutoError({{"SLURM_ARRAY_TASK_ID", "two"},
                       {"SLURM_ARRAY_TASK_MIN", "0"},
                       {"SLURM_ARRAY_TASK_COUNT", "4"}}),
            "--shard = auto: SLURM_ARRAY_TASK_ID = 'two': must be a whole number in [0, 1048576]");
}

TEST(SweepShard, ReadsMpiLaunchers) {
  EXPECT_EQ(Auto({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            (SweepShard{1, 2}));
  // Open MPI also sets PMIX_RANK: its own variables are read first.
  EXPECT_EQ(Auto({{"OMPI_COMM_WORLD_RANK", "0"},
                  {"OMPI_COMM_WORLD_SIZE", "2"},
                  {"PMIX_RANK", "0"},
                  {"PMI_SIZE", "9"}}),
            (SweepShard{0, 2}));
  EXPECT_EQ(Auto({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}}), (SweepShard{3, 4}));
  EXPECT_EQ(Auto({{"PMIX_RANK", "2"}, {"PMI_SIZE", "4"}}), (SweepShard{2, 4}));
  EXPECT_EQ(AutoError({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "--shard = auto: OMPI_COMM_WORLD_RANK = 2, OMPI_COMM_WORLD_SIZE = 2: the rank must be "
            "in [0, size) and the size at least 1");
  EXPECT_TRUE(Contains(AutoError({{"PMIX_RANK", "1"}}),
                       "PMIX_RANK = 1 is set but PMI_SIZE (the number of processes) is not"));
  EXPECT_TRUE(Contains(AutoError({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2x"}}),
                       "OMPI_COMM_WORLD_SIZE = '2x': must be a whole number"));
  EXPECT_TRUE(Contains(AutoError({}), "no launcher's variables are set"));
  EXPECT_TRUE(Contains(AutoError({{"SLURM_PROCID", "1"}}), "no launcher's variables are set"));
}

TEST(SweepShard, MpirunInsideAnArrayTaskSplitsTheTasksShare) {
  // Array task 1 of 3, MPI rank 1 of 2: shard 3 of 6; all six (task, rank) pairs are distinct.
  std::set<int> shards;
  for (int task = 0; task < 3; ++task) {
    for (int rank = 0; rank < 2; ++rank) {
      const SweepShard s = Auto({{"SLURM_ARRAY_TASK_ID", std::to_string(task)},
                                 {"SLURM_ARRAY_TASK_MIN", "0"},
                                 {"SLURM_ARRAY_TASK_COUNT", "3"},
                                 {"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
                                 {"OMPI_COMM_WORLD_SIZE", "2"}});
      EXPECT_EQ(s.count, 6);
      EXPECT_EQ(s.index, task * 2 + rank);
      shards.insert(s.index);
    }
  }
  EXPECT_EQ(shards.size(), 6u);
}

TEST(SweepShard, NamesEachShardsDatabase) {
  EXPECT_EQ(ShardDatabasePath("results.db", {2, 4}), "results.shard-2-of-4.db");
  EXPECT_EQ(ShardDatabasePath("out/study.v2.db", {0, 3}), "out/study.v2.shard-0-of-3.db");
  EXPECT_EQ(ShardDatabasePath("runs", {1, 2}), "runs.shard-1-of-2");
  EXPECT_EQ(ShardDatabasePath("/tmp/x/p.sqlite", {10, 11}), "/tmp/x/p.shard-10-of-11.sqlite");
}

}  // namespace
}  // namespace pipette
