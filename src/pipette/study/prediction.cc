#include "pipette/study/prediction.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

#include "pipette/common/host_machine.h"
#include "pipette/common/printable.h"
#include "pipette/engine/train_report.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/trace_rows.h"
#include "pipette/store/training_run.h"

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

Result<Calibration> FindCalibration(ExperimentDb& db, const std::string& which) {
  const std::string option = fmt::format("--calibration = {}", Printable(which));
  if (which == "latest") {
    PIPETTE_ASSIGN_OR_RETURN(std::vector<Calibration> all, db.ListCalibrations());
    const std::string host = HostName();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (it->host == host) return db.LoadCalibration(it->id);
    }
    return Status::InvalidArgument(fmt::format(
        "{}: the database has no calibration of this host ({}); run pipette calibrate first",
        option, Printable(host)));
  }
  std::int64_t id = 0;
  const auto [end, error] = std::from_chars(which.data(), which.data() + which.size(), id);
  if (error != std::errc() || end != which.data() + which.size() || id < 1) {
    return Status::InvalidArgument(
        fmt::format("{}: must be a calibration id (pipette calibrations) or 'latest'", option));
  }
  Result<Calibration> found = db.LoadCalibration(id);
  if (!found.ok() && found.status().code() == StatusCode::kNotFound) {
    return Status::InvalidArgument(fmt::format("{}: {}", option, found.status().message()));
  }
  return found;
}

void ApplyCalibration(const Calibration& c, PredictionSettings& settings) {
  settings.calibration_id = c.id;
  settings.latency = c.p2p.alpha;
  settings.seconds_per_byte = c.p2p.beta;
  settings.instruction_overhead = c.instruction_overhead_s;
  settings.overhead_source = "calibration";
  settings.message_source = "calibration";
  settings.allreduce_alpha = c.allreduce.alpha;
  settings.allreduce_beta = c.allreduce.beta;
}

