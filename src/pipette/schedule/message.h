// Message: the identity of one piece of data that crosses from one stage to another within a
// training step, the one spelling every layer uses (evaluate(), the interpreter loop, the SimGrid
// engine's channels, the CPU engine's MPI tags and buffers, MessageSizes).
//
// A message is named by its receiver: (stage, microbatch, direction) is the activation flowing
// into `stage` (direction forward) or the gradient of `stage`'s output flowing back into it
// (direction gradient). SEND_F(s) therefore carries the message (s+1, i, forward), RECV_F(s) the
// message (s, i, forward), SEND_B(s) the message (s-1, i, gradient) and RECV_B(s) the message
// (s, i, gradient). Both representations are unique within a step: key() needs no bounds beyond
// stage < 2^30 and microbatch < 2^32; slot(m) is dense in [0, NumSlots(stages, m)), for arrays and
// for tags with a small upper bound (MPI_TAG_UB). Plain value type.
//
// Example:
//   const Message msg = MessageOf(send);          // send = 1SEND_F3
//   msg.stage == 2, msg.microbatch == 3, !msg.gradient
//   buffer_bytes = stage_output_bytes[msg.shape_stage()];  // stage 1's output
#pragma once

#include <cstdint>
#include <optional>

#include "pipette/schedule/action.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

struct Message {
  int stage = 0;  // the receiving stage
  int microbatch = 0;
  bool gradient = false;  // false: the activation into `stage`; true: the gradient of its output

  // The stage whose output tensor this message has the shape of: the previous stage for an
  // activation, `stage` itself for the gradient of its output.
  int shape_stage() const { return gradient ? stage : stage - 1; }
  // The stage that sends it.
  int sender_stage() const { return gradient ? stage + 1 : stage - 1; }

  std::int64_t key() const {
    return (static_cast<std::int64_t>(stage) << 33) | (static_cast<std::int64_t>(microbatch) << 1) |
           (gradient ? 1 : 0);
  }
  // REQUIRES: microbatch < m.
  std::int64_t slot(int m) const {
    return 2 * (static_cast<std::int64_t>(stage) * m + microbatch) + (gradient ? 1 : 0);
  }
  // The number of slots of a step with `num_stages` stages and `m` microbatches.
  static std::int64_t NumSlots(int num_stages, int m) {
    return 2 * static_cast<std::int64_t>(num_stages) * m;
  }

  friend bool operator==(const Message&, const Message&) = default;
};

// The message a SEND or RECV instruction carries. REQUIRES: a is SEND_F, RECV_F, SEND_B or RECV_B.
Message MessageOf(const Action& a);

// The message that carries the input of the plain compute action `a` from the previous stage of
// its route (F) or the next one (I, B), or nullopt when it has none (F on the route's first stage,
// I/B on its last, W). Whether it crosses ranks is the placement's business.
std::optional<Message> InputMessage(const StageRange& route, const Action& a);

// The message that carries the output of the plain compute action `a` to the stage consuming it,
// or nullopt when none does (F on the route's last stage, I/B on its first, W).
std::optional<Message> OutputMessage(const StageRange& route, const Action& a);

}  // namespace pipette
