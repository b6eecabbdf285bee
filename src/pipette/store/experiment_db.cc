// ExperimentDb, opening: read-write (created and migrated) or read-only; and experiments.
#include "pipette/store/experiment_db.h"

#include <fmt/core.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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
  std::string tables;  // the file's tables (not SQLite's own), comma-separated; "" for none
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
  Statement s(db, fmt::format("SELECT (SELECT user_version FROM pragma_user_version), "
                              "(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name "
                              "= 'runs'), {}",
                              internal::kOwnTablesSql));
  if (s.status("").ok() && s.Step() == SQLITE_ROW) {
    probe.version = static_cast<int>(s.Int(0));
    probe.has_runs = s.Int(1) > 0;
    probe.tables = s.Text(2);
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

// IoError for a database with tables that are not pipette's (naming them): pipette neither reads
// nor records into someone else's database.
Status NotPipettes(std::string_view path, std::string_view tables) {
  return Status::IoError(
      fmt::format("--db = '{}': not a pipette database: it has tables ({}) and not pipette's "
                  "(runs, events, ...); give another --db",
                  path, tables));
}

// Removes the ".NAME.creating-PID" files (and their -wal, -shm, -journal) beside `target` of
// creators that no longer run (killed while building; this process's own pid included), so no
// kill leaves them behind for long.
void RemoveAbandonedAsides(const std::filesystem::path& target) {
  const std::string prefix = "." + target.filename().string() + ".creating-";
  std::error_code error;
  const std::filesystem::path dir = target.parent_path().empty() ? "." : target.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const pid_t pid = static_cast<pid_t>(std::atol(rest.c_str()));
    const bool gone = pid == getpid() || (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH);
    if (gone) std::filesystem::remove(entry.path(), error);
  }
}

// Files up to this size are checked (PRAGMA quick_check) each time a command opens them to write:
// about 0.1 s at the limit on one core (0.28 s for 43 MB). Larger ones are checked by `pipette runs
// --check`.
constexpr std::uintmax_t kQuickCheckMaxBytes = 16u << 20;

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
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) {
    PIPETTE_RETURN_IF_ERROR(CreateAside(path, up_to_version));
  }
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenInPlace(path, up_to_version));
  PIPETTE_RETURN_IF_ERROR(db.QuickCheck(path));
  return db;
}

Status ExperimentDb::CreateAside(const std::string& path, int up_to_version) {
  const std::filesystem::path target(path);
  const std::string aside =
      (target.parent_path() / fmt::format(".{}.creating-{}", target.filename().string(), getpid()))
          .string();
  auto remove_aside = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code ignored;
      std::filesystem::remove(aside + suffix, ignored);
    }
  };
  RemoveAbandonedAsides(target);
  {
    Result<ExperimentDb> built = OpenInPlace(aside, up_to_version);
    if (!built.ok()) {
      remove_aside();
      // The message names the aside file: name the database instead.
      std::string why(built.status().message());
      if (const std::string prefix = fmt::format("--db = '{}': ", aside); why.starts_with(prefix)) {
        why.erase(0, prefix.size());
      }
      return Status::FromCode(
          built.status().code(),
          fmt::format("--db = '{}': cannot create the database: {}", path, why));
    }
  }  // its only connection closed: the WAL is checkpointed into the file and removed
  // Tests: die where a kill leaves the most behind, after the build and before the link.
  if (std::getenv("PIPETTE_FAULT_KILL_BEFORE_LINK") != nullptr) raise(SIGKILL);
  const int linked = link(aside.c_str(), path.c_str()) == 0 ? 0 : errno;
  remove_aside();
  // EEXIST: another process created `path` first; its complete database is used. A file system
  // without hard links: the database is created in place (the schema in its first transaction).
  if (linked == 0 || linked == EEXIST || linked == EPERM || linked == EOPNOTSUPP ||
      linked == EMLINK || linked == EXDEV) {
    return Status::Ok();
  }
  return Status::IoError(
      fmt::format("--db = '{}': cannot create the database: {}", path, std::strerror(linked)));
}