Result<CostsFromPlan> PlanCostsFrom(const RunData& run, const std::string& option,
                                    const PredictionSettings& settings) {
  CostsFromPlan plan;
  PIPETTE_ASSIGN_OR_RETURN(plan.work, RecordedWorkOf(run, option, settings.statistic,
                                                     settings.alone ? settings.cores : 0));
  plan.measured_config = ReadRunConfig(run.run.config);
  plan.settings = settings;
  // A replay prices every step alike, from the run's own costs (docs/fidelity.md).
  plan.work.step_slowdown.clear();
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

Result<CostsFromPlan> PlanFitPrediction(const CostFit& fit, const TrainOptions& options,
                                        const PredictionSettings& settings, int steps,
                                        std::int64_t of_run) {
  const std::string option = fmt::format("--fit = {}", fit.id);
  Result<TrainPlan> planned = PlanTraining(options);
  if (!planned.ok()) {
    return Status::InvalidArgument(fmt::format("{}: the engine cannot plan this configuration: {}",
                                               option, planned.status().message()));
  }
  const TrainPlan& train = *planned;
  PIPETTE_ASSIGN_OR_RETURN(
      FittedWork fitted,
      PriceWithFit(fit, train, FamilyOf(train, fit.family.engine, options.dtype)));
  CostsFromPlan plan;
  plan.settings = settings;
  plan.settings.fit_id = fit.id;
  if (fit.instruction_gap >= 0) {
    plan.settings.instruction_overhead = fit.instruction_gap;
    plan.settings.overhead_source = "run";
  }
  if (fit.message_latency >= 0) {
    plan.settings.latency = fit.message_latency;
    plan.settings.seconds_per_byte = 0;
    plan.settings.message_source = "run";
  }
  RecordedWork& w = plan.work;
  w.run_id = of_run;
  w.engine = fit.family.engine;
  w.schedule = options.schedule;
  w.p = train.p();
  w.v = train.schedule.v;
  w.m = train.m();
  w.dp = train.dp;
  w.traced_steps = steps;
  w.stages = std::move(fitted.stages);
  w.optimizer = std::move(fitted.optimizer);
  w.step_slowdown = StepSlowdownsFor(fit, w.p);
  w.stage_output_bytes = MessageSizesOf(train).stage_output_bytes;
  if (train.dp > 1) {
    if (settings.allreduce_alpha < 0) {
      return Status::InvalidArgument(fmt::format(
          "{} with --dp = {}: the data-parallel all-reduce is priced by a calibration's fit; give "
          "--calibration ID|latest",
          option, train.dp));
    }
    for (const double params : RankParams(train)) {
      w.allreduce_bytes.push_back(static_cast<std::int64_t>(params) * 4);
      w.allreduce.push_back(0);  // CaseOf prices it with the calibration's fit
    }
  }
  plan.measured_config =
      ReadRunConfig(nlohmann::ordered_json(TrainingConfigOf(w.engine, options, train)).dump());
  plan.schedule = train.schedule;
  plan.program = train.program;
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
  one.step_slowdown = w.step_slowdown;
  one.allreduce = w.allreduce;
  if (!w.allreduce.empty() && s.allreduce_alpha >= 0) {
    for (int r = 0; r < w.p; ++r) {
      one.allreduce[r] =
          s.allreduce_alpha + s.allreduce_beta * static_cast<double>(w.allreduce_bytes[r]);
    }
  }
  return one;
}

int RecordedSeqLen(const CostsFromPlan& plan) { return plan.measured_config.seq_len.value_or(0); }

Status CheckUnevenPrediction(const CostsFromPlan& plan, bool adds_uneven, bool adds_seqlens) {
  const std::int64_t run = plan.work.run_id;
  const nlohmann::ordered_json recorded = RecordedUnevenWork(plan.measured_config);
  const nlohmann::ordered_json seqlens = RecordedMicrobatchSeqlens(plan.measured_config);
  if (!recorded.is_null() && adds_uneven) {
    return Status::InvalidArgument(fmt::format(
        "--costs-from = {}: the run already ran uneven work ({}); predict uneven work from an "
        "even run",
        run, recorded.dump()));
  }
  if (!seqlens.is_null()) {
    return Status::InvalidArgument(fmt::format(
        "--costs-from = {}: the run's microbatches have different lengths ({}), so its per-stage "
        "medians are no one length's costs; predict it from an even-length run with "
        "--microbatch-seqlens",
        run, seqlens.dump()));
  }
  if (RecordedSeqLen(plan) <= 0 && adds_seqlens) {
    return Status::InvalidArgument(fmt::format(
        "--microbatch-seqlens with --costs-from = {}: the run records no seq_len to scale from",
        run));
  }
  return Status::Ok();
}

Result<CostsFromReport> PredictRun(const CostsFromPlan& plan, const SimulationCase& one) {
  PIPETTE_ASSIGN_OR_RETURN(std::vector<SimulationResult> results, Simulate({one}));
  CostsFromReport report{plan, std::move(results.front()), {}};
  const RecordedWork& w = plan.work;
  if (!w.static_bytes.empty()) {
    report.memory = MemoryOverTime(report.result.trace, w.static_bytes, w.stage_memory,
                                   /*message_buffers=*/w.engine == "cpu");
  }
  return report;
}

PredictionConfig ConfigOf(const CostsFromPlan& plan) {
  PredictionConfig config;
  config.measured = plan.measured_config.json;      // the same program and model
  config.simulated_steps = plan.work.traced_steps;  // the run's traced steps, for the join
  config.costs_from = plan.work.run_id;
  const PredictionSettings& s = plan.settings;
  PredictionSettingsConfig& p = config.prediction;
  p.costs_from_engine = plan.work.engine;
  p.cost_statistic = s.statistic == CostStatistic::kMean ? "mean" : "median";
  p.calibration = s.calibration_id;
  p.cores = s.cores;
  p.latency_s = s.latency;
  p.seconds_per_byte = s.seconds_per_byte;
  p.messages_from = s.message_source;
  p.instruction_overhead_s = s.instruction_overhead;
  p.instruction_overhead_from = s.overhead_source;
  p.allreduce_alpha_s = s.allreduce_alpha;
  p.allreduce_beta_s_per_byte = s.allreduce_beta;
  p.alone = s.alone;  // the cores' sharing taken out
  p.fit = s.fit_id;
  p.step_slowdowns = static_cast<int>(plan.work.step_slowdown.size());
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
