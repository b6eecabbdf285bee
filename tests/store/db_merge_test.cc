// MergeDatabases (store/db_merge.h): run ids remapped with every row keyed by them, the rows equal
// to the originals, a sweep point's first finished run kept once, a run merged twice kept once,
// provenance rows, config references rewritten, running runs left out, inputs of another schema
// refused, and atomicity: an input that fails mid-merge leaves OUT as it was.
#include "pipette/store/db_merge.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipette/store/experiment_db.h"
#include "sql_rows.h"

namespace pipette {
namespace {

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "pipette_merge_" + std::to_string(getpid()) + "_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

// Every row `sql` returns, columns joined by '|', rows by '\n' (with a plain connection).
std::string Rows(const std::string& path, const std::string& sql) {
  return pipette::testing::SqlRows(path, sql);
}

void Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunRecord Record(std::int64_t experiment, const std::string& started_at, int m) {
  RunRecord r;
  r.experiment_id = experiment;
  r.engine = "sim";
  r.config = fmt::format(R"({{"schedule":"1f1b","pp":2,"m":{}}})", m);
  r.version = "0.1.0";
  r.git_rev = "abc";
  r.libraries = "{}";
  r.host = "node-a";
  r.pid = 4242;
  r.started_at = started_at;
  return r;
}

// Rows that differ with `seed`, so that a mixed-up copy shows.
RunData RowsOf(int seed) {
  RunData d;
  d.events = {{0, 0, 0, EventKind::kF, 0, 0, 0, 0.0, 1.0 + seed, 0},
              {0, 0, 1, EventKind::kSendF, 0, 0, 0, 1.0, 1.0, 4096 + seed},
              {1, 0, 0, EventKind::kRecvF, 1, 0, 0, 0.0, 1.5, 4096 + seed},
              {1, 0, -1, EventKind::kAllReduce, -1, 0, -1, 4.0, 5.0 + seed, 1 << 20}};
  d.memory = {{0, 0.0, 100.0 + seed}, {1, 0.0, 90}};
  d.metrics = {{"step_time_s", 5.0 + seed, "s"}, {"peak_memory_bytes[0]", 150, "B"}};
  return d;
}

// A finished run of point `key` in `experiment` with Rows(seed); returns its id.
std::int64_t AddRun(ExperimentDb& db, std::int64_t experiment, const std::string& key,
                    const std::string& started_at, int seed, std::string_view status = kRunOk) {
  Result<std::int64_t> id = db.BeginRun(Record(experiment, started_at, seed), key);
  EXPECT_TRUE(id.ok()) << id.status().message();
  EXPECT_TRUE(db.FinishRun(*id, RowsOf(seed), status).ok());
  return *id;
}

// Shard 0: points m=1 and m=3 and a run outside any experiment; shard 1: m=2 and m=4, plus a
// second finished run of m=3 (another run of the same point), a failed run and a running one.
struct Shards {
  std::string a, b;
};

Shards MakeShards(const std::string& name) {
  Shards s{FreshPath(name + "_a"), FreshPath(name + "_b")};
  {
    ExperimentDb db = *ExperimentDb::Open(s.a);
    const std::int64_t e = *db.EnsureExperiment("study", "two shards", "spec text");
    AddRun(db, e, "m=1", "2026-01-01T00:00:01.000Z", 1);
    AddRun(db, e, "m=3", "2026-01-01T00:00:03.000Z", 3);
    AddRun(db, 0, "", "2026-01-01T00:00:05.000Z", 5);
  }
  {
    ExperimentDb db = *ExperimentDb::Open(s.b);
    db.EnsureExperiment("other", "", "").value();  // a different id for "study" here
    const std::int64_t e = *db.EnsureExperiment("study", "two shards", "spec text");
    AddRun(db, e, "m=2", "2026-01-01T00:00:02.000Z", 2);
    AddRun(db, e, "m=4", "2026-01-01T00:00:04.000Z", 4);
    AddRun(db, e, "m=3", "2026-01-01T00:00:06.000Z", 33);  // the same point as a's second run
    AddRun(db, e, "m=5", "2026-01-01T00:00:07.000Z", 7, kRunFailed);
    Result<std::int64_t> running = db.BeginRun(Record(e, "2026-01-01T00:00:08.000Z", 8), "m=6");
    EXPECT_TRUE(running.ok());
  }
  return s;
}

void ExpectSameRows(const RunData& got, const RunData& want) {
  ASSERT_EQ(got.events.size(), want.events.size());
  for (std::size_t k = 0; k < got.events.size(); ++k) {
    const EventRow &x = got.events[k], &y = want.events[k];
    EXPECT_EQ(std::tie(x.rank, x.step, x.instr_id, x.kind, x.stage, x.chunk, x.microbatch,
                       x.start_s, x.end_s, x.bytes),
              std::tie(y.rank, y.step, y.instr_id, y.kind, y.stage, y.chunk, y.microbatch,
                       y.start_s, y.end_s, y.bytes))
        << "event " << k;
  }
  ASSERT_EQ(got.memory.size(), want.memory.size());
  for (std::size_t k = 0; k < got.memory.size(); ++k) {
    EXPECT_EQ(got.memory[k].rank, want.memory[k].rank);
    EXPECT_EQ(got.memory[k].t_s, want.memory[k].t_s);
    EXPECT_EQ(got.memory[k].bytes, want.memory[k].bytes);
  }
  ASSERT_EQ(got.metrics.size(), want.metrics.size());
  for (std::size_t k = 0; k < got.metrics.size(); ++k) {
    EXPECT_EQ(got.metrics[k].name, want.metrics[k].name);
    EXPECT_EQ(got.metrics[k].value, want.metrics[k].value);
  }
  EXPECT_EQ(got.run.config, want.run.config);
  EXPECT_EQ(got.run.started_at, want.run.started_at);
  EXPECT_EQ(got.run.status, want.run.status);
}

TEST(DbMerge, RemapsIdsKeepsRowsAndKeepsAPointsFirstFinishedRun) {
  const Shards s = MakeShards("remap");
  const std::string out = FreshPath("remap_out");
  Result<MergeReport> report = MergeDatabases(out, {s.a, s.b});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->created);
  ASSERT_EQ(report->sources.size(), 2u);
  const MergeSourceReport &ra = report->sources[0], &rb = report->sources[1];
  EXPECT_EQ(ra.runs, 3);
  EXPECT_EQ(ra.copied, 3);
  EXPECT_EQ(ra.experiments_added, 1);
  EXPECT_EQ(rb.runs, 5);
  EXPECT_EQ(rb.copied, 3);  // m=2, m=4 and the failed m=5
  EXPECT_EQ(rb.duplicate_points, 1);
  EXPECT_EQ(rb.running, 1);
  EXPECT_EQ(rb.experiments_added, 1);                 // "other"
  EXPECT_EQ(ra.rows_copied + rb.rows_copied, 6 * 8);  // 4 events, 2 memory, 2 metrics per run

