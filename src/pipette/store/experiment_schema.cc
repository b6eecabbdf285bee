// ExperimentDb, the schema: its migrations and the checks of a file's schema version.
#include <fmt/core.h>
#include <sqlite3.h>

#include <iterator>
#include <string>

#include "pipette/store/experiment_db.h"
#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

// Schema versions, in order: migration k brings user_version k-1 to k. Never edit a released
// step; add one.
constexpr const char* kMigrations[] = {
    // 1: the tables of the experiment store. (The event kind CHECK is a chain of ORs: an IN list
    // costs 2.5x more per inserted row in SQLite 3.40.)
    R"sql(
CREATE TABLE experiments(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  description TEXT NOT NULL DEFAULT '',
  spec TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER REFERENCES experiments(id) ON DELETE CASCADE,
  engine TEXT NOT NULL CHECK (engine IN ('sim', 'cpu', 'cuda')),
  config TEXT NOT NULL CHECK (json_valid(config)),
  version TEXT NOT NULL,
  git_rev TEXT NOT NULL,
  libraries TEXT NOT NULL,
  host TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'oom', 'failed')),
  error TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE events(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  instr_id INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind = 'F' OR kind = 'I' OR kind = 'W' OR kind = 'B' OR
                            kind = 'SEND_F' OR kind = 'RECV_F' OR kind = 'SEND_B' OR
                            kind = 'RECV_B' OR kind = 'ALLREDUCE' OR kind = 'OPTIMIZER'),
  stage INTEGER NOT NULL,
  microbatch INTEGER NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL NOT NULL,
  bytes INTEGER NOT NULL
) STRICT;
CREATE INDEX events_by_run ON events(run_id);
CREATE TABLE memory(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  t_s REAL NOT NULL,
  bytes INTEGER NOT NULL
) STRICT;
CREATE INDEX memory_by_run ON memory(run_id);
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  unit TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
) STRICT;
)sql",
    // 2: training steps and chunks in events; the writing process and the sweep point in runs.
    R"sql(
ALTER TABLE events ADD COLUMN step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN chunk INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN point_key TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_point ON runs(experiment_id, point_key);
)sql",
    // 3: the identity of the process that writes a run (process_owner.h), so a reused pid is not
    // taken for the run's process.
    R"sql(
ALTER TABLE runs ADD COLUMN owner_start TEXT NOT NULL DEFAULT '';
)sql",
    // 4: calibrations of a machine (`pipette calibrate`, engine/calibration.h) and their raw
    // points.
    R"sql(
CREATE TABLE calibrations(
  id INTEGER PRIMARY KEY,
  engine TEXT NOT NULL CHECK (engine IN ('sim', 'cpu', 'cuda')),
  host TEXT NOT NULL,
  created_at TEXT NOT NULL,
  version TEXT NOT NULL,
  ranks INTEGER NOT NULL CHECK (ranks >= 1),
  cores INTEGER NOT NULL CHECK (cores >= 1),
  p2p_alpha_s REAL NOT NULL,
  p2p_beta_s_per_byte REAL NOT NULL,
  allreduce_alpha_s REAL NOT NULL,
  allreduce_beta_s_per_byte REAL NOT NULL,
  instruction_overhead_s REAL NOT NULL,
  gemm_flops REAL NOT NULL,
  gemm_flops_alone REAL NOT NULL,
  memory_bytes REAL NOT NULL,
  memory_bandwidth REAL NOT NULL
) STRICT;
CREATE TABLE calibration_points(
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  what TEXT NOT NULL CHECK (what = 'p2p' OR what = 'allreduce'),
  ranks INTEGER NOT NULL,
  bytes INTEGER NOT NULL CHECK (bytes >= 0),
  seconds REAL NOT NULL
) STRICT;
CREATE INDEX calibration_points_by_calibration ON calibration_points(calibration_id);
)sql",
    // 5: the provenance of runs `pipette db merge` copied from another database (store/db_merge.h).
    R"sql(
CREATE TABLE merged_runs(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  source TEXT NOT NULL,
  source_run_id INTEGER NOT NULL,
  merged_at TEXT NOT NULL
) STRICT;
)sql",
    // 6: a metric may be SQL NULL: a loss that is not a number (a diverged run) is a result, not an
    // error (docs/metrics.md). SQLite cannot drop a NOT NULL constraint in place: the table is
    // rebuilt with its rowids, so every run's metrics keep their order.
    R"sql(
CREATE TABLE metrics_v6(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL,
  unit TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
) STRICT;
INSERT INTO metrics_v6(rowid, run_id, name, value, unit)
  SELECT rowid, run_id, name, value, unit FROM metrics ORDER BY rowid;
DROP TABLE metrics;
ALTER TABLE metrics_v6 RENAME TO metrics;
)sql",
    // 7: cost models fitted to measured runs (`pipette fit`, fidelity/cost_fit.h): the fit as one
    // JSON document (parameters, their status, the residual of every row), the runs it read.
    R"sql(
CREATE TABLE fits(
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL,
  host TEXT NOT NULL,
  version TEXT NOT NULL,
  engine TEXT NOT NULL,
  runs TEXT NOT NULL CHECK (json_valid(runs)),
  fit TEXT NOT NULL CHECK (json_valid(fit))
) STRICT;
)sql",
    // 8: a calibration's GEMM table (engine/gemm_table.h): one core's time per call of each shape
    // of a grid and pass (F, I, W: how the engine calls it), every rank running it at once.
    R"sql(
