#include "pipette/cluster/cluster_presets.h"

#include <array>

namespace pipette {
namespace {

// Latencies are one message's software-visible start-up cost (α of an α-β model), the same for
// both generations; docs/clusters.md explains the values.
constexpr double kNvlinkLatency = 2e-6;
constexpr double kInfinibandLatency = 5e-6;

ClusterSpec DgxH100() {
  ClusterSpec spec;
  spec.name = "dgx-h100";
  spec.source =
      "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (dense = half the with-sparsity "
      "figures; fp32 = TF32 tensor core); DGX H100 user guide (8x ConnectX-7 400 Gb/s, 4x "
      "NVSwitch, NVLink 4 900 GB/s bidirectional); latencies: docs/clusters.md";
  spec.nodes = 1;
  spec.gpus_per_node = 8;
  spec.gpu.name = "H100-SXM5-80GB";
  spec.gpu.peak_flops = {
      {DType::kFP32, 494.5e12},
      {DType::kBF16, 989e12},
      {DType::kFP16, 989e12},
      {DType::kFP8, 1979e12},
  };
  spec.gpu.memory_bytes = 80'000'000'000;  // "80 GB": decimal, as the datasheet counts
  spec.gpu.hbm_bandwidth = 3.35e12;
  spec.intra_node = LinkSpec{450e9, kNvlinkLatency};     // 900 GB/s bidirectional per GPU
  spec.inter_node = LinkSpec{50e9, kInfinibandLatency};  // 400 Gb/s NDR per NIC
  spec.nics_per_node = 8;
  spec.topology = Topology::kFatTree;
  return spec;
}

ClusterSpec DgxA100() {
  ClusterSpec spec;
  spec.name = "dgx-a100";
  spec.source =
      "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (dense figures; fp32 = TF32 "
      "tensor core; no fp8); DGX A100 user guide (8x ConnectX-6 200 Gb/s HDR, 6x NVSwitch, NVLink "
      "3 600 GB/s bidirectional); latencies: docs/clusters.md";
  spec.nodes = 1;
  spec.gpus_per_node = 8;
  spec.gpu.name = "A100-SXM4-80GB";
  spec.gpu.peak_flops = {
      {DType::kFP32, 156e12},
      {DType::kBF16, 312e12},
      {DType::kFP16, 312e12},
  };
  spec.gpu.memory_bytes = 80'000'000'000;  // "80 GB": decimal, as the datasheet counts
  spec.gpu.hbm_bandwidth = 2.039e12;
  spec.intra_node = LinkSpec{300e9, kNvlinkLatency};     // 600 GB/s bidirectional per GPU
  spec.inter_node = LinkSpec{25e9, kInfinibandLatency};  // 200 Gb/s HDR per NIC
  spec.nics_per_node = 8;
  spec.topology = Topology::kFatTree;
  return spec;
}

}  // namespace

std::span<const ClusterSpec> ClusterPresets() {
  static const std::array<ClusterSpec, 2> kPresets = {DgxH100(), DgxA100()};
  return kPresets;
}

const ClusterSpec* FindClusterPreset(std::string_view name) {
  for (const ClusterSpec& preset : ClusterPresets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string ClusterPresetNames() {
  std::string names;
  for (const ClusterSpec& preset : ClusterPresets()) {
    if (!names.empty()) names += ", ";
    names += preset.name;
  }
  return names;
}

}  // namespace pipette
