#include "pipette/schedule/schedule_csv.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <vector>

#include "pipette/common/bounded_file.h"
#include "pipette/common/printable.h"

namespace pipette {
namespace {

// Far more than the CSV of the largest schedule accepted (kMaxScheduleChunks).
constexpr std::uintmax_t kMaxCsvBytes = std::uintmax_t{1} << 30;

std::string_view StripLineEnd(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool IsBlank(std::string_view cell) {
  const auto begin = cell.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return true;
  cell.remove_prefix(begin);
  return cell.substr(0, cell.find_last_not_of(" \t") + 1) == "None";
}

// Splits on commas that are not inside parentheses ("(0F7;7B3)" holds no comma, but a spreadsheet
// may write "(0F7, 7B3)"... which ParseAction then rejects with a clear message).
std::vector<std::string_view> SplitCells(std::string_view line) {
  std::vector<std::string_view> cells;
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t k = 0; k < line.size(); ++k) {
    if (line[k] == '(') ++depth;
    if (line[k] == ')') --depth;
    if (line[k] == ',' && depth <= 0) {
      cells.push_back(line.substr(begin, k - begin));
      begin = k + 1;
    }
  }
  cells.push_back(line.substr(begin));
  return cells;
}

// The lines of `text` without line ends, a leading UTF-8 BOM (spreadsheets write one) and
// trailing empty lines.
std::vector<std::string_view> SplitLines(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<std::string_view> lines;
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(StripLineEnd(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// What the cells say about stages and microbatches.
struct CellFacts {
  std::map<int, int> stage_rank;  // stage -> the rank that first touched it
  int max_stage = -1;
  int max_mb = -1;
};

// Parses every cell of `lines` (line r is rank r) into schedule.ranks. Errors name the line and
// cell of an unparsable or communication action, a stage on two ranks, or a line without actions.
Result<CellFacts> ReadCells(const std::vector<std::string_view>& lines, Schedule& schedule) {
  CellFacts facts;
  for (int r = 0; r < schedule.p; ++r) {
    auto cells = SplitCells(lines[r]);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (IsBlank(cells[c])) continue;
      Result<Action> parsed = ParseAction(cells[c]);
      if (!parsed.ok()) {
        return parsed.status().WithContext(fmt::format("line {}, cell {}", r + 1, c + 1));
      }
      const Action a = *parsed;
      if (!IsCompute(a.kind)) {
        return Status::InvalidArgument(fmt::format(
            "line {}, cell {}: {} is a communication action; a compute-only CSV holds F, I, W, B "
            "and (F;B) cells",
            r + 1, c + 1, ToString(a)));
      }
      const Action halves[2] = {a.kind == ActionKind::kOverlapped ? a.forward_half() : a,
                                a.kind == ActionKind::kOverlapped ? a.backward_half() : a};
      for (const Action& h : halves) {
        auto [it, inserted] = facts.stage_rank.emplace(h.stage, r);
        if (!inserted && it->second != r) {
          return Status::InvalidArgument(fmt::format(
              "line {}, cell {}: {} puts stage {} on rank {}, but line {} already put it on rank {}"
              " (a stage lives on exactly one rank)",
              r + 1, c + 1, ToString(a), h.stage, r, it->second + 1, it->second));
        }
        facts.max_stage = std::max(facts.max_stage, h.stage);
        facts.max_mb = std::max(facts.max_mb, h.microbatch);
      }
      schedule.ranks[r].push_back(a);
    }
    if (schedule.ranks[r].empty()) {
      return Status::InvalidArgument(fmt::format(
          "line {} holds no action: every line is a rank and every rank needs at least one",
          r + 1));
    }
  }
  return facts;
}

// Bounds the stage and microbatch numbers before they size any table: every stage and every
// microbatch needs an action, so neither can exceed the number of actions (this keeps a cell such
// as 0F999999999 from allocating), and S*m is within kMaxScheduleChunks.
Status CheckNumbering(const Schedule& schedule, const CellFacts& facts) {
  if (facts.max_stage < 0) return Status::InvalidArgument("schedule CSV holds no action");
  std::size_t cells = 0;
  for (const auto& actions : schedule.ranks) cells += actions.size();
  if (static_cast<std::size_t>(facts.max_stage) >= 2 * cells) {
    return Status::InvalidArgument(
        fmt::format("stage {} in a file of {} actions: stages must be numbered 0..S-1 without gaps",
                    facts.max_stage, cells));
  }
  if (static_cast<std::size_t>(facts.max_mb) >= 2 * cells) {
    return Status::InvalidArgument(fmt::format(
        "microbatch {} in a file of {} actions: microbatches must be numbered 0..m-1 without gaps",
        facts.max_mb, cells));
  }
  const long long chunks = static_cast<long long>(facts.max_stage + 1) * (facts.max_mb + 1);
  if (chunks > kMaxScheduleChunks) {
    return Status::InvalidArgument(fmt::format("S*m = {}*{} = {} chunks: more than the limit of {}",
                                               facts.max_stage + 1, facts.max_mb + 1, chunks,
                                               kMaxScheduleChunks));
  }
  return Status::Ok();
}

// Sets the placement (each stage on the rank whose line holds it), v and m. Every stage up to the
// largest needs an action, and S must be a multiple of p.
Status PlaceStages(const CellFacts& facts, Schedule& schedule) {
  const int num_stages = facts.max_stage + 1;
  std::vector<int> stage_to_rank(num_stages, -1);
  for (auto [stage, rank] : facts.stage_rank) stage_to_rank[stage] = rank;
  for (int s = 0; s < num_stages; ++s) {
    if (stage_to_rank[s] < 0) {
      return Status::InvalidArgument(
          fmt::format("stage {} has no action, but stage {} exists: stages must be numbered 0..S-1",
                      s, facts.max_stage));
    }
  }
  if (num_stages % schedule.p != 0) {
    return Status::InvalidArgument(fmt::format(
        "the file has S = {} stages on p = {} ranks: S must be a multiple of p (v = S/p)",
        num_stages, schedule.p));
  }
  PIPETTE_ASSIGN_OR_RETURN(schedule.placement,
                           Placement::FromStageRanks(std::move(stage_to_rank), schedule.p));
  schedule.v = num_stages / schedule.p;
  schedule.m = facts.max_mb + 1;
  return Status::Ok();
}

// Sets the routes: the stages each microbatch's forwards visit. Microbatches that share stages
// must share the whole route (a pipe), so a missing forward is reported, not silently routed
// around.
Status TraceRoutes(Schedule& schedule) {
  const int num_stages = schedule.num_stages();
  std::vector<StageRange> routes(schedule.m, StageRange{num_stages, -1});
  for (const auto& actions : schedule.ranks) {
    for (const Action& a : actions) {
      if (a.kind != ActionKind::kForward && a.kind != ActionKind::kOverlapped) continue;
      StageRange& route = routes[a.microbatch];
      route.first = std::min(route.first, a.stage);
      route.last = std::max(route.last, a.stage);
    }
  }
  std::vector<int> pipes;  // the first microbatch of each distinct route
  for (int i = 0; i < schedule.m; ++i) {
    if (routes[i].last < 0) {
      return Status::InvalidArgument(fmt::format(
          "microbatch {} has no forward, but microbatch {} exists: microbatches must be numbered "
          "0..m-1",
          i, schedule.m - 1));
    }
    bool known = false;
    for (int j : pipes) {
      if (routes[i] == routes[j]) {
        known = true;
        break;
      }
      if (routes[i].first <= routes[j].last && routes[j].first <= routes[i].last) {
        return Status::InvalidArgument(fmt::format(
            "microbatch {} has forwards on stages {}..{} but microbatch {} on {}..{}: microbatches "
            "that share a stage must pass through the same stages (is a forward missing?)",
            i, routes[i].first, routes[i].last, j, routes[j].first, routes[j].last));
      }
    }
    if (!known) pipes.push_back(i);
  }
  schedule.routes = std::move(routes);
  return Status::Ok();
}

}  // namespace

std::string ToComputeCsv(const Schedule& schedule) {
  std::string out;
  for (const auto& actions : schedule.ranks) {
    for (std::size_t k = 0; k < actions.size(); ++k) {
      if (k) out += ',';
      out += ToString(actions[k]);
      // PyTorch's _Action.from_str needs the kind after an overlapped cell.
      if (actions[k].kind == ActionKind::kOverlapped) out += "OVERLAP_F_B";
    }
    out += '\n';
  }
  return out;
}

Result<Schedule> ParseComputeCsv(std::string_view text, std::string name) {
  const std::vector<std::string_view> lines = SplitLines(text);
  if (lines.empty()) {
    return Status::InvalidArgument("schedule CSV is empty: need one line per rank");
  }
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.p = static_cast<int>(lines.size());
  schedule.ranks.resize(schedule.p);
  PIPETTE_ASSIGN_OR_RETURN(const CellFacts facts, ReadCells(lines, schedule));
  PIPETTE_RETURN_IF_ERROR(CheckNumbering(schedule, facts));
  PIPETTE_RETURN_IF_ERROR(PlaceStages(facts, schedule));
  PIPETTE_RETURN_IF_ERROR(TraceRoutes(schedule));
  return schedule;
}

Result<Schedule> LoadComputeCsv(const std::string& path) {
  PIPETTE_ASSIGN_OR_RETURN(
      const std::string text,
      ReadFileBounded(path, kMaxCsvBytes, "schedule CSV", MissingFile::kNotARegularFile));
  Result<Schedule> schedule = ParseComputeCsv(text, "csv:" + path);
  if (!schedule.ok())
    return schedule.status().WithContext(fmt::format("schedule CSV '{}'", Printable(path)));
  return schedule;
}

}  // namespace pipette
