#include "pipette/schedule/message.h"

namespace pipette {

Message MessageOf(const Action& a) {
  switch (a.kind) {
    case ActionKind::kSendForward:
      return {a.stage + 1, a.microbatch, false};
    case ActionKind::kSendBackward:
      return {a.stage - 1, a.microbatch, true};
    case ActionKind::kRecvBackward:
      return {a.stage, a.microbatch, true};
    default:  // kRecvForward
      return {a.stage, a.microbatch, false};
  }
}

std::optional<Message> InputMessage(const StageRange& route, const Action& a) {
  if (InputStage(route, a) < 0) return std::nullopt;
  return Message{a.stage, a.microbatch, a.kind != ActionKind::kForward};
}

std::optional<Message> OutputMessage(const StageRange& route, const Action& a) {
  const int consumer = ConsumerStage(route, a);
  if (consumer < 0) return std::nullopt;
  return Message{consumer, a.microbatch, a.kind != ActionKind::kForward};
}

}  // namespace pipette
