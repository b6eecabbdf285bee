// ExperimentDb, runs: recording and reading them with their events, memory and metrics; sweep
// points; stale runs.
#include <fmt/core.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "pipette/common/host_machine.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/process_owner.h"
#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

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

}  // namespace

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

// The steps run `run_id` recorded as it went (its metric steps_recorded), if any.
Result<std::optional<int>> ExperimentDb::StepsRecorded(std::int64_t run_id) {
  Statement s(db_.get(), "SELECT value FROM metrics WHERE run_id = ? AND name = 'steps_recorded'");
  PIPETTE_RETURN_IF_ERROR(s.status("read steps recorded"));
  s.Bind(1, run_id);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return std::optional<int>(static_cast<int>(s.Real(0)));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "read steps recorded"));
  return std::optional<int>();
}

namespace {

// FailedPrecondition unless run `run_id` is `running` (NotFound for no such run).
Status CheckRunning(sqlite3* db, std::int64_t run_id) {
  Statement check(db, "SELECT status FROM runs WHERE id = ?");
  PIPETTE_RETURN_IF_ERROR(check.status("find run"));
  check.Bind(1, run_id);
  const int rc = check.Step();
  if (rc != SQLITE_ROW) {
    PIPETTE_RETURN_IF_ERROR(check.Done(rc, "find run"));
    return Status::NotFound(fmt::format("run {}: no such run", run_id));
  }
  if (check.Text(0) != kRunRunning) {
    return Status::FailedPrecondition(
        fmt::format("run {}: already finished with status '{}'", run_id, check.Text(0)));
  }
  return Status::Ok();
}

}  // namespace

Status ExperimentDb::InsertRows(std::int64_t run_id, const RunData& data) {
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
  return Status::Ok();
}

Status ExperimentDb::FinishRun(std::int64_t run_id, const RunData& data, std::string_view status,
                               std::string_view error) {
  if (status != kRunOk && status != kRunOom && status != kRunFailed) {
    return Status::Internal(fmt::format("run {}: final status '{}'", run_id, status));
  }
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  PIPETTE_RETURN_IF_ERROR(CheckRunning(db_.get(), run_id));
  // The rows recorded step by step give way to the whole run's.
  for (const char* table : {"events", "memory", "metrics"}) {
    Statement clear(db_.get(), fmt::format("DELETE FROM {} WHERE run_id = ?", table));
    PIPETTE_RETURN_IF_ERROR(clear.status("replace the rows recorded by step"));
    PIPETTE_RETURN_IF_ERROR(clear.Bind(1, run_id).Run("replace the rows recorded by step"));
  }
  PIPETTE_RETURN_IF_ERROR(InsertRows(run_id, data));
  Statement finish(db_.get(), "UPDATE runs SET status = ?, error = ?, ended_at = ? WHERE id = ?");
  PIPETTE_RETURN_IF_ERROR(finish.status("finish run"));
  finish.Bind(1, status).Bind(2, error).Bind(3, UtcNow()).Bind(4, run_id);
  PIPETTE_RETURN_IF_ERROR(finish.Run("finish run"));
  return tx.Commit();
}

Status ExperimentDb::RecordStep(std::int64_t run_id, const RunData& step_rows, int steps_recorded) {
  Transaction tx(db_.get());
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  PIPETTE_RETURN_IF_ERROR(CheckRunning(db_.get(), run_id));
  PIPETTE_RETURN_IF_ERROR(InsertRows(run_id, step_rows));
  Statement count(db_.get(),
                  "INSERT OR REPLACE INTO metrics(run_id, name, value, unit) VALUES (?, "
                  "'steps_recorded', ?, 'steps')");
  PIPETTE_RETURN_IF_ERROR(count.status("count the steps recorded"));
  count.Bind(1, run_id).Bind(2, static_cast<double>(steps_recorded));
  PIPETTE_RETURN_IF_ERROR(count.Run("count the steps recorded"));
  return tx.Commit();
}

Status ExperimentDb::FailRun(std::int64_t run_id, std::string_view error) {
  std::string why(error);
  if (Result<std::optional<int>> kept = StepsRecorded(run_id); kept.ok() && kept->has_value()) {
    why += fmt::format("; it kept its first {} step{}", **kept, **kept == 1 ? "" : "s");
  }
  Statement s(db_.get(),
              "UPDATE runs SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND status "
              "= 'running'");
  PIPETTE_RETURN_IF_ERROR(s.status("fail run"));
  return s.Bind(1, why).Bind(2, UtcNow()).Bind(3, run_id).Run("fail run");
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
    while ((rc = s.Step()) == SQLITE_ROW) {  // NULL: a value that is not a number
      data.metrics.push_back({s.Text(0), s.IsNull(1) ? std::nan("") : s.Real(1), s.Text(2)});
    }
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

Result<std::vector<RepairedRun>> ExperimentDb::RepairStale(bool all_hosts) {
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
  std::vector<RepairedRun> repaired;
  for (const RunningRun& run : running) {
    const OwnerState state = CheckOwner(run.owner, host);
    if (state == OwnerState::kAlive || (state == OwnerState::kElsewhere && !all_hosts)) continue;
    PIPETTE_ASSIGN_OR_RETURN(const std::optional<int> kept, StepsRecorded(run.id));
    PIPETTE_RETURN_IF_ERROR(FailStale(run.id, run.owner, "pipette runs --repair"));
    repaired.push_back({run.id, kept});
  }
  return repaired;
}

}  // namespace pipette
