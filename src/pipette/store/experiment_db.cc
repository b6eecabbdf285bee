// ExperimentDb, opening: read-write (created and migrated) or read-only; and experiments.
#include "pipette/store/experiment_db.h"

#include <fmt/core.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <utility>

#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Statement;

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
  // A database made under the name of another's -wal, -shm or -journal file is consumed (and that
  // database's changes lost) the next time the other is opened.
  for (const std::string_view companion : {"-wal", "-shm", "-journal"}) {
    if (!path.ends_with(companion)) continue;
    const std::string_view owner = path.substr(0, path.size() - companion.size());
    return Status::InvalidArgument(fmt::format(
        "--db = '{}': names the {} file SQLite keeps beside database '{}', which it would take "
        "as its own and destroy; give the database's own name",
        path, companion.substr(1), owner));
  }
  // A device, FIFO, socket or directory holds no database (and opening a FIFO would block).
  std::error_code error;
  const std::filesystem::file_status st = std::filesystem::status(std::string(path), error);
  if (!error && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return Status::InvalidArgument(
        fmt::format("--db = '{}': must name a regular file (or a new path), not a {}", path,
                    std::filesystem::is_directory(st)        ? "directory"
                    : std::filesystem::is_fifo(st)           ? "FIFO"
                    : std::filesystem::is_socket(st)         ? "socket"
                    : std::filesystem::is_character_file(st) ? "character device"
                    : std::filesystem::is_block_file(st)     ? "block device"
                                                             : "file of another kind"));
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
  PIPETTE_RETURN_IF_ERROR(CheckReadableVersion(path, probe.version));
  return ExperimentDb(std::move(connection));
}

ExperimentDb::ExperimentDb(ExperimentDb&& other) noexcept = default;
ExperimentDb& ExperimentDb::operator=(ExperimentDb&& other) noexcept = default;
ExperimentDb::~ExperimentDb() = default;

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

}  // namespace pipette
