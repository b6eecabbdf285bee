// Simulator: runs lowered pipeline programs on a SimGrid 3.32 platform, one actor per rank, each
// through the interpreter loop shared with the real engines (RunRank). SimGrid calls live only in
// sim/.
//
// A case runs either on a cluster platform (cluster_platform.h: NVLink ports, rail NICs, node
// uplinks; messages of their real size) or on an ideal network: every message takes exactly the
// case's fixed latency (CM02 without cross-traffic or TCP-gamma bound; unbounded bandwidth, so
// messages are simulated as 0 bytes while the trace keeps their real size). A send starts a
// host-to-host transfer at once, whether or not the receiver is ready: evaluate()'s model. The
// cluster platform (NVLink stars, InfiniBand fat-tree), data parallelism and memory tracking build
// on this.
//
// SimGrid allows one engine per process, so Simulate() runs every case it is given side by side in
// one engine (separate hosts and links: the cases do not interact) and may be called
// once per process.
#pragma once

#include <vector>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/program.h"

namespace pipette {

struct SimulationCase {
  const Program* program = nullptr;
  Costs costs;         // one entry per stage, seconds
  MessageSizes sizes;  // bytes per message (traced; simulated on a cluster)
  double latency = 0;  // ideal network: seconds per message
  // A cluster instead of the ideal network: rank r of replica d runs on GPU
  // gpu_of_rank[d * p + r] (node * gpus_per_node + gpu) and messages of their real size cross the
  // platform of cluster_platform.h. nullptr: the ideal network.
  const ClusterSpec* cluster = nullptr;
  std::vector<int> gpu_of_rank;
  // Data-parallel replicas of the pipeline run side by side on the cluster, each with its own
  // actors and messages, contending for the links they share. 1 on the ideal network.
  int replicas = 1;
};

struct SimulationResult {
  double makespan = 0;  // seconds from the common start to the end of the last action
  double bubble_ratio = 0;
  std::vector<double> busy;       // per rank
  std::vector<TraceEvent> trace;  // every executed instruction, rank by rank, in program order
  // Per replica, per rank: the end of the rank's last action. The fields above describe replica 0.
  std::vector<std::vector<double>> rank_end;
};

// Returns one result per case, or FailedPrecondition on a second call in the same process, or
// InvalidArgument for a case without a program, with costs of the wrong shape, a negative or
// non-finite latency, replicas < 1 (or > 1 on the ideal network), or a GPU mapping that is not one
// distinct GPU of the cluster per rank of every replica.
Result<std::vector<SimulationResult>> Simulate(const std::vector<SimulationCase>& cases);

}  // namespace pipette
