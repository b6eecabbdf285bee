// CudaRankRuntime: the RankRuntime of one pipeline rank of one data-parallel replica on a GPU.
// It holds the device modules of its own stages (MPMD) and their parameters, runs the math of each
// compute instruction on its stream, and moves activations and gradients through its Fabric
// (fabric.h): a receive is posted where the program places it and waited just before the compute
// that consumes it. Around the program (RunSteps) it all-reduces the gradients over the replicas,
// sums the copies of shared parameters, applies AdamW (one multi-tensor launch) and reduces the
// loss onto world rank 0.
//
// Timing: the host never waits inside a step. Compute queues the instruction's kernels on the
// rank's stream between two CUDA events (an NVTX range names it like the trace event), WaitRecv
// orders the message before the computes that follow, sends and receive posts mark where they were
// dispatched in the stream's order; the host runs ahead to the end of the program, and EndProgram
// waits (bounded) for the device. TimeProgram then gives every trace event its device time on the
// host clock (seconds from the run's common start): an event recorded at the step's start, after
// its barrier, is the anchor. A receive ends when the stream passed its wait (the data had arrived
// and the compute before it was done), as a host blocked in it would see. Used from the rank's
// thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "device_tensor.h"
#include "fabric.h"
#include "model.h"
#include "pipette/engine/fault.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_runtime.h"
#include "pipette/engine/stage_io.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "rank_device.h"

namespace pipette::cuda {

class CudaRankRuntime final : public RankRuntime {
 public:
  // Builds the rank's stages and their optimizer state on `dev`.
  CudaRankRuntime(const TrainPlan& plan, const TrainOptions& options, const RankPlace& place,
                  RankDevice& dev, Fabric& fabric, StepCallback on_step);
  ~CudaRankRuntime() override;

  // Collective over the pipeline ranks: finds the parameters held in several copies. Call once
  // before the first step.
  void ShareParameters();
  // The common start of the run's clock (seconds on the host's steady clock).
  void set_start(double t0) { t0_ = t0; }

  // What this rank contributes to the run's report after its steps: its memory (peak, static:
  // weights, gradients, AdamW moments), its device compute time and the bytes its stages held; from
  // replica 0 (`replica0`) also `log` and the elements of the parameters it reports (the first
  // holder of each shared one).
  RankContribution Contribution(RankLog log, bool replica0) const;
  // Values (grads = false) or gradients of the parameters this rank reports.
  NamedTensors Snapshot(bool grads);
  // Gradients after step 1, taken when options.verify.
  const NamedTensors& first_grads() const { return first_grads_; }
  const std::vector<double>& losses() const { return losses_; }
  const std::vector<double>& step_times() const { return step_times_; }

  double Now() override;
  void Compute(const Instruction& ins) override;
  void Send(const Instruction& ins, std::int64_t bytes) override;
  void PostRecv(const Instruction& ins, std::int64_t bytes) override;
  double WaitRecv(const Instruction& ins) override;
  void TimeProgram(int step, std::span<TraceEvent> events) override;

  Status BeginStep(int step) override;
  void EndProgram(int step) override;
  std::optional<Span> ReduceGradients(int step) override;
  Status UpdateParameters(int step) override;
  void EndStep(int step, const Span& span) override;

 private:
  struct Entry {                       // one parameter name on this rank
    std::vector<DeviceParam*> copies;  // copies[0] is the one updated
    DeviceTensor m, v;                 // AdamW moments
  };

  // The events of one instruction of the step: around a compute; `begin` alone where a send or
  // a receive post was dispatched, `end` of a receive where the stream passed its wait.
  struct Marks {
    cudaEvent_t begin = nullptr, end = nullptr;
  };
  // Records instruction `ins`'s begin or end event on the stream now.
  void Mark(const Instruction& ins, bool begin);
  // The host-clock time of the recorded, completed `event`.
  double TimeOf(cudaEvent_t event) const;

  const DeviceBatch& BatchOf(int microbatch);
  void Run(const Action& a);
  void Forward(const Action& a);
  void InputGrad(const Action& a);
  void WeightGrad(const Action& a);
  void ClearBatches();

  const TrainPlan& plan_;
  const TrainOptions& options_;
  const RankPlace place_;
  RankDevice& dev_;
  Fabric& fabric_;
  StepCallback on_step_;
  Fault fault_;
  std::map<int, DeviceChain> chains_;  // by global stage
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::vector<int>> shared_;  // name -> the pipeline ranks holding it
  std::set<std::string> owned_;
  std::vector<StageMemory> stage_memory_;
  std::int64_t static_bytes_ = 0;
  NamedTensors first_grads_;
  std::vector<double> losses_, step_times_;
  std::vector<Marks> marks_;           // by instruction index, created on first use, reused
  cudaEvent_t anchor_ = nullptr;       // recorded when the step starts
  double anchor_time_ = 0;             // its host-clock time
  double device_compute_seconds_ = 0;  // so far, from the events around the computes

  int step_ = 0;
  double t0_ = 0;
  double* loss_device_ = nullptr;  // device: the step's sum of microbatch mean losses
  std::unordered_map<int, DeviceBatch> batches_;
  StageIo<DeviceTensor, std::vector<DeviceCache>> io_;  // inputs, outputs, forward caches
  std::vector<std::unique_ptr<Batch>> host_batches_;
};

}  // namespace pipette::cuda
