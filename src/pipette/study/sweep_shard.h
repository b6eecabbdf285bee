// SweepShard: the share of a study's points one process of a sharded sweep runs
// (`pipette sweep SPEC --shard K/N`, docs/experiments.md). Point i of ExpandPoints(spec) (counting
// from 0, in the spec's order) belongs to shard i mod N: a fixed assignment that depends only on
// the spec, never on the order in which points finish or on which launcher started the shards, so
// shards 0..N-1 together run every point exactly once, and a shard rerun (resumed) runs the same
// points. Each shard records into its own database, ShardDatabasePath(--db, shard); `pipette db
// merge` joins them (store/db_merge.h). `--shard auto` reads K and N from the launcher's
// environment (ShardFromEnvironment). Pure functions; the environment is passed in.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(SweepShard shard, ParseShardOption("auto", ProcessEnvironment()));
//   for (std::size_t i = 0; i < points.size(); ++i) if (shard.Holds(i)) Run(points[i]);
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

struct SweepShard {
  int index = 0;  // K, in [0, count)
  int count = 1;  // N >= 1

  // Whether point `i` (0-based, in ExpandPoints order) belongs to this shard: i mod N == K.
  bool Holds(std::size_t i) const {
    return i % static_cast<std::size_t>(count) == static_cast<std::size_t>(index);
  }
  bool operator==(const SweepShard&) const = default;
};

// The largest N a sweep accepts (a study has at most this many points worth sharding).
inline constexpr int kMaxShards = 1 << 20;

// Looks up one environment variable; nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;

// This process's environment (getenv).
Environment ProcessEnvironment();

// K and N from the launcher that started this process, in this order:
//   Slurm job array: K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
//     (step 1 when unset), N = SLURM_ARRAY_TASK_COUNT; the array must be a range MIN-MAX[:STEP]
//     (`sbatch --array=0-7`), so that the task ids map onto 0..N-1;
//   an MPI launcher: Open MPI's OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE, else PMI_RANK /
//     PMI_SIZE (MPICH's Hydra, Intel MPI, srun --mpi=pmi2), else PMIX_RANK with PMI_SIZE.
// Both present (mpirun inside an array task): shard (array K) * (MPI size) + (MPI rank) of
// (array N) * (MPI size). Errors (InvalidArgument) name `--shard = auto`, the variable, its value
// and the rule: no launcher's variables set, a value that is not a whole number, a rank without
// its size, K >= N, N > kMaxShards, a task id off the array's range and step.
Result<SweepShard> ShardFromEnvironment(const Environment& env);

// `--shard` as written: "K/N" (whole numbers, 0 <= K < N <= kMaxShards) or "auto"
// (ShardFromEnvironment). InvalidArgument naming --shard, the value and the rule otherwise.
Result<SweepShard> ParseShardOption(std::string_view text, const Environment& env);

// The database shard K of N records into: `db` with ".shard-K-of-N" before its extension
// ("results.db" -> "results.shard-2-of-4.db", "runs" -> "runs.shard-2-of-4"; directories kept).
std::string ShardDatabasePath(const std::string& db, const SweepShard& shard);

}  // namespace pipette
