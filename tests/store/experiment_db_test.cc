// The experiment database: schema creation and migration, round trips of run rows, the run
// lifecycle (running -> ok/oom/failed, never finished twice), stale-run repair (zombies, reused
// pids) and run lookup; opening that waits for a writer holding the lock (forced interleaving);
// read-only opening; claiming sweep points across connections.
#include "pipette/store/experiment_db.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

namespace pipette {
namespace {

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "pipette_store_" + std::to_string(getpid()) + "_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

// Runs `sql` on `path` with a plain connection, returning the first column of the first row.
std::string Query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  std::string out;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

RunRecord SimRun() {
  RunRecord r;
  r.engine = "sim";
  r.config = R"({"schedule":"1f1b","pp":2,"m":2})";
  r.version = "0.1.0";
  r.git_rev = "abc";
  r.libraries = "{}";
  return r;
}

RunData SomeRows() {
  RunData d;
  d.events = {{0, 0, 0, EventKind::kF, 0, 0, 0, 0.0, 1.0, 0},
              {0, 0, 1, EventKind::kSendF, 0, 0, 0, 1.0, 1.0, 4096},
              {1, 0, 0, EventKind::kRecvF, 1, 0, 0, 0.0, 1.5, 4096},
              {1, 1, 2, EventKind::kI, 1, 1, 3, 2.0, 3.25, 0},
              {1, 0, -1, EventKind::kAllReduce, -1, 0, -1, 4.0, 5.0, 1 << 20}};
  d.memory = {{0, 0.0, 100}, {0, 0.5, 150}, {1, 0.0, 90}};
  d.metrics = {{"step_time_s", 5.0, "s"}, {"peak_memory_bytes[0]", 150, "B"}};
  return d;
}

TEST(ExperimentDb, CreatesTheSchemaWithStrictTablesWalAndForeignKeys) {
  const std::string path = FreshPath("create");
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  EXPECT_EQ(Query(path, "PRAGMA journal_mode"), "wal");
  for (const char* table : {"experiments", "runs", "events", "memory", "metrics"}) {
    const std::string sql =
        Query(path, std::string("SELECT sql FROM sqlite_schema WHERE name = '") + table + "'");
    EXPECT_NE(sql.find("STRICT"), std::string::npos) << table << ": " << sql;
  }
  // The CHECK constraints hold: an unknown engine is refused.
  RunRecord bad = SimRun();
  bad.engine = "tpu";
  EXPECT_FALSE(db->BeginRun(bad).ok());
  // Foreign keys hold: a run of an unknown experiment is refused.
  RunRecord orphan = SimRun();
  orphan.experiment_id = 999;
  EXPECT_FALSE(db->BeginRun(orphan).ok());
}

TEST(ExperimentDb, MigratesAVersionOneDatabaseKeepingItsRows) {
  const std::string path = FreshPath("migrate");
  {
    Result<ExperimentDb> v1 = ExperimentDb::Open(path, 1);
    ASSERT_TRUE(v1.ok()) << v1.status().message();
    EXPECT_EQ(v1->schema_version(), 1);
  }
  // A run written by a version-1 pipette (no pid, no step columns).
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT INTO runs(engine, config, version, git_rev, libraries, host, "
                         "started_at, status) VALUES ('sim', '{}', '0.0.9', 'old', '{}', 'h', "
                         "'2026-01-01', 'ok');"
                         "INSERT INTO events VALUES (1, 0, 0, 'F', 0, 0, 0.0, 1.0, 0);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);

  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  Result<RunData> run = db->LoadRun(1);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->run.version, "0.0.9");
  EXPECT_EQ(run->run.pid, 0);
  ASSERT_EQ(run->events.size(), 1u);
  EXPECT_EQ(run->events[0].step, 0);  // the new column's default
  EXPECT_EQ(run->events[0].chunk, 0);
  // Opening again is a no-op.
  db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
}

// Schema 6 lets a metric be NULL (a diverged run's NaN loss) and rebuilds the metrics table: a
// version-5 database keeps every metric, in its order, and a NaN reads back as NaN.
TEST(ExperimentDb, MigratingToSixKeepsMetricsInOrderAndANanIsRecorded) {
  const std::string path = FreshPath("metrics6");
  {
    Result<ExperimentDb> v5 = ExperimentDb::Open(path, 5);
    ASSERT_TRUE(v5.ok()) << v5.status().message();
    const std::int64_t id = *v5->BeginRun(SimRun());
    RunData rows;
    rows.metrics = {{"z", 3, "s"}, {"a", 1, "s"}, {"m", 2, "B"}};
    ASSERT_TRUE(v5->FinishRun(id, rows, kRunOk).ok());
    const std::int64_t nan_run = *v5->BeginRun(SimRun());
    rows.metrics = {{"loss[0]", NAN, "nats"}};
    EXPECT_FALSE(v5->FinishRun(nan_run, rows, kRunOk).ok());  // NOT NULL before 6
  }
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  Result<RunData> old = db->LoadRun(1);
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->metrics.size(), 3u);
  EXPECT_EQ(old->metrics[0].name, "z");
  EXPECT_EQ(old->metrics[1].name, "a");
  EXPECT_EQ(old->metrics[2].name, "m");
  EXPECT_EQ(old->metrics[2].value, 2);
  EXPECT_EQ(old->metrics[2].unit, "B");
  const std::int64_t id = *db->BeginRun(SimRun());
  RunData rows;
  rows.metrics = {{"loss[0]", NAN, "nats"}, {"loss[1]", INFINITY, "nats"}};
  ASSERT_TRUE(db->FinishRun(id, rows, kRunOk).ok());
  Result<RunData> back = db->LoadRun(id);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(back->Metric("loss[0]", 0)));
  EXPECT_EQ(back->Metric("loss[1]", 0), INFINITY);
  EXPECT_EQ(Query(path, fmt::format("SELECT quote(value) FROM metrics WHERE run_id = {} AND "
                                    "name = 'loss[0]'",
                                    id)),
            "NULL");
}

