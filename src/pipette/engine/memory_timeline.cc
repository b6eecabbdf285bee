#include "pipette/engine/memory_timeline.h"

namespace pipette {
namespace {

// Adds `delta` bytes at `time` to a rank's timeline.
void Change(RankMemoryTimeline& line, double time, double delta) {
  if (delta == 0) return;
  const double bytes = line.samples.back().bytes + delta;
  if (line.samples.back().time == time) {
    line.samples.back().bytes = bytes;
  } else {
    line.samples.push_back({time, bytes});
  }
  if (bytes > line.peak_bytes) {
    line.peak_bytes = bytes;
    line.peak_time = time;
  }
}

// Releases what the backward `action` (I or B) frees when it ends and takes what it hands to W.
void EndBackward(RankMemoryTimeline& line, double time, const Action& action,
                 const std::vector<StageMemory>& stages) {
  const StageMemory& m = stages[action.stage];
  double delta = -static_cast<double>(m.activation_bytes);
  if (action.kind == ActionKind::kInputBackward) delta += static_cast<double>(m.wgrad_input_bytes);
  Change(line, time, delta);
}

}  // namespace

std::vector<RankMemoryTimeline> MemoryOverTime(const std::vector<TraceEvent>& trace,
                                               const std::vector<double>& static_bytes,
                                               const std::vector<StageMemory>& stages) {
  std::vector<RankMemoryTimeline> lines(static_bytes.size());
  for (std::size_t r = 0; r < lines.size(); ++r) {
    lines[r].samples.push_back({0.0, static_bytes[r]});
    lines[r].peak_bytes = static_bytes[r];
  }
  for (const TraceEvent& e : trace) {
    RankMemoryTimeline& line = lines[e.rank];
    const Action& a = e.action;
    switch (a.kind) {
      case ActionKind::kForward:
        Change(line, e.start, static_cast<double>(stages[a.stage].activation_bytes));
        break;
      case ActionKind::kInputBackward:
      case ActionKind::kFullBackward:
        EndBackward(line, e.end, a, stages);
        break;
      case ActionKind::kWeightBackward:
        Change(line, e.end, -static_cast<double>(stages[a.stage].wgrad_input_bytes));
        break;
      case ActionKind::kOverlapped:
        Change(line, e.start, static_cast<double>(stages[a.stage].activation_bytes));
        EndBackward(line, e.end, a.backward_half(), stages);
        break;
      default:  // communication holds no memory of its own in this model
        break;
    }
  }
  return lines;
}

std::optional<OutOfMemory> FirstOutOfMemory(const std::vector<RankMemoryTimeline>& timelines,
                                            double device_bytes) {
  std::optional<OutOfMemory> first;
  for (std::size_t r = 0; r < timelines.size(); ++r) {
    for (const MemorySample& s : timelines[r].samples) {
      if (s.bytes <= device_bytes) continue;
      if (!first || s.time < first->time) first = OutOfMemory{static_cast<int>(r), s.time, s.bytes};
      break;
    }
  }
  return first;
}

}  // namespace pipette
