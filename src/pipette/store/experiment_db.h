// ExperimentDb: the SQLite experiment database every run of every engine lands in
// (docs/trace_schema.md has the schema and example queries).
//
// Opening creates or migrates the schema (PRAGMA user_version), turns on foreign keys and the WAL
// journal, and waits up to a minute for other writers, so several processes may record into one
// file at once. A run is written in two transactions: BeginRun() commits its row with status
// `running`; FinishRun() writes all its events, memory and metric rows and sets its final status in
// one transaction, so a process that dies in between leaves a `running` run with no rows, never a
// partial one marked finished; RepairStale() marks such runs `failed`. Move-only (owns the
// connection); one thread at a time.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, ExperimentDb::Open("pipette.db"));
//   PIPETTE_ASSIGN_OR_RETURN(std::int64_t id, db.BeginRun(record));
//   PIPETTE_RETURN_IF_ERROR(db.FinishRun(id, data, kRunOk));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/run_data.h"

struct sqlite3;

namespace pipette {

// The schema version this build writes (PRAGMA user_version).
inline constexpr int kSchemaVersion = 2;

struct RunFilter {
  std::optional<std::int64_t> experiment_id;
  std::optional<std::string> status;
};

class ExperimentDb {
 public:
  // Opens (creating if missing) `path` and migrates it to kSchemaVersion. `up_to_version` (tests
  // only) stops the migration early. Errors: IoError naming the path and SQLite's message;
  // FailedPrecondition for a database made by a newer pipette.
  static Result<ExperimentDb> Open(const std::string& path, int up_to_version = kSchemaVersion);

  ExperimentDb(ExperimentDb&& other) noexcept;
  ExperimentDb& operator=(ExperimentDb&& other) noexcept;
  ExperimentDb(const ExperimentDb&) = delete;
  ExperimentDb& operator=(const ExperimentDb&) = delete;
  ~ExperimentDb();

  int schema_version() const;

  // The id of experiment `name`, created with `description` and `spec` if it does not exist (an
  // existing one keeps its own).
  Result<std::int64_t> EnsureExperiment(std::string_view name, std::string_view description,
                                        std::string_view spec);
  Result<std::optional<std::int64_t>> FindExperiment(std::string_view name);

  // Inserts `run` with status `running` and returns its id. Empty host, pid and started_at are
  // filled in (this machine, this process, now). `point_key` (optional) names the run's point in
  // its experiment, for resuming sweeps. REQUIRES: run.engine is sim, cpu or cuda; run.config is
  // JSON.
  Result<std::int64_t> BeginRun(RunRecord run, std::string_view point_key = "");

  // In one transaction: inserts `data`'s events, memory rows and metrics for run `run_id` and sets
  // its status (ok, oom or failed), error and ended_at. FailedPrecondition if the run is not
  // `running`.
  Status FinishRun(std::int64_t run_id, const RunData& data, std::string_view status,
                   std::string_view error = "");
  // Marks a running run failed with `error` (no rows).
  Status FailRun(std::int64_t run_id, std::string_view error);

  // The run with its rows (events only if `with_events`). NotFound for an unknown id.
  Result<RunData> LoadRun(std::int64_t run_id, bool with_events = true);
  Result<std::vector<RunRecord>> ListRuns(const RunFilter& filter = {});
  // The finished (ok or oom) run of `experiment_id` at `point_key`, if any.
  Result<std::optional<std::int64_t>> FindFinishedRun(std::int64_t experiment_id,
                                                      std::string_view point_key);
  // Marks `running` runs whose process is gone (same host, pid not alive) as failed; returns how
  // many. Runs of other hosts are left alone unless `all_hosts`.
  Result<int> RepairStale(bool all_hosts = false);

 private:
  explicit ExperimentDb(sqlite3* db) : db_(db) {}
  Status Exec(const char* sql);
  Status Migrate(int up_to_version);

  sqlite3* db_ = nullptr;
};

// This machine's host name.
std::string HostName();
// The current UTC time as ISO 8601 with milliseconds ("2026-11-21T10:04:05.123Z").
std::string UtcNow();

}  // namespace pipette
