#include "pipette/plot/figure.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "pipette/common/printable.h"
#include "pipette/common/subprocess.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"

namespace pipette {
namespace {

// A string as a gnuplot double-quoted literal.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string Rgb(std::uint32_t rgb) { return fmt::format("\"#{:06X}\"", rgb); }

Result<std::string> Terminal(const PlotOptions& o, int default_height) {
  const int height = o.height > 0 ? o.height : default_height;
  if (o.width < kMinPlotPixels || o.width > kMaxPlotPixels || height < kMinPlotPixels ||
      height > kMaxPlotPixels) {
    return Status::InvalidArgument(
        fmt::format("figure size {}x{} (height {}: the figure's default): width and height must "
                    "be in [{}, {}] pixels",
                    o.width, height, default_height, kMinPlotPixels, kMaxPlotPixels));
  }
  const std::string ext = std::filesystem::path(o.out).extension().string();
  std::string terminal;
  if (ext == ".png") {
    terminal = fmt::format("set terminal pngcairo size {},{} font \"sans,10\" noenhanced", o.width,
                           height);
  } else if (ext == ".svg") {
    terminal =
        fmt::format("set terminal svg size {},{} font \"sans,10\" noenhanced background \"white\"",
                    o.width, height);
  } else {
    return Status::InvalidArgument(fmt::format("--out = '{}': must end in .png or .svg", o.out));
  }
  return fmt::format("{}\nset output {}\nset encoding utf8\n", terminal, Quote(o.out));
}

nlohmann::json Config(const RunData& run) {
  nlohmann::json config = nlohmann::json::parse(run.run.config, nullptr, false);
  return config.is_object() ? config : nlohmann::json::object();
}

Result<double> NeedMetric(const RunData& run, const std::string& name) {
  for (const MetricRow& m : run.metrics) {
    if (m.name == name) return m.value;
  }
  return Status::InvalidArgument(fmt::format(
      "run {} has no metric '{}' (was it recorded by pipette simulate?)", run.run.id, name));
}

Result<nlohmann::json> NeedConfig(const RunData& run, const std::string& key) {
  const nlohmann::json config = Config(run);
  if (!config.contains(key)) {
    return Status::InvalidArgument(
        fmt::format("run {}: its configuration has no key '{}'", run.run.id, key));
  }
  return config[key];
}

std::string RunLabel(const RunData& run) {
  const nlohmann::json config = Config(run);
  std::string label = fmt::format("{} run {}", run.run.engine, run.run.id);
  if (config.contains("schedule") && config["schedule"].is_string()) {
    label += " " + config["schedule"].get<std::string>();
  }
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

Result<std::string> TimelineScript(const std::vector<RunData>& given, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunData> runs, TimelineRuns(given, o.step));
  std::vector<const RunData*> pointers;
  for (const RunData& run : runs) pointers.push_back(&run);
  const bool stacked = runs.size() > 1;
  double span = 0;
  int rows = 0;
  std::vector<int> first_row;
  for (const RunData& run : runs) {
    for (const EventRow& e : run.events) span = std::max(span, e.end_s);
    rows += stacked ? 1 : 0;  // the panel's header row
    first_row.push_back(rows);
    rows += run.NumRanks();
  }
  const bool ms = span < 10;
  const double scale = ms ? 1e3 : 1;
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, std::clamp(90 + 26 * rows, 240, 4000)));
  const double px_per_unit = (o.width - 160) / std::max(span * scale, 1e-12);
  const TimelineBoxes drawn = Boxes(runs, first_row, scale, px_per_unit);
  std::string ytics;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (int r = 0; r < runs[k].NumRanks(); ++r) {
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

// Analytic bubble ratio (idle over total) where it is exact: (p-1)/(v m + p - 1) for GPipe,
// 1F1B, eager 1F1B (zero latency) and the interleaved schedules with equal chunk costs.
double AnalyticBubble(int p, int v, double m) { return (p - 1.0) / (v * m + p - 1.0); }

// How close (absolute, in bubble ratio) the data must be to the closed form to count as on it.
constexpr double kAnalyticTolerance = 1e-6;

bool HasAnalyticBubble(const std::string& schedule) {
  return schedule == "gpipe" || schedule == "1f1b" || schedule == "eager-1f1b" ||
         schedule == "interleaved-1f1b" || schedule == "interleaved-gpipe";
}

Result<std::string> BubbleScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  struct Series {
    std::vector<std::pair<double, double>> points;
    int pp = 0, v = 1;
    bool analytic = true;
  };
  std::map<std::pair<std::string, int>, Series> series;
  std::set<int> pps;
  for (const RunData& run : runs) {
    PIPETTE_ASSIGN_OR_RETURN(double bubble, NeedMetric(run, "bubble_ratio"));
    PIPETTE_ASSIGN_OR_RETURN(nlohmann::json x, NeedConfig(run, o.x_key));
    PIPETTE_ASSIGN_OR_RETURN(nlohmann::json schedule, NeedConfig(run, "schedule"));
    PIPETTE_ASSIGN_OR_RETURN(nlohmann::json pp, NeedConfig(run, "pp"));
    if (!x.is_number() || !schedule.is_string() || !pp.is_number_integer()) {
      return Status::InvalidArgument(
          fmt::format("run {}: '{}' must be a number, 'schedule' a string and 'pp' an integer",
                      run.run.id, o.x_key));
    }
    Series& s = series[{schedule.get<std::string>(), pp.get<int>()}];
    s.points.push_back({x.get<double>(), bubble});
    s.pp = pp.get<int>();
    pps.insert(s.pp);
    const nlohmann::json config = Config(run);
    s.v = config.value("v", 1);
    // Exact only on an ideal, zero-latency network with uniform chunk costs.
    s.analytic &= config.value("latency_us", 0.0) == 0.0 && config.value("ideal_network", false);
  }
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 700));
  const std::string x_label = o.x_key == "m"            ? "microbatches m"
                              : o.x_key == "latency_us" ? "p2p latency [us]"
                                                        : o.x_key;
  script += fmt::format("set title \"Bubble ratio (idle / total) against {}\"\n", x_label);
  script += fmt::format("set xlabel {}\nset ylabel \"bubble ratio [fraction]\"\n", Quote(x_label));
  script += "set yrange [0:*]\nset grid\nset key outside right top vertical\n";
  std::string data, plot;
  int index = 0;
  for (auto& [key, s] : series) {
    std::sort(s.points.begin(), s.points.end());
    const palette::SeriesStyle style = palette::Series(index);
    std::string name = pps.size() > 1 ? fmt::format("{} p={}", key.first, key.second) : key.first;
    data += fmt::format("$s{} << EOD\n", index);
    for (const auto& [x, y] : s.points) data += fmt::format("{:.9g} {:.9g}\n", x, y);
    data += "EOD\n";
    // The interleaved closed form holds for m >= p only (interleaved GPipe departs below).
    const bool interleaved = key.first.rfind("interleaved", 0) == 0;
    const bool small_m = std::any_of(s.points.begin(), s.points.end(),
                                     [&](const auto& point) { return point.first < s.pp; });
    const bool analytic =
        o.x_key == "m" && s.analytic && HasAnalyticBubble(key.first) && !(interleaved && small_m);
    // The closed form is drawn only where it differs from the data; else the legend says so.
    const bool matches =
        analytic && std::all_of(s.points.begin(), s.points.end(), [&](auto& pt) {
          return std::abs(pt.second - AnalyticBubble(s.pp, s.v, pt.first)) <= kAnalyticTolerance;
        });
    if (matches) name += " (= analytic (p-1)/(vm+p-1))";
    plot += fmt::format("{}$s{} using 1:2 with linespoints lw 2 pt {} lc rgb {} title {}",
                        plot.empty() ? "plot " : ", \\\n  ", index, style.point_type,
                        Rgb(style.colour), Quote(name));
    if (analytic && !matches) {
      plot += fmt::format(
          ", \\\n  $s{0} using 1:({1}-1.0)/({2}*$1+{1}-1.0) with lines dt 2 lw 1.5 lc rgb {3} "
          "title {4}",
          index, s.pp, s.v, Rgb(style.colour), Quote(name + " analytic (p-1)/(vm+p-1)"));
    }
    ++index;
  }
  return script + data + plot + "\n";
}

