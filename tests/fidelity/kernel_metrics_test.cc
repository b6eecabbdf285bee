// A kernel profile (engine/kernel_profile.h) through the run's metrics and back
// (store/kernel_metrics.h), and the merge of the ranks' samples.
#include "pipette/store/kernel_metrics.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TEST(KernelMetrics, AProfileReadsBackAsItWasWritten) {
  const std::vector<KernelSample> samples = {
      {KernelKind::kGemm, 256, 768, 256, 40, 0.05},
      {KernelKind::kGemm, 64, 64, 64, 1000, 0.007},
      {KernelKind::kGemm, 256, 768, 256, 10, 0.0125},  // another rank's, merged
      {KernelKind::kModule, kAttentionModule, 2, 0, 16, 0.026},
      {KernelKind::kModule, kLossModule, 0, 0, 8, 0.0024},
      {KernelKind::kActivation, 0, 0, 0, 32, 0.5},
      {KernelKind::kLogits, 0, 0, 0, 8, 0.01}};
  RunData run;
  AddKernelMetrics(samples, 7, run.metrics);
  EXPECT_EQ(run.Metric("kernel_profile_steps"), 7);
  EXPECT_DOUBLE_EQ(run.Metric("kernel_gemm_s[256x768x256]"), 0.0625);
  EXPECT_EQ(run.Metric("kernel_gemm_calls[256x768x256]"), 50);
  EXPECT_DOUBLE_EQ(run.Metric("kernel_module_s[attn.W]"), 0.026);
  EXPECT_DOUBLE_EQ(run.Metric("kernel_activation_s"), 0.5);
  int steps = 0;
  const std::vector<KernelSample> back = KernelSamplesOf(run, steps);
  EXPECT_EQ(steps, 7);
  const std::vector<KernelSample> merged = MergeKernelSamples(samples);
  ASSERT_EQ(back.size(), merged.size());
  for (const KernelSample& want : merged) {
    bool found = false;
    for (const KernelSample& got : back) {
      if (got.kind == want.kind && got.m == want.m && got.n == want.n && got.k == want.k) {
        found = true;
        EXPECT_EQ(got.calls, want.kind == KernelKind::kGemm || want.kind == KernelKind::kModule
                                 ? want.calls
                                 : 0);
        EXPECT_DOUBLE_EQ(got.seconds, want.seconds);
      }
    }
    EXPECT_TRUE(found) << static_cast<int>(want.kind) << " " << want.m;
  }
}

TEST(KernelMetrics, NoProfileNoRowsAndMalformedNamesAreSkipped) {
  RunData run;
  AddKernelMetrics({{KernelKind::kGemm, 2, 2, 2, 1, 1e-6}}, 0, run.metrics);  // no steps
  EXPECT_TRUE(run.metrics.empty());
  run.metrics = {{"kernel_profile_steps", 3, "steps"},
                 {"kernel_gemm_s[2x2]", 1, "s"},
                 {"kernel_gemm_s[0x2x2]", 1, "s"},
                 {"kernel_module_s[attn.X]", 1, "s"},
                 {"kernel_gemm_s[4x4x4]", 0.5, "s"}};  // seconds without calls: skipped
  int steps = 0;
  EXPECT_TRUE(KernelSamplesOf(run, steps).empty());
  EXPECT_EQ(steps, 3);
}

}  // namespace
}  // namespace pipette
