#include "pipette/store/experiment_db.h"

#include <fmt/core.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <utility>

#include "pipette/common/build_info.h"
#include "pipette/common/host_machine.h"
#include "pipette/store/process_owner.h"

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
};
static_assert(std::size(kMigrations) == kSchemaVersion);

RunRecord ReadRun(const Statement& s) {
  RunRecord r;
  r.id = s.Int(0);
  r.experiment_id = s.IsNull(1) ? 0 : s.Int(1);
  r.engine = s.Text(2);
  r.config = s.Text(3);
  r.version = s.Text(4);
  r.git_rev = s.Text(5);
  r.libraries = s.Text(6);
  r.host = s.Text(7);
  r.pid = s.Int(8);
  r.started_at = s.Text(9);
  r.ended_at = s.Text(10);
  r.status = s.Text(11);
  r.error = s.Text(12);
  return r;
}

constexpr const char* kRunColumns =
    "id, experiment_id, engine, config, version, git_rev, libraries, host, pid, started_at, "
    "ended_at, status, error";

// A run of a point or a `running` run, with the facts about its process.
struct RunningRun {
  std::int64_t id = 0;
  std::string status;
  OwnerFacts owner;
};

// A negative user_version: pipette never writes one, so the header is damaged (exit 1 in every
// command, like any corrupt database).
Status CorruptVersion(std::string_view path, int version) {
  return Status::IoError(
      fmt::format("{}not a pipette database: schema version {} (a damaged header)",
                  path.empty() ? std::string() : fmt::format("--db = '{}': ", path), version));
}

// The open and first read of a database for reading.
struct ReadProbe {
  int rc = SQLITE_OK;  // extended code of the failed open or read; SQLITE_OK when both worked
  Status status;       // IoError naming the path when rc is not SQLITE_OK
  int version = 0;     // PRAGMA user_version
  bool has_runs = false;
};

// Opens `path` read-only (immutable when `immutable`) into `*connection` and reads its schema
// version and whether it has a runs table.
ReadProbe OpenAndProbe(const std::string& path, bool immutable, sqlite::Connection* connection) {
  ReadProbe probe;
  *connection = sqlite::Connection::OpenReadOnly(path, immutable);
  probe.rc = connection->open_rc();
  if (probe.rc != SQLITE_OK) {
    probe.status = connection->OpenStatus(fmt::format("--db = '{}'", path));
    return probe;
  }
  sqlite3* db = connection->get();
  Statement s(db,
              "SELECT (SELECT user_version FROM pragma_user_version), "
              "(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'runs')");
  if (s.status("").ok() && s.Step() == SQLITE_ROW) {
    probe.version = static_cast<int>(s.Int(0));
    probe.has_runs = s.Int(1) > 0;
    return probe;
  }
  probe.rc = sqlite3_extended_errcode(db);
  const int primary = probe.rc & 0xff;
  // A file SQLite does not recognise is not a pipette database; any other failure is a read that
  // did not happen (permissions, locks, I/O), which says nothing about what the file is.
  const bool foreign = primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT;
  probe.status = Status::IoError(fmt::format("--db = '{}': {}: {}", path,
                                             foreign ? "not a pipette database" : "cannot read",
                                             sqlite3_errmsg(db)));
  return probe;
}

}  // namespace

Status CheckDatabasePath(std::string_view path) {
  if (path.empty()) {
    return Status::InvalidArgument(
        "--db = '': must name a database file (is a variable unset?), e.g. --db pipette.db");
  }
  if (path.back() == '/') {
    return Status::InvalidArgument(fmt::format(
        "--db = '{}': must name a database file, not a directory (drop the trailing '/')", path));
  }
  if (path == ":memory:" || path.rfind("file:", 0) == 0) {
    return Status::InvalidArgument(
        fmt::format("--db = '{}': must name a database file; an in-memory database or a 'file:' "
                    "URI records nowhere a later command can read (give a plain path, or --no-db)",
                    path));
  }
  return Status::Ok();
}

