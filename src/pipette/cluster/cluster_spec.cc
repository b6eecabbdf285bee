#include "pipette/cluster/cluster_spec.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace pipette {

std::string_view TopologyName(Topology topology) {
  switch (topology) {
    case Topology::kSingleSwitch:
      return "single-switch";
    case Topology::kFatTree:
      return "fat-tree";
    case Topology::kRailOptimised:
      return "rail-optimised";
  }
  return "?";
}

namespace {

int CeilDiv(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Uplink ports of a switch with `down` downlink ports at oversubscription `ratio`.
std::int64_t UplinkPorts(std::int64_t down, double ratio) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(down) / ratio - 1e-9));
}

}  // namespace

FabricSummary SummarizeFabric(const ClusterSpec& c) {
  FabricSummary s;
  const double nic = c.inter_node.bandwidth;
  s.injection = static_cast<double>(c.nodes) * c.nics_per_node * nic;
  s.bisection = s.injection / 2;
  if (c.topology == Topology::kSingleSwitch) return s;
  const FabricSpec& f = c.fabric;
  const double o1 = f.oversubscription.empty() ? 1.0 : f.oversubscription[0];
  const double o2 = f.oversubscription.size() > 1 ? f.oversubscription[1] : 1.0;
  const double port = c.FabricLinkBandwidth();
  const int groups = CeilDiv(c.nodes, f.nodes_per_leaf);  // leaves, or SUs
  // Ports each leaf has down (its nodes' NICs; a rail leaf: one per node of its SU).
  const std::int64_t down = c.topology == Topology::kRailOptimised
                                ? f.nodes_per_leaf
                                : std::int64_t{f.nodes_per_leaf} * c.nics_per_node;
  s.leaves = c.topology == Topology::kRailOptimised ? groups * c.nics_per_node : groups;
  const std::int64_t leaf_up = UplinkPorts(down, o1);
  // Across the leaves' uplinks: every node's NICs at the port rate, over o1.
  const double across_leaves =
      std::min(s.injection, static_cast<double>(c.nodes) * c.nics_per_node * port / o1) / 2;
  if (groups > 1) s.bisection = across_leaves;
  if (c.topology == Topology::kFatTree && f.levels == 3) {
    s.pods = CeilDiv(s.leaves, f.leaves_per_pod);
    const std::int64_t pod_down = std::int64_t{f.leaves_per_pod} * leaf_up;
    const std::int64_t pod_up = UplinkPorts(pod_down, o2);
    s.spines = s.pods * CeilDiv(pod_down + pod_up, f.radix) + CeilDiv(s.pods * pod_up, f.radix);
    if (s.pods > 1) s.bisection = across_leaves / o2;
    if (s.pods == 1) s.spines = CeilDiv(pod_down, f.radix);
  } else if (s.leaves > 1) {
    s.spines = CeilDiv(s.leaves * leaf_up, f.radix);
  }
  return s;
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
