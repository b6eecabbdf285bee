// Renders an evaluated schedule for `pipette schedule`: a text report for people (per-rank order,
// per-rank table with units, metrics, ASCII timeline), PyTorch's compute-only CSV, or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "pipette/schedule/costs.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"
#include "pipette/schedule/search.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette {

struct ScheduleReport {
  const Schedule& schedule;
  const Program& program;
  const Evaluation& evaluation;  // with timeline
  StageCost times;               // per-chunk costs given (nominal)
  double latency = 0.0;
  // The costs evaluated (the nominal times with uneven work applied) and the uneven work.
  const Costs& costs;
  const UnevenWork& uneven;
};

// The keys every JSON report of a schedule starts with: schedule, p, v, m.
nlohmann::ordered_json ScheduleJson(const Schedule& schedule);

std::string FormatScheduleText(const ScheduleReport& report);
// Writes the report as one JSON line to `out`, streaming the per-rank action lists (memory does
// not grow with them).
void WriteScheduleJson(const ScheduleReport& report, std::ostream& out);

// Returns an ASCII timeline with one row per rank, at most `max_columns` wide.
std::string FormatAsciiTimeline(const ScheduleReport& report, int max_columns);

// A schedule search's result (schedule/search.h: `pipette schedule search`): its settings, the
// makespan against the lower bound and the best built-in schedule, and how the search went; the
// text's '#' lines go before the found schedule's text, the JSON object under "search".
std::string SearchText(const SearchOptions& options, const SearchResult& result);
nlohmann::ordered_json SearchJson(const SearchOptions& options, const SearchResult& result);

// The built-in schedules (`pipette schedule --list`): name, constraints and a line on each.
std::string ScheduleListText();

}  // namespace pipette
