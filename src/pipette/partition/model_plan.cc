#include "pipette/partition/model_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/collectives.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_registry.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {

namespace {

// Per stage of `plan`, the F, I and W seconds of its layers of `graph`, each stage timed by the
// roofline on the GPU of the rank that holds it (replica 0's: GPU rank * tp; one cost model per
// GPU type).
Result<Costs> PriceStages(const StagePlan& plan, const ModelGraph& graph,
                          const ClusterSpec& cluster, const ParallelConfig& config,
                          double efficiency) {
  std::map<const GpuSpec*, RooflineCostModel> models;
  Costs costs;
  for (const StageInfo& stage : plan.stages) {
    const GpuSpec* gpu = &cluster.GpuAt(std::min(stage.rank * config.tp, cluster.world_size() - 1));
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

// The all-to-all phase of `bytes` (per GPU, summed over `layers` MoE layers) of pipeline rank
// `rank`'s expert-parallel groups: replicas g*ep .. g*ep+ep-1, replica d's rank on GPU
// (d*pp + rank)*tp (sim/model_simulation.h's mapping); the slowest member of any group, each
// member's peers split into those in its node (NVLink) and the rest (its NIC).
double ExpertPhaseSeconds(const ParallelConfig& c, const ClusterSpec& cluster, int rank,
                          double bytes, int layers) {
  if (c.ep <= 1 || bytes <= 0 || layers <= 0) return 0;
  const int gpn = cluster.gpus_per_node;
  double slowest = 0;
  for (int first = 0; first < c.dp; first += c.ep) {
    for (int i = first; i < first + c.ep; ++i) {
      const int node = (i * c.pp + rank) * c.tp / gpn;
      int local = 0;
      for (int j = first; j < first + c.ep; ++j) {
        if (j != i && (j * c.pp + rank) * c.tp / gpn == node) ++local;
      }
      const AllToAllPeers kinds[] = {{cluster.intra_node, local},
                                     {cluster.inter_node, c.ep - 1 - local}};
      slowest = std::max(slowest, AllToAllSeconds(c.ep, bytes, layers, kinds));
    }
  }
  return slowest;
}

// What the partitioner weighs an MoE layer's all-to-all phase with: rank 0's groups as a latency
// plus seconds per byte, read off the phase of 1 GB and of 2 GB (exact when one kind of link is
// the slowest at both, which holds at the sizes MoE layers send).
void SetAllToAll(const ParallelConfig& c, const ClusterSpec& cluster, PartitionRequest& request) {
  request.ep = c.ep;
  if (c.ep <= 1) return;
  constexpr double kBytes = 1e9;
  const double one = ExpertPhaseSeconds(c, cluster, 0, kBytes, 1);
  const double two = ExpertPhaseSeconds(c, cluster, 0, 2 * kBytes, 1);
  request.alltoall_seconds_per_byte = std::max(0.0, (two - one) / kBytes);
  request.alltoall_latency = std::max(0.0, one - kBytes * request.alltoall_seconds_per_byte);
}

// Every MoE stage's all-to-all at its exact (aggregated) time on its rank's groups.
void PriceAllToAll(const ParallelConfig& c, const ClusterSpec& cluster, StagePlan& plan) {
  for (StageInfo& stage : plan.stages) {
    const double phase = ExpertPhaseSeconds(
        c, cluster, stage.rank, static_cast<double>(stage.alltoall_bytes), stage.moe_layers);
    stage.time_alltoall_f = 2 * phase;
    stage.time_alltoall_b = 2 * phase;
  }
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
  SetAllToAll(p.config, p.cluster, p.request);
  PIPETTE_ASSIGN_OR_RETURN(p.plan, Partition(p.model, p.schedule.placement, cost, p.request));
  PriceAllToAll(p.config, p.cluster, p.plan);
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
  out.costs.alltoall = p.plan.ToCosts().alltoall;  // the reference length's
  for (std::size_t v = 0; v < graph.num_layers(); ++v) {
    const Layer& layer = graph.layer(v);
    out.model_flops += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  return out;
}

}  // namespace pipette
