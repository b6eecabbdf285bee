#include "pipette/fidelity/fidelity_summary.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "pipette/engine/measured_costs.h"
#include "pipette/fidelity/relative_error.h"
#include "pipette/fidelity/run_compare.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

Result<FidelityPair> PairOf(ExperimentDb& db, const RunData& predicted, std::int64_t measured_id) {
  Result<RunData> measured = db.LoadRun(measured_id);
  if (!measured.ok()) {
    return Status::InvalidArgument(fmt::format("run {} predicts run {}, which cannot be read: {}",
                                               predicted.run.id, measured_id,
                                               measured.status().message()));
  }
  PIPETTE_ASSIGN_OR_RETURN(const RunComparison c, CompareRuns(predicted, *measured, 0));
  FidelityPair pair;
  pair.predicted_run = predicted.run.id;
  pair.measured_run = measured_id;
  const RecordedConfig config = ReadRunConfig(measured->run.config);
  const RecordedConfig prediction = ReadRunConfig(predicted.run.config);
  pair.schedule = config.schedule.value_or("");
  pair.model = config.model.value_or("");
  pair.p = config.p.value_or(0);
  pair.v = config.v.value_or(0);
  pair.m = config.m.value_or(0);
  pair.dp = config.dp.value_or(1);
  if (prediction.prediction) pair.cores = prediction.prediction->cores;
  if (c.step_time) {  // over the steps both traced
    pair.predicted_step_s = c.step_time->predicted_s;
    pair.measured_step_s = c.step_time->measured_s;
    pair.step_error_rel = c.step_time->error_rel;
  }
  pair.instruction_error_median = c.compute.duration_abs_rel.median;
  pair.instruction_error_p90 = c.compute.duration_abs_rel.p90;
  return pair;
}

}  // namespace

Result<FidelitySummary> SummarizeFidelity(ExperimentDb& db, std::int64_t experiment_id) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunRecord> runs,
                           db.ListRuns({.experiment_id = experiment_id, .status = "ok"}));
  FidelitySummary summary;
  std::vector<double> medians, predicted_steps, measured_steps;
  for (const RunRecord& run : runs) {
    if (run.engine != "sim") continue;
    const RecordedConfig config = ReadRunConfig(run.config);
    if (!config.costs_from) continue;
    PIPETTE_ASSIGN_OR_RETURN(const RunData predicted, db.LoadRun(run.id));
    PIPETTE_ASSIGN_OR_RETURN(FidelityPair pair, PairOf(db, predicted, *config.costs_from));
    predicted_steps.push_back(pair.predicted_step_s);
    measured_steps.push_back(pair.measured_step_s);
    if (std::abs(pair.step_error_rel) > std::abs(summary.step_worst_error_rel)) {
      summary.step_worst_error_rel = pair.step_error_rel;
    }
    medians.push_back(pair.instruction_error_median);
    summary.pairs.push_back(std::move(pair));
  }
  if (summary.pairs.empty()) {
    return Status::InvalidArgument(
        fmt::format("experiment {} has no predictions (sim runs recorded by simulate --costs-from)",
                    experiment_id));
  }
  summary.step_mape = MeanAbsoluteRelativeError(predicted_steps, measured_steps);
  summary.instruction_error_median = Median(medians);
  return summary;
}

}  // namespace pipette
