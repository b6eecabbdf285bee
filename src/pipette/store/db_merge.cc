#include "pipette/store/db_merge.h"

#include <fmt/core.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "pipette/common/host_machine.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_config.h"
#include "pipette/store/sqlite.h"

namespace pipette {
namespace {

using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

// Where an error of input `path` comes from.
Status InInput(const std::string& path, const Status& status) {
  return Status::FromCode(status.code(), fmt::format("input '{}': {}", path, status.message()));
}

std::string Join(const std::vector<std::string>& names, std::string_view prefix = "") {
  std::string out;
  for (const std::string& name : names) {
    out += (out.empty() ? "" : ", ") + std::string(prefix) + name;
  }
  return out;
}

// "?, ?, ..." with `n` placeholders.
std::string Placeholders(std::size_t n) {
  std::string out;
  for (std::size_t k = 0; k < n; ++k) out += k == 0 ? "?" : ", ?";
  return out;
}

// The columns of `table` in OUT's schema, in order.
Result<std::vector<std::string>> ColumnsOf(sqlite3* db, const std::string& table) {
  Statement s(db, fmt::format("SELECT name FROM pragma_table_info('{}') ORDER BY cid", table));
  PIPETTE_RETURN_IF_ERROR(s.status("read the schema"));
  std::vector<std::string> columns;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) columns.push_back(s.Text(0));
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "read the schema"));
  return columns;
}

// A table whose rows belong to one run or one calibration: copied with its key remapped.
struct ChildTable {
  std::string name;
  std::string key;  // run_id or calibration_id
  std::vector<std::string> columns;
};

// How OUT's tables are joined: the columns of the tables that get new ids, and the child tables.
struct Layout {
  std::vector<std::string> run_columns;          // runs, without id
  std::vector<std::string> calibration_columns;  // calibrations, without id
  std::vector<ChildTable> children;
};

constexpr const char* kProvenanceTable = "merged_runs";

// Reads OUT's schema; FailedPrecondition for a table this merge does not know how to join (a
// newer migration's table that needs a rule here).
Result<Layout> ReadLayout(sqlite3* db) {
  Statement s(db,
              "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
              "ORDER BY name");
  PIPETTE_RETURN_IF_ERROR(s.status("read the schema"));
  Layout layout;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    const std::string table = s.Text(0);
    PIPETTE_ASSIGN_OR_RETURN(std::vector<std::string> columns, ColumnsOf(db, table));
    if (table == "experiments" || table == kProvenanceTable || table == "fits") continue;
    if (table == "runs" || table == "calibrations") {
      std::erase(columns, std::string("id"));
      (table == "runs" ? layout.run_columns : layout.calibration_columns) = std::move(columns);
      continue;
    }
    std::string key;
    for (const char* k : {"run_id", "calibration_id"}) {
      if (std::find(columns.begin(), columns.end(), k) != columns.end()) key = k;
    }
    if (key.empty()) {
      return Status::FailedPrecondition(fmt::format(
          "table '{}' is keyed by neither run_id nor calibration_id: db merge does not know how to "
          "join it (store/db_merge.cc needs a rule for it)",
          table));
    }
    layout.children.push_back({table, key, std::move(columns)});
  }
  PIPETTE_RETURN_IF_ERROR(s.Done(rc, "read the schema"));
  return layout;
}

// A run's identity: the process that recorded it and when it started.
using RunIdentity = std::tuple<std::string, std::int64_t, std::string, std::string>;

// What OUT holds, kept up to date as rows are added.
struct OutIndex {
  std::map<std::string, std::int64_t> experiments;                           // name -> id
  std::map<RunIdentity, std::int64_t> runs;                                  // identity -> id
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> points;       // finished runs
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t>  // engine, host,
      calibrations, fits;                                                    // created_at -> id
};

