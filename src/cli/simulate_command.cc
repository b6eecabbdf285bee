// `pipette simulate [--model NAME|FILE] [--cluster NAME|FILE] [--nodes N] [--pp P --dp D --tp T
//  -v V] [--schedule NAME] [-m M] [--micro-batch-size B] [--seq-len L] [--dtype D] [--zero Z]
//  [--recompute] [--efficiency E] [--ideal-network] [--latency-us X] [--grad-reduce R]
//  [--grad-overlap] [--grad-bucket-params N] [--format text|json]`: one
// training step on the SimGrid engine. The model is partitioned (balanced) and timed with the
// roofline; the pipeline runs on the cluster platform with real message sizes (or an ideal
// network); the data-parallel gradients are reduced as --grad-reduce says (ring or tree buckets
// simulated as messages, after the program or with --grad-overlap as each stage completes; or the
// analytic ring after every replica's rank has finished): SimulateModel, sim/model_simulation.h.
// With --times F=..,I=..,W=.. (ms per chunk) and --ideal-network the model is bypassed and the step
// equals `pipette schedule`'s makespan. With --costs-from RUN [--cores N] it predicts a recorded
// real run instead: its program with its measured costs (study/prediction.h). What is recorded and
// printed: study/simulation_report.h. Uneven work (--rank-speed, --microbatch-seqlens,
// --link-slowdown; schedule/uneven_work.h) applies in every mode: with --times the costs are for
// --seq-len and
// --attention-share of each grows with s^2; the model prices every distinct length itself
// (partition/model_plan.h: StageCostsAt) and its messages grow with the length; --costs-from scales
// the run's measured costs like --times, for the run's own seq_len.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cli/simulate_options.h"
#include "cli/uneven_options.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/common/duration_limit.h"
#include "pipette/common/printable.h"
#include "pipette/common/progress_line.h"
#include "pipette/partition/model_plan.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule.h"
#include "pipette/study/simulation_report.h"
#include "sim/model_simulation.h"
#include "sim/replica_symmetry.h"
#include "sim/simulation_size.h"
#include "sim/simulator.h"

