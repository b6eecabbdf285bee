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
Result<ModelPlan> BuildModelPlan(const ModelPlanOptions& options);

}  // namespace pipette
