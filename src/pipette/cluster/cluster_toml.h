// Cluster files: a ClusterSpec written in TOML, with the unit in every key name.
//
// Example (docs/clusters.md has the full format and tests/data/clusters/ two complete files):
//   name = "hgx-h100-4nic"
//   nodes = 4
//   gpus_per_node = 8
//   nics_per_node = 4
//   topology = "fat-tree"            # or "single-switch"
//   [gpu]
//   name = "H100-SXM5-80GB"
//   memory_gb = 80                   # 1 GB = 1e9 bytes
//   hbm_tb_per_s = 3.35
//   tflops = { bf16 = 989, fp16 = 989, fp8 = 1979, fp32 = 494.5 }   # dense
//   [intra_node]                     # per GPU port, per direction
//   bandwidth_gb_per_s = 450
//   latency_us = 2
//   [inter_node]                     # per NIC, per direction
//   bandwidth_gb_per_s = 50
//   latency_us = 5
//
// `base = "dgx-h100"` starts from a preset: every key becomes optional and overrides the preset's
// value (tflops entries one dtype at a time). Errors name the file, the key, the value and the
// rule. FormatClusterToml writes a ClusterSpec back in this format. Stateless functions; safe to
// call from any thread.
#pragma once

#include <string>
#include <string_view>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"

namespace pipette {

// Parses cluster-file text; `origin` (the file name) prefixes every error and becomes the name of
// a cluster that sets none. Errors: InvalidArgument for a syntax error (with line and column), an
// unknown key, a wrong type, a missing key (without `base`), a value breaking its rule (counts
// >= 1, capacities, bandwidths and FLOP/s > 0, latencies >= 0, all finite), an unknown topology,
// dtype or base preset, or more than kMaxClusterGpus GPUs.
Result<ClusterSpec> ParseClusterToml(std::string_view text, const std::string& origin);

// Reads and parses the cluster file at `path` (at most 1 MiB). NotFound when it does not exist;
// InvalidArgument when it is not a regular file or is larger; IoError when it cannot be read;
// otherwise as ParseClusterToml.
Result<ClusterSpec> LoadClusterToml(const std::string& path);

// Returns `spec` as a complete cluster file (every key but `base`; keys sorted, as toml++ writes
// them) that ParseClusterToml reads back to `spec` (numbers to the last bit of their file unit:
// memory to the byte, rates to within one rounding of the unit conversion).
std::string FormatClusterToml(const ClusterSpec& spec);

}  // namespace pipette
