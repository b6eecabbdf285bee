// ZBV as PyTorch's ScheduleZBVZeroBubble (the handcrafted V schedule of Qi et al. 2023/2024): V
// layout, rank r holds stages c0 = r and c1 = 2p-1-r. With n = max(2p-1, m) and per-stage counters:
//   2(p-r)-1 x F(c0);  r x [F(c1), F(c0)];  p-r x [F(c1), I(c1), W(c1)];
//   while forwards of c1 lag c0 or c0 has forwards left: [F(c0) if any left, I(c0), W(c0), F(c1),
//   I(c1), W(c1)];  r x [I(c0), I(c1)];  p-r x [I(c0), W(c0) oldest];  remaining W(c1), W(c0);
// actions of microbatches >= m are dropped. Each rank holds 2p half-size chunks (1F1B's memory).
#include <algorithm>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class ZbvGenerator final : public VLayoutGenerator {
 public:
  std::string_view name() const override { return "zbv"; }
  std::string_view summary() const override {
    return "zero bubble V: two chunks per rank in V layout (PyTorch ScheduleZBVZeroBubble)";
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 2, m, Placement::VShape(p));
    const int n = std::max(2 * p - 1, m);
    for (int r = 0; r < p; ++r) {
      const int c0 = r, c1 = 2 * p - 1 - r;
      int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
      auto& actions = schedule.ranks[r];
      // Microbatches >= m exist only to shape the order; they are dropped as they are emitted.
      auto emit = [&](Action action) {
        if (action.microbatch < m) actions.push_back(action);
      };
      for (int k = 0; k < 2 * (p - r) - 1; ++k) emit(Action::F(c0, f0++));
      for (int k = 0; k < r; ++k) {
        emit(Action::F(c1, f1++));
        emit(Action::F(c0, f0++));
      }
      for (int k = 0; k < p - r; ++k) {
        emit(Action::F(c1, f1++));
        emit(Action::I(c1, b1));
        emit(Action::W(c1, b1++));
      }
      // Once every counter has passed m, the rest of the loop only emits dropped actions.
      while ((f1 < f0 || f0 < n) && std::min({f0, f1, b0, b1}) < m) {
        if (f0 < n) emit(Action::F(c0, f0++));
        emit(Action::I(c0, b0));
        emit(Action::W(c0, b0++));
        emit(Action::F(c1, f1++));
        emit(Action::I(c1, b1));
        emit(Action::W(c1, b1++));
      }
      int w0 = b0, w1 = b1;
      for (int k = 0; k < r; ++k) {
        emit(Action::I(c0, b0++));
        emit(Action::I(c1, b1++));
      }
      for (int k = 0; k < p - r; ++k) {
        emit(Action::I(c0, b0++));
        emit(Action::W(c0, w0++));
      }
      while (w1 < b1) emit(Action::W(c1, w1++));
      while (w0 < b0) emit(Action::W(c0, w0++));
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& Zbv() {
  static const ZbvGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
