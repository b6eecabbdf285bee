// `pipette report [--db FILE] [--experiment NAME] --out DIR`: a study as one static HTML page,
// DIR/index.html (report/study_report.h): the experiment's runs as a table and every figure of the
// study inline as SVG: its sweep spec's [[figures]] (the runs each selects, as `pipette sweep`
// draws them), and, when the spec draws no compare figure, the compare and errors figures of its
// predictions. Without --experiment the database's one experiment (or, with none, all its runs).
// The page is written whole or not at all; the figures are drawn aside and inlined.
#include <fmt/core.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/common/build_info.h"
#include "pipette/common/printable.h"
#include "pipette/common/replacing_file.h"
#include "pipette/plot/figure.h"
#include "pipette/plot/run_labels.h"
#include "pipette/report/study_report.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_config.h"
#include "pipette/study/sweep_spec.h"

namespace pipette::cli {
namespace {

struct ReportOptions {
  std::string db = "pipette.db";
  std::string experiment;
  std::string out;
};

int ReportFail(const Status& status) { return ReportError("report", status); }

// The experiment to report: the one named, else the database's only one; nullopt for a database
// without experiments (all its runs).
Result<std::optional<ExperimentInfo>> ChooseExperiment(ExperimentDb& db, const ReportOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<ExperimentInfo> all, db.ListExperiments());
  std::string names;
  for (const ExperimentInfo& e : all) names += (names.empty() ? "" : ", ") + e.name;
  if (!o.experiment.empty()) {
    for (const ExperimentInfo& e : all) {
      if (e.name == o.experiment) return std::optional<ExperimentInfo>(e);
    }
    return Status::NotFound(fmt::format("--experiment = '{}': no such experiment in '{}' ({})",
                                        Printable(o.experiment), o.db,
                                        all.empty() ? "it has none" : "it has " + names));
  }
  if (all.size() > 1) {
    return Status::InvalidArgument(
        fmt::format("--experiment: '{}' holds {} experiments ({}): name the one to report", o.db,
                    all.size(), names));
  }
  if (all.empty()) return std::optional<ExperimentInfo>();
  return std::optional<ExperimentInfo>(all.front());
}

// A figure drawn as SVG in `dir` and read back inline.
Result<StudyFigure> Draw(PlotKind kind, const std::vector<RunData>& runs, PlotOptions options,
                         const std::string& dir, const std::string& title) {
  static int count = 0;
  options.out = fmt::format("{}/figure-{}.svg", dir, ++count);
  if (options.width == 1200) options.width = 1000;
  PIPETTE_RETURN_IF_ERROR(DrawFigure(kind, runs, options));
  std::ifstream in(options.out);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ignored;
  std::filesystem::remove(options.out, ignored);
  const std::string svg = InlineSvg(text.str());
  if (svg.empty()) return Status::IoError(fmt::format("figure '{}': gnuplot wrote no SVG", title));
  return StudyFigure{title, svg};
}

// The runs a spec figure selects: each selected point's finished run (and its prediction), as
// `pipette sweep` draws it.
Result<std::vector<RunData>> FigureRuns(ExperimentDb& db, std::int64_t experiment,
                                        const SweepSpec& spec, const SweepFigure& figure) {
  std::vector<RunData> runs;
  for (const SweepPoint& point : ExpandPoints(spec)) {
    if (!FigureSelects(figure, point)) continue;
    for (const std::string& key : {point.key, point.key + std::string(kPredictedKeySuffix)}) {
      PIPETTE_ASSIGN_OR_RETURN(const std::optional<std::int64_t> id,
                               db.FindFinishedRun(experiment, key));
      if (!id) continue;
      PIPETTE_ASSIGN_OR_RETURN(RunData run, db.LoadRun(*id, figure.kind == "timeline"));
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

// Every prediction's newest run (a simulated run of a recorded run of the study; several
// predictions of one run, e.g. with medians and with means: the last) after the run it predicts.
std::vector<RunData> NewestPredictions(const std::vector<RunData>& runs) {
  std::map<std::int64_t, const RunData*> newest;  // measured run id -> its newest prediction
  std::map<std::int64_t, const RunData*> by_id;
  for (const RunData& run : runs) by_id[run.run.id] = &run;
  for (const RunData& run : runs) {
    const std::optional<std::int64_t> of = ReadRunConfig(run.run.config).costs_from;
    if (run.run.engine != "sim" || !of || run.run.status != kRunOk || !by_id.contains(*of)) {
      continue;
    }
    const RunData*& kept = newest[*of];
    if (kept == nullptr || kept->run.id < run.run.id) kept = &run;
  }
  std::vector<RunData> pairs;
  for (const auto& [measured, prediction] : newest) {
    pairs.push_back(*prediction);
    pairs.push_back(*by_id[measured]);
  }
  return pairs;
}

// The study's figures into `report`: the spec's, then compare and errors of the predictions if
// none compares. A figure that cannot be drawn for the runs it has (a key they lack, runs that do
// not pair) is named in `report.not_drawn`; gnuplot's failure or the database's is the command's.
Status StudyFigures(ExperimentDb& db, const std::optional<ExperimentInfo>& e,
                    const std::string& dir, StudyReport& report) {
  const auto keep = [&](const std::string& title, Result<StudyFigure> drawn) -> Status {
    if (drawn.ok()) {
      report.figures.push_back(std::move(*drawn));
      return Status::Ok();
    }
    if (drawn.status().code() != StatusCode::kInvalidArgument) return drawn.status();
    fmt::print(stderr, "pipette report: warning: figure '{}' not drawn: {}\n", title,
               drawn.status().message());
    report.not_drawn.push_back(title + ": " + std::string(drawn.status().message()));
    return Status::Ok();
  };
  bool compared = false;
  if (e && !e->spec.empty()) {
    Result<SweepSpec> spec = ParseSweepSpec(e->spec, "experiment " + e->name + "'s spec");
    if (!spec.ok()) {
      report.not_drawn.push_back("the spec's figures: " + std::string(spec.status().message()));
    }
    for (const SweepFigure& f : spec.ok() ? spec->figures : std::vector<SweepFigure>{}) {
      const std::string title = fmt::format("{}: {}", f.kind, f.out);
      PlotOptions options;
      if (!f.x.empty()) options.x_key = f.x;
      if (f.kind == "errors" && f.x.empty()) options.x_key = "schedule";
      options.colour_by = f.colour_by;
      options.marker_by = f.marker_by;
      PIPETTE_ASSIGN_OR_RETURN(const PlotKind kind, ParsePlotKind(f.kind));
      PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunData> runs, FigureRuns(db, e->id, *spec, f));
      PIPETTE_RETURN_IF_ERROR(keep(title, Draw(kind, runs, options, dir, title)));
      compared = compared || f.kind == "compare";
    }
  }
  if (compared) return Status::Ok();
  const std::vector<RunData> pairs = NewestPredictions(report.runs);
  if (pairs.empty()) return Status::Ok();
  PlotOptions errors;
  errors.x_key = "schedule";
  for (const auto& [kind, options, title] :
       {std::tuple{PlotKind::kCompare, PlotOptions{}, "compare: every prediction"},
        std::tuple{PlotKind::kErrors, errors, "errors: every prediction, by schedule"}}) {
    PIPETTE_RETURN_IF_ERROR(keep(title, Draw(kind, pairs, options, dir, title)));
  }
  return Status::Ok();
}

// A scratch directory for the figures (under $TMPDIR), removed when it goes.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/pipette-report-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }  // empty: it could not be made

 private:
  std::string path_;
};

// The page, written whole into DIR/index.html (or not at all).
Status WritePage(const ReportOptions& o, const StudyReport& report) {
  std::error_code error;
  std::filesystem::create_directories(o.out, error);
  if (error) {
    return Status::IoError(
        fmt::format("--out = '{}': cannot create the directory: {}", o.out, error.message()));
  }
  const std::string page = o.out + "/index.html";
  ReplacingFile file(page);
  std::ofstream out(file.write_path());
  out << StudyReportHtml(report, fmt::format("pipette {} ({})", Version(), GitRevision()));
  out.close();
  if (!out) {
    return Status::IoError(
        fmt::format("--out = '{}': cannot write {}: {}", o.out, page, std::strerror(errno)));
  }
  return file.Commit();
}

int RunReport(const ReportOptions& o) {
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return ReportFail(db.status());
  Result<std::optional<ExperimentInfo>> experiment = ChooseExperiment(*db, o);
  if (!experiment.ok()) return ReportFail(experiment.status());
  RunFilter filter;
  if (*experiment) filter.experiment_id = (*experiment)->id;
  Result<std::vector<RunRecord>> records = db->ListRuns(filter);
  if (!records.ok()) return ReportFail(records.status());
  StudyReport report;
  report.db = o.db;
  if (*experiment) {
    report.experiment = (*experiment)->name;
    report.description = (*experiment)->description;
  }
  for (const RunRecord& r : *records) {
    Result<RunData> run = db->LoadRun(r.id, /*with_events=*/false);
    if (!run.ok()) return ReportFail(run.status());
    report.runs.push_back(std::move(*run));
  }
  const ScratchDir scratch;
  if (scratch.path().empty()) {
    return ReportFail(Status::IoError(
        fmt::format("cannot make a scratch directory for the figures under $TMPDIR: {}",
                    std::strerror(errno))));
  }
  if (Status s = StudyFigures(*db, *experiment, scratch.path(), report); !s.ok()) {
    return ReportFail(s);
  }
  if (Status s = WritePage(o, report); !s.ok()) return ReportFail(s);
  fmt::print("{}/index.html\n", o.out);
  return kExitOk;
}

}  // namespace

void RegisterReportCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write a study's runs and figures as one static HTML page (DIR/index.html)");
  cmd->add_option("--db", o->db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--experiment", o->experiment,
                  "The experiment to report (default: the database's only one)");
  cmd->add_option("--out", o->out, "The directory to write index.html into")->required();
  cmd->callback([o, &exit_code] { exit_code = RunReport(*o); });
}

}  // namespace pipette::cli
