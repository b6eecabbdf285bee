// How a figure of many runs stays readable: instead of one legend entry per run, it encodes the
// configuration keys that vary, colour by one key and marker by a second, with one legend entry
// per value of each (issue 33: a 52-pair fidelity scatter had 52 legend entries).
//
// Example: 52 measured runs varying in model (tiny, gpt-w256), schedule (13), v (follows from the
// schedule) and m (4, 8): schedule has more values than colours, so colour is by model and marker
// by m (v is skipped: it follows from the schedule); 2 + 2 legend entries instead of 52.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/run_data.h"

namespace pipette {

// At most this many values of the colour key (palette::kSeries) and of the marker key
// (palette::kMarkers).
inline constexpr int kMaxColourValues = 8;
inline constexpr int kMaxMarkerValues = 12;

struct SeriesEncoding {
  std::string colour_key;                  // empty: one colour for all runs
  std::string marker_key;                  // empty: one marker for all runs
  std::vector<std::string> colour_values;  // "KEY=VALUE", in the runs' order of first appearance
  std::vector<std::string> marker_values;
  std::vector<int> colour;  // per run: the index of its value in colour_values (0 without a key)
  std::vector<int> marker;  // per run: the index in marker_values (0 without a key)
  // The legend entries it takes: a value of each encoded key.
  int LegendEntries() const {
    return static_cast<int>(colour_values.size() + marker_values.size());
  }
};

// Encodes `runs` (not empty). `colour_by` and `marker_by` name a configuration key every run has
// ("none": that channel is unused, empty: chosen). A chosen key is one whose values differ
// between the runs, in the order schedule, model, then the first run's configuration order,
// skipping a key whose value follows from an earlier candidate's (v from the schedule, the
// sequence length from the model): colour the first with at most kMaxColourValues values (and,
// beside a given marker key, within `legend_budget`), marker the next with at most
// kMaxMarkerValues that still keeps LegendEntries() <= `legend_budget`, and does not follow from
// the colour key. InvalidArgument naming the key: a given key that a run
// lacks, that has more values than its channel holds, or both channels given the same key.
Result<SeriesEncoding> EncodeSeries(const std::vector<const RunData*>& runs,
                                    std::string_view colour_by, std::string_view marker_by,
                                    int legend_budget);

}  // namespace pipette
