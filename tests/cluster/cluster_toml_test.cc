#include "pipette/cluster/cluster_toml.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "pipette/cluster/cluster_presets.h"

namespace pipette {
namespace {

// The smallest complete cluster file (no base): every required key once.
constexpr std::string_view kMinimal = R"(gpus_per_node = 8
[gpu]
name = "G"
memory_gb = 80
hbm_tb_per_s = 3.35
tflops = { bf16 = 989 }
[intra_node]
bandwidth_gb_per_s = 450
latency_us = 2
[inter_node]
bandwidth_gb_per_s = 50
latency_us = 5
)";

// Returns kMinimal with the line `line` replaced by `replacement` (removed when empty).
std::string Edit(std::string_view line, std::string_view replacement) {
  std::string text(kMinimal);
  const std::size_t at = text.find(std::string(line) + "\n");
  EXPECT_NE(at, std::string::npos) << line;
  if (at == std::string::npos) return text;
  const std::string with = replacement.empty() ? "" : std::string(replacement) + "\n";
  return text.replace(at, line.size() + 1, with);
}

// Returns ParseClusterToml's error for `text` (file "t.toml"), expecting InvalidArgument.
std::string Rejection(std::string_view text) {
  Result<ClusterSpec> spec = ParseClusterToml(text, "t.toml");
  EXPECT_FALSE(spec.ok()) << text;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << spec.status().message();
  return spec.status().message();
}

std::string Missing(std::string_view key) {
  return fmt::format("cluster file 't.toml': {} is missing (required unless `base` names a preset)",
                     key);
}

TEST(ClusterToml, MinimalFileFillsDefaultsAndConvertsUnits) {
  Result<ClusterSpec> spec = ParseClusterToml(kMinimal, "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "t.toml");
  EXPECT_EQ(spec->source, "cluster file 't.toml'");
  EXPECT_EQ(spec->nodes, 1);
  EXPECT_EQ(spec->gpus_per_node, 8);
  EXPECT_EQ(spec->nics_per_node, 8);  // one per GPU unless given
  EXPECT_EQ(spec->topology, Topology::kSingleSwitch);
  EXPECT_EQ(spec->gpu.name, "G");
  EXPECT_EQ(spec->gpu.memory_bytes, 80'000'000'000);
  EXPECT_DOUBLE_EQ(spec->gpu.hbm_bandwidth, 3.35e12);
  ASSERT_EQ(spec->gpu.peak_flops.size(), 1u);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kBF16), 989e12);
  EXPECT_DOUBLE_EQ(spec->intra_node.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(spec->intra_node.latency, 2e-6);
  EXPECT_DOUBLE_EQ(spec->inter_node.bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(spec->inter_node.latency, 5e-6);
}

TEST(ClusterToml, LoadsTheExampleFile) {
  const std::string path = std::string(PIPETTE_CLUSTER_DATA_DIR) + "/example.toml";
  Result<ClusterSpec> spec = LoadClusterToml(path);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "hgx-h100-4nic");
  EXPECT_EQ(spec->source,
            "NVIDIA H100 datasheet (H100 SXM, dense); 4x ConnectX-7 400 Gb/s per node");
  EXPECT_EQ(spec->nodes, 4);
  EXPECT_EQ(spec->gpus_per_node, 8);
  EXPECT_EQ(spec->world_size(), 32);
  EXPECT_EQ(spec->nics_per_node, 4);
  EXPECT_EQ(spec->topology, Topology::kSingleSwitch);
  EXPECT_EQ(spec->gpu.name, "H100-SXM5-80GB");
  EXPECT_EQ(spec->gpu.memory_bytes, 80'000'000'000);
  EXPECT_DOUBLE_EQ(spec->gpu.hbm_bandwidth, 3.35e12);
  ASSERT_EQ(spec->gpu.peak_flops.size(), 4u);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kBF16), 989e12);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kFP16), 989e12);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kFP8), 1979e12);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kFP32), 494.5e12);
  EXPECT_DOUBLE_EQ(spec->intra_node.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(spec->intra_node.latency, 2e-6);
  EXPECT_DOUBLE_EQ(spec->inter_node.bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(spec->inter_node.latency, 5e-6);
}

TEST(ClusterToml, BaseOverridesOnlyTheGivenKeys) {
  const std::string path = std::string(PIPETTE_CLUSTER_DATA_DIR) + "/base_override.toml";
  Result<ClusterSpec> spec = LoadClusterToml(path);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const ClusterSpec& h100 = *FindClusterPreset("dgx-h100");
  EXPECT_EQ(spec->name, "dgx-h100-measured");
  EXPECT_EQ(spec->source, "preset dgx-h100 overridden by cluster file '" + path +
                              "'; the preset's figures: " + h100.source);
  EXPECT_EQ(spec->nodes, 16);
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kBF16), 700e12);
  EXPECT_DOUBLE_EQ(spec->inter_node.latency, 10e-6);
  // Everything else is the preset's.
  EXPECT_EQ(spec->gpu.peak_flops.at(DType::kFP8), 1979e12);
  EXPECT_EQ(spec->gpu.peak_flops.at(DType::kFP16), 989e12);
  EXPECT_EQ(spec->gpu.peak_flops.at(DType::kFP32), 494.5e12);
  EXPECT_EQ(spec->gpu.name, h100.gpu.name);
  EXPECT_EQ(spec->gpu.memory_bytes, h100.gpu.memory_bytes);
  EXPECT_EQ(spec->gpu.hbm_bandwidth, h100.gpu.hbm_bandwidth);
  EXPECT_EQ(spec->gpus_per_node, 8);
  EXPECT_EQ(spec->nics_per_node, 8);
  EXPECT_EQ(spec->topology, Topology::kSingleSwitch);
  EXPECT_EQ(spec->intra_node.bandwidth, h100.intra_node.bandwidth);
  EXPECT_EQ(spec->intra_node.latency, h100.intra_node.latency);
  EXPECT_EQ(spec->inter_node.bandwidth, h100.inter_node.bandwidth);
}

