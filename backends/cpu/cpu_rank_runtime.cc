#include "cpu_rank_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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
                               const RankPlace& place, Fabric& fabric, StepCallback on_step)
    : plan_(plan),
      options_(options),
      place_(place),
      fabric_(fabric),
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

void CpuRankRuntime::ShareParameters() { owned_ = fabric_.ShareParameters(params_); }

// ---- the program's instructions ----

void CpuRankRuntime::Compute(const Instruction& ins) {
  fault_.AtCompute(place_.world_rank, step_);
  if (fault_.PoisonWeights(place_.world_rank, step_) && !params_.entries().empty()) {
    for (Param* copy : params_.entries().begin()->second.copies) {
      std::fill(copy->value.data(), copy->value.data() + copy->value.size(), NAN);
    }
  }
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
  fabric_.Send(ins.peer, MessageOf(ins.action).slot(plan_.m()), io_.TakeOutgoing(ins.action));
}

void CpuRankRuntime::PostRecv(const Instruction& ins, std::int64_t) {
  const Message message = MessageOf(ins.action);
  fabric_.PostRecv(ins.peer, message.slot(plan_.m()),
                   Tensor(plan_.tokens_of(ins.action.microbatch),
                          plan_.stage_output_cols[message.shape_stage()]));
}

double CpuRankRuntime::WaitRecv(const Instruction& ins) {
  io_.Arrived(ins.action, fabric_.WaitRecv(ins.peer, MessageOf(ins.action).slot(plan_.m()),
                                           fmt::format("{} from rank {} (step {})",
                                                       ToString(ins.action), ins.peer, step_ + 1)));
  return Now();
}

const Batch& CpuRankRuntime::BatchOf(int microbatch) {
  auto it = batches_.find(microbatch);
  if (it != batches_.end()) return it->second;
  return batches_.emplace(microbatch, MicrobatchOf(plan_, step_, place_.replica, microbatch))
      .first->second;
}

void CpuRankRuntime::Forward(const Action& a) {
  const Batch& batch = BatchOf(a.microbatch);
  if (const std::vector<Cache>* last =
          ForwardPass(a, plan_.program.routes[a.microbatch], chains_.at(a.stage), batch, io_,
                      stage_memory_[a.stage])) {
    loss_sum_ += plan_.loss_weight(a.microbatch) * last->back().loss;
  }
}

void CpuRankRuntime::InputGrad(const Action& a) {
  const Batch& batch = BatchOf(a.microbatch);
  InputGradPass(a, plan_.program.routes[a.microbatch], chains_.at(a.stage), batch, io_,
                stage_memory_[a.stage]);
}

void CpuRankRuntime::WeightGrad(const Action& a) {
  if (!fault_.SkipWeightGrad(place_.world_rank)) {
    chains_.at(a.stage).WeightGrad(BatchOf(a.microbatch), io_.CachesOf(a.stage, a.microbatch));
  }
  io_.Release(a.stage, a.microbatch);
}

// ---- the training step around the program ----

Status CpuRankRuntime::BeginStep(int step) {
  fabric_.Barrier(fmt::format("the other ranks to start step {}", step + 1));
  step_ = step;
  batches_.clear();
  loss_sum_ = 0;
  return Status::Ok();
}

void CpuRankRuntime::EndProgram(int) { fabric_.EndProgram(); }

std::optional<Span> CpuRankRuntime::ReduceGradients(int) {
  params_.SumLocalCopies();
  if (plan_.dp == 1) return std::nullopt;
  // The span is the collective alone: the wait for the other replicas (a barrier first) is not
  // part of it, as in the simulator, which starts an all-reduce once every replica is there.
  fabric_.BarrierReplicas("the other replicas to reach the all-reduce");
  const double start = Now();
  fabric_.AllReduceReplicas(params_);
  return Span{start, Now()};
}

Status CpuRankRuntime::UpdateParameters(int step) {
  fabric_.SumSharedGrads(params_);  // after DP, so every copy ends bit-identical
  if (options_.verify && step == 0) {
    Result<NamedTensors> grads =
        fabric_.GatherOwned(params_, owned_, true, place_.replica == 0, "the gradient gather");
    PIPETTE_RETURN_IF_ERROR(grads.status());  // the same answer on every rank
    first_grads_ = std::move(*grads);
  }
  params_.Step({.lr = options_.lr, .weight_decay = options_.weight_decay}, step + 1);
  return Status::Ok();
}

void CpuRankRuntime::EndStep(int step, const Span& span) {
  const StepTotals totals = fabric_.ReduceStep(loss_sum_, span.start, span.end);
  if (place_.world_rank != 0) return;
  const double loss = totals.loss_sum / plan_.loss_weight_per_step();  // the mean over its tokens
  const double seconds = totals.latest_end - totals.earliest_start;
  losses_.push_back(loss);
  step_times_.push_back(seconds);
  if (on_step_) on_step_(step, loss, seconds);
}

}  // namespace pipette::cpu
