#include "pipette/cost/roofline_cost_model.h"

#include <gtest/gtest.h>

#include <limits>

#include "pipette/cluster/cluster_presets.h"

namespace pipette {
namespace {

ClusterSpec TestCluster() {
  ClusterSpec c;
  c.name = "test";
  c.gpu.name = "gpu";
  c.gpu.peak_flops[DType::kBF16] = 1e15;
  c.gpu.hbm_bandwidth = 2e12;
  c.intra_node = {100e9, 1e-6};
  return c;
}

RooflineCostModel MustMake(int tp, RooflineOptions options = {0.5, 0.5}) {
  ParallelConfig config;
  config.tp = tp;
  Result<RooflineCostModel> model = RooflineCostModel::Make(TestCluster(), config, options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(model).value();
}

TEST(RooflineCostModel, ComputeBoundLayerTakesFlopsOverEffectivePeak) {
  Layer layer;
  layer.fwd_flops = 1e12;
  layer.igrad_flops = 2e12;
  layer.wgrad_flops = 1e12;
  layer.hbm_bytes = 1e6;  // 1 us at 1e12 B/s effective: far below the compute time
  const LayerTimes t = MustMake(1).Times(layer);
  EXPECT_DOUBLE_EQ(t.f, 1e12 / (1e15 * 0.5));
  EXPECT_DOUBLE_EQ(t.i, 2e12 / (1e15 * 0.5));
  EXPECT_DOUBLE_EQ(t.w, 1e12 / (1e15 * 0.5));
}

TEST(RooflineCostModel, MemoryBoundLayerTakesBytesOverEffectiveBandwidth) {
  Layer layer;
  layer.type = "norm";
  layer.fwd_flops = 1e6;
  layer.igrad_flops = 1e6;
  layer.hbm_bytes = 4e9;
  const LayerTimes t = MustMake(1).Times(layer);
  EXPECT_DOUBLE_EQ(t.f, 4e9 / (2e12 * 0.5));
  EXPECT_DOUBLE_EQ(t.i, 4e9 / (2e12 * 0.5));
  EXPECT_DOUBLE_EQ(t.w, 0);  // no weight-gradient FLOPs: the pass does not run
}

TEST(RooflineCostModel, TensorParallelismShardsWorkAndAddsARingAllReduce) {
  Layer layer;
  layer.fwd_flops = 8e12;
  layer.igrad_flops = 8e12;
  layer.wgrad_flops = 8e12;
  layer.tp_allreduce_bytes = 64e6;
  const RooflineCostModel model = MustMake(4);
  const double ring = 2.0 * 3 / 4 * 64e6 / 100e9 + 2.0 * 3 * 1e-6;
  EXPECT_DOUBLE_EQ(model.RingAllReduceSeconds(64e6, 4), ring);
  const LayerTimes t = model.Times(layer);
  EXPECT_DOUBLE_EQ(t.f, 8e12 / 4 / 5e14 + ring);
  EXPECT_DOUBLE_EQ(t.i, 8e12 / 4 / 5e14 + ring);
  EXPECT_DOUBLE_EQ(t.w, 8e12 / 4 / 5e14);  // W has no collective
  layer.tp_sharded = false;                // a replicated layer does the whole work on every GPU
  EXPECT_DOUBLE_EQ(model.Times(layer).w, 8e12 / 5e14);
  EXPECT_DOUBLE_EQ(MustMake(1).RingAllReduceSeconds(64e6, 1), 0);
}

TEST(RooflineCostModel, RejectsAMissingDtypeAndBadEfficiencies) {
  ParallelConfig config;
  config.dtype = DType::kFP8;
  Result<RooflineCostModel> fp8 = RooflineCostModel::Make(TestCluster(), config);
  ASSERT_FALSE(fp8.ok());
  EXPECT_EQ(fp8.status().message(),
            "--dtype = fp8: cluster 'test' (gpu) has no peak FLOP/s for it");
  config.dtype = DType::kBF16;
  Result<RooflineCostModel> bad = RooflineCostModel::Make(TestCluster(), config, {1.5, 0.5});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--efficiency = 1.5: must lie in (0, 1]");
}

}  // namespace
}  // namespace pipette

namespace pipette {
namespace {

TEST(RooflineCostModel, RefusesHardwareBelowTheFloors) {
  ClusterSpec cluster = *FindClusterPreset("dgx-h100");
  ParallelConfig config;
  config.dtype = DType::kBF16;
  cluster.gpu.peak_flops[DType::kBF16] = 1;  // 1 FLOP/s
  Result<RooflineCostModel> slow = RooflineCostModel::Make(cluster, config);
  ASSERT_EQ(slow.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slow.status().message(),
            "cluster 'dgx-h100': gpu.tflops.bf16 = 1e-12 TFLOP/s: must be a finite number >= "
            "0.001 TFLOP/s");
  cluster.gpu.peak_flops[DType::kBF16] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(RooflineCostModel::Make(cluster, config).status().code(), StatusCode::kInvalidArgument);
  cluster = *FindClusterPreset("dgx-h100");
  cluster.gpu.hbm_bandwidth = 1.0;
  EXPECT_NE(RooflineCostModel::Make(cluster, config)
                .status()
                .message()
                .find("gpu.hbm_tb_per_s = 1e-12 TB/s: must be a finite number >= 1e-06 TB/s"),
            std::string::npos);
  cluster = *FindClusterPreset("dgx-h100");
  config.tp = 2;
  cluster.intra_node.latency = 5;
  EXPECT_EQ(RooflineCostModel::Make(cluster, config).status().message(),
            "cluster 'dgx-h100': intra_node.latency_us = 5e+06: must be a number in [0, 1e+06]");
}

TEST(RooflineCostModel, CauseOfNamesTheTermThatDominates) {
  const ClusterSpec cluster = *FindClusterPreset("dgx-h100");
  ParallelConfig config;
  config.dtype = DType::kBF16;
  Layer gemm;
  gemm.name = "gemm";
  gemm.fwd_flops = 1e12;
  gemm.hbm_bytes = 1000;
  Result<RooflineCostModel> slow = RooflineCostModel::Make(cluster, config, {1e-300, 0.8});
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_EQ(slow->CauseOf(gemm),
            "--efficiency = 1e-300 (of 989 TFLOP/s bf16 on cluster 'dgx-h100'; layer 'gemm': "
            "1e+12 FLOPs, 1e+03 HBM bytes)");
  Layer copy;
  copy.name = "copy";
  copy.fwd_flops = 1;
  copy.hbm_bytes = 1'000'000'000'000;
  Result<RooflineCostModel> model = RooflineCostModel::Make(cluster, config);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->CauseOf(copy).rfind("memory efficiency = 0.8 of 3.35 TB/s HBM (", 0), 0u)
      << model->CauseOf(copy);
}

}  // namespace
}  // namespace pipette
