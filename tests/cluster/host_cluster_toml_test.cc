// The calibrated machine's cluster file (cluster/host_cluster_toml.h): the exact text, and the
// round trip through ParseClusterToml for a spec with several dtypes, distinct links and strings
// that need escaping.
#include "pipette/cluster/host_cluster_toml.h"

#include <gtest/gtest.h>

#include <string>

#include "pipette/cluster/cluster_toml.h"

namespace pipette {
namespace {

ClusterSpec Cores() {
  ClusterSpec spec;
  spec.name = "host-calibration-7";
  spec.source = "pipette calibrate --engine cpu on node1 (calibration 7, 4 ranks)";
  spec.nodes = 1;
  spec.gpus_per_node = 8;
  spec.nics_per_node = 1;
  spec.topology = Topology::kSingleSwitch;
  spec.gpu.name = "cpu-core";
  spec.gpu.memory_bytes = 8'000'000'000;
  spec.gpu.hbm_bandwidth = 1e10;
  spec.gpu.peak_flops[DType::kFP32] = 5e10;
  spec.intra_node = {1e10, 2e-6};
  spec.inter_node = {1e10, 2e-6};
  return spec;
}

TEST(HostClusterToml, WritesTheKeysInOrderWithTheirComments) {
  EXPECT_EQ(FormatHostClusterToml(Cores(), "first line\nsecond line"),
            "# first line\n"
            "# second line\n"
            "name = \"host-calibration-7\"\n"
            "source = \"pipette calibrate --engine cpu on node1 (calibration 7, 4 ranks)\"\n"
            "nodes = 1\n"
            "gpus_per_node = 8\n"
            "nics_per_node = 1\n"
            "topology = \"single-switch\"\n"
            "\n"
            "[gpu]\n"
            "name = \"cpu-core\"\n"
            "memory_gb = 8          # RAM / cores\n"
            "hbm_tb_per_s = 0.01       # one rank's memcpy rate\n"
            "tflops = { fp32 = 0.05 }  # one core's sgemm rate with every rank running\n"
            "\n"
            "[intra_node]               # the p2p fit: 1/beta, alpha\n"
            "bandwidth_gb_per_s = 10\n"
            "latency_us = 2\n"
            "\n"
            "[inter_node]               # the p2p fit: 1/beta, alpha\n"
            "bandwidth_gb_per_s = 10\n"
            "latency_us = 2\n"
            "\n");
}

TEST(HostClusterToml, ReadsBackToTheSpec) {
  ClusterSpec spec = Cores();
  spec.source = "on \"odd\\host\"\x01\t with\x7f bytes";  // quotes, a backslash, control bytes
  spec.gpus_per_node = 3;
  spec.gpu.memory_bytes = 8'433'333'334;  // RAM / 3 cores: 10 digits of bytes, 9 of GB kept
  spec.gpu.hbm_bandwidth = 1.234e10;
  spec.gpu.peak_flops[DType::kBF16] = 7.77e10;
  spec.inter_node = {2.06e10, 0.35e-6};
  Result<ClusterSpec> read = ParseClusterToml(FormatHostClusterToml(spec, "a header"), "host.toml");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->name, spec.name);
  EXPECT_EQ(read->source, spec.source);
  EXPECT_EQ(read->nodes, 1);
  EXPECT_EQ(read->gpus_per_node, 3);
  EXPECT_EQ(read->nics_per_node, 1);
  EXPECT_EQ(read->topology, Topology::kSingleSwitch);
  EXPECT_EQ(read->gpu.name, "cpu-core");
  EXPECT_NEAR(static_cast<double>(read->gpu.memory_bytes), 8'433'333'334.0, 10);
  EXPECT_DOUBLE_EQ(read->gpu.hbm_bandwidth, 1.234e10);
  ASSERT_EQ(read->gpu.peak_flops.size(), 2u);
  EXPECT_DOUBLE_EQ(read->gpu.peak_flops.at(DType::kFP32), 5e10);
  EXPECT_DOUBLE_EQ(read->gpu.peak_flops.at(DType::kBF16), 7.77e10);
  EXPECT_DOUBLE_EQ(read->intra_node.bandwidth, 1e10);
  EXPECT_DOUBLE_EQ(read->intra_node.latency, 2e-6);
  EXPECT_DOUBLE_EQ(read->inter_node.bandwidth, 2.06e10);
  EXPECT_DOUBLE_EQ(read->inter_node.latency, 0.35e-6);
}

}  // namespace
}  // namespace pipette