Result<OutIndex> IndexOut(sqlite3* db) {
  OutIndex index;
  Statement e(db, "SELECT id, name FROM experiments");
  PIPETTE_RETURN_IF_ERROR(e.status("read experiments"));
  int rc;
  while ((rc = e.Step()) == SQLITE_ROW) index.experiments[e.Text(1)] = e.Int(0);
  PIPETTE_RETURN_IF_ERROR(e.Done(rc, "read experiments"));
  Statement r(db,
              "SELECT id, host, pid, owner_start, started_at, experiment_id, point_key, status "
              "FROM runs ORDER BY id");
  PIPETTE_RETURN_IF_ERROR(r.status("read runs"));
  while ((rc = r.Step()) == SQLITE_ROW) {
    index.runs.emplace(RunIdentity{r.Text(1), r.Int(2), r.Text(3), r.Text(4)}, r.Int(0));
    const std::string status = r.Text(7);
    if (!r.IsNull(5) && !r.Text(6).empty() && (status == "ok" || status == "oom")) {
      index.points.emplace(std::pair{r.Int(5), r.Text(6)}, r.Int(0));  // the first one stays
    }
  }
  PIPETTE_RETURN_IF_ERROR(r.Done(rc, "read runs"));
  Statement c(db, "SELECT id, engine, host, created_at FROM calibrations");
  PIPETTE_RETURN_IF_ERROR(c.status("read calibrations"));
  while ((rc = c.Step()) == SQLITE_ROW) {
    index.calibrations.emplace(std::tuple{c.Text(1), c.Text(2), c.Text(3)}, c.Int(0));
  }
  PIPETTE_RETURN_IF_ERROR(c.Done(rc, "read calibrations"));
  Statement f(db, "SELECT id, engine, host, created_at FROM fits");
  PIPETTE_RETURN_IF_ERROR(f.status("read fits"));
  while ((rc = f.Step()) == SQLITE_ROW) {
    index.fits.emplace(std::tuple{f.Text(1), f.Text(2), f.Text(3)}, f.Int(0));
  }
  PIPETTE_RETURN_IF_ERROR(f.Done(rc, "read fits"));
  return index;
}

// Copies the rows of `table` whose key is `from` in `in` to OUT with key `to`; returns how many.
Result<std::int64_t> CopyChildRows(sqlite3* in, sqlite3* out, const ChildTable& table,
                                   std::int64_t from, std::int64_t to) {
  Statement read(in, fmt::format("SELECT {} FROM {} WHERE {} = ? ORDER BY rowid",
                                 Join(table.columns), table.name, table.key));
  PIPETTE_RETURN_IF_ERROR(read.status(fmt::format("read {}", table.name)));
  Statement write(out, fmt::format("INSERT INTO {}({}) VALUES ({})", table.name,
                                   Join(table.columns), Placeholders(table.columns.size())));
  PIPETTE_RETURN_IF_ERROR(write.status(fmt::format("write {}", table.name)));
  read.Bind(1, from);
  std::int64_t rows = 0;
  int rc;
  while ((rc = read.Step()) == SQLITE_ROW) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (table.columns[c] == table.key) {
        write.Bind(static_cast<int>(c + 1), to);
      } else {
        write.BindValue(static_cast<int>(c + 1), read.Value(static_cast<int>(c)));
      }
    }
    PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("write {}", table.name)));
    ++rows;
  }
  PIPETTE_RETURN_IF_ERROR(read.Done(rc, fmt::format("read {}", table.name)));
  return rows;
}

// The state of one input's merge: its id maps.
struct InputMaps {
  std::map<std::int64_t, std::int64_t> experiments, runs, calibrations, fits;
  std::vector<std::int64_t> copied_fits;  // OUT's ids, whose run references RemapFitRuns rewrites
};

