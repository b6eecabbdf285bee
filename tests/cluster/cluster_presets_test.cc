#include "pipette/cluster/cluster_presets.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <fstream>
#include <string>

#include "pipette/cluster/cluster_toml.h"

namespace pipette {
namespace {

TEST(ClusterPresets, ListsDgxH100ThenDgxA100ThenHost) {
  ASSERT_EQ(ClusterPresets().size(), 6u);
  EXPECT_EQ(ClusterPresets()[0].name, "dgx-h100");
  EXPECT_EQ(ClusterPresets()[1].name, "dgx-a100");
  EXPECT_EQ(ClusterPresets()[2].name, "host");
  EXPECT_EQ(ClusterPresets()[3].name, "dgx-h100-ft-1to1");
  EXPECT_EQ(ClusterPresets()[4].name, "dgx-h100-ft-2to1");
  EXPECT_EQ(ClusterPresets()[5].name, "dgx-h100-superpod");
  EXPECT_EQ(ClusterPresetNames(),
            "dgx-h100, dgx-a100, host, dgx-h100-ft-1to1, dgx-h100-ft-2to1, dgx-h100-superpod");
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
  EXPECT_EQ(h100.topology, Topology::kSingleSwitch);  // non-blocking: docs/clusters.md §5
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
  EXPECT_EQ(a100.topology, Topology::kSingleSwitch);
}

// The affinity mask of this process, counted here without the probe the preset uses.
int AffinityCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  return CPU_COUNT(&set);
}

// MemTotal of /proc/meminfo in bytes, read here without the probe the preset uses.
std::int64_t MemTotal() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("MemTotal:")) return std::stoll(line.substr(9)) * 1024;
  }
  return 0;
}

TEST(ClusterPresets, HostIsThisMachinesCoresWithNominalRates) {
  const ClusterSpec& host = *FindClusterPreset("host");
  EXPECT_EQ(host.nodes, 1);
  EXPECT_EQ(host.gpus_per_node, AffinityCount());
  EXPECT_EQ(host.world_size(), AffinityCount());
  EXPECT_EQ(host.gpu.name, "cpu-core");
  // fp32 only: the CPU engine computes in fp32, and no other dtype may be simulated on it.
  EXPECT_EQ(host.gpu.peak_flops, (std::map<DType, double>{{DType::kFP32, 75e9}}));
  ASSERT_GT(MemTotal(), 0);
  EXPECT_EQ(host.gpu.memory_bytes, MemTotal() / AffinityCount());
  EXPECT_EQ(host.gpu.hbm_bandwidth, 15e9);
  EXPECT_EQ(host.intra_node.bandwidth, 20e9);
  EXPECT_EQ(host.intra_node.latency, 0.35e-6);
  EXPECT_EQ(host.inter_node.bandwidth, host.intra_node.bandwidth);
  EXPECT_EQ(host.inter_node.latency, host.intra_node.latency);
  EXPECT_EQ(host.nics_per_node, 1);
  EXPECT_EQ(host.topology, Topology::kSingleSwitch);
  EXPECT_TRUE(host.source.starts_with("nominal: ")) << host.source;
  EXPECT_NE(host.source.find("pipette calibrate --engine cpu --cluster-out FILE.toml"),
            std::string::npos)
      << host.source;
}

// Every preset written as a cluster file reads back to itself: the file format holds all of a
// preset (and `base = "host"` starts a file from this machine).
TEST(ClusterPresets, EveryPresetRoundTripsThroughACompleteClusterFile) {
  for (const ClusterSpec& preset : ClusterPresets()) {
    const std::string text = FormatClusterToml(preset);
    EXPECT_EQ(text.find("base"), std::string::npos) << text;
    Result<ClusterSpec> back = ParseClusterToml(text, "round.toml");
    ASSERT_TRUE(back.ok()) << preset.name << ": " << back.status().message() << "\n" << text;
    EXPECT_EQ(back->name, preset.name);
    EXPECT_EQ(back->source, preset.source);
    EXPECT_EQ(back->nodes, preset.nodes);
    EXPECT_EQ(back->gpus_per_node, preset.gpus_per_node);
    EXPECT_EQ(back->nics_per_node, preset.nics_per_node);
    EXPECT_EQ(back->topology, preset.topology);
    EXPECT_EQ(back->gpu.name, preset.gpu.name);
    EXPECT_EQ(back->gpu.memory_bytes, preset.gpu.memory_bytes);
    EXPECT_DOUBLE_EQ(back->gpu.hbm_bandwidth, preset.gpu.hbm_bandwidth);
    ASSERT_EQ(back->gpu.peak_flops.size(), preset.gpu.peak_flops.size()) << preset.name;
    for (const auto& [dtype, flops] : preset.gpu.peak_flops) {
      EXPECT_DOUBLE_EQ(back->gpu.peak_flops.at(dtype), flops) << preset.name;
    }
    for (const auto& [a, b] : {std::pair{back->intra_node, preset.intra_node},
                               std::pair{back->inter_node, preset.inter_node}}) {
      EXPECT_DOUBLE_EQ(a.bandwidth, b.bandwidth) << preset.name;
      EXPECT_DOUBLE_EQ(a.latency, b.latency) << preset.name;
    }
  }
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
