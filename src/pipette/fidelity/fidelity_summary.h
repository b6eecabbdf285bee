// FidelitySummary: how well an experiment's predictions predicted its measurements. Every
// prediction in the experiment (a "sim" run whose configuration has "costs_from": M, as
// `pipette simulate --costs-from M` records it) is joined with its measured run M (CompareRuns,
// run_compare.h: a mismatch of programs is an error) and summarised:
//   step time    the mean of the run's step_times_s[k] over steps k >= 1 (step 0 warms up: its
//                allocations and cold caches are not what a steady-state prediction models), or
//                over every step when only one was recorded; its relative error
//                (predicted - measured) / measured;
//   instructions the |relative duration error| of the F, I, W and B events pooled: median, p90.
// Over the pairs: the mean absolute percentage error (MAPE) of the step time, its worst pair, and
// the median of the pairs' instruction medians.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/experiment_db.h"

namespace pipette {

struct FidelityPair {
  std::int64_t predicted_run = 0;
  std::int64_t measured_run = 0;
  std::string schedule, model;  // the measured run's configuration
  int p = 0, v = 0, m = 0, dp = 1;
  int cores = 0;  // cores the prediction shared among the ranks (0: unshared)
  double predicted_step_s = 0;
  double measured_step_s = 0;
  double step_error_rel = 0;
  double instruction_error_median = 0;
  double instruction_error_p90 = 0;
};

struct FidelitySummary {
  std::vector<FidelityPair> pairs;  // in order of the predictions' run ids
  double step_mape = 0;             // mean |step_error_rel| over the pairs
  double step_worst_error_rel = 0;  // the step_error_rel of largest magnitude
  double instruction_error_median = 0;
};

// The summary of experiment `experiment_id`'s predictions; InvalidArgument when it has none or a
// prediction's measured run is missing or of another program.
Result<FidelitySummary> SummarizeFidelity(ExperimentDb& db, std::int64_t experiment_id);

}  // namespace pipette
