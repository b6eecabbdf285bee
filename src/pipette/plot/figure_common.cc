#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/plot/figure_scripts.h"
#include "pipette/store/run_config.h"

namespace pipette::internal {

Result<double> NeedMetric(const RunData& run, const std::string& name) {
  for (const MetricRow& m : run.metrics) {
    if (m.name == name) return m.value;
  }
  return Status::InvalidArgument(fmt::format(
      "run {} has no metric '{}' (was it recorded by pipette simulate?)", run.run.id, name));
}

Result<nlohmann::json> NeedConfig(const RunData& run, const std::string& key) {
  const nlohmann::json config(ReadRunConfig(run.run.config).json);
  if (!config.contains(key)) {
    return Status::InvalidArgument(
        fmt::format("run {}: its configuration has no key '{}'", run.run.id, key));
  }
  return config[key];
}

Result<nlohmann::json> NeedConfig(const RunData& run, RunKey key) {
  return NeedConfig(run, std::string(NameOf(key)));
}

}  // namespace pipette::internal
