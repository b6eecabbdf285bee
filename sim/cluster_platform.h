// ClusterPlatform: a ClusterSpec as a SimGrid 3.32 platform, built inside the running engine.
//
// One host per GPU, speed 1 flop/s (the engine executes the cost model's seconds). Inside a node
// (a full zone): every GPU has a split-duplex NVLink port to the NVSwitch (bandwidth per direction
// per GPU) and its own InfiniBand NIC (rail-optimised, one per GPU; with fewer NICs than GPUs the
// GPUs share them evenly); GPU-to-GPU routes cross the sender's port up and the receiver's down,
// each with half the NVLink latency, so a message of S bytes takes latency + S / bandwidth.
// Between nodes a route leaves through the sender's NIC, the node's uplink (the NICs' total
// bandwidth) and a single switch, and enters through the receiver's node uplink and NIC: half the
// InfiniBand latency on each NIC, none on the uplinks. That is topology single-switch; fat-tree and
// rail-optimised fabrics are built by fabric_platform.h, with the same hosts, NVLink ports and
// NICs.
//
// Only the GPUs a job uses are built, with the NICs they use and the nodes holding them: a 2-GPU
// job on 8192 nodes builds one node and two hosts. A node's zone is fully connected, so its routes
// grow with the square of its GPUs in use (at most kMaxGpusPerNode).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipette/cluster/cluster_spec.h"

namespace simgrid::s4u {
class Host;
class NetZone;
}  // namespace simgrid::s4u

namespace pipette {

// Mirror hosts, for the MoE all-to-all under replica symmetry (replica_symmetry.h): a GPU's
// message to a peer whose replica is a copy of its own goes, in the replicas that run, to one of
// its mirrors instead of to itself. The mirror of GPU g at level L is a host whose route from g
// climbs the tiers a route from g to a GPU at level L climbs, over g's own links, and comes back
// down over g's own links: 0, same node: g's NVLink port up and down; 1 on the single switch,
// another node: g's NIC up, its node's uplink up and down, its NIC down. Fat-tree: 1, same leaf:
// NIC, node uplink up and down, NIC; 2, same pod: the leaf's uplink up and down in between; 3,
// another pod: the pod's uplink too. Rail-optimised: 1, the same rail of the same scalable unit:
// NIC up and down; 2, otherwise: the rail leaf's uplink up and down in between. Each link of such
// a route is the one standing for the real route's link in its orbit when the shift maps the
// peer's links onto g's; ReplicaPeriod checks that it does. Routes from a mirror, or to another
// GPU's mirror, are not defined: never asked for, since the engine runs without cross-traffic
// (sim_engine.cc: a comm loads its route only, not the reverse route's links).
int MirrorLevels(const ClusterSpec& cluster);
// The level of the route between distinct GPUs `a` and `b` (each node * gpus_per_node + gpu).
int MirrorLevel(const ClusterSpec& cluster, int a, int b);

// The mirrors of the GPUs a platform was built for, in the order asked (as ClusterPlatform::gpus:
// a case's rank hosts, rank r of replica d at d * p + r).
struct MirrorHosts {
  const ClusterSpec* cluster = nullptr;
  std::vector<int> gpu;                                 // per GPU asked for: its index
  std::vector<std::vector<simgrid::s4u::Host*>> hosts;  // per GPU asked for: mirrors by level

  bool empty() const { return hosts.empty(); }
  // The mirror of GPU `from` (its position in the order asked) standing for GPU `to` (another)
  // seen from it.
  simgrid::s4u::Host* Of(std::size_t from, std::size_t to) const {
    return hosts[from][MirrorLevel(*cluster, gpu[from], gpu[to])];
  }
};

struct ClusterPlatform {
  std::vector<simgrid::s4u::Host*> gpus;  // the host of each GPU asked for, in the order asked
  int nodes = 0;                          // nodes built (those holding a GPU asked for)
  MirrorHosts mirrors;                    // built on request; empty otherwise
};

// Builds the GPUs `gpus` (each node * gpus_per_node + gpu, distinct; empty: every GPU) of
// `cluster` with names starting with `prefix`, as a child of `parent` (nullptr: as the engine's
// root zone), with MirrorLevels mirrors per GPU when `mirrors`. REQUIRES: a SimGrid engine exists
// and the network model is configured (MakeEngine); every GPU in [0, world_size()).
ClusterPlatform BuildClusterPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                     simgrid::s4u::NetZone* parent = nullptr,
                                     const std::vector<int>& gpus = {}, bool mirrors = false);

// Routes the platform of `gpus` holds, or their worth in memory (what BuildClusterPlatform's cost
// grows with): on a single switch the sum over its nodes of u(u-1) + 2u for u GPUs in use there,
// plus kRoutesPerSwitchGpu per GPU; on a fat-tree or rail-optimised fabric, which stores no routes
// (fabric_platform.h), kRoutesPerFabricLink per link it builds. With `mirrors`, each mirror host
// counts as a GPU's worth more. Empty `gpus`: every GPU.
std::int64_t ClusterPlatformRoutes(const ClusterSpec& cluster, const std::vector<int>& gpus,
                                   bool mirrors = false);

// The platform in routes' worth of memory, at the 150 bytes per route simulation_size.h charges,
// measured as the growth of a whole simulation's peak memory with the GPUs when a few replicas run
// for all (llama2-7b pp 16, ring reduction, dp 1,024 to 6,400: 16,384 to 102,400 GPUs;
// sim/README.md): on the single switch 6.6 KB per GPU, of which its 9 routes (8 GPUs per node)
// count 1.35 KB: a GPU's host, NVLink port and NIC are worth 35 routes more; on the rail-optimised
// fabric 5.1 KB per GPU, two links each (NVLink port, NIC), and 2.1 KB per link when only the
// platform is built (benchmarks/fabric_platform_benchmark): 15 routes' worth per link (with its
// share of the hosts).
inline constexpr std::int64_t kRoutesPerSwitchGpu = 35;
inline constexpr std::int64_t kRoutesPerFabricLink = 15;

// The used GPUs of every node that has one: node -> its GPU indices inside the node, ascending.
// Empty `gpus`: every GPU.
std::map<int, std::vector<int>> UsedByNode(const ClusterSpec& cluster,
                                           const std::vector<int>& gpus);

}  // namespace pipette
