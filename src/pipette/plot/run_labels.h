// What tells plotted runs apart, for legends and for pairing: labels built from the configuration
// keys whose values differ between the runs (and the engine), never from run ids alone; and the
// pairing of simulated with measured runs by configuration for `plot compare`. Pure functions on
// RunData (store/run_data.h); results point into the caller's runs.
//
// Example: runs sim {schedule 1f1b, m 4}, sim {1f1b, m 8}, cpu {1f1b, m 4} are labelled
// "sim m=4", "sim m=8", "cpu m=4" (the engine first, then the differing keys in the first run's
// order).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/run_data.h"

namespace pipette {

// One label per run: "KEY=VALUE" for every scalar configuration key that every run has and whose
// value is not the same in all of them, preceded by the engine when the engines differ or
// `always_engine`. The engine and recording keys ("command", "engine", "trace", "trace_steps",
// "experiment", "point_key") are not compared (the engine is the run's own).
// When nothing differs (one run, or identical configurations) the label names the program
// (schedule, pp, v, m, those present); labels that would still coincide get " (run ID)".
std::vector<std::string> RunLabels(const std::vector<const RunData*>& runs, bool always_engine);

// The keys RunLabels names: the scalar configuration keys every run has, but the engine and
// recording keys, whose values are not the same in all runs, in the first run's order.
std::vector<std::string> DifferingKeys(const std::vector<const RunData*>& runs);

// A configuration value as a label shows it: a string as it is (a .toml file by its stem), any
// other value as JSON.
std::string LabelValue(const nlohmann::ordered_json& value);

// Whether `a` and `b` have the same configuration apart from engine and recording keys: every
// key present in both configurations, but those RunLabels ignores, has equal values.
bool SameConfiguration(const RunData& a, const RunData& b);

struct RunPair {
  const RunData* predicted = nullptr;
  const RunData* measured = nullptr;
};

// Pairs `runs` for a predicted-against-measured figure. With both simulated ("sim") and measured
// (other engines) runs, every measured run is paired, in --run order, with the one simulated run
// of the same configuration (SameConfiguration), whatever their order in `runs`; a measured run
// with none or several, or a simulated run left over, is InvalidArgument naming the run. With
// runs of one engine only, consecutive runs pair as (predicted, measured), as given; an odd
// number of runs is InvalidArgument.
Result<std::vector<RunPair>> PairRuns(const std::vector<RunData>& runs);

}  // namespace pipette
