#include "pipette/fidelity/recorded_work.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "pipette/schedule/message.h"
#include "pipette/store/run_config.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

// The run's configuration value `key` as an int; InvalidArgument naming the option otherwise.
Result<int> ConfigInt(const std::optional<int>& value, RunKey key, const std::string& option) {
  if (!value) {
    return Status::InvalidArgument(
        fmt::format("{}: the run's configuration has no integer '{}' (not a run of a program)",
                    option, NameOf(key)));
  }
  return *value;
}

Status ReadConfig(const RunRecord& run, const std::string& option, RecordedWork& work) {
  const RecordedConfig config = ReadRunConfig(run.config);
  if (!config.object) {
    return Status::InvalidArgument(
        fmt::format("{}: the run's configuration is not a JSON object", option));
  }
  if (!config.schedule) {
    return Status::InvalidArgument(
        fmt::format("{}: the run's configuration names no schedule", option));
  }
  work.schedule = *config.schedule;
  PIPETTE_ASSIGN_OR_RETURN(work.p, ConfigInt(config.p, RunKey::kP, option));
  PIPETTE_ASSIGN_OR_RETURN(work.v, ConfigInt(config.v, RunKey::kV, option));
  PIPETTE_ASSIGN_OR_RETURN(work.m, ConfigInt(config.m, RunKey::kM, option));
  if (config.Find(RunKey::kDp) != nullptr) {
    PIPETTE_ASSIGN_OR_RETURN(work.dp, ConfigInt(config.dp, RunKey::kDp, option));
  }
  return Status::Ok();
}

// The rows of `events` that are whole plain instructions, as trace events; the two rows of an
// overlapped (F;B) cell (one instr_id) are left out, as MeasureStageCosts leaves the cell out.
std::vector<TraceEvent> PlainInstructions(const std::vector<EventRow>& events) {
  std::map<std::tuple<int, int, int>, int> rows_of;  // (rank, step, instr_id) -> rows
  for (const EventRow& e : events) {
    if (e.instr_id >= 0) ++rows_of[{e.rank, e.step, e.instr_id}];
  }
  std::vector<TraceEvent> trace;
  for (const EventRow& e : events) {
    if (e.instr_id < 0 || rows_of[{e.rank, e.step, e.instr_id}] != 1) continue;
    trace.push_back({e.rank, e.instr_id, e.step,
                     Action::Make(ActionKindOf(e.kind), e.stage, e.microbatch), e.start_s, e.end_s,
                     e.bytes});
  }
  return trace;
}

// Stages whose full backward ran only inside overlapped (F;B) cells: its cost is the median of the
// cells' durations less their forward half's measured cost (the engine runs the halves one after
// the other and times the cell as one).
void CostBackwardsOfCells(const std::vector<EventRow>& events, bool skip_first,
                          CostStatistic statistic, std::vector<MeasuredStageCost>& stages) {
  std::map<std::tuple<int, int, int>, std::vector<const EventRow*>> cells;
  for (const EventRow& e : events) {
    if (e.instr_id >= 0 && !(skip_first && e.step == 0)) {
      cells[{e.rank, e.step, e.instr_id}].push_back(&e);
    }
  }
  std::vector<std::vector<double>> seen(stages.size());
  for (auto& [key, rows] : cells) {
    if (rows.size() != 2) continue;
    if (rows[0]->kind != EventKind::kF) std::swap(rows[0], rows[1]);
    if (rows[0]->kind != EventKind::kF || rows[1]->kind != EventKind::kB) continue;
    const int forward = rows[0]->stage, backward = rows[1]->stage;
    const int count = static_cast<int>(stages.size());
    if (forward < 0 || forward >= count || backward < 0 || backward >= count) continue;
    if (!stages[forward].f || stages[backward].b) continue;
    seen[backward].push_back(rows[0]->end_s - rows[0]->start_s - *stages[forward].f);
  }
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (!seen[s].empty()) stages[s].b = std::max(0.0, Summarize(seen[s], statistic));
  }
}

