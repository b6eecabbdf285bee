#include "pipette/partition/model_plan.h"

#include <fmt/core.h>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_registry.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {

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
  return p;
}

}  // namespace pipette
