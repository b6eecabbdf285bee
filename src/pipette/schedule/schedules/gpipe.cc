// GPipe (Huang et al. 2019; PyTorch ScheduleGPipe): every rank runs all forwards, then all full
// backwards, both in ascending microbatch order. Makespan (m+p-1)(F+B); every rank holds all m
// microbatches' activations.
#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class GpipeGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "gpipe"; }
  std::string_view summary() const override {
    return "all forwards, then all backwards (GPipe; PyTorch ScheduleGPipe)";
  }
  std::string_view constraints() const override { return "v = 1"; }
  Status Check(const ScheduleParams& params) const override {
    return RequireV(params, 1, "one stage per rank; see interleaved-gpipe for v > 1");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 1, m, Placement::Loop(p, 1));
    for (int r = 0; r < p; ++r) {
      auto& actions = schedule.ranks[r];
      for (int i = 0; i < m; ++i) actions.push_back(Action::F(r, i));
      for (int i = 0; i < m; ++i) actions.push_back(Action::B(r, i));
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& Gpipe() {
  static const GpipeGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
