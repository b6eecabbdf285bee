#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
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

// The series of a steptime figure: the schedule, with the model when the runs have several.
Result<std::string> StepTimeSeries(const RunData& run, bool with_model) {
  const RecordedConfig config = ReadRunConfig(run.run.config);
  if (config.Find(RunKey::kSchedule) == nullptr) {
    return Status::InvalidArgument(fmt::format("run {}: its configuration has no key '{}'",
                                               run.run.id, NameOf(RunKey::kSchedule)));
  }
  if (!config.schedule) {
    return Status::InvalidArgument(
        fmt::format("run {}: '{}' must be a string", run.run.id, NameOf(RunKey::kSchedule)));
  }
  const std::string model = config.model.value_or("(no model)");
  return *config.schedule + (with_model ? " " + model : "");
}

}  // namespace

Result<std::string> StepTimeScript(const std::vector<RunData>& runs, const PlotOptions& o) {
  std::set<std::string> models;
  for (const RunData& run : runs) models.insert(ReadRunConfig(run.run.config).model.value_or(""));
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

}  // namespace pipette::internal