Status MergeExperiments(sqlite3* in, sqlite3* out, OutIndex& index, InputMaps& maps,
                        MergeSourceReport& report) {
  Statement read(in, "SELECT id, name, description, spec FROM experiments ORDER BY id");
  PIPETTE_RETURN_IF_ERROR(read.status("read experiments"));
  Statement write(out, "INSERT INTO experiments(name, description, spec) VALUES (?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(write.status("write experiments"));
  int rc;
  while ((rc = read.Step()) == SQLITE_ROW) {
    const std::string name = read.Text(1);
    auto it = index.experiments.find(name);
    if (it == index.experiments.end()) {
      write.Bind(1, name).BindValue(2, read.Value(2)).BindValue(3, read.Value(3));
      PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("experiment '{}'", name)));
      it = index.experiments.emplace(name, sqlite3_last_insert_rowid(out)).first;
      ++report.experiments_added;
    }
    maps.experiments[read.Int(0)] = it->second;
  }
  return read.Done(rc, "read experiments");
}

Status MergeCalibrations(sqlite3* in, sqlite3* out, const Layout& layout, OutIndex& index,
                         InputMaps& maps, MergeSourceReport& report) {
  const std::vector<std::string>& columns = layout.calibration_columns;
  Statement read(
      in, fmt::format("SELECT id, engine, host, created_at, {} FROM calibrations ORDER BY id",
                      Join(columns)));
  PIPETTE_RETURN_IF_ERROR(read.status("read calibrations"));
  Statement write(out, fmt::format("INSERT INTO calibrations({}) VALUES ({})", Join(columns),
                                   Placeholders(columns.size())));
  PIPETTE_RETURN_IF_ERROR(write.status("write calibrations"));
  int rc;
  while ((rc = read.Step()) == SQLITE_ROW) {
    const auto identity = std::tuple{read.Text(1), read.Text(2), read.Text(3)};
    if (auto it = index.calibrations.find(identity); it != index.calibrations.end()) {
      maps.calibrations[read.Int(0)] = it->second;
      continue;
    }
    for (std::size_t c = 0; c < columns.size(); ++c) {
      write.BindValue(static_cast<int>(c + 1), read.Value(static_cast<int>(c + 4)));
    }
    PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("calibration {}", read.Int(0))));
    const std::int64_t id = sqlite3_last_insert_rowid(out);
    index.calibrations.emplace(identity, id);
    maps.calibrations[read.Int(0)] = id;
    ++report.calibrations_copied;
    for (const ChildTable& child : layout.children) {
      if (child.key != "calibration_id") continue;
      PIPETTE_ASSIGN_OR_RETURN(const std::int64_t rows,
                               CopyChildRows(in, out, child, read.Int(0), id));
      report.rows_copied += rows;
    }
  }
  return read.Done(rc, "read calibrations");
}

// Copies the input's fits OUT does not have (the same engine, host and creation time: the same
// fit), before the runs (whose predictions name fits); their run references are rewritten by
// RemapFitRuns once the runs are in.
Status MergeFits(sqlite3* in, sqlite3* out, OutIndex& index, InputMaps& maps,
                 MergeSourceReport& report) {
  Statement read(in,
                 "SELECT id, created_at, host, version, engine, runs, fit FROM fits ORDER BY id");
  PIPETTE_RETURN_IF_ERROR(read.status("read fits"));
  Statement write(out,
                  "INSERT INTO fits(created_at, host, version, engine, runs, fit) VALUES (?, ?, ?, "
                  "?, ?, ?)");
  PIPETTE_RETURN_IF_ERROR(write.status("write fits"));
  int rc;
  while ((rc = read.Step()) == SQLITE_ROW) {
    const auto identity = std::tuple{read.Text(4), read.Text(2), read.Text(1)};
    if (auto it = index.fits.find(identity); it != index.fits.end()) {
      maps.fits[read.Int(0)] = it->second;
      continue;
    }
    for (int c = 1; c <= 6; ++c) write.BindValue(c, read.Value(c));
    PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("fit {}", read.Int(0))));
    const std::int64_t id = sqlite3_last_insert_rowid(out);
    index.fits.emplace(identity, id);
    maps.fits[read.Int(0)] = id;
    maps.copied_fits.push_back(id);
    ++report.fits_copied;
  }
  return read.Done(rc, "read fits");
}

