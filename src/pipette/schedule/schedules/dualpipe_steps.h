// The eight steps of DeepSeek's DualPipe and DualPipe-V step() (deepseek-ai/DualPipe,
// dualpipe/dualpipe.py and dualpipe/dualpipev.py), which share one structure. A rank works on two
// "phases" (its two stages); the functions of the reference map to actions as follows:
//   _forward_chunk(ph)             -> F of phase ph's next microbatch
//   _backward_chunk(ph)            -> B, or I when zero-bubble is enabled (its W is queued, FIFO)
//   _weight_chunk()                -> W of the oldest queued input-gradient backward
//   _forward_backward_chunk(a, b)  -> overlapped cell (F of phase a; full B of phase b)
// With P half-ranks (DualPipe: p/2; DualPipe-V: p), h = the rank's position (DualPipe:
// min(r, p-1-r); DualPipe-V: r) and n microbatches per phase (DualPipe: m/2; DualPipe-V: m):
//   1: 2(P-h-1) x F0            2: (h+1) x [F0, F1]          3: (P-h-1) x [I1, W, F1]
//   4: (n-2P+h+1) x [(F0;B1), (F1;B0)], the first (F0;B1) sequential when h = P-1
//   5: (P-h-1) x [B1, (F1;B0)]  6: (h+1) x [B1, B0], I-only from iteration (h+1)/2 on (odd h:
//      before B1, even h: between B1 and B0)   7: (P-h-1) x [W, I0]    8: (h+1) x W
#pragma once

#include <array>
#include <deque>
#include <vector>

#include "pipette/schedule/action.h"

namespace pipette::schedules {

// Where a phase's work lands: its global stage and the microbatch of its first chunk.
struct DualPipePhase {
  int stage;
  int first_microbatch;
};

// Appends one rank's order. REQUIRES: 0 <= h < P, n >= 2P - h - 1.
inline void AppendDualPipeSteps(int P, int h, int n, const std::array<DualPipePhase, 2>& phases,
                                std::vector<Action>& out) {
  std::array<int, 2> next_f = {0, 0}, next_b = {0, 0};
  std::deque<Action> weight_queue;
  auto forward = [&](int ph) {
    return Action::F(phases[ph].stage, phases[ph].first_microbatch + next_f[ph]++);
  };
  auto full_backward = [&](int ph) {
    return Action::B(phases[ph].stage, phases[ph].first_microbatch + next_b[ph]++);
  };
  auto backward = [&](int ph, bool zero_bubble) {
    Action b = full_backward(ph);
    if (zero_bubble) {
      b.kind = ActionKind::kInputBackward;
      weight_queue.push_back(Action::W(b.stage, b.microbatch));
    }
    out.push_back(b);
  };
  auto weight = [&]() {
    out.push_back(weight_queue.front());
    weight_queue.pop_front();
  };
  auto overlapped = [&](int ph_f, int ph_b) {
    Action f = forward(ph_f);
    out.push_back(Action::Overlap(f, full_backward(ph_b)));
  };

  for (int i = 0; i < 2 * (P - h - 1); ++i) out.push_back(forward(0));
  for (int i = 0; i < h + 1; ++i) {
    out.push_back(forward(0));
    out.push_back(forward(1));
  }
  for (int i = 0; i < P - h - 1; ++i) {
    backward(1, true);
    weight();
    out.push_back(forward(1));
  }
  for (int i = 0; i < n - 2 * P + h + 1; ++i) {
    if (i == 0 && h == P - 1) {  // "We don't overlap these two chunks to further reduce bubble"
      out.push_back(forward(0));
      backward(1, false);
    } else {
      overlapped(0, 1);
    }
    overlapped(1, 0);
  }
  for (int i = 0; i < P - h - 1; ++i) {
    backward(1, false);
    overlapped(1, 0);
  }
  bool zero_bubble = false;
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zero_bubble = true;
    backward(1, zero_bubble);
    if (i == (h + 1) / 2 && h % 2 == 0) zero_bubble = true;
    backward(0, zero_bubble);
  }
  for (int i = 0; i < P - h - 1; ++i) {
    weight();
    backward(0, true);
  }
  for (int i = 0; i < h + 1; ++i) weight();
}

}  // namespace pipette::schedules
