// ExperimentDb: the SQLite experiment database every run of every engine lands in
// (docs/trace_schema.md has the schema and example queries).
//
// Open() creates or migrates the schema (PRAGMA user_version), turns on foreign keys and the WAL
// journal; every step of it, like every write, waits up to a minute for other connections (the
// journal switch, which SQLite does not hand to its busy handler, is retried), so several processes
// may create and record into one file at once. OpenReadOnly() is for commands that only read: it
// never writes, switches the journal or migrates, so a read-only file can be read (by another user,
// in a directory it cannot write, too) and an empty or foreign file stays as it was. A run is
// written in two transactions: BeginRun() commits its row with status `running`; FinishRun() writes
// all its events, memory and metric rows and sets its final status in one transaction, so a process
// that dies in between leaves a `running` run with no rows, never a partial one marked finished;
// RepairStale() marks such runs `failed`. A sweep point is claimed atomically (ClaimPoint): at most
// one live or finished run per point. Move-only (owns the connection, a sqlite::Connection of
// store/sqlite.h); one thread at a time. The code: experiment_db.cc (opening, experiments),
// experiment_schema.cc (the schema and its migrations), experiment_runs.cc (runs and their rows),
// experiment_calibrations.cc.
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
#include <utility>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/calibration.h"
#include "pipette/store/process_owner.h"
#include "pipette/store/run_data.h"
#include "pipette/store/sqlite.h"

namespace pipette {

// The schema version this build writes (PRAGMA user_version).
inline constexpr int kSchemaVersion = 9;
// The oldest schema OpenReadOnly() reads (older ones must be migrated by a command that writes).
inline constexpr int kOldestReadableSchema = 2;

// OK for a path that names a database file; InvalidArgument naming --db otherwise: empty (an unset
// variable), ":memory:" and "file:" URIs record nowhere a later command can read; a name ending in
// -wal, -shm or -journal is another database's companion file (SQLite would consume it); an
// existing path that is not a regular file (a device, FIFO, socket or directory) holds none.
Status CheckDatabasePath(std::string_view path);

// A fitted cost model as the database keeps it: the document is fidelity/cost_fit.h's JSON (the
// store does not read it), the runs it was fitted to beside it (for `db merge`'s renumbering).
struct StoredFit {
  std::int64_t id = 0;
  std::string created_at, host, version;
  std::string engine;
  std::vector<std::int64_t> runs;
  std::string document;  // JSON
};

// Who holds a sweep point (ClaimPoint).
struct PointClaim {
  bool claimed = false;     // true: `run_id` is the new run, now `running`
  std::int64_t run_id = 0;  // claimed: the new run; else the run that holds the point
  std::string holder;       // not claimed: the holder's status ("ok", "oom" or "running")
};

// A run `runs --repair` marked failed, with the steps it kept (a training run recorded as it went).
struct RepairedRun {
  std::int64_t run_id = 0;
  std::optional<int> steps_kept;
};

// An experiment: a sweep's spec text (`pipette sweep` stores it) or empty.
struct ExperimentInfo {
  std::int64_t id = 0;
  std::string name;
  std::string description;
  std::string spec;
};

struct RunFilter {
  std::optional<std::int64_t> experiment_id;
  std::optional<std::string> status;
};

namespace internal {
// A scalar subquery: the file's own tables (not SQLite's), by name, comma-separated; '' for none
// (the read probe and the writer's refusal of a foreign database share it).
inline constexpr const char* kOwnTablesSql =
    "(SELECT ifnull(group_concat(name, ', '), '') FROM (SELECT name FROM sqlite_schema WHERE "
    "type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name))";
}  // namespace internal

class ExperimentDb {
 public:
  // Opens (creating if missing) `path` and migrates it to kSchemaVersion. `up_to_version` (tests
  // only) stops the migration early. A new database appears complete or not at all: it is built
  // beside `path` (".NAME.creating-PID") and hard-linked into place, so no process ever sees it
  // half made (a file system without hard links: created in place, the schema in its first
  // transaction). An empty file, or one with no tables, is an empty database: its schema is
  // created. A file up to 16 MB is checked (PRAGMA quick_check) before anything is written.
  // Errors: IoError naming the path and SQLite's message, for a database with tables that are not
  // pipette's (naming them) and for a damaged one (naming the damage); FailedPrecondition for a
  // database made by a newer pipette.
  static Result<ExperimentDb> Open(const std::string& path, int up_to_version = kSchemaVersion);
  // Opens an existing database for reading only (writes fail). An empty file, or one with no
  // tables, reads as an empty database (no runs; empty_file() is true). IoError "not a pipette
  // database" for a file that is not one (foreign, naming its tables, or corrupt), "cannot read"
  // when the read itself failed (permissions, locks, I/O); FailedPrecondition for a schema older
  // than kOldestReadableSchema (naming the command that migrates it) or newer than kSchemaVersion.
  //
  // Reading a WAL database normally takes shared locks in a -shm file beside it, creating it (and
  // an empty -wal) if missing, and a read-only connection never removes them. So when this user
  // cannot create them (the directory is not writable), or cannot write the database and no
  // -wal/-shm exists (no connection has it open; files it created would be this user's, and stop
  // the owner's writes), the file is opened immutable (URI immutable=1): no locks, no files, and
  // no -wal read. The trade-off: such a read does not see a writer. One that starts meanwhile (a
  // user who can write the file, or root) and checkpoints during the read can make the read fail
  // (malformed) or return a mix of old and new pages; a read that ends first is exact. A -wal or
  // hot -journal with content is never ignored: it is read through -shm if that exists, else
  // "cannot read" says who can read it.
  static Result<ExperimentDb> OpenReadOnly(const std::string& path);