// Schema 9 admits imported runs (engine 'pytorch') by rebuilding runs: a version-8 database keeps
// every run with its id and every child row (nothing cascades), and foreign keys hold afterwards.
TEST(ExperimentDb, MigratingToNineKeepsRunsAndTheirRowsAndAdmitsImportedRuns) {
  const std::string path = FreshPath("runs9");
  std::int64_t kept = 0;
  {
    Result<ExperimentDb> v8 = ExperimentDb::Open(path, 8);
    ASSERT_TRUE(v8.ok()) << v8.status().message();
    (void)*v8->BeginRun(SimRun());  // run 1, deleted below: the ids keep their gap
    kept = *v8->BeginRun(SimRun());
    RunData rows;
    rows.events = {{0, 0, 0, EventKind::kF, 0, 0, 0, 0.0, 1.0, 0}};
    rows.metrics = {{"step_time_s", 1, "s"}};
    ASSERT_TRUE(v8->FinishRun(kept, rows, kRunOk).ok());
    RunRecord pytorch = SimRun();
    pytorch.engine = "pytorch";
    EXPECT_FALSE(v8->BeginRun(pytorch).ok());  // the CHECK of schema 8
  }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  ASSERT_EQ(sqlite3_exec(raw, "DELETE FROM runs WHERE id = 1", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  Result<RunData> run = db->LoadRun(kept);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->events.size(), 1u);
  EXPECT_EQ(run->Metric("step_time_s"), 1);
  RunRecord pytorch = SimRun();
  pytorch.engine = "pytorch";
  const Result<std::int64_t> imported = db->BeginRun(pytorch);
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  EXPECT_EQ(*imported, kept + 1);
  // Foreign keys are on again: an orphan is refused.
  RunRecord orphan = SimRun();
  orphan.experiment_id = 999;
  EXPECT_FALSE(db->BeginRun(orphan).ok());
}

// A training run records each finished step in its own transaction; its end replaces those rows
// with the whole run's (no duplicates); a run failed after some steps keeps them and says how many.
TEST(ExperimentDb, StepsRecordedAsTheRunGoesAreKeptOnFailureAndReplacedAtTheEnd) {
  const std::string path = FreshPath("steps");
  ExperimentDb db = *ExperimentDb::Open(path);
  RunData step0;
  step0.events = {{0, 0, 0, EventKind::kF, 0, 0, 0, 0.0, 1.0, 0}};
  step0.metrics = {{"loss[0]", 4.0, "nats"}};
  RunData step1 = step0;
  step1.events[0].step = 1;
  step1.metrics = {{"loss[1]", 3.5, "nats"}};

  const std::int64_t failed = *db.BeginRun(SimRun());
  ASSERT_TRUE(db.RecordStep(failed, step0, 1).ok());
  ASSERT_TRUE(db.RecordStep(failed, step1, 2).ok());
  EXPECT_EQ(**db.StepsRecorded(failed), 2);
  ASSERT_TRUE(db.FailRun(failed, "rank 1 died").ok());
  Result<RunData> kept = db.LoadRun(failed);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->run.error, "rank 1 died; it kept its first 2 steps");
  EXPECT_EQ(kept->events.size(), 2u);
  EXPECT_EQ(kept->Metric("loss[1]"), 3.5);
  EXPECT_FALSE(db.RecordStep(failed, step0, 3).ok());  // a finished run takes no more steps

  const std::int64_t finished = *db.BeginRun(SimRun());
  ASSERT_TRUE(db.RecordStep(finished, step0, 1).ok());
  RunData whole;
  whole.events = {step0.events[0], step1.events[0]};
  whole.metrics = {{"loss[0]", 4.0, "nats"}, {"loss[1]", 3.5, "nats"}, {"final_loss", 3.5, "nats"}};
  ASSERT_TRUE(db.FinishRun(finished, whole, kRunOk).ok());
  Result<RunData> done = db.LoadRun(finished);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->events.size(), 2u);
  EXPECT_EQ(done->metrics.size(), 3u);  // steps_recorded went with the step rows
  EXPECT_FALSE(db.StepsRecorded(finished)->has_value());
  // The other run's rows are untouched.
  EXPECT_EQ(db.LoadRun(failed)->events.size(), 2u);
}

