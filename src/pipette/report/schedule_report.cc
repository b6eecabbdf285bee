#include "pipette/report/schedule_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string_view>

#include "pipette/common/build_info.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

// The letter of a compute action on the timeline; lower case for a rank's odd-numbered chunks.
// `chunk_of[s]` is stage s's position among its rank's stages.
char TimelineLetter(const Action& a, const std::vector<int>& chunk_of) {
  char letter = '?';
  switch (a.kind) {
    case ActionKind::kForward:
      letter = 'F';
      break;
    case ActionKind::kInputBackward:
      letter = 'I';
      break;
    case ActionKind::kWeightBackward:
      letter = 'W';
      break;
    case ActionKind::kFullBackward:
      letter = 'B';
      break;
    case ActionKind::kOverlapped:
      letter = 'X';
      break;
    default:
      return '?';
  }
  return chunk_of[a.stage] % 2 == 1 ? static_cast<char>(letter - 'A' + 'a') : letter;
}

}  // namespace

std::string FormatAsciiTimeline(const ScheduleReport& report, int max_columns) {
  const Evaluation& e = report.evaluation;
  if (e.makespan <= 0.0 || e.timeline.empty()) return "";
  // One column per unit of the shortest compute action when that fits, else max_columns.
  double shortest = e.makespan;
  for (int r = 0; r < report.program.p; ++r) {
    const auto& instructions = report.program.ranks[r].instructions;
    for (std::size_t k = 0; k < instructions.size(); ++k) {
      const double d = e.timeline[r][k].end - e.timeline[r][k].start;
      if (IsCompute(instructions[k].action.kind) && d > 0.0) shortest = std::min(shortest, d);
    }
  }
  // Clamp in floating point: makespan / shortest can exceed any int.
  const int columns = static_cast<int>(
      std::clamp(std::ceil(e.makespan / shortest - 1e-9), 1.0, static_cast<double>(max_columns)));
  const double per_column = e.makespan / columns;
  const Placement& placement = report.schedule.placement;
  std::vector<int> chunk_of(placement.num_stages(), 0);
  for (int r = 0; r < placement.num_ranks(); ++r) {
    const auto stages = placement.StagesOf(r);
    for (std::size_t c = 0; c < stages.size(); ++c) chunk_of[stages[c]] = static_cast<int>(c);
  }
  std::string out = fmt::format(
      "# timeline: 1 column = {:.4g} time unit(s); F forward, B backward, I input-grad, W "
      "weight-grad, X overlapped F&B; lower case = odd chunk; . idle\n",
      per_column);
  for (int r = 0; r < report.program.p; ++r) {
    std::string row(columns, '.');
    const auto& instructions = report.program.ranks[r].instructions;
    for (std::size_t k = 0; k < instructions.size(); ++k) {
      const Action& a = instructions[k].action;
      if (!IsCompute(a.kind)) continue;
      const Interval span = e.timeline[r][k];
      int begin = static_cast<int>(std::lround(span.start / per_column));
      int end = static_cast<int>(std::lround(span.end / per_column));
      if (end == begin && span.end > span.start) end = begin + 1;
      for (int c = std::max(begin, 0); c < std::min(end, columns); ++c) {
        row[c] = TimelineLetter(a, chunk_of);
      }
    }
    out += fmt::format("rank {:>3} |{}|\n", r, row);
  }
  return out;
}

nlohmann::ordered_json ScheduleJson(const Schedule& schedule) {
  nlohmann::ordered_json json;
  json["schedule"] = schedule.name;
  json["p"] = schedule.p;
  json["v"] = schedule.v;
  json["m"] = schedule.m;
  return json;
}

