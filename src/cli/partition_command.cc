// `pipette partition --model NAME|FILE --pp P [-v V] [--tp T] [--dp D] [--strategy S]
//  [--cluster NAME|FILE] [--nodes N] [--schedule NAME] [-m M] [--micro-batch-size B]
//  [--seq-len L] [--dtype D] [--zero Z] [--recompute] [--efficiency E] [--format text|json]`.
#include <fmt/core.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/cluster/parallel_config.h"
#include "pipette/common/build_info.h"
#include "pipette/model/model_registry.h"
#include "pipette/partition/model_plan.h"
#include "pipette/partition/partitioner.h"
#include "pipette/schedule/schedule.h"

namespace pipette::cli {
namespace {

struct PartitionOptions {
  std::string model;
  ParallelConfig config;
  std::string strategy = "balanced";
  std::string cluster = "dgx-h100";
  int nodes = 0;         // 0: the cluster's own count
  std::string schedule;  // "": 1f1b for v = 1, interleaved-1f1b otherwise
  std::string dtype = "bf16";
  double efficiency = 0.5;
  std::string format = "text";
  CLI::Option* pp_option = nullptr;
  CLI::Option* v_option = nullptr;
  CLI::Option* microbatches_option = nullptr;
};

int Fail(const Status& status) { return ReportError("partition", status); }

std::string Gigabytes(double bytes) { return fmt::format("{:.2f}", bytes / 1e9); }

// Layer names of a stage, shortened to "first .. last (n)" when long.
std::string LayerSummary(const ModelGraph& model, const StageInfo& stage) {
  if (stage.layers.size() <= 3) {
    std::string out;
    for (LayerId id : stage.layers) out += (out.empty() ? "" : ",") + model.layer(id).name;
    return out;
  }
  return fmt::format("{}..{} ({})", model.layer(stage.layers.front()).name,
                     model.layer(stage.layers.back()).name, stage.layers.size());
}

// The plan as one JSON line; `schedule` as the user named it.
nlohmann::ordered_json JsonOf(const ModelPlan& p, std::string_view schedule) {
  nlohmann::ordered_json json;
  json["model"] = p.plan.model;
  json["total_params"] = p.plan.total_params;
  auto& stages = json["stages"] = nlohmann::ordered_json::array();
  for (const StageInfo& s : p.plan.stages) {
    nlohmann::ordered_json stage;
    stage["index"] = s.index;
    stage["rank"] = s.rank;
    auto& layers = stage["layers"] = nlohmann::ordered_json::array();
    for (LayerId id : s.layers) layers.push_back(p.model.layer(id).name);
    stage["params"] = s.params;
    stage["fwd_flops"] = s.fwd_flops;
    stage["time_f_s"] = s.time_f;
    stage["time_i_s"] = s.time_i;
    stage["time_w_s"] = s.time_w;
    stage["activation_bytes"] = s.activation_bytes;
    stage["boundary_bytes"] = s.boundary_bytes;
    if (s.moe_layers > 0) {
      stage["moe_layers"] = s.moe_layers;
      stage["alltoall_bytes"] = s.alltoall_bytes;
      stage["time_alltoall_f_s"] = s.time_alltoall_f;
      stage["time_alltoall_b_s"] = s.time_alltoall_b;
    }
    stages.push_back(std::move(stage));
  }
  json["balance"] = p.plan.balance();
  json["rank_balance"] = p.plan.rank_balance();
  json["strategy"] = PartitionStrategyName(p.request.strategy);
  json["schedule"] = schedule;
  auto& mem = json["rank_memory_bytes"] = nlohmann::ordered_json::array();
  for (const MemoryBreakdown& m : p.rank_memory) mem.push_back(m.total());
  json["device_memory_bytes"] = p.cluster.gpu.memory_bytes;
  return json;
}

// The plan for people: the resolved configuration, one row per stage, the balance, and the
// memory of each rank against its device.
void PrintText(const ModelPlan& p, std::string_view schedule) {
  const ParallelConfig& c = p.config;
  const ClusterSpec& cluster = p.cluster;
  fmt::print("# pipette {} partition {} ({:.4g} B params) strategy={}\n", Version(), p.plan.model,
             p.plan.total_params / 1e9, PartitionStrategyName(p.request.strategy));
  fmt::print(
      "# pp={} v={} tp={} dp={} schedule={} m={} micro_batch_size={} seq_len={} dtype={} "
      "zero={} recompute={}\n",
      c.pp, c.v, c.tp, c.dp, schedule, c.microbatches, c.micro_batch_size, c.seq_len,
      DTypeName(c.dtype), c.zero_stage, c.recompute ? "yes" : "no");
  fmt::print("# cluster {}: {} x {} {} ({:.4g} TFLOP/s {}, {:.0f} GB), roofline efficiency {}\n",
             cluster.name, cluster.nodes, cluster.gpus_per_node, cluster.gpu.name,
             cluster.gpu.peak_flops.at(c.dtype) / 1e12, DTypeName(c.dtype),
             cluster.gpu.memory_bytes / 1e9, p.efficiency);
  fmt::print(
      "#\n# stage rank region   params      fwd_flops   time_f   time_i   time_w  "
      "activation   boundary  layers\n");
  fmt::print(
      "#    -    - -        [M]         [GFLOP]       [ms]     [ms]     [ms]        "
      "[MB]       [MB]  -\n");
  for (const StageInfo& s : p.plan.stages) {
    fmt::print(
        "  {:>5} {:>4} {:<8} {:>9.1f} {:>13.1f} {:>8.3f} {:>8.3f} {:>8.3f} {:>11.1f} "
        "{:>10.2f}  {}\n",
        s.index, s.rank, s.region, s.params / 1e6, s.fwd_flops / 1e9, s.time_f * 1e3,
        s.time_i * 1e3, s.time_w * 1e3, s.activation_bytes / 1e6, s.boundary_bytes / 1e6,
        LayerSummary(p.model, s));
  }
  for (const StageInfo& s : p.plan.stages) {
    if (s.moe_layers == 0) continue;
    fmt::print(
        "# stage {}: {} MoE layers, all-to-all {:.2f} MB per GPU and phase, ep={}: {:.3f} ms per "
        "F, {:.3f} ms per I/B\n",
        s.index, s.moe_layers, s.alltoall_bytes / 1e6, c.ep, s.time_alltoall_f * 1e3,
        s.time_alltoall_b * 1e3);
  }
  fmt::print("#\nbalance       {:.4f}   (slowest stage F+I+W time / mean)\n", p.plan.balance());
  fmt::print("rank_balance  {:.4f}   (slowest rank / mean)\n", p.plan.rank_balance());
  fmt::print("#\n# rank  weights  gradients  optimizer  activations    total   device\n");
  fmt::print("#    -     [GB]       [GB]       [GB]         [GB]     [GB]     [GB]\n");
  for (std::size_t r = 0; r < p.rank_memory.size(); ++r) {
    const MemoryBreakdown& m = p.rank_memory[r];
    fmt::print("  {:>4} {:>8} {:>10} {:>10} {:>12} {:>8} {:>8}{}\n", r, Gigabytes(m.weights),
               Gigabytes(m.gradients), Gigabytes(m.optimizer), Gigabytes(m.activations),
               Gigabytes(m.total()), Gigabytes(cluster.gpu.memory_bytes),
               m.total() > cluster.gpu.memory_bytes ? "  exceeds the device" : "");
  }
}

int Run(PartitionOptions o) {
  if (o.model.empty()) return Fail(Status::InvalidArgument("missing --model NAME|FILE"));
  Result<PartitionStrategy> strategy = ParsePartitionStrategy(o.strategy);
  if (!strategy.ok()) return Fail(strategy.status());
  // A CSV schedule's counts are the file's: --pp, -v and -m left out ask for them (0).
  const bool csv = o.schedule.starts_with("csv:");
  if (o.pp_option->count() == 0) {
    if (!csv) return Fail(Status::InvalidArgument("missing --pp P (or a --schedule csv:FILE)"));
    o.config.pp = 0;
  }
  if (csv && o.v_option->count() == 0) o.config.v = 0;
  for (const auto& [key, value, given] :
       {std::tuple{"--pp", o.config.pp, o.pp_option->count() > 0},
        std::tuple{"-v", o.config.v, !csv || o.v_option->count() > 0},
        std::tuple{"--tp", o.config.tp, true}, std::tuple{"--dp", o.config.dp, true}}) {
    if (given && value < 1)
      return Fail(Status::InvalidArgument(fmt::format("{} = {}: must be >= 1", key, value)));
  }
  if (o.config.pp > kMaxPipelineRanks) {
    return Fail(Status::InvalidArgument(fmt::format(
        "--pp = {}: more than the limit of {} pipeline ranks", o.config.pp, kMaxPipelineRanks)));
  }
  // The default -m: 2*pp (no overflow below the limit), or a CSV schedule's own m.
  if (o.microbatches_option->count() == 0) {
    o.config.microbatches = o.schedule.starts_with("csv:") ? 0 : 2 * o.config.pp;
  }
  if (o.nodes < 0) {
    return Fail(Status::InvalidArgument(fmt::format("--nodes = {}: must be >= 1", o.nodes)));
  }
  ModelPlanOptions options;
  options.model = o.model;
  options.cluster = o.cluster;
  options.nodes = o.nodes;  // 0: the cluster's own count; too few GPUs is an error, not a resize
  options.schedule =
      o.schedule.empty() ? (o.config.v == 1 ? "1f1b" : "interleaved-1f1b") : o.schedule;
  options.config = o.config;
  options.dtype = o.dtype;
  options.efficiency = o.efficiency;
  options.strategy = *strategy;
  Result<ModelPlan> plan = BuildModelPlan(options);
  if (!plan.ok()) return Fail(plan.status());
  if (o.format == "json") {
    std::cout << JsonOf(*plan, options.schedule).dump() << "\n";
  } else {
    PrintText(*plan, options.schedule);
  }
  return kExitOk;
}

}  // namespace

void RegisterPartitionCommands(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PartitionOptions>();
  CLI::App* cmd = app.add_subcommand("partition", "Cut a model into pipeline stages");
  cmd->add_option("--model", o->model, "Model preset (see `pipette models`) or a .toml file")
      ->check(NonEmpty());
  o->pp_option = cmd->add_option("--pp", o->config.pp,
                                 "Pipeline ranks (required; a csv:FILE schedule's by default)");
  o->v_option = cmd->add_option("-v,--chunks", o->config.v,
                                "Stages per rank (a csv:FILE schedule's by default)")
                    ->capture_default_str();
  cmd->add_option("--tp", o->config.tp, "Tensor-parallel ranks per stage")->capture_default_str();
  cmd->add_option("--dp", o->config.dp, "Data-parallel replicas")->capture_default_str();
  cmd->add_option("--ep", o->config.ep,
                  "Expert-parallel GPUs (MoE models; must divide --dp and the experts)")
      ->capture_default_str();
  cmd->add_option("--strategy", o->strategy, "uniform, balanced or memory")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--cluster", o->cluster, "Cluster preset (see `pipette clusters`) or .toml")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--nodes", o->nodes, "Nodes (default: the cluster's)");
  cmd->add_option("--schedule", o->schedule,
                  "Schedule whose placement and in-flight counts apply (default 1f1b, or "
                  "interleaved-1f1b for v > 1)")
      ->check(NonEmpty());
  o->microbatches_option = cmd->add_option("-m,--microbatches", o->config.microbatches,
                                           "Microbatches (default 2*pp, or a csv:FILE schedule's)");
  cmd->add_option("--micro-batch-size", o->config.micro_batch_size, "Sequences per microbatch")
      ->capture_default_str();
  cmd->add_option("--seq-len", o->config.seq_len, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "fp32, bf16, fp16 or fp8")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--zero", o->config.zero_stage, "ZeRO stage 0-3")->capture_default_str();
  cmd->add_flag("--recompute", o->config.recompute, "Full activation recomputation");
  cmd->add_option("--efficiency", o->efficiency, "Achieved fraction of peak FLOP/s")
      ->capture_default_str();
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
