#include "pipette/import/pytorch_import.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

#include "pipette/engine/measured_costs.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/trace_rows.h"
#include "pipette/store/training_run.h"

namespace pipette {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Two moments of one trace closer than this are one (Kineto writes nanoseconds; ranks' times pass
// through a shift by their base times).
constexpr double kSameInstant = 1e-10;

// One pipeline range of a rank's trace, as pipette reads it.
struct TracedAction {
  Action action;
  bool reduce_grad = false;   // a REDUCE_GRAD range (its stage in action.stage)
  std::string name;           // as the trace wrote it
  double start = 0, end = 0;  // seconds on the common clock (after its measured time is read)
  double host_start = 0, host_end = 0;  // the range itself
  int step = 0;
};

// One rank's trace on the common clock.
struct RankTrace {
  int rank = 0;         // in the pipeline
  int global_rank = 0;  // distributedInfo.rank
  const ChromeTrace* trace = nullptr;
  double shift = 0;  // added to the trace's times
  bool gpipe = false;
  bool device = false;                     // the trace has GPU kernels
  std::vector<TracedAction> actions;       // time order
  std::vector<TraceRange> updates;         // Optimizer.step ranges (shifted)
  std::vector<TraceRange> steps;           // ProfilerStep ranges (shifted), time order
  std::vector<TraceRange> communications;  // the trace's (shifted), by start
  int num_steps = 0;
};

std::string Where(const RankTrace& r) {
  return fmt::format("rank {} ('{}')", r.global_rank, r.trace->path);
}

// "rank G", with its pipeline rank when that differs (data parallelism).
std::string RankName(const RankTrace& r) {
  return r.global_rank == r.rank ? fmt::format("rank {}", r.global_rank)
                                 : fmt::format("rank {} (pipeline rank {})", r.global_rank, r.rank);
}

// The largest stage and microbatch index an import reads (programs beyond are not simulated).
constexpr int kMaxStage = 1 << 20, kMaxMicrobatch = 1 << 24;

// `text` as a whole number in [0, limit], or nullopt.
std::optional<int> IndexIn(std::string_view text, int limit) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0 || value > limit) {
    return std::nullopt;
  }
  return value;
}

// The action of "PP:<text>": nullopt for UNSHARD and RESHARD (FSDP's, not pipette's).
Result<std::optional<TracedAction>> ParseRuntimeAction(std::string_view text) {
  TracedAction out;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view rest = text.substr(digits);
  if (digits > 0 && (rest == "UNSHARD" || rest == "RESHARD")) {
    return std::optional<TracedAction>();
  }
  if (digits > 0 && rest == "REDUCE_GRAD") {
    const std::optional<int> stage = IndexIn(text.substr(0, digits), kMaxStage);
    if (!stage) return Status::InvalidArgument(fmt::format("stage beyond {}", kMaxStage));
    out.reduce_grad = true;
    out.action.stage = *stage;
    return std::optional(out);
  }
  PIPETTE_ASSIGN_OR_RETURN(out.action, ParseAction(text));
  const Action& a = out.action;
  for (const auto& [stage, mb] :
       {std::pair{a.stage, a.microbatch}, std::pair{a.back_stage, a.back_microbatch}}) {
    if (stage > kMaxStage || mb > kMaxMicrobatch) {
      return Status::InvalidArgument(fmt::format(
          "stage or microbatch beyond what pipette imports ({}, {})", kMaxStage, kMaxMicrobatch));
    }
  }
  return std::optional(out);
}

// ScheduleGPipe's "Forward <i>" / "Backward <i>" on pipeline rank `rank` (its one stage).
std::optional<TracedAction> ParseGPipeAction(std::string_view name, int rank) {
  TracedAction out;
  const bool forward = name.starts_with("Forward ");
  if (!forward && !name.starts_with("Backward ")) return std::nullopt;
  const std::optional<int> mb = IndexIn(name.substr(forward ? 8 : 9), kMaxMicrobatch);
  if (!mb) return std::nullopt;
  out.action = forward ? Action::F(rank, *mb) : Action::B(rank, *mb);
  return out;
}

