#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"
#include "pipette/store/run_config.h"

namespace pipette::internal {
namespace {

std::string RunLabel(const RunData& run) {
  const RecordedConfig config = ReadRunConfig(run.run.config);
  std::string label = fmt::format("{} run {}", run.run.engine, run.run.id);
  if (config.schedule) label += " " + *config.schedule;
  return label;
}

std::uint32_t KindColour(EventKind kind) {
  switch (kind) {
    case EventKind::kF:
      return palette::kForward;
    case EventKind::kI:
    case EventKind::kB:
      return palette::kBackward;
    case EventKind::kW:
      return palette::kWeight;
    case EventKind::kAllReduce:
      return palette::kAllReduce;
    case EventKind::kOptimizer:
      return palette::kOptimizer;
    default:
      return palette::kCommunication;
  }
}

// The timeline's data: one box per drawn event (x, y, xlow, xhigh, ylow, yhigh, colour) and the
// microbatch labels of the compute boxes wide enough for one.
struct TimelineBoxes {
  std::string boxes, labels;
};

// Run k's rank r is row first_row[k] + r. Compute fills the row's upper part; receives (waits for
// data) and sends are thin bars below it. `scale` converts seconds to the time axis' unit.
TimelineBoxes Boxes(const std::vector<RunData>& runs, const std::vector<int>& first_row,
                    double scale, double px_per_unit) {
  TimelineBoxes out;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (const EventRow& e : runs[k].events) {
      const int y = first_row[k] + e.rank;
      const double x0 = e.start_s * scale, x1 = e.end_s * scale;
      const bool compute = e.kind <= EventKind::kB || e.kind == EventKind::kOptimizer;
      const bool collective = e.kind == EventKind::kAllReduce;
      if (!compute && !collective && x1 <= x0) continue;  // instantaneous sends and receives
      std::uint32_t colour = KindColour(e.kind);
      if (e.chunk > 0) colour = palette::Tint(colour);
      if (!compute && !collective) colour = palette::Tint(palette::kCommunication);
      // Compute fills the row's upper part; gradient all-reduces (buckets, which may run under
      // the backward) a band just below it; receives a thin bar below that.
      double y0 = compute ? y - 0.4 : y + 0.27, y1 = compute ? y + 0.2 : y + 0.37;
      if (collective) y0 = y + 0.2, y1 = y + 0.27;
      out.boxes += fmt::format("{:.9g} {:.9g} {:.9g} {:.9g} {:.9g} {:.9g} {}\n", (x0 + x1) / 2,
                               (y0 + y1) / 2, x0, x1, y0, y1, colour);
      if (compute && e.microbatch >= 0 && (x1 - x0) * px_per_unit >= 16) {
        out.labels += fmt::format("{:.9g} {:.9g} {}\n", (x0 + x1) / 2, y - 0.1, e.microbatch);
      }
    }
  }
  return out;
}

// The legend entries (NaN plots) that continue the timeline's plot command.
std::string TimelineLegend() {
  const std::pair<const char*, std::uint32_t> legend[] = {
      {"F (forward)", palette::kForward},
      {"I / B (backward)", palette::kBackward},
      {"W (weight gradient)", palette::kWeight},
      {"later chunk (lighter)", palette::Tint(palette::kForward)},
      {"receive posted, data pending", palette::Tint(palette::kCommunication)},
      {"all-reduce", palette::kAllReduce},
      {"optimizer", palette::kOptimizer}};
  std::string entries;
  for (const auto& [title, colour] : legend) {
    entries += fmt::format(", \\\n  NaN with boxes fc rgb {} title {}", Rgb(colour), Quote(title));
  }
  return entries;
}

// The most runs one timeline stacks.
constexpr std::size_t kMaxTimelineRuns = 8;

// The runs a timeline draws: with a --step, only that step's events, its times from the step's
// origin (the earliest start of the step's events in that run), so every panel starts at 0.
Result<std::vector<RunData>> TimelineRuns(const std::vector<RunData>& runs, int step) {
  if (runs.size() > kMaxTimelineRuns) {
    return Status::InvalidArgument(fmt::format("--run: a timeline stacks at most {} runs, not {}",
                                               kMaxTimelineRuns, runs.size()));
  }
  std::vector<RunData> drawn;
  for (const RunData& run : runs) {
    if (run.events.empty()) {
      return Status::InvalidArgument(fmt::format(
          "run {} has no events (recorded with --trace none or summary): no timeline", run.run.id));
    }
    RunData copy;
    copy.run = run.run;
    copy.metrics = run.metrics;
    if (step < 0) {
      copy.events = run.events;
    } else {
      double origin = 0;
      int last_step = 0;
      for (const EventRow& e : run.events) {
        last_step = std::max(last_step, e.step);
        if (e.step != step) continue;
        origin = copy.events.empty() ? e.start_s : std::min(origin, e.start_s);
        copy.events.push_back(e);
      }
      if (copy.events.empty()) {
        return Status::InvalidArgument(fmt::format(
            "--step = {}: run {} has no events of that step (its last traced step is {})", step,
            run.run.id, last_step));
      }
      for (EventRow& e : copy.events) {
        e.start_s -= origin;
        e.end_s -= origin;
      }
    }
    drawn.push_back(std::move(copy));
  }
  return drawn;
}

// "set title" of a timeline.
std::string TimelineTitle(const std::vector<RunData>& runs, int step) {
  std::string title = runs.size() == 1 ? fmt::format("Pipeline timeline: {}", RunLabel(runs[0]))
                                       : fmt::format("Pipeline timelines of {} runs", runs.size());
  if (step >= 0) title += fmt::format(" (step {}, from its start)", step);
  return fmt::format("set title {}\n", Quote(title));
}

// Stacked runs: each panel's label on a header row above its ranks, a dashed line between panels.
std::string PanelLabels(const std::vector<std::string>& labels, const std::vector<int>& first_row) {
  std::string script;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    script += fmt::format("set label {} at graph 0, first {} offset character 0.5, 0 left front\n",
                          Quote(labels[k]), first_row[k] - 1);
    if (k == 0) continue;
    script += fmt::format(
        "set arrow from graph 0, first {0} to graph 1, first {0} nohead lc rgb \"#888888\" dt 2\n",
        first_row[k] - 1.55);
  }
  return script;
}

}  // namespace