TEST(ClusterToml, BaseAloneIsThePresetUnderTheFileName) {
  Result<ClusterSpec> spec = ParseClusterToml("base = \"dgx-a100\"\n", "a.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const ClusterSpec& a100 = *FindClusterPreset("dgx-a100");
  EXPECT_EQ(spec->name, "a.toml");
  EXPECT_EQ(spec->nodes, a100.nodes);
  EXPECT_EQ(spec->gpu.peak_flops, a100.gpu.peak_flops);
  EXPECT_EQ(spec->gpu.memory_bytes, a100.gpu.memory_bytes);
  EXPECT_EQ(spec->inter_node.bandwidth, a100.inter_node.bandwidth);
}

TEST(ClusterToml, ZeroLatencyIsAnIdealLink) {
  Result<ClusterSpec> spec = ParseClusterToml(Edit("latency_us = 2", "latency_us = 0"), "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->intra_node.latency, 0);
}

TEST(ClusterToml, MissingKeysAreNamed) {
  EXPECT_EQ(Rejection(Edit("gpus_per_node = 8", "")), Missing("gpus_per_node"));
  EXPECT_EQ(Rejection(Edit("name = \"G\"", "")), Missing("gpu.name"));
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "")), Missing("gpu.memory_gb"));
  EXPECT_EQ(Rejection(Edit("hbm_tb_per_s = 3.35", "")), Missing("gpu.hbm_tb_per_s"));
  EXPECT_EQ(Rejection(Edit("tflops = { bf16 = 989 }", "")), Missing("gpu.tflops"));
  EXPECT_EQ(Rejection(Edit("bandwidth_gb_per_s = 450", "")),
            Missing("intra_node.bandwidth_gb_per_s"));
  EXPECT_EQ(Rejection(Edit("latency_us = 5", "")), Missing("inter_node.latency_us"));
  EXPECT_EQ(Rejection("gpus_per_node = 8\n"), Missing("gpu"));
  std::string no_inter(kMinimal);
  no_inter.resize(no_inter.find("[inter_node]"));
  EXPECT_EQ(Rejection(no_inter), Missing("inter_node"));
}

