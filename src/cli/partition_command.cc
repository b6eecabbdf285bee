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
#include "pipette/report/partition_report.h"
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

int PartitionFail(const Status& status) { return ReportError("partition", status); }

int Run(PartitionOptions o) {
  if (o.model.empty()) return PartitionFail(Status::InvalidArgument("missing --model NAME|FILE"));
  Result<PartitionStrategy> strategy = ParsePartitionStrategy(o.strategy);
  if (!strategy.ok()) return PartitionFail(strategy.status());
  // A CSV schedule's counts are the file's: --pp, -v and -m left out ask for them (0).
  const bool csv = o.schedule.starts_with("csv:");
  if (o.pp_option->count() == 0) {
    if (!csv)
      return PartitionFail(Status::InvalidArgument("missing --pp P (or a --schedule csv:FILE)"));
    o.config.pp = 0;
  }
  if (csv && o.v_option->count() == 0) o.config.v = 0;
  for (const auto& [key, value, given] :
       {std::tuple{"--pp", o.config.pp, o.pp_option->count() > 0},
        std::tuple{"-v", o.config.v, !csv || o.v_option->count() > 0},
        std::tuple{"--tp", o.config.tp, true}, std::tuple{"--dp", o.config.dp, true}}) {
    if (given && value < 1)
      return PartitionFail(
          Status::InvalidArgument(fmt::format("{} = {}: must be >= 1", key, value)));
  }
  if (o.config.pp > kMaxPipelineRanks) {
    return PartitionFail(Status::InvalidArgument(fmt::format(
        "--pp = {}: more than the limit of {} pipeline ranks", o.config.pp, kMaxPipelineRanks)));
  }
  // The default -m: 2*pp (no overflow below the limit), or a CSV schedule's own m.
  if (o.microbatches_option->count() == 0) {
    o.config.microbatches = o.schedule.starts_with("csv:") ? 0 : 2 * o.config.pp;
  }
  if (o.nodes < 0) {
    return PartitionFail(
        Status::InvalidArgument(fmt::format("--nodes = {}: must be >= 1", o.nodes)));
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
  if (!plan.ok()) return PartitionFail(plan.status());
  if (o.format == "json") {
    std::cout << PartitionJson(*plan, options.schedule).dump() << "\n";
  } else {
    std::cout << PartitionText(*plan, options.schedule);
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
  cmd->add_option("--nodes", o->nodes, "Nodes (0 or left out: the cluster's)");
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
