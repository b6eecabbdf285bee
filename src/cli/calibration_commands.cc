// `pipette calibrations [--db FILE] [--id ID] [--format text|json]`: the calibrations recorded by
// `pipette calibrate` (one row each), or one of them in full with its points. `calibrate` itself
// lives in pipette-calibrate (MPI); it is listed here for --help only (main() execs it first).
#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/report/calibration_report.h"
#include "pipette/store/db_access.h"

namespace pipette::cli {
namespace {

struct CalibrationsOptions {
  std::string db = "pipette.db";
  std::int64_t id = 0;  // 0: list them all
  std::string format = "text";
};

int CalibrationsFail(const Status& status) { return ReportError("calibrations", status); }

int RunCalibrations(const CalibrationsOptions& o) {
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return CalibrationsFail(db.status());
  const bool json = o.format == "json";
  if (o.id != 0) {
    Result<Calibration> c = db->LoadCalibration(o.id);
    if (!c.ok() && c.status().code() == StatusCode::kNotFound) {
      return CalibrationsFail(
          Status::InvalidArgument(fmt::format("--id = {}: {}", o.id, c.status().message())));
    }
    if (!c.ok()) return CalibrationsFail(c.status());
    if (json) {
      std::cout << CalibrationJson(*c).dump() << std::endl;
    } else {
      PrintCalibration(*c);
    }
    return kExitOk;
  }
  Result<std::vector<Calibration>> all = db->ListCalibrations();
  if (!all.ok()) return CalibrationsFail(all.status());
  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Calibration& c : *all) list.push_back(CalibrationJson(c));
    std::cout << list.dump() << std::endl;
  } else {
    PrintCalibrationList(*all);
  }
  return kExitOk;
}

}  // namespace

void RegisterCalibrationCommands(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrationsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrations", "List the calibrations `pipette calibrate` recorded, or show one (--id)");
  cmd->add_option("--db", o->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--id", o->id, "Show this calibration with its points")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([o, &exit_code] { exit_code = RunCalibrations(*o); });
  // Listed for --help; main() hands `pipette calibrate ...` to the pipette-calibrate binary first.
  app.add_subcommand("calibrate",
                     "Measure this machine for the simulator and record a calibration "
                     "(pipette calibrate --help lists its options)");
}

}  // namespace pipette::cli
