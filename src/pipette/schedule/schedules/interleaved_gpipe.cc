// Interleaved GPipe as PyTorch's ScheduleLoopedBFS (Lamy-Poirier 2022, "Breadth-First Pipeline
// Parallelism", arXiv 2211.05953): loop layout; rank r runs, for each of its stages in ascending
// order, the forwards of all microbatches; then, for each stage in descending order, the full
// backwards of all microbatches in descending order. Every rank holds all v*m chunks' activations.
#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class InterleavedGpipeGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "interleaved-gpipe"; }
  std::string_view summary() const override {
    return "breadth-first looped GPipe, backwards in reverse (PyTorch ScheduleLoopedBFS)";
  }
  std::string_view constraints() const override { return "v >= 1 (default 2)"; }
  int default_v() const override { return 2; }
  Status Check(const ScheduleParams& params) const override {
    if (params.v >= 1) return Status::Ok();
    return Status::InvalidArgument(fmt::format("v = {}: must be >= 1", params.v));
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, v = params.v, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, v, m, Placement::Loop(p, v));
    for (int r = 0; r < p; ++r) {
      auto& actions = schedule.ranks[r];
      for (int c = 0; c < v; ++c) {
        for (int i = 0; i < m; ++i) actions.push_back(Action::F(c * p + r, i));
      }
      for (int c = v - 1; c >= 0; --c) {
        for (int i = m - 1; i >= 0; --i) actions.push_back(Action::B(c * p + r, i));
      }
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& InterleavedGpipe() {
  static const InterleavedGpipeGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
