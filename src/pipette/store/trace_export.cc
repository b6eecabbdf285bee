#include "pipette/store/trace_export.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <tuple>

#include "pipette/common/replacing_file.h"
#include "pipette/schedule/action.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

bool IsComputeKind(EventKind k) { return k <= EventKind::kB; }

// One executed instruction: its rows (two for an overlapped cell).
struct Executed {
  const EventRow* first = nullptr;
  const EventRow* second = nullptr;

  Action action() const {
    const Action a = Action::Make(ActionKindOf(first->kind), first->stage, first->microbatch);
    if (second == nullptr) return a;
    const Action b = Action::Make(ActionKindOf(second->kind), second->stage, second->microbatch);
    return a.kind == ActionKind::kForward ? Action::Overlap(a, b) : Action::Overlap(b, a);
  }
};

// Instructions of the run in row order; overlapped halves (same rank, step and instr_id, both
// compute) are joined. All-reduce rows stay single.
std::vector<Executed> Instructions(const RunData& run) {
  std::vector<Executed> out;
  std::map<std::tuple<int, int, int>, std::size_t> compute;  // (rank, step, instr_id) -> index
  for (const EventRow& e : run.events) {
    if (IsComputeKind(e.kind) && e.instr_id >= 0) {
      auto [it, fresh] = compute.try_emplace({e.rank, e.step, e.instr_id}, out.size());
      if (!fresh) {
        out[it->second].second = &e;
        continue;
      }
    }
    out.push_back({&e, nullptr});
  }
  return out;
}

std::string_view StreamOf(EventKind k) {
  switch (k) {
    case EventKind::kSendF:
    case EventKind::kSendB:
      return "send";
    case EventKind::kRecvF:
    case EventKind::kRecvB:
      return "recv";
    case EventKind::kAllReduce:
    case EventKind::kOptimizer:
      return "all-reduce";
    default:
      return "compute";
  }
}

int StreamIndex(std::string_view stream) {
  if (stream == "compute") return 0;
  if (stream == "send") return 1;
  if (stream == "recv") return 2;
  return 3;
}

// Where each instruction is drawn. Lanes: per (rank, stream), greedily the first lane whose last
// event ended by this start, so that no two events on one track overlap.
struct Tracks {
  std::vector<int> tid_of;                             // per instruction
  std::map<std::pair<int, int>, std::string> threads;  // (rank, tid) -> thread name
};

Tracks AssignTracks(const std::vector<Executed>& instructions) {
  std::vector<std::size_t> order(instructions.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return instructions[a].first->start_s < instructions[b].first->start_s;
  });
  std::map<std::pair<int, std::string_view>, std::vector<double>> lane_end;
  Tracks tracks;
  tracks.tid_of.resize(instructions.size());
  for (std::size_t k : order) {
    const EventRow& e = *instructions[k].first;
    const std::string_view stream = StreamOf(e.kind);
    std::vector<double>& ends = lane_end[{e.rank, stream}];
    std::size_t lane = 0;
    while (lane < ends.size() && ends[lane] > e.start_s) ++lane;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = std::max(e.end_s, e.start_s);
    // Tracks sort as compute, send, recv, all-reduce, each stream's lanes in order.
    tracks.tid_of[k] = StreamIndex(stream) * 1000 + static_cast<int>(lane);
    tracks.threads[{e.rank, tracks.tid_of[k]}] =
        lane == 0 ? std::string(stream) : fmt::format("{} {}", stream, lane);
  }
  return tracks;
}

// The complete ("X") event of one instruction on thread `tid`.
nlohmann::ordered_json CompleteEvent(const Executed& ins, int tid) {
  const EventRow& e = *ins.first;
  const bool collective = e.kind == EventKind::kAllReduce || e.kind == EventKind::kOptimizer;
  nlohmann::ordered_json x;
  x["name"] = collective ? std::string(EventKindName(e.kind)) : ToString(ins.action());
  x["cat"] = std::string(StreamOf(e.kind));
  x["ph"] = "X";
  x["ts"] = e.start_s * 1e6;
  x["dur"] = std::max(0.0, e.end_s - e.start_s) * 1e6;
  x["pid"] = e.rank;
  x["tid"] = tid;
  nlohmann::ordered_json args;
  args["step"] = e.step;
  if (!collective) {
    args["instr_id"] = e.instr_id;
    args["stage"] = e.stage;
    args["chunk"] = e.chunk;
    args["microbatch"] = e.microbatch;
  }
  args["bytes"] = e.bytes;
  x["args"] = std::move(args);
  return x;
}

}  // namespace

