// Memory over time: each rank's allocated bytes during a step, rebuilt from the trace of an
// executed step (simulated or measured), so every engine reports memory the same way.
//
// A rank holds its static bytes (weights, gradients, optimizer state) throughout. A forward
// allocates its stage's activation bytes when it starts; an I or B frees them when it ends, and
// an I then holds the weight-gradient inputs until its W ends. An overlapped (F;B) cell allocates
// at its start and frees at its end. This is the accounting of MemoryModel (cost/memory_model.h)
// applied instruction by instruction, so the peak is exact for the executed order rather than the
// peak-count bound the partitioner uses.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pipette/engine/rank_interpreter.h"

namespace pipette {

// Per stage: bytes one in-flight microbatch holds on its GPU.
struct StageMemory {
  std::int64_t activation_bytes = 0;   // from the start of F to the end of I or B
  std::int64_t wgrad_input_bytes = 0;  // from the end of I to the end of W
  // Held only while one of the stage's computes runs (an engine's temporaries), start to end.
  std::int64_t workspace_bytes = 0;
};

struct MemorySample {
  double time = 0;   // seconds
  double bytes = 0;  // allocated from this time on
};

struct RankMemoryTimeline {
  // Starts with (0, static bytes); one sample per change, in time order. A change at the same time
  // as the previous sample replaces it.
  std::vector<MemorySample> samples;
  double peak_bytes = 0;
  double peak_time = 0;  // first time the peak is reached
};

// Rebuilds every rank's memory from `trace` (events of ranks 0..static_bytes.size()-1, each
// rank's in program order, as RunRank writes them). With `message_buffers` (the CPU engine's MPI
// buffers) a message also holds its bytes: a SEND's from the send to the end of that rank's
// program in that step (the engine completes its sends there), a RECV's from the post to the
// compute that consumes it: its start for a forward input (which becomes part of the forward's
// activations), its end for a gradient. REQUIRES: stages covers every stage in the trace.
std::vector<RankMemoryTimeline> MemoryOverTime(const std::vector<TraceEvent>& trace,
                                               const std::vector<double>& static_bytes,
                                               const std::vector<StageMemory>& stages,
                                               bool message_buffers = false);

struct OutOfMemory {
  int rank = 0;
  double time = 0;   // when the rank's allocation first exceeded the device
  double bytes = 0;  // its allocation then
};

// The earliest moment any rank holds more than `device_bytes` (ties: the lowest rank), if any.
std::optional<OutOfMemory> FirstOutOfMemory(const std::vector<RankMemoryTimeline>& timelines,
                                            double device_bytes);

}  // namespace pipette
