#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/plot/figure_scripts.h"

namespace pipette::internal {

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

}  // namespace pipette::internal
