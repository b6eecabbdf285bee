#include "cli/run_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <iostream>

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
  cmd->add_option("--db", o.db, "Experiment database (SQLite)")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_flag("--no-db", o.no_db, "Do not record the run");
  cmd->add_option("--trace", o.trace,
                  "What the run records: none (metrics), summary (+ memory, all-reduces), full "
                  "(+ every instruction)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "summary", "full"}));
  cmd->add_option("--experiment", o.experiment, "Record the run under this experiment");
  cmd->add_option("--point-key", o.point_key, "The run's point in its experiment (sweeps)");
}

void AddPerRank(std::vector<MetricRow>& metrics, const std::string& name,
                const std::vector<double>& values, const std::string& unit) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    metrics.push_back({fmt::format("{}[{}]", name, k), values[k], unit});
  }
}

nlohmann::ordered_json LibraryVersions() {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [name, version] : CoreLibraryVersions()) json[name] = version;
  json["CLI11"] = CLI11_VERSION;
  json["nlohmann-json"] = fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                                      NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH);
  return json;
}

Result<RunRecorder> RunRecorder::Begin(const RecordOptions& o, std::string_view engine,
                                       const nlohmann::ordered_json& config) {
  RunRecorder recorder;
  if (o.no_db) return recorder;
  recorder.level_ = o.trace == "none"      ? TraceLevel::kNone
                    : o.trace == "summary" ? TraceLevel::kSummary
                                           : TraceLevel::kFull;
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, ExperimentDb::Open(o.db));
  recorder.db_ = std::make_unique<ExperimentDb>(std::move(db));
  recorder.path_ = o.db;
  RunRecord run;
  if (!o.experiment.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(run.experiment_id,
                             recorder.db_->EnsureExperiment(o.experiment, "", ""));
  }
  run.engine = std::string(engine);
  run.config = config.dump();
  run.version = Version();
  run.git_rev = GitRevision();
  run.libraries = LibraryVersions().dump();
  if (o.point_key.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(recorder.run_id_, recorder.db_->BeginRun(run));
    return recorder;
  }
  PIPETTE_ASSIGN_OR_RETURN(PointClaim claim, recorder.db_->ClaimPoint(run, o.point_key));
  if (claim.claimed) {
    recorder.run_id_ = claim.run_id;
  } else {
    recorder.db_.reset();
    recorder.held_ = claim;
  }
  return recorder;
}

RunRecorder::RunRecorder(RunRecorder&& other) noexcept
    : db_(std::move(other.db_)),
      run_id_(other.run_id_),
      path_(std::move(other.path_)),
      level_(other.level_),
      finished_(other.finished_),
      held_(std::move(other.held_)) {}

RunRecorder& RunRecorder::operator=(RunRecorder&& other) noexcept {
  if (this != &other) {
    FailUnfinished();
    db_ = std::move(other.db_);
    run_id_ = other.run_id_;
    path_ = std::move(other.path_);
    level_ = other.level_;
    finished_ = other.finished_;
    held_ = std::move(other.held_);
  }
  return *this;
}

RunRecorder::~RunRecorder() { FailUnfinished(); }

void RunRecorder::FailUnfinished() {
  if (!enabled() || finished_) return;
  (void)Fail("pipette ended before finishing the run (an error or exception after it began)");
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

Status RunRecorder::Finish(RunData data, std::string_view status) {
  if (!enabled()) return Status::Ok();
  if (level_ == TraceLevel::kNone) {
    data.events.clear();
    data.memory.clear();
  } else if (level_ == TraceLevel::kSummary) {
    std::erase_if(data.events, [](const EventRow& e) {
      return e.kind != EventKind::kAllReduce && e.kind != EventKind::kOptimizer;
    });
  }
  Status written = db_->FinishRun(run_id_, data, status);
  finished_ = true;
  if (!written.ok()) {
    (void)db_->FailRun(run_id_, fmt::format("recording the run failed: {}", written.message()));
  }
  return written;
}

Status RunRecorder::Fail(std::string_view error) {
  if (!enabled()) return Status::Ok();
  finished_ = true;
  return db_->FailRun(run_id_, error);
}

}  // namespace pipette::cli
