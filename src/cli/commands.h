// The pipette subcommands. Each Register* adds its subcommand to the CLI11 app and arranges for it
// to run after parsing; the run functions return the process exit code (cli/exit_code.h: 0 ok,
// 2 bad input, 1 other failure). The CLI stays thin: parse, call the library, print.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"

namespace pipette::cli {

void RegisterScheduleCommand(CLI::App& app, int& exit_code);
// `partition`, `models` and `clusters`.
void RegisterPartitionCommands(CLI::App& app, int& exit_code);
void RegisterSimulateCommand(CLI::App& app, int& exit_code);
// `runs`, `export` and `plot`.
void RegisterStoreCommands(CLI::App& app, int& exit_code);
// `compare A B`: a predicted and a measured run of one program joined event by event.
void RegisterCompareCommand(CLI::App& app, int& exit_code);
// `sweep`: runs a study's points as child processes of this binary (needs `app` to check the spec
// against the swept command's options).
void RegisterSweepCommand(CLI::App& app, int& exit_code);
// `papers`: a published table reproduced, cell by cell (cli/paper_tables.h).
void RegisterPapersCommand(CLI::App& app, int& exit_code);
// `pipette train ARGS`: replaces this process with `pipette-train ARGS` from pipette's own
// directory (the real engines live in their own binary: SimGrid exports MPI symbols of its own).
// Returns only on failure, with the exit code.
int ExecTrain(int argc, char** argv);

}  // namespace pipette::cli
