// StagePlan: a model cut into pipeline stages and placed on ranks, explained stage by stage.
//
// Stages are contiguous runs of the model's topological order; stage s runs on
// placement.rank_of(s). Amounts are per microbatch; parameters and FLOPs are before tensor
// parallelism, times (from the cost model) and activation bytes are per GPU. Plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/model/model_graph.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/placement.h"

namespace pipette {

struct StageInfo {
  int index = 0;
  int rank = 0;
  std::string region;
  std::vector<LayerId> layers;  // in topological order
  std::int64_t params = 0;
  double params_per_gpu = 0;  // after tensor-parallel (and, for experts, expert-parallel) sharding
  double expert_params_per_gpu = 0;  // of params_per_gpu, the routed experts' (/ tp / ep)
  double fwd_flops = 0;
  double igrad_flops = 0;
  double wgrad_flops = 0;
  double time_f = 0;  // seconds per microbatch
  double time_i = 0;
  double time_w = 0;
  std::int64_t activation_bytes = 0;   // held per in-flight microbatch, per GPU
  std::int64_t wgrad_input_bytes = 0;  // held from I to W by split-backward schedules, per GPU
  std::int64_t boundary_bytes = 0;     // bytes of the edges leaving the stage for later stages
  // MoE: the stage's MoE layers, the bytes one GPU sends in one of their all-to-all phases (the
  // layers' sum, / tp), and the seconds of a forward's all-to-all (dispatch + combine) and of an
  // I or B's on an idle network (Costs::alltoall).
  int moe_layers = 0;
  std::int64_t alltoall_bytes = 0;
  double time_alltoall_f = 0;
  double time_alltoall_b = 0;

  double time() const { return time_f + time_i + time_w + time_alltoall_f + time_alltoall_b; }
};

struct StagePlan {
  std::string model;
  std::int64_t total_params = 0;
  Placement placement;
  std::vector<StageInfo> stages;

  // Slowest stage's F+I+W time over the mean stage time (1 = perfectly balanced).
  double balance() const;
  // Per-rank F+I+W time (the sum over the rank's stages).
  std::vector<double> rank_times() const;
  // Slowest rank's time over the mean rank time.
  double rank_balance() const;
  // Per-stage F, I, W costs for evaluate() and the simulator, with the all-to-all of MoE stages
  // (Costs::alltoall, empty when no stage has any).
  Costs ToCosts() const;
};

}  // namespace pipette
