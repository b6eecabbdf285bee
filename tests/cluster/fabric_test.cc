// Fabrics in cluster files ([fabric]) and their closed forms (SummarizeFabric): switch counts and
// bisection bandwidth, checked by hand against NVIDIA's DGX SuperPOD component counts.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/cluster/cluster_toml.h"

namespace pipette {
namespace {

std::string Error(std::string_view text) {
  Result<ClusterSpec> spec = ParseClusterToml(text, "t.toml");
  EXPECT_FALSE(spec.ok()) << text;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  return spec.status().message();
}

TEST(FabricToml, ReadsAThreeLevelFatTree) {
  const Result<ClusterSpec> spec = ParseClusterToml(R"(base = "dgx-h100"
nodes = 64
topology = "fat-tree"
[fabric]
levels = 3
nodes_per_leaf = 4
leaves_per_pod = 8
radix = 64
oversubscription = ["2:1", "3:2"]
link_gb_per_s = 100
hop_latency_us = 0.5
)",
                                                    "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->topology, Topology::kFatTree);
  EXPECT_EQ(spec->fabric.levels, 3);
  EXPECT_EQ(spec->fabric.nodes_per_leaf, 4);
  EXPECT_EQ(spec->fabric.leaves_per_pod, 8);
  ASSERT_EQ(spec->fabric.oversubscription.size(), 2u);
  EXPECT_DOUBLE_EQ(spec->fabric.oversubscription[0], 2.0);
  EXPECT_DOUBLE_EQ(spec->fabric.oversubscription[1], 1.5);
  EXPECT_DOUBLE_EQ(spec->fabric.link_bandwidth, 100e9);
  EXPECT_DOUBLE_EQ(spec->fabric.hop_latency, 0.5e-6);
  // Round trip through FormatClusterToml.
  const Result<ClusterSpec> back = ParseClusterToml(FormatClusterToml(*spec), "back.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->topology, spec->topology);
  EXPECT_EQ(back->fabric, spec->fabric);
}

TEST(FabricToml, OneRatioAppliesToEveryTierAndAbsentKeysKeepThePresets) {
  const Result<ClusterSpec> spec = ParseClusterToml(R"(base = "dgx-h100-superpod"
[fabric]
oversubscription = "2:1"
)",
                                                    "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->topology, Topology::kRailOptimised);
  EXPECT_EQ(spec->fabric.nodes_per_leaf, 32);
  ASSERT_EQ(spec->fabric.oversubscription.size(), 1u);
  EXPECT_DOUBLE_EQ(spec->fabric.oversubscription[0], 2.0);
}

TEST(FabricToml, ErrorsNameTheKeyTheValueAndTheRule) {
  const std::string h100 = "base = \"dgx-h100\"\n";
  EXPECT_EQ(Error(h100 + "[fabric]\nlevels = 2\n"),
            "cluster file 't.toml': [fabric]: topology = 'single-switch' has no fabric tiers (a "
            "[fabric] table needs topology = 'fat-tree' or 'rail-optimised')");
  const std::string tree = h100 + "topology = \"fat-tree\"\n[fabric]\n";
  EXPECT_EQ(Error(tree + "levels = 4\n"), "cluster file 't.toml': fabric.levels = 4: more than the limit of 3");
  EXPECT_EQ(Error(h100 + "topology = \"rail-optimised\"\n[fabric]\nlevels = 3\n"),
            "cluster file 't.toml': fabric.levels = 3: more than the limit of 2");
  EXPECT_EQ(Error(tree + "oversubscription = \"1:2\"\n"),
            "cluster file 't.toml': fabric.oversubscription = '1:2': must be a ratio \"A:B\" "
            "(downlink to uplink bandwidth, A >= B > 0, at most 1024:1) or an array of 1 such "
            "ratios, one per tier above the leaves (levels = 2)");
  EXPECT_NE(Error(tree + "levels = 3\noversubscription = [\"2:1\"]\n")
                .find("fabric.oversubscription = [ '2:1' ]: must be a ratio"),
            std::string::npos);
  EXPECT_NE(Error(tree + "oversubscription = 2\n").find("fabric.oversubscription = 2: must be"),
            std::string::npos);
  EXPECT_EQ(Error(tree + "nodes_per_leaf = 0\n"),
            "cluster file 't.toml': fabric.nodes_per_leaf = 0: must be >= 1");
  EXPECT_EQ(Error(tree + "hop_latency_us = -1\n"),
            "cluster file 't.toml': fabric.hop_latency_us = -1: must be >= 0");
  EXPECT_NE(Error(tree + "spines = 4\n").find("unknown key 'fabric.spines'"), std::string::npos);
  EXPECT_NE(Error(h100 + "topology = \"torus\"\n")
                .find("unknown topology (expected fat-tree, single-switch or rail-optimised)"),
            std::string::npos);
}

TEST(FabricSummary, SuperPodCountsMatchNvidiasTables) {
  // RA-11333-001: 4 SUs of 32 DGX H100 = 32 rail leaves and 16 spines (1:1, 64-port switches).
  const ClusterSpec pod = *MakeCluster("dgx-h100-superpod", 128);
  const FabricSummary s = SummarizeFabric(pod);
  EXPECT_EQ(s.leaves, 32);
  EXPECT_EQ(s.spines, 16);
  EXPECT_DOUBLE_EQ(s.injection, 128 * 8 * 50e9);
  EXPECT_DOUBLE_EQ(s.bisection, 128 * 8 * 50e9 / 2);
  // One SU: every halving of its nodes stays on the rail leaves, not oversubscribed.
  EXPECT_DOUBLE_EQ(SummarizeFabric(*MakeCluster("dgx-h100-superpod", 32)).bisection,
                   32 * 8 * 50e9 / 2);
}

TEST(FabricSummary, FatTreePresetsHalveTheBisectionAtTwoToOne) {
  const FabricSummary one = SummarizeFabric(*MakeCluster("dgx-h100-ft-1to1", 16));
  const FabricSummary two = SummarizeFabric(*MakeCluster("dgx-h100-ft-2to1", 16));
  EXPECT_EQ(one.leaves, 4);  // 4 nodes (32 NICs) per leaf
  EXPECT_EQ(one.spines, 2);  // 4 leaves x 32 uplinks / 64 ports
  EXPECT_EQ(two.spines, 1);  // 4 x 16 / 64
  EXPECT_DOUBLE_EQ(one.bisection, 16 * 8 * 50e9 / 2);
  EXPECT_DOUBLE_EQ(two.bisection, 16 * 8 * 50e9 / 4);
  // Under one leaf nothing is oversubscribed.
  EXPECT_DOUBLE_EQ(SummarizeFabric(*MakeCluster("dgx-h100-ft-2to1", 4)).bisection,
                   4 * 8 * 50e9 / 2);
  // The single switch: half the injection.
  EXPECT_DOUBLE_EQ(SummarizeFabric(*MakeCluster("dgx-h100", 16)).bisection, 16 * 8 * 50e9 / 2);
}

}  // namespace
}  // namespace pipette