  // New ids 1..6 in input order; "study" is one experiment (b's id 2 mapped to OUT's 1).
  EXPECT_EQ(Rows(out, "SELECT id, experiment_id, point_key, status FROM runs ORDER BY id"),
            "1|1|m=1|ok\n2|1|m=3|ok\n3|NULL||ok\n4|1|m=2|ok\n5|1|m=4|ok\n6|1|m=5|failed\n");
  EXPECT_EQ(Rows(out, "SELECT id, name FROM experiments ORDER BY id"), "1|study\n2|other\n");
  // The point m=3 keeps a's run (the first input): its rows are seed 3's, not 33's.
  ExperimentDb merged = *ExperimentDb::OpenReadOnly(out);
  ExperimentDb a = *ExperimentDb::OpenReadOnly(s.a);
  ExperimentDb b = *ExperimentDb::OpenReadOnly(s.b);
  ExpectSameRows(*merged.LoadRun(1), *a.LoadRun(1));
  ExpectSameRows(*merged.LoadRun(2), *a.LoadRun(2));
  ExpectSameRows(*merged.LoadRun(3), *a.LoadRun(3));
  ExpectSameRows(*merged.LoadRun(4), *b.LoadRun(1));
  ExpectSameRows(*merged.LoadRun(5), *b.LoadRun(2));
  ExpectSameRows(*merged.LoadRun(6), *b.LoadRun(4));
  EXPECT_EQ(*merged.FindFinishedRun(1, "m=3"), std::optional<std::int64_t>(2));
  EXPECT_EQ(merged.LoadRun(2)->Metric("step_time_s"), 8.0);  // 5 + seed 3
}

TEST(DbMerge, RecordsProvenanceAndMergingAgainCopiesNothing) {
  const Shards s = MakeShards("again");
  const std::string out = FreshPath("again_out");
  ASSERT_TRUE(MergeDatabases(out, {s.a, s.b}).ok());
  const std::string a = std::filesystem::absolute(s.a).string();
  const std::string b = std::filesystem::absolute(s.b).string();
  EXPECT_EQ(Rows(out, "SELECT run_id, source, source_run_id FROM merged_runs ORDER BY run_id"),
            fmt::format("1|{0}|1\n2|{0}|2\n3|{0}|3\n4|{1}|1\n5|{1}|2\n6|{1}|4\n", a, b));
  EXPECT_EQ(Rows(out, "SELECT count(*) FROM merged_runs WHERE merged_at LIKE '20__-__-__T%Z'"),
            "6\n");
  const std::string before = Rows(out, "SELECT * FROM runs ORDER BY id");

  // The same shards again, and a copy of a (the same runs under another name): nothing new.
  const std::string copy = FreshPath("again_copy");
  std::filesystem::copy_file(s.a, copy);
  Result<MergeReport> again = MergeDatabases(out, {s.b, copy, s.a});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->created);
  for (const MergeSourceReport& r : again->sources) EXPECT_EQ(r.copied, 0) << r.path;
  EXPECT_EQ(again->sources[0].duplicate_runs, 3);  // b's copied runs
  EXPECT_EQ(again->sources[0].duplicate_points, 1);
  EXPECT_EQ(again->sources[1].duplicate_runs, 3);
  EXPECT_EQ(Rows(out, "SELECT * FROM runs ORDER BY id"), before);
  EXPECT_EQ(Rows(out, "SELECT count(*) FROM events"), "24\n");

