// What a real engine's runtime keeps between the instructions of one rank, whatever its tensors
// are (the CPU engine's host matrices, the CUDA engine's device ones): the inputs of computes
// (arrived or handed over locally), the outputs awaiting their SEND, and the caches of forwards
// awaiting their backward; how one compute action splits into its passes, and the forward and
// input-gradient passes themselves (ForwardPass, InputGradPass). Header-only
// templates; one object serves one rank's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "pipette/engine/memory_timeline.h"
#include "pipette/schedule/action.h"
#include "pipette/schedule/message.h"
#include "pipette/schedule/program.h"

namespace pipette {

// Runs compute action `a` as its passes: F, I or W alone; B as I then W; an overlapped cell
// (F;B) as its forward, then its backward half. Other kinds do nothing.
template <typename Forward, typename InputGrad, typename WeightGrad>
void RunPasses(const Action& a, Forward&& forward, InputGrad&& input_grad,
               WeightGrad&& weight_grad) {
  switch (a.kind) {
    case ActionKind::kForward:
      forward(a);
      break;
    case ActionKind::kInputBackward:
      input_grad(a);
      break;
    case ActionKind::kWeightBackward:
      weight_grad(a);
      break;
    case ActionKind::kFullBackward:
      input_grad(a);
      weight_grad(a);
      break;
    case ActionKind::kOverlapped: {
      forward(a.forward_half());
      const Action back = a.backward_half();
      input_grad(back);
      if (back.kind == ActionKind::kFullBackward) weight_grad(back);
      break;
    }
    default:
      break;
  }
}

// The tensors between a rank's instructions, keyed by message (schedule/message.h): a compute's
// input waits in the inbox (put there by a local producer or a completed receive); an output
// whose consumer lives on another rank waits in the outbox for its SEND. Caches of forwards are
// kept by (stage, microbatch) until their backward frees them.
template <typename Tensor, typename Caches>
class StageIo {
 public:
  // The boxes of pipeline rank `rank` of `program`.
  StageIo(const Program& program, int rank) : program_(program), rank_(rank) {}

  // The input of `stage` for `microbatch` (its activation, or with `gradient` its output's
  // gradient). REQUIRES: delivered or arrived.
  Tensor TakeInput(int stage, int microbatch, bool gradient) {
    auto it = inbox_.find(Message{stage, microbatch, gradient}.key());
    Tensor t = std::move(it->second);
    inbox_.erase(it);
    return t;
  }
  // Hands `out` to the stage that consumes it: locally into the inbox, or into the outbox for the
  // SEND that carries it.
  void Deliver(int consumer_stage, int microbatch, bool gradient, Tensor out) {
    const std::int64_t key = Message{consumer_stage, microbatch, gradient}.key();
    const bool local = program_.placement.rank_of(consumer_stage) == rank_;
    (local ? inbox_ : outbox_)[key] = std::move(out);
  }
  // The tensor the SEND action `send` carries, taken out of the outbox.
  Tensor TakeOutgoing(const Action& send) {
    auto it = outbox_.find(MessageOf(send).key());
    Tensor t = std::move(it->second);
    outbox_.erase(it);
    return t;
  }
  // The received tensor of the RECV action `recv`, for the compute that consumes it.
  void Arrived(const Action& recv, Tensor t) { inbox_[MessageOf(recv).key()] = std::move(t); }

  // The caches of the forward of (stage, microbatch): created by the forward, found by its
  // backward halves, freed by Release after the last of them.
  Caches& CachesOf(int stage, int microbatch) { return caches_[CacheKey(stage, microbatch)]; }
  void Release(int stage, int microbatch) { caches_.erase(CacheKey(stage, microbatch)); }

 private:
  std::int64_t CacheKey(int stage, int microbatch) const {
    return static_cast<std::int64_t>(stage) * program_.m + microbatch;
  }

  const Program& program_;
  const int rank_;
  std::unordered_map<std::int64_t, Tensor> inbox_;
  std::unordered_map<std::int64_t, Tensor> outbox_;
  std::unordered_map<std::int64_t, Caches> caches_;
};

// The forward and input-gradient passes of a compute on one stage, alike in every real engine:
// the input taken from `io` (none on the microbatch route's first stage for F, its last for I),
// the stage's `chain` run on the microbatch's `batch`, the largest cache the stage held recorded
// in `memory`, and the output handed to the next (F) or the previous (I) stage of the route.
// Chain: Forward and InputGrad over (batch, tensor, caches), and a static CacheBytes(caches).

// Returns the caches when `a` ran on the route's last stage (the loss is in them), else nullptr.
template <typename Chain, typename Batch, typename Tensor, typename Caches>
Caches* ForwardPass(const Action& a, const StageRange& route, Chain& chain, const Batch& batch,
                    StageIo<Tensor, Caches>& io, StageMemory& memory) {
  Tensor x = a.stage == route.first ? Tensor() : io.TakeInput(a.stage, a.microbatch, false);
  Caches& caches = io.CachesOf(a.stage, a.microbatch);
  Tensor y = chain.Forward(batch, std::move(x), caches);
  memory.activation_bytes = std::max(memory.activation_bytes, Chain::CacheBytes(caches));
  if (a.stage == route.last) return &caches;
  io.Deliver(a.stage + 1, a.microbatch, false, std::move(y));
  return nullptr;
}

template <typename Chain, typename Batch, typename Tensor, typename Caches>
void InputGradPass(const Action& a, const StageRange& route, Chain& chain, const Batch& batch,
                   StageIo<Tensor, Caches>& io, StageMemory& memory) {
  Tensor dy = a.stage == route.last ? Tensor() : io.TakeInput(a.stage, a.microbatch, true);
  Caches& caches = io.CachesOf(a.stage, a.microbatch);
  Tensor dx = chain.InputGrad(batch, std::move(dy), caches);
  memory.wgrad_input_bytes = std::max(memory.wgrad_input_bytes, Chain::CacheBytes(caches));
  if (a.stage > route.first) io.Deliver(a.stage - 1, a.microbatch, true, std::move(dx));
}

}  // namespace pipette
