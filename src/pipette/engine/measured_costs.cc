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

// Per measured kind, every duration seen.
using Durations = std::array<std::vector<double>, kMeasured.size()>;

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

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) return *middle;
  const double below = *std::max_element(values.begin(), middle);
  return below + (*middle - below) / 2;
}

double Summarize(std::vector<double> values, CostStatistic statistic) {
  if (statistic == CostStatistic::kMedian) return Median(std::move(values));
  double sum = 0;
  for (const double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

std::vector<MeasuredStageCost> MeasureStageCosts(const std::vector<TraceEvent>& trace, int stages,
                                                 CostStatistic statistic) {
  const bool skip_first =
      std::any_of(trace.begin(), trace.end(), [](const TraceEvent& e) { return e.step > 0; });
  std::vector<Durations> durations(stages);
  for (const TraceEvent& e : trace) {
    const auto kind = std::find(kMeasured.begin(), kMeasured.end(), e.action.kind);
    if (kind == kMeasured.end() || (skip_first && e.step == 0)) continue;
    durations[e.action.stage][kind - kMeasured.begin()].push_back(e.end - e.start);
  }
  std::vector<MeasuredStageCost> costs(stages);
  for (int s = 0; s < stages; ++s) {
    for (std::size_t k = 0; k < kMeasured.size(); ++k) {
      std::vector<double>& seen = durations[s][k];
      if (!seen.empty()) costs[s].Of(kMeasured[k]) = Summarize(std::move(seen), statistic);
    }
  }
  return costs;
}

}  // namespace pipette
