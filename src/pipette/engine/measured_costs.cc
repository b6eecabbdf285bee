#include "pipette/engine/measured_costs.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

namespace pipette {
namespace {

// The kinds measured; their index here is their index in Totals.
constexpr std::array<ActionKind, 4> kMeasured = {ActionKind::kForward, ActionKind::kInputBackward,
                                                 ActionKind::kWeightBackward,
                                                 ActionKind::kFullBackward};

struct Total {
  double seconds = 0;
  int count = 0;
};
using Totals = std::array<Total, kMeasured.size()>;

}  // namespace

const std::optional<double>& MeasuredStageCost::Of(ActionKind kind) const {
  switch (kind) {
    case ActionKind::kForward:
      return f;
    case ActionKind::kInputBackward:
      return i;
    case ActionKind::kWeightBackward:
      return w;
    default:
      assert(kind == ActionKind::kFullBackward);
      return b;
  }
}

std::optional<double>& MeasuredStageCost::Of(ActionKind kind) {
  return const_cast<std::optional<double>&>(std::as_const(*this).Of(kind));
}

std::vector<MeasuredStageCost> MeasureStageCosts(const std::vector<TraceEvent>& trace, int stages) {
  const bool skip_first =
      std::any_of(trace.begin(), trace.end(), [](const TraceEvent& e) { return e.step > 0; });
  std::vector<Totals> totals(stages);
  for (const TraceEvent& e : trace) {
    const auto kind = std::find(kMeasured.begin(), kMeasured.end(), e.action.kind);
    if (kind == kMeasured.end() || (skip_first && e.step == 0)) continue;
    Total& total = totals[e.action.stage][kind - kMeasured.begin()];
    total.seconds += e.end - e.start;
    total.count += 1;
  }
  std::vector<MeasuredStageCost> costs(stages);
  for (int s = 0; s < stages; ++s) {
    for (std::size_t k = 0; k < kMeasured.size(); ++k) {
      const Total& total = totals[s][k];
      if (total.count > 0) costs[s].Of(kMeasured[k]) = total.seconds / total.count;
    }
  }
  return costs;
}

}  // namespace pipette
