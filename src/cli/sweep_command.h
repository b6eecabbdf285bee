// The parts of `pipette sweep` (sweep_command.cc runs the points; sweep_followups.cc lists a dry
// run and, after the points, records the predictions of measured points and draws the figures).
// Called on the command's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/store/experiment_db.h"
#include "pipette/study/sweep_spec.h"

namespace pipette::cli {

struct SweepOptions {
  std::string spec;
  std::string db = "pipette.db";
  int jobs = 1;
  bool dry_run = false;
  std::string shard;          // "K/N" or "auto"; empty: every point (study/sweep_shard.h)
  bool figures_only = false;  // run no point; draw the figures from the database
};

// The binary every child runs: this one.
inline constexpr const char* kSelf = "/proc/self/exe";

struct FigureCounts {
  int drawn = 0, skipped = 0, failed = 0;
};

struct PredictionCounts {
  int ran = 0, already = 0, held = 0, failed = 0;
};

// The path of a figure: relative to the spec's directory unless absolute.
std::string FigurePath(const SweepSpec& spec, const SweepFigure& figure);

// Draws every [[figures]] entry by a `pipette plot` child over the finished runs it selects (and
// their predictions); warns on standard error for each one not drawn or failed.
FigureCounts DrawFigures(const SweepSpec& spec, const SweepOptions& o, bool have_plot,
                         ExperimentDb& db, std::int64_t experiment_id,
                         const std::vector<SweepPoint>& points);

// Fidelity studies (predict = true): every measured point with a finished run gets its prediction,
// `pipette simulate --costs-from RUN [--calibration C]`, recorded in the experiment at the point's
// key plus kPredictedKeySuffix (one per point: an existing finished one is kept).
PredictionCounts PredictMeasuredPoints(const SweepSpec& spec, const SweepOptions& o,
                                       ExperimentDb& db, std::int64_t experiment_id,
                                       const std::vector<SweepPoint>& points);

// --dry-run: the points, which are done (reading never creates the database) and the figures.
int DryRun(const SweepSpec& spec, const SweepOptions& o, const std::vector<SweepPoint>& points);

}  // namespace pipette::cli
