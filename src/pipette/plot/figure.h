// Figures of recorded runs, drawn with gnuplot (PNG through pngcairo, SVG) from RunData
// (store/run_data.h), so every figure comes from the experiment database. One palette
// (plot/palette.h); every figure has a legend and axis units.
//
//   timeline  one row per rank (rank 0 on top), each instruction a box coloured by kind (F; I and
//             B; W; all-reduce; optimizer), receives as thin communication bars under the
//             compute, later chunks in a lighter tint, microbatch labels where they fit, idle
//             white. Up to eight runs are stacked as panels on one shared time axis (e.g.
//             simulated over measured), each labelled by its engine and the configuration keys
//             that differ between the runs (plot/run_labels.h). `step` >= 0 draws that one step
//             of every run, its times from the step's start (its earliest event).
//   bubble    bubble ratio against microbatches (or another configuration key, `x_key`), one line
//             per (schedule, pp); where a closed form is exact it is drawn dashed only where the
//             data departs from it (else the series' legend says "= analytic").
//   memory    peak memory per rank, one line per run named by what differs between the runs, the
//             device's memory as a line.
//   compare   simulated against measured step time, one point per pair of runs: simulated runs on
//             x, measured runs on y whatever the --run order, paired by configuration (PairRuns);
//             with y = x, a +-5% band and the mean absolute percentage error in the title. Up to
//             eight pairs are named one by one in the legend; more (or with `colour_by` or
//             `marker_by`) are coloured by one configuration key and marked by a second
//             (series_encoding.h), a legend entry per value, each colour's MAPE beside it.
//   errors    the same pairs' prediction error grouped by the configuration key `x_key` (default
//             schedule): a bar per value, the MAPE of its pairs, its worst pair marked and labelled
//             with its signed error, the MAPE of all pairs as a dashed line.
//   steptime  step time as clustered bars: one group per value of the configuration key `x_key`
//             (e.g. cluster), in the order the runs come, one bar per schedule (with the model when
//             the runs have several); one run per bar.
// Series beyond eight keep distinct (colour, marker) pairs (palette::Series); a legend holds at
// most 12 entries (figure_scripts.h).
//
// Pure functions apart from DrawFigure, which runs `gnuplot` as a child process
// (common/subprocess.h: no shell, the script on its standard input, data inline) and writes only
// `options.out`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"

namespace pipette {

enum class PlotKind { kTimeline, kBubble, kMemory, kCompare, kStepTime, kErrors };

// "timeline", "bubble", "memory", "compare", "steptime", "errors"; InvalidArgument naming the
// value otherwise.
Result<PlotKind> ParsePlotKind(std::string_view text);

// Figure sizes in pixels are in [kMinPlotPixels, kMaxPlotPixels].
inline constexpr int kMinPlotPixels = 100;
inline constexpr int kMaxPlotPixels = 10000;

struct PlotSize {
  int width = 1200;
  int height = 0;  // 0: the kind's default
};

// Parses --size "WIDTHxHEIGHT" (decimal pixels): width in [100, 10000], height 0 (the kind's
// default) or in [100, 10000]. InvalidArgument quoting the text as given otherwise.
Result<PlotSize> ParsePlotSize(std::string_view text);

struct PlotOptions {
  std::string out = "figure.png";  // .png or .svg
  int width = 1200;                // pixels
  int height = 0;                  // 0: the kind's default
  // bubble, steptime: the configuration key on the x axis; errors: the key that groups the pairs
  std::string x_key = std::string(NameOf(RunKey::kM));
  // compare: the configuration keys that colour and mark the points (series_encoding.h); empty:
  // chosen when there are more than eight pairs, "none": that channel unused
  std::string colour_by;
  std::string marker_by;
  int step = -1;  // timeline: draw only this step (-1: every step)
};

// The gnuplot script of the figure (data inline). Errors (InvalidArgument) name the run and the
// missing metric or configuration key, an unsupported --out extension, a size out of [100, 10000],
// no runs, more than eight runs or a --step a run did not trace for a timeline, runs that do not
// pair for compare or errors (PairRuns), a colour or marker key the runs lack or with more values
// than colours or markers (EncodeSeries).
Result<std::string> FigureScript(PlotKind kind, const std::vector<RunData>& runs,
                                 const PlotOptions& options);

// Writes the figure to options.out. Errors: FigureScript's, or IoError whose first line is
// gnuplot's reason (GnuplotReason) and whose next lines are all gnuplot printed.
Status DrawFigure(PlotKind kind, const std::vector<RunData>& runs, const PlotOptions& options);

// The reason in gnuplot's standard error `err`: from its last `"/dev/stdin" line N: REASON` line,
// "REASON (line N of the script; <the lines after it, e.g. system error: ...>)"; else its last
// non-empty line.
std::string GnuplotReason(std::string_view err);

}  // namespace pipette