Status CheckHasEvents(const RunData& run) {
  if (!run.events.empty()) return Status::Ok();
  return Status::FailedPrecondition(
      fmt::format("run {} has no events (recorded with --trace none or summary): nothing to export",
                  run.run.id));
}

Status WriteChromeTrace(std::ostream& out, const RunData& run) {
  PIPETTE_RETURN_IF_ERROR(CheckHasEvents(run));
  const std::vector<Executed> instructions = Instructions(run);
  const Tracks tracks = AssignTracks(instructions);
  // The document {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}} as dump() wrote
  // it whole, one event at a time.
  out << R"({"traceEvents":[)";
  bool first = true;
  const auto write = [&](const nlohmann::ordered_json& event) {
    out << (first ? "" : ",") << event.dump();
    first = false;
    return static_cast<bool>(out);
  };
  std::map<int, bool> ranks;
  for (const auto& [key, name] : tracks.threads) ranks[key.first] = true;
  for (const auto& [rank, unused] : ranks) {
    write({{"ph", "M"},
           {"name", "process_name"},
           {"pid", rank},
           {"args", {{"name", fmt::format("rank {}", rank)}}}});
    write({{"ph", "M"},
           {"name", "process_sort_index"},
           {"pid", rank},
           {"args", {{"sort_index", rank}}}});
  }
  for (const auto& [key, name] : tracks.threads) {
    write({{"ph", "M"},
           {"name", "thread_name"},
           {"pid", key.first},
           {"tid", key.second},
           {"args", {{"name", name}}}});
  }
  for (std::size_t k = 0; k < instructions.size(); ++k) {
    if (!write(CompleteEvent(instructions[k], tracks.tid_of[k]))) break;
  }
  const nlohmann::ordered_json other = {{"run_id", run.run.id}, {"engine", run.run.engine}};
  out << R"(],"displayTimeUnit":"ms","otherData":)" << other.dump() << "}";
  if (!out) return Status::IoError("the Chrome trace could not be written");
  return Status::Ok();
}

Result<std::string> ToExecutedComputeCsv(const RunData& run, int step) {
  std::vector<Executed> instructions = Instructions(run);
  std::erase_if(instructions, [&](const Executed& i) {
    return !IsComputeKind(i.first->kind) || i.first->step != step;
  });
  if (instructions.empty()) {
    return Status::FailedPrecondition(fmt::format(
        "run {} has no compute events in step {} (recorded with --trace none or summary?)",
        run.run.id, step));
  }
  std::stable_sort(instructions.begin(), instructions.end(),
                   [](const Executed& a, const Executed& b) {
                     return std::tie(a.first->rank, a.first->start_s, a.first->instr_id) <
                            std::tie(b.first->rank, b.first->start_s, b.first->instr_id);
                   });
  const int ranks = run.NumRanks();
  std::vector<std::string> lines(ranks);
  for (const Executed& ins : instructions) {
    std::string& line = lines[ins.first->rank];
    if (!line.empty()) line += ',';
    const Action a = ins.action();
    line += ToString(a);
    if (a.kind == ActionKind::kOverlapped) line += "OVERLAP_F_B";
  }
  std::string out;
  for (const std::string& line : lines) out += line + '\n';
  return out;
}

Status ExportRun(const RunData& run, std::string_view format, int step, const std::string& path) {
  const bool chrome = format == "chrome";
  std::string csv;
  if (chrome) {
    PIPETTE_RETURN_IF_ERROR(CheckHasEvents(run));
  } else {
    PIPETTE_ASSIGN_OR_RETURN(csv, ToExecutedComputeCsv(run, step));
  }
  std::ofstream file;
  std::ostream* out = &std::cout;
  const std::string where =
      path.empty() ? std::string("standard output") : fmt::format("--out = '{}'", path);
  const auto failed = [&where] {
    return Status::IoError(fmt::format("{}: cannot write: {}", where, std::strerror(errno)));
  };
  // Written aside and moved into place when complete: a failed write leaves no partial trace.
  std::optional<ReplacingFile> replacing;
  if (!path.empty()) {
    replacing.emplace(path);
    file.open(replacing->write_path(), std::ios::binary | std::ios::trunc);
    if (!file) return failed();
    out = &file;
  }
  Status written = Status::Ok();
  if (chrome) {
    written = WriteChromeTrace(*out, run);
    if (path.empty()) *out << "\n";
  } else {
    *out << csv;
  }
  out->flush();
  if (file.is_open()) file.close();
  if (!*out) return failed();
  PIPETTE_RETURN_IF_ERROR(written);
  return replacing ? replacing->Commit() : Status::Ok();
}

}  // namespace pipette
