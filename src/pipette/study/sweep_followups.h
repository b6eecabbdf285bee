// What `pipette sweep` does after its points (docs/experiments.md): the predictions of a fidelity
// study's measured points and the spec's figures, each as a child of this binary (kSelfBinary), and
// the listing of a dry run. Each step's notes (what was drawn, what was not and why) go to `note`,
// one line each, as they happen. Called on the sweep's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipette/store/experiment_db.h"
#include "pipette/study/sweep_spec.h"

namespace pipette {

// The binary every child of a sweep runs: this one.
inline constexpr const char* kSelfBinary = "/proc/self/exe";

// A line for the person running the sweep (without the command's name).
using SweepNote = std::function<void(const std::string& line)>;

struct FigureCounts {
  int drawn = 0, skipped = 0, failed = 0;
};

struct PredictionCounts {
  int ran = 0, already = 0, held = 0, failed = 0;
};

// The path of a figure: relative to the spec's directory unless absolute.
std::string FigurePath(const SweepSpec& spec, const SweepFigure& figure);

// Draws every [[figures]] entry by a `pipette plot` child over the finished runs it selects (and
// their predictions) in `db` (at `db_path`); notes each one drawn, not drawn or failed.
FigureCounts DrawFigures(const SweepSpec& spec, const std::string& db_path, bool have_plot,
                         ExperimentDb& db, std::int64_t experiment_id,
                         const std::vector<SweepPoint>& points, const SweepNote& note);

// Fidelity studies (predict = true): every measured point with a finished run gets its prediction,
// `pipette simulate --costs-from RUN [--calibration C]`, recorded in the experiment at the point's
// key plus kPredictedKeySuffix (one per point: an existing finished one is kept); notes each
// failure.
PredictionCounts PredictMeasuredPoints(const SweepSpec& spec, const std::string& db_path,
                                       ExperimentDb& db, std::int64_t experiment_id,
                                       const std::vector<SweepPoint>& points,
                                       const SweepNote& note);

// --dry-run's listing: the points, which are done (`done[k]`: point k's finished run) and the
// figures with how many points each selects.
std::string DryRunText(const SweepSpec& spec, const std::string& db_path,
                       const std::vector<SweepPoint>& points,
                       const std::vector<std::optional<std::int64_t>>& done);

}  // namespace pipette
