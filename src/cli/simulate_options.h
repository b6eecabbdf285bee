// The options of `pipette simulate` (simulate_command.cc: the model and --times paths;
// simulate_costs_from.cc: --costs-from) and what every path shares: recording the run and printing
// its report. Used from the command's callback on the main thread.
#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/exit_code.h"
#include "cli/run_store.h"
#include "cli/uneven_options.h"
#include "pipette/common/printable.h"
#include "pipette/common/status.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/study/simulation_report.h"

namespace pipette::cli {

// The help groups of simulate's options. With --costs-from RUN the program and the model and
// cluster are the recorded run's: an option of those two groups is refused (CheckCostsFromOptions).
inline constexpr const char* kProgramGroup = "Program";
inline constexpr const char* kModelGroup = "Model and cluster";
inline constexpr const char* kPredictionGroup = "Prediction of a recorded run";

struct SimulateOptions {
  std::string schedule = "1f1b";
  ScheduleParams params{4, 0, 8, 0};
  std::string times;
  bool ideal_network = false;
  bool every_replica = false;
  bool quiet = false;  // no progress line
  double latency_us = 0;
  int steps = 1;
  std::string format = "text";
  RecordOptions record;
  // Model path.
  std::string model = "gpt3-1.3b";
  std::string cluster = "dgx-h100";
  CLI::Option* cluster_option = nullptr;
  int nodes = 0;  // 0: the preset's
  int dp = 1;
  int tp = 1;
  std::string placement_order = "tp,pp,dp";
  int ep = 1;                        // expert-parallel GPUs (MoE models)
  bool no_alltoall_overlap = false;  // (F;B) cells run their all-to-all serially
  int micro_batch_size = 1;
  int seq_len = 2048;
  CLI::Option* seq_len_option = nullptr;
  UnevenWorkOptions uneven;
  std::string dtype = "bf16";
  int zero = 0;
  bool recompute = false;
  double efficiency = 0.5;
  // The data-parallel gradient reduction (sim/gradient_reduction.h); empty: ring on a cluster,
  // analytic on the ideal network.
  std::string grad_reduce;
  bool grad_overlap = false;
  std::int64_t grad_bucket_params = 0;  // 0: Megatron's default
  CLI::Option* grad_reduce_option = nullptr;
  CLI::Option* grad_overlap_option = nullptr;
  CLI::Option* grad_bucket_option = nullptr;
  CLI::Option* p_option = nullptr;
  CLI::Option* m_option = nullptr;
  CLI::Option* times_option = nullptr;
  CLI::Option* latency_option = nullptr;
  // --costs-from: predict a recorded real run.
  std::int64_t costs_from = 0;
  int cores = -1;           // -1: the calibration's cores, else this machine's usable cores
  std::string calibration;  // an id or "latest"; empty: none
  std::string cost_statistic = "median";
  bool alone_costs = false;  // cost the run's computes alone (its cores' sharing taken out)
  std::string fit;           // --fit ID|latest: price the computes with a fitted cost model
  CLI::Option* costs_from_option = nullptr;
  CLI::Option* fit_option = nullptr;
  CLI::Option* cores_option = nullptr;
  CLI::Option* calibration_option = nullptr;
  const CLI::App* command = nullptr;
};

// Adds every option of `pipette simulate` to `cmd`, pointing into `o` (o.command = cmd).
void AddSimulateOptions(CLI::App* cmd, SimulateOptions& o);

// --costs-from's checks (the options that describe what it takes from the run; --cores,
// --alone-costs and --calibration need it) and the prediction of the recorded run
// (simulate_costs_from.cc). Return a Status and an exit code.
Status CheckCostsFromOptions(const SimulateOptions& o);
int RunCostsFrom(const SimulateOptions& o);
// --fit ID|latest: a configuration (given, or with --costs-from RUN that run's) priced by a fitted
// cost model (simulate_fit.cc).
int RunFitPrediction(const SimulateOptions& o);

// Registers the run as `running` with `config`, runs `simulate`, records the report's rows and
// prints it; a failed simulation marks the run failed. Returns the exit code.
template <typename Report>
int RecordAndPrint(const SimulateOptions& o, const nlohmann::ordered_json& config,
                   const std::function<Result<Report>()>& simulate) {
  Result<RunRecorder> recorder = BeginRecording(o.record, "sim", config);
  if (!recorder.ok()) return ReportError("simulate", recorder.status());
  if (recorder->held()) return ReportPointHeld("simulate", o.record, *recorder, o.format == "json");
  Result<Report> report = simulate();
  if (!report.ok()) {
    (void)recorder->Fail(report.status().message());
    return ReportError("simulate", report.status());
  }
  // A simulation that ran but could not be recorded is a failure, whatever the database said.
  const Status recorded = recorder->Finish(RunDataOf(*report), RunStatusOf(*report));
  if (!recorded.ok()) {
    fmt::print(stderr, "pipette simulate: recording run {} in '{}': {}\n", recorder->run_id(),
               Printable(recorder->path()), PrintableLines(recorded.message()));
    return kExitFailure;
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = JsonOf(*report);
    if (recorder->enabled()) {
      json["run_id"] = recorder->run_id();
      json["db"] = recorder->path();
    }
    std::cout << json.dump() << "\n";
  } else {
    std::cout << TextOf(*report);
    if (recorder->enabled()) {
      fmt::print("# recorded as run {} in {}\n", recorder->run_id(), Printable(recorder->path()));
    }
  }
  return kExitOk;
}

// `config` with the uneven work when there is any (the run records what it ran).
template <typename Config>
nlohmann::ordered_json WithUneven(Config config, const UnevenWork& work) {
  config.uneven = UnevenWorkRecordOf(work);
  return config;
}

}  // namespace pipette::cli