Result<std::string> MemoryScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 700));
  script += "set title \"Peak memory per rank\"\nset xlabel \"pipeline rank\"\n";
  script += "set ylabel \"peak memory [GB]\"\nset yrange [0:*]\nset grid\n";
  script += "set key outside right top vertical\n";
  std::string data, plot;
  double device = 0;
  int max_rank = 0;
  std::vector<const RunData*> pointers;
  for (const RunData& run : runs) pointers.push_back(&run);
  const std::vector<std::string> labels = RunLabels(pointers, /*always_engine=*/false);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const RunData& run = runs[k];
    data += fmt::format("$m{} << EOD\n", k);
    int ranks = 0;
    for (;; ++ranks) {
      const std::string name = fmt::format("peak_memory_bytes[{}]", ranks);
      bool found = false;
      for (const MetricRow& m : run.metrics) {
        if (m.name == name) {
          data += fmt::format("{} {:.9g}\n", ranks, m.value / 1e9);
          found = true;
        }
      }
      if (!found) break;
    }
    if (ranks == 0) {
      return Status::InvalidArgument(
          fmt::format("run {} has no metric 'peak_memory_bytes[0]' (simulate a model, not --times)",
                      run.run.id));
    }
    data += "EOD\n";
    max_rank = std::max(max_rank, ranks - 1);
    device = std::max(device, run.Metric("device_memory_bytes", 0));
    const palette::SeriesStyle style = palette::Series(static_cast<int>(k));
    plot += fmt::format("{}$m{} using 1:2 with linespoints lw 2 pt {} lc rgb {} title {}",
                        plot.empty() ? "plot " : ", \\\n  ", k, style.point_type, Rgb(style.colour),
                        Quote(labels[k]));
  }
  script += fmt::format("set xrange [-0.5:{}]\nset xtics 1\n", max_rank + 0.5);
  if (device > 0) {
    plot += fmt::format(", \\\n  {:.9g} with lines dt 2 lw 2 lc rgb {} title {}", device / 1e9,
                        Rgb(palette::kVermillion),
                        Quote(fmt::format("device memory ({:.0f} GB)", device / 1e9)));
  }
  return script + data + plot + "\n";
}

