// Measured stage costs: what an executed run's trace (any engine's, rank_interpreter.h) says each
// stage's compute costs, the per-stage F, I, W and B times a calibrated simulation replays.
//
// A cost is the median duration of the stage's instructions of that kind over the traced steps
// (robust to the odd descheduled instruction), without step 0 (warm-up: first-touch allocations,
// cold caches) when later steps were traced.
// Overlapped (F;B) cells are left out: their halves are not timed apart. Pure functions.
#pragma once

#include <optional>
#include <vector>

#include "pipette/engine/rank_interpreter.h"
#include "pipette/schedule/action.h"

namespace pipette {

struct MeasuredStageCost {
  // Seconds; nullopt when the stage ran no such instruction (e.g. no B in a zero-bubble schedule).
  std::optional<double> f, i, w, b;

  // The cost of `kind`. REQUIRES: kind is F, I, W or B.
  const std::optional<double>& Of(ActionKind kind) const;
  std::optional<double>& Of(ActionKind kind);
};

// The median of `values` (the mean of the two middle ones for an even count); 0 for none. The one
// median every measurement uses (stage costs, calibrations, recorded runs).
double Median(std::vector<double> values);

// How a set of measured durations becomes one cost: the median (robust to the odd descheduled
// instruction, the default) or the mean (which keeps a right-skewed distribution's tail, what a
// step's sum of many instructions sees).
enum class CostStatistic { kMedian, kMean };

// `values` summarised by `statistic`; 0 for none.
double Summarize(std::vector<double> values, CostStatistic statistic);

// One entry per stage 0..stages-1. REQUIRES: every event's stage is below `stages`.
std::vector<MeasuredStageCost> MeasureStageCosts(const std::vector<TraceEvent>& trace, int stages,
                                                 CostStatistic statistic = CostStatistic::kMedian);

}  // namespace pipette
