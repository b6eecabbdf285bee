#include "pipette/engine/rank_interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "pipette/schedule/message.h"

namespace pipette {

std::int64_t MessageSizes::Of(const Action& a) const {
  if (stage_output_bytes.empty()) return 0;
  const Message message = MessageOf(a);
  const std::int64_t bytes = stage_output_bytes[message.shape_stage()];
  if (microbatch_scale.empty()) return bytes;
  return std::llround(static_cast<double>(bytes) * microbatch_scale[message.microbatch]);
}

void RunRank(const Program& program, int rank, int step, const MessageSizes& sizes,
             RankRuntime& runtime, std::vector<TraceEvent>& trace) {
  const auto& instructions = program.ranks[rank].instructions;
  std::unordered_map<std::int64_t, std::size_t> posted;  // message key -> its RECV's trace index

  // Completes the receive at trace[index] once its data has arrived.
  auto wait = [&](std::size_t index) {
    TraceEvent& recv = trace[index];
    recv.end = std::max(recv.start, runtime.WaitRecv(instructions[recv.instr_id]));
  };
  // Waits for the cross-rank input of the plain compute action `a`, if it has one.
  auto wait_input = [&](const Action& a) {
    const std::optional<Message> input = InputMessage(program.routes[a.microbatch], a);
    if (!input || program.placement.rank_of(input->sender_stage()) == rank) return;
    const auto it = posted.find(input->key());
    if (it == posted.end()) return;  // not a lowered program; nothing to wait for
    wait(it->second);
    posted.erase(it);
  };

  for (std::size_t k = 0; k < instructions.size(); ++k) {
    const Instruction& ins = instructions[k];
    const Action& a = ins.action;
    runtime.Dispatch(ins);
    TraceEvent event{rank, static_cast<int>(k), step, a, 0, 0, 0};
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
        posted[MessageOf(a).key()] = trace.size();
        break;
      default:
        if (a.kind == ActionKind::kOverlapped) {
          wait_input(a.forward_half());
          wait_input(a.backward_half());
        } else {
          wait_input(a);
        }
        event.start = runtime.Now();
        runtime.Compute(ins);
        event.end = runtime.Now();
        break;
    }
    trace.push_back(event);
  }
  // Receives never consumed (not produced by Lower()) still complete before the rank ends.
  for (const auto& [key, index] : posted) wait(index);
}

}  // namespace pipette