namespace pipette::cli {
namespace {

int SimulateFail(const Status& status) { return ReportError("simulate", status); }

// Refuses, before a schedule is built, a request whose simulation would certainly pass the limits
// of sim/simulation_size.h (a lower bound, with v = 1 where the schedule picks v); the lowered
// program is checked exactly before anything is recorded. A -p over the schedule layer's own limit
// is left to MakeSchedule, whose message names that limit.
Status CheckRequestSize(const SimulateOptions& o, int replicas) {
  if (o.params.p > kMaxPipelineRanks) return Status::Ok();
  // Every replica runs with --every-replica and trees; otherwise alike replicas, or a period of
  // them under ring reduction or the MoE all-to-all, may run for all (sim/replica_symmetry.h):
  // only one is certain to (a whole group of an all-to-all over fewer than every replica).
  const bool all_run = o.every_replica || o.grad_reduce == "tree";
  return CheckSimulationSize(
      LowerBoundSimulationSize(std::int64_t{o.params.p}, std::max(o.params.v, 1), o.params.m,
                               replicas, o.steps, 0,
                               all_run ? replicas : FewestReplicasRunning(replicas, o.ep)),
      fmt::format("--pp {} -m {}{}{} --steps {}", o.params.p, o.params.m,
                  o.params.v > 0 ? fmt::format(" -v {}", o.params.v) : "",
                  replicas > 1 ? fmt::format(" --dp {}", replicas) : "", o.steps));
}

SimulateSettings SettingsOf(const SimulateOptions& o) {
  return {o.ideal_network, o.latency_us, o.steps};
}

// The model path's gradient reduction options into `simulation`: --grad-reduce (default: ring on
// a cluster, analytic on the ideal network), --grad-overlap, --grad-bucket-params (0: Megatron's
// default for --dp, which ResolvedOptions fills in).
Status GradientOptions(const SimulateOptions& o, ModelSimulationOptions& simulation) {
  simulation.grad_reduce = o.ideal_network ? GradReduce::kAnalytic : GradReduce::kRing;
  if (!o.grad_reduce.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(simulation.grad_reduce,
                             ParseGradReduce(o.grad_reduce, "--grad-reduce"));
  }
  simulation.grad_overlap = o.grad_overlap;
  simulation.grad_bucket_params = o.grad_bucket_params;
  return Status::Ok();
}

// The gradient reduction options apply only to the model path.
Status CheckNoGradientOptions(const SimulateOptions& o, const char* mode) {
  for (const CLI::Option* given :
       {o.grad_reduce_option, o.grad_overlap_option, o.grad_bucket_option}) {
    if (given->count() > 0) {
      return Status::InvalidArgument(fmt::format(
          "--{} with {}: the data-parallel gradient reduction applies only to a model (--model, "
          "--dp)",
          given->get_lnames().front(), mode));
    }
  }
  return Status::Ok();
}

// The schedule's parameters. A CSV schedule's p and m are the file's: -p and -m left at their
// defaults are passed as 0 ("the file's"), and given ones must agree with the file.
ScheduleParams ParamsOf(const SimulateOptions& o) {
  ScheduleParams params = o.params;
  if (o.schedule.starts_with("csv:")) {
    if (o.p_option->count() == 0) params.p = 0;
    if (o.m_option->count() == 0) params.m = 0;
  }
  return params;
}

// With --times and a --cluster of mixed GPU types (node_groups): the per-chunk times are the
// cluster's [gpu]'s, and every rank's speed is its GPU's peak over that (RelativeRankSpeeds, rank r
// on GPU r), times its --rank-speed.
Status ClusterSpeeds(const SimulateOptions& o, int p, int m, UnevenWork& work) {
  if (o.cluster_option->count() == 0) return Status::Ok();
  PIPETTE_ASSIGN_OR_RETURN(const ClusterSpec cluster, MakeCluster(o.cluster, o.nodes));
  if (cluster.node_groups.empty()) return Status::Ok();
  PIPETTE_ASSIGN_OR_RETURN(const DType dtype, ParseDType(o.dtype, "--dtype"));
  return ApplyClusterSpeeds(cluster, dtype, p, m, work);
}

// --times: the schedule with fixed per-chunk times on the ideal network.
int RunTimes(const SimulateOptions& o) {
  if (!o.ideal_network) {
    return SimulateFail(Status::InvalidArgument(
        "--times needs --ideal-network: with per-chunk times there is no model to size the "
        "messages on a cluster"));
  }
  Result<StageCost> ms = ParseStageCost(o.times, "--times");
  if (!ms.ok()) return SimulateFail(ms.status());
  for (const auto& [key, value] : {std::pair{'F', ms->f}, {'I', ms->i}, {'W', ms->w}}) {
    const Status bounded = CheckDuration(value / 1e3, fmt::format("--times {}={:g}", key, value),
                                         fmt::format("one chunk's {}", key));
    if (!bounded.ok()) return SimulateFail(bounded);
  }
  if (Status grad = CheckNoGradientOptions(o, "--times"); !grad.ok()) return SimulateFail(grad);
  if (Status size = CheckRequestSize(o, 1); !size.ok()) return SimulateFail(size);
  Result<Schedule> schedule = MakeSchedule(o.schedule, ParamsOf(o));
  if (!schedule.ok()) return SimulateFail(schedule.status());
  Result<Program> program = Lower(*schedule);
  if (!program.ok()) return SimulateFail(program.status());
  const Status size = CheckSimulationSize(
      EstimateSimulationSize(static_cast<std::int64_t>(program->num_instructions()), program->p, 1,
                             o.steps, 0),
      fmt::format("--schedule {} --pp {} -v {} -m {} --steps {}", o.schedule, program->p,
                  program->v, program->m, o.steps));
  if (!size.ok()) return SimulateFail(size);
  Result<UnevenWork> uneven = ParseUnevenWorkOptions(o.uneven, schedule->p, schedule->m,
                                                     o.seq_len_option->count() > 0 ? o.seq_len : 0);
  if (!uneven.ok()) return SimulateFail(uneven.status());
  if (Status speeds = ClusterSpeeds(o, schedule->p, schedule->m, *uneven); !speeds.ok())
    return SimulateFail(speeds);
  const StageCost seconds{ms->f / 1e3, ms->i / 1e3, ms->w / 1e3};
  Result<Costs> costs = ApplyUnevenWork(Costs::Uniform(schedule->num_stages(), seconds),
                                        schedule->placement, schedule->m, *uneven);
  if (!costs.ok()) return SimulateFail(costs.status());
  const TimesPlan plan{std::move(*schedule), std::move(*program), *ms};
  const SimulateSettings settings = SettingsOf(o);
  return RecordAndPrint<TimesReport>(
      o, WithUneven(ConfigOf(plan, settings), *uneven), [&]() -> Result<TimesReport> {
        SimulationCase one;
        one.program = &plan.program;
        one.costs = *costs;
        one.link_slowdowns = uneven->link_slowdowns;
        one.latency = o.latency_us / 1e6;
        one.steps = o.steps;
        PIPETTE_ASSIGN_OR_RETURN(std::vector<SimulationResult> results, Simulate({one}));
        return TimesReport{plan, settings, std::move(results.front())};
      });
}

// The uneven work of the model path, applied to `simulation`: every distinct length priced by the
// model (StageCostsAt), the rank speeds folded in, messages and FLOPs following the lengths.
Result<UnevenWork> ModelUnevenWork(const SimulateOptions& o, const ModelPlan& plan,
                                   ModelSimulationOptions& simulation) {
  if (o.uneven.attention_share_option->count() > 0) {
    return Status::InvalidArgument(fmt::format(
        "--attention-share = {:g}: applies only with --times or --costs-from (the model prices "
        "every sequence length itself)",
        o.uneven.attention_share));
  }
  const int m = plan.config.microbatches;
  PIPETTE_ASSIGN_OR_RETURN(
      UnevenWork work, ParseUnevenWorkOptions(o.uneven, plan.config.pp, m, plan.config.seq_len));
  PIPETTE_RETURN_IF_ERROR(PriceUnevenWork(plan, o.model, work, simulation));
  return work;
}

// The model path: partition the model, simulate it on its cluster (or the ideal network).
int RunModel(const SimulateOptions& o) {
  ModelPlanOptions options;
  options.model = o.model;
  options.cluster = o.cluster;
  options.nodes = o.nodes;
  options.schedule = o.schedule;
  const ScheduleParams params = ParamsOf(o);
  options.config.pp = params.p;
  options.config.v = params.v;
  options.config.dp = o.dp;
  options.config.tp = o.tp;
  Result<PlacementOrder> placement = ParsePlacementOrder(o.placement_order);
  if (!placement.ok()) return SimulateFail(placement.status());
  options.config.placement = *placement;
  options.config.ep = o.ep;
  options.config.microbatches = params.m;
  options.config.micro_batch_size = o.micro_batch_size;
  options.config.seq_len = o.seq_len;
  options.config.zero_stage = o.zero;
  options.config.recompute = o.recompute;
  options.dtype = o.dtype;
  options.efficiency = o.efficiency;
  if (Status size = CheckRequestSize(o, o.ideal_network ? 1 : o.dp); !size.ok())
    return SimulateFail(size);
  Result<ModelPlan> plan = BuildModelPlan(options);
  if (!plan.ok()) return SimulateFail(plan.status());
  const SimulateSettings settings = SettingsOf(o);
  ModelSimulationOptions simulation;
  simulation.ideal_network = o.ideal_network;
  simulation.every_replica = o.every_replica;
  simulation.latency = o.latency_us / 1e6;
  simulation.steps = o.steps;
  if (Status grad = GradientOptions(o, simulation); !grad.ok()) return SimulateFail(grad);
  simulation.overlap_alltoall = !o.no_alltoall_overlap;
  Result<UnevenWork> uneven = ModelUnevenWork(o, *plan, simulation);
  if (!uneven.ok()) return SimulateFail(uneven.status());
  // Absurd transfer times and too-large simulations are refused before the run is recorded. Where
  // alike replicas, or a period of them, may run for all, only one is counted here; Simulate()
  // counts those that run once the platform is built, and a request it refuses then is recorded
  // as a failed run with the refusal (exit 2).
  if (Status checked = CheckModelSimulation(*plan, simulation); !checked.ok())
    return SimulateFail(checked);
  const ModelSimulationOptions resolved = ResolvedOptions(*plan, simulation);
  return RecordAndPrint<ModelReport>(
      o, WithUneven(ConfigOf(*plan, settings, resolved), *uneven), [&]() -> Result<ModelReport> {
        PIPETTE_ASSIGN_OR_RETURN(ModelSimulation result, SimulateModel(*plan, simulation));
        return ModelReport{*plan, settings, resolved, std::move(result)};
      });
}

// A count as a progress line shows it: 950, 12.3 k, 4.56 M.
std::string Count(std::int64_t n) {
  if (n < 10000) return std::to_string(n);
  if (n < 1000000) return fmt::format("{:.1f} k", static_cast<double>(n) / 1e3);
  return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
}

int Run(const SimulateOptions& o) {
  // Checked before anything is recorded, with or without --ideal-network (which alone uses it).
  if (!(o.latency_us >= 0 && o.latency_us <= kMaxCost)) {
    return SimulateFail(Status::InvalidArgument(
        fmt::format("--latency-us = {}: must be a number of microseconds in [0, {:g}]",
                    o.latency_us, kMaxCost)));
  }
  if (o.latency_option->count() > 0 && !o.ideal_network) {
    return SimulateFail(Status::InvalidArgument(fmt::format(
        "--latency-us = {}: applies only with --ideal-network; on a cluster every link's latency "
        "is the cluster's (--cluster)",
        o.latency_us)));
  }
  // On a terminal, past 2 s: the instructions executed and the simulated time so far.
  ProgressLine progress("pipette simulate", stderr, ProgressWanted(o.quiet));
  SetSimulationProgress({[&](std::int64_t executed, std::int64_t total, double simulated_s) {
                           progress.Update(static_cast<double>(executed),
                                           static_cast<double>(total),
                                           fmt::format("{} of {} instructions, {:.4g} s simulated",
                                                       Count(executed), Count(total), simulated_s));
                         },
                         std::int64_t{1} << 14, [&] { progress.End(); }});
  if (o.fit_option->count() > 0) return RunFitPrediction(o);
  if (Status checked = CheckCostsFromOptions(o); !checked.ok()) return SimulateFail(checked);
  if (o.costs_from_option->count() > 0) return RunCostsFrom(o);
  return o.times_option->count() == 0 ? RunModel(o) : RunTimes(o);
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a training step on SimGrid");
  AddSimulateOptions(cmd, *o);
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
