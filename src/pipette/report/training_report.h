// How a training run reads (pipette train, engine/train_report.h): its JSON line for tools, without
// where it was recorded, and its text for people: the header before training, one line per step
// (printed as the step ends), the summary with the check against the unpipelined reference.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"

namespace pipette {

// What the report shows of the command line.
struct TrainingReportSettings {
  std::string engine;  // "cpu" or "cuda"
  bool virtual_ranks = false;
  int steps = 0;
  double tolerance = 0;  // of --verify
};

// Whether the run passed --verify within `tolerance` (true without it).
bool Verified(const TrainReport& report, double tolerance);

nlohmann::ordered_json TrainingJson(const TrainingReportSettings& settings, const TrainPlan& plan,
                                    const TrainReport& report);
std::string TrainingHeader(const TrainingReportSettings& settings, const TrainPlan& plan);
std::string TrainingStepLine(const TrainPlan& plan, int step, double loss, double seconds);
std::string TrainingSummary(const TrainReport& report, double tolerance);

}  // namespace pipette
