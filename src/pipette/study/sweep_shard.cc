#include "pipette/study/sweep_shard.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

Status AutoError(std::string_view rule) {
  return Status::InvalidArgument(fmt::format("--shard = auto: {}", rule));
}

// A whole number in [0, kMaxShards] with nothing around it, or nullopt.
std::optional<long long> WholeNumber(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if (value < 0 || value > kMaxShards) return std::nullopt;
  return value;
}

// Variable `name` as a whole number; InvalidArgument naming it and its value otherwise.
Result<long long> NumberVariable(const Environment& env, std::string_view name) {
  const std::optional<std::string> text = env(name);
  if (!text) return AutoError(fmt::format("{} is not set", name));
  const std::optional<long long> value = WholeNumber(*text);
  if (!value) {
    return AutoError(fmt::format("{} = '{}': must be a whole number in [0, {}]", name,
                                 Printable(*text), kMaxShards));
  }
  return *value;
}

// A rank and a size read from two variables: 0 <= rank < size.
Result<SweepShard> RankOfSize(const Environment& env, std::string_view rank_name,
                              std::string_view size_name) {
  PIPETTE_ASSIGN_OR_RETURN(const long long rank, NumberVariable(env, rank_name));
  if (!env(size_name)) {
    return AutoError(
        fmt::format("{} = {} is set but {} (the number of processes) is not: give "
                    "--shard K/N",
                    rank_name, rank, size_name));
  }
  PIPETTE_ASSIGN_OR_RETURN(const long long size, NumberVariable(env, size_name));
  if (size < 1 || rank >= size) {
    return AutoError(
        fmt::format("{} = {}, {} = {}: the rank must be in [0, size) and the size "
                    "at least 1",
                    rank_name, rank, size_name, size));
  }
  return SweepShard{static_cast<int>(rank), static_cast<int>(size)};
}

// The Slurm job array task, if SLURM_ARRAY_TASK_ID is set.
Result<std::optional<SweepShard>> SlurmArrayShard(const Environment& env) {
  if (!env("SLURM_ARRAY_TASK_ID")) return std::optional<SweepShard>();
  PIPETTE_ASSIGN_OR_RETURN(const long long id, NumberVariable(env, "SLURM_ARRAY_TASK_ID"));
  PIPETTE_ASSIGN_OR_RETURN(const long long min, NumberVariable(env, "SLURM_ARRAY_TASK_MIN"));
  PIPETTE_ASSIGN_OR_RETURN(const long long count, NumberVariable(env, "SLURM_ARRAY_TASK_COUNT"));
  long long step = 1;
  if (env("SLURM_ARRAY_TASK_STEP")) {
    PIPETTE_ASSIGN_OR_RETURN(step, NumberVariable(env, "SLURM_ARRAY_TASK_STEP"));
  }
  if (count < 1 || step < 1) {
    return AutoError(
        fmt::format("SLURM_ARRAY_TASK_COUNT = {}, SLURM_ARRAY_TASK_STEP = {}: both "
                    "must be at least 1",
                    count, step));
  }
  const long long offset = id - min;
  if (offset < 0 || offset % step != 0 || offset / step >= count) {
    return AutoError(fmt::format(
        "SLURM_ARRAY_TASK_ID = {} with SLURM_ARRAY_TASK_MIN = {}, SLURM_ARRAY_TASK_STEP = {}, "
        "SLURM_ARRAY_TASK_COUNT = {}: the task is not one of MIN, MIN+STEP, ... (the array must be "
        "a range MIN-MAX[:STEP], e.g. sbatch --array=0-7, not a list)",
        id, min, step, count));
  }
  return std::optional<SweepShard>(
      SweepShard{static_cast<int>(offset / step), static_cast<int>(count)});
}

// The MPI launcher's rank and size, if one of its rank variables is set.
Result<std::optional<SweepShard>> MpiShard(const Environment& env) {
  std::optional<SweepShard> shard;
  if (env("OMPI_COMM_WORLD_RANK")) {
    PIPETTE_ASSIGN_OR_RETURN(shard,
                             RankOfSize(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"));
  } else if (env("PMI_RANK")) {
    PIPETTE_ASSIGN_OR_RETURN(shard, RankOfSize(env, "PMI_RANK", "PMI_SIZE"));
  } else if (env("PMIX_RANK")) {
    PIPETTE_ASSIGN_OR_RETURN(shard, RankOfSize(env, "PMIX_RANK", "PMI_SIZE"));
  }
  return shard;
}

}  // namespace

Environment ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<SweepShard> ShardFromEnvironment(const Environment& env) {
  PIPETTE_ASSIGN_OR_RETURN(const std::optional<SweepShard> array, SlurmArrayShard(env));
  PIPETTE_ASSIGN_OR_RETURN(const std::optional<SweepShard> mpi, MpiShard(env));
  if (!array && !mpi) {
    return AutoError(
        "no launcher's variables are set (a Slurm job array's SLURM_ARRAY_TASK_ID, "
        "OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK): start the shards with sbatch --array or "
        "mpirun, or give --shard K/N");
  }
  if (array && mpi) {
    const long long count = static_cast<long long>(array->count) * mpi->count;
    if (count > kMaxShards) {
      return AutoError(fmt::format("{} array tasks x {} MPI processes = {} shards: at most {}",
                                   array->count, mpi->count, count, kMaxShards));
    }
    return SweepShard{array->index * mpi->count + mpi->index, static_cast<int>(count)};
  }
  return array ? *array : *mpi;
}

Result<SweepShard> ParseShardOption(std::string_view text, const Environment& env) {
  if (text == "auto") return ShardFromEnvironment(env);
  const std::size_t slash = text.find('/');
  const auto bad = [&](std::string_view rule) {
    return Status::InvalidArgument(fmt::format("--shard = '{}': {}", Printable(text), rule));
  };
  if (slash == std::string_view::npos) {
    return bad("must be K/N (this process runs points i with i mod N = K) or auto");
  }
  const std::optional<long long> k = WholeNumber(text.substr(0, slash));
  const std::optional<long long> n = WholeNumber(text.substr(slash + 1));
  if (!k || !n) {
    return bad(fmt::format("K and N must be whole numbers, 0 <= K < N <= {}", kMaxShards));
  }
  if (*n < 1) return bad("N (the number of shards) must be at least 1");
  if (*k >= *n) return bad("K must be less than N (shards are numbered 0 to N-1)");
  return SweepShard{static_cast<int>(*k), static_cast<int>(*n)};
}

std::string ShardDatabasePath(const std::string& db, const SweepShard& shard) {
  const std::filesystem::path path(db);
  const std::string suffix = fmt::format(".shard-{}-of-{}", shard.index, shard.count);
  std::filesystem::path out = path;
  out.replace_filename(path.stem().string() + suffix + path.extension().string());
  return out.string();
}

}  // namespace pipette