// The rank's actions, updates and profiler steps, on the common clock.
Status ReadRankRanges(RankTrace& r) {
  bool runtime = false;
  for (const TraceRange& range : r.trace->annotations) {
    const TraceRange shifted{range.name, range.start + r.shift, range.end + r.shift, range.tid};
    if (range.name.starts_with("ProfilerStep#")) {
      r.steps.push_back(shifted);
      continue;
    }
    if (range.name.starts_with("Optimizer.step#")) {
      r.updates.push_back(shifted);
      continue;
    }
    std::optional<TracedAction> action;
    if (range.name.starts_with("PP:")) {
      Result<std::optional<TracedAction>> parsed = ParseRuntimeAction(range.name.substr(3));
      if (!parsed.ok()) {
        return Status::InvalidArgument(fmt::format("{}: range '{}' at {:.6f} s: {}", Where(r),
                                                   range.name, shifted.start,
                                                   parsed.status().message()));
      }
      action = *parsed;
      runtime = true;
    } else {
      action = ParseGPipeAction(range.name, r.rank);
      r.gpipe = r.gpipe || action.has_value();
    }
    if (!action) continue;
    action->name = range.name;
    action->host_start = action->start = shifted.start;
    action->host_end = action->end = shifted.end;
    r.actions.push_back(*action);
  }
  if (runtime && r.gpipe) {
    return Status::InvalidArgument(fmt::format(
        "{}: both 'PP:' ranges and GPipe's 'Forward i' / 'Backward i': one run per trace",
        Where(r)));
  }
  if (r.actions.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}: no pipeline ranges ('PP:<action>' of _PipelineScheduleRuntime or GPipe's 'Forward i' "
        "/ 'Backward i'); Schedule1F1B names none: run it from a CSV (docs/import.md)",
        Where(r)));
  }
  for (const TraceRange& c : r.trace->communications) {
    r.communications.push_back({c.name, c.start + r.shift, c.end + r.shift, c.tid});
  }
  auto by_start = [](const auto& a, const auto& b) { return a.start < b.start; };
  std::stable_sort(r.communications.begin(), r.communications.end(), by_start);
  std::stable_sort(r.actions.begin(), r.actions.end(), by_start);
  std::stable_sort(r.steps.begin(), r.steps.end(), by_start);
  std::stable_sort(r.updates.begin(), r.updates.end(), by_start);
  return Status::Ok();
}

// A key that tells a rank's actions apart within a step.
std::string KeyOf(const TracedAction& a) {
  return a.reduce_grad ? fmt::format("{}REDUCE_GRAD", a.action.stage) : ToString(a.action);
}

// Each action's step: the ProfilerStep range it starts in, or else its occurrence on the rank.
Status AssignSteps(RankTrace& r) {
  if (!r.steps.empty()) {
    for (TracedAction& a : r.actions) {
      const auto after =
          std::upper_bound(r.steps.begin(), r.steps.end(), a.start,
                           [](double t, const TraceRange& step) { return t < step.start; });
      if (after == r.steps.begin() || a.start > std::prev(after)->end) {
        return Status::InvalidArgument(
            fmt::format("{}: action '{}' at {:.6f} s lies outside every ProfilerStep range",
                        Where(r), a.name, a.start));
      }
      a.step = static_cast<int>(std::prev(after) - r.steps.begin());
    }
    r.num_steps = static_cast<int>(r.steps.size());
    return Status::Ok();
  }
  std::map<std::string, int> seen;
  for (TracedAction& a : r.actions) {
    a.step = seen[KeyOf(a)]++;
    r.num_steps = std::max(r.num_steps, a.step + 1);
  }
  return Status::Ok();
}

// The rank's communication ranges on the common clock, by start, that start in [from, to] (both
// widened by kSameInstant).
std::vector<TraceRange> CommunicationsIn(const RankTrace& r, double from, double to) {
  std::vector<TraceRange> out;
  const auto first =
      std::lower_bound(r.communications.begin(), r.communications.end(), from - kSameInstant,
                       [](const TraceRange& c, double t) { return c.start < t; });
  for (auto c = first; c != r.communications.end() && c->start <= to + kSameInstant; ++c) {
    out.push_back(*c);
  }
  return out;
}