TEST(ExperimentDb, RefusesADatabaseFromANewerPipette) {
  const std::string path = FreshPath("newer");
  { ASSERT_TRUE(ExperimentDb::Open(path).ok()); }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("schema version 99"), std::string::npos);
}

TEST(ExperimentDb, UnwritablePathIsAnIoErrorNamingIt) {
  Result<ExperimentDb> db = ExperimentDb::Open("/nonexistent-dir/x.db");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kIoError);
  EXPECT_NE(db.status().message().find("/nonexistent-dir/x.db"), std::string::npos);
}

TEST(ExperimentDb, RoundTripsARunAndItsRows) {
  const std::string path = FreshPath("roundtrip");
  ExperimentDb db = *ExperimentDb::Open(path);
  const std::int64_t experiment = *db.EnsureExperiment("study", "a study", "spec text");
  EXPECT_EQ(*db.EnsureExperiment("study", "ignored", "ignored"), experiment);
  RunRecord record = SimRun();
  record.experiment_id = experiment;
  const std::int64_t id = *db.BeginRun(record, "m=2;pp=2");
  EXPECT_EQ(db.LoadRun(id)->run.status, kRunRunning);
  EXPECT_FALSE(db.FindFinishedRun(experiment, "m=2;pp=2")->has_value());

  const RunData rows = SomeRows();
  ASSERT_TRUE(db.FinishRun(id, rows, kRunOk).ok());
  Result<RunData> loaded = db.LoadRun(id);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->run.status, kRunOk);
  EXPECT_EQ(loaded->run.experiment_id, experiment);
  EXPECT_EQ(loaded->run.config, record.config);
  EXPECT_EQ(loaded->run.pid, getpid());
  EXPECT_FALSE(loaded->run.ended_at.empty());
  ASSERT_EQ(loaded->events.size(), rows.events.size());
  for (std::size_t k = 0; k < rows.events.size(); ++k) {
    const EventRow& a = rows.events[k];
    const EventRow& b = loaded->events[k];
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.instr_id, b.instr_id);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.chunk, b.chunk);
    EXPECT_EQ(a.microbatch, b.microbatch);
    EXPECT_EQ(a.start_s, b.start_s);
    EXPECT_EQ(a.end_s, b.end_s);
    EXPECT_EQ(a.bytes, b.bytes);
  }
  ASSERT_EQ(loaded->memory.size(), 3u);
  EXPECT_EQ(loaded->memory[1].bytes, 150);
  EXPECT_EQ(loaded->Metric("step_time_s"), 5.0);
  EXPECT_EQ(loaded->Metric("peak_memory_bytes[0]"), 150);
  EXPECT_EQ(loaded->NumRanks(), 2);
  EXPECT_EQ(**db.FindFinishedRun(experiment, "m=2;pp=2"), id);
  EXPECT_FALSE(db.LoadRun(id, /*with_events=*/false)->events.size());

  // A finished run is never finished again.
  Status again = db.FinishRun(id, rows, kRunFailed);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(db.LoadRun(id)->events.size(), rows.events.size());
  EXPECT_EQ(db.LoadRun(777).status().code(), StatusCode::kNotFound);
}