  // A merge of a merge keeps where each run was first recorded.
  const std::string twice = FreshPath("again_twice");
  ASSERT_TRUE(MergeDatabases(twice, {out}).ok());
  EXPECT_EQ(Rows(twice, "SELECT run_id, source, source_run_id FROM merged_runs WHERE run_id = 4"),
            fmt::format("4|{}|1\n", b));
}

TEST(DbMerge, RewritesAPredictionsRunAndCalibrationReferences) {
  const std::string in = FreshPath("refs_in");
  {
    ExperimentDb db = *ExperimentDb::Open(in);
    Calibration c;
    c.engine = "cpu";
    c.host = "node-a";
    c.created_at = "2026-01-01T00:00:00.000Z";
    c.ranks = 2;
    c.cores = 2;
    c.points = {{"p2p", 2, 1024, 1e-5}, {"allreduce", 2, 4096, 3e-5}};
    c.gemms = {{16, 16, 16, 2, 1e-6, GemmPass::kForward},
               {16, 16, 32, 2, 2e-6, GemmPass::kInputGrad}};
    ASSERT_EQ(*db.RecordCalibration(c), 1);
    AddRun(db, 0, "", "2026-01-01T00:00:01.000Z", 1);
    RunRecord predicted = Record(0, "2026-01-01T00:00:02.000Z", 2);
    predicted.config = R"({"m":2,"costs_from":1,"prediction":{"calibration":1,"cores":2}})";
    const std::int64_t id = *db.BeginRun(predicted);
    ASSERT_TRUE(db.FinishRun(id, RowsOf(2), kRunOk).ok());
  }
  // OUT already holds a run and another calibration, so the new ids differ from the input's.
  const std::string out = FreshPath("refs_out");
  {
    ExperimentDb db = *ExperimentDb::Open(out);
    AddRun(db, 0, "", "2025-12-31T00:00:00.000Z", 9);
    Calibration other;
    other.engine = "sim";
    other.host = "elsewhere";
    other.ranks = 1;
    other.cores = 1;
    ASSERT_EQ(*db.RecordCalibration(other), 1);
  }
  ASSERT_TRUE(MergeDatabases(out, {in}).ok());
  EXPECT_EQ(Rows(out, "SELECT config FROM runs WHERE id = 3"),
            R"({"m":2,"costs_from":2,"prediction":{"calibration":2,"cores":2}})"
            "\n");
  EXPECT_EQ(Rows(out, "SELECT calibration_id, what, bytes FROM calibration_points ORDER BY rowid"),
            "2|p2p|1024\n2|allreduce|4096\n");
  EXPECT_EQ(Rows(out, "SELECT calibration_id, pass, m, n, k FROM calibration_gemms ORDER BY rowid"),
            "2|F|16|16|16\n2|I|16|16|32\n");
  // Merging it again reuses the calibration (same engine, host, created_at).
  Result<MergeReport> again = MergeDatabases(out, {in});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->sources[0].calibrations_copied, 0);
  EXPECT_EQ(Rows(out, "SELECT count(*) FROM calibrations"), "2\n");
}

