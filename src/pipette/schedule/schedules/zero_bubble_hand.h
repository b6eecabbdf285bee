// The Zero Bubble authors' handcrafted schedules (Qi et al. 2023, "Zero Bubble Pipeline
// Parallelism"; get_hand_schedule in sail-sg/zero-bubble-pipeline-parallelism, branch arxiv,
// efficiency.py), shared by zb-h1 (warmup factor 1) and zb-h2 (warmup factor 2).
#pragma once

#include <algorithm>
#include <vector>

#include "pipette/schedule/action.h"

namespace pipette::schedules {

// Appends rank r's order (stage = r): c(p-1-r) warmup forwards (capped at m); then for each
// microbatch i a forward (while any remain), the input-gradient backward I(i), and, once i >= c*r,
// the weight-gradient backward of the oldest microbatch whose W is pending; finally the remaining
// Ws. Rank r thus defers c*r weight gradients, which fill the cool-down bubble.
inline void AppendZeroBubbleHandOrder(int p, int m, int r, int c, std::vector<Action>& out) {
  const int warmup = std::min(c * (p - 1 - r), m);
  for (int i = 0; i < warmup; ++i) out.push_back(Action::F(r, i));
  int next_w = 0;
  for (int i = 0; i < m; ++i) {
    if (warmup + i < m) out.push_back(Action::F(r, warmup + i));
    out.push_back(Action::I(r, i));
    if (i >= c * r) out.push_back(Action::W(r, next_w++));
  }
  while (next_w < m) out.push_back(Action::W(r, next_w++));
}

}  // namespace pipette::schedules
