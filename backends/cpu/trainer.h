// TrainOnMpi: pipeline-parallel training on the CPU with one MPI process per rank.
//
// World rank w is pipeline rank w % p of data-parallel replica w / p. Each process builds only the
// modules of its own stages and runs its rank's lowered program through RunRank, the interpreter
// loop the simulator uses: activations and gradients travel as non-blocking MPI messages (a
// receive is posted where the program places it and waited just before the compute that consumes
// it; sends complete by the end of the step). After the program, gradients are all-reduced over
// the replicas (one MPI_Allreduce per rank), then summed over copies of one parameter on several
// pipeline ranks (tied embeddings, DualPipe's two model copies), then AdamW updates them.
//
// A rank never waits on a peer forever: a watchdog ends the process with a message naming what it
// waited for once a wait exceeds options.peer_timeout_s, and mpirun then ends the others.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_interpreter.h"
#include "reference.h"
#include "train_plan.h"
#include "watchdog.h"

namespace pipette::cpu {

// True when this process was started by an MPI launcher (mpirun, srun with PMI/PMIx).
bool LaunchedByMpi();

// Agreement before anything runs: every rank passes its own parse/plan status and its resolved
// configuration (JSON text). All ranks return the same answer: the first failing rank's error
// (prefixed with its rank), or InvalidArgument naming the first key whose value differs from rank
// 0's (MPMD launches with mismatched arguments), or OK. REQUIRES: MPI initialised.
Status AgreeOnConfiguration(const Status& local, const std::string& config_json);

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
  // Per pipeline rank (the maximum over replicas): tensor bytes at their peak, the part held for
  // the whole run (weights, gradients, AdamW moments), and the process's peak resident set.
  std::vector<double> peak_memory_bytes;
  std::vector<double> static_bytes;
  std::vector<double> peak_rss_bytes;
  std::vector<StageMemory> stage_memory;  // measured bytes held per microbatch, per stage
  std::optional<Verification> verification;
};

// Called on rank 0 after each step (step from 0, its loss and time).
using StepCallback = std::function<void(int step, double loss, double seconds)>;

// Trains on MPI_COMM_WORLD, whose size must be plan.world_size(). Every rank calls it; rank 0's
// report is complete. With options.verify, rank 0 also trains the unpipelined reference. Every
// wait on peers runs under `dog`.
Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step = {});

}  // namespace pipette::cpu
