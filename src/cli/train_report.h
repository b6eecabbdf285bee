// What pipette-train prints and records (train_main.cc runs the ranks): the run's configuration,
// its JSON line, the text for people (a header, a line per step, a summary with the verification)
// and rank 0's recording after training; and the checks of the options every rank makes before
// MPI starts (train_checks.cc). Called on world rank 0 unless said otherwise.
#pragma once

#include <nlohmann/json.hpp>

#include "cli/train_options.h"
#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_recorder.h"

namespace pipette::cli {

// The run's configuration as recorded (and compared between the ranks before training).
TrainingConfig ConfigOf(const TrainCommandOptions& o, const TrainPlan& plan);

// Whether the run passed --verify (true without it).
bool Verified(const TrainCommandOptions& o, const TrainReport& r);

// The run's JSON line, without where it was recorded.
nlohmann::ordered_json JsonOf(const TrainCommandOptions& o, const TrainPlan& plan,
                              const TrainReport& r);

// The text for people: the header before training, a line per step (flushed), the summary.
void PrintHeader(const TrainCommandOptions& o, const TrainPlan& plan);
void PrintStep(const TrainPlan& plan, int step, double loss, double seconds);
void PrintSummary(const TrainCommandOptions& o, const TrainReport& r);

// Rank 0's recording and output after training; returns the exit code.
int Report(const TrainCommandOptions& o, const TrainPlan& plan, const TrainReport& r,
           RunRecorder& recorder);

// The options every rank checks before MPI starts: InvalidArgument naming the option (the
// engine's own options, --tolerance, --peer-timeout, the processes -p and --dp need).
Status CheckOptions(const TrainCommandOptions& o);

}  // namespace pipette::cli
