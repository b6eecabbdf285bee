// What a real training run records (engine/train_report.h into store/run_data.h): every traced
// instruction, the memory over time of its engine and its metrics (docs/metrics.md: losses, step
// times, memory, the measured per-stage F, I, W and B costs, the engine's memory model, the
// verification). Pure functions, shared by every real engine's run.
#pragma once

#include <vector>

#include "pipette/engine/measured_costs.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"

namespace pipette {

// The run's rows. A send's buffer is held to the end of the step's program, except between
// virtual ranks (`virtual_ranks`: the receiver's copy frees it).
RunData TrainingRunData(const TrainPlan& plan, const TrainReport& report, bool virtual_ranks);

// The rows of step `step` alone, recorded as the run goes: its events and memory over time (from
// `step_report`, which holds that step only, empty for an untraced step) and its metrics loss[k]
// and step_times_s[k].
RunData TrainingStepData(const TrainPlan& plan, int step, const TrainReport& step_report,
                         bool virtual_ranks);

// Appends the measured per-stage costs as metrics "stage_f_s[s]", "stage_i_s[s]", "stage_w_s[s]"
// and "stage_b_s[s]" (docs/metrics.md), kind by kind: every real engine's, and imported runs'.
void AddStageCostMetrics(const std::vector<MeasuredStageCost>& costs,
                         std::vector<MetricRow>& metrics);

// The mean of the report's step times.
double MeanStepTime(const TrainReport& report);

// The run's configuration as recorded (and compared between the ranks before training): `engine`
// ("cpu" or "cuda"), the options as given, the plan as resolved.
TrainingConfig TrainingConfigOf(std::string_view engine, const TrainOptions& options,
                                const TrainPlan& plan);

}  // namespace pipette
