#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipette/fidelity/relative_error.h"
#include "pipette/plot/figure.h"
#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"
#include "pipette/plot/series_encoding.h"

namespace pipette {

namespace internal {

Result<std::vector<PairedTimes>> PairedStepTimes(const std::vector<RunData>& runs) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<RunPair> pairs, PairRuns(runs));
  std::vector<PairedTimes> out;
  for (const RunPair& pair : pairs) {
    // The steady-state step time (steps >= 1), as pipette compare --experiment judges it.
    PIPETTE_RETURN_IF_ERROR(NeedMetric(*pair.predicted, "step_time_s").status());
    PIPETTE_RETURN_IF_ERROR(NeedMetric(*pair.measured, "step_time_s").status());
    const auto [predicted, measured] = PairedSteadyStepTimes(*pair.predicted, *pair.measured);
    out.push_back({pair.predicted, pair.measured, predicted * 1e3, measured * 1e3});
  }
  return out;
}

namespace {

// The axis titles of a compare figure: the simulated runs' on x, the measured engine's on y.
std::pair<std::string, std::string> CompareAxes(const std::vector<PairedTimes>& pairs) {
  std::string measured = pairs.front().measured->run.engine;
  for (const PairedTimes& pair : pairs) {
    if (pair.measured->run.engine != measured) measured = "measured";
  }
  if (pairs.front().predicted->run.engine != "sim") {  // one engine: as given, A against B
    return {"predicted (first of each pair) step time [ms]",
            "measured (second of each pair) step time [ms]"};
  }
  return {"simulated step time [ms]", fmt::format("measured ({}) step time [ms]", measured)};
}

// The points and legend of a compare figure with one legend entry per pair (a handful of pairs).
std::string PerPairSeries(const std::vector<PairedTimes>& pairs, std::string& data) {
  std::vector<const RunData*> measured_runs;
  for (const PairedTimes& pair : pairs) measured_runs.push_back(pair.measured);
  const std::vector<std::string> labels = RunLabels(measured_runs, /*always_engine=*/false);
  std::string points;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    data += fmt::format("$p{} << EOD\n{:.9g} {:.9g}\nEOD\n", k, pairs[k].predicted_ms,
                        pairs[k].measured_ms);
    const palette::SeriesStyle style = palette::Series(static_cast<int>(k));
    points += fmt::format(", \\\n  $p{} using 1:2 with points pt {} ps 1.5 lc rgb {} title {}", k,
                          style.point_type, Rgb(style.colour), Quote(labels[k]));
  }
  return points;
}

// The points and legend of a compare figure of many pairs: colour by one configuration key, marker
// by a second (EncodeSeries), a legend entry per value, each colour's MAPE beside it.
Result<std::string> EncodedSeries(const std::vector<PairedTimes>& pairs, const PlotOptions& o,
                                  std::string& data) {
  std::vector<const RunData*> measured_runs;
  for (const PairedTimes& pair : pairs) measured_runs.push_back(pair.measured);
  PIPETTE_ASSIGN_OR_RETURN(
      const SeriesEncoding enc,
      EncodeSeries(measured_runs, o.colour_by, o.marker_by, kMaxLegendEntries - 2));
  std::map<std::pair<int, int>, std::string> groups;  // (colour, marker) -> its points
  std::vector<std::vector<double>> predicted(enc.colour_values.size() + 1),
      measured(enc.colour_values.size() + 1);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    groups[{enc.colour[k], enc.marker[k]}] +=
        fmt::format("{:.9g} {:.9g}\n", pairs[k].predicted_ms, pairs[k].measured_ms);
    predicted[enc.colour[k]].push_back(pairs[k].predicted_ms);
    measured[enc.colour[k]].push_back(pairs[k].measured_ms);
  }
  const auto marker_of = [&](int m) {
    return palette::kMarkers[static_cast<std::size_t>(m) % palette::kMarkers.size()];
  };
  std::string points;
  int block = 0;
  for (const auto& [key, rows] : groups) {
    data += fmt::format("$g{} << EOD\n{}EOD\n", block, rows);
    points += fmt::format(", \\\n  $g{} using 1:2 with points pt {} ps 1.3 lc rgb {} notitle",
                          block++, marker_of(key.second),
                          Rgb(palette::kSeries[static_cast<std::size_t>(key.first)]));
  }
  for (std::size_t c = 0; c < enc.colour_values.size(); ++c) {
    points +=
        fmt::format(", \\\n  keyentry with points pt {} ps 1.5 lc rgb {} title {}",
                    palette::kMarkers[0], Rgb(palette::kSeries[c]),
                    Quote(fmt::format("{}: MAPE {:.2f}% ({})", enc.colour_values[c],
                                      100 * MeanAbsoluteRelativeError(predicted[c], measured[c]),
                                      predicted[c].size())));
  }
  for (std::size_t m = 0; m < enc.marker_values.size(); ++m) {
    points += fmt::format(", \\\n  keyentry with points pt {} ps 1.5 lc rgb {} title {}",
                          marker_of(static_cast<int>(m)),
                          Rgb(enc.colour_key.empty() ? palette::kSeries[0] : kKeyGrey),
                          Quote(enc.marker_values[m]));
  }
  return points;
}

}  // namespace

Result<std::string> CompareScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<PairedTimes> pairs, PairedStepTimes(runs));
  std::vector<double> sim, measured;
  for (const PairedTimes& pair : pairs) {
    sim.push_back(pair.predicted_ms);
    measured.push_back(pair.measured_ms);
  }
  const double mape = 100 * MeanAbsoluteRelativeError(sim, measured);
  std::string data;
  const bool encoded = static_cast<int>(pairs.size()) > kMaxPerRunSeries || !o.colour_by.empty() ||
                       !o.marker_by.empty();
  std::string points;
  if (encoded) {
    PIPETTE_ASSIGN_OR_RETURN(points, EncodedSeries(pairs, o, data));
  } else {
    points = PerPairSeries(pairs, data);
  }
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 800));
  const double hi = 1.15 * std::max(*std::max_element(sim.begin(), sim.end()),
                                    *std::max_element(measured.begin(), measured.end()));
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
  script += "set grid\nset key outside right top vertical\nset samples 200\n";
  script += data;
  script += fmt::format(
      "plot '+' using 1:(0.95*$1):(1.05*$1) with filledcurves fc rgb {} fs transparent solid 0.3 "
      "title \"+-5%\", \\\n"
      "  x with lines lw 1.5 lc rgb {} title \"y = x\"{}\n",
      Rgb(palette::kSkyBlue), Rgb(palette::kBlack), points);
  return script;
}

}  // namespace internal
}  // namespace pipette
