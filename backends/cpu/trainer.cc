#include "trainer.h"

#include <fmt/format.h>
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "mpi_bytes.h"
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

double PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

// Bytes of this rank's gradients (what its data-parallel all-reduce reduces).
std::int64_t GradientBytes(const ParamSet& params) {
  std::int64_t bytes = 0;
  for (const auto& [name, e] : params.entries()) bytes += e.copies.front()->grad.bytes();
  return bytes;
}

MessageSizes SizesOf(const TrainPlan& plan) {
  MessageSizes sizes;
  for (const int cols : plan.stage_output_cols) {
    sizes.stage_output_bytes.push_back(static_cast<std::int64_t>(plan.tokens_per_microbatch()) *
                                       cols * static_cast<std::int64_t>(sizeof(float)));
  }
  return sizes;
}

// What one rank contributes to the report, in the order UnpackRank reads it: its memory, its
// owned parameter count (replica 0), the bytes each of its stages held per microbatch, and, from
// replica 0, its trace and all-reduces.
std::vector<char> PackRank(const CpuRankRuntime& runtime, const RankLog& log, double peak_bytes,
                           double static_bytes, bool replica0) {
  ByteWriter out;
  out.Put(peak_bytes);
  out.Put(static_bytes);
  out.Put(PeakRssBytes());
  std::int64_t owned_elements = 0;
  for (const std::string& name : runtime.owned()) {
    owned_elements +=
        static_cast<std::int64_t>(runtime.params().entries().at(name).copies.front()->value.size());
  }
  out.Put(replica0 ? owned_elements : std::int64_t{0});
  for (const StageMemory& m : runtime.stage_memory()) {
    out.Put(m.activation_bytes);
    out.Put(m.wgrad_input_bytes);
    out.Put(m.workspace_bytes);
  }
  out.PutVector(replica0 ? log.trace : std::vector<TraceEvent>());
  out.PutVector(replica0 ? log.allreduces : std::vector<AllReduceEvent>());
  out.PutVector(replica0 ? log.updates : std::vector<AllReduceEvent>());
  return out.bytes();
}

// Folds world rank r's contribution into `report` (per pipeline rank: the maximum over replicas).
void UnpackRank(const std::vector<char>& bytes, int rank, TrainReport& report) {
  ByteReader in(bytes);
  report.peak_memory_bytes[rank] = std::max(report.peak_memory_bytes[rank], in.Get<double>());
  report.static_bytes[rank] = std::max(report.static_bytes[rank], in.Get<double>());
  report.peak_rss_bytes[rank] = std::max(report.peak_rss_bytes[rank], in.Get<double>());
  report.params += in.Get<std::int64_t>();
  for (StageMemory& m : report.stage_memory) {
    m.activation_bytes = std::max(m.activation_bytes, in.Get<std::int64_t>());
    m.wgrad_input_bytes = std::max(m.wgrad_input_bytes, in.Get<std::int64_t>());
    m.workspace_bytes = std::max(m.workspace_bytes, in.Get<std::int64_t>());
  }
  in.AppendVector(report.trace);
  in.AppendVector(report.allreduces);
  in.AppendVector(report.updates);
}

// Trains the unpipelined reference and compares it with the run (world rank 0).
Result<Verification> Verify(const TrainPlan& plan, const TrainOptions& options,
                            const NamedTensors& first_grads, const NamedTensors& final_params,
                            const std::vector<double>& losses) {
  const ReferenceRun reference = TrainReference(plan, options);
  Verification v;
  PIPETTE_ASSIGN_OR_RETURN(v.gradients, Compare(first_grads, reference.first_grads));
  PIPETTE_ASSIGN_OR_RETURN(v.parameters, Compare(final_params, reference.final_params));
  for (std::size_t s = 0; s < reference.losses.size(); ++s) {
    v.max_loss_difference =
        std::max(v.max_loss_difference, std::abs(losses[s] - reference.losses[s]));
  }
  return v;
}

// World rank 0's report from every rank's contribution.
TrainReport Report(const TrainPlan& plan, const TrainOptions& options,
                   const CpuRankRuntime& runtime, const std::vector<std::vector<char>>& gathered) {
  TrainReport report;
  const int p = plan.p();
  report.losses = runtime.losses();
  report.step_times = runtime.step_times();
  report.peak_memory_bytes.assign(p, 0);
  report.static_bytes.assign(p, 0);
  report.peak_rss_bytes.assign(p, 0);
  report.stage_memory.assign(plan.schedule.num_stages(), StageMemory{});
  for (std::size_t r = 0; r < gathered.size(); ++r) {
    UnpackRank(gathered[r], static_cast<int>(r) % p, report);
  }
  double total_time = 0;
  for (const double t : report.step_times) total_time += t;
  report.tokens_per_s =
      static_cast<double>(plan.sequences_per_step()) * plan.seq_len * options.steps / total_time;
  return report;
}

}  // namespace

Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  PIPETTE_RETURN_IF_ERROR(CheckWorldSize(plan, world_size));
  PIPETTE_RETURN_IF_ERROR(CheckMessageTags(plan, MPI_COMM_WORLD));
  const int pp_rank = world_rank % plan.p(), replica = world_rank / plan.p();
  const SplitComm pp_comm(replica, pp_rank), dp_comm(pp_rank, replica);
  const RankPlace place{world_rank, pp_rank, replica, pp_comm.get(), dp_comm.get()};

  ResetPeakTensorBytes();
  const std::int64_t bytes_before = LiveTensorBytes();
  CpuRankRuntime runtime(plan, options, place, dog, on_step);
  const double static_bytes = static_cast<double>(LiveTensorBytes() - bytes_before);
  runtime.ShareParameters();

  StepLoopOptions loop;
  loop.steps = options.steps;
  loop.trace_steps = replica == 0 ? options.trace_steps : 0;  // replica 0 is traced
  loop.gradient_bytes = GradientBytes(runtime.params());
  RankLog log;
  Watched(dog, "the other ranks to start", [&] { MPI_Barrier(MPI_COMM_WORLD); });
  runtime.set_start(MPI_Wtime());
  PIPETTE_RETURN_IF_ERROR(RunSteps(plan.program, pp_rank, SizesOf(plan), loop, runtime, log));

  // Gather the trace and the measurements on rank 0.
  const std::vector<char> mine =
      PackRank(runtime, log, static_cast<double>(PeakTensorBytes() - bytes_before), static_bytes,
               replica == 0);
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
  TrainReport report = Report(plan, options, runtime, *gathered);
  if (options.verify) {
    PIPETTE_ASSIGN_OR_RETURN(report.verification, Verify(plan, options, runtime.first_grads(),
                                                         *final_params, report.losses));
  }
  return report;
}

}  // namespace pipette::cpu
