// The SQLite layer of the experiment store: a connection, prepared statements, write transactions,
// the busy handler every connection waits with, and the pieces of a read-only open (the immutable
// URI, the failures that mean the WAL files cannot be set up). ExperimentDb and MergeDatabases both
// sit on it; nothing else in src/ calls sqlite3_open, prepare or exec.
//
// Errors are IoError "WHAT: SQLite's message": a failed open, prepare, step, BEGIN or COMMIT alike.
// A prepare reads the schema from the file, so it fails on a corrupt, foreign or locked database
// as a step does; like every database fault it exits 1 (docs/reliability.md, "Exit codes").
//
// Ownership: a Connection owns its sqlite3 handle (move-only) and a Statement its sqlite3_stmt
// (non-copyable); a Statement or Transaction borrows a connection and must not outlive it. A
// connection and its statements are used by one thread at a time; WaitForLock and the lock-wait
// observer may be called from any thread.
//
// Example:
//   sqlite::Statement s(db, "SELECT id FROM runs WHERE status = ?");
//   PIPETTE_RETURN_IF_ERROR(s.status("list runs"));
//   s.Bind(1, "ok");
//   int rc;
//   while ((rc = s.Step()) == SQLITE_ROW) ids.push_back(s.Int(0));
//   PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list runs"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

struct sqlite3;
struct sqlite3_stmt;
struct sqlite3_value;

namespace pipette::sqlite {

// How long every connection waits in all for a lock another connection holds.
inline constexpr int kBusyTimeoutMs = 60'000;

// The busy handler of every connection (and the retry of what SQLite does not hand to it): sleeps
// 1 ms, 2 ms, ... up to 100 ms between tries; returns 1 to try again, 0 to give up (after
// kBusyTimeoutMs in all). `waits`: how many times this wait has slept so far.
int WaitForLock(void* unused, int waits);

// True for SQLITE_BUSY and its extended codes.
bool IsBusy(int rc);

// Tests: called each time a connection of this process waits for a lock another connection holds
// (`waits` as in WaitForLock), so a test can release a lock only once a writer provably waits on
// it. Setting PIPETTE_TEST_LOCK_WAIT_FILE=FILE makes a process append its pid to FILE at the start
// of each such wait, for tests across processes.
using LockWaitObserver = void (*)(int waits);
void SetLockWaitObserverForTesting(LockWaitObserver observer);

// An open database connection, closed by the destructor.
class Connection {
 public:
  Connection() = default;  // no connection
  // Opens `target` with sqlite3_open_v2 `flags` and, when that worked, installs WaitForLock as the
  // busy handler. A failed open keeps the handle SQLite made (if any) for its message: check
  // OpenStatus().
  static Connection Open(const std::string& target, int flags);
  // Opens `path` read-only (NOMUTEX); when `immutable`, through ImmutableUri (no locks, no -wal or
  // -shm files, no -wal read).
  static Connection OpenReadOnly(const std::string& path, bool immutable);

  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  sqlite3* get() const { return db_; }
  // The result code of the open; SQLITE_OK when it worked.
  int open_rc() const { return open_rc_; }
  // OK when the open worked; else IoError "`who`: cannot open: SQLite's message".
  Status OpenStatus(std::string_view who) const;
  // Runs `sql` (any number of statements, no rows wanted). IoError with SQLite's message.
  Status Exec(const char* sql) const;
  // PRAGMA journal_mode = WAL, retried on WaitForLock's schedule while another connection holds
  // the lock (SQLite answers this switch with SQLITE_BUSY at once instead of calling the busy
  // handler). IoError "set the WAL journal: ..." when it fails or the wait runs out.
  Status SwitchToWal() const;

 private:
  sqlite3* db_ = nullptr;
  int open_rc_ = 0;
};

// A prepared statement. Bind indexes start at 1, columns at 0. Bindings stay across Run() and
// steps: a reused statement binds every parameter again.
class Statement {
 public:
  // Prepares `sql` on `db`; a failure shows in status().
  Statement(sqlite3* db, std::string_view sql);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // OK when the statement was prepared; else IoError "`what`: SQLite's message".
  Status status(std::string_view what) const;

  Statement& Bind(int i, std::int64_t v);
  Statement& Bind(int i, int v) { return Bind(i, static_cast<std::int64_t>(v)); }
  Statement& Bind(int i, double v);
  Statement& Bind(int i, std::string_view v);  // copied
  // Binds text that outlives the statement's next step (no copy).
  Statement& BindStatic(int i, std::string_view v);
  Statement& BindNull(int i);
  // An id where 0 means none (NULL): a run outside any experiment.
  Statement& BindIdOrNull(int i, std::int64_t id) { return id > 0 ? Bind(i, id) : BindNull(i); }
  // A value read from another statement (copied), of whatever type it has.
  Statement& BindValue(int i, sqlite3_value* v);

  // One step: SQLITE_ROW, SQLITE_DONE or an error code.
  int Step();
  // Steps a statement that returns no rows, then resets it for reuse. IoError "`what`: ..." unless
  // it ended at SQLITE_DONE.
  Status Run(std::string_view what);
  // OK when a loop of steps ended at SQLITE_DONE (`rc`, the last step's code); else IoError
  // "`what`: ..." (a corrupt or locked file).
  Status Done(int rc, std::string_view what) const;

  std::int64_t Int(int c) const;
  double Real(int c) const;
  std::string Text(int c) const;  // "" for NULL
  bool IsNull(int c) const;
  // Column `c` as a value to bind elsewhere; valid until the next step.
  sqlite3_value* Value(int c) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = 0;
};

// A write transaction, rolled back by the destructor unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // BEGIN IMMEDIATE: takes the write lock now (waiting up to the busy timeout), so the transaction
  // never fails half-way on a lock held by another writer. IoError "begin transaction: ...".
  Status Begin();
  // IoError "commit: ..." (then the destructor rolls back).
  Status Commit();

 private:
  sqlite3* db_;
  bool open_ = false;
};

// The URI that opens `path` as immutable: absolute (so no part reads as an authority), every byte
// but [A-Za-z0-9/._~-] percent-encoded ('?', '#' and '%' must not reach the URI parser).
std::string ImmutableUri(const std::string& path);

// True for the failures of a read-only connection that cannot create or lock the -shm/-wal files
// of a WAL database (its directory is not writable); not for a hot journal (READONLY_ROLLBACK).
bool CannotSetUpWal(int rc);

// True when `path` exists and is not empty (or cannot be examined): a -wal with frames the main
// file lacks, or a hot -journal, which an immutable read would silently ignore.
bool HasContent(const std::string& path);

// True when this user cannot write `path` and no connection has it open (no -wal or -shm beside
// it) and it has no hot -journal: reading it immutable then misses nothing, and creates no -wal or
// -shm owned by this user (which would stop the owner's writes).
bool ReadImmutable(const std::string& path);

}  // namespace pipette::sqlite
