#include "pipette/engine/memory_timeline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "pipette/schedule/message.h"

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

// One change of a rank's allocation; changes apply in time order, and at one time releases before
// allocations (a backward's release before the next forward's allocation at its end), each kind in
// the order found.
struct Delta {
  double time = 0;
  double bytes = 0;
};

// The bytes `action` (a compute) allocates at its start and releases at its end.
void ComputeDeltas(const TraceEvent& e, const std::vector<StageMemory>& stages,
                   std::vector<Delta>& out) {
  const Action& a = e.action;
  auto backward_end = [&](const Action& b) {
    const StageMemory& m = stages[b.stage];
    double delta = -static_cast<double>(m.activation_bytes);
    if (b.kind == ActionKind::kInputBackward) delta += static_cast<double>(m.wgrad_input_bytes);
    out.push_back({e.end, delta});
  };
  const double workspace = static_cast<double>(stages[a.stage].workspace_bytes);
  if (workspace > 0) out.push_back({e.start, workspace});
  switch (a.kind) {
    case ActionKind::kForward:
      out.push_back({e.start, static_cast<double>(stages[a.stage].activation_bytes)});
      break;
    case ActionKind::kInputBackward:
    case ActionKind::kFullBackward:
      backward_end(a);
      break;
    case ActionKind::kWeightBackward:
      out.push_back({e.end, -static_cast<double>(stages[a.stage].wgrad_input_bytes)});
      break;
    case ActionKind::kOverlapped:
      out.push_back({e.start, static_cast<double>(stages[a.stage].activation_bytes)});
      backward_end(a.backward_half());
      break;
    default:
      break;
  }
  if (workspace > 0) out.push_back({e.end, -workspace});
}

// The messages of one rank's step: sends held to the end of its program, receives from their post
// to their consumer (a forward's start, a backward's end).
void MessageDeltas(const std::vector<const TraceEvent*>& step, std::vector<Delta>& out) {
  double program_end = 0;
  // message key -> when the engine lets go of the buffer: a forward input moves into the
  // consumer's activations (counted there from its start), a gradient is freed when I or B ends.
  std::map<std::int64_t, double> consumed;
  for (const TraceEvent* e : step) {
    program_end = std::max(program_end, e->end);
    const Action& a = e->action;
    if (!IsCompute(a.kind)) continue;
    for (const Action& half : a.kind == ActionKind::kOverlapped
                                  ? std::vector<Action>{a.forward_half(), a.backward_half()}
                                  : std::vector<Action>{a}) {
      const bool gradient = half.kind != ActionKind::kForward;
      if (half.kind == ActionKind::kWeightBackward) continue;
      consumed[Message{half.stage, half.microbatch, gradient}.key()] = gradient ? e->end : e->start;
    }
  }
  for (const TraceEvent* e : step) {
    const ActionKind k = e->action.kind;
    const double bytes = static_cast<double>(e->bytes);
    if (bytes == 0) continue;
    if (k == ActionKind::kSendForward || k == ActionKind::kSendBackward) {
      out.push_back({e->start, bytes});
      out.push_back({program_end, -bytes});
    } else if (k == ActionKind::kRecvForward || k == ActionKind::kRecvBackward) {
      const auto it = consumed.find(MessageOf(e->action).key());
      out.push_back({e->start, bytes});
      out.push_back({it == consumed.end() ? program_end : it->second, -bytes});
    }
  }
}

}  // namespace

std::vector<RankMemoryTimeline> MemoryOverTime(const std::vector<TraceEvent>& trace,
                                               const std::vector<double>& static_bytes,
                                               const std::vector<StageMemory>& stages,
                                               bool message_buffers) {
  std::vector<std::vector<Delta>> deltas(static_bytes.size());
  std::map<std::pair<int, int>, std::vector<const TraceEvent*>> steps;  // (rank, step) -> events
  for (const TraceEvent& e : trace) {
    if (IsCompute(e.action.kind)) ComputeDeltas(e, stages, deltas[e.rank]);
    if (message_buffers) steps[{e.rank, e.step}].push_back(&e);
  }
  for (const auto& [rank_step, events] : steps) MessageDeltas(events, deltas[rank_step.first]);
  std::vector<RankMemoryTimeline> lines(static_bytes.size());
  for (std::size_t r = 0; r < lines.size(); ++r) {
    lines[r].samples.push_back({0.0, static_bytes[r]});
    lines[r].peak_bytes = static_bytes[r];
    std::stable_sort(deltas[r].begin(), deltas[r].end(), [](const Delta& x, const Delta& y) {
      return x.time != y.time ? x.time < y.time : (x.bytes < 0 && y.bytes >= 0);
    });
    for (const Delta& d : deltas[r]) Change(lines[r], d.time, d.bytes);
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
