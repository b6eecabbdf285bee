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
// printed: cli/simulate_report.h. Uneven work (--rank-speed, --microbatch-seqlens, --link-slowdown;
// schedule/uneven_work.h) applies in every mode: with --times the costs are for --seq-len and
// --attention-share of each grows with s^2; the model prices every distinct length itself
// (partition/model_plan.h: StageCostsAt) and its messages grow with the length; --costs-from scales
// the run's measured costs like --times, for the run's own seq_len.
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launcher.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cli/schedule_report.h"
#include "cli/simulate_report.h"
#include "cli/store_options.h"
#include "cli/uneven_options.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/common/duration_limit.h"
#include "pipette/common/host_machine.h"
#include "pipette/common/printable.h"
#include "pipette/engine/calibration.h"
#include "pipette/partition/model_plan.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule.h"
#include "pipette/store/experiment_db.h"
#include "pipette/study/prediction.h"
#include "sim/model_simulation.h"
#include "sim/simulation_size.h"
#include "sim/simulator.h"

namespace pipette::cli {
namespace {

struct SimulateOptions {
  std::string schedule = "1f1b";
  ScheduleParams params{4, 0, 8, 0};
  std::string times;
  bool ideal_network = false;
  bool every_replica = false;
  double latency_us = 0;
  int steps = 1;
  std::string format = "text";
  RecordOptions record;
  // Model path.
  std::string model = "gpt3-1.3b";
  std::string cluster = "dgx-h100";
  CLI::Option* cluster_option = nullptr;
  int nodes = 0;  // 0: the preset's
  int dp = 1;
  int tp = 1;
  std::string placement_order = "tp,pp,dp";
  int ep = 1;                        // expert-parallel GPUs (MoE models)
  bool no_alltoall_overlap = false;  // (F;B) cells run their all-to-all serially
  int micro_batch_size = 1;
  int seq_len = 2048;
  CLI::Option* seq_len_option = nullptr;
  UnevenWorkOptions uneven;
  std::string dtype = "bf16";
  int zero = 0;
  bool recompute = false;
  double efficiency = 0.5;
  // The data-parallel gradient reduction (sim/gradient_reduction.h); empty: ring on a cluster,
  // analytic on the ideal network.
  std::string grad_reduce;
  bool grad_overlap = false;
  std::int64_t grad_bucket_params = 0;  // 0: Megatron's default
  CLI::Option* grad_reduce_option = nullptr;
  CLI::Option* grad_overlap_option = nullptr;
  CLI::Option* grad_bucket_option = nullptr;
  CLI::Option* p_option = nullptr;
  CLI::Option* m_option = nullptr;
  CLI::Option* times_option = nullptr;
  CLI::Option* latency_option = nullptr;
  // --costs-from: predict a recorded real run.
  std::int64_t costs_from = 0;
  int cores = -1;           // -1: the calibration's cores, else this machine's usable cores
  std::string calibration;  // an id or "latest"; empty: none
  std::string cost_statistic = "median";
  bool alone_costs = false;  // cost the run's computes alone (its cores' sharing taken out)
  CLI::Option* costs_from_option = nullptr;
  CLI::Option* cores_option = nullptr;
  CLI::Option* calibration_option = nullptr;
  const CLI::App* command = nullptr;
};

int Fail(const Status& status) { return ReportError("simulate", status); }

// Refuses, before a schedule is built, a request whose simulation would certainly pass the limits
// of sim/simulation_size.h (a lower bound, with v = 1 where the schedule picks v); the lowered
// program is checked exactly before anything is recorded. A -p over the schedule layer's own limit
// is left to MakeSchedule, whose message names that limit.
Status CheckRequestSize(const SimulateOptions& o, int replicas) {
  if (o.params.p > kMaxPipelineRanks) return Status::Ok();
  return CheckSimulationSize(
      EstimateSimulationSize(std::int64_t{o.params.p}, std::max(o.params.v, 1), o.params.m,
                             replicas, o.steps, 0),
      fmt::format("--pp {} -m {}{}{} --steps {}", o.params.p, o.params.m,
                  o.params.v > 0 ? fmt::format(" -v {}", o.params.v) : "",
                  replicas > 1 ? fmt::format(" --dp {}", replicas) : "", o.steps));
}

SimulateSettings SettingsOf(const SimulateOptions& o) {
  SimulateSettings settings{o.ideal_network, o.latency_us, o.steps};
  settings.overlap_alltoall = !o.no_alltoall_overlap;
  return settings;
}

// The model path's gradient reduction options into `simulation` and `settings`: --grad-reduce
// (default: ring on a cluster, analytic on the ideal network), --grad-overlap,
// --grad-bucket-params (default: Megatron's for --dp).
Status GradientOptions(const SimulateOptions& o, int dp, ModelSimulationOptions& simulation,
                       SimulateSettings& settings) {
  GradReduce mode = o.ideal_network ? GradReduce::kAnalytic : GradReduce::kRing;
  if (!o.grad_reduce.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(mode, ParseGradReduce(o.grad_reduce, "--grad-reduce"));
  }
  simulation.grad_reduce = settings.grad_reduce = mode;
  simulation.grad_overlap = settings.grad_overlap = o.grad_overlap;
  simulation.grad_bucket_params = o.grad_bucket_params;
  settings.grad_bucket_params =
      o.grad_bucket_params > 0 ? o.grad_bucket_params : DefaultBucketParams(dp);
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

// Registers the run as `running` with `config`, runs `simulate`, records the report's rows and
// prints it; a failed simulation marks the run failed. Returns the exit code.
template <typename Report>
int RecordAndPrint(const SimulateOptions& o, const nlohmann::ordered_json& config,
                   const std::function<Result<Report>()>& simulate) {
  Result<RunRecorder> recorder = BeginRecording(o.record, "sim", config);
  if (!recorder.ok()) return Fail(recorder.status());
  if (recorder->held()) return ReportPointHeld("simulate", o.record, *recorder, o.format == "json");
  Result<Report> report = simulate();
  if (!report.ok()) {
    (void)recorder->Fail(report.status().message());
    return Fail(report.status());
  }
  // A simulation that ran but could not be recorded is a failure, whatever the database said.
  const Status recorded = recorder->Finish(RunDataOf(*report), RunStatusOf(*report));
  if (!recorded.ok()) {
    fmt::print(stderr, "pipette simulate: recording run {} in '{}': {}\n", recorder->run_id(),
               Printable(recorder->path()), PrintableLines(recorded.message()));
    return kExitFailure;
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = JsonOf(*report);
    if (recorder->enabled()) {
      json["run_id"] = recorder->run_id();
      json["db"] = recorder->path();
    }
    std::cout << json.dump() << "\n";
  } else {
    std::cout << TextOf(*report);
    if (recorder->enabled()) {
      fmt::print("# recorded as run {} in {}\n", recorder->run_id(), Printable(recorder->path()));
    }
  }
  return kExitOk;
}

// `config` with the uneven work under "uneven" when there is any (the run records what it ran).
nlohmann::ordered_json WithUneven(nlohmann::ordered_json config, const UnevenWork& work) {
  if (!work.IsEven()) config["uneven"] = UnevenWorkJson(work);
  return config;
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
    return Fail(Status::InvalidArgument(
        "--times needs --ideal-network: with per-chunk times there is no model to size the "
        "messages on a cluster"));
  }
  Result<StageCost> ms = ParseStageCost(o.times, "--times");
  if (!ms.ok()) return Fail(ms.status());
  for (const auto& [key, value] : {std::pair{'F', ms->f}, {'I', ms->i}, {'W', ms->w}}) {
    const Status bounded = CheckDuration(value / 1e3, fmt::format("--times {}={:g}", key, value),
                                         fmt::format("one chunk's {}", key));
    if (!bounded.ok()) return Fail(bounded);
  }
  if (Status grad = CheckNoGradientOptions(o, "--times"); !grad.ok()) return Fail(grad);
  if (Status size = CheckRequestSize(o, 1); !size.ok()) return Fail(size);
  Result<Schedule> schedule = MakeSchedule(o.schedule, ParamsOf(o));
  if (!schedule.ok()) return Fail(schedule.status());
  Result<Program> program = Lower(*schedule);
  if (!program.ok()) return Fail(program.status());
  const Status size = CheckSimulationSize(
      EstimateSimulationSize(static_cast<std::int64_t>(program->num_instructions()), program->p, 1,
                             o.steps, 0),
      fmt::format("--schedule {} --pp {} -v {} -m {} --steps {}", o.schedule, program->p,
                  program->v, program->m, o.steps));
  if (!size.ok()) return Fail(size);
  Result<UnevenWork> uneven = ParseUnevenWorkOptions(o.uneven, schedule->p, schedule->m,
                                                     o.seq_len_option->count() > 0 ? o.seq_len : 0);
  if (!uneven.ok()) return Fail(uneven.status());
  if (Status speeds = ClusterSpeeds(o, schedule->p, schedule->m, *uneven); !speeds.ok())
    return Fail(speeds);
  const StageCost seconds{ms->f / 1e3, ms->i / 1e3, ms->w / 1e3};
  Result<Costs> costs = ApplyUnevenWork(Costs::Uniform(schedule->num_stages(), seconds),
                                        schedule->placement, schedule->m, *uneven);
  if (!costs.ok()) return Fail(costs.status());
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

// Options that describe what --costs-from takes from the run (or, --cores, needs --costs-from).
Status CheckCostsFromOptions(const SimulateOptions& o) {
  if (o.costs_from_option->count() == 0) {
    if (o.cores_option->count() > 0) {
      return Status::InvalidArgument(fmt::format(
          "--cores = {}: applies only with --costs-from (the cores a CPU run's ranks share)",
          o.cores));
    }
    if (o.alone_costs) {
      return Status::InvalidArgument(
          "--alone-costs: applies only with --costs-from (a recorded run's durations)");
    }
    if (o.calibration_option->count() > 0) {
      return Status::InvalidArgument(
          fmt::format("--calibration = {}: applies only with --costs-from (pipette calibrate "
                      "measures a real engine's messages and overheads)",
                      Printable(o.calibration)));
    }
    return Status::Ok();
  }
  // Everything but where the run is and how the prediction is recorded comes from the run.
  const std::vector<std::string> allowed = {"--costs-from",
                                            "--calibration",
                                            "--cores",
                                            "--alone-costs",
                                            "--cost-statistic",
                                            "--format",
                                            "--db",
                                            "--no-db",
                                            "--trace",
                                            "--experiment",
                                            "--point-key",
                                            "--rank-speed",
                                            "--microbatch-seqlens",
                                            "--link-slowdown",
                                            "--attention-share"};
  for (const CLI::Option* given : o.command->get_options()) {
    if (given->count() == 0 || given->get_lnames().empty()) continue;
    const std::string name = "--" + given->get_lnames().front();
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    return Status::InvalidArgument(fmt::format(
        "{} with --costs-from = {}: the program, its model, costs and sizes are the recorded "
        "run's (only --calibration, --cores, --alone-costs, uneven work and where to record "
        "apply)",
        name, o.costs_from));
  }
  if (o.cores_option->count() > 0 && (o.cores < 0 || o.cores > 1024)) {
    return Status::InvalidArgument(
        fmt::format("--cores = {}: must be in [0, 1024] (0: every rank its own core)", o.cores));
  }
  if (o.alone_costs && o.cores <= 0) {
    return Status::InvalidArgument(fmt::format(
        "--alone-costs with --cores = {}: takes out the sharing of the cores the simulation "
        "shares again, so it needs --cores N >= 1 (1 for a --virtual-ranks run on one GPU)",
        o.cores_option->count() > 0 ? std::to_string(o.cores) : std::string("unset")));
  }
  return Status::Ok();
}

// The calibration --calibration names: an id, or "latest" (this host's most recent one).
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

// What --calibration (or its absence) and --cores add to the run's measured compute.
Result<PredictionSettings> PredictionOf(const SimulateOptions& o, ExperimentDb& db) {
  // Unshared by default: a run's measured durations already carry whatever core sharing it had
  // (Open MPI's waiting ranks poll, so an oversubscribed run's every compute ran contended), and
  // sharing them again counts it twice (docs/fidelity.md). --cores N shares N cores.
  PredictionSettings settings;
  if (!o.calibration.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(const Calibration c, FindCalibration(db, o.calibration));
    settings.calibration_id = c.id;
    settings.latency = c.p2p.alpha;
    settings.seconds_per_byte = c.p2p.beta;
    settings.instruction_overhead = c.instruction_overhead_s;
    settings.overhead_source = "calibration";
    settings.message_source = "calibration";
    settings.allreduce_alpha = c.allreduce.alpha;
    settings.allreduce_beta = c.allreduce.beta;
  }
  if (o.cores >= 0) settings.cores = o.cores;
  settings.alone = o.alone_costs;
  settings.statistic = o.cost_statistic == "mean" ? CostStatistic::kMean : CostStatistic::kMedian;
  return settings;
}

// The uneven work a recorded run ran, as its configuration records it: simulate's "uneven" object
// (uneven_options.h UnevenWorkJson), or train's "rank_speed" and "microbatch_seqlens" strings;
// null when it ran even work.
nlohmann::ordered_json RecordedUnevenWork(const nlohmann::ordered_json& config) {
  nlohmann::ordered_json recorded;
  if (config.contains("uneven")) recorded = config["uneven"];
  for (const char* key : {"rank_speed", "microbatch_seqlens"}) {
    if (config.contains(key)) recorded[key] = config[key];
  }
  return recorded;
}

// The uneven work applied to a recorded run's measured costs: its lengths relative to the run's
// own seq_len (its configuration's), which --attention-share scales like --times.
Result<UnevenWork> UnevenOfRun(const SimulateOptions& o, const CostsFromPlan& plan) {
  int reference = 0;
  const nlohmann::ordered_json& config = plan.measured_config;
  if (config.contains("seq_len") && config["seq_len"].is_number_integer()) {
    reference = config["seq_len"].get<int>();
  }
  const nlohmann::ordered_json recorded = RecordedUnevenWork(config);
  if (!recorded.is_null() && AnyUnevenWorkOption(o.uneven)) {
    return Status::InvalidArgument(fmt::format(
        "--costs-from = {}: the run already ran uneven work ({}); predict uneven work from an "
        "even run",
        o.costs_from, recorded.dump()));
  }
  if (recorded.contains("microbatch_seqlens")) {
    return Status::InvalidArgument(fmt::format(
        "--costs-from = {}: the run's microbatches have different lengths ({}), so its per-stage "
        "medians are no one length's costs; predict it from an even-length run with "
        "--microbatch-seqlens",
        o.costs_from, recorded["microbatch_seqlens"].dump()));
  }
  if (reference <= 0 && !o.uneven.microbatch_seqlens.empty()) {
    return Status::InvalidArgument(fmt::format(
        "--microbatch-seqlens with --costs-from = {}: the run records no seq_len to scale from",
        o.costs_from));
  }
  return ParseUnevenWorkOptions(o.uneven, plan.program.p, plan.program.m, reference);
}

// --costs-from RUN: the recorded real run's program with its measured costs (study/prediction.h).
int RunCostsFrom(const SimulateOptions& o) {
  const std::string option = fmt::format("--costs-from = {}", o.costs_from);
  PredictionSettings settings;
  Result<RunData> run = [&]() -> Result<RunData> {
    PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(o.record.db));
    PIPETTE_ASSIGN_OR_RETURN(settings, PredictionOf(o, db));
    Result<RunData> loaded = db.LoadRun(o.costs_from);
    if (!loaded.ok() && loaded.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(
          fmt::format("{}: no such run in '{}'", option, Printable(o.record.db)));
    }
    return loaded;
  }();
  if (!run.ok()) return Fail(run.status());
  Result<CostsFromPlan> plan = PlanCostsFrom(*run, option, settings);
  if (!plan.ok()) return Fail(plan.status());
  Result<UnevenWork> uneven = UnevenOfRun(o, *plan);
  if (!uneven.ok()) return Fail(uneven.status());
  SimulationCase one = CaseOf(*plan);
  Result<Costs> costs =
      ApplyUnevenWork(one.costs, plan->schedule.placement, plan->program.m, *uneven);
  if (!costs.ok()) return Fail(costs.status());
  one.costs = std::move(*costs);
  one.sizes.microbatch_scale = SeqlenRatios(*uneven);
  one.link_slowdowns = uneven->link_slowdowns;
  return RecordAndPrint<CostsFromReport>(
      o, WithUneven(ConfigOf(*plan), *uneven), [&]() -> Result<CostsFromReport> {
        PIPETTE_ASSIGN_OR_RETURN(std::vector<SimulationResult> results, Simulate({one}));
        CostsFromReport report{*plan, std::move(results.front()), {}};
        const RecordedWork& w = plan->work;
        if (!w.static_bytes.empty()) {
          report.memory = MemoryOverTime(report.result.trace, w.static_bytes, w.stage_memory,
                                         /*message_buffers=*/w.engine == "cpu");
        }
        return report;
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
  if (work.IsEven()) return work;
  std::map<int, double> flops;  // length -> FLOPs of one microbatch
  const CostsAtSeqlen costs_at = [&](int seq_len) -> Result<Costs> {
    PIPETTE_ASSIGN_OR_RETURN(StageCostsAtLength at, StageCostsAt(plan, o.model, seq_len));
    flops[seq_len] = at.model_flops;
    return std::move(at.costs);
  };
  PIPETTE_ASSIGN_OR_RETURN(simulation.costs,
                           ApplyUnevenWork(costs_at, plan.schedule.placement, m, work));
  simulation.microbatch_scale = SeqlenRatios(work);
  simulation.link_slowdowns = work.link_slowdowns;
  for (int mb = 0; mb < m; ++mb) simulation.flops_per_replica_step += flops.at(work.SeqlenOf(mb));
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
  if (!placement.ok()) return Fail(placement.status());
  options.config.placement = *placement;
  options.config.ep = o.ep;
  options.config.microbatches = params.m;
  options.config.micro_batch_size = o.micro_batch_size;
  options.config.seq_len = o.seq_len;
  options.config.zero_stage = o.zero;
  options.config.recompute = o.recompute;
  options.dtype = o.dtype;
  options.efficiency = o.efficiency;
  if (Status size = CheckRequestSize(o, o.ideal_network ? 1 : o.dp); !size.ok()) return Fail(size);
  Result<ModelPlan> plan = BuildModelPlan(options);
  if (!plan.ok()) return Fail(plan.status());
  SimulateSettings settings = SettingsOf(o);
  ModelSimulationOptions simulation;
  simulation.ideal_network = o.ideal_network;
  simulation.every_replica = o.every_replica;
  simulation.latency = o.latency_us / 1e6;
  simulation.steps = o.steps;
  if (Status grad = GradientOptions(o, plan->config.dp, simulation, settings); !grad.ok()) {
    return Fail(grad);
  }
  simulation.overlap_alltoall = !o.no_alltoall_overlap;
  Result<UnevenWork> uneven = ModelUnevenWork(o, *plan, simulation);
  if (!uneven.ok()) return Fail(uneven.status());
  // Absurd transfer times and too-large simulations are refused before the run is recorded.
  if (Status checked = CheckModelSimulation(*plan, simulation); !checked.ok()) return Fail(checked);
  return RecordAndPrint<ModelReport>(
      o, WithUneven(ConfigOf(*plan, settings), *uneven), [&]() -> Result<ModelReport> {
        PIPETTE_ASSIGN_OR_RETURN(ModelSimulation result, SimulateModel(*plan, simulation));
        return ModelReport{*plan, settings, std::move(result)};
      });
}

int Run(const SimulateOptions& o) {
  if (o.steps < 1 || o.steps > 1000) {
    return Fail(Status::InvalidArgument(
        fmt::format("--steps = {}: must be in [1, 1000] (steps repeat identically; the "
                    "simulated time is what grows)",
                    o.steps)));
  }
  // Checked before anything is recorded, with or without --ideal-network (which alone uses it).
  if (!(o.latency_us >= 0 && o.latency_us <= kMaxCost)) {
    return Fail(Status::InvalidArgument(
        fmt::format("--latency-us = {}: must be a number of microseconds in [0, {:g}]",
                    o.latency_us, kMaxCost)));
  }
  if (o.latency_option->count() > 0 && !o.ideal_network) {
    return Fail(Status::InvalidArgument(fmt::format(
        "--latency-us = {}: applies only with --ideal-network; on a cluster every link's latency "
        "is the cluster's (--cluster)",
        o.latency_us)));
  }
  if (Status checked = CheckCostsFromOptions(o); !checked.ok()) return Fail(checked);
  if (o.costs_from_option->count() > 0) return RunCostsFrom(o);
  return o.times_option->count() == 0 ? RunModel(o) : RunTimes(o);
}

// The model path's parallelism: nodes, dp, tp, the rank-to-GPU order, expert parallelism.
void AddParallelismOptions(CLI::App* cmd, SimulateOptions& o) {
  cmd->add_option("--nodes", o.nodes, "Nodes (default: the cluster's)");
  cmd->add_option("--dp", o.dp, "Data-parallel replicas")->capture_default_str();
  cmd->add_option("--tp", o.tp, "Tensor-parallel ranks per stage")->capture_default_str();
  cmd->add_option("--placement-order", o.placement_order,
                  "Rank-to-GPU order, innermost first: tp,pp,dp (replicas outermost) or tp,dp,pp "
                  "(data-parallel innermost)")
      ->capture_default_str();
  cmd->add_option("--ep", o.ep,
                  "Expert-parallel GPUs (MoE models): experts sharded over ep of the dp replicas; "
                  "must divide --dp and the experts")
      ->capture_default_str();
  cmd->add_flag("--no-alltoall-overlap", o.no_alltoall_overlap,
                "MoE: overlapped (F;B) cells run compute and all-to-all serially (default: "
                "DualPipe's overlap, max(compute, all-to-all))");
}

// The model path's data-parallel gradient reduction.
void AddGradientOptions(CLI::App* cmd, SimulateOptions& o) {
  o.grad_reduce_option = cmd->add_option(
      "--grad-reduce", o.grad_reduce,
      "Data-parallel gradient reduction: ring or tree (simulated traffic; default ring on a "
      "cluster) or analytic (default on the ideal network)");
  o.grad_overlap_option =
      cmd->add_flag("--grad-overlap", o.grad_overlap,
                    "Start each stage's gradient buckets when its last backward ends (Megatron's "
                    "overlap_grad_reduce) instead of after the program");
  o.grad_bucket_option =
      cmd->add_option("--grad-bucket-params", o.grad_bucket_params,
                      "Parameters per gradient bucket (default: Megatron's max(40M, 1M x dp))");
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a training step on SimGrid");
  o->command = cmd;
  cmd->add_option("--schedule", o->schedule, "Schedule name or csv:FILE")
      ->capture_default_str()
      ->check(NonEmpty());
  o->p_option = cmd->add_option("-p,--pp", o->params.p, "Pipeline ranks (csv:FILE: the file's)")
                    ->capture_default_str();
  cmd->add_option("-v,--chunks", o->params.v, "Stages per rank (default: the schedule's)");
  o->m_option =
      cmd->add_option("-m,--microbatches", o->params.m, "Microbatches (csv:FILE: the file's)")
          ->capture_default_str();
  o->times_option =
      cmd->add_option("--times", o->times,
                      "Per-chunk times in ms, F=..,I=..,W=.. (B = I+W): bypasses the model")
          ->check(NonEmpty());
  cmd->add_flag("--ideal-network", o->ideal_network,
                "Unbounded bandwidth; every message takes --latency-us");
  cmd->add_flag("--every-replica", o->every_replica, "Simulate every replica, even alike ones");
  o->latency_option = cmd->add_option("--latency-us", o->latency_us,
                                      "Per-message latency (microseconds; with --ideal-network)")
                          ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Training steps, back to back")->capture_default_str();
  cmd->add_option("--model", o->model, "Model preset or .toml")
      ->capture_default_str()
      ->check(NonEmpty());
  o->cluster_option = cmd->add_option("--cluster", o->cluster, "Cluster preset or .toml")
                          ->capture_default_str()
                          ->check(NonEmpty());
  AddParallelismOptions(cmd, *o);
  cmd->add_option("--micro-batch-size", o->micro_batch_size, "Sequences per microbatch")
      ->capture_default_str();
  o->seq_len_option =
      cmd->add_option("--seq-len", o->seq_len,
                      "Tokens per sequence (with --times and --microbatch-seqlens: the length the "
                      "times are for)")
          ->capture_default_str();
  AddUnevenWorkOptions(cmd, o->uneven, /*seq_len=*/false, /*attention_share=*/true);
  cmd->add_option("--dtype", o->dtype, "fp32, bf16, fp16 or fp8")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--zero", o->zero, "ZeRO stage 0-3")->capture_default_str();
  cmd->add_flag("--recompute", o->recompute, "Full activation recomputation");
  cmd->add_option("--efficiency", o->efficiency, "Achieved fraction of peak FLOP/s")
      ->capture_default_str();
  AddGradientOptions(cmd, *o);
  o->costs_from_option =
      cmd->add_option("--costs-from", o->costs_from,
                      "Predict recorded real run RUN (in --db): its program and measured costs");
  o->cores_option = cmd->add_option(
      "--cores", o->cores,
      "With --costs-from: share N cores among the ranks' compute (default 0: a core each; the "
      "measured durations already include the run's own sharing)");
  cmd->add_flag("--alone-costs", o->alone_costs,
                "With --costs-from and --cores N: cost each compute as it ran alone, the run's "
                "sharing of N cores taken out (processor sharing), so the simulation's sharing "
                "is not counted twice; --cores 1 for a --virtual-ranks run on one GPU");
  cmd->add_option("--cost-statistic", o->cost_statistic,
                  "With --costs-from: median (default) or mean of the run's durations")
      ->capture_default_str()
      ->check(CLI::IsMember({"median", "mean"}));
  o->calibration_option = cmd->add_option(
      "--calibration", o->calibration,
      "With --costs-from: apply calibration ID (pipette calibrations) or 'latest' of this host");
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  AddRecordOptions(cmd, o->record);
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
