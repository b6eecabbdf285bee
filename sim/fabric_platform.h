// FabricPlatform: a fat-tree or rail-optimised cluster (ClusterSpec::fabric) as one SimGrid 3.32
// netzone that holds the used GPUs' hosts and computes every route from their coordinates when
// SimGrid asks for it, as SimGrid's own FatTreeZone does: no route table, so a platform costs
// O(used GPUs + used switches), whatever the cluster's size.
//
// Links (split-duplex, bandwidth per direction; docs/clusters.md has the closed forms):
// - per used GPU, its NVLink port (intra_node, half its latency each way), and per used NIC its
//   InfiniBand link (inter_node, half its latency at each end of a route);
// - fat-tree: per used node its uplink to its leaf (the NICs' total, no latency); per used leaf
//   its uplink to the spines, nodes_per_leaf x nics x port bandwidth / oversubscription[0]; with
//   3 levels per used pod its uplink to the core, leaves_per_pod x a leaf uplink /
//   oversubscription[1]; each switch-to-switch link adds fabric.hop_latency;
// - rail-optimised: per used (SU, rail) the rail leaf's uplink to the spines, nodes_per_leaf x
//   port bandwidth / oversubscription[0], hop_latency.
// Routes: same node: NVLink up, NVLink down. Fat-tree: NIC, node uplink, [leaf up, [pod up, pod
// down], leaf down,] node downlink, NIC (the bracketed tiers only when the nodes' leaves, pods,
// differ). Rail-optimised: NIC, [rail leaf up, rail leaf down,] NIC, the brackets unless both
// GPUs' NICs are on the same rail of the same SU (one leaf crossed). A tier's uplink is one link
// of its ports' total bandwidth: traffic spread evenly over the ports (adaptive routing).
//
// Why not sg4::create_fatTree_zone: in 3.32 it builds every leaf of the tree (the netpoint
// callback runs for every node of a 131,072-GPU cluster), gives every link of the tree one
// bandwidth and latency, routes each pair over one path chosen by destination (D-mod-k: a node's
// eight NICs sending to one node share one cable), and numbers its leaves with a process-wide
// static counter, so a second fat-tree in one process (Simulate() builds one platform per case)
// misroutes. Rail-optimised has no SimGrid builder: a leaf per (SU, NIC index) cannot be a zone
// hierarchy, since a node's zone reaches its parent through one gateway.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipette/cluster/cluster_spec.h"
#include "sim/cluster_platform.h"

namespace pipette {

// A GPU's host and, when built, its mirrors by level (cluster_platform.h).
struct GpuHosts {
  simgrid::s4u::Host* host = nullptr;
  std::vector<simgrid::s4u::Host*> mirrors;
};

// Builds the GPUs `used` (node -> its GPU indices, ascending) of `cluster` (topology fat-tree or
// rail-optimised) with names starting with `prefix`, as a child of `parent` (nullptr: the root
// zone), with `mirrors` each GPU's MirrorLevels mirrors (routed from it as cluster_platform.h
// says); returns each GPU's hosts by GPU index. REQUIRES: as BuildClusterPlatform.
std::map<int, GpuHosts> BuildFabricPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                            simgrid::s4u::NetZone* parent,
                                            const std::map<int, std::vector<int>>& used,
                                            bool mirrors = false);

// The split-duplex links BuildFabricPlatform creates for `used` (what its cost grows with).
std::int64_t FabricPlatformLinks(const ClusterSpec& cluster,
                                 const std::map<int, std::vector<int>>& used);

}  // namespace pipette