TEST(DbMerge, CopiesFitsAndRewritesTheirRunsAndThePredictionsThatNameThem) {
  const std::string in = FreshPath("fits_in");
  {
    ExperimentDb db = *ExperimentDb::Open(in);
    AddRun(db, 0, "", "2026-01-01T00:00:01.000Z", 1);  // the measured run, id 1
    StoredFit fit;
    fit.created_at = "2026-01-01T00:00:05.000Z";
    fit.host = "node-a";
    fit.engine = "cpu";
    fit.runs = {1};
    fit.document = R"({"rows":[{"run":1,"kind":"F"}]})";
    ASSERT_EQ(*db.RecordFit(fit), 1);
    RunRecord predicted = Record(0, "2026-01-01T00:00:06.000Z", 2);
    predicted.config = R"({"m":2,"costs_from":1,"prediction":{"fit":1}})";
    const std::int64_t id = *db.BeginRun(predicted);
    ASSERT_TRUE(db.FinishRun(id, RowsOf(2), kRunOk).ok());
  }
  // OUT already holds a run and a fit, so every id moves by one.
  const std::string out = FreshPath("fits_out");
  {
    ExperimentDb db = *ExperimentDb::Open(out);
    AddRun(db, 0, "", "2025-12-31T00:00:00.000Z", 9);
    StoredFit other;
    other.engine = "cpu";
    other.host = "elsewhere";
    other.document = "{}";
    ASSERT_EQ(*db.RecordFit(other), 1);
  }
  Result<MergeReport> merged = MergeDatabases(out, {in});
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->sources[0].fits_copied, 1);
  EXPECT_EQ(Rows(out, "SELECT runs, fit FROM fits WHERE id = 2"),
            R"([2]|{"rows":[{"kind":"F","run":2}]})"
            "\n");
  EXPECT_EQ(Rows(out, "SELECT config FROM runs WHERE id = 3"),
            R"({"m":2,"costs_from":2,"prediction":{"fit":2}})"
            "\n");
  // Merging it again reuses the fit (same engine, host, created_at).
  Result<MergeReport> again = MergeDatabases(out, {in});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->sources[0].fits_copied, 0);
  EXPECT_EQ(Rows(out, "SELECT count(*) FROM fits"), "2\n");
}

TEST(DbMerge, AnInputThatFailsMidMergeLeavesOutAsItWas) {
  const Shards s = MakeShards("atomic");
  // b gets an event row OUT's CHECK refuses: the merge fails after a's rows were written.
  Exec(s.b,
       "PRAGMA ignore_check_constraints = ON; INSERT INTO events(run_id, rank, instr_id, kind, "
       "stage, microbatch, start_s, end_s, bytes) VALUES (2, 0, 0, 'BOGUS', 0, 0, 0, 1, 0)");
  const std::string a_bytes = FileBytes(s.a), b_bytes = FileBytes(s.b);

  const std::string fresh = FreshPath("atomic_fresh");
  Result<MergeReport> failed = MergeDatabases(fresh, {s.a, s.b});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("input '" + s.b + "'"), std::string::npos)
      << failed.status().message();
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "a new OUT is removed";

  const std::string out = FreshPath("atomic_out");
  {
    ExperimentDb db = *ExperimentDb::Open(out);
    AddRun(db, *db.EnsureExperiment("mine", "", ""), "k", "2025-01-01T00:00:00.000Z", 42);
  }
  const std::string before = Rows(out, "SELECT * FROM runs") + Rows(out, "SELECT * FROM events") +
                             Rows(out, "SELECT * FROM experiments");
  ASSERT_FALSE(MergeDatabases(out, {s.a, s.b}).ok());
  EXPECT_EQ(Rows(out, "SELECT * FROM runs") + Rows(out, "SELECT * FROM events") +
                Rows(out, "SELECT * FROM experiments"),
            before);
  EXPECT_EQ(Rows(out, "SELECT count(*) FROM merged_runs"), "0\n");
  EXPECT_EQ(FileBytes(s.a), a_bytes) << "inputs are never written";
  EXPECT_EQ(FileBytes(s.b), b_bytes);
}

TEST(DbMerge, RefusesInputsOfAnotherSchemaForeignFilesAndOutItself) {
  const std::string old = FreshPath("old");
  { ASSERT_TRUE(ExperimentDb::Open(old, kSchemaVersion - 1).ok()); }
  const std::string out = FreshPath("refuse_out");
  Result<MergeReport> r = MergeDatabases(out, {old});
  ASSERT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(
                fmt::format("input '{}': schema version {}", old, kSchemaVersion - 1)),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(std::filesystem::exists(out)) << "refused before OUT is touched";

  const std::string garbage = FreshPath("garbage");
  std::ofstream(garbage) << std::string(8192, 'x');
  r = MergeDatabases(out, {garbage});
  ASSERT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("not a pipette database"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));

  // A foreign OUT is not written (no pipette tables added to it).
  const std::string good = FreshPath("refuse_good");
  { ASSERT_TRUE(ExperimentDb::Open(good).ok()); }
  const std::string foreign = FreshPath("refuse_foreign");
  Exec(foreign, "CREATE TABLE notes(text TEXT)");
  const std::string foreign_bytes = FileBytes(foreign);
  r = MergeDatabases(foreign, {good});
  ASSERT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("OUT: --db = '" + foreign + "': not a pipette database"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(FileBytes(foreign), foreign_bytes);

  r = MergeDatabases(out, {FreshPath("missing")});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  { ASSERT_TRUE(ExperimentDb::Open(out).ok()); }
  r = MergeDatabases(out, {out});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MergeDatabases(out, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pipette
