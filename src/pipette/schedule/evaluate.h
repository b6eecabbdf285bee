// evaluate(): the analytic event evaluator, pipette's fast path and the oracle that the SimGrid
// engine must reproduce on an ideal network.
//
// Each rank runs its instruction list strictly in order. A compute action starts when its rank is
// free and its inputs have arrived: an input produced on the same rank is there when its producer
// ends; one from another rank arrives `p2p_latency` after the producer's SEND ran (a send takes no
// rank time and follows its compute). Receives are posted buffers and take no time. An overlapped
// cell needs both halves' inputs and costs F + B (with MoE all-to-all: Costs::Of's overlap model).
// Uneven work (uneven_work.h): the Costs carry per-microbatch lengths and rank speeds; a slowed
// link multiplies the latency of its pair. Pure function; thread-safe.
#pragma once

#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette {

struct EvaluateOptions {
  double p2p_latency = 0.0;      // time from a SEND to its data being usable on the peer
  bool record_timeline = false;  // fill Evaluation::timeline
  // A message between pipeline ranks a and b arrives p2p_latency * factor after its SEND.
  std::vector<LinkSlowdown> link_slowdowns;
};

// When one instruction ran. For a RECV: start = when it was posted, end = when its data arrived.
struct Interval {
  double start = 0.0;
  double end = 0.0;
};

struct Evaluation {
  double makespan = 0.0;  // common start of all ranks to the end of the last action
  // 1 - sum(busy) / (p * makespan): idle over total (docs/metrics.md).
  double bubble_ratio = 0.0;
  std::vector<double> busy;           // per rank: total compute time
  std::vector<int> peak_activations;  // per rank: most chunks whose F ran and whose I/B did not
  std::vector<int> peak_pending_w;    // per rank: most chunks whose I ran and whose W did not
  // Per rank, per instruction (same index as the program), when record_timeline is set.
  std::vector<std::vector<Interval>> timeline;
};

// Returns the evaluation of `program` with `costs` (one entry per stage), or FailedPrecondition
// when the ranks deadlock (impossible for a program made by Lower()), or InvalidArgument when the
// costs do not fit the program (Costs::Check) or a link slowdown names a rank out of range.
// REQUIRES: the program's actions are in range.
Result<Evaluation> Evaluate(const Program& program, const Costs& costs,
                            const EvaluateOptions& options = {});

}  // namespace pipette
