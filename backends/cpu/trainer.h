// TrainOnMpi: pipeline-parallel training on the CPU with one MPI process per rank.
//
// World rank w is pipeline rank w % p of data-parallel replica w / p. Each process builds only the
// modules of its own stages (CpuRankRuntime, cpu_rank_runtime.h) and runs the training loop every
// engine shares (RunSteps, pipette/engine/step_loop.h): its rank's lowered program through
// RunRank, then the gradients all-reduced over the replicas (one MPI_Allreduce per rank), summed
// over copies of one parameter on several pipeline ranks (tied embeddings, DualPipe's two model
// copies), and AdamW. Afterwards world rank 0 gathers the trace and the measurements.
//
// A rank never waits on a peer forever: a watchdog ends the process with a message naming what it
// waited for once a wait exceeds options.peer_timeout_s, and mpirun then ends the others.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cpu_rank_runtime.h"
#include "mpi_launch.h"
#include "pipette/common/status.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_interpreter.h"
#include "reference.h"
#include "train_plan.h"
#include "watchdog.h"

namespace pipette::cpu {

// A pipelined run against the unpipelined reference. Gradients after step 1 must agree tensor by
// tensor. Parameters after N steps are compared as one vector: AdamW divides each gradient by its
// own running magnitude, so a gradient that is analytically zero (the key bias of attention:
// softmax ignores a constant shift of the scores) becomes unit-size updates of rounding noise,
// different in every summation order. Such tensors drift apart at 1e-4 relative after a few steps
// while the model as a whole agrees to 1e-6; `parameters.worst` still names them.
struct Verification {
  Mismatch gradients;              // after step 1: max_relative_error is the check
  Mismatch parameters;             // after the last step: global_relative_error is the check
  double max_loss_difference = 0;  // max over steps of |loss - reference loss|
  bool Passes(double tolerance) const {
    return gradients.max_relative_error <= tolerance &&
           parameters.global_relative_error <= tolerance;
  }
};

struct TrainReport {                       // complete on world rank 0 only
  std::vector<double> losses;              // per step: mean loss over the step's tokens
  std::vector<double> step_times;          // per step, seconds (barrier to the end of the update)
  double tokens_per_s = 0;                 // over all steps
  std::int64_t params = 0;                 // distinct parameters of the model
  std::vector<TraceEvent> trace;           // replica 0, every pipeline rank, every step
  std::vector<AllReduceEvent> allreduces;  // replica 0
  std::vector<AllReduceEvent> updates;     // replica 0: each rank's parameter update per step
  // Per pipeline rank (the maximum over replicas): tensor bytes at their peak, the part held for
  // the whole run (weights, gradients, AdamW moments), and the process's peak resident set.
  std::vector<double> peak_memory_bytes;
  std::vector<double> static_bytes;
  std::vector<double> peak_rss_bytes;
  std::vector<StageMemory> stage_memory;  // measured bytes held per microbatch, per stage
  std::optional<Verification> verification;
};

// Trains on MPI_COMM_WORLD, whose size must be plan.world_size(). Every rank calls it; rank 0's
// report is complete. With options.verify, rank 0 also trains the unpipelined reference. Every
// wait on peers runs under `dog`.
Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step = {});

}  // namespace pipette::cpu