// The series of a steptime figure: the schedule, with the model when the runs have several.
Result<std::string> StepTimeSeries(const RunData& run, bool with_model) {
  PIPETTE_ASSIGN_OR_RETURN(nlohmann::json schedule, NeedConfig(run, "schedule"));
  if (!schedule.is_string()) {
    return Status::InvalidArgument(fmt::format("run {}: 'schedule' must be a string", run.run.id));
  }
  const nlohmann::json config = Config(run);
  const std::string model = config.contains("model") && config["model"].is_string()
                                ? config["model"].get<std::string>()
                                : std::string("(no model)");
  return schedule.get<std::string>() + (with_model ? " " + model : "");
}

Result<std::string> StepTimeScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  std::set<std::string> models;
  for (const RunData& run : runs) models.insert(Config(run).value("model", std::string()));
  std::vector<std::string> groups, names;  // in order of first appearance
  std::map<std::pair<std::string, std::string>, std::pair<double, std::int64_t>> bars;
  for (const RunData& run : runs) {
    PIPETTE_ASSIGN_OR_RETURN(const double step, NeedMetric(run, "step_time_s"));
    PIPETTE_ASSIGN_OR_RETURN(const nlohmann::json x, NeedConfig(run, o.x_key));
    PIPETTE_ASSIGN_OR_RETURN(const std::string name, StepTimeSeries(run, models.size() > 1));
    const std::string group = x.is_string() ? x.get<std::string>() : x.dump();
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    const auto [it, added] =
        bars.emplace(std::pair{group, name}, std::pair{step * 1e3, run.run.id});
    if (!added) {
      return Status::InvalidArgument(fmt::format(
          "runs {} and {} are both '{}' at {} = {}: a steptime figure takes one run per bar "
          "(select with --run, or a figure's where)",
          it->second.second, run.run.id, name, o.x_key, group));
    }
  }
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 600));
  const std::string model =
      models.size() == 1 && !models.begin()->empty() ? " (" + *models.begin() + ")" : std::string();
  script += fmt::format("set title {}\n", Quote("Step time by " + o.x_key + model));
  script += fmt::format("set xlabel {}\nset ylabel \"step time [ms]\"\n", Quote(o.x_key));
  script += "set yrange [0:*]\nset grid ytics\nset key outside right top vertical\n";
  script += "set style data histograms\nset style histogram clustered gap 1\n";
  script += "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset datafile missing \"?\"\n";
  std::string data = "$bars << EOD\n";
  for (const std::string& group : groups) {
    data += Quote(group);
    for (const std::string& name : names) {
      const auto it = bars.find({group, name});
      data += it == bars.end() ? " ?" : fmt::format(" {:.9g}", it->second.first);
    }
    data += "\n";
  }
  data += "EOD\n";
  std::string plot;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const palette::SeriesStyle style = palette::Series(static_cast<int>(k));
    plot += fmt::format("{}$bars using {}{} lc rgb {} title {}", k == 0 ? "plot " : ", \\\n  ",
                        k + 2, k == 0 ? ":xtic(1)" : "", Rgb(style.colour), Quote(names[k]));
  }
  return script + data + plot + "\n";
}

