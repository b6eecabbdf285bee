// ZB-H2 (Qi et al. 2023, handcrafted schedule 2): twice 1F1B's warmup (2p-1 microbatches on rank 0)
// so that deferred weight gradients fill both the warm-up and the cool-down bubbles. Each rank's
// span (its first F to its last action) is m(F+I+W) + (p-1)(F+I-2W), zero bubble when F+I = 2W;
// measured from a common start the ramp of the first forwards remains.
#include <fmt/core.h>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/zero_bubble_hand.h"

namespace pipette::schedules {
namespace {

class ZbH2Generator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "zb-h2"; }
  std::string_view summary() const override {
    return "zero bubble H2: 2x warmup, deferred W fill both bubbles (Qi et al. 2023)";
  }
  std::string_view constraints() const override { return "v = 1; m >= 2p"; }
  Status Check(const ScheduleParams& params) const override {
    PIPETTE_RETURN_IF_ERROR(RequireV(params, 1, "one stage per rank"));
    return RequireMAtLeast(params, 2 * params.p, fmt::format("2p = {}", 2 * params.p),
                           "the authors' get_hand_schedule asserts it");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 1, m, Placement::Loop(p, 1));
    for (int r = 0; r < p; ++r) AppendZeroBubbleHandOrder(p, m, r, 2, schedule.ranks[r]);
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& ZbH2() {
  static const ZbH2Generator generator;
  return generator;
}

}  // namespace pipette::schedules
