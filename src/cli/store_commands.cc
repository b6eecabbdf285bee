// `pipette runs [--db FILE] [--experiment NAME] [--repair [--all-hosts]] [--check]
// [--format text|json]`: the runs in an experiment database; --repair marks runs whose process died
// as failed; --check checks the whole database's integrity.
// `pipette export --db FILE --run ID|last --format chrome|csv [--step S] [--out FILE]`: a run's
// trace as Chrome trace-event JSON or PyTorch's compute-only CSV of the executed order.
// `pipette plot timeline|bubble|memory|compare|steptime|errors --db FILE --run
// ID[,ID...]|last|lastN
// [--out FILE.png|.svg] [--size WxH] [--x KEY] [--step N] [--colour-by KEY] [--marker-by KEY]`: a
// figure drawn with gnuplot from the database.
#include <fmt/core.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "pipette/common/printable.h"
#include "pipette/plot/figure.h"
#include "pipette/report/run_list_report.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_config.h"
#include "pipette/store/trace_export.h"

namespace pipette::cli {
namespace {

struct RunsOptions {
  std::string db = "pipette.db";
  std::string experiment;
  bool repair = false;
  bool all_hosts = false;
  bool check = false;
  std::string format = "text";
};

// runs --check: the whole database's integrity (PRAGMA integrity_check), read-only. IoError listing
// the damage when there is any.
Status CheckWholeDatabase(ExperimentDb& db, const std::string& path) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<std::string> damage,
                           db.CheckIntegrity(/*quick=*/false));
  if (damage.empty()) {
    fmt::print(stderr, "pipette runs: '{}' is intact (PRAGMA integrity_check)\n", Printable(path));
    return Status::Ok();
  }
  std::string lines;
  for (const std::string& line : damage) lines += "\n  " + line;
  return Status::IoError(fmt::format("--db = '{}': the database is damaged ({} finding{}{}):{}",
                                     path, damage.size(), damage.size() == 1 ? "" : "s",
                                     damage.size() >= 100 ? ", the first 100" : "", lines));
}

int RunRuns(const RunsOptions& o) {
  Result<ExperimentDb> db = OpenExistingDb(o.db, o.repair ? DbAccess::kWrite : DbAccess::kRead);
  if (!db.ok()) return ReportError("runs", db.status());
  if (o.check) {
    if (Status intact = CheckWholeDatabase(*db, o.db); !intact.ok()) {
      return ReportError("runs", intact);
    }
  }
  if (o.repair) {
    Result<std::vector<RepairedRun>> repaired = db->RepairStale(o.all_hosts);
    if (!repaired.ok()) return ReportError("runs", repaired.status());
    fmt::print(stderr, "pipette runs: marked {} stale run{} failed\n", repaired->size(),
               repaired->size() == 1 ? "" : "s");
    for (const RepairedRun& r : *repaired) {
      if (r.steps_kept) {
        fmt::print(stderr, "pipette runs: run {} kept its first {} step{}\n", r.run_id,
                   *r.steps_kept, *r.steps_kept == 1 ? "" : "s");
      }
    }
  }
  RunFilter filter;
  if (!o.experiment.empty()) {
    Result<std::optional<std::int64_t>> id = db->FindExperiment(o.experiment);
    if (!id.ok()) return ReportError("runs", id.status());
    if (!*id) {
      return ReportError(
          "runs", Status::NotFound(fmt::format("--experiment = '{}': no such experiment in '{}'",
                                               o.experiment, o.db)));
    }
    filter.experiment_id = **id;
  }
  Result<std::vector<RunRecord>> runs = db->ListRuns(filter);
  if (!runs.ok()) return ReportError("runs", runs.status());
  if (o.format == "json") {
    std::cout << RunListJson(*runs).dump() << "\n";
  } else {
    std::cout << RunListText(*runs, o.db);
  }
  return kExitOk;
}

struct ExportOptions {
  std::string db = "pipette.db";
  std::string run = "last";
  std::string format = "chrome";
  int step = 0;
  CLI::Option* step_option = nullptr;
  std::string out;  // empty: standard output
};

int RunExport(const ExportOptions& o) {
  if (o.step_option->count() > 0 && o.format != "csv") {
    return ReportError("export", Status::InvalidArgument(fmt::format(
                                     "--step = {}: applies only with --format csv (a Chrome "
                                     "trace holds every step of the run)",
                                     o.step)));
  }
  if (!o.out.empty()) {
    if (Status s = CheckOutIsNotTheDatabase(o.out, o.db); !s.ok()) return ReportError("export", s);
  }
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return ReportError("export", db.status());
  Result<std::vector<std::int64_t>> ids = ResolveRuns(*db, o.run);
  if (!ids.ok()) return ReportError("export", ids.status());
  if (ids->size() != 1) {
    return ReportError("export", Status::InvalidArgument(
                                     fmt::format("--run = '{}': export takes one run", o.run)));
  }
  Result<RunData> run = db->LoadRun(ids->front());
  if (!run.ok()) return ReportError("export", run.status());
  if (Status s = ExportRun(*run, o.format, o.step, o.out); !s.ok()) return ReportError("export", s);
  return kExitOk;
}

struct PlotCommandOptions {
  std::string kind;
  std::string db = "pipette.db";
  std::string run = "last";
  std::string out;  // default: KIND.png
  std::string size = "1200x0";
  std::string x = std::string(NameOf(RunKey::kM));
  CLI::Option* x_option = nullptr;
  int step = -1;
  std::string colour_by;  // compare: empty: chosen
  std::string marker_by;
};

