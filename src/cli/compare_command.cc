// `pipette compare A B [--db FILE] [--format text|json] [--worst N]`: a predicted (simulated) and
// a measured run of the same program joined event by event (fidelity/run_compare.h): the step time
// of each and its error, per event kind the median and 90th percentile of the start and duration
// errors, the worst instructions and peak memory per rank. A sim run is always the prediction;
// two runs of one engine compare A (predicted) against B (measured). Runs of different programs
// are refused (exit 2).
#include <fmt/core.h>

#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/compare_experiment.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "pipette/common/printable.h"
#include "pipette/fidelity/run_compare.h"
#include "pipette/report/comparison_report.h"
#include "pipette/store/db_access.h"

namespace pipette::cli {
namespace {

struct CompareOptions {
  std::string a, b;
  std::string experiment;  // instead of a, b
  std::string db = "pipette.db";
  std::string format = "text";
  int worst = 10;
};

Result<std::int64_t> ParseRunId(std::string_view name, const std::string& text) {
  std::int64_t id = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, id);
  if (text.empty() || error != std::errc() || ptr != end || id < 1) {
    return Status::InvalidArgument(
        fmt::format("run {} = '{}': must be a run id (a whole number "
                    ">= 1, as `pipette runs` lists them)",
                    name, Printable(text)));
  }
  return id;
}

// Run `id` with its events; NotFound naming the positional argument when there is no such run.
Result<RunData> Load(ExperimentDb& db, std::string_view name, std::int64_t id,
                     const std::string& path) {
  Result<RunData> run = db.LoadRun(id);
  if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(fmt::format(
        "run {} = {}: no such run in '{}' (pipette runs lists them)", name, id, Printable(path)));
  }
  return run;
}

Status Compare(const CompareOptions& o) {
  if (!o.experiment.empty()) {
    if (!o.a.empty() || !o.b.empty()) {
      return Status::InvalidArgument(fmt::format(
          "--experiment = '{}' with runs A B: compare either two runs or an experiment's "
          "predictions",
          Printable(o.experiment)));
    }
    return CompareExperiment(o.db, o.experiment, o.format);
  }
  if (o.a.empty() || o.b.empty()) {
    return Status::InvalidArgument(
        "compare needs two runs A B (a prediction and a measurement) or --experiment NAME");
  }
  PIPETTE_ASSIGN_OR_RETURN(std::int64_t a_id, ParseRunId("A", o.a));
  PIPETTE_ASSIGN_OR_RETURN(std::int64_t b_id, ParseRunId("B", o.b));
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(o.db));
  PIPETTE_ASSIGN_OR_RETURN(RunData a, Load(db, "A", a_id, o.db));
  PIPETTE_ASSIGN_OR_RETURN(RunData b, Load(db, "B", b_id, o.db));
  const auto [predicted, measured] = OrderForComparison(a, b);
  PIPETTE_ASSIGN_OR_RETURN(RunComparison c, CompareRuns(*predicted, *measured, o.worst));
  if (o.format == "json") {
    std::cout << ComparisonJson(c).dump() << "\n";
  } else {
    std::cout << ComparisonText(c, *predicted, o.db);
  }
  return Status::Ok();
}

}  // namespace

void RegisterCompareCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Join a simulated and a measured run of one program event by event; the errors");
  cmd->add_option("A", o->a, "Run id (a sim run is always the prediction)");
  cmd->add_option("B", o->b, "Run id (same engine as A: A predicts B)");
  cmd->add_option("--experiment", o->experiment,
                  "Instead of A B: every prediction of experiment NAME against its measured run "
                  "(step-time MAPE)")
      ->check(NonEmpty());
  cmd->add_option("--db", o->db, "Experiment database (opened read-only)")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--worst", o->worst, "How many of the worst events to list")
      ->capture_default_str()
      ->check(AtLeast(0));
  cmd->callback([o, &exit_code] {
    const Status s = Compare(*o);
    exit_code = s.ok() ? kExitOk : ReportError("compare", s);
  });
}

}  // namespace pipette::cli