  ExperimentDb(ExperimentDb&& other) noexcept;
  ExperimentDb& operator=(ExperimentDb&& other) noexcept;
  ExperimentDb(const ExperimentDb&) = delete;
  ExperimentDb& operator=(const ExperimentDb&) = delete;
  ~ExperimentDb();

  int schema_version() const;
  // True when OpenReadOnly found an empty file (or one with no tables): read as an empty database.
  bool empty_file() const { return empty_file_; }
  // The damage PRAGMA quick_check (`quick`) or integrity_check finds, at most 100 lines (SQLite's
  // message when the check cannot read the pages at all); empty when the database is intact.
  // IoError when the check fails otherwise (a lock, I/O).
  Result<std::vector<std::string>> CheckIntegrity(bool quick);
  // The connection, for a reader that queries it directly (db merge's inputs); this object is left
  // without one.
  sqlite::Connection TakeConnection() && { return std::move(db_); }

  // The id of experiment `name`, created with `description` and `spec` if it does not exist (an
  // existing one keeps its own).
  Result<std::int64_t> EnsureExperiment(std::string_view name, std::string_view description,
                                        std::string_view spec);
  Result<std::optional<std::int64_t>> FindExperiment(std::string_view name);
  // Every experiment, by id.
  Result<std::vector<ExperimentInfo>> ListExperiments();

  // Inserts `run` with status `running` and returns its id. Empty host, pid and started_at are
  // filled in (this machine, this process, now). `point_key` (optional) names the run's point in
  // its experiment, for resuming sweeps; the point is claimed as by ClaimPoint and
  // FailedPrecondition names the run that holds it. REQUIRES: run.engine is sim, cpu, cuda or
  // pytorch; run.config is JSON.
  Result<std::int64_t> BeginRun(RunRecord run, std::string_view point_key = "");
  // In one IMMEDIATE transaction: if point `point_key` of run.experiment_id has a finished (ok,
  // oom) run, or a `running` run whose process is alive (or on another host), returns that run
  // unclaimed; otherwise marks the point's runs of dead processes failed and inserts `run` as
  // `running` (as BeginRun). So a point runs once, whatever the interleaving of its claimers.
  Result<PointClaim> ClaimPoint(RunRecord run, std::string_view point_key);

