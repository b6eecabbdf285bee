#include "pipette/schedule/schedule_csv.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

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
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // spreadsheets' UTF-8 BOM
  std::vector<std::string_view> lines;
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(StripLineEnd(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();  // trailing newlines
  if (lines.empty())
    return Status::InvalidArgument("schedule CSV is empty: need one line per rank");

  Schedule schedule;
  schedule.name = std::move(name);
  schedule.p = static_cast<int>(lines.size());
  schedule.ranks.resize(schedule.p);
  std::map<int, int> stage_rank;  // stage -> rank that first touched it
  int max_stage = -1, max_mb = -1;
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
        auto [it, inserted] = stage_rank.emplace(h.stage, r);
        if (!inserted && it->second != r) {
          return Status::InvalidArgument(fmt::format(
              "line {}, cell {}: {} puts stage {} on rank {}, but line {} already put it on rank {}"
              " (a stage lives on exactly one rank)",
              r + 1, c + 1, ToString(a), h.stage, r, it->second + 1, it->second));
        }
        max_stage = std::max(max_stage, h.stage);
        max_mb = std::max(max_mb, h.microbatch);
      }
      schedule.ranks[r].push_back(a);
    }
    if (schedule.ranks[r].empty()) {
      return Status::InvalidArgument(fmt::format(
          "line {} holds no action: every line is a rank and every rank needs at least one",
          r + 1));
    }
  }
  if (max_stage < 0) return Status::InvalidArgument("schedule CSV holds no action");
  // Every stage and every microbatch needs an action, so neither can exceed the number of actions;
  // checking this first keeps a cell such as 0F999999999 from sizing the tables below.
  std::size_t cells = 0;
  for (const auto& actions : schedule.ranks) cells += actions.size();
  if (static_cast<std::size_t>(max_stage) >= 2 * cells) {
    return Status::InvalidArgument(
        fmt::format("stage {} in a file of {} actions: stages must be numbered 0..S-1 without gaps",
                    max_stage, cells));
  }
  if (static_cast<std::size_t>(max_mb) >= 2 * cells) {
    return Status::InvalidArgument(fmt::format(
        "microbatch {} in a file of {} actions: microbatches must be numbered 0..m-1 without gaps",
        max_mb, cells));
  }
  const long long chunks = static_cast<long long>(max_stage + 1) * (max_mb + 1);
  if (chunks > kMaxScheduleChunks) {
    return Status::InvalidArgument(fmt::format("S*m = {}*{} = {} chunks: more than the limit of {}",
                                               max_stage + 1, max_mb + 1, chunks,
                                               kMaxScheduleChunks));
  }

  const int num_stages = max_stage + 1;
  std::vector<int> stage_to_rank(num_stages, -1);
  for (auto [stage, rank] : stage_rank) stage_to_rank[stage] = rank;
  for (int s = 0; s < num_stages; ++s) {
    if (stage_to_rank[s] < 0) {
      return Status::InvalidArgument(
          fmt::format("stage {} has no action, but stage {} exists: stages must be numbered 0..S-1",
                      s, max_stage));
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
  schedule.m = max_mb + 1;

  // Routes: the stages each microbatch's forwards visit. Microbatches that share stages must
  // share the whole route (a pipe), so a missing forward is reported, not silently routed around.
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
  return schedule;
}

Result<Schedule> LoadComputeCsv(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return Status::NotFound(
        fmt::format("schedule CSV '{}': not a regular file (or it does not exist)", path));
  }
  const auto size = std::filesystem::file_size(path, error);
  if (error || size > kMaxCsvBytes) {
    return Status::InvalidArgument(fmt::format(
        "schedule CSV '{}': {} bytes, more than the limit of {}", path, size, kMaxCsvBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("schedule CSV '{}': cannot open the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("schedule CSV '{}': read failed", path));
  Result<Schedule> schedule = ParseComputeCsv(text.str(), "csv:" + path);
  if (!schedule.ok()) return schedule.status().WithContext(fmt::format("schedule CSV '{}'", path));
  return schedule;
}

}  // namespace pipette