// GPipe's ranges hold their receive (first), compute and send (last): the communication ranges
// that start inside one become its RECV and SEND actions (same step), and the compute what lies
// between them.
void SplitGPipeRanges(RankTrace& r, int p) {
  std::vector<TracedAction> out;
  for (TracedAction a : r.actions) {
    const bool forward = a.action.kind == ActionKind::kForward;
    const int s = a.action.stage, mb = a.action.microbatch;
    const bool wants_recv = forward ? s > 0 : s < p - 1;
    const bool wants_send = forward ? s < p - 1 : s > 0;
    std::optional<TracedAction> recv, send;
    auto widen = [&](std::optional<TracedAction>& part, ActionKind kind, double start, double end) {
      if (!part) {
        part =
            TracedAction{Action::Make(kind, s, mb), false, a.name, start, end, start, end, a.step};
      }
      part->start = part->host_start = std::min(part->start, start);
      part->end = part->host_end = std::max(part->end, end);
    };
    for (const TraceRange& c : CommunicationsIn(r, a.host_start, a.host_end)) {
      const double start = c.start, end = c.end;
      if (wants_recv && c.name.find("recv") != std::string::npos) {
        widen(recv, forward ? ActionKind::kRecvForward : ActionKind::kRecvBackward, start, end);
      } else if (wants_send && c.name.find("send") != std::string::npos) {
        widen(send, forward ? ActionKind::kSendForward : ActionKind::kSendBackward, start, end);
      }
    }
    if (recv) {
      out.push_back(*recv);
      a.start = std::clamp(recv->end, a.host_start, a.host_end);
    }
    if (send) a.end = std::clamp(send->start, a.start, a.host_end);
    out.push_back(a);
    if (send) out.push_back(*send);
  }
  r.actions = std::move(out);
}

// Host-only traces: a RECV's transfers are the communication ranges that start inside it; its data
// is there when the last of them ends (or when it was posted, without any). A compute that waited
// for it inside its own range starts then (an overlapped cell after both its receives).
void TimeOnHost(RankTrace& r) {
  // The computes of each step by what they consume: (step, 'F' or 'B', stage, microbatch).
  std::map<std::tuple<int, char, int, int>, std::vector<TracedAction*>> consumers;
  for (TracedAction& c : r.actions) {
    if (c.reduce_grad || !IsCompute(c.action.kind)) continue;
    const bool cell = c.action.kind == ActionKind::kOverlapped;
    const Action f = cell ? c.action.forward_half() : c.action;
    const Action b = cell ? c.action.backward_half() : c.action;
    if (f.kind == ActionKind::kForward)
      consumers[{c.step, 'F', f.stage, f.microbatch}].push_back(&c);
    if (IsInputBackward(b.kind)) consumers[{c.step, 'B', b.stage, b.microbatch}].push_back(&c);
  }
  for (TracedAction& recv : r.actions) {
    const ActionKind kind = recv.action.kind;
    if (r.gpipe || (kind != ActionKind::kRecvForward && kind != ActionKind::kRecvBackward)) {
      continue;
    }
    double arrival = recv.host_end;
    for (const TraceRange& c : CommunicationsIn(r, recv.host_start, recv.host_end)) {
      const bool receives =
          c.name.find("recv") != std::string::npos || c.name.find("coalesced") != std::string::npos;
      if (receives) arrival = std::max(arrival, c.end);
    }
    recv.end = arrival;
    const char what = kind == ActionKind::kRecvForward ? 'F' : 'B';
    const auto found = consumers.find({recv.step, what, recv.action.stage, recv.action.microbatch});
    if (found == consumers.end()) continue;
    for (TracedAction* c : found->second) {
      c->start = std::max(c->start, std::clamp(arrival, c->host_start, c->host_end));
    }
  }
}

