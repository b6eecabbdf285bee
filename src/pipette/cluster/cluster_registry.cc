#include "pipette/cluster/cluster_registry.h"

#include <fmt/core.h>

#include <cstdint>
#include <string>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_toml.h"
#include "pipette/common/printable.h"

namespace pipette {

Result<ClusterSpec> MakeCluster(std::string_view name_or_file, int nodes) {
  if (nodes < 0) {
    return Status::InvalidArgument(fmt::format(
        "--nodes = {}: must be >= 1 (or 0 to keep the cluster's own node count)", nodes));
  }
  ClusterSpec spec;
  if (name_or_file.ends_with(".toml")) {
    PIPETTE_ASSIGN_OR_RETURN(spec, LoadClusterToml(std::string(name_or_file)));
  } else {
    const ClusterSpec* preset = FindClusterPreset(name_or_file);
    if (preset == nullptr) {
      return Status::NotFound(fmt::format(
          "unknown cluster '{}': the presets are {}; a cluster file's name ends in .toml (see "
          "docs/clusters.md)",
          Printable(name_or_file), ClusterPresetNames()));
    }
    spec = *preset;
  }
  if (nodes == 0) return spec;
  const std::int64_t gpus = std::int64_t{nodes} * spec.gpus_per_node;
  if (gpus > kMaxClusterGpus) {
    return Status::InvalidArgument(
        fmt::format("--nodes = {}: {} nodes x {} GPUs = {} GPUs, more than the limit of {}", nodes,
                    nodes, spec.gpus_per_node, gpus, kMaxClusterGpus));
  }
  spec.nodes = nodes;
  return spec;
}

}  // namespace pipette