Result<ExperimentDb> ExperimentDb::Open(const std::string& path, int up_to_version) {
  PIPETTE_RETURN_IF_ERROR(CheckDatabasePath(path));
  ExperimentDb db(sqlite::Connection::Open(
      path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX));
  PIPETTE_RETURN_IF_ERROR(db.db_.OpenStatus(fmt::format("--db = '{}'", path)));
  Status s = db.db_.Exec("PRAGMA foreign_keys = ON");
  if (s.ok()) s = db.db_.SwitchToWal();
  if (s.ok()) s = db.db_.Exec("PRAGMA synchronous = NORMAL");
  if (!s.ok()) return Status::IoError(fmt::format("--db = '{}': {}", path, s.message()));
  Status migrated = db.Migrate(up_to_version);
  if (!migrated.ok()) {
    if (migrated.code() == StatusCode::kFailedPrecondition) return migrated;
    return Status::IoError(fmt::format("--db = '{}': {}", path, migrated.message()));
  }
  return db;
}

Result<ExperimentDb> ExperimentDb::OpenReadOnly(const std::string& path) {
  PIPETTE_RETURN_IF_ERROR(CheckDatabasePath(path));
  // Not ours to write and no connection open (no -wal/-shm): read it as immutable rather than
  // leave -wal/-shm files owned by this user, which would stop the owner's writes.
  const bool immutable = sqlite::ReadImmutable(path);
  sqlite::Connection connection;
  ReadProbe probe = OpenAndProbe(path, immutable, &connection);
  if (!immutable && sqlite::CannotSetUpWal(probe.rc) && !sqlite::HasContent(path + "-wal") &&
      !sqlite::HasContent(path + "-journal")) {
    // The directory is not writable (no -shm can be made): nothing uncheckpointed to miss.
    connection = sqlite::Connection();
    probe = OpenAndProbe(path, true, &connection);
  } else if (sqlite::CannotSetUpWal(probe.rc) && sqlite::HasContent(path + "-wal")) {
    return Status::IoError(fmt::format(
        "{} ('{}-wal' holds changes not yet in the database file, and this user cannot create the "
        "'-shm' file that reading them needs: read it as a user who can write its directory)",
        probe.status.message(), path));
  }
  PIPETTE_RETURN_IF_ERROR(probe.status);
  if (!probe.has_runs) {
    std::error_code error;
    const bool empty = std::filesystem::file_size(path, error) == 0 && !error;
    return Status::IoError(fmt::format("--db = '{}': not a pipette database ({})", path,
                                       empty ? "an empty file" : "it has no runs table"));
  }
  if (probe.version < 0) return CorruptVersion(path, probe.version);
  if (probe.version > kSchemaVersion) {
    return Status::FailedPrecondition(
        fmt::format("--db = '{}': the database has schema version {}, newer than this pipette's "
                    "{}: use a newer pipette or another --db",
                    path, probe.version, kSchemaVersion));
  }
  if (probe.version < kOldestReadableSchema) {
    return Status::FailedPrecondition(fmt::format(
        "--db = '{}': the database has schema version {}, older than this pipette reads ({}); "
        "`pipette runs --db {} --repair` migrates it (as does any command that records into it)",
        path, probe.version, kOldestReadableSchema, path));
  }
  return ExperimentDb(std::move(connection));
}

ExperimentDb::ExperimentDb(ExperimentDb&& other) noexcept = default;
ExperimentDb& ExperimentDb::operator=(ExperimentDb&& other) noexcept = default;
ExperimentDb::~ExperimentDb() = default;

int ExperimentDb::schema_version() const {
  Statement s(db_.get(), "PRAGMA user_version");
  return s.Step() == SQLITE_ROW ? static_cast<int>(s.Int(0)) : -1;
}

Status ExperimentDb::Migrate(int up_to_version) {
  // Under the write lock, so two processes opening a new file do not both create the tables.
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  Statement read(db_.get(), "PRAGMA user_version");
  if (read.Step() != SQLITE_ROW) {
    return Status::IoError(fmt::format("read the schema version: {}", sqlite3_errmsg(db_.get())));
  }
  const int version = static_cast<int>(read.Int(0));
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
  return tx.Commit();
}

Result<std::int64_t> ExperimentDb::EnsureExperiment(std::string_view name,
                                                    std::string_view description,
                                                    std::string_view spec) {
  Statement insert(db_.get(),
                   "INSERT INTO experiments(name, description, spec) VALUES (?, ?, ?) "
                   "ON CONFLICT(name) DO NOTHING");
  PIPETTE_RETURN_IF_ERROR(insert.status("insert experiment"));
  PIPETTE_RETURN_IF_ERROR(insert.Bind(1, name)
                              .Bind(2, description)
                              .Bind(3, spec)
                              .Run(fmt::format("experiment '{}'", name)));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::int64_t> id, FindExperiment(name));
  if (!id) return Status::Internal(fmt::format("experiment '{}' vanished", name));
  return *id;
}

