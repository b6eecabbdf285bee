// pipette: command-line front end. `pipette --version`, `pipette schedule ...`.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/train_options.h"
#include "pipette/common/build_info.h"

namespace {

void PrintVersion() {
  fmt::print("pipette {}\n", pipette::Version());
  auto libraries = pipette::CoreLibraryVersions();
  libraries.emplace_back("CLI11", CLI11_VERSION);
  libraries.emplace_back("nlohmann-json",
                         fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                                     NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH));
  for (const auto& [name, version] : libraries) fmt::print("  {:<14} {}\n", name, version);
  fmt::print("  {:<14} {}\n", "cuda engine", pipette::CudaEngineStatus());
}

int Run(int argc, char** argv) {
  CLI::App app{"pipette: a testbed for MPMD pipeline-parallel training schedules"};
  app.name("pipette");
  bool version = false;
  app.add_flag("--version", version, "Print pipette's version and its libraries' versions");
  app.require_subcommand(0, 1);

  int exit_code = pipette::kExitOk;
  pipette::cli::RegisterScheduleCommand(app, exit_code);
  pipette::cli::RegisterPartitionCommands(app, exit_code);
  pipette::cli::RegisterCatalogCommands(app, exit_code);
  pipette::cli::RegisterSimulateCommand(app, exit_code);
  pipette::cli::RegisterStoreCommands(app, exit_code);
  pipette::cli::RegisterCompareCommand(app, exit_code);
  pipette::cli::RegisterSweepCommand(app, exit_code);
  pipette::cli::RegisterDbCommands(app, exit_code);
  pipette::cli::RegisterPapersCommand(app, exit_code);
  pipette::cli::RegisterCalibrationCommands(app, exit_code);
  pipette::cli::RegisterFitCommands(app, exit_code);
  pipette::cli::RegisterImportCommands(app, exit_code);
  pipette::cli::RegisterReportCommand(app, exit_code);
  // Listed for --help; main() hands `pipette train ...` to the pipette-train binary first.
  pipette::cli::AddTrainSubcommand(app);

  pipette::cli::RequireWellFormedValues(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help on standard output (which may not be writable), or the error on standard error.
    return pipette::cli::FinishOutput("", pipette::cli::ReportParseError(app, e));
  }
  if (version) {
    PrintVersion();
    return pipette::cli::FinishOutput("", pipette::kExitOk);
  }
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return pipette::cli::FinishOutput("", pipette::kExitOk);
  }
  std::string command;  // "db merge", "schedule search": the chosen subcommand's path
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    command += (command.empty() ? "" : " ") + sub->get_name();
  }
  return pipette::cli::FinishOutput(command, exit_code);
}

}  // namespace

int main(int argc, char** argv) {
  pipette::cli::IgnoreFileSizeSignal();
  pipette::cli::BufferStandardOutput();
  for (const char* command : pipette::cli::kSiblingCommands) {
    if (argc >= 2 && std::string_view(argv[1]) == command) {
      return pipette::cli::ExecSibling(argc, argv);
    }
  }
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: say so instead of aborting
    fmt::print(stderr, "pipette: internal error: {}\n", e.what());
    return pipette::kExitFailure;
  }
}