// Device traces: a compute (or REDUCE_GRAD) takes the kernels launched inside its host range, from
// the first one's start to the last one's end (NCCL kernels only for REDUCE_GRAD); a RECV ends
// with its NCCL kernel. Returns the computes that launched none (they keep their host range).
int TimeOnDevice(RankTrace& r) {
  std::multimap<std::int64_t, const GpuKernel*> kernel_of;  // a graph launch: several kernels
  for (const GpuKernel& k : r.trace->kernels) kernel_of.emplace(k.correlation, &k);
  std::vector<KernelLaunch> launches = r.trace->launches;
  std::sort(launches.begin(), launches.end(),
            [](const KernelLaunch& a, const KernelLaunch& b) { return a.time < b.time; });
  int host_timed = 0;
  for (TracedAction& a : r.actions) {
    const bool compute = IsCompute(a.action.kind) && !a.reduce_grad;
    const bool recv =
        a.action.kind == ActionKind::kRecvForward || a.action.kind == ActionKind::kRecvBackward;
    if (!compute && !recv && !a.reduce_grad) continue;
    double first = kInf, last = -kInf;
    const auto from =
        std::lower_bound(launches.begin(), launches.end(), a.host_start - r.shift - kSameInstant,
                         [](const KernelLaunch& l, double t) { return l.time < t; });
    for (auto l = from; l != launches.end() && l->time <= a.host_end - r.shift + kSameInstant;
         ++l) {
      const auto [from_k, to_k] = kernel_of.equal_range(l->correlation);
      for (auto k = from_k; k != to_k; ++k) {
        if (k->second->communication == compute) continue;
        first = std::min(first, k->second->start + r.shift);
        last = std::max(last, k->second->end + r.shift);
      }
    }
    if (first == kInf) {
      if (compute) ++host_timed;
      continue;
    }
    if (recv) {
      a.end = std::max(a.host_start, last);
    } else {
      a.start = first;
      a.end = last;
    }
  }
  return host_timed;
}

// The computes of `actions` of step `step`, in the order they ran.
std::vector<const TracedAction*> ComputesOf(const RankTrace& r, int step) {
  std::vector<const TracedAction*> out;
  for (const TracedAction& a : r.actions) {
    if (a.step == step && !a.reduce_grad && IsCompute(a.action.kind)) out.push_back(&a);
  }
  std::stable_sort(out.begin(), out.end(), [](const TracedAction* a, const TracedAction* b) {
    return a->host_start < b->host_start;
  });
  return out;
}

// OK when rank r's computes of every step run in the order of its program under `schedule`.
Status CheckComputeOrder(const RankTrace& r, const RankProgram& program,
                         std::string_view schedule) {
  std::vector<Action> want;
  for (const Instruction& ins : program.instructions) {
    if (IsCompute(ins.action.kind)) want.push_back(ins.action);
  }
  for (int step = 0; step < r.num_steps; ++step) {
    const std::vector<const TracedAction*> got = ComputesOf(r, step);
    for (std::size_t k = 0; k < std::max(got.size(), want.size()); ++k) {
      if (k < got.size() && k < want.size() && got[k]->action == want[k]) continue;
      return Status::InvalidArgument(fmt::format(
          "{}, step {}: compute {} of the step is '{}' in the trace, '{}' in schedule {}",
          RankName(r), step, k, k < got.size() ? ToString(got[k]->action) : "(none)",
          k < want.size() ? ToString(want[k]) : "(none)", schedule));
    }
  }
  return Status::Ok();
}

// Each of rank r's actions (REDUCE_GRAD aside) as its instruction id in `program`, step by step:
// every program instruction once per step (a GPipe trace may lack the communication its ranges
// did not show).
Result<std::vector<int>> InstructionIds(const RankTrace& r, const RankProgram& program,
                                        std::string_view schedule) {
  std::map<std::string, int> id_of;
  for (std::size_t k = 0; k < program.instructions.size(); ++k) {
    id_of[ToString(program.instructions[k].action)] = static_cast<int>(k);
  }
  std::vector<int> ids(r.actions.size(), -1);
  std::vector<std::vector<bool>> seen(r.num_steps,
                                      std::vector<bool>(program.instructions.size(), false));
  for (std::size_t k = 0; k < r.actions.size(); ++k) {
    const TracedAction& a = r.actions[k];
    if (a.reduce_grad) continue;
    const auto found = id_of.find(ToString(a.action));
    if (found == id_of.end()) {
      return Status::InvalidArgument(fmt::format(
          "{}, step {}: action '{}' (range '{}' at {:.6f} s) is not in schedule {}'s "
          "program for pipeline rank {}",
          RankName(r), a.step, ToString(a.action), a.name, a.host_start, schedule, r.rank));
    }
    if (seen[a.step][found->second]) {
      return Status::InvalidArgument(
          fmt::format("{}, step {}: action '{}' twice", RankName(r), a.step, ToString(a.action)));
    }
    seen[a.step][found->second] = true;
    ids[k] = found->second;
  }
  for (int step = 0; step < r.num_steps; ++step) {
    for (std::size_t k = 0; k < program.instructions.size(); ++k) {
      const Action& want = program.instructions[k].action;
      if (seen[step][k] || (r.gpipe && !IsCompute(want.kind))) continue;
      return Status::InvalidArgument(
          fmt::format("{}, step {}: schedule {}'s action '{}' is missing from the trace",
                      RankName(r), step, schedule, ToString(want)));
    }
  }
  return ids;
}

