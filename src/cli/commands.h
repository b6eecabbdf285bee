// The pipette subcommands. Each Register* adds its subcommand to the CLI11 app and arranges for it
// to run after parsing; the run functions return the process exit code (cli/exit_code.h: 0 ok,
// 2 bad input, 1 other failure). The CLI stays thin: parse, call the library, print.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"

namespace pipette::cli {

void RegisterScheduleCommand(CLI::App& app, int& exit_code);
// `schedule search` (schedule_search_command.cc), a subcommand of `schedule`.
void RegisterScheduleSearchCommand(CLI::App& schedule, int& exit_code);
void RegisterPartitionCommands(CLI::App& app, int& exit_code);
// `models` and `clusters` (catalog_commands.cc): the built-in presets.
void RegisterCatalogCommands(CLI::App& app, int& exit_code);
void RegisterSimulateCommand(CLI::App& app, int& exit_code);
// `runs`, `export` and `plot`.
void RegisterStoreCommands(CLI::App& app, int& exit_code);
// `compare A B`: a predicted and a measured run of one program joined event by event.
void RegisterCompareCommand(CLI::App& app, int& exit_code);
// `sweep`: runs a study's points as child processes of this binary (needs `app` to check the spec
// against the swept command's options).
void RegisterSweepCommand(CLI::App& app, int& exit_code);
// `db merge OUT IN...`: joins experiment databases, e.g. the shards of a sharded sweep
// (db_command.cc, store/db_merge.h).
void RegisterDbCommands(CLI::App& app, int& exit_code);
// `papers`: a published table reproduced, cell by cell (pipette/papers/comparison.h).
void RegisterPapersCommand(CLI::App& app, int& exit_code);
// `calibrations`: lists the calibrations `pipette calibrate` stored (calibration_commands.cc); also
// lists `calibrate` for --help.
void RegisterCalibrationCommands(CLI::App& app, int& exit_code);
// `fit RUN...` and `fits` (fit_commands.cc): cost models fitted to measured runs.
void RegisterFitCommands(CLI::App& app, int& exit_code);
// `import pytorch TRACE...` (import_command.cc): a run of another framework, from its traces.
void RegisterImportCommands(CLI::App& app, int& exit_code);
// `pipette report`: a study as one static HTML page (report_command.cc).
void RegisterReportCommand(CLI::App& app, int& exit_code);
// The commands that live in a binary of their own (MPI: SimGrid exports MPI symbols of its own).
inline constexpr const char* kSiblingCommands[] = {"train", "calibrate"};
// `pipette COMMAND ARGS` for COMMAND = argv[1] in kSiblingCommands: replaces this process with
// `pipette-COMMAND ARGS` from pipette's own directory. Returns only on failure, with the exit code.
int ExecSibling(int argc, char** argv);

}  // namespace pipette::cli
