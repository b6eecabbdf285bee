#include "pipette/cost/memory_model.h"

namespace pipette {

MemoryBreakdown MemoryModel::Static(double params_per_gpu) const {
  const double dp = config_.dp;
  MemoryBreakdown m;
  m.weights = params_per_gpu * weight_bytes_per_param() / (config_.zero_stage >= 3 ? dp : 1);
  m.gradients = params_per_gpu * gradient_bytes_per_param() / (config_.zero_stage >= 2 ? dp : 1);
  m.optimizer = params_per_gpu * optimizer_bytes_per_param() / (config_.zero_stage >= 1 ? dp : 1);
  return m;
}

}  // namespace pipette
