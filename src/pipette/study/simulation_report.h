// The reports of `pipette simulate`, each written from one result in one place: the run's
// configuration (recorded before the simulation starts), its rows for the experiment database
// (metrics, events, memory) and status, its JSON line and its text for people. Two kinds of run:
//
//   ModelReport  a partitioned model (partition/model_plan.h) simulated by SimulateModel
//                (sim/model_simulation.h) on its cluster or the ideal network;
//   TimesReport  a schedule with fixed per-chunk times on the ideal network (--times).
// A prediction of a recorded run (--costs-from, study/prediction.h) has its configuration, rows and
// status from the study library; its JSON and text are here.
//
// The JSON and the text leave out where the run was recorded: the command adds that.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pipette/partition/model_plan.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"
#include "pipette/study/prediction.h"
#include "sim/model_simulation.h"
#include "sim/simulator.h"

namespace pipette {

// What every report shows of the command line, in its units.
struct SimulateSettings {
  bool ideal_network = false;
  double latency_us = 0;  // per message on the ideal network
  int steps = 1;
};

// One simulated run: what was simulated, the settings, and the result.
template <typename Plan, typename Simulation>
struct SimulateReport {
  const Plan& plan;
  SimulateSettings settings;
  Simulation simulation;
};

// A schedule with fixed per-chunk times.
struct TimesPlan {
  Schedule schedule;
  Program program;
  StageCost times_ms;  // per chunk, milliseconds
};

// A partitioned model's run: the simulation's options as SimulateModel resolved them
// (sim/model_simulation.h: ResolvedOptions), the gradient reduction and the all-to-all overlap
// among them.
struct ModelReport {
  const ModelPlan& plan;
  SimulateSettings settings;
  ModelSimulationOptions options;
  ModelSimulation simulation;
};
using TimesReport = SimulateReport<TimesPlan, SimulationResult>;

SimulationConfig ConfigOf(const ModelPlan& plan, const SimulateSettings& settings,
                          const ModelSimulationOptions& options);
TimesSimulationConfig ConfigOf(const TimesPlan& plan, const SimulateSettings& settings);
RunData RunDataOf(const ModelReport& report);
RunData RunDataOf(const TimesReport& report);
std::string_view RunStatusOf(const ModelReport& report);  // kRunOom or kRunOk
std::string_view RunStatusOf(const TimesReport& report);  // kRunOk
nlohmann::ordered_json JsonOf(const ModelReport& report);
nlohmann::ordered_json JsonOf(const TimesReport& report);
std::string TextOf(const ModelReport& report);
std::string TextOf(const TimesReport& report);
// A prediction of a recorded run (study/prediction.h).
nlohmann::ordered_json JsonOf(const CostsFromReport& report);
std::string TextOf(const CostsFromReport& report);

}  // namespace pipette
