#include "pipette/plot/run_labels.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "pipette/store/run_config.h"

namespace pipette {
namespace {

nlohmann::ordered_json ConfigOf(const RunData& run) { return ReadRunConfig(run.run.config).json; }

std::string ProgramLabel(const nlohmann::ordered_json& config) {
  std::string label;
  for (const RunKey key : kProgramSummaryKeys) {
    const auto it = config.find(NameOf(key));
    if (it == config.end() || it->is_structured()) continue;
    label += fmt::format("{}{}={}", label.empty() ? "" : " ", NameOf(key), LabelValue(*it));
  }
  return label;
}

}  // namespace

std::string LabelValue(const nlohmann::ordered_json& value) { return ConfigValueText(value); }

std::vector<std::string> DifferingKeys(const std::vector<const RunData*>& runs) {
  if (runs.empty()) return {};
  std::vector<nlohmann::ordered_json> configs;
  for (const RunData* run : runs) configs.push_back(ConfigOf(*run));
  return DifferingConfigKeys(configs);
}

std::vector<std::string> RunLabels(const std::vector<const RunData*>& runs, bool always_engine) {
  if (runs.empty()) return {};
  std::vector<nlohmann::ordered_json> configs;
  for (const RunData* run : runs) configs.push_back(ConfigOf(*run));
  const std::vector<std::string> differing = DifferingConfigKeys(configs);
  const bool engines_differ = std::any_of(runs.begin(), runs.end(), [&](const RunData* r) {
    return r->run.engine != runs[0]->run.engine;
  });
  std::vector<std::string> labels;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::string label = always_engine || engines_differ ? runs[k]->run.engine : "";
    for (const std::string& key : differing) {
      label += fmt::format("{}{}={}", label.empty() ? "" : " ", key, LabelValue(configs[k][key]));
    }
    if (differing.empty()) {
      const std::string program = ProgramLabel(configs[k]);
      label += (label.empty() || program.empty() ? "" : " ") + program;
    }
    labels.push_back(label.empty() ? fmt::format("run {}", runs[k]->run.id) : label);
  }
  std::map<std::string, int> uses;
  for (const std::string& label : labels) ++uses[label];
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (uses[labels[k]] > 1) labels[k] += fmt::format(" (run {})", runs[k]->run.id);
  }
  return labels;
}

namespace {

// The first key (in `a`'s order) both configurations have with different values, if any.
std::optional<std::string> FirstDifference(const RunData& a, const RunData& b) {
  const nlohmann::ordered_json ca = ConfigOf(a), cb = ConfigOf(b);
  for (const auto& [key, value] : ca.items()) {
    if (!DescribesRecording(key) && cb.contains(key) && cb[key] != value) {
      return fmt::format("'{}' is {} in run {} and {} in run {}", key, value.dump(), a.run.id,
                         cb[key].dump(), b.run.id);
    }
  }
  return std::nullopt;
}

// Why measured run `m` pairs with none of `sims`: the first difference from the first of them.
std::string NoMatchReason(const RunData& m, const std::vector<const RunData*>& sims) {
  for (const RunData* s : sims) {
    if (std::optional<std::string> why = FirstDifference(m, *s)) return " (" + *why + ")";
  }
  return "";
}

}  // namespace

bool SameConfiguration(const RunData& a, const RunData& b) { return !FirstDifference(a, b); }

// The run a prediction predicts (its config's costs_from), 0 for none.
std::int64_t PredictedRun(const RunData& run) {
  return ReadRunConfig(run.run.config).costs_from.value_or(0);
}

Result<std::vector<RunPair>> PairRuns(const std::vector<RunData>& runs) {
  std::vector<const RunData*> sims, measured;
  for (const RunData& run : runs) (run.run.engine == "sim" ? sims : measured).push_back(&run);
  std::vector<RunPair> pairs;
  if (sims.empty() || measured.empty()) {
    if (runs.size() % 2 != 0) {
      return Status::InvalidArgument(fmt::format(
          "--run: runs of one engine pair as (predicted, measured, predicted, ...), got {} runs",
          runs.size()));
    }
    for (std::size_t k = 0; k < runs.size(); k += 2) pairs.push_back({&runs[k], &runs[k + 1]});
    return pairs;
  }
  std::vector<bool> used(sims.size(), false);
  for (const RunData* m : measured) {
    std::vector<std::size_t> matches;
    // A prediction of a recorded run (costs_from) pairs with that run; others by configuration.
    for (std::size_t s = 0; s < sims.size(); ++s) {
      if (!used[s] && PredictedRun(*sims[s]) == m->run.id) matches.push_back(s);
    }
    const bool predicted = !matches.empty();
    for (std::size_t s = 0; !predicted && s < sims.size(); ++s) {
      if (!used[s] && PredictedRun(*sims[s]) == 0 && SameConfiguration(*sims[s], *m)) {
        matches.push_back(s);
      }
    }
    if (matches.size() != 1) {
      return Status::InvalidArgument(fmt::format(
          "--run: run {} ({}) has {} simulated runs of its configuration among --run{}: each "
          "measured run pairs with exactly one",
          m->run.id, m->run.engine, matches.empty() ? "no" : "several",
          matches.empty() ? NoMatchReason(*m, sims)
                          : fmt::format(" (runs {} and {})", sims[matches[0]]->run.id,
                                        sims[matches[1]]->run.id)));
    }
    used[matches[0]] = true;
    pairs.push_back({sims[matches[0]], m});
  }
  for (std::size_t s = 0; s < sims.size(); ++s) {
    if (!used[s]) {
      return Status::InvalidArgument(fmt::format(
          "--run: simulated run {} pairs with no measured run of its configuration among --run",
          sims[s]->run.id));
    }
  }
  return pairs;
}

}  // namespace pipette
