// MemoryModel: the bytes one GPU holds for its pipeline rank's stages during a training step.
//
// Static state per parameter held by the GPU (after tensor-parallel sharding), mixed-precision
// Adam as in Rajbhandari et al. 2020 (ZeRO): weights and gradients in the training dtype (2 + 2
// bytes for bf16/fp16) and optimizer state in fp32 (master weights, momentum, variance: 12 bytes;
// 8 when training in fp32, where the weights are the master copy). ZeRO stage 1 shards the
// optimizer state over dp, stage 2 also the gradients, stage 3 also the weights.
// Activations: each in-flight chunk (F ran, I/B not yet) holds its stage's activation bytes; a
// split-backward schedule also holds, per chunk whose I ran but W did not, the inputs of the
// weight GEMMs. Peaks of the two counts are added (an upper bound: they need not coincide).
// Plain value type.
#pragma once

#include <cstdint>

#include "pipette/cluster/parallel_config.h"

namespace pipette {

struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double total() const { return weights + gradients + optimizer + activations; }
};

class MemoryModel {
 public:
  explicit MemoryModel(const ParallelConfig& config) : config_(config) {}

  // Bytes of weights, gradients and optimizer state for `params_per_gpu` parameters, of which
  // `expert_params_per_gpu` are routed experts' (already divided by ep): ZeRO shards those over
  // the dp/ep replicas that hold the same experts, the rest over dp.
  MemoryBreakdown Static(double params_per_gpu, double expert_params_per_gpu = 0) const;

  // Bytes per GPU of weights per parameter, gradients per parameter, optimizer state per parameter
  // (before ZeRO sharding).
  int weight_bytes_per_param() const { return BytesOf(config_.dtype); }
  int gradient_bytes_per_param() const { return BytesOf(config_.dtype); }
  int optimizer_bytes_per_param() const { return config_.dtype == DType::kFP32 ? 8 : 12; }

 private:
  ParallelConfig config_;
};

}  // namespace pipette