Status ExperimentDb::QuickCheck(std::string_view path) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(std::string(path), error);
  if (error || bytes > kQuickCheckMaxBytes) return Status::Ok();
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<std::string> damage, CheckIntegrity(/*quick=*/true));
  if (damage.empty()) return Status::Ok();
  return Status::IoError(fmt::format(
      "--db = '{}': the database is damaged (PRAGMA quick_check: {}{}); nothing was written: "
      "`pipette runs --db {} --check` lists the damage (copy out what reads, then give a new --db)",
      path, damage.front(),
      damage.size() > 1 ? fmt::format(", and {} more", damage.size() - 1) : "", path));
}

Result<std::vector<std::string>> ExperimentDb::CheckIntegrity(bool quick) {
  Statement s(db_.get(), quick ? "PRAGMA quick_check(100)" : "PRAGMA integrity_check(100)");
  PIPETTE_RETURN_IF_ERROR(s.status("check the database's integrity"));
  std::vector<std::string> damage;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    if (std::string line = s.Text(0); line != "ok") damage.push_back(std::move(line));
  }
  // A check that cannot even read the pages found damage too; any other failure (a lock, I/O) is
  // an error, which says nothing about the pages.
  if (const int primary = rc & 0xff; primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    damage.push_back(sqlite3_errmsg(db_.get()));
    return damage;
  }
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "check the database's integrity"));
  return damage;
}

Result<ExperimentDb> ExperimentDb::OpenInPlace(const std::string& path, int up_to_version) {
  ExperimentDb db(sqlite::Connection::Open(
      path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX));
  PIPETTE_RETURN_IF_ERROR(db.db_.OpenStatus(fmt::format("--db = '{}'", path)));
  Status s = db.RefuseForeign();  // before the first write: someone else's file stays as it was
  if (s.ok()) s = db.db_.Exec("PRAGMA foreign_keys = OFF");
  if (s.ok()) s = db.db_.SwitchToWal();
  if (s.ok()) s = db.db_.Exec("PRAGMA synchronous = NORMAL");
  if (!s.ok()) return Status::IoError(fmt::format("--db = '{}': {}", path, s.message()));
  // Migrated with foreign keys off (a migration may rebuild a parent table; SQLite cannot switch
  // them inside the migration's transaction), then on for everything after.
  Status migrated = db.Migrate(up_to_version);
  if (!migrated.ok()) {
    if (migrated.code() == StatusCode::kFailedPrecondition) return migrated;
    return Status::IoError(fmt::format("--db = '{}': {}", path, migrated.message()));
  }
  s = db.db_.Exec("PRAGMA foreign_keys = ON");
  if (!s.ok()) return Status::IoError(fmt::format("--db = '{}': {}", path, s.message()));
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
  if (!probe.has_runs && probe.tables.empty() && probe.version == 0) {
    // An empty file, or one with no tables (a creator killed before its schema): an empty pipette
    // database for readers as for writers, which create the schema in it. Read as one in memory.
    ExperimentDb empty(sqlite::Connection::Open(":memory:", SQLITE_OPEN_READWRITE));
    PIPETTE_RETURN_IF_ERROR(empty.db_.OpenStatus("an empty database"));
    PIPETTE_RETURN_IF_ERROR(empty.Migrate(kSchemaVersion));
    empty.empty_file_ = true;
    return empty;
  }
  if (!probe.has_runs) return NotPipettes(path, probe.tables);
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

Result<std::vector<ExperimentInfo>> ExperimentDb::ListExperiments() {
  Statement s(db_.get(), "SELECT id, name, description, spec FROM experiments ORDER BY id");
  PIPETTE_RETURN_IF_ERROR(s.status("list experiments"));
  std::vector<ExperimentInfo> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back({s.Int(0), s.Text(1), s.Text(2), s.Text(3)});
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list experiments"));
  return out;
}

}  // namespace pipette
