#include "pipette/cluster/cluster_spec.h"

#include <fmt/core.h>

namespace pipette {

std::string_view TopologyName(Topology topology) {
  switch (topology) {
    case Topology::kSingleSwitch:
      return "single-switch";
    case Topology::kFatTree:
      return "fat-tree";
  }
  return "?";
}

Result<std::vector<double>> RelativeRankSpeeds(const ClusterSpec& cluster, DType dtype, int pp,
                                               int tp) {
  auto peak = [&](const GpuSpec& gpu) -> Result<double> {
    const auto it = gpu.peak_flops.find(dtype);
    if (it == gpu.peak_flops.end()) {
      return Status::InvalidArgument(fmt::format("cluster '{}': GPU {} has no {} peak (gpu.tflops)",
                                                 cluster.name, gpu.name, DTypeName(dtype)));
    }
    return it->second;
  };
  PIPETTE_ASSIGN_OR_RETURN(const double reference, peak(cluster.gpu));
  std::vector<double> speeds;
  for (int r = 0; r < pp; ++r) {
    const std::int64_t index = std::int64_t{r} * tp;
    if (index >= cluster.world_size()) {
      return Status::InvalidArgument(
          fmt::format("cluster '{}': pipeline rank {} needs GPU {}, but it has {}", cluster.name, r,
                      index, cluster.world_size()));
    }
    PIPETTE_ASSIGN_OR_RETURN(const double own, peak(cluster.GpuAt(static_cast<int>(index))));
    speeds.push_back(own / reference);
  }
  return speeds;
}

}  // namespace pipette