TEST(ExperimentDb, ListsRunsByExperimentAndStatus) {
  ExperimentDb db = *ExperimentDb::Open(FreshPath("list"));
  const std::int64_t a = *db.EnsureExperiment("a", "", "");
  RunRecord in_a = SimRun();
  in_a.experiment_id = a;
  const std::int64_t r1 = *db.BeginRun(in_a);
  const std::int64_t r2 = *db.BeginRun(SimRun());
  ASSERT_TRUE(db.FinishRun(r1, {}, kRunOom).ok());
  ASSERT_TRUE(db.FailRun(r2, "boom").ok());
  EXPECT_EQ(db.ListRuns()->size(), 2u);
  std::vector<RunRecord> of_a = *db.ListRuns(RunFilter{a, std::nullopt});
  ASSERT_EQ(of_a.size(), 1u);
  EXPECT_EQ(of_a[0].status, kRunOom);
  std::vector<RunRecord> failed = *db.ListRuns(RunFilter{std::nullopt, std::string(kRunFailed)});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].error, "boom");
}

TEST(ExperimentDb, RepairMarksRunsOfDeadProcessesFailed) {
  ExperimentDb db = *ExperimentDb::Open(FreshPath("repair"));
  // A process that has exited: its pid is not alive once reaped.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  RunRecord dead = SimRun();
  dead.pid = child;
  const std::int64_t stale = *db.BeginRun(dead);
  const std::int64_t alive = *db.BeginRun(SimRun());  // this process
  RunRecord elsewhere = SimRun();
  elsewhere.host = "another-host";
  elsewhere.pid = child;
  const std::int64_t remote = *db.BeginRun(elsewhere);

  EXPECT_EQ(db.RepairStale()->size(), 1u);
  EXPECT_EQ(db.LoadRun(stale)->run.status, kRunFailed);
  EXPECT_NE(db.LoadRun(stale)->run.error.find("stale"), std::string::npos);
  EXPECT_EQ(db.LoadRun(alive)->run.status, kRunRunning);
  EXPECT_EQ(db.LoadRun(remote)->run.status, kRunRunning);
  EXPECT_EQ(db.RepairStale(/*all_hosts=*/true)->size(), 1u);
  EXPECT_EQ(db.LoadRun(remote)->run.status, kRunFailed);
  EXPECT_EQ(db.LoadRun(alive)->run.status, kRunRunning);
}

// ---- opening while another connection holds the write lock (forced interleaving) -------------

std::atomic<int> lock_waits{0};
void CountLockWait(int) { ++lock_waits; }

// A plain connection to `path` that holds the write lock from construction until Release().
class LockHolder {
 public:
  LockHolder(const std::string& path, bool wal) {
    sqlite3_open(path.c_str(), &db_);
    if (wal) sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    rc_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  }
  ~LockHolder() { sqlite3_close(db_); }
  int begin_rc() const { return rc_; }
  void Release() { sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }

 private:
  sqlite3* db_ = nullptr;
  int rc_ = SQLITE_OK;
};

// Opens `path` on another thread while `holder` holds the write lock, and releases the lock only
// once the opener provably waits for it (the lock-wait observer fired) and has not returned.
void ExpectOpenWaitsForTheLock(const std::string& path, LockHolder& holder) {
  ASSERT_EQ(holder.begin_rc(), SQLITE_OK);
  lock_waits = 0;
  sqlite::SetLockWaitObserverForTesting(CountLockWait);
  std::future<Result<ExperimentDb>> opened =
      std::async(std::launch::async, [&] { return ExperimentDb::Open(path); });
  // Until the opener either waits for the lock or gives up.
  while (lock_waits == 0 &&
         opened.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
  }
  const bool returned_before_release =
      opened.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  holder.Release();
  Result<ExperimentDb> db = opened.get();
  sqlite::SetLockWaitObserverForTesting(nullptr);
  EXPECT_FALSE(returned_before_release) << "Open returned while another connection held the lock: "
                                        << (db.ok() ? std::string("ok") : db.status().message());
  EXPECT_GT(lock_waits.load(), 0);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  EXPECT_EQ(Query(path, "PRAGMA journal_mode"), "wal");
}

