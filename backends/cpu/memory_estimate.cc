#include "cpu/memory_estimate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "pipette/schedule/evaluate.h"

namespace pipette::cpu {
namespace {

// fp32 weight, gradient and AdamW's first and second moments.
constexpr double kBytesPerParameter = 16;
// The tensors the formula does not count (logits' gradients, GEMM temporaries: the peak tensor
// bytes measured for gpt2-124m were 14% above it, for tiny 2%), and a process's own memory
// (pipette-train with MPI and OpenBLAS: about 30 MB resident).
constexpr double kWorkspaceFactor = 1.2;
constexpr double kProcessBytes = 64e6;

// "2.8 TB", "512 MB".
std::string Bytes(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.3g} TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt::format("{:.3g} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.3g} MB", bytes / 1e6);
  return fmt::format("{:.3g} bytes", bytes);
}

// MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read.
double MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace

Result<TrainMemoryEstimate> EstimateTrainMemory(const TrainPlan& plan, bool verify) {
  const int p = plan.p();
  const int stages = plan.schedule.num_stages();
  PIPETTE_ASSIGN_OR_RETURN(const Evaluation counts,
                           Evaluate(plan.program, Costs::Uniform(stages, {})));
  TrainMemoryEstimate e;
  e.parameter_bytes.assign(p, 0);
  e.activation_bytes.assign(p, 0);
  std::vector<double> activation(p, 0), wgrad(p, 0);
  for (int s = 0; s < stages; ++s) {
    const int r = plan.schedule.placement.rank_of(s);
    const int piece = plan.stage_piece[s];
    e.parameter_bytes[r] += static_cast<double>(plan.piece_params[piece]) * kBytesPerParameter;
    activation[r] =
        std::max(activation[r], static_cast<double>(plan.piece_activation_bytes[piece]));
    wgrad[r] = std::max(wgrad[r], static_cast<double>(plan.piece_wgrad_input_bytes[piece]));
  }
  for (int r = 0; r < p; ++r) {
    e.activation_bytes[r] =
        activation[r] * counts.peak_activations[r] + wgrad[r] * counts.peak_pending_w[r];
  }
  if (verify) {  // the whole model on the whole step's batch at once
    for (std::size_t piece = 0; piece < plan.piece_params.size(); ++piece) {
      e.reference_bytes +=
          static_cast<double>(plan.piece_params[piece]) * kBytesPerParameter +
          static_cast<double>(plan.piece_activation_bytes[piece]) * plan.m() * plan.dp;
    }
  }
  for (int d = 0; d < plan.dp; ++d) {
    for (int r = 0; r < p; ++r) {
      e.rank_bytes.push_back(kProcessBytes +
                             kWorkspaceFactor * (e.parameter_bytes[r] + e.activation_bytes[r]));
    }
  }
  e.rank_bytes.front() += kWorkspaceFactor * e.reference_bytes;
  return e;
}

Result<AvailableMemory> MachineMemory() {
  if (const char* limit = std::getenv("PIPETTE_MEMORY_LIMIT_BYTES"); limit != nullptr) {
    char* end = nullptr;
    errno = 0;
    const double bytes = std::strtod(limit, &end);
    if (end == limit || *end != '\0' || errno != 0 || !(bytes > 0 && std::isfinite(bytes))) {
      return Status::InvalidArgument(fmt::format(
          "PIPETTE_MEMORY_LIMIT_BYTES = '{}': must be a positive number of bytes", limit));
    }
    return AvailableMemory{bytes, "PIPETTE_MEMORY_LIMIT_BYTES"};
  }
  if (const double available = MemAvailable(); available > 0) {
    return AvailableMemory{available, "MemAvailable in /proc/meminfo"};
  }
  const double physical =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return AvailableMemory{physical, "physical memory"};
}

int RanksOnThisHost(int world) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const int local = std::atoi(value);
    if (local >= 1) return std::min(local, world);
  }
  return world;
}

Status CheckTrainMemory(const TrainPlan& plan, const TrainMemoryEstimate& estimate,
                        int ranks_on_host, const AvailableMemory& available) {
  std::vector<double> ranks = estimate.rank_bytes;
  std::sort(ranks.begin(), ranks.end(), std::greater<>());
  const std::size_t here = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::max(ranks_on_host, 1)), 1, ranks.size());
  double host = 0;
  for (std::size_t k = 0; k < here; ++k) host += ranks[k];
  if (host <= available.bytes) return Status::Ok();
  const auto largest = std::max_element(estimate.rank_bytes.begin(), estimate.rank_bytes.end()) -
                       estimate.rank_bytes.begin();
  const int r = static_cast<int>(largest) % plan.p();
  return Status::InvalidArgument(fmt::format(
      "--model {}: training needs about {} on this host ({} rank{} here; the largest, rank {}, "
      "{}: parameters {} at 16 bytes each for weight, gradient and AdamW moments, activations {} "
      "for the microbatches in flight{}, 20% for temporaries, 64 MB for the process), but this "
      "machine has {} ({}): use a smaller model, "
      "--seq-len or --micro-batch-size, or more pipeline ranks on more hosts",
      plan.spec.name, Bytes(host), here, here == 1 ? "" : "s", largest, Bytes(ranks.front()),
      Bytes(estimate.parameter_bytes[r]), Bytes(estimate.activation_bytes[r]),
      largest == 0 && estimate.reference_bytes > 0
          ? fmt::format(", --verify's reference {}", Bytes(estimate.reference_bytes))
          : "",
      Bytes(available.bytes), available.source));
}

}  // namespace pipette::cpu
