#include "trainer.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>

#include "mpi_bytes.h"
#include "mpi_fabric.h"
#include "param_sync.h"
#include "pipette/engine/step_loop.h"

namespace pipette::cpu {
namespace {

// A communicator split off MPI_COMM_WORLD, freed with its owner.
class SplitComm {
 public:
  SplitComm(int color, int key) { MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm_); }
  ~SplitComm() { MPI_Comm_free(&comm_); }
  SplitComm(const SplitComm&) = delete;
  SplitComm& operator=(const SplitComm&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// What this rank contributes to the report (its trace from replica 0 only; its kernel profile over
// `profiled_steps` steps when > 0).
RankContribution ContributionOf(const CpuRankRuntime& runtime, RankLog log, double peak_bytes,
                                double static_bytes, bool replica0, int profiled_steps) {
  RankContribution c;
  c.peak_bytes = peak_bytes;
  c.static_bytes = static_bytes;
  c.peak_rss_bytes = PeakRssBytes();
  for (const std::string& name : runtime.owned()) {
    c.owned_elements +=
        static_cast<std::int64_t>(runtime.params().entries().at(name).copies.front()->value.size());
  }
  if (!replica0) c.owned_elements = 0;
  c.compute_work_seconds = runtime.compute_work_seconds();
  c.slowdown_seconds = runtime.slowdown_seconds();
  c.stage_memory = runtime.stage_memory();
  if (replica0) {
    c.log = std::move(log);
    if (profiled_steps > 0) c.kernels = KernelProfileSamples();
    c.kernel_profile_steps = c.kernels.empty() ? 0 : profiled_steps;
  }
  return c;
}

// Bytes of this rank's gradients (what its data-parallel all-reduce reduces).
std::int64_t GradientBytes(const ParamSet& params) {
  std::int64_t bytes = 0;
  for (const auto& [name, e] : params.entries()) bytes += e.copies.front()->grad.bytes();
  return bytes;
}

// What this rank has sent of its log so far (StepGather).
struct LogSent {
  std::size_t trace = 0, allreduces = 0, updates = 0;
};

// Where a step gather runs: the rank, its runtime and its memory baselines.
struct GatherPlace {
  const TrainPlan& plan;
  const TrainOptions& options;
  const CpuRankRuntime& runtime;
  Watchdog& dog;
  RankPlace place;
  std::int64_t bytes_before = 0;  // live tensor bytes before the runtime was built
  double static_bytes = 0;
};

// After each step: this rank's part of the step (replica 0's new events, its memory figures)
// gathered on world rank 0, which hands the step's report to `record_step`. The gather comes
// before the next step's starting barrier, so the step times do not include it.
std::function<void(int, const RankLog&)> StepGather(GatherPlace at,
                                                    const StepReportCallback& record_step) {
  return [at, &record_step, sent = LogSent()](int step, const RankLog& log) mutable {
    const bool replica0 = at.place.replica == 0;
    RankLog slice;
    slice.trace.assign(log.trace.begin() + static_cast<std::ptrdiff_t>(sent.trace),
                       log.trace.end());
    slice.allreduces.assign(log.allreduces.begin() + static_cast<std::ptrdiff_t>(sent.allreduces),
                            log.allreduces.end());
    slice.updates.assign(log.updates.begin() + static_cast<std::ptrdiff_t>(sent.updates),
                         log.updates.end());
    sent = {log.trace.size(), log.allreduces.size(), log.updates.size()};
    const std::vector<char> mine = PackContribution(ContributionOf(
        at.runtime, std::move(slice), static_cast<double>(PeakTensorBytes() - at.bytes_before),
        at.static_bytes, replica0, /*profiled_steps=*/0));
    Result<std::vector<std::vector<char>>> gathered = std::vector<std::vector<char>>();
    Watched(at.dog, fmt::format("the other ranks to finish step {}", step + 1),
            [&] { gathered = GatherBytes(mine, MPI_COMM_WORLD); });
    if (!gathered.ok() || at.place.world_rank != 0) return;
    std::vector<RankContribution> ranks;
    for (const std::vector<char>& bytes : *gathered) {
      ranks.push_back(UnpackContribution(bytes, at.plan.schedule.num_stages()));
    }
    record_step(step, AssembleReport(at.plan, at.options, {at.runtime.losses().back()},
                                     {at.runtime.step_times().back()}, ranks));
  };
}

}  // namespace

Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step, const StepReportCallback& record_step) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  PIPETTE_RETURN_IF_ERROR(CheckWorldSize(plan, world_size));
  PIPETTE_RETURN_IF_ERROR(CheckMessageTags(plan, MPI_COMM_WORLD));
  const int pp_rank = world_rank % plan.p(), replica = world_rank / plan.p();
  const SplitComm pp_comm(replica, pp_rank), dp_comm(pp_rank, replica);
  const RankPlace place{world_rank, pp_rank, replica};
  MpiFabric fabric(place, pp_comm.get(), dp_comm.get(), dog);