// Another creator holds the lock while the file is still in rollback mode (it is switching to
// WAL): SQLite answers the opener's own switch with SQLITE_BUSY at once, without the busy handler.
TEST(ExperimentDbConcurrency, OpenWaitsForACreatorSwitchingANewFileToWal) {
  const std::string path = FreshPath("wait_rollback");
  LockHolder holder(path, /*wal=*/false);
  ExpectOpenWaitsForTheLock(path, holder);
}

// Another creator holds the lock in WAL mode (it is migrating): the migration waits for it.
TEST(ExperimentDbConcurrency, OpenWaitsForACreatorMigratingANewFile) {
  const std::string path = FreshPath("wait_wal");
  LockHolder holder(path, /*wal=*/true);
  ExpectOpenWaitsForTheLock(path, holder);
}

TEST(ExperimentDb, PathsThatRecordNowhereAreRefused) {
  for (const std::string path : {"", ":memory:", "file:x.db", "file:x.db?mode=memory", "x/"}) {
    Result<ExperimentDb> db = ExperimentDb::Open(path);
    ASSERT_FALSE(db.ok()) << "'" << path << "'";
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(db.status().message().find("--db = '" + path + "': must name a database file"),
              std::string::npos)
        << db.status().message();
    EXPECT_EQ(ExperimentDb::OpenReadOnly(path).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(std::filesystem::exists("file:x.db"));
  EXPECT_FALSE(std::filesystem::exists("x"));
}

// A database under the name of another's companion file would be consumed when the other opens
// (issue 34: run 1 recorded in w.db-wal vanished at the next `--db w.db`); a device, FIFO or
// directory holds none (and a FIFO would block the open). Refused before anything is created.
TEST(ExperimentDb, CompanionNamesAndPathsThatAreNotRegularFilesAreRefused) {
  const std::string dir = FreshPath("companions");
  std::filesystem::create_directories(dir);
  for (const std::string name : {"w.db-wal", "w.db-shm", "w.db-journal"}) {
    const std::string path = dir + "/" + name;
    Result<ExperimentDb> db = ExperimentDb::Open(path);
    ASSERT_FALSE(db.ok()) << path;
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
    const std::string kind = name.substr(name.find('-') + 1);
    EXPECT_NE(db.status().message().find("--db = '" + path + "': names the " + kind +
                                         " file SQLite keeps beside database '" + dir + "/w.db'"),
              std::string::npos)
        << db.status().message();
    EXPECT_EQ(ExperimentDb::OpenReadOnly(path).status().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  const std::string fifo = dir + "/fifo.db";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] :
       {std::pair<std::string, std::string>{"/dev/null", "character device"},
        {fifo, "FIFO"},
        {dir, "directory"}}) {
    Result<ExperimentDb> db = ExperimentDb::Open(path);  // returns at once: the FIFO is not opened
    ASSERT_FALSE(db.ok()) << path;
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(db.status().message(),
              "--db = '" + path + "': must name a regular file (or a new path), not a " + kind);
    EXPECT_EQ(ExperimentDb::OpenReadOnly(path).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/null-journal"));
  EXPECT_TRUE(ExperimentDb::Open(dir + "/w.db").ok());  // the database's own name is fine
  std::filesystem::remove_all(dir);
}

// ---- read-only opening ---------------------------------------------------------------------

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct timespec MTime(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return st.st_mtim;
}

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

TEST(ExperimentDbReadOnly, ReadsWithoutWritingAndRefusesWrites) {
  const std::string path = FreshPath("readonly");
  {
    ExperimentDb db = *ExperimentDb::Open(path);
    ASSERT_TRUE(db.FinishRun(*db.BeginRun(SimRun()), SomeRows(), kRunOk).ok());
  }
  const std::string before = Bytes(path);
  const struct timespec mtime = MTime(path);
  {
    Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(path);
    ASSERT_TRUE(db.ok()) << db.status().message();
    EXPECT_EQ(db->ListRuns()->size(), 1u);
    EXPECT_EQ(db->LoadRun(1)->events.size(), SomeRows().events.size());
    EXPECT_FALSE(db->BeginRun(SimRun()).ok());
  }
  EXPECT_EQ(Bytes(path), before);
  EXPECT_TRUE(SameTime(MTime(path), mtime));
}

// An empty file (or an SQLite file with no tables, as a creator killed by an older pipette left)
// is one thing for every command: an empty database. Readers find no runs and leave it as it was;
// a writer creates the schema in it.
TEST(ExperimentDbReadOnly, AnEmptyFileReadsAsAnEmptyDatabaseAndStaysEmpty) {
  const std::string path = FreshPath("empty");
  std::ofstream(path).close();
  {
    Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(path);
    ASSERT_TRUE(db.ok()) << db.status().message();
    EXPECT_TRUE(db->empty_file());
    EXPECT_TRUE(db->ListRuns()->empty());
    EXPECT_EQ(db->LoadRun(1).status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(db->ListCalibrations()->empty());
  }
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  const std::string tableless = FreshPath("tableless");
  Query(tableless, "PRAGMA journal_mode = WAL");  // a header, no tables
  Result<ExperimentDb> read = ExperimentDb::OpenReadOnly(tableless);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(read->empty_file());
  Result<ExperimentDb> written = ExperimentDb::Open(path);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(written->schema_version(), kSchemaVersion);
  EXPECT_TRUE(written->BeginRun(SimRun()).ok());
}

// Someone else's database (tables, none of them pipette's) is refused by readers and writers
// alike, naming its tables, and left exactly as it was (before, a writer added pipette's tables to
// it and exited 0).
TEST(ExperimentDb, AForeignDatabaseIsRefusedNamingItsTablesAndLeftAsItWas) {
  const std::string path = FreshPath("people");
  Query(path, "CREATE TABLE people(name TEXT)");
  Query(path, "CREATE TABLE pets(name TEXT)");
  const std::string before = Bytes(path);
  for (const bool write : {false, true}) {
    Result<ExperimentDb> db = write ? ExperimentDb::Open(path) : ExperimentDb::OpenReadOnly(path);
    ASSERT_FALSE(db.ok()) << (write ? "write" : "read");
    EXPECT_EQ(db.status().code(), StatusCode::kIoError);
    EXPECT_NE(db.status().message().find("not a pipette database: it has tables (people, pets)"),
              std::string::npos)
        << db.status().message();
  }
  EXPECT_TRUE(Bytes(path) == before) << "the foreign database was written";
  EXPECT_EQ(Query(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'runs'"), "0");
}

// A new database appears complete or not at all: it is built aside and linked into place, so the
// path never names a file without the schema (killing a creator left an empty or table-less file
// that readers refused and writers adopted), and nothing is left beside it.
TEST(ExperimentDb, ANewDatabaseAppearsCompleteAndLeavesNothingAside) {
  const std::string dir = ::testing::TempDir() + "pipette_aside_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/new.db";
  // The aside name of a killed creator of this pid is reused, not an obstacle.
  std::ofstream(dir + "/.new.db.creating-" + std::to_string(getpid())) << "partial";
  {
    Result<ExperimentDb> db = ExperimentDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.status().message();
    EXPECT_EQ(db->schema_version(), kSchemaVersion);
  }
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"new.db"}));
  EXPECT_EQ(Query(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(Query(path, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  // The database another creator linked first is used as it is.
  Result<ExperimentDb> again = ExperimentDb::Open(path);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->BeginRun(SimRun()).ok());
  std::filesystem::remove_all(dir);
}

// A database whose pages are damaged is refused before anything is written (a quick check when
// opening to write), naming the damage; before, commands that did not touch the broken pages kept
// appending to it.
TEST(ExperimentDb, ADamagedDatabaseIsRefusedForWritingNamingTheDamage) {
  const std::string path = FreshPath("damaged");
  {
    ExperimentDb db = *ExperimentDb::Open(path);
    const std::int64_t id = *db.BeginRun(SimRun());
    RunData rows;
    for (int k = 0; k < 400; ++k) rows.events.push_back({0, 0, k, EventKind::kF, 0, 0, k, 0, 1, 0});
    ASSERT_TRUE(db.FinishRun(id, rows, kRunOk).ok());
  }
  const int events_root =
      std::stoi(Query(path, "SELECT rootpage FROM sqlite_schema WHERE name = 'events'"));
  const int page_size = std::stoi(Query(path, "PRAGMA page_size"));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(events_root - 1) * page_size + 8);
    const std::string garbage(64, '\xff');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const std::string before = Bytes(path);
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kIoError);
  EXPECT_NE(db.status().message().find("the database is damaged (PRAGMA quick_check:"),
            std::string::npos)
      << db.status().message();
  EXPECT_TRUE(Bytes(path) == before) << "the damaged database was written";
  // A reader of the runs table alone still reads it (to copy out what reads).
  Result<ExperimentDb> read = ExperimentDb::OpenReadOnly(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->ListRuns()->size(), 1u);
  Result<std::vector<std::string>> damage = read->CheckIntegrity(/*quick=*/false);
  EXPECT_TRUE(!damage.ok() || !damage->empty());
}

TEST(ExperimentDbReadOnly, AForeignOrCorruptFileIsAnIoErrorAndStaysAsItWas) {
  const std::string garbage = FreshPath("garbage");
  std::ofstream(garbage) << std::string(4096, 'x');
  Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(garbage);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kIoError);
  EXPECT_NE(db.status().message().find("not a pipette database: file is not a database"),
            std::string::npos)
      << db.status().message();
  EXPECT_EQ(Bytes(garbage), std::string(4096, 'x'));
  // A SQLite file of something else.
  const std::string foreign = FreshPath("foreign");
  Query(foreign, "CREATE TABLE notes(text)");
  db = ExperimentDb::OpenReadOnly(foreign);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("not a pipette database: it has tables (notes)"),
            std::string::npos)
      << db.status().message();
}

// A negative schema version is a damaged header, an I/O error for readers and writers alike (it
// was "an older schema, exit 2" for readers and "read the schema version: not an error" for
// writers).
TEST(ExperimentDbReadOnly, ANegativeSchemaVersionIsADamagedHeaderForEveryOpener) {
  const std::string path = FreshPath("negative");
  { ASSERT_TRUE(ExperimentDb::Open(path).ok()); }
  Query(path, "PRAGMA user_version = -5");
  const auto expect_damaged = [&path](const Result<ExperimentDb>& db) {
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), StatusCode::kIoError);
    EXPECT_NE(db.status().message().find("--db = '" + path +
                                         "': not a pipette database: schema version -5 (a damaged "
                                         "header)"),
              std::string::npos)
        << db.status().message();
  };
  expect_damaged(ExperimentDb::OpenReadOnly(path));
  expect_damaged(ExperimentDb::Open(path));
}

TEST(ExperimentDbReadOnly, AnOlderSchemaIsReadOrNamesTheCommandThatMigratesIt) {
  const std::string v2 = FreshPath("v2");
  { ASSERT_TRUE(ExperimentDb::Open(v2, 2).ok()); }
  Query(v2,
        "INSERT INTO runs(engine, config, version, git_rev, libraries, host, started_at, status) "
        "VALUES ('sim', '{}', '0.1', 'r', '{}', 'h', '2026-01-01', 'ok')");
  Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(v2);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), 2);
  EXPECT_EQ(db->ListRuns()->size(), 1u);

  const std::string v1 = FreshPath("v1");
  { ASSERT_TRUE(ExperimentDb::Open(v1, 1).ok()); }
  const std::string before = Bytes(v1);
  db = ExperimentDb::OpenReadOnly(v1);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("schema version 1, older than this pipette reads (2); "
                                       "`pipette runs --db " +
                                       v1 + " --repair` migrates it"),
            std::string::npos)
      << db.status().message();
  EXPECT_EQ(Bytes(v1), before);
}

