// The experiment database: schema creation and migration, round trips of run rows, the run
// lifecycle (running -> ok/oom/failed, never finished twice), stale-run repair and run lookup.
#include "pipette/store/experiment_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

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
  EXPECT_EQ(db->schema_version(), 2);
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
  EXPECT_EQ(db->schema_version(), 2);
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

  EXPECT_EQ(*db.RepairStale(), 1);
  EXPECT_EQ(db.LoadRun(stale)->run.status, kRunFailed);
  EXPECT_NE(db.LoadRun(stale)->run.error.find("stale"), std::string::npos);
  EXPECT_EQ(db.LoadRun(alive)->run.status, kRunRunning);
  EXPECT_EQ(db.LoadRun(remote)->run.status, kRunRunning);
  EXPECT_EQ(*db.RepairStale(/*all_hosts=*/true), 1);
  EXPECT_EQ(db.LoadRun(remote)->run.status, kRunFailed);
  EXPECT_EQ(db.LoadRun(alive)->run.status, kRunRunning);
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