// See RecordedWork::instruction_gap. `trace` holds the plain instructions (PlainInstructions).
double InstructionGap(const std::vector<TraceEvent>& trace, bool skip_first) {
  std::map<std::pair<int, int>, std::vector<const TraceEvent*>> steps;  // (rank, step) -> events
  for (const TraceEvent& e : trace) {
    if (!(skip_first && e.step == 0)) steps[{e.rank, e.step}].push_back(&e);
  }
  std::vector<double> gaps;
  for (auto& [rank_step, events] : steps) {
    std::sort(events.begin(), events.end(),
              [](const TraceEvent* x, const TraceEvent* y) { return x->instr_id < y->instr_id; });
    std::map<std::int64_t, bool> received;  // messages this rank receives in the step
    for (const TraceEvent* e : events) {
      const ActionKind k = e->action.kind;
      if (k == ActionKind::kRecvForward || k == ActionKind::kRecvBackward) {
        received[MessageOf(e->action).key()] = true;
      }
    }
    for (std::size_t i = 1; i < events.size(); ++i) {
      const TraceEvent& prev = *events[i - 1];
      const TraceEvent& cur = *events[i];
      if (cur.instr_id != prev.instr_id + 1) continue;  // an overlapped cell between them
      const bool prev_compute = IsCompute(prev.action.kind);
      const double free = prev_compute ? prev.end : prev.start;
      if (IsCompute(cur.action.kind)) {
        const Action& a = cur.action;
        const bool gradient = a.kind != ActionKind::kForward;
        if (a.kind != ActionKind::kWeightBackward &&
            received.contains(Message{a.stage, a.microbatch, gradient}.key())) {
          continue;  // it may have waited for its input
        }
      }
      if (cur.start >= free) gaps.push_back(cur.start - free);
    }
  }
  return gaps.empty() ? -1 : Median(gaps);
}

// See RecordedWork::message_latency. `trace` holds the plain instructions, each rank's in order.
double MessageLatency(const std::vector<TraceEvent>& trace, bool skip_first) {
  std::map<std::pair<int, std::int64_t>, double> sent;  // (step, message key) -> send time
  for (const TraceEvent& e : trace) {
    const ActionKind k = e.action.kind;
    if (k == ActionKind::kSendForward || k == ActionKind::kSendBackward) {
      sent[{e.step, MessageOf(e.action).key()}] = e.start;
    }
  }
  // When each rank became free before each of its events (the previous event's end, or a SEND's
  // or RECV's post): a RECV whose consumer waited from before the send saw the arrival.
  std::map<std::tuple<int, int, int>, const TraceEvent*> by_id;  // (rank, step, instr) -> event
  for (const TraceEvent& e : trace) by_id[{e.rank, e.step, e.instr_id}] = &e;
  std::vector<double> latencies;
  for (const TraceEvent& e : trace) {
    const ActionKind k = e.action.kind;
    if ((k != ActionKind::kRecvForward && k != ActionKind::kRecvBackward) ||
        (skip_first && e.step == 0)) {
      continue;
    }
    const auto send = sent.find({e.step, MessageOf(e.action).key()});
    if (send == sent.end()) continue;
    // The receiver's last compute before the arrival: the rank was waiting if it ended before
    // the send started.
    double busy_until = e.start;
    for (int id = e.instr_id + 1;; ++id) {
      const auto next = by_id.find({e.rank, e.step, id});
      if (next == by_id.end() || next->second->start >= e.end) break;
      if (IsCompute(next->second->action.kind)) busy_until = next->second->end;
    }
    if (busy_until <= send->second && e.end >= send->second) {
      latencies.push_back(e.end - send->second);
    }
  }
  return latencies.empty() ? -1 : Median(latencies);
}

// Per rank, the `statistic` of its `kind` rows' durations (without step 0 when later steps exist);
// empty when there is none.
std::vector<double> CostPerRank(const std::vector<EventRow>& events, EventKind kind, int p,
                                bool skip_first, CostStatistic statistic) {
  std::vector<std::vector<double>> seen(p);
  bool any = false;
  for (const EventRow& e : events) {
    if (e.kind != kind || e.rank < 0 || e.rank >= p || (skip_first && e.step == 0)) continue;
    seen[e.rank].push_back(e.end_s - e.start_s);
    any = true;
  }
  if (!any) return {};
  std::vector<double> costs(p, 0.0);
  for (int r = 0; r < p; ++r) {
    if (!seen[r].empty()) costs[r] = Summarize(seen[r], statistic);
  }
  return costs;
}

