// RunRank: the interpreter loop every engine shares. It runs one rank's lowered program for one
// training step strictly in order with the semantics of evaluate() (docs/architecture.md): a
// compute action first waits for the receive that carries its cross-rank input, then runs (for as
// long as the runtime takes); sends and receive posts take no time. Every executed instruction
// yields one trace event with the program's id and the step.
#pragma once

#include <cstdint>
#include <vector>

#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/program.h"

namespace pipette {

// One data-parallel gradient all-reduce of one rank in one step (it follows the rank's program).
struct AllReduceEvent {
  int rank = 0;
  int step = 0;
  double start = 0;  // seconds
  double end = 0;
  std::int64_t bytes = 0;  // gradient bytes reduced (0 when the engine does not know)
};

// Bytes of every message: `stage_output_bytes[s]` is what stage s hands to the next stage (its
// forward output; the gradient sent back to it has the same size). Empty: every message is 0 bytes.
// Variable-length microbatches (schedule/uneven_work.h): microbatch_scale[mb] multiplies the
// bytes of every message of microbatch mb (its length over the reference length; rounded to the
// nearest byte); empty: every microbatch at the reference size.
struct MessageSizes {
  std::vector<std::int64_t> stage_output_bytes;
  std::vector<double> microbatch_scale;

  // Bytes of the SEND or RECV `action` (the message it carries, schedule/message.h).
  std::int64_t Of(const Action& action) const;
};

// Runs rank `rank` of `program` for training step `step` on `runtime`, appending one event per
// instruction to `trace` (in program order, stamped with `step`; RECV events are completed when
// waited for). REQUIRES: program from Lower().
void RunRank(const Program& program, int rank, int step, const MessageSizes& sizes,
             RankRuntime& runtime, std::vector<TraceEvent>& trace);

}  // namespace pipette