// The copied fits' runs (their `runs` list and every row's "run" in the document) through the
// input's run map.
Status RemapFitRuns(sqlite3* out, const InputMaps& maps) {
  auto remap = [&](nlohmann::json& value) {
    if (!value.is_number_integer()) return;
    const auto it = maps.runs.find(value.get<std::int64_t>());
    if (it != maps.runs.end()) value = it->second;
  };
  for (const std::int64_t id : maps.copied_fits) {
    Statement read(out, "SELECT runs, fit FROM fits WHERE id = ?");
    PIPETTE_RETURN_IF_ERROR(read.status("read fit"));
    read.Bind(1, id);
    const int rc = read.Step();
    if (rc != SQLITE_ROW) return read.Done(rc, "read fit");
    nlohmann::json runs = nlohmann::json::parse(read.Text(0), nullptr, false);
    nlohmann::json doc = nlohmann::json::parse(read.Text(1), nullptr, false);
    if (runs.is_array()) {
      for (auto& r : runs) remap(r);
    }
    if (doc.is_object() && doc.contains("rows") && doc["rows"].is_array()) {
      for (auto& row : doc["rows"]) {
        if (row.is_object() && row.contains("run")) remap(row["run"]);
      }
    }
    Statement write(out, "UPDATE fits SET runs = ?, fit = ? WHERE id = ?");
    PIPETTE_RETURN_IF_ERROR(write.status("write fit"));
    write.Bind(1, runs.dump()).Bind(2, doc.dump()).Bind(3, id);
    PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("fit {}", id)));
  }
  return Status::Ok();
}

// The facts of an input run that decide whether it is copied.
struct InputRun {
  std::int64_t id = 0;
  RunIdentity identity;
  std::optional<std::int64_t> experiment;  // OUT's id
  std::string point_key, status;
};

// Whether `run` is copied; when not, records which OUT run stands for it (maps.runs) and why.
bool ShouldCopy(const InputRun& run, const OutIndex& index, InputMaps& maps,
                MergeSourceReport& report) {
  if (run.status == "running") {
    ++report.running;
    return false;
  }
  if (auto it = index.runs.find(run.identity); it != index.runs.end()) {
    maps.runs[run.id] = it->second;
    ++report.duplicate_runs;
    return false;
  }
  const bool finished = run.status == "ok" || run.status == "oom";
  if (finished && run.experiment && !run.point_key.empty()) {
    if (auto it = index.points.find({*run.experiment, run.point_key}); it != index.points.end()) {
      maps.runs[run.id] = it->second;
      ++report.duplicate_points;
      return false;
    }
  }
  return true;
}

// The provenance of input run `id`: its own provenance row when the input is itself a merge, else
// (the input, id, now).
Status WriteProvenance(sqlite3* in, sqlite3* out, const std::string& source, std::int64_t id,
                       std::int64_t new_id) {
  Statement read(in, fmt::format("SELECT source, source_run_id, merged_at FROM {} WHERE run_id = ?",
                                 kProvenanceTable));
  PIPETTE_RETURN_IF_ERROR(read.status("read provenance"));
  Statement write(out,
                  fmt::format("INSERT INTO {}(run_id, source, source_run_id, merged_at) VALUES "
                              "(?, ?, ?, ?)",
                              kProvenanceTable));
  PIPETTE_RETURN_IF_ERROR(write.status("write provenance"));
  write.Bind(1, new_id);
  read.Bind(1, id);
  const int rc = read.Step();
  if (rc == SQLITE_ROW) {
    write.BindValue(2, read.Value(0)).BindValue(3, read.Value(1)).BindValue(4, read.Value(2));
  } else {
    PIPETTE_RETURN_IF_ERROR(read.Done(rc, "read provenance"));
    write.Bind(2, source).Bind(3, id).Bind(4, UtcNow());
  }
  return write.Run("write provenance");
}

