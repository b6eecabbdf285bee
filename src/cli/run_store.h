// Recording a command's run into the experiment database (store/experiment_db.h): the options every
// engine command shares (--db, --no-db, --trace, --experiment), and RunRecorder, which opens the
// database, registers the run as `running` before the work starts (claiming its sweep point, if
// any) and finishes it with its rows afterwards. Bad options are rejected before anything is
// written. A RunRecorder that is destroyed before Finish() or Fail() (an error path, an exception)
// marks its run failed, so no error after Begin() leaves a run `running`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/experiment_db.h"

namespace pipette::cli {

// What a run writes besides its run row and metrics.
enum class TraceLevel {
  kNone,     // metrics only
  kSummary,  // + memory over time per rank and the all-reduce events
  kFull,     // + one event per executed instruction
};

struct RecordOptions {
  std::string db = "pipette.db";
  bool no_db = false;
  std::string trace = "full";
  std::string experiment;  // sweeps: the experiment this run belongs to
  std::string point_key;   // sweeps: the run's point in it
};

// Adds --db, --no-db, --trace, --experiment and --point-key to `cmd`.
void AddRecordOptions(CLI::App* cmd, RecordOptions& options);

// A --db check for CLI11: CheckDatabasePath (an empty path, ":memory:" and "file:" URIs are refused
// while the command line is parsed, before any work).
CLI::Validator DatabasePathValidator();

// Appends one metric row "name[k]" per value (per rank, per step).
void AddPerRank(std::vector<MetricRow>& metrics, const std::string& name,
                const std::vector<double>& values, const std::string& unit);

// The library versions of this build, as a JSON object.
nlohmann::ordered_json LibraryVersions();

class RunRecorder {
 public:
  // Opens the database and inserts the run as `running`; nullopt-like (enabled() false) with
  // --no-db. With --point-key the run claims its point (ExperimentDb::ClaimPoint): when another
  // run holds it, enabled() is false and held() names that run; the caller must not do the work.
  // Errors: the database cannot be opened or written.
  static Result<RunRecorder> Begin(const RecordOptions& options, std::string_view engine,
                                   const nlohmann::ordered_json& config);

  RunRecorder() = default;
  RunRecorder(RunRecorder&& other) noexcept;
  RunRecorder& operator=(RunRecorder&& other) noexcept;
  ~RunRecorder();  // an unfinished run ends `failed`

  bool enabled() const { return db_ != nullptr; }
  std::int64_t run_id() const { return run_id_; }
  const std::string& path() const { return path_; }
  // The run that holds this run's sweep point, when Begin() could not claim it.
  const std::optional<PointClaim>& held() const { return held_; }

  // Writes `data` (filtered by the trace level) and the final status in one transaction; if that
  // fails, marks the run failed with the reason (and returns the error).
  Status Finish(RunData data, std::string_view status);
  // Marks the run failed with `error`.
  Status Fail(std::string_view error);

 private:
  void FailUnfinished();

  std::unique_ptr<ExperimentDb> db_;
  std::int64_t run_id_ = 0;
  std::string path_;
  TraceLevel level_ = TraceLevel::kFull;
  bool finished_ = false;
  std::optional<PointClaim> held_;
};

// Prints that the point `options.point_key` is held by another run (JSON with --format json:
// {"point_key", "held_by_run", "held_status"}) and returns kExitOk: the point's work is someone
// else's, not an error. REQUIRES: recorder.held().
int ReportPointHeld(std::string_view command, const RecordOptions& options,
                    const RunRecorder& recorder, bool json);

}  // namespace pipette::cli
