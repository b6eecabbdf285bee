// ExperimentDb, calibrations: a machine's (`pipette calibrate`) and their raw points.
#include <fmt/core.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "pipette/common/build_info.h"
#include "pipette/common/host_machine.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

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
  Statement gemm(
      db_.get(),
      "INSERT INTO calibration_gemms(calibration_id, m, n, k, pass, ranks, seconds) VALUES (?, ?, "
      "?, ?, ?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(gemm.status("insert calibration GEMM"));
  for (const GemmTiming& g : c.gemms) {
    gemm.Bind(1, id).Bind(2, g.m).Bind(3, g.n).Bind(4, g.k).Bind(5, GemmPassName(g.pass));
    gemm.Bind(6, g.ranks).Bind(7, g.seconds);
    PIPETTE_RETURN_IF_ERROR(
        gemm.Run(fmt::format("calibration GEMM {} {}x{}x{}", GemmPassName(g.pass), g.m, g.n, g.k)));
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
  if (schema_version() < 8) return c;  // read-only reads of an older database: no GEMM table
  Statement g(db_.get(),
              "SELECT m, n, k, ranks, seconds, pass FROM calibration_gemms WHERE calibration_id = "
              "? ORDER BY rowid");
  PIPETTE_RETURN_IF_ERROR(g.status("load calibration GEMMs"));
  g.Bind(1, id);
  while ((rc = g.Step()) == SQLITE_ROW) {
    // The schema's CHECK admits F, I and W only.
    c.gemms.push_back({g.Int(0), g.Int(1), g.Int(2), static_cast<int>(g.Int(3)), g.Real(4),
                       GemmPassOf(g.Text(5)).value_or(GemmPass::kForward)});
  }
  PIPETTE_RETURN_IF_ERROR(g.Done(rc, "load calibration GEMMs"));
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