Result<std::string> TimelineScript(const std::vector<RunData>& given, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunData> runs, TimelineRuns(given, o.step));
  std::vector<const RunData*> pointers;
  for (const RunData& run : runs) pointers.push_back(&run);
  const bool stacked = runs.size() > 1;
  double span = 0;
  int rows = 0;
  std::vector<int> first_row, ranks;  // NumRanks() reads every row: once per run, not per rank
  for (const RunData& run : runs) {
    for (const EventRow& e : run.events) span = std::max(span, e.end_s);
    rows += stacked ? 1 : 0;  // the panel's header row
    first_row.push_back(rows);
    ranks.push_back(run.NumRanks());
    rows += ranks.back();
  }
  const bool ms = span < 10;
  const double scale = ms ? 1e3 : 1;
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, std::clamp(90 + 26 * rows, 240, 4000)));
  const double px_per_unit = (o.width - 160) / std::max(span * scale, 1e-12);
  const TimelineBoxes drawn = Boxes(runs, first_row, scale, px_per_unit);
  std::string ytics;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (int r = 0; r < ranks[k]; ++r) {
      ytics += fmt::format("{}\"{}{}\" {}", ytics.empty() ? "" : ", ", stacked ? "r" : "", r,
                           first_row[k] + r);
    }
  }
  script += TimelineTitle(runs, o.step);
  script += fmt::format("set xlabel \"time{} [{}]\"\nset ylabel \"rank\"\n",
                        o.step >= 0 ? " from the step's start" : "", ms ? "ms" : "s");
  script += fmt::format("set yrange [{}:-0.6]\nset ytics ({})\nset xrange [0:{:.9g}]\n", rows - 0.4,
                        ytics, span * scale);
  script += "set grid xtics lc rgb \"#DDDDDD\"\nset style fill solid 1.0 noborder\n";
  script += "set key outside right top vertical\n";
  if (stacked) script += PanelLabels(RunLabels(pointers, /*always_engine=*/true), first_row);
  script += "$boxes << EOD\n" + drawn.boxes + "EOD\n";
  script += "$labels << EOD\n" + (drawn.labels.empty() ? std::string("0 0 \"\"\n") : drawn.labels) +
            "EOD\n";
  script +=
      "plot $boxes using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle, \\\n"
      "  $labels using 1:2:3 with labels font \",8\" tc rgb \"#FFFFFF\" notitle";
  return script + TimelineLegend() + "\n";
}

}  // namespace pipette::internal