std::string FormatScheduleText(const ScheduleReport& report) {
  const Schedule& s = report.schedule;
  const Evaluation& e = report.evaluation;
  std::string out;
  out += fmt::format("# pipette {} schedule {}\n", Version(), s.name);
  out += fmt::format(
      "# p={} v={} m={} stages={}  per-chunk times F={} I={} W={} (B={})  p2p latency={}\n", s.p,
      s.v, s.m, s.num_stages(), report.times.f, report.times.i, report.times.w, report.times.b(),
      report.latency);
  if (const std::string uneven = DescribeUnevenWork(report.uneven); !uneven.empty()) {
    out += "# uneven work: " + uneven + "\n";
  }

  // Per-rank order: one column per action, columns aligned across ranks. The names are made twice
  // (widths, then text) rather than kept: S*m strings at once took gigabytes at the size limit.
  std::size_t longest = 0;
  for (const auto& actions : s.ranks) longest = std::max(longest, actions.size());
  std::vector<std::size_t> width(longest, 0);
  for (int r = 0; r < s.p; ++r) {
    for (std::size_t k = 0; k < s.ranks[r].size(); ++k) {
      width[k] = std::max(width[k], ToString(s.ranks[r][k]).size());
    }
  }
  out += "#\n# order per rank (one column per action)\n";
  for (int r = 0; r < s.p; ++r) {
    std::string line = fmt::format("rank {:>3} |", r);
    for (std::size_t k = 0; k < s.ranks[r].size(); ++k) {
      line += fmt::format(" {:<{}}", ToString(s.ranks[r][k]), width[k]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }

  out += "#\n# rank  stages            actions        busy        idle  peak_activations\n";
  out += "#    -  -                       -      [time]      [time]          [chunks]\n";
  for (int r = 0; r < s.p; ++r) {
    std::string stages;
    for (int stage : s.placement.StagesOf(r))
      stages += fmt::format("{}{}", stages.empty() ? "" : ",", stage);
    out += fmt::format("  {:>4}  {:<16} {:>8} {:>11.6g} {:>11.6g} {:>17}\n", r, stages,
                       s.ranks[r].size(), e.busy[r], e.makespan - e.busy[r], e.peak_activations[r]);
  }
  const std::string megatron =
      e.bubble_ratio < 1.0 ? fmt::format("{:.4f}", e.bubble_ratio / (1.0 - e.bubble_ratio)) : "inf";
  out += "#\n";
  out += fmt::format("makespan      {:.6g}\n", e.makespan);
  out += fmt::format("bubble_ratio  {:.4f}   (idle/total; Megatron's idle/ideal = {})\n",
                     e.bubble_ratio, megatron);
  out += "#\n" + FormatAsciiTimeline(report, 120);
  return out;
}

void WriteScheduleJson(const ScheduleReport& report, std::ostream& out) {
  const Schedule& s = report.schedule;
  const Evaluation& e = report.evaluation;
  // The small members go through nlohmann::json; the action lists, S*m entries (16 million at the
  // limit), are written one action at a time. As a document they took gigabytes, and destroying
  // it allocates again inside a noexcept destructor, where running out of memory aborts.
  nlohmann::ordered_json head = ScheduleJson(s);
  head["placement"] = s.placement.stage_to_rank();
  std::string text = head.dump();
  text.back() = ',';  // the object goes on
  text += "\"ranks\":[";
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    text += r == 0 ? "[" : ",[";
    for (std::size_t k = 0; k < s.ranks[r].size(); ++k) {
      if (k > 0) text += ',';
      // An action's name is digits, letters, ';' and parentheses: nothing JSON escapes.
      text += '"' + ToString(s.ranks[r][k]) + '"';
      if (text.size() >= (1 << 20)) {
        out << text;
        text.clear();
      }
    }
    text += ']';
  }
  nlohmann::ordered_json tail;
  tail["makespan"] = e.makespan;
  tail["bubble_ratio"] = e.bubble_ratio;
  tail["busy"] = e.busy;
  tail["peak_activations"] = e.peak_activations;
  if (!report.uneven.IsEven()) tail["uneven"] = UnevenWorkConfigOf(report.uneven);
  const std::string rest = tail.dump();
  out << text << "]," << std::string_view(rest).substr(1) << "\n";
}

// ---- schedule search ----

std::string SearchText(const SearchOptions& o, const SearchResult& r) {
  std::string out = fmt::format(
      "# schedule search: p={} v={} m={} placement={} memory limit={} (chunks per rank{}) "
      "p2p latency={}\n",
      o.p, o.v, o.m, SearchPlacementName(o.placement), o.memory_limit,
      o.memory_limit == 0 ? ", 0: none" : "", o.evaluate.p2p_latency);
  out += "# stage costs F/I/W:";
  for (const StageCost& c : o.costs.stages) out += fmt::format(" {}/{}/{}", c.f, c.i, c.w);
  out += "\n";
  out += fmt::format(
      "# makespan {:.6g}   lower bound {:.6g}   best built-in within the limit: {}\n",
      r.evaluation.makespan, r.lower_bound,
      r.best_builtin.empty() ? std::string("none")
                             : fmt::format("{} {:.6g}", r.best_builtin, r.best_builtin_makespan));
  out += fmt::format(
      "# started from {} ({:.6g}); {} candidates, {} local-search moves (seed {}), {} "
      "improvements\n#\n",
      r.start, r.start_makespan, r.candidates, r.iterations_run, o.seed, r.improvements);
  return out;
}

nlohmann::ordered_json SearchJson(const SearchOptions& o, const SearchResult& r) {
  nlohmann::ordered_json j;
  j["placement"] = SearchPlacementName(o.placement);
  j["memory_limit"] = o.memory_limit;
  j["latency"] = o.evaluate.p2p_latency;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageCost& c : o.costs.stages) stages.push_back({{"f", c.f}, {"i", c.i}, {"w", c.w}});
  j["stage_costs"] = std::move(stages);
  j["makespan"] = r.evaluation.makespan;
  j["lower_bound"] = r.lower_bound;
  j["best_builtin"] = r.best_builtin;
  j["best_builtin_makespan"] = r.best_builtin_makespan;
  j["start"] = r.start;
  j["start_makespan"] = r.start_makespan;
  j["candidates"] = r.candidates;
  j["iterations"] = r.iterations_run;
  j["improvements"] = r.improvements;
  j["seed"] = o.seed;
  return j;
}

// ---- the built-in schedules ----

std::string ScheduleListText() {
  std::string out;
  std::size_t name_width = 4, constraints_width = 11;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    name_width = std::max(name_width, g->name().size());
    constraints_width = std::max(constraints_width, g->constraints().size());
  }
  out += fmt::format(
      "# built-in schedules (pipette schedule NAME -p P -m M [-v V]); csv:FILE loads your own\n");
  out += fmt::format("# {:<{}}  {:<{}}  {}\n", "name", name_width, "constraints", constraints_width,
                     "what");
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    out += fmt::format("  {:<{}}  {:<{}}  {}\n", g->name(), name_width, g->constraints(),
                       constraints_width, g->summary());
  }
  return out;
}

}  // namespace pipette
