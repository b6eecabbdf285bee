// CpuRankRuntime: the RankRuntime of one pipeline rank of one data-parallel replica on the CPU. It
// holds the modules of its own stages (MPMD) and their parameters, runs the math of each compute
// instruction, and moves activations and gradients through its Fabric (fabric.h; MPI behind it,
// mpi_fabric.h) by their message slot (schedule/message.h): a receive is posted where the program
// places it and waited just before the compute that consumes it; sends complete at the end of the
// step. Around the program (RunSteps) it all-reduces the gradients over the replicas, sums the
// copies of shared parameters, applies AdamW and reduces the loss on world rank 0.
//
// Every wait on peers is the fabric's, bounded by the watchdog. Used from the rank's thread only.
// Borrows the plan, the options and the fabric, which must outlive it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric.h"
#include "gpt.h"
#include "param_set.h"
#include "pipette/engine/fault.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_runtime.h"
#include "pipette/engine/stage_io.h"
#include "pipette/engine/train_plan.h"
#include "reference.h"

namespace pipette::cpu {

class CpuRankRuntime final : public RankRuntime {
 public:
  // Builds the rank's stages and their optimizer state.
  CpuRankRuntime(const TrainPlan& plan, const TrainOptions& options, const RankPlace& place,
                 Fabric& fabric, StepCallback on_step);

  // Collective over the pipeline ranks: finds the parameters held in several copies and who owns
  // each for reporting. Call once before the first step.
  void ShareParameters();
  // The common start of the run's clock (the fabric's Clock on every rank after a barrier).
  void set_start(double t0) { t0_ = t0; }

  const ParamSet& params() const { return params_; }
  const std::set<std::string>& owned() const { return owned_; }
  const std::vector<StageMemory>& stage_memory() const { return stage_memory_; }
  // Gradients of the owned parameters after step 1 (world rank 0, with options.verify).
  NamedTensors& first_grads() { return first_grads_; }
  // Over all steps: the CPU time of this rank's computes' own work, and of the busy waits that
  // slow it down to its --rank-speed (each compute of t CPU seconds is followed by a spin of
  // (1/speed - 1) * t CPU seconds, measured on this thread's CPU clock, so it holds a core like
  // real work and a loaded machine stretches it as it stretches the work).
  double compute_work_seconds() const { return work_seconds_; }
  double slowdown_seconds() const { return slowdown_seconds_; }
  // World rank 0: per step, the mean loss over the step's tokens and its time.
  const std::vector<double>& losses() const { return losses_; }
  const std::vector<double>& step_times() const { return step_times_; }

  double Now() override { return fabric_.Clock() - t0_; }
  void Compute(const Instruction& ins) override;
  void Send(const Instruction& ins, std::int64_t bytes) override;
  void PostRecv(const Instruction& ins, std::int64_t bytes) override;
  double WaitRecv(const Instruction& ins) override;

  Status BeginStep(int step) override;
  void EndProgram(int step) override;
  std::optional<Span> ReduceGradients(int step) override;
  Status UpdateParameters(int step) override;
  void EndStep(int step, const Span& span) override;

 private:
  const Batch& BatchOf(int microbatch);
  // Runs the compute action `a` (an overlapped cell: its forward, then its backward half).
  void Run(const Action& a);
  // Spins for (1/speed - 1) times the CPU time `work` (--rank-speed); accounts both.
  void SlowDown(double work);
  void Forward(const Action& a);
  void InputGrad(const Action& a);
  void WeightGrad(const Action& a);

  const TrainPlan& plan_;
  const TrainOptions& options_;
  const RankPlace place_;
  Fabric& fabric_;
  StepCallback on_step_;
  Fault fault_;
  std::map<int, ModuleChain> chains_;  // by global stage
  ParamSet params_;
  std::set<std::string> owned_;
  std::vector<StageMemory> stage_memory_;
  NamedTensors first_grads_;
  std::vector<double> losses_, step_times_;

  int step_ = 0;
  double t0_ = 0;
  double loss_sum_ = 0;  // weighted mean losses of the microbatches whose last stage ran here
  double work_seconds_ = 0, slowdown_seconds_ = 0;
  std::unordered_map<int, Batch> batches_;
  StageIo<Tensor, std::vector<Cache>> io_;  // inputs, outputs awaiting SEND, forward caches
};

}  // namespace pipette::cpu
