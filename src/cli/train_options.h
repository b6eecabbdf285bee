// The options of `pipette train` (the pipette-train binary), declared once: pipette-train parses
// them, and `pipette` lists them under its `train` subcommand, for --help and for sweeps whose
// points run `train` (CheckSweepOptions checks a spec's keys against them). No MPI here.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/run_store.h"
#include "pipette/engine/train_plan.h"

namespace pipette::cli {

struct TrainCommandOptions {
  std::string engine = "cpu";
  TrainOptions train;
  std::string format = "text";
  bool quiet = false;  // no progress line
  double tolerance = 1e-5;
  RecordOptions record;
  CLI::Option* p_option = nullptr;
  CLI::Option* m_option = nullptr;
  CLI::Option* trace_steps_option = nullptr;
};

// Adds every option of `pipette train` to `cmd`, bound to `o`.
void AddTrainOptions(CLI::App* cmd, const std::shared_ptr<TrainCommandOptions>& o);

// Adds the `train` subcommand to pipette's `app` with train's options (parsed into a value nobody
// reads: main() hands `pipette train ...` to pipette-train before parsing).
void AddTrainSubcommand(CLI::App& app);

}  // namespace pipette::cli