// ---- claiming sweep points -------------------------------------------------------------------

// Two connections (two sweeps, or a rerun beside a live child) claim one point: the second finds
// the first's run, running or finished, and does not start another.
TEST(ExperimentDbClaim, APointWithALiveOrFinishedRunIsNotClaimedTwice) {
  const std::string path = FreshPath("claim");
  ExperimentDb a = *ExperimentDb::Open(path);
  ExperimentDb b = *ExperimentDb::Open(path);
  RunRecord run = SimRun();
  run.experiment_id = *a.EnsureExperiment("study", "", "");
  Result<std::int64_t> first = a.BeginRun(run, "m=2");
  ASSERT_TRUE(first.ok()) << first.status().message();
  Result<std::int64_t> second = b.BeginRun(run, "m=2");
  ASSERT_FALSE(second.ok()) << "the point ran twice: runs " << *first << " and " << *second;
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("--point-key = 'm=2': the point already has run " +
                                           std::to_string(*first) + " (running)"),
            std::string::npos)
      << second.status().message();
  Result<PointClaim> claim = b.ClaimPoint(run, "m=2");
  ASSERT_TRUE(claim.ok());
  EXPECT_FALSE(claim->claimed);
  EXPECT_EQ(claim->run_id, *first);
  EXPECT_EQ(claim->holder, "running");
  ASSERT_TRUE(a.FinishRun(*first, {}, kRunOk).ok());
  claim = b.ClaimPoint(run, "m=2");
  EXPECT_FALSE(claim->claimed);
  EXPECT_EQ(claim->holder, "ok");
  // Another point, and the same point of another experiment, are free.
  EXPECT_TRUE(b.ClaimPoint(run, "m=4")->claimed);
  RunRecord other = run;
  other.experiment_id = *a.EnsureExperiment("other", "", "");
  EXPECT_TRUE(b.ClaimPoint(other, "m=2")->claimed);
  EXPECT_EQ(a.ListRuns(RunFilter{run.experiment_id, std::nullopt})->size(), 2u);
}