TEST(ClusterToml, CountsMustBePositiveIntegersWithinTheLimit) {
  EXPECT_EQ(Rejection("nodes = 0\n" + std::string(kMinimal)),
            "cluster file 't.toml': nodes = 0: must be >= 1");
  EXPECT_EQ(Rejection(Edit("gpus_per_node = 8", "gpus_per_node = -8")),
            "cluster file 't.toml': gpus_per_node = -8: must be >= 1");
  EXPECT_EQ(Rejection("nodes = 2.5\n" + std::string(kMinimal)),
            "cluster file 't.toml': nodes = 2.5: must be an integer");
  EXPECT_EQ(Rejection("nics_per_node = 2000000\n" + std::string(kMinimal)),
            "cluster file 't.toml': nics_per_node = 2000000: more than the limit of 1024");
  EXPECT_EQ(Rejection("nodes = 200000\n" + std::string(kMinimal)),
            "cluster file 't.toml': nodes * gpus_per_node = 200000*8 = 1600000 GPUs: more than "
            "the limit of 1048576");
}

TEST(ClusterToml, AmountsMustBePositiveFiniteNumbers) {
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "memory_gb = -80")),
            "cluster file 't.toml': gpu.memory_gb = -80: must be > 0");
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "memory_gb = 0")),
            "cluster file 't.toml': gpu.memory_gb = 0: must be > 0");
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "memory_gb = \"80\"")),
            "cluster file 't.toml': gpu.memory_gb = '80': must be a number");
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "memory_gb = 2e6")),
            "cluster file 't.toml': gpu.memory_gb = 2000000: more than the limit of 1000000 GB");
  EXPECT_EQ(
      Rejection(Edit("hbm_tb_per_s = 3.35", "hbm_tb_per_s = inf")),
      "cluster file 't.toml': gpu.hbm_tb_per_s = inf: must be a finite number >= 1e-06 (1 MB/s)");
  EXPECT_EQ(
      Rejection(Edit("hbm_tb_per_s = 3.35", "hbm_tb_per_s = nan")),
      "cluster file 't.toml': gpu.hbm_tb_per_s = nan: must be a finite number >= 1e-06 (1 MB/s)");
  EXPECT_EQ(
      Rejection(Edit("bandwidth_gb_per_s = 450", "bandwidth_gb_per_s = 0")),
      "cluster file 't.toml': intra_node.bandwidth_gb_per_s = 0: must be a finite number >= 0.001 "
      "(1 MB/s)");
  EXPECT_EQ(Rejection(Edit("latency_us = 5", "latency_us = -1.5")),
            "cluster file 't.toml': inter_node.latency_us = -1.5: must be >= 0");
  EXPECT_EQ(
      Rejection(Edit("tflops = { bf16 = 989 }", "tflops = { bf16 = 0 }")),
      "cluster file 't.toml': gpu.tflops.bf16 = 0: must be a finite number >= 0.001 (1 GFLOP/s)");
}

