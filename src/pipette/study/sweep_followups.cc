#include "pipette/study/sweep_followups.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "pipette/common/exit_code.h"
#include "pipette/common/printable.h"
#include "pipette/common/subprocess.h"
#include "pipette/study/sweep_runner.h"

namespace pipette {

std::string FigurePath(const SweepSpec& spec, const SweepFigure& figure) {
  const std::filesystem::path out(figure.out);
  if (out.is_absolute()) return out.string();
  return (std::filesystem::path(spec.path).parent_path() / out).lexically_normal().string();
}

FigureCounts DrawFigures(const SweepSpec& spec, const std::string& db_path, bool have_plot,
                         ExperimentDb& db, std::int64_t experiment_id,
                         const std::vector<SweepPoint>& points, const SweepNote& note) {
  FigureCounts counts;
  for (const SweepFigure& figure : spec.figures) {
    const std::string out = FigurePath(spec, figure);
    if (!have_plot) {
      note(fmt::format("warning: {} figure {} not drawn: this pipette has no `plot` command yet",
                       figure.kind, out));
      ++counts.skipped;
      continue;
    }
    std::string ids;
    for (const SweepPoint& point : points) {
      if (!FigureSelects(figure, point)) continue;
      Result<std::optional<std::int64_t>> run = db.FindFinishedRun(experiment_id, point.key);
      if (!run.ok() || !*run) continue;
      ids += (ids.empty() ? "" : ",") + std::to_string(**run);
      if (!spec.predict) continue;
      run = db.FindFinishedRun(experiment_id, point.key + std::string(kPredictedKeySuffix));
      if (run.ok() && *run) ids += "," + std::to_string(**run);
    }
    if (ids.empty()) {
      note(fmt::format("warning: {} figure {} not drawn: no finished run", figure.kind, out));
      ++counts.skipped;
      continue;
    }
    std::vector<std::string> args{"pipette", "plot", figure.kind, "--db", db_path,
                                  "--run",   ids,    "--out",     out};
    if (!figure.x.empty()) args.insert(args.end(), {"--x", figure.x});
    if (!figure.colour_by.empty()) args.insert(args.end(), {"--colour-by", figure.colour_by});
    if (!figure.marker_by.empty()) args.insert(args.end(), {"--marker-by", figure.marker_by});
    Result<Subprocess> plot = Subprocess::Run(kSelfBinary, args);
    if (plot.ok() && plot->Wait().code == kExitOk) {
      note(fmt::format("drew {} figure {}", figure.kind, out));
      ++counts.drawn;
      continue;
    }
    const std::string why = plot.ok() ? plot->Wait().Describe() + ": " + LastLine(plot->err())
                                      : plot.status().message();
    note(fmt::format("warning: {} figure {} failed: {}", figure.kind, out, why));
    ++counts.failed;
  }
  return counts;
}

PredictionCounts PredictMeasuredPoints(const SweepSpec& spec, const std::string& db_path,
                                       ExperimentDb& db, std::int64_t experiment_id,
                                       const std::vector<SweepPoint>& points,
                                       const SweepNote& note) {
  PredictionCounts counts;
  if (!spec.predict) return counts;
  for (const SweepPoint& point : points) {
    Result<std::optional<std::int64_t>> measured = db.FindFinishedRun(experiment_id, point.key);
    if (!measured.ok() || !*measured) continue;
    const std::string key = point.key + std::string(kPredictedKeySuffix);
    Result<std::optional<std::int64_t>> predicted = db.FindFinishedRun(experiment_id, key);
    if (predicted.ok() && *predicted) {
      ++counts.already;
      continue;
    }
    std::vector<std::string> args{
        "pipette",     "simulate", "--costs-from", std::to_string(**measured),
        "--db",        db_path,    "--experiment", spec.name,
        "--point-key", key,        "--format",     "json"};
    if (!spec.calibration.empty()) args.insert(args.end(), {"--calibration", spec.calibration});
    if (!spec.fit.empty()) args.insert(args.end(), {"--fit", spec.fit});
    Result<Subprocess> child = Subprocess::Run(kSelfBinary, args);
    if (child.ok() && child->Wait().code == kExitOk) {
      // A prediction another sweep holds (exit 0, JSON naming the holder) did not run here.
      const bool held = nlohmann::json::parse(child->out(), nullptr, false).contains("held_by_run");
      ++(held ? counts.held : counts.ran);
      continue;
    }
    ++counts.failed;
    const std::string why = child.ok() ? child->Wait().Describe() + ": " + LastLine(child->err())
                                       : child.status().message();
    note(fmt::format("warning: the prediction of run {} ({}) failed: {}", **measured,
                     Printable(point.key), why));
  }
  return counts;
}

std::string DryRunText(const SweepSpec& spec, const std::string& db_path,
                       const std::vector<SweepPoint>& points,
                       const std::vector<std::optional<std::int64_t>>& done) {
  std::string out;
  const auto finished = std::count_if(done.begin(), done.end(), [](const auto& d) { return d; });
  out += fmt::format("# sweep {} ({}): {} points, {} done, {} to run; db {}\n", spec.name,
                     spec.path, points.size(), finished, points.size() - finished, db_path);
  out += fmt::format(
      "# each point runs: {}pipette {} <point's settings> --db {} --experiment {} "
      "--point-key KEY --format json\n",
      spec.command == "train" ? "mpirun -np P*DP " : "", spec.command, db_path, spec.name);
  out += fmt::format("#  point  status      point key\n");
  for (std::size_t k = 0; k < points.size(); ++k) {
    const std::string status = done[k] ? fmt::format("done {}", *done[k]) : "to run";
    out += fmt::format("{:>8}  {:<10}  {}\n", k + 1, status, points[k].key);
  }
  for (const SweepFigure& figure : spec.figures) {
    const auto selected = std::count_if(points.begin(), points.end(), [&](const SweepPoint& p) {
      return FigureSelects(figure, p);
    });
    out += fmt::format("# figure {} {} from {} point{}\n", figure.kind, FigurePath(spec, figure),
                       selected, selected == 1 ? "" : "s");
  }
  return out;
}

}  // namespace pipette