// The traces in global rank order, each shifted onto the common clock (its pipeline rank the
// global one until KeepReplicaZero). InvalidArgument for a trace without distributedInfo, two of
// one rank, ranks missing, or world sizes that disagree.
Result<std::vector<RankTrace>> OrderRanks(const std::vector<ChromeTrace>& traces) {
  if (traces.empty()) return Status::InvalidArgument("give one trace per rank");
  const int world = traces.front().world_size;
  std::int64_t base = traces.front().origin_ns;
  std::map<int, const ChromeTrace*> of_rank;
  for (const ChromeTrace& t : traces) {
    base = std::min(base, t.origin_ns);
    if (t.rank < 0) {
      return Status::InvalidArgument(fmt::format(
          "'{}': no distributedInfo.rank (profile after torch.distributed.init_process_group)",
          t.path));
    }
    if (t.world_size != world || t.rank >= world) {
      return Status::InvalidArgument(
          fmt::format("'{}': rank {} of world size {}, but '{}' is of world size {}", t.path,
                      t.rank, t.world_size, traces.front().path, world));
    }
    if (of_rank.contains(t.rank)) {
      return Status::InvalidArgument(
          fmt::format("'{}' and '{}' both claim rank {}", of_rank[t.rank]->path, t.path, t.rank));
    }
    of_rank[t.rank] = &t;
  }
  if (static_cast<int>(traces.size()) != world) {
    std::string missing;
    int named = 0;
    for (int r = 0; r < world && named <= 8; ++r) {
      if (of_rank.contains(r)) continue;
      missing += (missing.empty() ? "" : ", ") + (++named > 8 ? "..." : std::to_string(r));
    }
    return Status::InvalidArgument(fmt::format(
        "world size {}, but {} traces were given: the traces of ranks {} are missing (one trace "
        "per rank)",
        world, traces.size(), missing));
  }
  std::vector<RankTrace> ranks(traces.size());
  for (int r = 0; r < world; ++r) {
    ranks[r].rank = ranks[r].global_rank = r;
    ranks[r].trace = of_rank[r];
    ranks[r].shift = static_cast<double>(of_rank[r]->origin_ns - base) * 1e-9;
    ranks[r].device = !of_rank[r]->kernels.empty();
  }
  return ranks;
}

// The lowest stage a rank's computes name: its pipeline rank in a loop or V layout.
int LowestStage(const RankTrace& r) {
  int lowest = std::numeric_limits<int>::max();
  for (const TracedAction& a : r.actions) {
    if (a.reduce_grad || !IsCompute(a.action.kind)) continue;
    lowest = std::min(lowest, a.action.stage);
    if (a.action.kind == ActionKind::kOverlapped) lowest = std::min(lowest, a.action.back_stage);
  }
  return lowest;
}

