#include "pipette/engine/rank_interpreter.h"

#include <algorithm>
#include <unordered_map>

namespace pipette {

std::int64_t MessageSizes::Of(const Action& a) const {
  if (stage_output_bytes.empty()) return 0;
  switch (a.kind) {
    case ActionKind::kSendForward:
      return stage_output_bytes[a.stage];  // stage s sends its output
    case ActionKind::kRecvForward:
      return stage_output_bytes[a.stage - 1];  // stage s receives its input
    case ActionKind::kSendBackward:
      return stage_output_bytes[a.stage - 1];  // the gradient of stage s's input
    case ActionKind::kRecvBackward:
      return stage_output_bytes[a.stage];  // the gradient of stage s's output
    default:
      return 0;
  }
}

void RunRank(const Program& program, int rank, const Costs& costs, const MessageSizes& sizes,
             RankRuntime& runtime, std::vector<TraceEvent>& trace) {
  const auto& instructions = program.ranks[rank].instructions;
  std::unordered_map<std::int64_t, std::size_t> posted;  // message key -> its RECV's trace index

  // Waits for the cross-rank input of the plain compute action `a`, if it has one.
  auto wait_input = [&](const Action& a) {
    const int in = InputStage(program.routes[a.microbatch], a);
    if (in < 0 || program.placement.rank_of(in) == rank) return;
    const auto it = posted.find(MessageKey(a.stage, a.microbatch, a.kind != ActionKind::kForward));
    if (it == posted.end()) return;  // not a lowered program; nothing to wait for
    TraceEvent& recv = trace[it->second];
    recv.end = std::max(recv.start, runtime.WaitRecv(instructions[recv.instr_id]));
    posted.erase(it);
  };

  for (std::size_t k = 0; k < instructions.size(); ++k) {
    const Instruction& ins = instructions[k];
    const Action& a = ins.action;
    TraceEvent event{rank, static_cast<int>(k), 0, a, 0, 0, 0};
    switch (a.kind) {
      case ActionKind::kSendForward:
      case ActionKind::kSendBackward:
        event.bytes = sizes.Of(a);
        event.start = event.end = runtime.Now();
        runtime.Send(ins, event.bytes);
        break;
      case ActionKind::kRecvForward:
      case ActionKind::kRecvBackward:
        event.bytes = sizes.Of(a);
        event.start = event.end = runtime.Now();
        runtime.PostRecv(ins, event.bytes);
        posted[MessageKey(a.stage, a.microbatch, a.kind == ActionKind::kRecvBackward)] =
            trace.size();
        break;
      default:
        if (a.kind == ActionKind::kOverlapped) {
          wait_input(a.forward_half());
          wait_input(a.backward_half());
        } else {
          wait_input(a);
        }
        event.start = runtime.Now();
        runtime.Compute(ins, costs.Of(a));
        event.end = runtime.Now();
        break;
    }
    trace.push_back(event);
  }
  // Receives never consumed (not produced by Lower()) still complete before the rank ends.
  for (const auto& [key, index] : posted) {
    trace[index].end =
        std::max(trace[index].start, runtime.WaitRecv(instructions[trace[index].instr_id]));
  }
}

}  // namespace pipette