  // In one transaction: replaces the rows of run `run_id` (those RecordStep wrote as it went) with
  // `data`'s events, memory rows and metrics and sets its status (ok, oom or failed), error and
  // ended_at. FailedPrecondition if the run is not `running`.
  Status FinishRun(std::int64_t run_id, const RunData& data, std::string_view status,
                   std::string_view error = "");
  // In one transaction: appends the rows of one finished step of running run `run_id` (a training
  // run recording as it goes, so a kill keeps every finished step) and sets its metric
  // `steps_recorded` to `steps_recorded`. FailedPrecondition if the run is not `running`.
  Status RecordStep(std::int64_t run_id, const RunData& step_rows, int steps_recorded);
  // Marks a running run failed with `error`, keeping the rows it has; a run that recorded steps as
  // it went says how many it kept ("; it kept its first N steps").
  Status FailRun(std::int64_t run_id, std::string_view error);
  // The steps a running or failed training run recorded as it went (its `steps_recorded`), if any.
  Result<std::optional<int>> StepsRecorded(std::int64_t run_id);

  // The run with its rows (events only if `with_events`). NotFound for an unknown id.
  Result<RunData> LoadRun(std::int64_t run_id, bool with_events = true);
  Result<std::vector<RunRecord>> ListRuns(const RunFilter& filter = {});
  // The finished (ok or oom) run of `experiment_id` at `point_key`, if any.
  Result<std::optional<std::int64_t>> FindFinishedRun(std::int64_t experiment_id,
                                                      std::string_view point_key);
  // Marks `running` runs whose process ended as failed (this host: the pid is gone, a zombie, or
  // reused by a process that started later; process_owner.h); returns them with the steps each
  // kept. Runs of other hosts are left alone unless `all_hosts`.
  Result<std::vector<RepairedRun>> RepairStale(bool all_hosts = false);

  // Stores `calibration` and its points in one transaction; returns its id. Empty host, version
  // and created_at are filled in (this machine, this pipette, now).
  Result<std::int64_t> RecordCalibration(const Calibration& calibration);
  // The calibration `id` with its points. NotFound naming `--calibration = ID` for an unknown id
  // (and in a database older than schema 4, which has none).
  Result<Calibration> LoadCalibration(std::int64_t id);
  // Every calibration, oldest first, without their points.
  Result<std::vector<Calibration>> ListCalibrations();

  // Stores a fitted cost model (`pipette fit`); returns its id. Empty host, version and created_at
  // are filled in.
  Result<std::int64_t> RecordFit(const StoredFit& fit);
  // The fit `id`: NotFound naming it for an unknown id (and in a database older than schema 7).
  Result<StoredFit> LoadFit(std::int64_t id);
  // Every fit, oldest first.
  Result<std::vector<StoredFit>> ListFits();

 private:
  explicit ExperimentDb(sqlite::Connection db) : db_(std::move(db)) {}
  // OK for a schema version OpenReadOnly reads; IoError naming --db = `path` for a negative one (a
  // damaged header), FailedPrecondition for one newer than kSchemaVersion or older than
  // kOldestReadableSchema.
  static Status CheckReadableVersion(std::string_view path, int version);
  Status Migrate(int up_to_version);
  // IoError naming the tables of a database with tables and no pipette schema (user_version 0).
  Status RefuseForeign();

  // Open() without the creation aside and the integrity check.
  static Result<ExperimentDb> OpenInPlace(const std::string& path, int up_to_version);
  // Builds a new database at `path` aside and links it into place (Open()).
  static Status CreateAside(const std::string& path, int up_to_version);
  // IoError naming the damage when a file of at most kQuickCheckMaxBytes fails PRAGMA quick_check.
  Status QuickCheck(std::string_view path);
  Result<std::int64_t> InsertRun(RunRecord run, std::string_view point_key);
  Status FailStale(std::int64_t run_id, const OwnerFacts& owner, std::string_view by);
  // Inserts `data`'s events, memory rows and metrics of run `run_id` (inside a transaction).
  Status InsertRows(std::int64_t run_id, const RunData& data);

  sqlite::Connection db_;
  bool empty_file_ = false;
};

}  // namespace pipette