// Data parallelism: every trace's pipeline rank is the lowest stage its computes name, and the
// traces of one pipeline rank are its replicas, in global rank order. Keeps replica 0's traces
// (whose events a run records, as the other engines do) and returns the replicas (dp). GPipe's
// ranges name no stage: one pipeline. InvalidArgument for a --dp the traces contradict, replicas
// of unequal count or work, or pipeline ranks that are not 0..p-1.
Result<int> KeepReplicaZero(std::vector<RankTrace>& ranks, int dp_given) {
  const bool gpipe =
      std::any_of(ranks.begin(), ranks.end(), [](const RankTrace& r) { return r.gpipe; });
  std::map<int, std::vector<RankTrace*>> replicas;  // pipeline rank -> its traces
  for (RankTrace& r : ranks) replicas[gpipe ? r.global_rank : LowestStage(r)].push_back(&r);
  if (dp_given == 1 || (dp_given == 0 && replicas.size() == ranks.size())) {
    return 1;  // one pipeline: each rank's pipeline rank is its global rank, whatever its stages
  }
  const int p = static_cast<int>(replicas.size());
  const int dp = static_cast<int>(ranks.size()) / p;
  if (dp_given != 0 && dp_given != dp) {
    return Status::InvalidArgument(fmt::format(
        "--dp = {}: the traces hold {} replica(s) of a {}-rank pipeline (ranks whose computes "
        "name the same lowest stage are replicas)",
        dp_given, dp, p));
  }
  int expected = 0;
  for (const auto& [rank, group] : replicas) {
    if (rank != expected++ || static_cast<int>(group.size()) != dp) {
      return Status::InvalidArgument(fmt::format(
          "the traces' pipeline ranks (the lowest stage each rank's computes name) are not {} "
          "ranks of {} replicas each: rank {} ('{}') has lowest stage {} with {} trace(s)",
          p, dp, group.front()->global_rank, group.front()->trace->path, rank, group.size()));
    }
    for (RankTrace* other : group) {
      if (other->actions.size() != group.front()->actions.size()) {
        return Status::InvalidArgument(
            fmt::format("rank {} ('{}') is a replica of rank {} but ran {} actions to its {}",
                        other->global_rank, other->trace->path, group.front()->global_rank,
                        other->actions.size(), group.front()->actions.size()));
      }
    }
  }
  std::vector<RankTrace> kept;
  for (const auto& [rank, group] : replicas) {
    kept.push_back(std::move(*group.front()));
    kept.back().rank = rank;
  }
  ranks = std::move(kept);
  return dp;
}

// p, v and m from the traces, checked against the options.
Result<ScheduleParams> SizesOf(const std::vector<RankTrace>& ranks,
                               const PyTorchImportOptions& options) {
  ScheduleParams params;
  params.p = static_cast<int>(ranks.size());
  int stages = 0;
  for (const RankTrace& r : ranks) {
    for (const TracedAction& a : r.actions) {
      if (a.reduce_grad || !IsCompute(a.action.kind)) continue;
      const Action parts[] = {
          a.action.kind == ActionKind::kOverlapped ? a.action.forward_half() : a.action,
          a.action.kind == ActionKind::kOverlapped ? a.action.backward_half() : a.action};
      for (const Action& part : parts) {
        stages = std::max(stages, part.stage + 1);
        params.m = std::max(params.m, part.microbatch + 1);
      }
    }
  }
  if (stages % params.p != 0) {
    return Status::InvalidArgument(fmt::format(
        "the traces' actions name {} stages, not a multiple of their {} ranks", stages, params.p));
  }
  params.v = stages / params.p;
  const std::pair<int, int> given[] = {
      {options.p, params.p}, {options.v, params.v}, {options.m, params.m}};
  const char* names[] = {"-p", "-v", "-m"};
  for (int k = 0; k < 3; ++k) {
    if (given[k].first != 0 && given[k].first != given[k].second) {
      return Status::InvalidArgument(
          fmt::format("{} = {}: the traces have {}", names[k], given[k].first, given[k].second));
    }
  }
  return params;
}

// The schedule the traces ran: --schedule, or the first candidate whose program runs every rank's
// computes in the traced order.
Result<Program> ChooseSchedule(const std::vector<RankTrace>& ranks, const ScheduleParams& params,
                               const std::string& given, std::string& name) {
  if (!given.empty()) {
    Result<Schedule> schedule = MakeSchedule(given, params);
    if (!schedule.ok()) {
      return Status::InvalidArgument(fmt::format("--schedule = {} at p = {}, v = {}, m = {}: {}",
                                                 given, params.p, params.v, params.m,
                                                 schedule.status().message()));
    }
    name = given;
    return Lower(*schedule);
  }
  for (const std::string& candidate : ImportCandidateSchedules()) {
    Result<Schedule> schedule = MakeSchedule(candidate, params);
    if (!schedule.ok()) continue;
    Result<Program> program = Lower(*schedule);
    if (!program.ok()) continue;
    bool all = true;
    for (const RankTrace& r : ranks) {
      all = all && CheckComputeOrder(r, program->ranks[r.rank], candidate).ok();
    }
    if (all) {
      name = candidate;
      return program;
    }
  }
  return Status::InvalidArgument(fmt::format(
      "the traces' computes run in the order of no built-in schedule at p = {}, v = {}, m = {}: "
      "give --schedule NAME or csv:FILE",
      params.p, params.v, params.m));
}