// The memory the engine recorded: "static_bytes[r]", "stage_activation_bytes[s]",
// "stage_workspace_bytes[s]" and
// "stage_wgrad_input_bytes[s]"; left empty when the run has none of them.
void ReadMemory(const RunData& run, RecordedWork& work) {
  if (run.Metric("static_bytes[0]", -1) < 0) return;
  for (int r = 0; r < work.p; ++r) {
    work.static_bytes.push_back(run.Metric(fmt::format("static_bytes[{}]", r)));
  }
  for (std::size_t s = 0; s < work.stages.size(); ++s) {
    work.stage_memory.push_back(
        {static_cast<std::int64_t>(run.Metric(fmt::format("stage_activation_bytes[{}]", s))),
         static_cast<std::int64_t>(run.Metric(fmt::format("stage_wgrad_input_bytes[{}]", s))),
         static_cast<std::int64_t>(run.Metric(fmt::format("stage_workspace_bytes[{}]", s)))});
  }
}

bool SharesCores(EventKind kind) {
  return kind == EventKind::kF || kind == EventKind::kI || kind == EventKind::kW ||
         kind == EventKind::kB || kind == EventKind::kOptimizer;
}

Status CheckRun(const RunData& run, const std::string& option) {
  if (run.run.engine == "sim") {
    return Status::InvalidArgument(fmt::format(
        "{}: run {} is a simulation; calibrate from a real engine's run (pipette train)", option,
        run.run.id));
  }
  if (run.run.status != kRunOk) {
    return Status::InvalidArgument(fmt::format("{}: run {} is '{}', not a finished ok run", option,
                                               run.run.id, run.run.status));
  }
  return Status::Ok();
}

}  // namespace

std::vector<EventRow> ShareOutContention(const std::vector<EventRow>& events, int cores,
                                         int replicas) {
  // The computes that occupy a core: one per instruction (the two rows of an overlapped (F;B)
  // cell share their instruction and its interval), every update.
  std::vector<const EventRow*> computes;
  std::set<std::tuple<int, int, int>> instructions;  // (rank, step, instr_id)
  for (const EventRow& e : events) {
    if (!SharesCores(e.kind) || !(e.end_s > e.start_s)) continue;
    if (e.instr_id >= 0 && !instructions.insert({e.rank, e.step, e.instr_id}).second) continue;
    computes.push_back(&e);
  }
  // The moments where the count of running computes changes, and the count after each.
  std::vector<double> times;
  for (const EventRow* e : computes) {
    times.push_back(e->start_s);
    times.push_back(e->end_s);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto at = [&](double t) {
    return static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t) -
                                    times.begin());
  };
  std::vector<int> change(times.size() + 1, 0);
  for (const EventRow* e : computes) {
    ++change[at(e->start_s)];
    --change[at(e->end_s)];
  }
  // work[k]: a core's worth of work one compute does alone from times[0] to times[k].
  std::vector<double> work(times.size(), 0.0);
  int running = 0;
  for (std::size_t k = 0; k + 1 < times.size(); ++k) {
    running += change[k];
    const int sharing = running * replicas;
    const double share = sharing > cores ? static_cast<double>(cores) / sharing : 1.0;
    work[k + 1] = work[k] + share * (times[k + 1] - times[k]);
  }
  std::vector<EventRow> alone = events;
  for (EventRow& e : alone) {
    if (SharesCores(e.kind) && e.end_s > e.start_s) {
      e.end_s = e.start_s + (work[at(e.end_s)] - work[at(e.start_s)]);
    }
  }
  return alone;
}

