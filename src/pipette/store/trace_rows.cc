#include "pipette/store/trace_rows.h"

#include <utility>

namespace pipette {
namespace {

// Every plain action kind and the event kind of its rows (an overlapped cell has the rows of its
// two halves).
constexpr std::pair<ActionKind, EventKind> kKinds[] = {
    {ActionKind::kForward, EventKind::kF},          {ActionKind::kInputBackward, EventKind::kI},
    {ActionKind::kWeightBackward, EventKind::kW},   {ActionKind::kFullBackward, EventKind::kB},
    {ActionKind::kSendForward, EventKind::kSendF},  {ActionKind::kRecvForward, EventKind::kRecvF},
    {ActionKind::kSendBackward, EventKind::kSendB}, {ActionKind::kRecvBackward, EventKind::kRecvB},
};

}  // namespace

EventKind EventKindOf(ActionKind kind) {
  for (const auto& [action, event] : kKinds) {
    if (action == kind) return event;
  }
  return EventKind::kF;  // overlapped cells are split by the caller
}

ActionKind ActionKindOf(EventKind kind) {
  for (const auto& [action, event] : kKinds) {
    if (event == kind) return action;
  }
  return ActionKind::kForward;  // all-reduces have no action
}

std::vector<EventRow> ToEventRows(const Program& program, const std::vector<TraceEvent>& trace,
                                  const std::vector<AllReduceEvent>& allreduces,
                                  const std::vector<AllReduceEvent>& updates) {
  // chunk_of[s]: how many of stage s's rank's stages come before it.
  std::vector<int> chunk_of(program.num_stages(), 0), seen(program.p, 0);
  for (int s = 0; s < program.num_stages(); ++s) chunk_of[s] = seen[program.placement.rank_of(s)]++;

  std::vector<EventRow> rows;
  rows.reserve(trace.size() + allreduces.size() + updates.size());
  for (const TraceEvent& e : trace) {
    auto add = [&](const Action& a) {
      EventRow row;
      row.rank = e.rank;
      row.step = e.step;
      row.instr_id = e.instr_id;
      row.kind = EventKindOf(a.kind);
      row.stage = a.stage;
      row.chunk = chunk_of[a.stage];
      row.microbatch = a.microbatch;
      row.start_s = e.start;
      row.end_s = e.end;
      row.bytes = e.bytes;
      rows.push_back(row);
    };
    if (e.action.kind == ActionKind::kOverlapped) {
      add(e.action.forward_half());
      add(e.action.backward_half());
    } else {
      add(e.action);
    }
  }
  auto add_step_part = [&](const AllReduceEvent& a, EventKind kind) {
    EventRow row;
    row.rank = a.rank;
    row.step = a.step;
    row.instr_id = -1;
    row.kind = kind;
    row.stage = -1;
    row.chunk = 0;
    row.microbatch = -1;
    row.start_s = a.start;
    row.end_s = a.end;
    row.bytes = a.bytes;
    rows.push_back(row);
  };
  for (const AllReduceEvent& a : allreduces) add_step_part(a, EventKind::kAllReduce);
  for (const AllReduceEvent& u : updates) add_step_part(u, EventKind::kOptimizer);
  return rows;
}

std::vector<MemoryRow> ToMemoryRows(const std::vector<RankMemoryTimeline>& timelines) {
  std::vector<MemoryRow> rows;
  for (std::size_t r = 0; r < timelines.size(); ++r) {
    for (const MemorySample& s : timelines[r].samples) {
      rows.push_back({static_cast<int>(r), s.time, s.bytes});
    }
  }
  return rows;
}

}  // namespace pipette
