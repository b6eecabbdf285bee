// Internal to the plot layer: the gnuplot script of each figure kind, one file each
// (timeline_figure.cc, bubble_figure.cc, memory_figure.cc, step_time_figure.cc,
// compare_figure.cc, errors_figure.cc), which FigureScript (figure.h) dispatches to, and the
// helpers more than one of them uses: gnuplot quoting, colours and the terminal (figure.cc), and a
// run's configuration and metrics (figure_common.cc).
//
// Pure functions on the caller's runs (store/run_data.h): nothing is owned or kept, and every
// function is thread-safe. Errors are FigureScript's (InvalidArgument naming the run and what it
// lacks).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/plot/figure.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"

namespace pipette::internal {

// A string as a gnuplot double-quoted literal.
std::string Quote(std::string_view text);
// A colour 0xRRGGBB as a gnuplot string "#RRGGBB".
std::string Rgb(std::uint32_t rgb);
// The script's first lines: the terminal for `o.out`'s extension (.png or .svg) at `o.width` x
// `o.height` (`default_height` when 0), the output file and the encoding. InvalidArgument for a
// size out of [kMinPlotPixels, kMaxPlotPixels] or another extension.
Result<std::string> Terminal(const PlotOptions& o, int default_height);

// The value of the run's metric `name`; InvalidArgument naming the run and the metric otherwise.
Result<double> NeedMetric(const RunData& run, const std::string& name);
// The value of the run's configuration key `key`; InvalidArgument naming the run and the key
// otherwise.
Result<nlohmann::json> NeedConfig(const RunData& run, const std::string& key);
Result<nlohmann::json> NeedConfig(const RunData& run, RunKey key);

// A figure lists at most this many runs in its legend, one entry each; beyond, it encodes the
// keys that vary (series_encoding.h). A legend holds at most kMaxLegendEntries entries.
inline constexpr int kMaxPerRunSeries = 8;
inline constexpr int kMaxLegendEntries = 12;
// The colour of a legend entry that shows a marker alone (its value of the marker key).
inline constexpr std::uint32_t kKeyGrey = 0x555555;

// A predicted run, the measured run it predicts (run_labels.h, PairRuns) and their steady-state
// step times in ms (steps >= 1, over the steps the prediction simulates), as `pipette compare
// --experiment` judges them.
struct PairedTimes {
  const RunData* predicted = nullptr;
  const RunData* measured = nullptr;
  double predicted_ms = 0;
  double measured_ms = 0;
};
// PairRuns' pairs with their step times; its errors, or NeedMetric's for a run without step time.
Result<std::vector<PairedTimes>> PairedStepTimes(const std::vector<RunData>& runs);

// The scripts of the figure kinds (figure.h describes each); `runs` is not empty.
Result<std::string> TimelineScript(const std::vector<RunData>& given, const PlotOptions& o);
Result<std::string> BubbleScript(const std::vector<RunData>& runs, const PlotOptions& o);
Result<std::string> MemoryScript(const std::vector<RunData>& runs, const PlotOptions& o);
Result<std::string> StepTimeScript(const std::vector<RunData>& runs, const PlotOptions& o);
Result<std::string> CompareScript(const std::vector<RunData>& runs, const PlotOptions& o);
Result<std::string> ErrorsScript(const std::vector<RunData>& runs, const PlotOptions& o);

}  // namespace pipette::internal
