// Eager 1F1B (NVIDIA JaxPP Eager1F1B): 1F1B with the warmup nearly doubled to w = min(2(p-r)-1, m)
// forwards, so that every forward (and its send) is issued well before its consumer needs it; then
// alternates one backward and one forward, then drains the backwards. Same makespan as 1F1B
// without latency; with a p2p latency c it reaches (m+p-1)(F+B) + 2(p-1)c, which 1F1B does not.
// PyTorch ScheduleInterleaved1F1B with one stage per rank produces exactly this order.
#include <algorithm>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class EagerOneFOneBGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "eager-1f1b"; }
  std::string_view summary() const override {
    return "1F1B with warmup 2(p-r)-1 that hides p2p latency (JaxPP Eager1F1B)";
  }
  std::string_view constraints() const override { return "v = 1"; }
  Status Check(const ScheduleParams& params) const override {
    return RequireV(params, 1, "one stage per rank");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 1, m, Placement::Loop(p, 1));
    for (int r = 0; r < p; ++r) {
      auto& actions = schedule.ranks[r];
      const int warmup = std::min(2 * (p - r) - 1, m);
      for (int i = 0; i < warmup; ++i) actions.push_back(Action::F(r, i));
      for (int i = 0; i < m; ++i) {
        actions.push_back(Action::B(r, i));
        if (warmup + i < m) actions.push_back(Action::F(r, warmup + i));
      }
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& EagerOneFOneB() {
  static const EagerOneFOneBGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
