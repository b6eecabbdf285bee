#include "cpu_rank_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "pipette/schedule/message.h"

namespace pipette::cpu {
namespace {

// CPU time of the calling thread (the rank's math runs on it: OpenBLAS has one thread per rank).
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

CpuRankRuntime::CpuRankRuntime(const TrainPlan& plan, const TrainOptions& options,
                               const RankPlace& place, Watchdog& dog, StepCallback on_step)
    : plan_(plan),
      options_(options),
      place_(place),
      dog_(dog),
      on_step_(std::move(on_step)),
      fault_(Fault::FromEnv()),
      io_(plan.program, place.pp_rank) {
  for (const int stage : plan.program.placement.StagesOf(place.pp_rank)) {
    ModuleChain& chain = chains_[stage];
    for (const std::string& layer : plan.piece_layers[plan.stage_piece[stage]]) {
      chain.Add(std::move(MakeModule(plan.spec, layer, options.seed).value()));
    }
    params_.Add(chain);
  }
  params_.AllocateOptimizerState();
  stage_memory_.resize(plan.schedule.num_stages());
}

void CpuRankRuntime::ShareParameters() {
  Watched(dog_, "the other ranks to set up", [&] {
    shared_ = MakeSharedGroups(params_, place_.pp_comm, place_.pp_rank);
    owned_ = OwnedNames(params_, place_.pp_comm, place_.pp_rank);
  });
}

// ---- the program's instructions ----

void CpuRankRuntime::Compute(const Instruction& ins) {
  fault_.AtCompute(place_.world_rank);
  // The instruction's temporaries: its peak above what it holds before and after (the process's
  // peak is restored afterwards). An overlapped cell's peak mixes its two halves' (the forward's
  // activations among them): only plain instructions are measured.
  const std::int64_t before = LiveTensorBytes(), peak = PeakTensorBytes();
  ResetPeakTensorBytes();
  const double work_start = ThreadCpuSeconds();
  Run(ins.action);
  SlowDown(ThreadCpuSeconds() - work_start);
  if (ins.action.kind != ActionKind::kOverlapped) {
    StageMemory& memory = stage_memory_[ins.action.stage];
    memory.workspace_bytes =
        std::max(memory.workspace_bytes, PeakTensorBytes() - std::max(before, LiveTensorBytes()));
  }
  RaisePeakTensorBytes(peak);
}

void CpuRankRuntime::SlowDown(double work) {
  work_seconds_ += work;
  const double speed = plan_.rank_speed.empty() ? 1.0 : plan_.rank_speed[place_.pp_rank];
  if (speed >= 1.0) return;  // a faster rank cannot be made faster
  const double start = ThreadCpuSeconds(), until = start + (1.0 / speed - 1.0) * work;
  double now = start;
  while (now < until) now = ThreadCpuSeconds();
  slowdown_seconds_ += now - start;
}

void CpuRankRuntime::Run(const Action& a) {
  RunPasses(
      a, [this](const Action& f) { Forward(f); }, [this](const Action& i) { InputGrad(i); },
      [this](const Action& w) { WeightGrad(w); });
}

void CpuRankRuntime::Send(const Instruction& ins, std::int64_t) {
  const Message message = MessageOf(ins.action);
  Tensor tensor = io_.TakeOutgoing(ins.action);
  MPI_Request request;
  MPI_Isend(tensor.data(), static_cast<int>(tensor.size()), MPI_FLOAT, ins.peer,
            static_cast<int>(message.slot(plan_.m())), place_.pp_comm, &request);
  sends_.emplace_back(request, std::move(tensor));
}

void CpuRankRuntime::PostRecv(const Instruction& ins, std::int64_t) {
  const Message message = MessageOf(ins.action);
  Pending& pending = recvs_[message.key()];
  pending.tensor = Tensor(plan_.tokens_of(ins.action.microbatch),
                          plan_.stage_output_cols[message.shape_stage()]);
  MPI_Irecv(pending.tensor.data(), static_cast<int>(pending.tensor.size()), MPI_FLOAT, ins.peer,
            static_cast<int>(message.slot(plan_.m())), place_.pp_comm, &pending.request);
}

double CpuRankRuntime::WaitRecv(const Instruction& ins) {
  const std::int64_t key = MessageOf(ins.action).key();
  auto it = recvs_.find(key);
  Watched(dog_, fmt::format("{} from rank {} (step {})", ToString(ins.action), ins.peer, step_ + 1),
          [&] { MPI_Wait(&it->second.request, MPI_STATUS_IGNORE); });
  io_.Arrived(ins.action, std::move(it->second.tensor));
  recvs_.erase(it);
  return Now();
}

const Batch& CpuRankRuntime::BatchOf(int microbatch) {
  auto it = batches_.find(microbatch);
  if (it != batches_.end()) return it->second;
  return batches_.emplace(microbatch, MicrobatchOf(plan_, step_, place_.replica, microbatch))
      .first->second;
}

void CpuRankRuntime::Forward(const Action& a) {
  const StageRange& route = plan_.program.routes[a.microbatch];
  const Batch& batch = BatchOf(a.microbatch);
  Tensor x = a.stage == route.first ? Tensor() : io_.TakeInput(a.stage, a.microbatch, false);
  std::vector<Cache>& caches = io_.CachesOf(a.stage, a.microbatch);
  Tensor y = chains_.at(a.stage).Forward(batch, std::move(x), caches);
  StageMemory& memory = stage_memory_[a.stage];
  memory.activation_bytes = std::max(memory.activation_bytes, ModuleChain::CacheBytes(caches));
  if (a.stage == route.last) {
    loss_sum_ += plan_.loss_weight(a.microbatch) * caches.back().loss;
  } else {
    io_.Deliver(a.stage + 1, a.microbatch, false, std::move(y));
  }
}

void CpuRankRuntime::InputGrad(const Action& a) {
  const StageRange& route = plan_.program.routes[a.microbatch];
  const Batch& batch = BatchOf(a.microbatch);
  Tensor dy = a.stage == route.last ? Tensor() : io_.TakeInput(a.stage, a.microbatch, true);
  std::vector<Cache>& caches = io_.CachesOf(a.stage, a.microbatch);
  Tensor dx = chains_.at(a.stage).InputGrad(batch, std::move(dy), caches);
  StageMemory& memory = stage_memory_[a.stage];
  memory.wgrad_input_bytes = std::max(memory.wgrad_input_bytes, ModuleChain::CacheBytes(caches));
  if (a.stage > route.first) io_.Deliver(a.stage - 1, a.microbatch, true, std::move(dx));
}

void CpuRankRuntime::WeightGrad(const Action& a) {
  if (!fault_.SkipWeightGrad(place_.world_rank)) {
    chains_.at(a.stage).WeightGrad(BatchOf(a.microbatch), io_.CachesOf(a.stage, a.microbatch));
  }
  io_.Release(a.stage, a.microbatch);
}

// ---- the training step around the program ----

Status CpuRankRuntime::BeginStep(int step) {
  Watched(dog_, fmt::format("the other ranks to start step {}", step + 1),
          [&] { MPI_Barrier(MPI_COMM_WORLD); });
  step_ = step;
  batches_.clear();
  loss_sum_ = 0;
  return Status::Ok();
}

void CpuRankRuntime::EndProgram(int) {
  std::vector<MPI_Request> requests;
  for (auto& [request, tensor] : sends_) requests.push_back(request);
  Watched(dog_, "this step's sends to complete", [&] {
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  });
  sends_.clear();
}

std::optional<Span> CpuRankRuntime::ReduceGradients(int) {
  params_.SumLocalCopies();
  if (plan_.dp == 1) return std::nullopt;
  // The span is the collective alone: the wait for the other replicas (a barrier first) is not
  // part of it, as in the simulator, which starts an all-reduce once every replica is there.
  Watched(dog_, "the other replicas to reach the all-reduce", [&] { MPI_Barrier(place_.dp_comm); });
  const double start = Now();
  Watched(dog_, "the data-parallel gradient all-reduce",
          [&] { AllReduceGrads(params_, {}, place_.dp_comm); });
  return Span{start, Now()};
}

Status CpuRankRuntime::UpdateParameters(int step) {
  for (const SharedGroup& group : shared_) {  // after DP, so every copy ends bit-identical
    Watched(dog_, "the gradient sum over copies of shared parameters",
            [&] { group.SumGrads(params_); });
  }
  if (options_.verify && step == 0) {
    Result<NamedTensors> grads = NamedTensors();
    Watched(dog_, "the gradient gather",
            [&] { grads = GatherTensors(params_, owned_, true, place_.replica == 0); });
    PIPETTE_RETURN_IF_ERROR(grads.status());  // the same answer on every rank
    first_grads_ = std::move(*grads);
  }
  params_.Step({.lr = options_.lr, .weight_decay = options_.weight_decay}, step + 1);
  return Status::Ok();
}

void CpuRankRuntime::EndStep(int step, const Span& span) {
  double sums[2] = {loss_sum_, -span.start}, totals[2] = {0, 0};
  double end_max = 0;
  Watched(dog_, "the loss reduction", [&] {
    MPI_Reduce(&sums[0], &totals[0], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sums[1], &totals[1], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&span.end, &end_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  });
  if (place_.world_rank != 0) return;
  const double loss = totals[0] / plan_.loss_weight_per_step();  // the mean over the step's tokens
  const double seconds = end_max + totals[1];                    // latest end - earliest start
  losses_.push_back(loss);
  step_times_.push_back(seconds);
  if (on_step_) on_step_(step, loss, seconds);
}

}  // namespace pipette::cpu