  ResetPeakTensorBytes();
  const std::int64_t bytes_before = LiveTensorBytes();
  CpuRankRuntime runtime(plan, options, place, fabric, on_step);
  const double static_bytes = static_cast<double>(LiveTensorBytes() - bytes_before);
  runtime.ShareParameters();

  StepLoopOptions loop;
  loop.steps = options.steps;
  loop.trace_steps = replica == 0 ? options.trace_steps : 0;  // replica 0 is traced
  loop.gradient_bytes = GradientBytes(runtime.params());
  if (record_step) {
    loop.after_step =
        StepGather({plan, options, runtime, dog, place, bytes_before, static_bytes}, record_step);
  }
  // Replica 0 profiles its kernels over the traced steps after step 0 (kernel_profile.h).
  const int profiled_last = replica == 0 ? std::min(options.steps, options.trace_steps) - 1 : 0;
  loop.after_step = [gather = std::move(loop.after_step), profiled_last](int step,
                                                                         const RankLog& log) {
    if (step == 0 && profiled_last >= 1) StartKernelProfile();
    if (step == profiled_last) StopKernelProfile();
    if (gather) gather(step, log);
  };
  RankLog log;
  fabric.Barrier("the other ranks to start");
  runtime.set_start(fabric.Clock());
  PIPETTE_RETURN_IF_ERROR(
      RunSteps(plan.program, pp_rank, MessageSizesOf(plan), loop, runtime, log));

  // Gather the trace and the measurements on rank 0.
  const std::vector<char> mine = PackContribution(
      ContributionOf(runtime, std::move(log), static_cast<double>(PeakTensorBytes() - bytes_before),
                     static_bytes, replica == 0, std::max(0, profiled_last)));
  Result<std::vector<std::vector<char>>> gathered = std::vector<std::vector<char>>();
  Result<NamedTensors> final_params = NamedTensors();
  Watched(dog, "the trace gather", [&] {
    gathered = GatherBytes(mine, MPI_COMM_WORLD);
    if (options.verify) {
      final_params = GatherTensors(runtime.params(), runtime.owned(), false, replica == 0);
    }
  });
  PIPETTE_RETURN_IF_ERROR(gathered.status());
  PIPETTE_RETURN_IF_ERROR(final_params.status());
  if (world_rank != 0) return TrainReport();
  std::vector<RankContribution> ranks;
  for (const std::vector<char>& bytes : *gathered) {
    ranks.push_back(UnpackContribution(bytes, plan.schedule.num_stages()));
  }
  TrainReport report = AssembleReport(plan, options, runtime.losses(), runtime.step_times(), ranks);
  if (options.verify) {
    PIPETTE_ASSIGN_OR_RETURN(
        report.verification,
        VerifyAgainstReference(plan, options, runtime.first_grads(), *final_params, report.losses));
  }
  return report;
}

}  // namespace pipette::cpu
