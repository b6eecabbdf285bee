// `pipette fit RUN... [--calibration ID|latest] [--db FILE] [--format text|json]`: fits the cost
// model to measured runs (fidelity/cost_fit.h; with a calibration's GEMM table, GEMMs priced by it)
// and records it; `pipette fits [--db FILE] [--id ID] [--format text|json]`:
// the recorded fits, or one in full.
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/common/printable.h"
#include "pipette/fidelity/cost_fit.h"
#include "pipette/report/fit_report.h"
#include "pipette/store/db_access.h"
#include "pipette/study/prediction.h"

namespace pipette::cli {
namespace {

struct FitOptions {
  std::vector<std::string> runs;
  std::string calibration;  // empty: no GEMM table
  std::string db = "pipette.db";
  std::string format = "text";
};

struct FitsOptions {
  std::string db = "pipette.db";
  std::int64_t id = 0;  // 0: list them all
  std::string format = "text";
};

void Print(const CostFit& fit, const std::string& format) {
  if (format == "json") {
    std::cout << FitJson(fit).dump() << std::endl;
  } else {
    PrintFit(fit);
  }
}

int RunFit(const FitOptions& o) {
  auto fail = [](const Status& status) { return ReportError("fit", status); };
  if (!o.calibration.empty() && o.calibration != "latest") {  // checked before the database
    Result<std::int64_t> id = ParseFitName(o.calibration, "--calibration");
    if (!id.ok()) {
      return fail(Status::InvalidArgument(
          fmt::format("--calibration = '{}': must be a calibration id (pipette calibrations) or "
                      "'latest'",
                      Printable(o.calibration))));
    }
  }
  Result<ExperimentDb> db = OpenExistingDb(o.db, DbAccess::kWrite);
  if (!db.ok()) return fail(db.status());
  std::vector<RunData> runs;
  for (const std::string& text : o.runs) {
    Result<std::vector<std::int64_t>> ids = ResolveRuns(*db, text);
    if (!ids.ok()) return fail(ids.status());
    for (const std::int64_t id : *ids) {
      Result<RunData> run = db->LoadRun(id);
      if (!run.ok()) return fail(run.status());
      runs.push_back(std::move(*run));
    }
  }
  std::optional<Calibration> calibration;
  if (!o.calibration.empty()) {
    Result<Calibration> found = FindCalibration(*db, o.calibration);
    if (!found.ok()) return fail(found.status());
    calibration = std::move(*found);
  }
  Result<CostFit> fit = FitCosts(runs, calibration ? &*calibration : nullptr);
  if (!fit.ok()) return fail(fit.status());
  Result<std::int64_t> id = db->RecordFit(StoredFitOf(*fit));
  if (!id.ok()) return fail(id.status());
  Result<StoredFit> stored = db->LoadFit(*id);  // with its id and time
  if (!stored.ok()) return fail(stored.status());
  Result<CostFit> recorded = FitOf(*stored);
  if (!recorded.ok()) return fail(recorded.status());
  Print(*recorded, o.format);
  if (o.format == "text") fmt::print("# recorded as fit {} in {}\n", *id, o.db);
  if (StepDrift(*recorded) > kSteadyDrift) {
    fmt::print(stderr, "pipette fit: warning: {}\n", DriftWarning(*recorded));
  }
  return kExitOk;
}

int RunFits(const FitsOptions& o) {
  auto fail = [](const Status& status) { return ReportError("fits", status); };
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return fail(db.status());
  if (o.id != 0) {
    Result<CostFit> fit = FindFit(*db, std::to_string(o.id), "--id");
    if (!fit.ok()) return fail(fit.status());
    Print(*fit, o.format);
    return kExitOk;
  }
  Result<std::vector<StoredFit>> all = db->ListFits();
  if (!all.ok()) return fail(all.status());
  std::vector<CostFit> fits;
  for (const StoredFit& stored : *all) {
    Result<CostFit> fit = FitOf(stored);
    if (!fit.ok()) return fail(fit.status());
    fits.push_back(std::move(*fit));
  }
  if (o.format == "json") {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const CostFit& f : fits) list.push_back(FitJson(f));
    std::cout << list.dump() << std::endl;
  } else {
    PrintFitList(fits);
  }
  return kExitOk;
}

}  // namespace

void RegisterFitCommands(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* fit = app.add_subcommand(
      "fit", "Fit the cost model to measured runs (ids, lists, last, lastN) and record it");
  fit->add_option("runs", o->runs, "Measured runs: ids, comma lists, last, lastN")->required();
  fit->add_option("--calibration", o->calibration,
                  "Price GEMMs by this calibration's GEMM table (an id or 'latest': this host's "
                  "newest; pipette calibrate measures one)");
  fit->add_option("--db", o->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  fit->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  fit->callback([o, &exit_code] { exit_code = RunFit(*o); });

  auto f = std::make_shared<FitsOptions>();
  CLI::App* fits =
      app.add_subcommand("fits", "List the cost models `pipette fit` recorded, or show one (--id)");
  fits->add_option("--db", f->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  fits->add_option("--id", f->id, "Show this fit with its rows")->check(CLI::PositiveNumber);
  fits->add_option("--format", f->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  fits->callback([f, &exit_code] { exit_code = RunFits(*f); });
}

}  // namespace pipette::cli
