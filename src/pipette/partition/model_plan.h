// ModelPlan: a model made ready to run, what `pipette partition` prints and SimulateModel
// (sim/model_simulation.h) simulates. From a model name, a cluster name and a parallel
// configuration it builds the model, the cluster, the checked configuration, the schedule and its
// program, and the partition (timed with the roofline, with per-rank memory against the device).
// Move-only; `request.memory` points into the plan and stays valid when the plan moves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/cluster/parallel_config.h"
#include "pipette/common/status.h"
#include "pipette/cost/memory_model.h"
#include "pipette/model/model_graph.h"
#include "pipette/partition/partitioner.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

struct ModelPlanOptions {
  std::string model;
  std::string cluster;
  int nodes = 0;          // 0: the cluster's own count
  std::string schedule;   // its v overrides config.v when config.v is 0
  ParallelConfig config;  // dtype set; v = 0 takes the schedule's default; for csv:FILE,
                          // pp = 0 and microbatches = 0 take the file's
  std::string dtype = "bf16";
  double efficiency = 0.5;
  PartitionStrategy strategy = PartitionStrategy::kBalanced;
};

struct ModelPlan {
  ModelGraph model;
  ClusterSpec cluster;
  ParallelConfig config;  // resolved (dtype, v)
  Schedule schedule;
  Program program;
  std::unique_ptr<MemoryModel> memory;
  PartitionRequest request;
  StagePlan plan;
  std::vector<MemoryBreakdown> rank_memory;
  double efficiency =
      0.5;  // the roofline's achieved fraction of peak FLOP/s (stage times assume it)
};

// Returns the plan, or the first error (InvalidArgument/NotFound naming the flag, value and rule).
// On a cluster of mixed GPU types (ClusterSpec::node_groups) the partition is balanced for the
// cluster's [gpu] and every stage is then timed on the GPU of the rank that holds it (replica 0's
// mapping, rank r on GPU r * tp); memory is checked against the [gpu]'s capacity.
Result<ModelPlan> BuildModelPlan(const ModelPlanOptions& options);

// The plan's stages at another sequence length (variable-length microbatches,
// schedule/uneven_work.h): the model `model` (the name or file the plan was built from) rebuilt
// with `seq_len` tokens per sequence, each stage's layers (the plan's partition, unchanged) timed
// with the plan's roofline on its rank's GPU, so attention grows with seq_len^2 and the rest
// linearly.
struct StageCostsAtLength {
  Costs costs;             // per stage, seconds
  double model_flops = 0;  // FLOPs of one microbatch through the whole model (F + I + W)
};
Result<StageCostsAtLength> StageCostsAt(const ModelPlan& plan, const std::string& model,
                                        int seq_len);

}  // namespace pipette
