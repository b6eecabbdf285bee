// 1F1B / PipeDream-Flush as Megatron-LM's non-interleaved schedule
// (forward_backward_pipelining_without_interleaving): rank r runs w = min(p-1-r, m) warmup
// forwards, then alternates one forward and one backward, then drains the remaining backwards.
// Makespan (m+p-1)(F+B); rank r holds at most min(p-r, m) microbatches' activations.
#include <algorithm>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class OneFOneBGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "1f1b"; }
  std::string_view summary() const override {
    return "one forward one backward, warmup p-1-r (Megatron-LM non-interleaved; PyTorch "
           "Schedule1F1B)";
  }
  std::string_view constraints() const override { return "v = 1"; }
  Status Check(const ScheduleParams& params) const override {
    return RequireV(params, 1, "one stage per rank; see interleaved-1f1b for v > 1");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 1, m, Placement::Loop(p, 1));
    for (int r = 0; r < p; ++r) {
      auto& actions = schedule.ranks[r];
      const int warmup = std::min(p - 1 - r, m);
      for (int i = 0; i < warmup; ++i) actions.push_back(Action::F(r, i));
      for (int i = 0; i < m - warmup; ++i) {
        actions.push_back(Action::F(r, warmup + i));
        actions.push_back(Action::B(r, i));
      }
      for (int i = m - warmup; i < m; ++i) actions.push_back(Action::B(r, i));
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& OneFOneB() {
  static const OneFOneBGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
