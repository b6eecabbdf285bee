// `pipette simulate --costs-from RUN`: the prediction of a recorded real run. The run's own program
// (its schedule, p, v, m and data-parallel replicas, rebuilt by the schedule layer) runs on the
// SimGrid engine with every stage's F, I, W and B costs, each rank's parameter update and (without
// a calibration) all-reduce taken from the run (medians over its traced steps without step 0,
// fidelity/recorded_work.h), the engine's step barrier, message sizes from its trace, optionally N
// cores shared by the ranks (sim/simulator.h: SimulationCase::cores), and what a calibration
// measured beyond compute (messages alpha + beta * bytes, the all-reduce fit, the engine's
// per-instruction overhead). It simulates as many steps as the run traced, so `pipette compare`
// can join the two row by row; memory over time is the run's engine's (its static and per-stage
// bytes) applied to the simulated order.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/calibration.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/train_plan.h"
#include "pipette/fidelity/cost_fit.h"
#include "pipette/fidelity/recorded_work.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"
#include "sim/simulator.h"

namespace pipette {

// What the simulation adds to the run's measured compute.
struct PredictionSettings {
  int cores = 0;       // cores the ranks share; 0: each rank its own
  bool alone = false;  // the run's computes costed alone (its sharing of `cores` taken out)
  CostStatistic statistic = CostStatistic::kMedian;  // how the run's durations become costs
  double latency = 0;                                // seconds per message (alpha)
  double seconds_per_byte = 0;                       // beta
  double instruction_overhead = 0;                   // seconds per instruction
  // Where it came from: "run" (the measured run's own gaps between instructions, preferred),
  // "calibration" (pipette calibrate's microbenchmark) or "none".
  std::string overhead_source = "none";
  // Where latency and seconds_per_byte came from: "run" (its messages' median time when the
  // receiver was already waiting, beta 0: the run's own sizes), "calibration" or "none".
  std::string message_source = "none";
  std::int64_t calibration_id = 0;  // 0: none applied
  // The data-parallel all-reduce, alpha + beta * gradient bytes; without a fit (alpha < 0) each
  // rank's measured median.
  double allreduce_alpha = -1;
  double allreduce_beta = 0;
  std::int64_t fit_id = 0;  // the fit that priced the computes (PlanFitPrediction); 0: none
};

struct CostsFromPlan {
  RecordedWork work;
  RecordedConfig measured_config;  // the run's own configuration
  PredictionSettings settings;
  Schedule schedule;
  Program program;
};

struct CostsFromReport {
  const CostsFromPlan& plan;
  SimulationResult result;
  std::vector<RankMemoryTimeline> memory;  // empty when the run recorded no memory model
};

// The calibration `which` names in `db`: an id, or "latest" (this host's most recent one).
// InvalidArgument naming --calibration, the value and the rule for a malformed id, an id the
// database lacks, or no calibration of this host; the database's own errors otherwise.
Result<Calibration> FindCalibration(ExperimentDb& db, const std::string& which);

// What `calibration` measured beyond compute, into `settings`: messages alpha + beta * bytes, the
// engine's instruction overhead and the all-reduce fit (sources "calibration").
void ApplyCalibration(const Calibration& calibration, PredictionSettings& settings);

// Reads `run` (InvalidArgument naming `option` when it cannot be predicted) and rebuilds its
// program.
Result<CostsFromPlan> PlanCostsFrom(const RunData& run, const std::string& option,
                                    const PredictionSettings& settings);
// The simulation case of `plan` (pointing into it).
SimulationCase CaseOf(const CostsFromPlan& plan);

// A configuration, run or not, priced by a fitted cost model (fidelity/cost_fit.h): the engine's
// own plan of `options` (PlanTraining: the schedule's program, the model cut into its pieces),
// every stage's F, I, W and B and every rank's update from the fit, the messages and the
// instruction gap the fitted runs measured (else `settings`' calibration), the data-parallel
// all-reduce from the calibration's fit (required for dp > 1), `steps` steps. `of_run` is the
// measured run of the same configuration the prediction is compared with (0: none). InvalidArgument
// naming --fit for a configuration outside the fit's family or one it cannot price, naming the
// option for one the engine cannot plan.
Result<CostsFromPlan> PlanFitPrediction(const CostFit& fit, const TrainOptions& options,
                                        const PredictionSettings& settings, int steps,
                                        std::int64_t of_run);

// The run's own sequence length (its configuration's seq_len), 0 when it records none: the length
// its measured costs are for, which uneven lengths scale from.
int RecordedSeqLen(const CostsFromPlan& plan);

// Whether uneven work can be added to the prediction of `plan`'s run: refused (InvalidArgument
// naming --costs-from and the run's uneven work) when the run already ran uneven work and
// `adds_uneven` (any uneven-work option given), when its microbatches had different lengths (its
// medians are no one length's costs), or when `adds_seqlens` and it records no seq_len.
Status CheckUnevenPrediction(const CostsFromPlan& plan, bool adds_uneven, bool adds_seqlens);

// Simulates `one` (CaseOf(plan) with any uneven work applied) and, when the run recorded its
// engine's memory, the memory over time of the simulated order.
Result<CostsFromReport> PredictRun(const CostsFromPlan& plan, const SimulationCase& one);

// The prediction's configuration: the measured run's (engine "sim"), its traced steps, the run it
// predicts and the settings that priced it.
PredictionConfig ConfigOf(const CostsFromPlan& plan);
RunData RunDataOf(const CostsFromReport& report);
std::string_view RunStatusOf(const CostsFromReport& report);  // kRunOk

// The simulated steps' durations (each step's span), and each rank's peak of `memory`.
std::vector<double> StepTimes(const SimulationResult& result);
std::vector<double> PeakMemory(const std::vector<RankMemoryTimeline>& memory);

}  // namespace pipette
