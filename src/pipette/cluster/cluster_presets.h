// The built-in clusters: one DGX node of H100 or A100 GPUs, figures from NVIDIA's datasheets, and
// `host`, the machine this process runs on as the CPU engine uses it (its usable cores as "GPUs",
// read when the presets are first asked for; nominal per-core rates).
//
// Every preset has nodes = 1; MakeCluster() (cluster_registry.h) sets another node count. Units are
// those of ClusterSpec (bytes, bytes/s per direction, seconds, dense FLOP/s). docs/clusters.md
// lists every figure with its source and the choices made (TF32 for fp32, 80e9-byte "80 GB").
// The presets are immutable statics, built on first use: safe to read from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "pipette/cluster/cluster_spec.h"

namespace pipette {

// Returns every preset, in the order `pipette clusters` prints them: dgx-h100, dgx-a100, host,
// dgx-h100-ft-1to1, dgx-h100-ft-2to1, dgx-h100-superpod.
std::span<const ClusterSpec> ClusterPresets();

// Returns the preset called `name`, or nullptr.
const ClusterSpec* FindClusterPreset(std::string_view name);

// Returns the preset names joined by ", " (for error hints).
std::string ClusterPresetNames();

}  // namespace pipette
