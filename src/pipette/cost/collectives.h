// Analytic collective times (alpha-beta), shared by the cost model (tensor-parallel all-reduce)
// and the simulator (data-parallel gradient all-reduce at scale, where simulating every message
// of a ring is O(n^2)).
#pragma once

#include "pipette/cluster/cluster_spec.h"

namespace pipette {

// Ring all-reduce of `bytes` over `ranks` GPUs whose slowest ring hop is `link`: 2(n-1) steps,
// each moving bytes/n: 2(n-1)(alpha + bytes / (n beta)). 0 for one rank or no bytes.
inline double RingAllReduceSeconds(int ranks, double bytes, const LinkSpec& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return 2.0 * (ranks - 1) * (link.latency + bytes / (ranks * link.bandwidth));
}

}  // namespace pipette
