#include "pipette/store/sqlite.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <utility>

namespace pipette::sqlite {
namespace {

// SQLite's message for the last failure on `db`, with the system's reason when an I/O call failed
// ("disk I/O error (File too large)" under `ulimit -f`; "(No space left on device)").
std::string ErrorOf(sqlite3* db) {
  std::string message = sqlite3_errmsg(db);
  if (const int system = sqlite3_system_errno(db);
      system != 0 && (sqlite3_errcode(db) == SQLITE_IOERR || sqlite3_errcode(db) == SQLITE_FULL ||
                      sqlite3_errcode(db) == SQLITE_CANTOPEN)) {
    message += fmt::format(" ({})", std::strerror(system));
  }
  return message;
}

std::atomic<LockWaitObserver> lock_wait_observer{nullptr};

// Tells the test hooks that this process waits for a lock (SetLockWaitObserverForTesting).
void NoteLockWait(int waits) {
  if (LockWaitObserver observer = lock_wait_observer.load()) observer(waits);
  const char* file = waits == 0 ? std::getenv("PIPETTE_TEST_LOCK_WAIT_FILE") : nullptr;
  if (file == nullptr) return;
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = fmt::format("{}\n", getpid());
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

bool AnyFileExists(std::initializer_list<std::string> paths) {
  std::error_code error;
  for (const std::string& p : paths) {
    if (std::filesystem::exists(p, error) || error) return true;  // unknown counts as present
  }
  return false;
}

}  // namespace

int WaitForLock(void*, int waits) {
  static constexpr int kDelaysMs[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
  constexpr int kSteps = static_cast<int>(std::size(kDelaysMs));
  long long slept = 0;
  for (int k = 0; k < std::min(waits, kSteps); ++k) slept += kDelaysMs[k];
  if (waits > kSteps) slept += 100LL * (waits - kSteps);
  if (slept >= kBusyTimeoutMs) return 0;
  NoteLockWait(waits);
  sqlite3_sleep(waits < kSteps ? kDelaysMs[waits] : 100);
  return 1;
}

bool IsBusy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

void SetLockWaitObserverForTesting(LockWaitObserver observer) {
  lock_wait_observer.store(observer);
}

// ---- Connection ----

Connection Connection::Open(const std::string& target, int flags) {
  Connection connection;
  connection.open_rc_ = sqlite3_open_v2(target.c_str(), &connection.db_, flags, nullptr);
  if (connection.open_rc_ == SQLITE_OK) sqlite3_busy_handler(connection.db_, WaitForLock, nullptr);
  return connection;
}

Connection Connection::OpenReadOnly(const std::string& path, bool immutable) {
  const std::string target = immutable ? ImmutableUri(path) : path;
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0);
  return Open(target, flags);
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), open_rc_(std::exchange(other.open_rc_, SQLITE_OK)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    open_rc_ = std::exchange(other.open_rc_, SQLITE_OK);
  }
  return *this;
}

Connection::~Connection() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status Connection::OpenStatus(std::string_view who) const {
  if (open_rc_ == SQLITE_OK) return Status::Ok();
  return Status::IoError(fmt::format("{}: cannot open: {}", who,
                                     db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(open_rc_)));
}

Status Connection::Exec(const char* sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error != nullptr ? error : ErrorOf(db_);
    sqlite3_free(error);
    return Status::IoError(message);
  }
  return Status::Ok();
}

Status Connection::SwitchToWal() const {
  // Holds no lock between tries: the statement is finalized before each wait.
  for (int waits = 0;; ++waits) {
    int rc = SQLITE_OK;
    {
      Statement s(db_, "PRAGMA journal_mode = WAL");
      rc = s.status("").ok() ? s.Step() : sqlite3_errcode(db_);
      if (rc == SQLITE_ROW || rc == SQLITE_DONE) return Status::Ok();
    }
    if (!IsBusy(rc) || WaitForLock(nullptr, waits) == 0) {
      return Status::IoError(fmt::format("set the WAL journal: {}", sqlite3_errstr(rc)));
    }
  }
}

// ---- Statement ----

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Status Statement::status(std::string_view what) const {
  if (rc_ == SQLITE_OK) return Status::Ok();
  return Status::IoError(fmt::format("{}: {}", what, ErrorOf(db_)));
}

Statement& Statement::Bind(int i, std::int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Statement& Statement::Bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}

Statement& Statement::Bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindStatic(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  return *this;
}

Statement& Statement::BindNull(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Statement& Statement::BindValue(int i, sqlite3_value* v) {
  sqlite3_bind_value(stmt_, i, v);
  return *this;
}

int Statement::Step() { return sqlite3_step(stmt_); }

Status Statement::Run(std::string_view what) {
  const int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  return Done(rc, what);
}

Status Statement::Done(int rc, std::string_view what) const {
  if (rc == SQLITE_DONE) return Status::Ok();
  return Status::IoError(fmt::format("{}: {}", what, ErrorOf(db_)));
}

std::int64_t Statement::Int(int c) const { return sqlite3_column_int64(stmt_, c); }

double Statement::Real(int c) const { return sqlite3_column_double(stmt_, c); }

std::string Statement::Text(int c) const {
  const unsigned char* t = sqlite3_column_text(stmt_, c);
  return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
}

bool Statement::IsNull(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }

sqlite3_value* Statement::Value(int c) const { return sqlite3_column_value(stmt_, c); }

// ---- Transaction ----

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Status Transaction::Begin() {
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Status::IoError(fmt::format("begin transaction: {}", ErrorOf(db_)));
  }
  open_ = true;
  return Status::Ok();
}

Status Transaction::Commit() {
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Status::IoError(fmt::format("commit: {}", ErrorOf(db_)));
  }
  open_ = false;
  return Status::Ok();
}

// ---- read-only opens ----

std::string ImmutableUri(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  const std::string target = error ? path : absolute.string();
  std::string uri = target.starts_with('/') ? "file://" : "file:";
  for (const unsigned char c : target) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '/' || c == '.' || c == '_' || c == '~' || c == '-';
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return uri + "?immutable=1";
}

bool CannotSetUpWal(int rc) {
  if (rc == SQLITE_READONLY_ROLLBACK) return false;
  return (rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN;
}

bool HasContent(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) return false;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  return error || size > 0;
}

bool ReadImmutable(const std::string& path) {
  const bool writable = ::access(path.c_str(), W_OK) == 0;
  return !writable && !AnyFileExists({path + "-wal", path + "-shm"}) &&
         !HasContent(path + "-journal");
}

}  // namespace pipette::sqlite
