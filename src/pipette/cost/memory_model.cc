#include "pipette/cost/memory_model.h"

#include <algorithm>

namespace pipette {

MemoryBreakdown MemoryModel::Static(double params_per_gpu, double expert_params_per_gpu) const {
  const double dense = params_per_gpu - expert_params_per_gpu;
  const double expert = expert_params_per_gpu;
  const double dp = config_.dp;
  const double expert_dp = static_cast<double>(config_.dp) / std::max(1, config_.ep);
  // Parameters whose state ZeRO stage `stage` shards: dense over dp, experts over dp / ep.
  auto sharded = [&](int stage) {
    return config_.zero_stage >= stage ? dense / dp + expert / expert_dp : dense + expert;
  };
  MemoryBreakdown m;
  m.weights = sharded(3) * weight_bytes_per_param();
  m.gradients = sharded(2) * gradient_bytes_per_param();
  m.optimizer = sharded(1) * optimizer_bytes_per_param();
  return m;
}

}  // namespace pipette