int RunPlot(const PlotCommandOptions& o) {
  Result<PlotKind> kind = ParsePlotKind(o.kind);
  if (!kind.ok()) return ReportError("plot", kind.status());
  PlotOptions options;
  options.out = o.out.empty() ? o.kind + ".png" : o.out;
  if (Status s = CheckOutIsNotTheDatabase(options.out, o.db); !s.ok())
    return ReportError("plot", s);
  options.x_key = o.x;
  if (*kind == PlotKind::kErrors && o.x_option->count() == 0) {
    options.x_key = std::string(NameOf(RunKey::kSchedule));
  }
  if (o.x_option->count() > 0 && *kind != PlotKind::kBubble && *kind != PlotKind::kStepTime &&
      *kind != PlotKind::kErrors) {
    return ReportError("plot", Status::InvalidArgument(fmt::format(
                                   "--x = '{}': applies only to the bubble, steptime and errors "
                                   "figures, not to {} (its x axis is fixed)",
                                   o.x, o.kind)));
  }
  if ((!o.colour_by.empty() || !o.marker_by.empty()) && *kind != PlotKind::kCompare) {
    return ReportError("plot", Status::InvalidArgument(fmt::format(
                                   "--{} = '{}': applies only to the compare figure, not to {}",
                                   o.colour_by.empty() ? "marker-by" : "colour-by",
                                   o.colour_by.empty() ? o.marker_by : o.colour_by, o.kind)));
  }
  options.colour_by = o.colour_by;
  options.marker_by = o.marker_by;
  if (o.step < -1 || (o.step >= 0 && *kind != PlotKind::kTimeline)) {
    return ReportError(
        "plot", Status::InvalidArgument(
                    fmt::format("--step = {}: a timeline's step, >= 0 (timeline only)", o.step)));
  }
  options.step = o.step;
  Result<PlotSize> size = ParsePlotSize(o.size);
  if (!size.ok()) return ReportError("plot", size.status());
  const int width = size->width, height = size->height;
  options.width = width;
  options.height = height;
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return ReportError("plot", db.status());
  Result<std::vector<std::int64_t>> ids = ResolveRuns(*db, o.run);
  if (!ids.ok()) return ReportError("plot", ids.status());
  std::vector<RunData> runs;
  for (std::int64_t id : *ids) {
    Result<RunData> run = db->LoadRun(id, *kind == PlotKind::kTimeline);
    if (!run.ok()) return ReportError("plot", run.status());
    runs.push_back(std::move(*run));
  }
  Status drawn = DrawFigure(*kind, runs, options);
  if (!drawn.ok()) return ReportError("plot", drawn);
  fmt::print("{}\n", options.out);
  return kExitOk;
}

}  // namespace

void RegisterStoreCommands(CLI::App& app, int& exit_code) {
  auto runs = std::make_shared<RunsOptions>();
  CLI::App* cmd = app.add_subcommand("runs", "List the runs of an experiment database");
  cmd->add_option("--db", runs->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--experiment", runs->experiment, "Only this experiment's runs");
  CLI::Option* repair =
      cmd->add_flag("--repair", runs->repair, "Mark runs whose process died as failed");
  cmd->add_flag("--all-hosts", runs->all_hosts,
                "With --repair: also runs still `running` on other hosts")
      ->needs(repair);
  cmd->add_flag("--check", runs->check,
                "Check the whole database's integrity first (PRAGMA integrity_check); exit 1 "
                "listing the damage");
  cmd->add_option("--format", runs->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([runs, &exit_code] { exit_code = RunRuns(*runs); });

  auto exp = std::make_shared<ExportOptions>();
  cmd = app.add_subcommand("export", "Export a run's trace (Chrome trace JSON or CSV)");
  cmd->add_option("--db", exp->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--run", exp->run, "Run id, or last")->capture_default_str();
  cmd->add_option("--format", exp->format, "chrome or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"chrome", "csv"}));
  exp->step_option =
      cmd->add_option("--step", exp->step, "csv: the training step")->capture_default_str();
  cmd->add_option("--out", exp->out, "Output file (default: standard output)")->check(OutputPath());
  cmd->callback([exp, &exit_code] { exit_code = RunExport(*exp); });

  auto plot = std::make_shared<PlotCommandOptions>();
  cmd = app.add_subcommand("plot", "Draw a figure of recorded runs with gnuplot");
  cmd->add_option("kind", plot->kind, "timeline, bubble, memory, compare, steptime or errors")
      ->required();
  cmd->add_option("--db", plot->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--run", plot->run,
                  "Run ids (comma-separated), last or lastN; compare: simulated and measured runs, "
                  "paired by configuration")
      ->capture_default_str();
  cmd->add_option("--out", plot->out, "Output .png or .svg (default: KIND.png)")
      ->check(OutputPath());
  cmd->add_option("--size", plot->size, "WIDTHxHEIGHT in pixels (height 0: default)")
      ->capture_default_str();
  plot->x_option =
      cmd->add_option("--x", plot->x,
                      "bubble, steptime: the configuration key on the x axis; errors: the key "
                      "grouping the pairs (default schedule)")
          ->capture_default_str();
  cmd->add_option("--colour-by", plot->colour_by,
                  "compare: the configuration key that colours the points (none: one colour; "
                  "default: chosen beyond 8 pairs)");
  cmd->add_option("--marker-by", plot->marker_by,
                  "compare: the configuration key that picks the markers (none: one marker)");
  cmd->add_option("--step", plot->step, "timeline: draw only this step, from its start")
      ->capture_default_str();
  cmd->callback([plot, &exit_code] { exit_code = RunPlot(*plot); });
}

}  // namespace pipette::cli
