// Partitioning: cut a model graph into S = p*v pipeline stages placed by a schedule's placement.
//
// Stages are contiguous runs of the graph's topological order; a stage never spans two regions
// (towers of a multimodal model): each region gets its own run of stages, in region order, so the
// text tower's stages follow (and wait for) the vision tower's.
//   uniform  : equal layer counts per stage (stage counts per region proportional to layers).
//   balanced : minimise the slowest stage's F+I+W time. Exact per region (bisection on the
//              bottleneck with a greedy check, which is optimal for contiguous cuts), the split of
//              stages among regions chosen optimally; then, when ranks hold several stages,
//              layers move between neighbouring stages while that lowers the slowest RANK's time
//              (e.g. V layout: rank 0 holds the first and the last stage).
//   memory   : like balanced, subject to every rank's memory (weights, gradients, optimizer,
//              activations of its peak in-flight chunks) fitting the device.
#pragma once

#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/cost/cost_model.h"
#include "pipette/cost/memory_model.h"
#include "pipette/model/model_graph.h"
#include "pipette/partition/stage_plan.h"
#include "pipette/schedule/placement.h"

namespace pipette {

enum class PartitionStrategy { kUniform, kBalanced, kMemory };

Result<PartitionStrategy> ParsePartitionStrategy(std::string_view text);
std::string_view PartitionStrategyName(PartitionStrategy strategy);

struct PartitionRequest {
  PartitionStrategy strategy = PartitionStrategy::kBalanced;
  int tp = 1;  // tensor-parallel ranks per stage
  // Expert parallelism (MoE layers): routed experts sharded over `ep` GPUs; one all-to-all phase
  // of a layer costs alltoall_latency + its bytes per GPU x alltoall_seconds_per_byte (the ep
  // group's links, cost/collectives.h), a forward and an input-gradient backward two each. The
  // balanced strategies weigh stages with it; model_plan.h then sets each stage's exact time.
  int ep = 1;
  double alltoall_latency = 0;
  double alltoall_seconds_per_byte = 0;
  bool recompute = false;  // keep only stage inputs (full recomputation)
  // kMemory only: the memory model, the device's bytes, and per rank the schedule's peak in-flight
  // chunks and peak chunks waiting for W (Evaluation::peak_activations, peak_pending_w).
  const MemoryModel* memory = nullptr;
  double device_memory = 0;
  std::vector<int> peak_chunks;
  std::vector<int> peak_pending_w;
};

// Returns the plan, or InvalidArgument when the model has fewer layers than stages (per region:
// fewer layers than the stages it needs), or when no partition fits the device memory (naming the
// rank, its bytes and the device's).
Result<StagePlan> Partition(const ModelGraph& model, const Placement& placement,
                            const CostModel& cost, const PartitionRequest& request);

// Per-rank memory of a plan under `request` (its memory model and peak counts). REQUIRES:
// request.memory != nullptr, peak vectors sized p.
std::vector<MemoryBreakdown> RankMemory(const StagePlan& plan, const PartitionRequest& request);

}  // namespace pipette
