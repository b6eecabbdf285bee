// The built-in `host` cluster end to end: the file `pipette calibrate --cluster-out` writes has
// the preset's keys and shape, `pipette clusters` lists this machine's cores (and follows
// taskset), and `pipette simulate` runs the CPU engine's tiny model on it in fp32 only.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_toml.h"
#include "pipette/common/host_machine.h"
#include "pipette/report/calibration_report.h"
#include "pipette_runner.h"

namespace pipette::cli {
namespace {

using testing::CommandResult;
using testing::Pipette;
using testing::Shell;

// Every key of a TOML document, as dotted paths ("gpu.tflops.fp32").
void CollectKeys(const toml::table& table, const std::string& prefix, std::set<std::string>& keys) {
  for (const auto& [key, node] : table) {
    const std::string path = prefix + std::string(key.str());
    if (const toml::table* inner = node.as_table()) {
      CollectKeys(*inner, path + ".", keys);
    } else {
      keys.insert(path);
    }
  }
}

std::set<std::string> KeysOf(const std::string& text) {
  std::set<std::string> keys;
  CollectKeys(toml::parse(text), "", keys);
  return keys;
}

// A calibration of this machine as `pipette calibrate` records it: its cores and RAM.
Calibration ThisMachine() {
  Calibration c;
  c.id = 3;
  c.engine = "cpu";
  c.host = "here";
  c.created_at = "2026-11-24T22:00:00.000Z";
  c.ranks = 2;
  c.cores = UsableCores();
  c.p2p = {0.35e-6, 1 / 20.6e9};
  c.allreduce = {0.7e-6, 2e-10};
  c.gemm_flops = 75e9;
  c.gemm_flops_alone = 129e9;
  c.memory_bytes = static_cast<double>(MemTotalBytes());
  c.memory_bandwidth = 15e9;
  return c;
}

TEST(HostCluster, CalibratedFileHasThePresetsKeysAndShape) {
  const ClusterSpec& host = *FindClusterPreset("host");
  const std::string calibrated = HostClusterToml(ThisMachine());
  EXPECT_EQ(KeysOf(calibrated), KeysOf(FormatClusterToml(host)));
  EXPECT_EQ(
      KeysOf(calibrated),
      (std::set<std::string>{
          "name", "source", "nodes", "gpus_per_node", "nics_per_node", "topology", "gpu.name",
          "gpu.memory_gb", "gpu.hbm_tb_per_s", "gpu.tflops.fp32", "intra_node.bandwidth_gb_per_s",
          "intra_node.latency_us", "inter_node.bandwidth_gb_per_s", "inter_node.latency_us"}));

  Result<ClusterSpec> measured = ParseClusterToml(calibrated, "host.toml");
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  EXPECT_EQ(measured->nodes, host.nodes);
  EXPECT_EQ(measured->gpus_per_node, host.gpus_per_node);
  EXPECT_EQ(measured->nics_per_node, host.nics_per_node);
  EXPECT_EQ(measured->topology, host.topology);
  EXPECT_EQ(measured->gpu.name, host.gpu.name);
  // RAM / cores on both sides; the file keeps 9 significant digits of its GB.
  EXPECT_NEAR(static_cast<double>(measured->gpu.memory_bytes),
              static_cast<double>(host.gpu.memory_bytes), 1e-8 * host.gpu.memory_bytes);
  // The nominal figures are the ones this calibration measured (see docs/clusters.md).
  EXPECT_DOUBLE_EQ(measured->gpu.peak_flops.at(DType::kFP32), host.gpu.peak_flops.at(DType::kFP32));
  EXPECT_DOUBLE_EQ(measured->gpu.hbm_bandwidth, host.gpu.hbm_bandwidth);
  EXPECT_DOUBLE_EQ(measured->intra_node.latency, host.intra_node.latency);
  EXPECT_NEAR(measured->intra_node.bandwidth, 20.6e9, 1);  // the preset rounds to 20 GB/s
}

// The `host` line of `pipette clusters`, or "" when there is none.
std::string HostLine(const std::string& listing) {
  const std::size_t at = listing.find("\n  host ");
  if (at == std::string::npos) return "";
  return listing.substr(at + 1, listing.find('\n', at + 1) - at - 1);
}

TEST(HostCluster, ClustersListsThisMachinesCoresAndFollowsTaskset) {
  CommandResult all = Pipette("clusters");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::string line = HostLine(all.out);
  ASSERT_FALSE(line.empty()) << all.out;
  EXPECT_NE(line.find(" " + std::to_string(UsableCores()) + "  cpu-core "), std::string::npos)
      << line;
  EXPECT_NE(line.find("nominal"), std::string::npos) << line;

  CommandResult pinned = Shell("taskset -c 0 " + std::string(PIPETTE_BINARY) + " clusters");
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_NE(HostLine(pinned.out).find(" 1  cpu-core "), std::string::npos) << pinned.out;
}

TEST(HostCluster, SimulatesTheTinyModelInFp32AndRecordsTheRun) {
  if (UsableCores() < 2) GTEST_SKIP() << "-p 2 needs 2 cores on the host cluster";
  CommandResult run = Pipette(
      "simulate --model tiny --cluster host --dtype fp32 -p 2 -m 4 --micro-batch-size 4 "
      "--seq-len 32 --db host.db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["db"], "host.db");
  CommandResult runs = Pipette("runs --db host.db --format json");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const nlohmann::json listed = nlohmann::json::parse(runs.out);
  ASSERT_FALSE(listed.empty());
  const nlohmann::json& last = listed.back();
  EXPECT_EQ(last["id"], json["run_id"]);
  EXPECT_EQ(last["engine"], "sim");
  EXPECT_EQ(last["status"], "ok");
  EXPECT_EQ(last["config"]["model"], "tiny");
  EXPECT_EQ(last["config"]["cluster"], "host");
  EXPECT_EQ(last["config"]["dtype"], "fp32");
}

TEST(HostCluster, OtherDtypesAreRefusedNamingDtypeAndTheCluster) {
  for (const std::string dtype : {"bf16", "fp16", "fp8"}) {
    CommandResult run = Pipette("simulate --model tiny --cluster host -p 1 -m 2 --dtype " + dtype +
                                " --db refused.db");
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("--dtype = " + dtype + ": cluster 'host' has no peak FLOP/s for " +
                           dtype + " on its cpu-core (it lists fp32)"),
              std::string::npos)
        << run.err;
  }
  // simulate's default dtype is bf16: the host cluster refuses it the same way.
  CommandResult bare = Pipette("simulate --model tiny --cluster host -p 1 -m 2 --db refused.db");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("--dtype = bf16: cluster 'host'"), std::string::npos) << bare.err;
  // Nothing was recorded.
  CommandResult runs = Pipette("runs --db refused.db --format json");
  if (runs.exit_code == 0) {
    EXPECT_EQ(nlohmann::json::parse(runs.out).size(), 0u) << runs.out;
  }
}

}  // namespace
}  // namespace pipette::cli