// The axis titles of a compare figure: the simulated runs' on x, the measured engine's on y.
std::pair<std::string, std::string> CompareAxes(const std::vector<RunPair>& pairs) {
  std::string measured = pairs.front().measured->run.engine;
  for (const RunPair& pair : pairs) {
    if (pair.measured->run.engine != measured) measured = "measured";
  }
  if (pairs.front().predicted->run.engine != "sim") {  // one engine: as given, A against B
    return {"predicted (first of each pair) step time [ms]",
            "measured (second of each pair) step time [ms]"};
  }
  return {"simulated step time [ms]", fmt::format("measured ({}) step time [ms]", measured)};
}

Result<std::string> CompareScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunPair> pairs, PairRuns(runs));
  std::vector<const RunData*> measured_runs;
  for (const RunPair& pair : pairs) measured_runs.push_back(pair.measured);
  const std::vector<std::string> labels = RunLabels(measured_runs, /*always_engine=*/false);
  std::vector<double> sim, measured;
  std::string data, points;
  double hi = 0;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    // The steady-state step time (steps >= 1), as pipette compare --experiment judges it.
    PIPETTE_RETURN_IF_ERROR(NeedMetric(*pairs[k].predicted, "step_time_s").status());
    PIPETTE_RETURN_IF_ERROR(NeedMetric(*pairs[k].measured, "step_time_s").status());
    // Over the predicted run's steps (a prediction simulates the measured run's traced ones).
    int steps = 0;
    while (pairs[k].predicted->Metric(fmt::format("step_times_s[{}]", steps), -1) >= 0) ++steps;
    const double s = pairs[k].predicted->SteadyStepTime();
    const double m = pairs[k].measured->SteadyStepTime(steps > 0 ? steps : 1 << 30);
    sim.push_back(s * 1e3);
    measured.push_back(m * 1e3);
    hi = std::max({hi, s * 1e3, m * 1e3});
    data += fmt::format("$p{} << EOD\n{:.9g} {:.9g}\nEOD\n", k, s * 1e3, m * 1e3);
    const palette::SeriesStyle style = palette::Series(static_cast<int>(k));
    points += fmt::format(", \\\n  $p{} using 1:2 with points pt {} ps 1.5 lc rgb {} title {}", k,
                          style.point_type, Rgb(style.colour), Quote(labels[k]));
  }
  const double mape = MeanAbsolutePercentageError(sim, measured);
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 800));
  hi *= 1.15;
  const auto [x_label, y_label] = CompareAxes(pairs);
  script += fmt::format(
      "set title \"Simulated against measured step time ({} pair{}), MAPE = {:.2f}%\"\n",
      sim.size(), sim.size() == 1 ? "" : "s", mape);
  script += fmt::format("set xlabel {}\nset ylabel {}\n", Quote(x_label), Quote(y_label));
  // Step times spanning more than a decade (a small and a large model) read on log axes.
  const double lo = std::min(*std::min_element(sim.begin(), sim.end()),
                             *std::min_element(measured.begin(), measured.end()));
  if (lo > 0 && hi / lo > 20) {
    script += fmt::format(
        "set logscale xy\nset xrange [{0:.9g}:{1:.9g}]\nset yrange [{0:.9g}:{1:.9g}]\n"
        "set size ratio -1\n",
        lo / 1.3, hi);
  } else {
    script +=
        fmt::format("set xrange [0:{0:.9g}]\nset yrange [0:{0:.9g}]\nset size ratio -1\n", hi);
  }
  // Many pairs: a small font in columns beside the plot.
  script += sim.size() > 16
                ? "set grid\nset key outside right top vertical font \",7\" maxrows 40\n"
                : "set grid\nset key outside right top vertical\n";
  script += "set samples 200\n";
  script += data;
  script += fmt::format(
      "plot '+' using 1:(0.9*$1):(1.1*$1) with filledcurves fc rgb {} fs transparent solid 0.3 "
      "title \"+-10%\", \\\n"
      "  x with lines lw 1.5 lc rgb {} title \"y = x\"{}\n",
      Rgb(palette::kSkyBlue), Rgb(palette::kBlack), points);
  return script;
}

}  // namespace

