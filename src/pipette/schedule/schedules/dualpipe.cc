// DualPipe (DeepSeek-V3 technical report, 2024; deepseek-ai/DualPipe dualpipe/dualpipe.py):
// bidirectional pipeline over two parameter copies. The down pipe's stages are 0..p-1 (stage s on
// rank s) and carry microbatches 0..m/2-1; the up pipe's stages are p..2p-1 (stage p+s on rank
// p-1-s) and carry microbatches m/2..m-1. Ranks in the first half take the down pipe as their phase
// 0, the others the up pipe. Steady state overlaps a forward of one pipe with a backward of the
// other. Bubble (p/2-1)(F&B + B - 3W) per DeepSeek's README; p+1 chunks in flight.
#include <algorithm>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/dualpipe_steps.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class DualPipeGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "dualpipe"; }
  std::string_view summary() const override {
    return "bidirectional, two parameter copies, overlapped F&B (DeepSeek DualPipe)";
  }
  std::string_view constraints() const override { return "v = 2; p even; m even; m >= 2p"; }
  int default_v() const override { return 2; }
  Status Check(const ScheduleParams& params) const override {
    PIPETTE_RETURN_IF_ERROR(RequireV(params, 2, "a down-pipe and an up-pipe stage per rank"));
    if (params.p % 2 != 0) {
      return Status::InvalidArgument(fmt::format(
          "p = {}: DualPipe needs an even number of ranks (the two halves mirror each other)",
          params.p));
    }
    if (params.m % 2 != 0) {
      return Status::InvalidArgument(fmt::format(
          "m = {}: DualPipe needs an even m (half the microbatches go each way)", params.m));
    }
    return RequireMAtLeast(params, 2 * params.p, fmt::format("2p = {}", 2 * params.p),
                           "DeepSeek's reference asserts num_chunks >= 2 * num_ranks");
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m, half = p / 2;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 2, m, Placement::VShape(p));
    for (int i = 0; i < m; ++i)
      schedule.routes[i] = i < m / 2 ? StageRange{0, p - 1} : StageRange{p, 2 * p - 1};
    for (int r = 0; r < p; ++r) {
      const DualPipePhase down{r, 0}, up{2 * p - 1 - r, m / 2};
      const std::array<DualPipePhase, 2> phases =
          r < half ? std::array{down, up} : std::array{up, down};
      AppendDualPipeSteps(half, std::min(r, p - 1 - r), m / 2, phases, schedule.ranks[r]);
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& DualPipe() {
  static const DualPipeGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
