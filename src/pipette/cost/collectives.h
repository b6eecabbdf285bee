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

// Chunks the tree all-reduce pipelines each tree's half of the bytes in (sim/collectives.h).
inline constexpr int kTreeAllReduceChunks = 8;

// Depth of a binary heap of `ranks` nodes: floor(log2(ranks)) (0 for one rank).
inline int TreeDepth(int ranks) {
  int depth = 0;
  while ((2 << depth) <= ranks) ++depth;
  return depth;
}

// Double binary tree all-reduce (NCCL's, sim/collectives.h) of `bytes` over `ranks` GPUs, every
// hop over `link`: two trees of depth D = TreeDepth(ranks), each carrying bytes/2, reduce up then
// broadcast down, pipelined in G = `chunks` chunks, every message capped at half the link's
// bandwidth (a port carries two tree flows at once): a chunk hop takes alpha + bytes/(G beta) and
// each phase D + G - 1 of them: 2(D + G - 1)(alpha + bytes / (G beta)). 0 for one rank or no bytes.
inline double TreeAllReduceSeconds(int ranks, double bytes, const LinkSpec& link,
                                   int chunks = kTreeAllReduceChunks) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return 2.0 * (TreeDepth(ranks) + chunks - 1) * (link.latency + bytes / (chunks * link.bandwidth));
}

}  // namespace pipette
