// A real run's kernel profile (engine/kernel_profile.h) as metrics of the run (docs/metrics.md):
// "kernel_gemm_s[MxNxK]" and "kernel_gemm_calls[MxNxK]" per GEMM shape,
// "kernel_module_s[KIND.PASS]" and "kernel_module_calls[KIND.PASS]" per kind of layer (attn, mlp,
// embedding, final_norm, head, loss) and pass (F, I, W), "kernel_activation_s", "kernel_scores_s"
// and "kernel_logits_s" (totals over the profiled steps, every pipeline rank of replica 0), and
// "kernel_profile_steps". Pure functions.
#pragma once

#include <vector>

#include "pipette/engine/kernel_profile.h"
#include "pipette/store/run_data.h"

namespace pipette {

// Appends the profile's rows (none when steps < 1 or nothing was sampled).
void AddKernelMetrics(const std::vector<KernelSample>& samples, int steps,
                      std::vector<MetricRow>& metrics);

// The profile `run` recorded, and its steps in `steps` (0 and empty: none). Malformed names are
// skipped.
std::vector<KernelSample> KernelSamplesOf(const RunData& run, int& steps);

}  // namespace pipette