Result<PlotKind> ParsePlotKind(std::string_view text) {
  if (text == "timeline") return PlotKind::kTimeline;
  if (text == "bubble") return PlotKind::kBubble;
  if (text == "memory") return PlotKind::kMemory;
  if (text == "compare") return PlotKind::kCompare;
  if (text == "steptime") return PlotKind::kStepTime;
  return Status::InvalidArgument(fmt::format(
      "plot kind '{}': must be timeline, bubble, memory, compare or steptime", Printable(text)));
}

Result<PlotSize> ParsePlotSize(std::string_view text) {
  const auto invalid = [&] {
    return Status::InvalidArgument(fmt::format(
        "--size = '{}': must be WIDTHxHEIGHT in pixels, each in [{}, {}], e.g. 1200x600 (height 0: "
        "the figure's default)",
        Printable(text), kMinPlotPixels, kMaxPlotPixels));
  };
  const std::size_t cross = text.find('x');
  if (cross == std::string_view::npos) return invalid();
  PlotSize size;
  const auto read = [](std::string_view digits, int& value) {
    const char* end = digits.data() + digits.size();
    const auto [ptr, error] = std::from_chars(digits.data(), end, value);
    return !digits.empty() && error == std::errc() && ptr == end;
  };
  if (!read(text.substr(0, cross), size.width) || !read(text.substr(cross + 1), size.height)) {
    return invalid();
  }
  const auto in_range = [](int pixels) {
    return pixels >= kMinPlotPixels && pixels <= kMaxPlotPixels;
  };
  if (!in_range(size.width) || !(size.height == 0 || in_range(size.height))) return invalid();
  return size;
}

double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured) {
  double sum = 0;
  for (std::size_t k = 0; k < predicted.size(); ++k) {
    sum += std::abs(measured[k] - predicted[k]) / measured[k];
  }
  return predicted.empty() ? 0 : 100 * sum / predicted.size();
}

Result<std::string> FigureScript(PlotKind kind, const std::vector<RunData>& runs,
                                 const PlotOptions& options) {
  if (runs.empty()) return Status::InvalidArgument("--run: no runs to plot");
  switch (kind) {
    case PlotKind::kTimeline:
      return TimelineScript(runs, options);
    case PlotKind::kBubble:
      return BubbleScript(runs, options);
    case PlotKind::kMemory:
      return MemoryScript(runs, options);
    case PlotKind::kCompare:
      return CompareScript(runs, options);
    case PlotKind::kStepTime:
      return StepTimeScript(runs, options);
  }
  return Status::Internal("unknown plot kind");
}

Status DrawFigure(PlotKind kind, const std::vector<RunData>& runs, const PlotOptions& options) {
  PIPETTE_ASSIGN_OR_RETURN(std::string script, FigureScript(kind, runs, options));
  // gnuplot reads a script named /dev/stdin about 3x faster than its interactive standard input.
  Result<Subprocess> gnuplot =
      Subprocess::Run("gnuplot", {"gnuplot", "/dev/stdin"}, std::move(script));
  if (!gnuplot.ok()) {
    return Status::IoError(
        fmt::format("{} - is gnuplot installed? (scripts/install-deps.sh installs it)",
                    gnuplot.status().message()));
  }
  const ExitStatus exit = gnuplot->Wait();
  if (exit.code != 0) {
    return Status::IoError(fmt::format("gnuplot failed ({}): {}\ngnuplot's output:\n{}",
                                       exit.Describe(), GnuplotReason(gnuplot->err()),
                                       gnuplot->err()));
  }
  return Status::Ok();
}

std::string GnuplotReason(std::string_view err) {
  std::vector<std::string_view> lines;
  for (std::size_t begin = 0; begin < err.size();) {
    std::size_t end = err.find('\n', begin);
    if (end == std::string_view::npos) end = err.size();
    std::string_view line = err.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
    begin = end + 1;
  }
  // gnuplot's own errors read `"/dev/stdin" line 2: cannot open file; output not changed`, maybe
  // followed by `system error: No such file or directory`.
  constexpr std::string_view kScript = "\"/dev/stdin\" ";
  for (std::size_t k = lines.size(); k-- > 0;) {
    const std::string_view line = lines[k];
    const std::size_t colon = line.find(": ");
    if (!line.starts_with(kScript) || colon == std::string_view::npos) continue;
    std::string where =
        fmt::format("{} of the script", line.substr(kScript.size(), colon - kScript.size()));
    for (std::size_t next = k + 1; next < lines.size(); ++next) {
      where += fmt::format("; {}", lines[next]);
    }
    return fmt::format("{} ({})", line.substr(colon + 2), where);
  }
  if (lines.empty()) return "it printed nothing";
  return std::string(lines.back());
}

}  // namespace pipette
