// ParallelConfig: how one training step is parallelised, and its validation against a model and
// a cluster.
#pragma once

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"
#include "pipette/model/model_graph.h"

namespace pipette {

struct ParallelConfig {
  int pp = 1;  // pipeline ranks
  int dp = 1;  // data-parallel replicas
  int tp = 1;  // tensor-parallel ranks per stage
  // Expert-parallel GPUs (MoE): each MoE layer's routed experts are sharded over ep GPUs of the
  // data-parallel dimension (the same pipeline rank in ep consecutive replicas), as Megatron-LM
  // does (expert-model-parallel size: dp must be divisible by it, and the experts too). 1: every
  // GPU holds every expert.
  int ep = 1;
  int v = 1;                 // stages (chunks) per pipeline rank
  int microbatches = 1;      // per step
  int micro_batch_size = 1;  // sequences per microbatch
  int seq_len = 2048;        // tokens per sequence
  int zero_stage = 0;        // 0 (none), 1 (optimizer states), 2 (+ gradients), 3 (+ weights)
  bool recompute = false;    // full activation recomputation
  DType dtype = DType::kBF16;

  int world_size() const { return pp * dp * tp; }
};

// Returns OK or InvalidArgument naming the key, the value and the rule: every count >= 1;
// pp*dp*tp <= the cluster's GPUs; tp <= GPUs per node (TP stays inside a node); heads and kv-heads
// divisible by tp (when the model has them); ep >= 1 dividing dp and, when > 1, the model's routed
// experts (an MoE model: ep > 1 for a dense one is an error); the model's layers >= pp*v stages;
// zero_stage in
// [0, 3]; micro_batch_size, seq_len >= 1; and workload consistency (the model was built for this
// micro_batch_size, seq_len and dtype).
Status ValidateParallelConfig(const ParallelConfig& config, const ModelGraph& model,
                              const ClusterSpec& cluster);

}  // namespace pipette