// A failed run, or a run whose process ended (gone, or a zombie) does not hold its point: the
// claim marks the stale run failed and starts a new one.
TEST(ExperimentDbClaim, APointOfAFailedOrDeadRunIsClaimedAgain) {
  ExperimentDb db = *ExperimentDb::Open(FreshPath("reclaim"));
  RunRecord run = SimRun();
  run.experiment_id = *db.EnsureExperiment("study", "", "");
  const std::int64_t failed = *db.BeginRun(run, "k=1");
  ASSERT_TRUE(db.FailRun(failed, "boom").ok());
  EXPECT_TRUE(db.ClaimPoint(run, "k=1")->claimed);

  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const pid_t zombie = fork();  // exits, not reaped until the end of the test
  if (zombie == 0) _exit(0);
  siginfo_t info{};
  waitid(P_PID, zombie, &info, WEXITED | WNOWAIT);  // it has exited; still a zombie
  for (const pid_t pid : {gone, zombie}) {
    RunRecord dead = run;
    dead.pid = pid;
    const std::string key = "pid=" + std::to_string(pid);
    const std::int64_t stale = *db.BeginRun(dead, key);
    Result<PointClaim> claim = db.ClaimPoint(run, key);
    ASSERT_TRUE(claim.ok()) << claim.status().message();
    EXPECT_TRUE(claim->claimed) << "pid " << pid << " (" << (pid == zombie ? "zombie" : "gone")
                                << ") taken for the run's live process";
    EXPECT_EQ(db.LoadRun(stale)->run.status, kRunFailed);
    EXPECT_NE(db.LoadRun(stale)->run.error.find("stale: process " + std::to_string(pid)),
              std::string::npos);
  }
  waitpid(zombie, nullptr, 0);
}

