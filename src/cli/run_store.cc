#include "cli/run_store.h"

#include <fmt/core.h>

#include <iostream>
#include <utility>

#include "cli/exit_code.h"
#include "pipette/common/build_info.h"

namespace pipette::cli {

CLI::Validator DatabasePathValidator() {
  return CLI::Validator(
      [](std::string& path) {
        // CLI11 puts "--db: " before what a check returns; the rule follows the value.
        const Status checked = CheckDatabasePath(path);
        if (checked.ok()) return std::string();
        std::string message = checked.message();
        if (message.rfind("--db = ", 0) == 0) message.erase(0, 7);
        return message;
      },
      "FILE", "database file");
}

void AddRecordOptions(CLI::App* cmd, RecordOptions& o) {
  CLI::Option* db = cmd->add_option("--db", o.db, "Experiment database (SQLite)")
                        ->capture_default_str()
                        ->check(DatabasePathValidator())
                        ->group(kOutputGroup);
  cmd->add_flag("--no-db", o.no_db, "Do not record the run")->excludes(db)->group(kOutputGroup);
  cmd->add_option("--trace", o.trace,
                  "What the run records: none (metrics), summary (+ memory, all-reduces), full "
                  "(+ every instruction)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "summary", "full"}))
      ->group(kOutputGroup);
  cmd->add_option("--experiment", o.experiment, "Record the run under this experiment")
      ->group(kOutputGroup);
  cmd->add_option("--point-key", o.point_key, "The run's point in its experiment (sweeps)")
      ->group(kOutputGroup);
}

nlohmann::ordered_json LibraryVersions() {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [name, version] : CoreLibraryVersions()) json[name] = version;
  json["CLI11"] = CLI11_VERSION;
  json["nlohmann-json"] = fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                                      NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH);
  return json;
}

Result<RunRecorder> BeginRecording(const RecordOptions& o, std::string_view engine,
                                   const nlohmann::ordered_json& config) {
  if (o.no_db) return RunRecorder();
  RunRecord run;
  run.engine = std::string(engine);
  run.config = config.dump();
  run.version = Version();
  run.git_rev = GitRevision();
  run.libraries = LibraryVersions().dump();
  return RunRecorder::Begin({o.db, TraceLevelOf(o.trace), o.experiment, o.point_key},
                            std::move(run));
}

int ReportPointHeld(std::string_view command, const RecordOptions& o, const RunRecorder& r,
                    bool json) {
  const PointClaim& held = *r.held();
  if (json) {
    nlohmann::ordered_json out = {{"point_key", o.point_key},
                                  {"held_by_run", held.run_id},
                                  {"held_status", held.holder},
                                  {"db", o.db}};
    std::cout << out.dump() << "\n";
  } else {
    fmt::print("# point '{}' of experiment '{}' is held by run {} ({}) in {}: not run again\n",
               o.point_key, o.experiment, held.run_id, held.holder, o.db);
  }
  fmt::print(stderr, "pipette {}: --point-key = '{}': held by run {} ({}); not run again\n",
             command, o.point_key, held.run_id, held.holder);
  return kExitOk;
}

}  // namespace pipette::cli
