// Recording a command's run into the experiment database: the options every engine command shares
// (--db, --no-db, --trace, --experiment, --point-key), and BeginRecording, which starts the
// store's RunRecorder (store/run_recorder.h) with them. Bad options are rejected while the command
// line is parsed, before anything is written.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_recorder.h"

namespace pipette::cli {

struct RecordOptions {
  std::string db = "pipette.db";
  bool no_db = false;
  std::string trace = "full";
  std::string experiment;  // sweeps: the experiment this run belongs to
  std::string point_key;   // sweeps: the run's point in it
};

// Adds --db, --no-db, --trace, --experiment and --point-key to `cmd`.
// The help group of the options that say what is printed and where the run is recorded.
inline constexpr const char* kOutputGroup = "Output and recording";
void AddRecordOptions(CLI::App* cmd, RecordOptions& options);

// A --db check for CLI11: CheckDatabasePath (an empty path, ":memory:" and "file:" URIs are refused
// while the command line is parsed, before any work).
CLI::Validator DatabasePathValidator();

// The library versions of this build, as a JSON object.
nlohmann::ordered_json LibraryVersions();

// Begins recording a run of `engine` with `config` as `options` say (store/run_recorder.h): a
// recorder that records nothing with --no-db; else the run row with this build's version,
// revision and library versions.
Result<RunRecorder> BeginRecording(const RecordOptions& options, std::string_view engine,
                                   const nlohmann::ordered_json& config);

// Prints that the point `options.point_key` is held by another run (JSON with --format json:
// {"point_key", "held_by_run", "held_status"}) and returns kExitOk: the point's work is someone
// else's, not an error. REQUIRES: recorder.held().
int ReportPointHeld(std::string_view command, const RecordOptions& options,
                    const RunRecorder& recorder, bool json);

}  // namespace pipette::cli