// Each rank's step, span by span: its ProfilerStep ranges when every rank has them, else the span
// of what the step's events cover on every rank.
std::vector<double> StepTimes(const std::vector<RankTrace>& ranks,
                              const std::vector<EventRow>& rows, int steps) {
  std::vector<double> first(steps, kInf), last(steps, -kInf);
  const bool profiled =
      std::all_of(ranks.begin(), ranks.end(), [&](const RankTrace& r) { return !r.steps.empty(); });
  if (profiled) {
    for (const RankTrace& r : ranks) {
      for (int k = 0; k < steps; ++k) {
        first[k] = std::min(first[k], r.steps[k].start);
        last[k] = std::max(last[k], r.steps[k].end);
      }
    }
  } else {
    for (const EventRow& e : rows) {
      if (e.step < 0 || e.step >= steps) continue;
      first[e.step] = std::min(first[e.step], e.start_s);
      last[e.step] = std::max(last[e.step], e.end_s);
    }
  }
  std::vector<double> times;
  for (int k = 0; k < steps; ++k) times.push_back(std::max(0.0, last[k] - first[k]));
  return times;
}

// The step a moment of rank r belongs to: the ProfilerStep range holding it, else the step of the
// last action that started before it (the step it follows, as an update follows its step's
// backward); nullopt before the first action or outside every ProfilerStep.
std::optional<int> StepOf(const RankTrace& r, double t) {
  if (!r.steps.empty()) {
    for (std::size_t k = 0; k < r.steps.size(); ++k) {
      if (t >= r.steps[k].start - kSameInstant && t <= r.steps[k].end + kSameInstant) {
        return static_cast<int>(k);
      }
    }
    return std::nullopt;
  }
  std::optional<int> step;
  for (const TracedAction& a : r.actions) {
    if (a.host_start <= t) step = step ? std::max(*step, a.step) : a.step;
  }
  return step;
}

// Widens the span of `key` in `spans` to [start, end] (one all-reduce or update per rank and step,
// however many ranges: a REDUCE_GRAD per stage, an optimizer per model part).
void Widen(std::map<std::pair<int, int>, Span>& spans, std::pair<int, int> key, double start,
           double end) {
  const auto [at, fresh] = spans.try_emplace(key, Span{start, end});
  if (fresh) return;
  at->second.start = std::min(at->second.start, start);
  at->second.end = std::max(at->second.end, end);
}

// Moves every time of the run so that it starts at 0.
void StartAtZero(std::vector<RankTrace>& ranks) {
  double origin = kInf;
  for (const RankTrace& r : ranks) {
    for (const TracedAction& a : r.actions) origin = std::min(origin, a.host_start);
    for (const TraceRange& s : r.steps) origin = std::min(origin, s.start);
    for (const TraceRange& u : r.updates) origin = std::min(origin, u.start);
  }
  for (RankTrace& r : ranks) {
    r.shift -= origin;
    for (TracedAction& a : r.actions) {
      for (double* t : {&a.start, &a.end, &a.host_start, &a.host_end}) *t -= origin;
    }
    for (TraceRange& s : r.steps) s.start -= origin, s.end -= origin;
    for (TraceRange& u : r.updates) u.start -= origin, u.end -= origin;
    for (TraceRange& c : r.communications) c.start -= origin, c.end -= origin;
  }
}

// Reads every rank's steps and measured times (their ranges read).
Result<int> ReadRanks(std::vector<RankTrace>& ranks) {
  int host_timed = 0;
  StartAtZero(ranks);
  for (RankTrace& r : ranks) {
    PIPETTE_RETURN_IF_ERROR(AssignSteps(r));
    if (r.gpipe) SplitGPipeRanges(r, static_cast<int>(ranks.size()));
    if (r.device) {
      host_timed += TimeOnDevice(r);
    } else {
      TimeOnHost(r);
    }
    if (r.num_steps != ranks.front().num_steps) {
      return Status::InvalidArgument(fmt::format("{} ran {} steps, {} {}", Where(r), r.num_steps,
                                                 RankName(ranks.front()), ranks.front().num_steps));
    }
  }
  return host_timed;
}

}  // namespace

