// Mixed GPU types in a cluster file ([[node_groups]]): parsing, errors naming the key, the value
// and the rule, writing back, and the relative rank speeds per-chunk costs get from them.
#include <gtest/gtest.h>

#include <string>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/cluster/cluster_toml.h"

namespace pipette {
namespace {

const ClusterSpec& Preset(const char* name) { return *FindClusterPreset(name); }

TEST(NodeGroups, TheGroupsNodesHoldTheirGpu) {
  Result<ClusterSpec> spec = MakeCluster(PIPETTE_CLUSTER_DATA_DIR "/mixed.toml", 0);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->node_groups.size(), 1u);
  EXPECT_EQ(spec->node_groups[0].nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(spec->GpuOfNode(0), Preset("dgx-h100").gpu);
  EXPECT_EQ(spec->GpuOfNode(1).name, "H100-SXM5-80GB");
  EXPECT_EQ(spec->GpuOfNode(2), Preset("dgx-a100").gpu);
  EXPECT_EQ(spec->GpuAt(3).name, "A100-SXM4-80GB");
  // bf16: 312 / 989 on the A100 ranks.
  Result<std::vector<double>> speeds = RelativeRankSpeeds(*spec, DType::kBF16, 4);
  ASSERT_TRUE(speeds.ok()) << speeds.status().message();
  EXPECT_EQ(*speeds, (std::vector<double>{1, 1, 312.0 / 989.0, 312.0 / 989.0}));
  // fp8: the A100 has none.
  Result<std::vector<double>> fp8 = RelativeRankSpeeds(*spec, DType::kFP8, 4);
  ASSERT_FALSE(fp8.ok());
  EXPECT_NE(fp8.status().message().find("GPU A100-SXM4-80GB has no fp8 peak"), std::string::npos)
      << fp8.status().message();
  EXPECT_FALSE(RelativeRankSpeeds(*spec, DType::kBF16, 5).ok());
  // A one-type cluster: every rank at 1.
  EXPECT_EQ(*RelativeRankSpeeds(Preset("dgx-a100"), DType::kBF16, 3),
            (std::vector<double>{1, 1, 1}));
}

TEST(NodeGroups, AnInlineGpuOverridesItsBaseAndTheFileRoundTrips) {
  const std::string text = R"(base = "dgx-h100"
nodes = 3
[[node_groups]]
nodes = "0,2"
base = "dgx-h100"
[node_groups.gpu]
name = "H100-slow"
tflops = { bf16 = 494.5 }
)";
  Result<ClusterSpec> spec = ParseClusterToml(text, "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->node_groups[0].nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(spec->GpuOfNode(2).name, "H100-slow");
  EXPECT_EQ(spec->GpuOfNode(2).peak_flops.at(DType::kBF16), 494.5e12);
  EXPECT_EQ(spec->GpuOfNode(2).peak_flops.at(DType::kFP8), 1979e12);  // kept from the base
  EXPECT_EQ(spec->GpuOfNode(1).name, "H100-SXM5-80GB");
  EXPECT_EQ(*RelativeRankSpeeds(*spec, DType::kBF16, 24, 1),
            [] {
              std::vector<double> v(24, 1.0);
              for (int r = 0; r < 8; ++r) v[r] = v[16 + r] = 0.5;
              return v;
            }());
  Result<ClusterSpec> back = ParseClusterToml(FormatClusterToml(*spec), "back.toml");
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << FormatClusterToml(*spec);
  EXPECT_EQ(back->node_groups, spec->node_groups);
}

TEST(NodeGroups, BadGroupsAreRefusedNamingTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"nodes = \"4\"\nbase = \"dgx-a100\"", "node_groups[0].nodes = \"4\": node 4 is outside 0..3"},
      {"nodes = \"1-0\"\nbase = \"dgx-a100\"", "'1-0' is not a node index or a range"},
      {"nodes = \"1,1\"\nbase = \"dgx-a100\"", "node 1 is listed twice"},
      {"nodes = \"x\"\nbase = \"dgx-a100\"", "'x' is not a node index"},
      {"nodes = \"1\"\nbase = \"dgx-z\"", "node_groups[0].base = 'dgx-z': unknown preset"},
      {"nodes = \"1\"", "node_groups[0].gpu"},
      {"nodes = \"1\"\nbase = \"dgx-a100\"\ncolour = 1", "colour"},
      {"base = \"dgx-a100\"", "nodes"},
      {"nodes = \"1\"\nbase = \"dgx-a100\"\n[[node_groups]]\nnodes = \"0-1\"\nbase = \"dgx-a100\"",
       "node_groups[1].nodes: node 1 is already in an earlier group"},
  };
  for (const auto& [group, message] : cases) {
    const std::string text = "base = \"dgx-h100\"\nnodes = 4\n[[node_groups]]\n" + group + "\n";
    Result<ClusterSpec> spec = ParseClusterToml(text, "t.toml");
    ASSERT_FALSE(spec.ok()) << group;
    EXPECT_NE(spec.status().message().find(message), std::string::npos)
        << group << " -> " << spec.status().message();
  }
  Result<ClusterSpec> not_array = ParseClusterToml("base = \"dgx-h100\"\nnode_groups = 3\n", "t");
  ASSERT_FALSE(not_array.ok());
  EXPECT_NE(not_array.status().message().find("node_groups: must be an array"), std::string::npos);
}

}  // namespace
}  // namespace pipette
