#include "pipette/store/recorded_work.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

// The run's configuration value `key` as an int; InvalidArgument naming the option otherwise.
Result<int> ConfigInt(const nlohmann::json& config, const char* key, const std::string& option) {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer()) {
    return Status::InvalidArgument(fmt::format(
        "{}: the run's configuration has no integer '{}' (not a run of a program)", option, key));
  }
  return it->get<int>();
}

Status ReadConfig(const RunRecord& run, const std::string& option, RecordedWork& work) {
  const nlohmann::json config = nlohmann::json::parse(run.config, nullptr, false);
  if (!config.is_object()) {
    return Status::InvalidArgument(
        fmt::format("{}: the run's configuration is not a JSON object", option));
  }
  const auto schedule = config.find("schedule");
  if (schedule == config.end() || !schedule->is_string()) {
    return Status::InvalidArgument(
        fmt::format("{}: the run's configuration names no schedule", option));
  }
  work.schedule = schedule->get<std::string>();
  PIPETTE_ASSIGN_OR_RETURN(work.p, ConfigInt(config, "p", option));
  PIPETTE_ASSIGN_OR_RETURN(work.v, ConfigInt(config, "v", option));
  PIPETTE_ASSIGN_OR_RETURN(work.m, ConfigInt(config, "m", option));
  if (config.contains("dp")) {
    PIPETTE_ASSIGN_OR_RETURN(work.dp, ConfigInt(config, "dp", option));
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
                          std::vector<MeasuredStageCost>& stages) {
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
    if (!seen[s].empty()) stages[s].b = std::max(0.0, Median(seen[s]));
  }
}

// Per rank, the median duration of its `kind` rows (without step 0 when later steps exist);
// empty when there is none.
std::vector<double> MedianPerRank(const std::vector<EventRow>& events, EventKind kind, int p,
                                  bool skip_first) {
  std::vector<std::vector<double>> seen(p);
  bool any = false;
  for (const EventRow& e : events) {
    if (e.kind != kind || e.rank < 0 || e.rank >= p || (skip_first && e.step == 0)) continue;
    seen[e.rank].push_back(e.end_s - e.start_s);
    any = true;
  }
  if (!any) return {};
  std::vector<double> medians(p, 0.0);
  for (int r = 0; r < p; ++r) {
    if (!seen[r].empty()) medians[r] = Median(seen[r]);
  }
  return medians;
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

// NOLINTNEXTLINE(readability-function-size): reads the run's parts in order, each with its check
Result<RecordedWork> RecordedWorkOf(const RunData& run, const std::string& option) {
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
  work.stages = MeasureStageCosts(trace, stages);
  CostBackwardsOfCells(run.events, work.traced_steps > 1, work.stages);
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
  work.allreduce = MedianPerRank(run.events, EventKind::kAllReduce, work.p, skip_first);
  work.optimizer = MedianPerRank(run.events, EventKind::kOptimizer, work.p, skip_first);
  if (!work.allreduce.empty()) {
    work.allreduce_bytes.assign(work.p, 0);
    for (const EventRow& e : run.events) {
      if (e.kind == EventKind::kAllReduce && e.rank >= 0 && e.rank < work.p) {
        work.allreduce_bytes[e.rank] = std::max(work.allreduce_bytes[e.rank], e.bytes);
      }
    }
  }
  ReadMemory(run, work);
  for (int s = 0; s < work.traced_steps; ++s) {
    work.step_times.push_back(run.Metric(fmt::format("step_times_s[{}]", s)));
  }
  return work;
}

}  // namespace pipette
