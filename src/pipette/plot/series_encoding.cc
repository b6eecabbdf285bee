#include "pipette/plot/series_encoding.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "pipette/common/printable.h"
#include "pipette/plot/run_labels.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

// One key's values over the runs: the distinct "KEY=VALUE" texts in order of first appearance and
// each run's index into them.
struct Column {
  std::string key;
  std::vector<std::string> values;
  std::vector<int> index;
};

// `key`'s column, or the first run (by position) that lacks it or holds a table or list there.
Result<Column> ColumnOf(const std::vector<nlohmann::ordered_json>& configs,
                        const std::vector<const RunData*>& runs, const std::string& key,
                        std::string_view option) {
  Column column{key, {}, {}};
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const auto it = configs[k].find(key);
    if (it == configs[k].end() || it->is_structured()) {
      return Status::InvalidArgument(fmt::format(
          "{} = '{}': run {} has no {}configuration key '{}'", option, Printable(key),
          runs[k]->run.id, it == configs[k].end() ? "" : "single-valued ", Printable(key)));
    }
    const std::string text = fmt::format("{}={}", key, LabelValue(*it));
    const auto found = std::find(column.values.begin(), column.values.end(), text);
    column.index.push_back(static_cast<int>(found - column.values.begin()));
    if (found == column.values.end()) column.values.push_back(text);
  }
  return column;
}

// Whether `b`'s value is the same in every run where `a`'s is (b follows from a).
bool Follows(const Column& b, const Column& a) {
  std::map<int, int> seen;
  for (std::size_t k = 0; k < a.index.size(); ++k) {
    const auto [it, added] = seen.emplace(a.index[k], b.index[k]);
    if (!added && it->second != b.index[k]) return false;
  }
  return true;
}

// The keys that vary, schedule and model first, without those that follow from an earlier one.
std::vector<Column> Candidates(const std::vector<nlohmann::ordered_json>& configs,
                               const std::vector<const RunData*>& runs) {
  std::vector<std::string> keys = DifferingKeys(runs);
  std::stable_partition(keys.begin(), keys.end(), [](const std::string& key) {
    return key == NameOf(RunKey::kSchedule) || key == NameOf(RunKey::kModel);
  });
  std::stable_partition(keys.begin(), keys.end(),
                        [](const std::string& key) { return key == NameOf(RunKey::kSchedule); });
  std::vector<Column> columns;
  for (const std::string& key : keys) {
    Result<Column> column = ColumnOf(configs, runs, key, "");
    if (!column.ok()) continue;  // DifferingKeys names only keys every run has
    const bool derived = std::any_of(columns.begin(), columns.end(), [&](const Column& earlier) {
      return Follows(*column, earlier);
    });
    if (!derived) columns.push_back(std::move(*column));
  }
  return columns;
}

// A given key's column, checked against its channel's capacity; nullopt for "none".
Result<std::optional<Column>> GivenColumn(const std::vector<nlohmann::ordered_json>& configs,
                                          const std::vector<const RunData*>& runs,
                                          std::string_view key, std::string_view option,
                                          int capacity, std::string_view channel) {
  if (key == "none") return std::optional<Column>();
  PIPETTE_ASSIGN_OR_RETURN(Column column, ColumnOf(configs, runs, std::string(key), option));
  if (static_cast<int>(column.values.size()) > capacity) {
    return Status::InvalidArgument(fmt::format(
        "{} = '{}': the runs have {} values of it, a figure tells at most {} {} apart (choose a "
        "key with fewer values, or none)",
        option, Printable(key), column.values.size(), capacity, channel));
  }
  return std::optional<Column>(std::move(column));
}

}  // namespace

Result<SeriesEncoding> EncodeSeries(const std::vector<const RunData*>& runs,
                                    std::string_view colour_by, std::string_view marker_by,
                                    int legend_budget) {
  if (!colour_by.empty() && colour_by != "none" && colour_by == marker_by) {
    return Status::InvalidArgument(fmt::format(
        "--marker-by = '{}': already the colour key (--colour-by); encode a second key, or none",
        Printable(marker_by)));
  }
  std::vector<nlohmann::ordered_json> configs;
  for (const RunData* run : runs) configs.push_back(ReadRunConfig(run->run.config).json);
  std::optional<Column> colour, marker;
  if (!colour_by.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(
        colour, GivenColumn(configs, runs, colour_by, "--colour-by", kMaxColourValues, "colours"));
  }
  if (!marker_by.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(
        marker, GivenColumn(configs, runs, marker_by, "--marker-by", kMaxMarkerValues, "markers"));
  }
  const std::vector<Column> candidates = Candidates(configs, runs);
  const auto taken = [&](const Column& c) {
    return (colour && colour->key == c.key) || (marker && marker->key == c.key);
  };
  if (colour_by.empty()) {
    const int marked = marker ? static_cast<int>(marker->values.size()) : 0;
    for (const Column& c : candidates) {
      const int n = static_cast<int>(c.values.size());
      if (taken(c) || n > kMaxColourValues || marked + n > legend_budget) continue;
      colour = c;
      break;
    }
  }
  if (marker_by.empty()) {
    const int used = colour ? static_cast<int>(colour->values.size()) : 0;
    for (const Column& c : candidates) {
      const int n = static_cast<int>(c.values.size());
      if (taken(c) || n > kMaxMarkerValues || used + n > legend_budget) continue;
      if (colour && Follows(c, *colour)) continue;
      marker = c;
      break;
    }
  }
  SeriesEncoding out;
  out.colour.assign(runs.size(), 0);
  out.marker.assign(runs.size(), 0);
  if (colour) {
    out.colour_key = colour->key;
    out.colour_values = colour->values;
    out.colour = colour->index;
  }
  if (marker) {
    out.marker_key = marker->key;
    out.marker_values = marker->values;
    out.marker = marker->index;
  }
  return out;
}

}  // namespace pipette
