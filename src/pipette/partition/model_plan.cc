#include "pipette/partition/model_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_registry.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {

namespace {

// Per stage of `plan`, the F, I and W seconds of its layers of `graph`, each stage timed by the
// roofline on the GPU of the rank that holds it (replica 0's: GpuOf; one cost model per GPU
// type).
Result<Costs> PriceStages(const StagePlan& plan, const ModelGraph& graph,
                          const ClusterSpec& cluster, const ParallelConfig& config,
                          double efficiency) {
  std::map<const GpuSpec*, RooflineCostModel> models;
  Costs costs;
  for (const StageInfo& stage : plan.stages) {
    const GpuSpec* gpu =
        &cluster.GpuAt(std::min(GpuOf(config, 0, stage.rank), cluster.world_size() - 1));
    auto it = models.find(gpu);
    if (it == models.end()) {
      ClusterSpec on = cluster;
      on.gpu = *gpu;
      PIPETTE_ASSIGN_OR_RETURN(RooflineCostModel model,
                               RooflineCostModel::Make(on, config, {efficiency, 0.8}));
      it = models.emplace(gpu, std::move(model)).first;
    }
    StageCost c{0, 0, 0};
    for (const LayerId id : stage.layers) {
      const LayerTimes t = it->second.Times(graph.layer(id));
      c.f += t.f;
      c.i += t.i;
      c.w += t.w;
    }
    costs.stages.push_back(c);
  }
  return costs;
}

}  // namespace

Result<ModelPlan> BuildModelPlan(const ModelPlanOptions& o) {
  ModelPlan p;
  p.config = o.config;
  PIPETTE_ASSIGN_OR_RETURN(p.config.dtype, ParseDType(o.dtype, "--dtype"));
  if (o.nodes < 0) {
    return Status::InvalidArgument(fmt::format("--nodes = {}: must be >= 1", o.nodes));
  }
  if (p.config.micro_batch_size < 1 || p.config.seq_len < 1) {
    return Status::InvalidArgument(
        fmt::format("--micro-batch-size = {}, --seq-len = {}: both must be >= 1",
                    p.config.micro_batch_size, p.config.seq_len));
  }
  PIPETTE_ASSIGN_OR_RETURN(
      p.schedule,
      MakeSchedule(o.schedule, ScheduleParams{p.config.pp, p.config.v, p.config.microbatches, 0}));
  // A CSV schedule's counts are the file's (0 asked for them; a given one agreed with it).
  p.config.pp = p.schedule.p;
  p.config.v = p.schedule.v;
  p.config.microbatches = p.schedule.m;
  PIPETTE_ASSIGN_OR_RETURN(p.model, MakeModel(o.model, Workload{p.config.micro_batch_size,
                                                                p.config.seq_len, p.config.dtype}));
  PIPETTE_ASSIGN_OR_RETURN(p.cluster, MakeCluster(o.cluster, o.nodes));
  // E.g. more GPUs than the cluster has: an error, never a silent resize.
  PIPETTE_RETURN_IF_ERROR(ValidateParallelConfig(p.config, p.model, p.cluster));
  PIPETTE_ASSIGN_OR_RETURN(p.program, Lower(p.schedule));
  // The schedule's in-flight counts size the activation memory.
  PIPETTE_ASSIGN_OR_RETURN(Evaluation counts,
                           Evaluate(p.program, Costs::Uniform(p.schedule.num_stages(), {})));
  PIPETTE_ASSIGN_OR_RETURN(
      RooflineCostModel cost,
      RooflineCostModel::Make(p.cluster, p.config, RooflineOptions{o.efficiency, 0.8}));
  p.memory = std::make_unique<MemoryModel>(p.config);
  p.request.strategy = o.strategy;
  p.request.tp = p.config.tp;
  p.request.recompute = p.config.recompute;
  p.request.memory = p.memory.get();
  p.request.device_memory = static_cast<double>(p.cluster.gpu.memory_bytes);
  p.request.peak_chunks = counts.peak_activations;
  p.request.peak_pending_w = counts.peak_pending_w;
  PIPETTE_ASSIGN_OR_RETURN(p.plan, Partition(p.model, p.schedule.placement, cost, p.request));
  p.rank_memory = RankMemory(p.plan, p.request);
  p.efficiency = o.efficiency;
  if (!p.cluster.node_groups.empty()) {  // mixed GPUs: each stage timed on its rank's GPU
    PIPETTE_ASSIGN_OR_RETURN(const Costs own,
                             PriceStages(p.plan, p.model, p.cluster, p.config, p.efficiency));
    for (std::size_t s = 0; s < p.plan.stages.size(); ++s) {
      p.plan.stages[s].time_f = own.stages[s].f;
      p.plan.stages[s].time_i = own.stages[s].i;
      p.plan.stages[s].time_w = own.stages[s].w;
    }
  }
  return p;
}

Result<StageCostsAtLength> StageCostsAt(const ModelPlan& p, const std::string& model, int seq_len) {
  ParallelConfig config = p.config;
  config.seq_len = seq_len;
  PIPETTE_ASSIGN_OR_RETURN(
      const ModelGraph graph,
      MakeModel(model, Workload{config.micro_batch_size, seq_len, config.dtype}));
  if (graph.num_layers() != p.model.num_layers()) {
    return Status::InvalidArgument(fmt::format(
        "--microbatch-seqlens: model '{}' at sequence length {} has {} layers, at {} it has {}",
        model, seq_len, graph.num_layers(), p.config.seq_len, p.model.num_layers()));
  }
  StageCostsAtLength out;
  PIPETTE_ASSIGN_OR_RETURN(out.costs, PriceStages(p.plan, graph, p.cluster, config, p.efficiency));
  for (std::size_t v = 0; v < graph.num_layers(); ++v) {
    const Layer& layer = graph.layer(v);
    out.model_flops += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  return out;
}

}  // namespace pipette
