#include "mpi_launch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "mpi_bytes.h"
#include "pipette/schedule/message.h"

namespace pipette::cpu {
namespace {

// Open MPI's mpirun, then PMIx and PMI launchers (srun, MPICH's hydra).
constexpr const char* kLauncherRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

// InvalidArgument naming the first key of rank 0's configuration that `other` (rank r's) differs
// in.
Status Mismatch(const std::string& first_text, const std::string& other_text, std::size_t r) {
  const nlohmann::json first = nlohmann::json::parse(first_text);
  const nlohmann::json other = nlohmann::json::parse(other_text);
  for (const auto& [key, value] : first.items()) {
    if (!other.contains(key) || other[key] != value) {
      return Status::InvalidArgument(fmt::format(
          "rank {} was started with {} = {} but rank 0 with {} = {}; every rank of a run must get "
          "the same options",
          r, key, other.contains(key) ? other[key].dump() : "(none)", key, value.dump()));
    }
  }
  return Status::InvalidArgument(
      fmt::format("rank {} was started with other options than rank 0", r));
}

}  // namespace

std::optional<int> LauncherRank() {
  for (const char* var : kLauncherRankVariables) {
    if (const char* value = std::getenv(var)) return std::atoi(value);
  }
  return std::nullopt;
}

Status CheckWorldSize(const TrainPlan& plan, int world_size) {
  if (world_size == plan.world_size()) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "-p {} --dp {} needs {} ranks but mpirun started {}; launch it with mpirun -np {}", plan.p(),
      plan.dp, plan.world_size(), world_size, plan.world_size()));
}

Status CheckMessageTags(const TrainPlan& plan, MPI_Comm comm) {
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found);
  const std::int64_t needed = Message::NumSlots(plan.schedule.num_stages(), plan.m()) - 1;
  if (!found || needed <= *tag_ub) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("-m {} with {} stages needs message tags up to {}, above this MPI's limit {}",
                  plan.m(), plan.schedule.num_stages(), needed, *tag_ub));
}

Status AgreeOnConfiguration(const Status& local, const std::string& config_json) {
  ByteWriter mine;
  mine.Put(static_cast<std::uint8_t>(local.code()));
  mine.PutString(local.ok() ? config_json : local.message());
  const std::vector<std::vector<char>> all = AllGatherBytes(mine.bytes(), MPI_COMM_WORLD);
  std::vector<std::string> configs;
  for (std::size_t r = 0; r < all.size(); ++r) {
    ByteReader reader(all[r]);
    const auto code = static_cast<StatusCode>(reader.Get<std::uint8_t>());
    std::string text = reader.GetString();
    if (code != StatusCode::kOk) {  // the failing rank's own code, so its exit code too
      return Status::FromCode(
          code, r == 0 ? text : fmt::format("rank {} of {}: {}", r, all.size(), text));
    }
    configs.push_back(std::move(text));
  }
  for (std::size_t r = 1; r < configs.size(); ++r) {
    if (configs[r] != configs[0]) return Mismatch(configs[0], configs[r], r);
  }
  return Status::Ok();
}

}  // namespace pipette::cpu