Result<std::optional<std::int64_t>> ExperimentDb::FindExperiment(std::string_view name) {
  Statement s(db_.get(), "SELECT id FROM experiments WHERE name = ?");
  PIPETTE_RETURN_IF_ERROR(s.status("find experiment"));
  s.Bind(1, name);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return std::optional<std::int64_t>(s.Int(0));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "find experiment"));
  return std::optional<std::int64_t>();
}

Result<std::int64_t> ExperimentDb::BeginRun(RunRecord run, std::string_view point_key) {
  if (point_key.empty()) return InsertRun(std::move(run), point_key);
  PIPETTE_ASSIGN_OR_RETURN(PointClaim claim, ClaimPoint(std::move(run), point_key));
  if (claim.claimed) return claim.run_id;
  return Status::FailedPrecondition(
      fmt::format("--point-key = '{}': the point already has run {} ({})", point_key, claim.run_id,
                  claim.holder));
}

Result<std::int64_t> ExperimentDb::InsertRun(RunRecord run, std::string_view point_key) {
  if (run.host.empty()) run.host = HostName();
  if (run.pid == 0) run.pid = getpid();
  if (run.started_at.empty()) run.started_at = UtcNow();
  Statement s(db_.get(),
              "INSERT INTO runs(experiment_id, engine, config, version, git_rev, libraries, host, "
              "pid, started_at, status, point_key, owner_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "'running', ?, ?)");
  PIPETTE_RETURN_IF_ERROR(s.status("insert run"));
  s.BindIdOrNull(1, run.experiment_id);
  s.Bind(2, run.engine).Bind(3, run.config).Bind(4, run.version).Bind(5, run.git_rev);
  s.Bind(6, run.libraries).Bind(7, run.host).Bind(8, run.pid).Bind(9, run.started_at);
  s.Bind(10, point_key);
  s.Bind(11, run.host == HostName() ? ProcessStartId(run.pid) : std::string());
  PIPETTE_RETURN_IF_ERROR(s.Run("insert run"));
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<PointClaim> ExperimentDb::ClaimPoint(RunRecord run, std::string_view point_key) {
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  std::vector<RunningRun> stale;
  {
    // Finished runs first: a point with one is done whatever else it has.
    Statement s(db_.get(),
                "SELECT id, status, host, pid, owner_start, started_at FROM runs WHERE "
                "experiment_id IS ? AND point_key = ? AND status IN ('running', 'ok', 'oom') "
                "ORDER BY status = 'running', id");
    PIPETTE_RETURN_IF_ERROR(s.status("claim point"));
    s.BindIdOrNull(1, run.experiment_id).Bind(2, point_key);
    const std::string here = HostName();
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      RunningRun r{s.Int(0), s.Text(1), {s.Text(2), s.Int(3), s.Text(4), s.Text(5)}};
      if (r.status != kRunRunning || CheckOwner(r.owner, here) != OwnerState::kDead) {
        return PointClaim{false, r.id, r.status};
      }
      stale.push_back(std::move(r));
    }
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "claim point"));
  }
  for (const RunningRun& r : stale) {
    PIPETTE_RETURN_IF_ERROR(FailStale(r.id, r.owner, "pipette claiming its point"));
  }
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t id, InsertRun(std::move(run), point_key));
  PIPETTE_RETURN_IF_ERROR(tx.Commit());
  return PointClaim{true, id, ""};
}

Status ExperimentDb::FailStale(std::int64_t run_id, const OwnerFacts& owner, std::string_view by) {
  return FailRun(run_id, fmt::format("stale: process {} on {} ended without finishing the run "
                                     "(marked by {} at {})",
                                     owner.pid, owner.host, by, UtcNow()));
}

