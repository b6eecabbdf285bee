// What pipette-train records and prints after training (train_main.cc runs the ranks; the JSON line
// and the text are report/training_report.h's, the configuration store/training_run.h's): rank 0's
// recording and output; and the checks of the options every rank makes before MPI starts
// (train_checks.cc). Called on world rank 0 unless said otherwise.
#pragma once

#include "cli/train_options.h"
#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/report/training_report.h"
#include "pipette/store/run_recorder.h"

namespace pipette::cli {

// What the training report (report/training_report.h) shows of the command line.
TrainingReportSettings SettingsOf(const TrainCommandOptions& o);

// Rank 0's recording and output after training; returns the exit code.
int Report(const TrainCommandOptions& o, const TrainPlan& plan, const TrainReport& r,
           RunRecorder& recorder);

// The options every rank checks before MPI starts: InvalidArgument naming the option (the
// engine's own options, --tolerance, --peer-timeout, the processes -p and --dp need).
Status CheckOptions(const TrainCommandOptions& o);

}  // namespace pipette::cli
