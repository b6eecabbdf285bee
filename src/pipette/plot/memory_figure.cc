#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "pipette/plot/figure_scripts.h"
#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"

namespace pipette::internal {

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

}  // namespace pipette::internal