Status ExperimentDb::FinishRun(std::int64_t run_id, const RunData& data, std::string_view status,
                               std::string_view error) {
  if (status != kRunOk && status != kRunOom && status != kRunFailed) {
    return Status::Internal(fmt::format("run {}: final status '{}'", run_id, status));
  }
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  {
    Statement check(db_.get(), "SELECT status FROM runs WHERE id = ?");
    PIPETTE_RETURN_IF_ERROR(check.status("find run"));
    check.Bind(1, run_id);
    if (check.Step() != SQLITE_ROW)
      return Status::NotFound(fmt::format("run {}: no such run", run_id));
    if (check.Text(0) != kRunRunning) {
      return Status::FailedPrecondition(
          fmt::format("run {}: already finished with status '{}'", run_id, check.Text(0)));
    }
  }
  Statement event(
      db_.get(),
      "INSERT INTO events(run_id, rank, step, instr_id, kind, stage, chunk, microbatch, "
      "start_s, end_s, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(event.status("insert event"));
  const char* kill_at = std::getenv("PIPETTE_FAULT_KILL_DURING_WRITE");  // tests: die mid-write
  const std::size_t kill_after = kill_at ? std::strtoull(kill_at, nullptr, 10) : 0;
  for (std::size_t k = 0; k < data.events.size(); ++k) {
    if (kill_at != nullptr && k == kill_after) raise(SIGKILL);
    const EventRow& e = data.events[k];
    event.Bind(1, run_id).Bind(2, e.rank).Bind(3, e.step).Bind(4, e.instr_id);
    event.BindStatic(5, EventKindName(e.kind))
        .Bind(6, e.stage)
        .Bind(7, e.chunk)
        .Bind(8, e.microbatch);
    event.Bind(9, e.start_s).Bind(10, e.end_s).Bind(11, e.bytes);
    PIPETTE_RETURN_IF_ERROR(event.Run("insert event"));
  }
  Statement memory(db_.get(), "INSERT INTO memory(run_id, rank, t_s, bytes) VALUES (?, ?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(memory.status("insert memory"));
  for (const MemoryRow& m : data.memory) {
    memory.Bind(1, run_id).Bind(2, m.rank).Bind(3, m.t_s).Bind(
        4, static_cast<std::int64_t>(std::llround(m.bytes)));
    PIPETTE_RETURN_IF_ERROR(memory.Run("insert memory"));
  }
  Statement metric(db_.get(), "INSERT INTO metrics(run_id, name, value, unit) VALUES (?, ?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(metric.status("insert metric"));
  for (const MetricRow& m : data.metrics) {
    metric.Bind(1, run_id).Bind(2, m.name).Bind(3, m.value).Bind(4, m.unit);
    PIPETTE_RETURN_IF_ERROR(metric.Run(fmt::format("metric '{}'", m.name)));
  }
  Statement finish(db_.get(), "UPDATE runs SET status = ?, error = ?, ended_at = ? WHERE id = ?");
  PIPETTE_RETURN_IF_ERROR(finish.status("finish run"));
  finish.Bind(1, status).Bind(2, error).Bind(3, UtcNow()).Bind(4, run_id);
  PIPETTE_RETURN_IF_ERROR(finish.Run("finish run"));
  return tx.Commit();
}

Status ExperimentDb::FailRun(std::int64_t run_id, std::string_view error) {
  Statement s(db_.get(),
              "UPDATE runs SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND status "
              "= 'running'");
  PIPETTE_RETURN_IF_ERROR(s.status("fail run"));
  return s.Bind(1, error).Bind(2, UtcNow()).Bind(3, run_id).Run("fail run");
}

Result<RunData> ExperimentDb::LoadRun(std::int64_t run_id, bool with_events) {
  RunData data;
  {
    Statement s(db_.get(), fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
    PIPETTE_RETURN_IF_ERROR(s.status("load run"));
    s.Bind(1, run_id);
    const int rc = s.Step();
    if (rc != SQLITE_ROW) {
      PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load run"));
      return Status::NotFound(fmt::format("--run = {}: no such run in this database", run_id));
    }
    data.run = ReadRun(s);
  }
  if (with_events) {
    Statement s(
        db_.get(),
        "SELECT rank, step, instr_id, kind, stage, chunk, microbatch, start_s, end_s, bytes "
        "FROM events WHERE run_id = ? ORDER BY rowid");
    PIPETTE_RETURN_IF_ERROR(s.status("load events"));
    s.Bind(1, run_id);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      EventRow e;
      e.rank = static_cast<int>(s.Int(0));
      e.step = static_cast<int>(s.Int(1));
      e.instr_id = static_cast<int>(s.Int(2));
      PIPETTE_ASSIGN_OR_RETURN(e.kind, ParseEventKind(s.Text(3)));
      e.stage = static_cast<int>(s.Int(4));
      e.chunk = static_cast<int>(s.Int(5));
      e.microbatch = static_cast<int>(s.Int(6));
      e.start_s = s.Real(7);
      e.end_s = s.Real(8);
      e.bytes = s.Int(9);
      data.events.push_back(e);
    }
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load events"));
  }
  {
    Statement s(db_.get(), "SELECT rank, t_s, bytes FROM memory WHERE run_id = ? ORDER BY rowid");
    PIPETTE_RETURN_IF_ERROR(s.status("load memory"));
    s.Bind(1, run_id);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      data.memory.push_back({static_cast<int>(s.Int(0)), s.Real(1), static_cast<double>(s.Int(2))});
    }
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load memory"));
  }
  {
    Statement s(db_.get(), "SELECT name, value, unit FROM metrics WHERE run_id = ? ORDER BY rowid");
    PIPETTE_RETURN_IF_ERROR(s.status("load metrics"));
    s.Bind(1, run_id);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) data.metrics.push_back({s.Text(0), s.Real(1), s.Text(2)});
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load metrics"));
  }
  return data;
}

Result<std::vector<RunRecord>> ExperimentDb::ListRuns(const RunFilter& filter) {
  std::string sql = fmt::format("SELECT {} FROM runs WHERE 1", kRunColumns);
  if (filter.experiment_id) sql += " AND experiment_id = ?1";
  if (filter.status) sql += " AND status = ?2";
  sql += " ORDER BY id";
  Statement s(db_.get(), sql);
  PIPETTE_RETURN_IF_ERROR(s.status("list runs"));
  if (filter.experiment_id) s.Bind(1, *filter.experiment_id);
  if (filter.status) s.Bind(2, *filter.status);
  std::vector<RunRecord> runs;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) runs.push_back(ReadRun(s));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list runs"));
  return runs;
}

