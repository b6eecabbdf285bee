#include "pipette/cluster/cluster_presets.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "pipette/common/host_machine.h"

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
  // A non-blocking fabric, simulated as one switch (a 1:1 fat-tree without hop latency carries
  // the same rates: docs/clusters.md).
  spec.topology = Topology::kSingleSwitch;
  return spec;
}

// DGX H100 nodes on a two-level fat-tree of 64-port NDR switches (QM9700): 4 nodes (32 NICs) per
// leaf, leaf uplinks 1:1 or `ratio`:1. The 5 us inter-node latency already holds the
// leaf-spine-leaf hops (docs/clusters.md), so hops add none.
ClusterSpec DgxH100FatTree(const char* name, double ratio) {
  ClusterSpec spec = DgxH100();
  spec.name = name;
  spec.source +=
      "; fabric: two-level fat-tree of 64-port NDR switches (NVIDIA QM9700), 4 nodes "
      "per leaf, leaf uplinks oversubscribed as named (docs/clusters.md)";
  spec.topology = Topology::kFatTree;
  spec.fabric.levels = 2;
  spec.fabric.nodes_per_leaf = 4;
  spec.fabric.radix = 64;
  spec.fabric.oversubscription = {ratio};
  return spec;
}

// The DGX H100 SuperPOD compute fabric: scalable units of 32 nodes, NIC k of every node on rail
// leaf k of its SU (8 rails), rail leaves 1:1 to the spines, NDR 400 Gb/s, 64-port switches.
ClusterSpec DgxH100SuperPod() {
  ClusterSpec spec = DgxH100();
  spec.name = "dgx-h100-superpod";
  spec.source +=
      "; fabric: NVIDIA DGX SuperPOD reference architecture featuring DGX H100 (RA-11333-001, "
      "docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100): SUs of "
      "32 DGX H100, rail-optimised NDR 400 Gb/s compute fabric, 8 QM9700 (64-port) rail leaves "
      "per SU, leaves 1:1 to spines";
  spec.topology = Topology::kRailOptimised;
  spec.fabric.levels = 2;
  spec.fabric.nodes_per_leaf = 32;
  spec.fabric.radix = 64;
  spec.fabric.oversubscription = {1.0};
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
  spec.topology = Topology::kSingleSwitch;  // non-blocking, as dgx-h100
  return spec;
}

// The machine this process runs on, for the CPU engine: one node whose "GPUs" are the cores this
// process may use, each an OpenBLAS sgemm of a nominal rate, joined by Open MPI's shared-memory
// transport. The rates are nominal (docs/clusters.md says where each comes from); `pipette
// calibrate --engine cpu --cluster-out FILE` measures them on the machine at hand.
ClusterSpec Host() {
  constexpr double kCoreSgemmFlops = 75e9;     // one core, every core busy (calibrated: 75-151)
  constexpr double kCoreCopyBandwidth = 15e9;  // one rank's memcpy, bytes read + written
  constexpr double kShmBandwidth = 20e9;       // Open MPI vader, per direction (calibrated 20.6)
  constexpr double kShmLatency = 0.35e-6;      // its one-way start-up (calibrated 0.35 us)
  ClusterSpec spec;
  spec.name = "host";
  spec.source =
      "nominal: this machine's usable cores (sched_getaffinity) and RAM / cores, with a core's "
      "sgemm rate, copy rate and the shared-memory link as pipette calibrate measured them on "
      "the 2-core development machine (docs/clusters.md); `pipette calibrate --engine cpu "
      "--cluster-out FILE.toml` measures this machine";
  spec.nodes = 1;
  spec.gpus_per_node = std::min(UsableCores(), kMaxGpusPerNode);
  spec.gpu.name = "cpu-core";
  spec.gpu.peak_flops = {{DType::kFP32, kCoreSgemmFlops}};
  const std::int64_t ram = MemTotalBytes();
  // Without /proc/meminfo, 1 GB per core: a figure, not a crash.
  spec.gpu.memory_bytes = ram > 0 ? ram / spec.gpus_per_node : 1'000'000'000;
  spec.gpu.hbm_bandwidth = kCoreCopyBandwidth;
  spec.intra_node = LinkSpec{kShmBandwidth, kShmLatency};
  spec.inter_node = spec.intra_node;  // one node: never used, but the same transport
  spec.nics_per_node = 1;
  spec.topology = Topology::kSingleSwitch;
  return spec;
}

}  // namespace

std::span<const ClusterSpec> ClusterPresets() {
  // Probed once, the first time a preset is asked for.
  static const std::array<ClusterSpec, 6> kPresets = {DgxH100(),
                                                      DgxA100(),
                                                      Host(),
                                                      DgxH100FatTree("dgx-h100-ft-1to1", 1.0),
                                                      DgxH100FatTree("dgx-h100-ft-2to1", 2.0),
                                                      DgxH100SuperPod()};
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