// Column `name`'s index in `columns` (present by construction: the schema has it).
int IndexOf(const std::vector<std::string>& columns, std::string_view name) {
  return static_cast<int>(std::find(columns.begin(), columns.end(), name) - columns.begin());
}

// The runs merged so far and in all inputs, for MergeProgress.
struct RunsDone {
  const MergeProgress* progress = nullptr;
  std::int64_t done = 0;
  std::int64_t total = 0;
  void One() {
    ++done;
    if (progress->report) progress->report(done, total);
  }
};

Status MergeRuns(sqlite3* in, sqlite3* out, const std::string& source, const Layout& layout,
                 OutIndex& index, InputMaps& maps, MergeSourceReport& report, RunsDone& runs) {
  const std::vector<std::string>& columns = layout.run_columns;
  const int experiment_col = IndexOf(columns, "experiment_id"),
            config_col = IndexOf(columns, "config");
  Statement read(in,
                 fmt::format("SELECT id, host, pid, owner_start, started_at, point_key, status, {} "
                             "FROM runs ORDER BY id",
                             Join(columns)));
  PIPETTE_RETURN_IF_ERROR(read.status("read runs"));
  Statement write(out, fmt::format("INSERT INTO runs({}) VALUES ({})", Join(columns),
                                   Placeholders(columns.size())));
  PIPETTE_RETURN_IF_ERROR(write.status("write runs"));
  constexpr int kFirst = 7;  // the first of `columns` in `read`
  int rc;
  while ((rc = read.Step()) == SQLITE_ROW) {
    ++report.runs;
    runs.One();
    InputRun run{read.Int(0),
                 {read.Text(1), read.Int(2), read.Text(3), read.Text(4)},
                 {},
                 read.Text(5),
                 read.Text(6)};
    if (!read.IsNull(kFirst + experiment_col)) {
      const auto it = maps.experiments.find(read.Int(kFirst + experiment_col));
      if (it == maps.experiments.end()) {
        return Status::IoError(fmt::format("run {}: experiment {} does not exist", run.id,
                                           read.Int(kFirst + experiment_col)));
      }
      run.experiment = it->second;
    }
    if (!ShouldCopy(run, index, maps, report)) continue;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const int i = static_cast<int>(c);
      if (i == experiment_col && run.experiment) {
        write.Bind(i + 1, *run.experiment);
      } else if (i == config_col) {
        write.Bind(i + 1, RemapRunReferences(read.Text(kFirst + i), maps.runs, maps.calibrations,
                                             maps.fits));
      } else {
        write.BindValue(i + 1, read.Value(kFirst + i));
      }
    }
    PIPETTE_RETURN_IF_ERROR(write.Run(fmt::format("run {}", run.id)));
    const std::int64_t id = sqlite3_last_insert_rowid(out);
    maps.runs[run.id] = id;
    index.runs.emplace(run.identity, id);
    if (run.experiment && !run.point_key.empty() && (run.status == "ok" || run.status == "oom")) {
      index.points.emplace(std::pair{*run.experiment, run.point_key}, id);
    }
    for (const ChildTable& child : layout.children) {
      if (child.key != "run_id") continue;
      PIPETTE_ASSIGN_OR_RETURN(const std::int64_t rows, CopyChildRows(in, out, child, run.id, id));
      report.rows_copied += rows;
    }
    PIPETTE_RETURN_IF_ERROR(WriteProvenance(in, out, source, run.id, id));
    ++report.copied;
  }
  return read.Done(rc, "read runs");
}

// Opens input `path` for reading, as every read command does (ExperimentDb::OpenReadOnly: never a
// write, so another user's file in a directory this user cannot write, or one on a read-only file
// system, is read): a pipette database of exactly this schema version (an empty file is an empty
// database; a FIFO or other file that is not a regular one is refused before it is opened).
Result<Connection> OpenInput(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return Status::NotFound(fmt::format("input '{}': no such file", path));
  }
  Result<ExperimentDb> checked = ExperimentDb::OpenReadOnly(path);
  if (!checked.ok()) return InInput(path, checked.status());
  if (checked->schema_version() != kSchemaVersion) {
    return Status::FailedPrecondition(fmt::format(
        "input '{}': schema version {}, this pipette merges only version {} (`pipette runs --db "
        "{} --repair` migrates an older one in place; merge a newer one with a newer pipette)",
        path, checked->schema_version(), kSchemaVersion, path));
  }
  return std::move(*checked).TakeConnection();
}

