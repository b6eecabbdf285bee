#include "pipette/cluster/cluster_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "pipette/cluster/cluster_presets.h"

namespace pipette {
namespace {

const std::string kExample = std::string(PIPETTE_CLUSTER_DATA_DIR) + "/example.toml";

TEST(MakeCluster, PresetKeepsItsNodeCountWithZero) {
  Result<ClusterSpec> spec = MakeCluster("dgx-h100", 0);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "dgx-h100");
  EXPECT_EQ(spec->nodes, 1);
  EXPECT_EQ(spec->world_size(), 8);
}

TEST(MakeCluster, NodesOverrideChangesOnlyTheNodeCount) {
  Result<ClusterSpec> spec = MakeCluster("dgx-a100", 4);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const ClusterSpec& a100 = *FindClusterPreset("dgx-a100");
  EXPECT_EQ(spec->nodes, 4);
  EXPECT_EQ(spec->world_size(), 32);
  EXPECT_EQ(spec->gpu.peak_flops, a100.gpu.peak_flops);
  EXPECT_EQ(spec->inter_node.bandwidth, a100.inter_node.bandwidth);
}

TEST(MakeCluster, TomlNameLoadsTheFile) {
  Result<ClusterSpec> kept = MakeCluster(kExample, 0);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->name, "hgx-h100-4nic");
  EXPECT_EQ(kept->nodes, 4);
  Result<ClusterSpec> two = MakeCluster(kExample, 2);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->nodes, 2);
  EXPECT_EQ(two->nics_per_node, 4);
}

TEST(MakeCluster, UnknownPresetIsNotFoundWithAHint) {
  Result<ClusterSpec> spec = MakeCluster("dgx-z100", 0);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(
      spec.status().message(),
      "unknown cluster 'dgx-z100': the presets are dgx-h100, dgx-a100, host, dgx-h100-ft-1to1, "
      "dgx-h100-ft-2to1, dgx-h100-superpod; a cluster file's name ends in .toml (see "
      "docs/clusters.md)");
}

TEST(MakeCluster, MissingFileIsNotFound) {
  Result<ClusterSpec> spec = MakeCluster("/nonexistent/c.toml", 0);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(spec.status().message(),
            "cluster file '/nonexistent/c.toml': not a regular file (or it does not exist)");
}

TEST(MakeCluster, BadFileReportsTheFileError) {
  const std::string path = ::testing::TempDir() + "/make_cluster_bad.toml";
  std::ofstream(path) << "base = \"dgx-h100\"\ntopology = \"torus\"\n";
  Result<ClusterSpec> spec = MakeCluster(path, 2);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "cluster file '" + path +
                "': topology = 'torus': unknown topology (expected fat-tree, single-switch or "
                "rail-optimised)");
}

TEST(MakeCluster, NodesMustBeValid) {
  Result<ClusterSpec> negative = MakeCluster("dgx-h100", -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "--nodes = -1: must be >= 1 (or 0 to keep the cluster's own node count)");
  Result<ClusterSpec> huge = MakeCluster("dgx-h100", 200000);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(),
            "--nodes = 200000: 200000 nodes x 8 GPUs = 1600000 GPUs, more than the limit of "
            "1048576");
  EXPECT_TRUE(MakeCluster("dgx-h100", 131072).ok());  // exactly the limit
}

}  // namespace
}  // namespace pipette
