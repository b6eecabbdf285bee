// What calibrate prints and writes, from a synthetic calibration (no MPI): the cluster file parses
// back to the calibration's figures, the JSON holds each point's fit and residual, and the mpirun
// command line carries --oversubscribe and --allow-run-as-root exactly when they are needed.
#include "pipette/report/calibration_report.h"

#include <gtest/gtest.h>

#include "cli/mpi_launcher.h"
#include "pipette/cluster/cluster_toml.h"

namespace pipette::cli {
namespace {

Calibration Synthetic() {
  Calibration c;
  c.id = 7;
  c.engine = "cpu";
  c.host = "node1";
  c.created_at = "2026-11-24T21:00:00.000Z";
  c.version = "0.1.0";
  c.ranks = 4;
  c.cores = 8;
  c.p2p = {2e-6, 1e-10};  // 2 us, 10 GB/s
  c.allreduce = {5e-6, 4e-10};
  c.gemm_flops = 5e10;
  c.gemm_flops_alone = 6e10;
  c.memory_bytes = 64e9;
  c.memory_bandwidth = 1e10;
  c.points = {{"p2p", 2, 0, 2.5e-6}, {"p2p", 2, 1000, 2e-6}, {"allreduce", 4, 4, 5e-6}};
  return c;
}

TEST(HostClusterToml, ParsesBackToTheCalibrationsFigures) {
  Result<ClusterSpec> cluster = ParseClusterToml(HostClusterToml(Synthetic()), "host.toml");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(cluster->name, "host-calibration-7");
  EXPECT_EQ(cluster->nodes, 1);
  EXPECT_EQ(cluster->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(cluster->gpu.peak_flops.at(DType::kFP32), 5e10);
  EXPECT_EQ(cluster->gpu.memory_bytes, 8'000'000'000);  // 64 GB over 8 cores
  EXPECT_DOUBLE_EQ(cluster->gpu.hbm_bandwidth, 1e10);
  EXPECT_DOUBLE_EQ(cluster->intra_node.bandwidth, 1e10);  // 1 / beta
  EXPECT_DOUBLE_EQ(cluster->intra_node.latency, 2e-6);    // alpha
  EXPECT_DOUBLE_EQ(cluster->inter_node.bandwidth, 1e10);
  EXPECT_DOUBLE_EQ(cluster->inter_node.latency, 2e-6);
}

TEST(HostClusterToml, AFlatFitTakesTheLargestPointsBandwidth) {
  Calibration c = Synthetic();
  c.p2p.beta = 0;
  c.points = {{"p2p", 2, 1 << 20, 1e-4}, {"p2p", 2, 1 << 10, 1e-6}};
  Result<ClusterSpec> cluster = ParseClusterToml(HostClusterToml(c), "host.toml");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_NEAR(cluster->intra_node.bandwidth, (1 << 20) / 1e-4, 1e2);  // 10.49 GB/s, 9 digits
}

// A host name is written as a TOML string, not as the terminal sees it (\x01 is no TOML escape).
TEST(HostClusterToml, AHostNameWithAControlByteParsesBack) {
  Calibration c = Synthetic();
  c.host = "odd\x01host";
  Result<ClusterSpec> cluster = ParseClusterToml(HostClusterToml(c), "host.toml");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_NE(cluster->source.find("on odd\x01host at"), std::string::npos) << cluster->source;
}

TEST(CalibrationJson, HoldsEveryPointWithItsFitAndResidual) {
  const nlohmann::ordered_json json = CalibrationJson(Synthetic());
  EXPECT_EQ(json["calibration_id"], 7);
  EXPECT_EQ(json["p2p"]["alpha_s"], 2e-6);
  EXPECT_EQ(json["allreduce"]["beta_s_per_byte"], 4e-10);
  ASSERT_EQ(json["points"].size(), 3u);
  // 0 bytes: fit 2 us, measured 2.5 us: residual (2.5 - 2) / 2.5 = 0.2.
  EXPECT_DOUBLE_EQ(json["points"][0]["fit_s"].get<double>(), 2e-6);
  EXPECT_NEAR(json["points"][0]["residual"].get<double>(), 0.2, 1e-12);
  // 1000 bytes: fit 2.1 us, measured 2 us: -0.05.
  EXPECT_NEAR(json["points"][1]["residual"].get<double>(), -0.05, 1e-12);
  // The all-reduce point against the all-reduce fit: 5 us + 4 * 0.4 ns.
  EXPECT_DOUBLE_EQ(json["points"][2]["fit_s"].get<double>(), 5e-6 + 4 * 4e-10);
}

TEST(MpirunArguments, OversubscribesBeyondTheCoresAndAllowsRootOnlyAsRoot) {
  using Args = std::vector<std::string>;
  EXPECT_EQ(MpirunArguments(2, 4, false, "/b/pipette-train", {"-p2", "--steps=1"}),
            (Args{"mpirun", "-np", "2", "/b/pipette-train", "-p2", "--steps=1"}));
  EXPECT_EQ(MpirunArguments(4, 4, false, "x", {}), (Args{"mpirun", "-np", "4", "x"}));
  EXPECT_EQ(MpirunArguments(5, 4, true, "x", {"a"}),
            (Args{"mpirun", "-np", "5", "--oversubscribe", "--allow-run-as-root", "x", "a"}));
  EXPECT_GE(UsableCores(), 1);
  EXPECT_EQ(SiblingBinary("pipette-train").substr(SiblingBinary("pipette-train").rfind('/')),
            "/pipette-train");
}

}  // namespace
}  // namespace pipette::cli
