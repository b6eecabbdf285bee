// RunSteps: the training loop every engine runs, once. Each step of one rank reads like a
// training loop in a paper:
//
//   runtime.BeginStep(step)          wait for the other ranks, reset per-step state
//   RunRank(program, rank, step)     the rank's program: forwards, backwards, sends, receives
//   runtime.EndProgram(step)         complete the step's sends
//   runtime.TimeProgram(step, ...)   a device-timed runtime sets the step's event times
//   runtime.ReduceGradients(step)    data-parallel gradient all-reduce over the replicas
//   runtime.UpdateParameters(step)   sum shared copies, optimizer
//   runtime.EndStep(step, span)      the loss, progress
//
// and lands in a RankLog: the traced steps' instructions, all-reduces and parameter updates, and
// each step's span.
// The SimGrid engine and the real engines differ only in the RankRuntime (rank_runtime.h).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/program.h"

namespace pipette {

// What one rank did over a run.
struct RankLog {
  std::vector<TraceEvent> trace;           // traced steps, program order within each step
  std::vector<AllReduceEvent> allreduces;  // traced steps
  std::vector<AllReduceEvent> updates;     // traced steps: UpdateParameters' span (bytes 0)
  std::vector<Span> steps;                 // every step: from BeginStep's end to its last part
};

struct StepLoopOptions {
  int steps = 1;
  // Steps 0 .. trace_steps-1 keep their instruction events and all-reduces in the log; later
  // steps only their span (a long run's trace would not fit).
  int trace_steps = std::numeric_limits<int>::max();
  // Bytes an all-reduce reduces, recorded with its event (0 when the engine does not know).
  std::int64_t gradient_bytes = 0;
  // Called after each step's EndStep with the log so far (a real engine hands the finished step to
  // world rank 0, which records it as the run goes); none when empty.
  std::function<void(int step, const RankLog& log)> after_step;
};

// Runs options.steps training steps of rank `rank` of `program` on `runtime`, appending to `log`.
// Returns the first error of a step part (BeginStep, UpdateParameters), after which no further
// step runs. REQUIRES: program from Lower().
Status RunSteps(const Program& program, int rank, const MessageSizes& sizes,
                const StepLoopOptions& options, RankRuntime& runtime, RankLog& log);

}  // namespace pipette
