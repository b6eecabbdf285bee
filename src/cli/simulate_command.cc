// `pipette simulate [--model NAME|FILE] [--cluster NAME|FILE] [--nodes N] [--pp P --dp D --tp T
//  -v V] [--schedule NAME] [-m M] [--micro-batch-size B] [--seq-len L] [--dtype D] [--zero Z]
//  [--recompute] [--efficiency E] [--ideal-network] [--latency-us X] [--format text|json]`: one
// training step on the SimGrid engine. The model is partitioned (balanced) and timed with the
// roofline; the pipeline runs on the cluster platform with real message sizes (or an ideal
// network); the data-parallel gradient all-reduce of each stage follows its rank's last action
// (analytic ring). With --times F=..,I=..,W=.. (ms per chunk) and --ideal-network the model is
// bypassed and the step equals `pipette schedule`'s makespan.
#include <fmt/core.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/common/build_info.h"
#include "pipette/cost/collectives.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/trace_rows.h"
#include "pipette/partition/model_plan.h"
#include "pipette/partition/partitioner.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette::cli {
namespace {

struct SimulateOptions {
  std::string schedule = "1f1b";
  ScheduleParams params{4, 0, 8, 0};
  std::string times;
  bool ideal_network = false;
  double latency_us = 0;
  int steps = 1;
  std::string format = "text";
  RecordOptions record;
  // Model path.
  std::string model = "gpt3-1.3b";
  std::string cluster = "dgx-h100";
  int nodes = 0;  // 0: the preset's
  int dp = 1;
  int tp = 1;
  int micro_batch_size = 1;
  int seq_len = 2048;
  std::string dtype = "bf16";
  int zero = 0;
  bool recompute = false;
  double efficiency = 0.5;
};

int RunModel(const SimulateOptions& o);

int Fail(const Status& status) { return ReportError("simulate", status); }

// Registers the run as `running`, then simulates `one`; a failed simulation marks the run failed.
// Returns the recorder and the result, or the exit code in `exit_code`.
struct RecordedSimulation {
  RunRecorder recorder;
  SimulationResult result;
};
std::optional<RecordedSimulation> SimulateRecorded(const SimulateOptions& o,
                                                   const SimulationCase& one,
                                                   const nlohmann::ordered_json& config,
                                                   int& exit_code) {
  Result<RunRecorder> recorder = RunRecorder::Begin(o.record, "sim", config);
  if (!recorder.ok()) {
    exit_code = Fail(recorder.status());
    return std::nullopt;
  }
  Result<std::vector<SimulationResult>> results = Simulate({one});
  if (!results.ok()) {
    (void)recorder->Fail(results.status().message());
    exit_code = Fail(results.status());
    return std::nullopt;
  }
  return RecordedSimulation{std::move(*recorder), std::move(results->front())};
}

// Finishes recording; returns the exit code.
int FinishRecording(RunRecorder& recorder, RunData data, std::string_view status) {
  Status s = recorder.Finish(std::move(data), status);
  if (!s.ok()) {
    fmt::print(stderr, "pipette simulate: recording run {} in '{}': {}\n", recorder.run_id(),
               recorder.path(), s.message());
    return kExitFailure;
  }
  return kExitOk;
}

std::string RecordedLine(const RunRecorder& recorder) {
  if (!recorder.enabled()) return "";
  return fmt::format("# recorded as run {} in {}\n", recorder.run_id(), recorder.path());
}

int Run(const SimulateOptions& o) {
  if (o.steps < 1 || o.steps > 1000) {
    return Fail(Status::InvalidArgument(
        fmt::format("--steps = {}: must be in [1, 1000] (steps repeat identically; the "
                    "simulated time is what grows)",
                    o.steps)));
  }
  if (o.times.empty()) return RunModel(o);
  if (!o.ideal_network) {
    return Fail(Status::InvalidArgument(
        "--times needs --ideal-network: with per-chunk times there is no model to size the "
        "messages on a cluster"));
  }
  if (!(o.latency_us >= 0 && o.latency_us <= kMaxCost)) {
    return Fail(Status::InvalidArgument(
        fmt::format("--latency-us = {}: must be a number in [0, {:g}]", o.latency_us, kMaxCost)));
  }
  Result<StageCost> ms = ParseStageCost(o.times, "--times");
  if (!ms.ok()) return Fail(ms.status());
  Result<Schedule> schedule = MakeSchedule(o.schedule, o.params);
  if (!schedule.ok()) return Fail(schedule.status());
  Result<Program> program = Lower(*schedule);
  if (!program.ok()) return Fail(program.status());
  const StageCost seconds{ms->f / 1e3, ms->i / 1e3, ms->w / 1e3};
  SimulationCase one;
  one.program = &*program;
  one.costs = Costs::Uniform(schedule->num_stages(), seconds);
  one.latency = o.latency_us / 1e6;
  one.steps = o.steps;

  nlohmann::ordered_json config;
  config["command"] = "simulate";
  config["schedule"] = schedule->name;
  config["pp"] = schedule->p;
  config["v"] = schedule->v;
  config["m"] = schedule->m;
  config["dp"] = 1;
  config["tp"] = 1;
  config["times_ms"] = {{"F", ms->f}, {"I", ms->i}, {"W", ms->w}};
  config["ideal_network"] = true;
  config["latency_us"] = o.latency_us;
  config["steps"] = o.steps;
  int exit_code = kExitOk;
  std::optional<RecordedSimulation> run = SimulateRecorded(o, one, config, exit_code);
  if (!run) return exit_code;
  RunRecorder* recorder = &run->recorder;
  const SimulationResult& r = run->result;
  RunData data;
  data.events = ToEventRows(*program, r.trace);
  data.metrics = {{"step_time_s", r.makespan / o.steps, "s"},
                  {"pipeline_time_s", r.pipeline_makespan, "s"},
                  {"bubble_ratio", r.bubble_ratio, "fraction"}};
  AddPerRank(data.metrics, "busy_s", r.busy, "s");
  exit_code = FinishRecording(*recorder, std::move(data), kRunOk);
  if (exit_code != kExitOk) return exit_code;

  if (o.format == "json") {
    nlohmann::ordered_json json;
    json["schedule"] = schedule->name;
    json["p"] = schedule->p;
    json["v"] = schedule->v;
    json["m"] = schedule->m;
    json["steps"] = o.steps;
    json["step_time_s"] = r.makespan / o.steps;
    json["bubble_ratio"] = r.bubble_ratio;
    json["busy_s"] = r.busy;
    json["status"] = "ok";
    if (recorder->enabled()) {
      json["run_id"] = recorder->run_id();
      json["db"] = recorder->path();
    }
    std::cout << json.dump() << "\n";
    return kExitOk;
  }
  fmt::print("# pipette {} simulate {} p={} v={} m={} (SimGrid, ideal network)\n", Version(),
             schedule->name, schedule->p, schedule->v, schedule->m);
  fmt::print("# per-chunk times F={} I={} W={} ms, message latency {} us\n", ms->f, ms->i, ms->w,
             o.latency_us);
  fmt::print("step_time     {:.6g} ms{}\n", r.makespan / o.steps * 1e3,
             o.steps > 1 ? fmt::format("   (mean of {} steps)", o.steps) : "");
  fmt::print("bubble_ratio  {:.4f}   (idle/total)\n", r.bubble_ratio);
  fmt::print("#\n# rank       busy       idle\n#    -       [ms]       [ms]\n");
  for (std::size_t k = 0; k < r.busy.size(); ++k) {
    fmt::print("  {:>4} {:>10.4g} {:>10.4g}\n", k, r.busy[k] * 1e3,
               (r.pipeline_makespan - r.busy[k]) * 1e3);
  }
  fmt::print("{}", RecordedLine(*recorder));
  return kExitOk;
}

int RunModel(const SimulateOptions& o) {
  ModelPlanOptions options;
  options.model = o.model;
  options.cluster = o.cluster;
  options.nodes = o.nodes;
  options.schedule = o.schedule;
  options.config.pp = o.params.p;
  options.config.v = o.params.v;
  options.config.dp = o.dp;
  options.config.tp = o.tp;
  options.config.microbatches = o.params.m;
  options.config.micro_batch_size = o.micro_batch_size;
  options.config.seq_len = o.seq_len;
  options.config.zero_stage = o.zero;
  options.config.recompute = o.recompute;
  options.dtype = o.dtype;
  options.efficiency = o.efficiency;
  Result<ModelPlan> built = BuildModelPlan(options);
  if (!built.ok()) return Fail(built.status());
  const ModelPlan& p = *built;
  const ParallelConfig& config = p.config;
  const StagePlan* plan = &p.plan;
  const ModelGraph* model = &p.model;
  const ClusterSpec* cluster = &p.cluster;
  const Schedule* schedule = &p.schedule;
  const Program* program = &p.program;
  const std::vector<MemoryBreakdown>& rank_memory = p.rank_memory;

  // Every replica of the pipeline: replica d's rank r on GPU (d*pp + r)*tp (its tensor-parallel
  // group is that GPU .. +tp-1). Messages between stages carry the stage output split over the
  // tensor-parallel group.
  SimulationCase one;
  one.program = &*program;
  one.costs = plan->ToCosts();
  for (const StageInfo& stage : plan->stages) {
    one.sizes.stage_output_bytes.push_back(stage.boundary_bytes / config.tp);
  }
  if (o.ideal_network) {
    one.latency = o.latency_us / 1e6;
  } else {
    one.cluster = &*cluster;
    one.replicas = config.dp;
    for (int d = 0; d < config.dp; ++d) {
      for (int r = 0; r < config.pp; ++r)
        one.gpu_of_rank.push_back((d * config.pp + r) * config.tp);
    }
  }
  one.steps = o.steps;

  // Data-parallel gradient all-reduce of each rank's stages (ring over the dp replicas, over NVLink
  // when the ring stays inside a node, else over the NICs), once the rank has finished its program
  // in every replica. On the ideal network the replicas are not simulated: the all-reduce starts
  // when replica 0's rank finishes.
  const int gpn = cluster->gpus_per_node;
  std::vector<double> allreduce(config.pp, 0.0), grads(config.pp, 0.0);
  for (const StageInfo& stage : plan->stages) grads[stage.rank] += stage.params_per_gpu;
  for (int r = 0; r < config.pp; ++r) {
    bool crosses_nodes = false;
    for (int d = 0; d < config.dp; ++d) {
      const int here = (d * config.pp + r) * config.tp;
      const int next = (((d + 1) % config.dp) * config.pp + r) * config.tp;
      crosses_nodes |= here / gpn != next / gpn;
    }
    const LinkSpec& link = crosses_nodes ? cluster->inter_node : cluster->intra_node;
    allreduce[r] = RingAllReduceSeconds(config.dp, grads[r] * BytesOf(config.dtype), link);
  }
  if (config.dp > 1) one.allreduce = allreduce;

  nlohmann::ordered_json run_config;
  run_config["command"] = "simulate";
  run_config["model"] = model->name;
  run_config["cluster"] = cluster->name;
  run_config["nodes"] = cluster->nodes;
  run_config["schedule"] = schedule->name;
  run_config["pp"] = config.pp;
  run_config["dp"] = config.dp;
  run_config["tp"] = config.tp;
  run_config["v"] = config.v;
  run_config["m"] = config.microbatches;
  run_config["micro_batch_size"] = config.micro_batch_size;
  run_config["seq_len"] = config.seq_len;
  run_config["dtype"] = DTypeName(config.dtype);
  run_config["zero"] = config.zero_stage;
  run_config["recompute"] = config.recompute;
  run_config["efficiency"] = o.efficiency;
  run_config["ideal_network"] = o.ideal_network;
  run_config["latency_us"] = o.latency_us;
  run_config["steps"] = o.steps;
  int exit_code = kExitOk;
  std::optional<RecordedSimulation> run = SimulateRecorded(o, one, run_config, exit_code);
  if (!run) return exit_code;
  RunRecorder* recorder = &run->recorder;
  const SimulationResult& sim = run->result;
  const double step = sim.makespan / o.steps;
  std::vector<double> step_times;
  for (std::size_t s = 0; s < sim.step_end.size(); ++s) {
    step_times.push_back(sim.step_end[s] - (s == 0 ? 0.0 : sim.step_end[s - 1]));
  }

  // Memory over simulated time: static state plus the activations the executed order holds.
  std::vector<double> static_bytes;
  for (const MemoryBreakdown& m : rank_memory) {
    static_bytes.push_back(m.weights + m.gradients + m.optimizer);
  }
  std::vector<StageMemory> stage_memory;
  for (const StageInfo& stage : plan->stages) {
    stage_memory.push_back({stage.activation_bytes, stage.wgrad_input_bytes});
  }
  const std::vector<RankMemoryTimeline> memory =
      MemoryOverTime(sim.trace, static_bytes, stage_memory);
  const std::optional<OutOfMemory> oom =
      FirstOutOfMemory(memory, static_cast<double>(cluster->gpu.memory_bytes));
  double model_flops = 0;
  for (std::size_t v = 0; v < model->num_layers(); ++v) {
    const Layer& layer = model->layer(v);
    model_flops += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  model_flops *= static_cast<double>(config.microbatches) * config.dp;  // per step
  const double world = config.world_size();
  const double mfu = model_flops / (step * world * cluster->gpu.peak_flops.at(config.dtype));
  const double tokens_per_s = static_cast<double>(config.microbatches) * config.micro_batch_size *
                              config.seq_len * config.dp / step;
  const std::string status = oom ? "oom" : "ok";

  RunData data;
  std::vector<AllReduceEvent> allreduces = sim.collectives;
  for (AllReduceEvent& a : allreduces) {
    a.bytes = static_cast<std::int64_t>(grads[a.rank] * BytesOf(config.dtype));
  }
  data.events = ToEventRows(*program, sim.trace, allreduces);
  data.memory = ToMemoryRows(memory);
  data.metrics = {{"step_time_s", step, "s"},
                  {"pipeline_time_s", sim.pipeline_makespan, "s"},
                  {"bubble_ratio", sim.bubble_ratio, "fraction"},
                  {"mfu", mfu, "fraction"},
                  {"tokens_per_s", tokens_per_s, "tokens/s"},
                  {"device_memory_bytes", static_cast<double>(cluster->gpu.memory_bytes), "B"}};
  AddPerRank(data.metrics, "step_times_s", step_times, "s");
  AddPerRank(data.metrics, "busy_s", sim.busy, "s");
  AddPerRank(data.metrics, "allreduce_s", allreduce, "s");
  std::vector<double> peaks;
  for (const RankMemoryTimeline& line : memory) peaks.push_back(line.peak_bytes);
  AddPerRank(data.metrics, "peak_memory_bytes", peaks, "B");
  if (oom) {
    data.metrics.push_back({"oom_rank", static_cast<double>(oom->rank), "rank"});
    data.metrics.push_back({"oom_time_s", oom->time, "s"});
    data.metrics.push_back({"oom_bytes", oom->bytes, "B"});
  }
  exit_code = FinishRecording(*recorder, std::move(data), status);
  if (exit_code != kExitOk) return exit_code;

  if (o.format == "json") {
    nlohmann::ordered_json json;
    json["model"] = model->name;
    json["cluster"] = cluster->name;
    json["nodes"] = cluster->nodes;
    json["schedule"] = schedule->name;
    json["pp"] = config.pp;
    json["dp"] = config.dp;
    json["tp"] = config.tp;
    json["v"] = config.v;
    json["m"] = config.microbatches;
    json["steps"] = o.steps;
    json["step_time_s"] = step;
    json["step_times_s"] = step_times;
    json["pipeline_time_s"] = sim.pipeline_makespan;
    json["allreduce_s"] = allreduce;
    json["bubble_ratio"] = sim.bubble_ratio;
    json["mfu"] = mfu;
    json["tokens_per_s"] = tokens_per_s;
    auto& peak = json["peak_memory_bytes"] = nlohmann::ordered_json::array();
    for (const RankMemoryTimeline& line : memory) peak.push_back(line.peak_bytes);
    json["device_memory_bytes"] = cluster->gpu.memory_bytes;
    json["status"] = status;
    if (oom) {
      json["oom_rank"] = oom->rank;
      json["oom_time_s"] = oom->time;
      json["oom_bytes"] = oom->bytes;
    }
    if (recorder->enabled()) {
      json["run_id"] = recorder->run_id();
      json["db"] = recorder->path();
    }
    std::cout << json.dump() << "\n";
    return kExitOk;
  }
  fmt::print("# pipette {} simulate {} on {} ({} x {} {}), SimGrid{}\n", Version(), model->name,
             cluster->name, cluster->nodes, cluster->gpus_per_node, cluster->gpu.name,
             o.ideal_network ? ", ideal network" : "");
  fmt::print(
      "# {} pp={} dp={} tp={} v={} m={} micro_batch_size={} seq_len={} dtype={} zero={} "
      "recompute={} efficiency={}\n",
      schedule->name, config.pp, config.dp, config.tp, config.v, config.microbatches,
      config.micro_batch_size, config.seq_len, DTypeName(config.dtype), config.zero_stage,
      config.recompute ? "yes" : "no", o.efficiency);
  fmt::print(
      "status        {}{}\n", status,
      !oom ? ""
           : fmt::format(" (rank {} holds {:.2f} GB of {:.2f} GB at t = {:.4f} ms)", oom->rank,
                         oom->bytes / 1e9, cluster->gpu.memory_bytes / 1e9, oom->time * 1e3));
  fmt::print("step_time     {:.4f} ms   ({}pipeline {:.4f} ms + data-parallel all-reduce)\n",
             step * 1e3, o.steps > 1 ? fmt::format("mean of {} steps; first step's ", o.steps) : "",
             sim.pipeline_makespan * 1e3);
  fmt::print("tokens_per_s  {:.0f}\n", tokens_per_s);
  fmt::print("mfu           {:.3f}\n", mfu);
  fmt::print("bubble_ratio  {:.4f}   (pipeline, idle/total)\n", sim.bubble_ratio);
  fmt::print("#\n# rank       busy  all-reduce       idle  peak_memory\n");
  fmt::print("#    -       [ms]        [ms]       [ms]         [GB]\n");
  for (int r = 0; r < config.pp; ++r) {
    fmt::print("  {:>4} {:>10.3f} {:>11.3f} {:>10.3f} {:>12.2f}\n", r, sim.busy[r] * 1e3,
               allreduce[r] * 1e3, (step_times[0] - sim.busy[r] - allreduce[r]) * 1e3,
               memory[r].peak_bytes / 1e9);
  }
  fmt::print("{}", RecordedLine(*recorder));
  return kExitOk;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a training step on SimGrid");
  cmd->add_option("--schedule", o->schedule, "Schedule name or csv:FILE")->capture_default_str();
  cmd->add_option("-p,--pp", o->params.p, "Pipeline ranks")->capture_default_str();
  cmd->add_option("-v,--chunks", o->params.v, "Stages per rank (default: the schedule's)");
  cmd->add_option("-m,--microbatches", o->params.m, "Microbatches")->capture_default_str();
  cmd->add_option("--times", o->times,
                  "Per-chunk times in ms, F=..,I=..,W=.. (B = I+W): bypasses the model");
  cmd->add_flag("--ideal-network", o->ideal_network,
                "Unbounded bandwidth; every message takes --latency-us");
  cmd->add_option("--latency-us", o->latency_us, "Per-message latency (microseconds)")
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Training steps, back to back")->capture_default_str();
  cmd->add_option("--model", o->model, "Model preset or .toml")->capture_default_str();
  cmd->add_option("--cluster", o->cluster, "Cluster preset or .toml")->capture_default_str();
  cmd->add_option("--nodes", o->nodes, "Nodes (default: the cluster's)");
  cmd->add_option("--dp", o->dp, "Data-parallel replicas")->capture_default_str();
  cmd->add_option("--tp", o->tp, "Tensor-parallel ranks per stage")->capture_default_str();
  cmd->add_option("--micro-batch-size", o->micro_batch_size, "Sequences per microbatch")
      ->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "fp32, bf16, fp16 or fp8")->capture_default_str();
  cmd->add_option("--zero", o->zero, "ZeRO stage 0-3")->capture_default_str();
  cmd->add_flag("--recompute", o->recompute, "Full activation recomputation");
  cmd->add_option("--efficiency", o->efficiency, "Achieved fraction of peak FLOP/s")
      ->capture_default_str();
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  AddRecordOptions(cmd, o->record);
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