// A zombie and a pid reused by a later process are not the run's process: repair fails their runs,
// and leaves the live run of this process alone.
TEST(ExperimentDb, RepairTakesZombiesAndReusedPidsForDeadProcesses) {
  const std::string path = FreshPath("repair_reuse");
  ExperimentDb db = *ExperimentDb::Open(path);
  const pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  siginfo_t info{};
  waitid(P_PID, zombie, &info, WEXITED | WNOWAIT);
  RunRecord of_zombie = SimRun();
  of_zombie.pid = zombie;
  const std::int64_t z = *db.BeginRun(of_zombie);
  // This process's pid, recorded with another process's identity (as after a reboot or pid reuse).
  const std::int64_t reused = *db.BeginRun(SimRun());
  Query(path,
        "UPDATE runs SET owner_start = 'another-boot:42' WHERE id = " + std::to_string(reused));
  // A run recorded before owner_start existed: this process's pid, but a start long before it.
  RunRecord old = SimRun();
  old.started_at = "2000-01-01T00:00:00.000Z";
  const std::int64_t old_run = *db.BeginRun(old);
  Query(path, "UPDATE runs SET owner_start = '' WHERE id = " + std::to_string(old_run));
  const std::int64_t alive = *db.BeginRun(SimRun());

  EXPECT_EQ(db.RepairStale()->size(), 3u);
  EXPECT_EQ(db.LoadRun(z)->run.status, kRunFailed);
  EXPECT_EQ(db.LoadRun(reused)->run.status, kRunFailed);
  EXPECT_EQ(db.LoadRun(old_run)->run.status, kRunFailed);
  EXPECT_EQ(db.LoadRun(alive)->run.status, kRunRunning);
  waitpid(zombie, nullptr, 0);
}

TEST(EventKind, NamesRoundTrip) {
  for (int k = 0; k <= static_cast<int>(EventKind::kOptimizer); ++k) {
    const EventKind kind = static_cast<EventKind>(k);
    EXPECT_EQ(*ParseEventKind(EventKindName(kind)), kind);
  }
  EXPECT_FALSE(ParseEventKind("X").ok());
}

}  // namespace
}  // namespace pipette
