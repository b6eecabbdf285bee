#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "pipette/fidelity/relative_error.h"
#include "pipette/plot/figure.h"
#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"

namespace pipette {

namespace internal {
namespace {

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

}  // namespace

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
  const double mape = 100 * MeanAbsoluteRelativeError(sim, measured);
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

}  // namespace internal
}  // namespace pipette
