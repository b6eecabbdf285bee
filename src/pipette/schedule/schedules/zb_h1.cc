// ZB-H1 (Qi et al. 2023, handcrafted schedule 1): 1F1B's warmup and memory (p microbatches on rank
// 0) with the backward split into I and W; rank r defers r weight gradients to fill the cool-down.
// Makespan m(F+I+W) + (p-1)(F+I-W). Equals PyTorch ScheduleInterleavedZeroBubble with v = 1 and
// JaxPP ZeroBubble.
#include <fmt/core.h>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/zero_bubble_hand.h"

namespace pipette::schedules {
namespace {

class ZbH1Generator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "zb-h1"; }
  std::string_view summary() const override {
    return "zero bubble H1: 1F1B memory, split I/W backward (Qi et al. 2023)";
  }
  std::string_view constraints() const override { return "v = 1; m >= p"; }
  Status Check(const ScheduleParams& params) const override {
    PIPETTE_RETURN_IF_ERROR(RequireV(params, 1, "one stage per rank; see interleaved-zb"));
    return RequireMAtLeast(params, params.p, fmt::format("p = {}", params.p),
                           "the handcrafted warmup needs p microbatches; JaxPP asserts it");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 1, m, Placement::Loop(p, 1));
    for (int r = 0; r < p; ++r) AppendZeroBubbleHandOrder(p, m, r, 1, schedule.ranks[r]);
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& ZbH1() {
  static const ZbH1Generator generator;
  return generator;
}

}  // namespace pipette::schedules
