// ExperimentDb, fits: cost models fitted to measured runs (`pipette fit`).
#include <fmt/core.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/common/build_info.h"
#include "pipette/common/host_machine.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Statement;

constexpr const char* kFitColumns = "id, created_at, host, version, engine, runs, fit";

StoredFit ReadFit(const Statement& s) {
  StoredFit f;
  f.id = s.Int(0);
  f.created_at = s.Text(1);
  f.host = s.Text(2);
  f.version = s.Text(3);
  f.engine = s.Text(4);
  const nlohmann::json runs = nlohmann::json::parse(s.Text(5), nullptr, false);
  if (runs.is_array()) {
    for (const auto& r : runs) {
      if (r.is_number_integer()) f.runs.push_back(r.get<std::int64_t>());
    }
  }
  f.document = s.Text(6);
  return f;
}

}  // namespace

Result<std::int64_t> ExperimentDb::RecordFit(const StoredFit& f) {
  Statement s(db_.get(),
              fmt::format("INSERT INTO fits({}) VALUES (NULL, ?, ?, ?, ?, ?, ?)", kFitColumns));
  PIPETTE_RETURN_IF_ERROR(s.status("insert fit"));
  s.Bind(1, f.created_at.empty() ? UtcNow() : f.created_at);
  s.Bind(2, f.host.empty() ? HostName() : f.host);
  s.Bind(3, f.version.empty() ? std::string(Version()) : f.version);
  s.Bind(4, f.engine).Bind(5, nlohmann::json(f.runs).dump()).Bind(6, f.document);
  PIPETTE_RETURN_IF_ERROR(s.Run("insert fit"));
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<StoredFit> ExperimentDb::LoadFit(std::int64_t id) {
  if (schema_version() < 7) {
    return Status::NotFound(fmt::format(
        "fit {}: this database has no fits (schema {}; run `pipette fit RUN --db FILE`)", id,
        schema_version()));
  }
  Statement s(db_.get(), fmt::format("SELECT {} FROM fits WHERE id = ?", kFitColumns));
  PIPETTE_RETURN_IF_ERROR(s.status("load fit"));
  s.Bind(1, id);
  const int rc = s.Step();
  if (rc != SQLITE_ROW) {
    PIPETTE_RETURN_IF_ERROR(s.Done(rc, "load fit"));
    return Status::NotFound(
        fmt::format("fit {}: no such fit in this database (pipette fits lists them)", id));
  }
  return ReadFit(s);
}

Result<std::vector<StoredFit>> ExperimentDb::ListFits() {
  std::vector<StoredFit> out;
  if (schema_version() < 7) return out;
  Statement s(db_.get(), fmt::format("SELECT {} FROM fits ORDER BY id", kFitColumns));
  PIPETTE_RETURN_IF_ERROR(s.status("list fits"));
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(ReadFit(s));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "list fits"));
  return out;
}

}  // namespace pipette