std::vector<std::string> ImportCandidateSchedules() {
  std::vector<std::string> names = {
      "gpipe",          "1f1b", "interleaved-1f1b", "interleaved-gpipe",
      "interleaved-zb", "zbv",  "dualpipe-v"};
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    const std::string name(g->name());
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

Result<ImportedRun> ImportPyTorchRun(const std::vector<ChromeTrace>& traces,
                                     const PyTorchImportOptions& options) {
  PIPETTE_ASSIGN_OR_RETURN(std::vector<RankTrace> ranks, OrderRanks(traces));
  for (RankTrace& r : ranks) PIPETTE_RETURN_IF_ERROR(ReadRankRanges(r));
  PIPETTE_ASSIGN_OR_RETURN(const int dp, KeepReplicaZero(ranks, options.dp));
  ImportedRun out;
  PIPETTE_ASSIGN_OR_RETURN(out.host_timed_computes, ReadRanks(ranks));
  PIPETTE_ASSIGN_OR_RETURN(const ScheduleParams params, SizesOf(ranks, options));
  std::string schedule;
  PIPETTE_ASSIGN_OR_RETURN(out.program, ChooseSchedule(ranks, params, options.schedule, schedule));
  std::vector<TraceEvent> trace;
  std::map<std::pair<int, int>, Span> reduced, updated;  // (rank, step) -> their span
  for (const RankTrace& r : ranks) {
    const RankProgram& program = out.program.ranks[r.rank];
    PIPETTE_RETURN_IF_ERROR(CheckComputeOrder(r, program, schedule));
    PIPETTE_ASSIGN_OR_RETURN(const std::vector<int> ids, InstructionIds(r, program, schedule));
    for (std::size_t k = 0; k < r.actions.size(); ++k) {
      const TracedAction& a = r.actions[k];
      if (a.reduce_grad) {
        Widen(reduced, {r.rank, a.step}, a.start, a.end);
      } else {
        trace.push_back({r.rank, ids[k], a.step, a.action, a.start, a.end, 0});
      }
    }
    for (const TraceRange& u : r.updates) {
      if (const std::optional<int> step = StepOf(r, u.start)) {
        Widen(updated, {r.rank, *step}, u.start, u.end);
      }
    }
  }
  std::vector<AllReduceEvent> reductions, updates;
  for (const auto& [at, span] : reduced)
    reductions.push_back({at.first, at.second, span.start, span.end, 0});
  for (const auto& [at, span] : updated)
    updates.push_back({at.first, at.second, span.start, span.end, 0});
  const int steps = ranks.front().num_steps;
  ImportedRunConfig& c = out.config;
  c.model = options.model;
  c.schedule = schedule;
  c.schedule_from = options.schedule.empty() ? "inferred" : "given";
  c.p = c.pp = params.p;
  c.v = params.v;
  c.m = params.m;
  c.dp = dp;
  c.steps = c.trace_steps = steps;
  c.annotations = ranks.front().gpipe ? "Forward/Backward" : "PP:";
  const auto devices =
      std::count_if(ranks.begin(), ranks.end(), [](const RankTrace& r) { return r.device; });
  c.clock = devices == 0 ? "host" : devices == static_cast<long>(ranks.size()) ? "device" : "mixed";
  std::vector<const ChromeTrace*> every;
  for (const ChromeTrace& t : traces) every.push_back(&t);
  std::sort(every.begin(), every.end(),
            [](const ChromeTrace* a, const ChromeTrace* b) { return a->rank < b->rank; });
  for (const ChromeTrace* t : every) c.traces.push_back({t->path, t->sha256, t->rank});
  RunData& data = out.data;
  data.run.engine = c.engine;
  data.run.config = nlohmann::ordered_json(c).dump();
  data.events = ToEventRows(out.program, trace, reductions, updates);
  const std::vector<double> times = StepTimes(ranks, data.events, steps);
  double mean = 0;
  for (const double t : times) mean += t / static_cast<double>(times.size());
  data.metrics = {{"step_time_s", mean, "s"}};
  AddPerRank(data.metrics, "step_times_s", times, "s");
  AddStageCostMetrics(MeasureStageCosts(trace, out.program.num_stages()), data.metrics);
  return out;
}

}  // namespace pipette
