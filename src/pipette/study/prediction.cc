#include "pipette/study/prediction.h"

#include <fmt/core.h>

#include <algorithm>

#include "pipette/common/printable.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

// Per stage, the costs the simulation executes: the measured F, I and W; a stage that ran only
// full backwards splits its B in halves for I and W (it runs neither), and every measured B is
// kept as its own cost.
Costs StageCostsOf(const RecordedWork& work) {
  Costs costs;
  bool any_b = false;
  for (const MeasuredStageCost& c : work.stages) {
    StageCost cost{*c.f, 0, 0};
    if (c.i && c.w) {
      cost.i = *c.i;
      cost.w = *c.w;
    } else {
      cost.i = cost.w = *c.b / 2;
    }
    costs.stages.push_back(cost);
    any_b = any_b || c.b.has_value();
  }
  if (any_b) {
    for (std::size_t s = 0; s < work.stages.size(); ++s) {
      costs.full_backward.push_back(work.stages[s].b.value_or(costs.stages[s].b()));
    }
  }
  return costs;
}

}  // namespace

std::vector<double> StepTimes(const SimulationResult& r) {
  std::vector<double> times;
  for (const Span& s : r.step_spans) times.push_back(s.end - s.start);
  return times;
}

std::vector<double> PeakMemory(const std::vector<RankMemoryTimeline>& memory) {
  std::vector<double> peaks;
  for (const RankMemoryTimeline& m : memory) peaks.push_back(m.peak_bytes);
  return peaks;
}

Result<CostsFromPlan> PlanCostsFrom(const RunData& run, const std::string& option,
                                    const PredictionSettings& settings) {
  CostsFromPlan plan;
  PIPETTE_ASSIGN_OR_RETURN(plan.work, RecordedWorkOf(run, option, settings.statistic,
                                                     settings.alone ? settings.cores : 0));
  plan.measured_config = nlohmann::ordered_json::parse(run.run.config);
  plan.settings = settings;
  const RecordedWork& w = plan.work;
  if (w.instruction_gap >= 0) {  // the run's own dispatch time beats a microbenchmark's
    plan.settings.instruction_overhead = w.instruction_gap;
    plan.settings.overhead_source = "run";
  }
  if (w.message_latency >= 0) {  // the messages as this engine moved them, at their sizes
    plan.settings.latency = w.message_latency;
    plan.settings.seconds_per_byte = 0;
    plan.settings.message_source = "run";
  }
  Result<Schedule> schedule = MakeSchedule(w.schedule, {.p = w.p, .v = w.v, .m = w.m});
  if (!schedule.ok()) {
    return Status::InvalidArgument(fmt::format("{}: the run's schedule cannot be rebuilt: {}",
                                               option, schedule.status().message()));
  }
  plan.schedule = std::move(*schedule);
  PIPETTE_ASSIGN_OR_RETURN(plan.program, Lower(plan.schedule));
  if (plan.program.num_stages() != static_cast<int>(w.stages.size())) {
    return Status::InvalidArgument(
        fmt::format("{}: run {} timed {} stages, but its schedule {} has {}", option, w.run_id,
                    w.stages.size(), Printable(w.schedule), plan.program.num_stages()));
  }
  return plan;
}

SimulationCase CaseOf(const CostsFromPlan& plan) {
  const RecordedWork& w = plan.work;
  const PredictionSettings& s = plan.settings;
  SimulationCase one;
  one.program = &plan.program;
  one.costs = StageCostsOf(w);
  one.sizes.stage_output_bytes = w.stage_output_bytes;
  one.latency = s.latency;
  one.seconds_per_byte = s.seconds_per_byte;
  one.instruction_overhead = s.instruction_overhead;
  one.replicas = w.dp;
  one.steps = w.traced_steps;
  one.step_barrier = true;
  one.cores = s.cores;
  one.optimizer = w.optimizer;
  one.allreduce = w.allreduce;
  if (!w.allreduce.empty() && s.allreduce_alpha >= 0) {
    for (int r = 0; r < w.p; ++r) {
      one.allreduce[r] =
          s.allreduce_alpha + s.allreduce_beta * static_cast<double>(w.allreduce_bytes[r]);
    }
  }
  return one;
}

nlohmann::ordered_json ConfigOf(const CostsFromPlan& plan) {
  nlohmann::ordered_json config = plan.measured_config;  // the same program and model
  config["engine"] = "sim";
  config["simulated_steps"] = plan.work.traced_steps;  // the run's traced steps, for the join
  config["costs_from"] = plan.work.run_id;
  const PredictionSettings& s = plan.settings;
  config["prediction"] = {
      {"costs_from_engine", plan.work.engine},
      {"cost_statistic", s.statistic == CostStatistic::kMean ? "mean" : "median"},
      {"calibration", s.calibration_id},
      {"cores", s.cores},
      {"latency_s", s.latency},
      {"seconds_per_byte", s.seconds_per_byte},
      {"messages_from", s.message_source},
      {"instruction_overhead_s", s.instruction_overhead},
      {"instruction_overhead_from", s.overhead_source},
      {"allreduce_alpha_s", s.allreduce_alpha},
      {"allreduce_beta_s_per_byte", s.allreduce_beta}};
  if (s.alone) config["prediction"]["costs"] = "alone";  // the cores' sharing taken out
  return config;
}

RunData RunDataOf(const CostsFromReport& report) {
  const SimulationResult& r = report.result;
  RunData data;
  data.events = ToEventRows(report.plan.program, r.trace, r.collectives, r.updates);
  data.memory = ToMemoryRows(report.memory);
  const std::vector<double> steps = StepTimes(r);
  data.metrics = {{"step_time_s", Summarize(steps, CostStatistic::kMean), "s"},
                  {"bubble_ratio", r.bubble_ratio, "fraction"},
                  {"pipeline_makespan_s", r.pipeline_makespan, "s"}};
  AddPerRank(data.metrics, "step_times_s", steps, "s");
  AddPerRank(data.metrics, "busy_s", r.busy, "s");
  if (!report.memory.empty()) {
    AddPerRank(data.metrics, "peak_memory_bytes", PeakMemory(report.memory), "B");
  }
  return data;
}

std::string_view RunStatusOf(const CostsFromReport&) { return kRunOk; }

}  // namespace pipette
