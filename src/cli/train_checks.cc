// The options every rank of pipette-train checks before MPI starts (train_report.h).
#include <fmt/core.h>

#include <cstdint>

#include "cli/option_checks.h"
#include "cli/train_report.h"
#include "cpu/mpi_launch.h"
#include "pipette/common/build_info.h"
#include "pipette/common/printable.h"

namespace pipette::cli {
namespace {

// The engine's own options: --engine cuda needs a build with the CUDA engine; the CPU engine
// computes in fp32 and runs every rank as its own process.
Status CheckEngineOptions(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  if (o.engine == "cuda" && !CudaEngineBuilt()) {
    return Status::InvalidArgument(
        fmt::format("--engine cuda: this build has no CUDA engine ({})", CudaEngineStatus()));
  }
  if (o.engine == "cpu" && t.dtype != "fp32") {
    return Status::InvalidArgument(fmt::format(
        "--dtype {}: the cpu engine computes in fp32 (bf16 needs --engine cuda)", t.dtype));
  }
  if (t.virtual_ranks && cpu::LaunchedByMpi()) {
    return Status::InvalidArgument(
        "--virtual-ranks runs every rank as a thread of this one process: start it without "
        "mpirun");
  }
  if (o.engine == "cuda" && (!t.rank_speed.empty() || !t.microbatch_seqlens.empty())) {
    return Status::InvalidArgument(fmt::format(
        "{} {}: uneven work runs on the cpu engine (the cuda engine runs every rank at full speed "
        "and every microbatch at --seq-len)",
        t.rank_speed.empty() ? "--microbatch-seqlens" : "--rank-speed",
        Printable(t.rank_speed.empty() ? t.microbatch_seqlens : t.rank_speed)));
  }
  if (o.engine == "cpu" && t.virtual_ranks) {
    return Status::InvalidArgument(
        "--virtual-ranks: the cpu engine runs one MPI process per rank (virtual ranks are the "
        "cuda engine's one-GPU mode)");
  }
  return Status::Ok();
}

}  // namespace

// The options every rank checks before MPI starts: InvalidArgument naming the option.
Status CheckOptions(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  PIPETTE_RETURN_IF_ERROR(CheckEngineOptions(o));
  if (!(o.tolerance > 0 && o.tolerance < 1)) {
    return Status::InvalidArgument(fmt::format("--tolerance {}: must be in (0, 1)", o.tolerance));
  }
  PIPETTE_RETURN_IF_ERROR(CheckPeerTimeout(t.peer_timeout_s));  // before the watchdog runs
  if (o.trace_steps_option != nullptr && o.trace_steps_option->count() > 0 &&
      o.record.trace == "none") {
    return Status::InvalidArgument(fmt::format(
        "--trace-steps = {}: --trace none records no instruction of any step", t.trace_steps));
  }
  // -p and --dp are checked against their limits later (PlanTraining): multiply in 64 bits.
  const std::int64_t processes = std::int64_t{t.p} * t.dp;
  if (!cpu::LaunchedByMpi() && processes > 1 && !t.virtual_ranks) {
    return Status::InvalidArgument(fmt::format(
        "-p {} --dp {} needs {} processes, one per rank, but this is a single process; launch it "
        "with mpirun:\n  mpirun -np {} --oversubscribe pipette train ...\n(as root also "
        "--allow-run-as-root)",
        t.p, t.dp, processes, processes));
  }
  return Status::Ok();
}

}  // namespace pipette::cli
