// Action: one cell of a pipeline schedule, in PyTorch's action notation.
//
// A compute action is (stage, kind, microbatch): `2F0` is the forward of microbatch 0 on global
// stage 2, `7I3` the input-gradient backward, `7W3` the weight-gradient backward and `7B3` the full
// backward (I then W). An overlapped cell `(0F7;7B3)` runs a forward and a backward of different
// (stage, microbatch) pairs as one unit (DualPipe, Kimi-K2). Lowering adds communication:
// `1SEND_F0` (stage 1 sends its forward output of microbatch 0), `2RECV_F0` (stage 2 receives it),
// `2SEND_B0` and `1RECV_B0` for gradients flowing back. Actions are small trivially-copyable
// values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

enum class ActionKind : std::uint8_t {
  kForward,         // F
  kInputBackward,   // I: gradient with respect to the stage input
  kWeightBackward,  // W: gradient with respect to the stage weights
  kFullBackward,    // B = I then W
  kOverlapped,      // (F;B): a forward and a backward executed as one cell
  kSendForward,     // SEND_F
  kRecvForward,     // RECV_F
  kSendBackward,    // SEND_B
  kRecvBackward,    // RECV_B
};

// Returns the notation of `kind`: "F", "I", "W", "B", "OVERLAP_F_B", "SEND_F", ...
std::string_view ActionKindName(ActionKind kind);

// True for F, I, W, B and overlapped cells.
constexpr bool IsCompute(ActionKind kind) { return kind <= ActionKind::kOverlapped; }
// True for I and B: the actions that release a forward's activations and send a gradient back.
constexpr bool IsInputBackward(ActionKind kind) {
  return kind == ActionKind::kInputBackward || kind == ActionKind::kFullBackward;
}

// 20 bytes: programs hold millions of them. The two kinds sit together to avoid padding.
struct Action {
  ActionKind kind = ActionKind::kForward;
  // Only for kOverlapped: the kind of the backward half (B or I); see back_stage.
  ActionKind back_kind = ActionKind::kFullBackward;
  std::int32_t stage = 0;
  std::int32_t microbatch = 0;
  // Only for kOverlapped: the backward half; (stage, microbatch) is the forward half.
  std::int32_t back_stage = 0;
  std::int32_t back_microbatch = 0;

  static constexpr Action Make(ActionKind kind, int stage, int microbatch) {
    return Action{kind, ActionKind::kFullBackward, stage, microbatch, 0, 0};
  }
  static constexpr Action F(int stage, int mb) { return Make(ActionKind::kForward, stage, mb); }
  static constexpr Action I(int stage, int mb) {
    return Make(ActionKind::kInputBackward, stage, mb);
  }
  static constexpr Action W(int stage, int mb) {
    return Make(ActionKind::kWeightBackward, stage, mb);
  }
  static constexpr Action B(int stage, int mb) {
    return Make(ActionKind::kFullBackward, stage, mb);
  }
  // REQUIRES: forward.kind == F, backward.kind is B or I.
  static constexpr Action Overlap(Action forward, Action backward) {
    return Action{ActionKind::kOverlapped, backward.kind,  forward.stage,
                  forward.microbatch,      backward.stage, backward.microbatch};
  }

  // For kOverlapped: the halves as plain actions.
  constexpr Action forward_half() const { return F(stage, microbatch); }
  constexpr Action backward_half() const { return Make(back_kind, back_stage, back_microbatch); }

  friend constexpr bool operator==(const Action& a, const Action& b) {
    if (a.kind != b.kind || a.stage != b.stage || a.microbatch != b.microbatch) return false;
    if (a.kind != ActionKind::kOverlapped) return true;
    return a.back_kind == b.back_kind && a.back_stage == b.back_stage &&
           a.back_microbatch == b.back_microbatch;
  }
};
static_assert(sizeof(Action) == 20);

// Returns the notation of `action`: "2F0", "(0F7;7B3)", "1SEND_F0".
std::string ToString(const Action& action);

// Parses PyTorch's notation (surrounding blanks ignored). Accepts every form ToString writes,
// PyTorch's "(0F7;7B3)OVERLAP_F_B" spelling of an overlapped cell, and the long kind names
// FORWARD, BACKWARD_INPUT, BACKWARD_WEIGHT and FULL_BACKWARD. Errors quote the text and say why.
Result<Action> ParseAction(std::string_view text);

}  // namespace pipette
