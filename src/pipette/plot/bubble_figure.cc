#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/store/run_config.h"

namespace pipette::internal {
namespace {

// Analytic bubble ratio (idle over total) where it is exact: (p-1)/(v m + p - 1) for GPipe,
// 1F1B, eager 1F1B (zero latency) and the interleaved schedules with equal chunk costs.
double AnalyticBubble(int p, int v, double m) { return (p - 1.0) / (v * m + p - 1.0); }

// How close (absolute, in bubble ratio) the data must be to the closed form to count as on it.
constexpr double kAnalyticTolerance = 1e-6;

bool HasAnalyticBubble(const std::string& schedule) {
  return schedule == "gpipe" || schedule == "1f1b" || schedule == "eager-1f1b" ||
         schedule == "interleaved-1f1b" || schedule == "interleaved-gpipe";
}

}  // namespace

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
    PIPETTE_ASSIGN_OR_RETURN(nlohmann::json schedule, NeedConfig(run, RunKey::kSchedule));
    PIPETTE_ASSIGN_OR_RETURN(nlohmann::json pp, NeedConfig(run, RunKey::kPp));
    if (!x.is_number() || !schedule.is_string() || !pp.is_number_integer()) {
      return Status::InvalidArgument(
          fmt::format("run {}: '{}' must be a number, '{}' a string and '{}' an integer",
                      run.run.id, o.x_key, NameOf(RunKey::kSchedule), NameOf(RunKey::kPp)));
    }
    Series& s = series[{schedule.get<std::string>(), pp.get<int>()}];
    s.points.push_back({x.get<double>(), bubble});
    s.pp = pp.get<int>();
    pps.insert(s.pp);
    const RecordedConfig config = ReadRunConfig(run.run.config);
    s.v = config.v.value_or(1);
    // Exact only on an ideal, zero-latency network with uniform chunk costs.
    s.analytic &= config.latency_us.value_or(0.0) == 0.0 && config.ideal_network.value_or(false);
  }
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 700));
  const std::string x_label = o.x_key == NameOf(RunKey::kM)           ? "microbatches m"
                              : o.x_key == NameOf(RunKey::kLatencyUs) ? "p2p latency [us]"
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
    const bool analytic = o.x_key == NameOf(RunKey::kM) && s.analytic &&
                          HasAnalyticBubble(key.first) && !(interleaved && small_m);
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

}  // namespace pipette::internal
