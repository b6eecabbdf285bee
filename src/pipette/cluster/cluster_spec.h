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

enum class Topology { kSingleSwitch, kFatTree };

// "single-switch", "fat-tree" (the spellings cluster files use).
std::string_view TopologyName(Topology topology);

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
  Topology topology = Topology::kFatTree;

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
};

// Mixed GPU types with per-chunk costs measured on the cluster's [gpu]: per pipeline rank r (on GPU
// r * tp, replica 0's mapping), the peak FLOP/s of its GPU for `dtype` over the [gpu]'s, i.e. the
// rank speeds (schedule/uneven_work.h) of the cluster. All 1 for one GPU type. Errors: a GPU
// without a peak for `dtype`, a rank beyond the cluster's GPUs.
Result<std::vector<double>> RelativeRankSpeeds(const ClusterSpec& cluster, DType dtype, int pp,
                                               int tp = 1);

}  // namespace pipette