Result<std::optional<std::int64_t>> ExperimentDb::FindFinishedRun(std::int64_t experiment_id,
                                                                  std::string_view point_key) {
  Statement s(db_.get(),
              "SELECT id FROM runs WHERE experiment_id = ? AND point_key = ? AND status IN "
              "('ok', 'oom') ORDER BY id LIMIT 1");
  PIPETTE_RETURN_IF_ERROR(s.status("find run"));
  s.Bind(1, experiment_id).Bind(2, point_key);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return std::optional<std::int64_t>(s.Int(0));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "find run"));
  return std::optional<std::int64_t>();
}

Result<int> ExperimentDb::RepairStale(bool all_hosts) {
  std::vector<RunningRun> running;
  {
    Statement s(db_.get(),
                "SELECT id, host, pid, owner_start, started_at FROM runs WHERE status = 'running' "
                "ORDER BY id");
    PIPETTE_RETURN_IF_ERROR(s.status("list running runs"));
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      running.push_back({s.Int(0), "running", {s.Text(1), s.Int(2), s.Text(3), s.Text(4)}});
    }
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list running runs"));
  }
  const std::string host = HostName();
  int repaired = 0;
  for (const RunningRun& run : running) {
    const OwnerState state = CheckOwner(run.owner, host);
    if (state == OwnerState::kAlive || (state == OwnerState::kElsewhere && !all_hosts)) continue;
    PIPETTE_RETURN_IF_ERROR(FailStale(run.id, run.owner, "pipette runs --repair"));
    ++repaired;
  }
  return repaired;
}

// ---- calibrations ----

namespace {

constexpr const char* kCalibrationColumns =
    "id, engine, host, created_at, version, ranks, cores, p2p_alpha_s, p2p_beta_s_per_byte, "
    "allreduce_alpha_s, allreduce_beta_s_per_byte, instruction_overhead_s, gemm_flops, "
    "gemm_flops_alone, memory_bytes, memory_bandwidth";

Calibration ReadCalibration(const Statement& s) {
  Calibration c;
  c.id = s.Int(0);
  c.engine = s.Text(1);
  c.host = s.Text(2);
  c.created_at = s.Text(3);
  c.version = s.Text(4);
  c.ranks = static_cast<int>(s.Int(5));
  c.cores = static_cast<int>(s.Int(6));
  c.p2p = {s.Real(7), s.Real(8)};
  c.allreduce = {s.Real(9), s.Real(10)};
  c.instruction_overhead_s = s.Real(11);
  c.gemm_flops = s.Real(12);
  c.gemm_flops_alone = s.Real(13);
  c.memory_bytes = s.Real(14);
  c.memory_bandwidth = s.Real(15);
  return c;
}

}  // namespace

