// DualPipe-V ("cut-in-half" DualPipe; deepseek-ai/DualPipe dualpipe/dualpipev.py, also PyTorch
// ScheduleDualPipeV): one parameter copy split into 2p stages in the V layout (rank r holds stages
// r and 2p-1-r); all m microbatches pass stages 0..2p-1. Same eight steps as DualPipe with P = p.
// Bubble (S/2-1)(F&B + B - 3W) with S = 2p stages per DeepSeek's README; 2p+1 chunks in flight.
#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/dualpipe_steps.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class DualPipeVGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "dualpipe-v"; }
  std::string_view summary() const override {
    return "DualPipe cut in half: V layout, overlapped F&B (DeepSeek DualPipeV; PyTorch)";
  }
  std::string_view constraints() const override { return "v = 2; m >= 2p"; }
  int default_v() const override { return 2; }
  Status Check(const ScheduleParams& params) const override {
    PIPETTE_RETURN_IF_ERROR(RequireV(params, 2, "V layout: stages r and 2p-1-r"));
    return RequireMAtLeast(params, 2 * params.p, fmt::format("2p = {}", 2 * params.p),
                           "DeepSeek's reference asserts num_chunks >= 2 * num_ranks");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 2, m, Placement::VShape(p));
    for (int r = 0; r < p; ++r) {
      AppendDualPipeSteps(p, r, m, {DualPipePhase{r, 0}, DualPipePhase{2 * p - 1 - r, 0}},
                          schedule.ranks[r]);
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& DualPipeV() {
  static const DualPipeVGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
