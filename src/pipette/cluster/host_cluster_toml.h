// The cluster file `pipette calibrate --cluster-out` writes: one node of CPU cores whose figures a
// calibration measured (engine/calibration.h: HostClusterSpec), written for people to read. Unlike
// FormatClusterToml (cluster_toml.h: every key, sorted, as toml++ writes them), the keys come in
// the order docs/clusters.md describes them, each measured figure with a comment saying what it
// is, under a '#' header. ParseClusterToml reads the file back to the spec. A pure function.
//
// Example:
//   const ClusterSpec host = HostClusterSpec(calibration);
//   out << FormatHostClusterToml(host, "This machine as pipette calibrate measured it");
#pragma once

#include <string>
#include <string_view>

#include "pipette/cluster/cluster_spec.h"

namespace pipette {

// `spec` as a cluster file: `comment` as '#' lines (one per line of it), then name, source, nodes,
// gpus_per_node, nics_per_node, topology, [gpu] (name, memory_gb, hbm_tb_per_s, the tflops of each
// dtype), [intra_node] and [inter_node] (bandwidth_gb_per_s, latency_us). Numbers keep 9
// significant digits of their file unit; strings are TOML basic strings (quotes, backslashes and
// control bytes escaped). REQUIRES: a single-switch cluster of one GPU type (no fabric, no node
// groups): what one calibrated machine is.
std::string FormatHostClusterToml(const ClusterSpec& spec, std::string_view comment);

}  // namespace pipette