TEST(ClusterToml, RatesBelowTheFloorsAndAbsurdLatenciesAreRejected) {
  // Each of these was accepted and made a layer or a message take forever (SimGrid: "deadlock
  // detected", then a segfault) or 10^300 ms.
  // (A subnormal or inexact value is shown with every digit: 1e-320 reads 9.99988867182683e-321.)
  const auto rejects = [](std::string_view line, std::string_view edited, std::string_view key,
                          std::string_view rule) {
    const std::string message = Rejection(Edit(line, edited));
    EXPECT_EQ(message.rfind(fmt::format("cluster file 't.toml': {} = ", key), 0), 0u) << message;
    EXPECT_TRUE(message.ends_with(rule)) << message;
  };
  rejects("tflops = { bf16 = 989 }", "tflops = { bf16 = 1e-320 }", "gpu.tflops.bf16",
          ": must be a finite number >= 0.001 (1 GFLOP/s)");
  rejects("bandwidth_gb_per_s = 50", "bandwidth_gb_per_s = 1e-320", "inter_node.bandwidth_gb_per_s",
          ": must be a finite number >= 0.001 (1 MB/s)");
  rejects("hbm_tb_per_s = 3.35", "hbm_tb_per_s = 1e-9", "gpu.hbm_tb_per_s",
          ": must be a finite number >= 1e-06 (1 MB/s)");
  rejects("latency_us = 2", "latency_us = 1e300", "intra_node.latency_us",
          ": more than the limit of 1e+06");
  EXPECT_EQ(Rejection(Edit("gpus_per_node = 8", "gpus_per_node = 16384")),
            "cluster file 't.toml': gpus_per_node = 16384: more than the limit of 1024");
  // The floors themselves are accepted.
  std::string floors = Edit("tflops = { bf16 = 989 }", "tflops = { bf16 = 0.001 }");
  floors.replace(floors.find("hbm_tb_per_s = 3.35"), 19, "hbm_tb_per_s = 1e-6");
  floors.replace(floors.find("bandwidth_gb_per_s = 450"), 24, "bandwidth_gb_per_s = 0.001");
  Result<ClusterSpec> spec = ParseClusterToml(floors, "t.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_DOUBLE_EQ(spec->gpu.peak_flops.at(DType::kBF16), kMinFlops);
  EXPECT_DOUBLE_EQ(spec->intra_node.bandwidth, kMinBandwidth);
}

TEST(ClusterToml, UnknownNamesAreRejected) {
  EXPECT_EQ(Rejection(Edit("tflops = { bf16 = 989 }", "tflops = { int8 = 624 }")),
            "cluster file 't.toml': gpu.tflops.int8 = 624: unknown dtype 'int8' (expected fp32, "
            "bf16, fp16 or fp8)");
  EXPECT_EQ(Rejection("topology = \"torus\"\n" + std::string(kMinimal)),
            "cluster file 't.toml': topology = 'torus': unknown topology (expected fat-tree, "
            "single-switch or rail-optimised)");
  EXPECT_EQ(Rejection("base = \"dgx-z100\"\n"),
            "cluster file 't.toml': base = 'dgx-z100': unknown preset (the presets are dgx-h100, "
            "dgx-a100, host, dgx-h100-ft-1to1, dgx-h100-ft-2to1, dgx-h100-superpod)");
  EXPECT_EQ(Rejection("memory_gb = 80\n" + std::string(kMinimal)),
            "cluster file 't.toml': unknown key 'memory_gb' (expected base, name, source, nodes, "
            "gpus_per_node, nics_per_node, topology, gpu, intra_node, inter_node, node_groups or "
            "fabric)");
  EXPECT_EQ(Rejection(Edit("memory_gb = 80", "memory_GB = 80")),
            "cluster file 't.toml': unknown key 'gpu.memory_GB' (expected name, memory_gb, "
            "hbm_tb_per_s or tflops)");
  EXPECT_EQ(Rejection(Edit("bandwidth_gb_per_s = 450", "bandwidth_gbps = 450")),
            "cluster file 't.toml': unknown key 'intra_node.bandwidth_gbps' (expected "
            "bandwidth_gb_per_s or latency_us)");
}

TEST(ClusterToml, WrongShapesAreRejected) {
  EXPECT_EQ(Rejection(Edit("tflops = { bf16 = 989 }", "tflops = {}")),
            "cluster file 't.toml': gpu.tflops is empty: list the dense peak TFLOP/s of at least "
            "one dtype");
  EXPECT_EQ(Rejection(Edit("tflops = { bf16 = 989 }", "tflops = 989")),
            "cluster file 't.toml': gpu.tflops = 989: must be a table");
  EXPECT_EQ(Rejection("gpus_per_node = 8\ngpu = 3\n"),
            "cluster file 't.toml': gpu = 3: must be a table");
  EXPECT_EQ(Rejection("topology = 3\n" + std::string(kMinimal)),
            "cluster file 't.toml': topology = 3: must be a string");
  EXPECT_EQ(Rejection("name = \"\"\n" + std::string(kMinimal)),
            "cluster file 't.toml': name = '': must not be empty");
}

TEST(ClusterToml, SyntaxErrorsGiveLineAndColumn) {
  const std::string message = Rejection("nodes = = 4\n");
  EXPECT_EQ(message.rfind("cluster file 't.toml': line 1, column ", 0), 0u) << message;
}

TEST(ClusterToml, MissingFileIsNotFound) {
  Result<ClusterSpec> spec = LoadClusterToml("/nonexistent/cluster.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(spec.status().message(),
            "cluster file '/nonexistent/cluster.toml': not a regular file (or it does not exist)");
}

}  // namespace
}  // namespace pipette
