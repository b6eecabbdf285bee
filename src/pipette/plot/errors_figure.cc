#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "pipette/fidelity/relative_error.h"
#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"

namespace pipette::internal {
namespace {

// The pairs of one value of the grouping key.
struct ErrorGroup {
  std::string value;
  std::vector<double> errors;  // signed, percent, in the pairs' order
  double Mape() const {
    double sum = 0;
    for (double e : errors) sum += std::abs(e);
    return sum / static_cast<double>(errors.size());
  }
  // The error of largest magnitude (the first of equal ones).
  double Worst() const {
    return *std::max_element(errors.begin(), errors.end(),
                             [](double a, double b) { return std::abs(a) < std::abs(b); });
  }
};

}  // namespace

Result<std::string> ErrorsScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<PairedTimes> pairs, PairedStepTimes(runs));
  std::vector<ErrorGroup> groups;  // in order of first appearance
  std::vector<double> predicted, measured;
  for (const PairedTimes& pair : pairs) {
    PIPETTE_ASSIGN_OR_RETURN(const nlohmann::json value, NeedConfig(*pair.measured, o.x_key));
    const std::string text = LabelValue(nlohmann::ordered_json(value));
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const ErrorGroup& g) { return g.value == text; });
    if (group == groups.end()) group = groups.insert(groups.end(), ErrorGroup{text, {}});
    group->errors.push_back(100 * RelativeError(pair.predicted_ms, pair.measured_ms));
    predicted.push_back(pair.predicted_ms);
    measured.push_back(pair.measured_ms);
  }
  const double mape = 100 * MeanAbsoluteRelativeError(predicted, measured);
  const ErrorGroup* worst = &groups.front();
  double top = 0;
  std::string data = "$errors << EOD\n";
  for (const ErrorGroup& g : groups) {
    if (std::abs(g.Worst()) > std::abs(worst->Worst())) worst = &g;
    top = std::max(top, std::abs(g.Worst()));
    data += fmt::format("{} {:.9g} {:.9g} \"{:+.1f}%\" {}\n", Quote(g.value), g.Mape(),
                        std::abs(g.Worst()), g.Worst(), g.errors.size());
  }
  data += "EOD\n";
  PIPETTE_ASSIGN_OR_RETURN(std::string script, Terminal(o, 600));
  script += fmt::format(
      "set title {}\n",
      Quote(fmt::format("Prediction error by {} ({} pair{}, MAPE {:.2f}%, worst {:+.2f}% at {}={})",
                        o.x_key, pairs.size(), pairs.size() == 1 ? "" : "s", mape, worst->Worst(),
                        o.x_key, worst->value)));
  script += fmt::format("set xlabel {}\nset ylabel \"|step-time error| [%]\"\n", Quote(o.x_key));
  script += fmt::format("set yrange [0:{:.9g}]\nset xrange [-0.6:{:.9g}]\n",
                        std::max(top, 1.0) * 1.25, static_cast<double>(groups.size()) - 0.4);
  if (groups.size() > 6) script += "set xtics rotate by -30 left\n";
  script += "set grid ytics\nset key outside right top vertical\n";
  script += "set style fill solid 0.85 border -1\nset boxwidth 0.6\n";
  script += fmt::format(
      "set arrow from graph 0, first {0:.9g} to graph 1, first {0:.9g} nohead "
      "dt 2 lw 1.5 lc rgb {1} front\n",
      mape, Rgb(palette::kBlack));
  script += data;
  script += fmt::format(
      "plot $errors using 0:2:xtic(1) with boxes lc rgb {} title \"MAPE of the group\", \\\n"
      "  '' using 0:3 with points pt 9 ps 1.6 lc rgb {} title \"worst case (signed error above)\", "
      "\\\n"
      "  '' using 0:3:4 with labels offset 0,1 notitle, \\\n"
      "  keyentry with lines dt 2 lw 1.5 lc rgb {} title {}\n",
      Rgb(palette::kSkyBlue), Rgb(palette::kVermillion), Rgb(palette::kBlack),
      Quote(fmt::format("all pairs: MAPE {:.2f}%", mape)));
  return script;
}

}  // namespace pipette::internal