CREATE TABLE calibration_gemms(
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  m INTEGER NOT NULL CHECK (m >= 1),
  n INTEGER NOT NULL CHECK (n >= 1),
  k INTEGER NOT NULL CHECK (k >= 1),
  pass TEXT NOT NULL CHECK (pass IN ('F', 'I', 'W')),
  ranks INTEGER NOT NULL CHECK (ranks >= 1),
  seconds REAL NOT NULL CHECK (seconds > 0)
) STRICT;
CREATE INDEX calibration_gemms_by_calibration ON calibration_gemms(calibration_id);
)sql",
    // 9: runs measured by another framework and imported (`pipette import pytorch`, engine
    // 'pytorch'). SQLite cannot widen a CHECK in place: runs is rebuilt with its ids, its children
    // (events, memory, metrics, merged_runs) untouched (Migrate runs with foreign keys off and
    // checks them before it commits).
    R"sql(
CREATE TABLE runs_v9(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER REFERENCES experiments(id) ON DELETE CASCADE,
  engine TEXT NOT NULL CHECK (engine IN ('sim', 'cpu', 'cuda', 'pytorch')),
  config TEXT NOT NULL CHECK (json_valid(config)),
  version TEXT NOT NULL,
  git_rev TEXT NOT NULL,
  libraries TEXT NOT NULL,
  host TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'oom', 'failed')),
  error TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  point_key TEXT NOT NULL DEFAULT '',
  owner_start TEXT NOT NULL DEFAULT ''
) STRICT;
INSERT INTO runs_v9(id, experiment_id, engine, config, version, git_rev, libraries, host,
                    started_at, ended_at, status, error, pid, point_key, owner_start)
  SELECT id, experiment_id, engine, config, version, git_rev, libraries, host, started_at,
         ended_at, status, error, pid, point_key, owner_start FROM runs ORDER BY id;
DROP TABLE runs;
ALTER TABLE runs_v9 RENAME TO runs;
CREATE INDEX runs_by_point ON runs(experiment_id, point_key);
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

// A negative user_version: pipette never writes one, so the header is damaged (exit 1 in every
// command, like any corrupt database).
Status CorruptVersion(std::string_view path, int version) {
  return Status::IoError(
      fmt::format("{}not a pipette database: schema version {} (a damaged header)",
                  path.empty() ? std::string() : fmt::format("--db = '{}': ", path), version));
}

}  // namespace

int ExperimentDb::schema_version() const {
  Statement s(db_.get(), "PRAGMA user_version");
  return s.Step() == SQLITE_ROW ? static_cast<int>(s.Int(0)) : -1;
}

Status ExperimentDb::CheckReadableVersion(std::string_view path, int version) {
  if (version < 0) return CorruptVersion(path, version);
  if (version > kSchemaVersion) {
    return Status::FailedPrecondition(
        fmt::format("--db = '{}': the database has schema version {}, newer than this pipette's "
                    "{}: use a newer pipette or another --db",
                    path, version, kSchemaVersion));
  }
  if (version < kOldestReadableSchema) {
    return Status::FailedPrecondition(fmt::format(
        "--db = '{}': the database has schema version {}, older than this pipette reads ({}); "
        "`pipette runs --db {} --repair` migrates it (as does any command that records into it)",
        path, version, kOldestReadableSchema, path));
  }
  return Status::Ok();
}

Status ExperimentDb::RefuseForeign() {
  Statement s(db_.get(), fmt::format("SELECT (SELECT user_version FROM pragma_user_version), {}",
                                     internal::kOwnTablesSql));
  PIPETTE_RETURN_IF_ERROR(s.status("list the tables"));
  if (s.Step() != SQLITE_ROW) {
    return Status::IoError(fmt::format("list the tables: {}", sqlite3_errmsg(db_.get())));
  }
  if (s.Int(0) != 0 || s.Text(1).empty()) return Status::Ok();
  return Status::IoError(
      fmt::format("not a pipette database: it has tables ({}) and not pipette's (runs, events, "
                  "...); pipette records only into its own databases: give another --db",
                  s.Text(1)));
}

Status ExperimentDb::Migrate(int up_to_version) {
  // Under the write lock, so two processes opening a new file do not both create the tables.
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  int version = 0;
  {  // finalized before the migrations: a pending statement would lock the tables they drop
    Statement read(db_.get(), "PRAGMA user_version");
    if (read.Step() != SQLITE_ROW) {
      return Status::IoError(fmt::format("read the schema version: {}", sqlite3_errmsg(db_.get())));
    }
    version = static_cast<int>(read.Int(0));
  }
  if (version < 0) return CorruptVersion("", version);
  if (version > kSchemaVersion) {
    return Status::FailedPrecondition(
        fmt::format("the database has schema version {}, newer than this pipette's {}: use a newer "
                    "pipette or another --db",
                    version, kSchemaVersion));
  }
  for (int v = version; v < up_to_version; ++v) {
    Status s = db_.Exec(kMigrations[v]);
    if (!s.ok()) {
      return Status::IoError(fmt::format("migrating to schema {}: {}", v + 1, s.message()));
    }
    PIPETTE_RETURN_IF_ERROR(db_.Exec(fmt::format("PRAGMA user_version = {}", v + 1).c_str()));
  }
  if (version < up_to_version) {  // a rebuilt parent table must still hold every child's parent
    Statement check(db_.get(), "PRAGMA foreign_key_check");
    if (check.Step() == SQLITE_ROW) {
      return Status::IoError(
          fmt::format("migrating to schema {}: table {} has a row whose parent "
                      "is missing",
                      up_to_version, check.Text(0)));
    }
  }
  return tx.Commit();
}

}  // namespace pipette