// Merges every input into `out` (an open connection) in one transaction.
Status MergeAll(sqlite3* out, const std::vector<std::string>& inputs,
                std::vector<Connection>& connections, MergeReport& report,
                const MergeProgress& progress) {
  Transaction tx(out);  // rolls back on every error below
  PIPETTE_RETURN_IF_ERROR(tx.Begin());
  PIPETTE_ASSIGN_OR_RETURN(const Layout layout, ReadLayout(out));
  PIPETTE_ASSIGN_OR_RETURN(OutIndex index, IndexOut(out));
  RunsDone runs{&progress};
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Statement count(connections[k].get(), "SELECT COUNT(*) FROM runs");
    PIPETTE_RETURN_IF_ERROR(count.status("count runs"));
    if (count.Step() == SQLITE_ROW) runs.total += count.Int(0);
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    sqlite3* in = connections[k].get();
    MergeSourceReport source{inputs[k]};
    InputMaps maps;
    std::error_code error;
    const std::string absolute = std::filesystem::absolute(inputs[k], error).string();
    Status s = MergeExperiments(in, out, index, maps, source);
    if (s.ok()) s = MergeCalibrations(in, out, layout, index, maps, source);
    if (s.ok()) s = MergeFits(in, out, index, maps, source);
    if (s.ok()) {
      s = MergeRuns(in, out, error ? inputs[k] : absolute, layout, index, maps, source, runs);
    }
    if (s.ok()) s = RemapFitRuns(out, maps);
    if (!s.ok()) return InInput(inputs[k], s);
    report.sources.push_back(std::move(source));
  }
  return tx.Commit();
}

}  // namespace

Result<MergeReport> MergeDatabases(const std::string& out, const std::vector<std::string>& inputs,
                                   const MergeProgress& progress) {
  if (inputs.empty()) return Status::InvalidArgument("db merge: give at least one input database");
  PIPETTE_RETURN_IF_ERROR(CheckDatabasePath(out));
  std::vector<Connection> connections;
  for (const std::string& path : inputs) {
    if (SameFile(path, out)) {
      return Status::InvalidArgument(
          fmt::format("input '{}' is OUT itself: a database cannot be merged into itself", path));
    }
    PIPETTE_ASSIGN_OR_RETURN(Connection c, OpenInput(path));
    connections.push_back(std::move(c));
  }
  MergeReport report;
  std::error_code error;
  report.created = !std::filesystem::exists(out, error);
  if (!report.created) {
    // Only a pipette database is merged into (an older one is migrated); never a foreign file.
    Result<ExperimentDb> existing = ExperimentDb::OpenReadOnly(out);
    if (!existing.ok() && existing.status().code() != StatusCode::kFailedPrecondition) {
      return Status::FromCode(existing.status().code(),
                              fmt::format("OUT: {}", existing.status().message()));
    }
  }
  Status merged = Status::Ok();
  {
    Result<ExperimentDb> created = ExperimentDb::Open(out);  // creates or migrates OUT
    if (!created.ok()) return created.status();
    const Connection connection = Connection::Open(out, SQLITE_OPEN_READWRITE);
    merged = connection.OpenStatus(fmt::format("OUT '{}'", out));
    if (merged.ok()) {
      (void)connection.Exec("PRAGMA foreign_keys = ON");
      merged = MergeAll(connection.get(), inputs, connections, report, progress);
    }
  }
  if (!merged.ok()) {
    if (report.created) {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(out + suffix, error);
    }
    return merged;
  }
  return report;
}

}  // namespace pipette