std::vector<std::vector<double>> StepSlowdowns(const std::vector<TraceEvent>& trace,
                                               const std::vector<MeasuredStageCost>& stages, int p,
                                               int steps) {
  if (p < 1 || steps < 1) return {};
  const int first = steps > 1 ? 1 : 0;
  std::vector<std::vector<double>> measured(steps, std::vector<double>(p, 0.0)), priced = measured;
  for (const TraceEvent& e : trace) {
    const ActionKind kind = e.action.kind;
    const bool plain = kind == ActionKind::kForward || kind == ActionKind::kInputBackward ||
                       kind == ActionKind::kWeightBackward || kind == ActionKind::kFullBackward;
    if (!plain || e.rank < 0 || e.rank >= p || e.step < first || e.step >= steps ||
        e.action.stage < 0 || e.action.stage >= static_cast<int>(stages.size())) {
      continue;
    }
    const std::optional<double>& cost = stages[e.action.stage].Of(kind);
    if (!cost || !(*cost > 0)) continue;
    measured[e.step][e.rank] += e.end - e.start;
    priced[e.step][e.rank] += *cost;
  }
  std::vector<std::vector<double>> slowdown;
  for (int s = first; s < steps; ++s) {
    std::vector<double> row;
    for (int r = 0; r < p; ++r) {
      if (!(priced[s][r] > 0 && measured[s][r] > 0)) return {};
      row.push_back(measured[s][r] / priced[s][r]);
    }
    slowdown.push_back(std::move(row));
  }
  return slowdown;
}

// NOLINTNEXTLINE(readability-function-size): reads the run's parts in order, each with its check
Result<RecordedWork> RecordedWorkOf(const RunData& run, const std::string& option,
                                    CostStatistic statistic, int alone_on_cores) {
  PIPETTE_RETURN_IF_ERROR(CheckRun(run, option));
  RecordedWork work;
  work.run_id = run.run.id;
  work.engine = run.run.engine;
  PIPETTE_RETURN_IF_ERROR(ReadConfig(run.run, option, work));
  const std::vector<TraceEvent> trace = PlainInstructions(run.events);
  if (trace.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: run {} has no traced instructions (recorded with --trace-steps 0?)",
                    option, run.run.id));
  }
  int stages = 0;
  for (const TraceEvent& e : trace) {
    work.traced_steps = std::max(work.traced_steps, e.step + 1);
    stages = std::max(stages, e.action.stage + 1);
  }
  // What the computes cost: as measured, or alone (the cores' sharing taken out).
  std::vector<EventRow> alone;
  if (alone_on_cores > 0) alone = ShareOutContention(run.events, alone_on_cores, work.dp);
  const std::vector<EventRow>& costed = alone_on_cores > 0 ? alone : run.events;
  const std::vector<TraceEvent> plain = alone_on_cores > 0 ? PlainInstructions(costed) : trace;
  work.stages = MeasureStageCosts(plain, stages, statistic);
  CostBackwardsOfCells(costed, work.traced_steps > 1, statistic, work.stages);
  for (int s = 0; s < stages; ++s) {
    const MeasuredStageCost& c = work.stages[s];
    if (!c.f || !(c.b || (c.i && c.w))) {
      return Status::InvalidArgument(fmt::format(
          "{}: run {} timed no plain forward or no backward of stage {}", option, run.run.id, s));
    }
  }
  work.stage_output_bytes.assign(stages, 0);
  for (const TraceEvent& e : trace) {
    if (e.action.kind == ActionKind::kSendForward) {
      work.stage_output_bytes[e.action.stage] =
          std::max(work.stage_output_bytes[e.action.stage], e.bytes);
    }
  }
  const bool skip_first = work.traced_steps > 1;
  work.allreduce = CostPerRank(run.events, EventKind::kAllReduce, work.p, skip_first, statistic);
  work.optimizer = CostPerRank(costed, EventKind::kOptimizer, work.p, skip_first, statistic);
  if (!work.allreduce.empty()) {
    work.allreduce_bytes.assign(work.p, 0);
    for (const EventRow& e : run.events) {
      if (e.kind == EventKind::kAllReduce && e.rank >= 0 && e.rank < work.p) {
        work.allreduce_bytes[e.rank] = std::max(work.allreduce_bytes[e.rank], e.bytes);
      }
    }
  }
  ReadMemory(run, work);
  work.instruction_gap = InstructionGap(trace, skip_first);
  work.message_latency = MessageLatency(trace, skip_first);
  for (int s = 0; s < work.traced_steps; ++s) {
    work.step_times.push_back(run.Metric(fmt::format("step_times_s[{}]", s)));
  }
  work.step_slowdown = StepSlowdowns(plain, work.stages, work.p, work.traced_steps);
  return work;
}

}  // namespace pipette