Result<std::int64_t> ExperimentDb::RecordCalibration(const Calibration& c) {
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  Statement s(db_.get(),
              fmt::format("INSERT INTO calibrations({}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, "
                          "?, ?, ?, ?, ?, ?, ?)",
                          kCalibrationColumns));
  PIPETTE_RETURN_IF_ERROR(s.status("insert calibration"));
  s.Bind(1, c.engine).Bind(2, c.host.empty() ? HostName() : c.host);
  s.Bind(3, c.created_at.empty() ? UtcNow() : c.created_at);
  s.Bind(4, c.version.empty() ? std::string(Version()) : c.version);
  s.Bind(5, c.ranks).Bind(6, c.cores).Bind(7, c.p2p.alpha).Bind(8, c.p2p.beta);
  s.Bind(9, c.allreduce.alpha).Bind(10, c.allreduce.beta).Bind(11, c.instruction_overhead_s);
  s.Bind(12, c.gemm_flops).Bind(13, c.gemm_flops_alone).Bind(14, c.memory_bytes);
  s.Bind(15, c.memory_bandwidth);
  PIPETTE_RETURN_IF_ERROR(s.Run("insert calibration"));
  const std::int64_t id = sqlite3_last_insert_rowid(db_.get());
  Statement point(db_.get(),
                  "INSERT INTO calibration_points(calibration_id, what, ranks, bytes, seconds) "
                  "VALUES (?, ?, ?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(point.status("insert calibration point"));
  for (const CalibrationPoint& p : c.points) {
    point.Bind(1, id).Bind(2, p.what).Bind(3, p.ranks).Bind(4, p.bytes).Bind(5, p.seconds);
    PIPETTE_RETURN_IF_ERROR(point.Run(fmt::format("calibration point {} {} B", p.what, p.bytes)));
  }
  PIPETTE_RETURN_IF_ERROR(tx.Commit());
  return id;
}

Result<Calibration> ExperimentDb::LoadCalibration(std::int64_t id) {
  if (schema_version() < 4) {
    return Status::NotFound(
        fmt::format("calibration {}: this database has no calibrations (schema {}; run "
                    "`pipette calibrate --db FILE` to make one)",
                    id, schema_version()));
  }
  Calibration c;
  {
    Statement s(db_.get(),
                fmt::format("SELECT {} FROM calibrations WHERE id = ?", kCalibrationColumns));
    PIPETTE_RETURN_IF_ERROR(s.status("load calibration"));
    s.Bind(1, id);
    const int rc = s.Step();
    if (rc != SQLITE_ROW) {
      PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load calibration"));
      return Status::NotFound(fmt::format(
          "calibration {}: no such calibration in this database (pipette calibrations lists "
          "them)",
          id));
    }
    c = ReadCalibration(s);
  }
  Statement s(db_.get(),
              "SELECT what, ranks, bytes, seconds FROM calibration_points WHERE calibration_id = ? "
              "ORDER BY rowid");
  PIPETTE_RETURN_IF_ERROR(s.status("load calibration points"));
  s.Bind(1, id);
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    c.points.push_back({s.Text(0), static_cast<int>(s.Int(1)), s.Int(2), s.Real(3)});
  }
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load calibration points"));
  return c;
}

Result<std::vector<Calibration>> ExperimentDb::ListCalibrations() {
  std::vector<Calibration> out;
  if (schema_version() < 4) return out;  // read-only reads of an older database: none yet
  Statement s(db_.get(),
              fmt::format("SELECT {} FROM calibrations ORDER BY id", kCalibrationColumns));
  PIPETTE_RETURN_IF_ERROR(s.status("list calibrations"));
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(ReadCalibration(s));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list calibrations"));
  return out;
}

}  // namespace pipette
