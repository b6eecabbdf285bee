#include "pipette/cluster/cluster_presets.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TEST(ClusterPresets, ListsDgxH100ThenDgxA100) {
  ASSERT_EQ(ClusterPresets().size(), 2u);
  EXPECT_EQ(ClusterPresets()[0].name, "dgx-h100");
  EXPECT_EQ(ClusterPresets()[1].name, "dgx-a100");
  EXPECT_EQ(ClusterPresetNames(), "dgx-h100, dgx-a100");
  for (const ClusterSpec& preset : ClusterPresets()) {
    EXPECT_EQ(FindClusterPreset(preset.name), &preset);
    EXPECT_FALSE(preset.source.empty());
  }
  EXPECT_EQ(FindClusterPreset("dgx-z100"), nullptr);
}

TEST(ClusterPresets, DgxH100HasTheDatasheetFigures) {
  const ClusterSpec& h100 = *FindClusterPreset("dgx-h100");
  EXPECT_EQ(h100.nodes, 1);
  EXPECT_EQ(h100.gpus_per_node, 8);
  EXPECT_EQ(h100.world_size(), 8);
  EXPECT_EQ(h100.gpu.name, "H100-SXM5-80GB");
  EXPECT_EQ(h100.gpu.peak_flops, (std::map<DType, double>{{DType::kFP32, 494.5e12},
                                                          {DType::kBF16, 989e12},
                                                          {DType::kFP16, 989e12},
                                                          {DType::kFP8, 1979e12}}));
  EXPECT_EQ(h100.gpu.memory_bytes, 80'000'000'000);
  EXPECT_EQ(h100.gpu.hbm_bandwidth, 3.35e12);
  EXPECT_EQ(h100.intra_node.bandwidth, 450e9);  // 900 GB/s bidirectional
  EXPECT_EQ(h100.intra_node.latency, 2e-6);
  EXPECT_EQ(h100.inter_node.bandwidth, 50e9);  // 400 Gb/s
  EXPECT_EQ(h100.inter_node.latency, 5e-6);
  EXPECT_EQ(h100.nics_per_node, 8);
  EXPECT_EQ(h100.topology, Topology::kFatTree);
}

TEST(ClusterPresets, DgxA100HasTheDatasheetFiguresAndNoFp8) {
  const ClusterSpec& a100 = *FindClusterPreset("dgx-a100");
  EXPECT_EQ(a100.nodes, 1);
  EXPECT_EQ(a100.gpus_per_node, 8);
  EXPECT_EQ(a100.world_size(), 8);
  EXPECT_EQ(a100.gpu.name, "A100-SXM4-80GB");
  EXPECT_EQ(a100.gpu.peak_flops,
            (std::map<DType, double>{
                {DType::kFP32, 156e12}, {DType::kBF16, 312e12}, {DType::kFP16, 312e12}}));
  EXPECT_EQ(a100.gpu.memory_bytes, 80'000'000'000);
  EXPECT_EQ(a100.gpu.hbm_bandwidth, 2.039e12);
  EXPECT_EQ(a100.intra_node.bandwidth, 300e9);  // 600 GB/s bidirectional
  EXPECT_EQ(a100.intra_node.latency, 2e-6);
  EXPECT_EQ(a100.inter_node.bandwidth, 25e9);  // 200 Gb/s
  EXPECT_EQ(a100.inter_node.latency, 5e-6);
  EXPECT_EQ(a100.nics_per_node, 8);
  EXPECT_EQ(a100.topology, Topology::kFatTree);
}

TEST(ClusterSpec, WorldSizeIsNodesTimesGpusPerNode) {
  ClusterSpec spec = *FindClusterPreset("dgx-h100");
  spec.nodes = 16;
  EXPECT_EQ(spec.world_size(), 128);
  spec.gpus_per_node = 4;
  EXPECT_EQ(spec.world_size(), 64);
}

TEST(ClusterSpec, TopologyNamesAreTheFileSpellings) {
  EXPECT_EQ(TopologyName(Topology::kFatTree), "fat-tree");
  EXPECT_EQ(TopologyName(Topology::kSingleSwitch), "single-switch");
}

}  // namespace
}  // namespace pipette
