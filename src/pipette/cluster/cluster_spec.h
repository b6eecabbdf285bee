// ClusterSpec: a GPU cluster as the cost model and the simulator see it.
//
// nodes x gpus_per_node GPUs; one GPU type, or several (node_groups: mixed devices); an intra-node
// fabric (NVLink/NVSwitch: each GPU limited by its own port, bandwidth per direction per GPU) and
// an inter-node fabric (InfiniBand: bandwidth per NIC; nics_per_node NICs, one per GPU on DGX
// systems). Bandwidths are bytes/s per direction, latencies seconds, FLOP/s dense (no sparsity).
// Plain value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/model/dtype.h"

namespace pipette {

struct GpuSpec {
  std::string name;                    // "H100-SXM5-80GB"
  std::map<DType, double> peak_flops;  // dense tensor-core FLOP/s per dtype
  std::int64_t memory_bytes = 0;       // HBM capacity
  double hbm_bandwidth = 0;            // bytes/s
  friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

struct LinkSpec {
  double bandwidth = 0;  // bytes/s per direction
  double latency = 0;    // seconds
};

// The inter-node fabric. kSingleSwitch: every node's uplink on one non-blocking switch.
// kFatTree: nodes under leaf switches, leaves under spines (and, with 3 levels, pods of leaves
// under a core), each tier's uplinks possibly oversubscribed. kRailOptimised: DGX SuperPOD style,
// NIC k of every node of a scalable unit (SU) on rail leaf k of that SU, leaves under spines.
enum class Topology { kSingleSwitch, kFatTree, kRailOptimised };

// "single-switch", "fat-tree", "rail-optimised" (the spellings cluster files use).
std::string_view TopologyName(Topology topology);

// The switch tiers above the NICs (ClusterSpec::fabric; unused by kSingleSwitch). Capacities are
// fluid: a tier's uplink is one link of the summed bandwidth of its uplink ports (traffic spread
// evenly over them, as adaptive routing or ECMP does), so a 2:1 tier carries half what enters it.
struct FabricSpec {
  int levels = 2;           // fat-tree: 2 (leaf-spine) or 3 (leaf-spine-core); rail-optimised: 2
  int nodes_per_leaf = 4;   // fat-tree: nodes under one leaf; rail-optimised: nodes per SU
  int leaves_per_pod = 32;  // fat-tree with 3 levels: leaves under one pod's spines
  int radix = 64;           // ports per switch (for the switch counts `pipette clusters` shows)
  // Per tier, bottom up (leaf uplinks, then pod uplinks): downlink over uplink bandwidth, >= 1
  // (1: non-blocking, 2: "2:1").
  std::vector<double> oversubscription = {1.0, 1.0};
  double link_bandwidth = 0;  // bytes/s per direction of one switch port (0: the NIC's)
  double hop_latency = 0;     // seconds added per switch-to-switch link a route crosses
  friend bool operator==(const FabricSpec&, const FabricSpec&) = default;
};

// The fabric's numbers as `pipette clusters` prints them (closed forms, docs/clusters.md).
struct FabricSummary {
  int leaves = 0;        // leaf switches (rail-optimised: rail leaves, SUs x rails)
  int pods = 0;          // fat-tree with 3 levels: pods; else 0
  int spines = 0;        // switches above the leaves (spine and core), from the radix
  double bisection = 0;  // bytes/s per direction across the worst halving of the nodes
  double injection = 0;  // bytes/s per direction of every NIC together
};

// The most GPUs (nodes x gpus_per_node) a cluster may have: world_size() and every rank count
// derived from it then fit in an int.
inline constexpr int kMaxClusterGpus = 1 << 20;

// The most GPUs one node may have: its GPUs form one fully connected zone in the simulator, whose
// routes grow with the square of the GPUs used in it (NVL72 racks have 72; a 576-GPU NVLink domain
// fits).
inline constexpr int kMaxGpusPerNode = 1024;

// The slowest hardware a cluster may describe: below these floors a layer or a message takes
// longer than any duration pipette accepts (common/duration_limit.h), and SimGrid cannot run it.
inline constexpr double kMinFlops = 1e9;      // FLOP/s of a GPU for a dtype (1 GFLOP/s)
inline constexpr double kMinBandwidth = 1e6;  // bytes/s of HBM or a link (1 MB/s)
inline constexpr double kMaxLinkLatency = 1;  // seconds per message start-up

// Mixed GPU types: the nodes of a group hold its GPU instead of the cluster's `gpu`.
struct NodeGroup {
  std::vector<int> nodes;  // node indices, ascending, distinct
  GpuSpec gpu;
  friend bool operator==(const NodeGroup&, const NodeGroup&) = default;
};

struct ClusterSpec {
  std::string name;    // preset name or file
  std::string source;  // where the figures come from (datasheet, paper)
  int nodes = 1;
  int gpus_per_node = 8;
  GpuSpec gpu;
  LinkSpec intra_node;  // per GPU port
  LinkSpec inter_node;  // per NIC
  int nics_per_node = 8;
  Topology topology = Topology::kSingleSwitch;
  FabricSpec fabric;  // kFatTree and kRailOptimised only

  // Nodes whose GPU differs from `gpu` (no node in two groups); empty: one GPU type.
  std::vector<NodeGroup> node_groups;

  int world_size() const { return nodes * gpus_per_node; }
  // The GPU of node `node` (its group's, else `gpu`).
  const GpuSpec& GpuOfNode(int node) const {
    for (const NodeGroup& group : node_groups) {
      for (int n : group.nodes) {
        if (n == node) return group.gpu;
      }
    }
    return gpu;
  }
  // The GPU with global index `index` (node * gpus_per_node + local index).
  const GpuSpec& GpuAt(int index) const { return GpuOfNode(index / gpus_per_node); }
  // The bandwidth of one switch port (fabric.link_bandwidth, else the NIC's).
  double FabricLinkBandwidth() const {
    return fabric.link_bandwidth > 0 ? fabric.link_bandwidth : inter_node.bandwidth;
  }
};

// Leaf, pod and spine counts, the bisection bandwidth (the worst halving of the nodes: half the
// injection bandwidth divided by the product of the oversubscriptions a halving crosses; a single
// switch and a 1:1 tree: half the injection) and the injection bandwidth of `cluster`.
FabricSummary SummarizeFabric(const ClusterSpec& cluster);

// Mixed GPU types with per-chunk costs measured on the cluster's [gpu]: per pipeline rank r (on GPU
// r * tp, replica 0's mapping), the peak FLOP/s of its GPU for `dtype` over the [gpu]'s, i.e. the
// rank speeds (schedule/uneven_work.h) of the cluster. All 1 for one GPU type. Errors: a GPU
// without a peak for `dtype`, a rank beyond the cluster's GPUs.
Result<std::vector<double>> RelativeRankSpeeds(const ClusterSpec& cluster, DType dtype, int pp,
                                               int tp = 1);

}  // namespace pipette
