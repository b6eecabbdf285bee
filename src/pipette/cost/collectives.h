// Analytic collective times (alpha-beta), shared by the cost model (tensor-parallel all-reduce)
// and the simulator (data-parallel gradient all-reduce at scale, where simulating every message
// of a ring is O(n^2)).
#pragma once

#include <algorithm>
#include <span>

#include "pipette/cluster/cluster_spec.h"

namespace pipette {

// Ring all-reduce of `bytes` over `ranks` GPUs whose slowest ring hop is `link`: 2(n-1) steps,
// each moving bytes/n: 2(n-1)(alpha + bytes / (n beta)). 0 for one rank or no bytes.
inline double RingAllReduceSeconds(int ranks, double bytes, const LinkSpec& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return 2.0 * (ranks - 1) * (link.latency + bytes / (ranks * link.bandwidth));
}

// All-to-all among `ranks` GPUs (MoE dispatch or combine) where each GPU sends `bytes` in all,
// bytes/ranks to each of the others, every message at once over one kind of link: the GPU's port
// carries its ranks-1 messages, so alpha + (n-1)/n * bytes / beta. 0 for one rank or no bytes.
inline double AllToAllSeconds(int ranks, double bytes, const LinkSpec& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return link.latency + (ranks - 1) * bytes / (ranks * link.bandwidth);
}

// The peers of one GPU in an all-to-all that it reaches over one kind of link (NVLink inside its
// node, its NIC across nodes).
struct AllToAllPeers {
  LinkSpec link;
  int peers = 0;
};

// One aggregated all-to-all phase of `layers` MoE layers (the simulator's model: sim/README.md):
// each GPU sends `bytes` (the layers' sum) in all, bytes/ranks to each peer; the kinds of link run
// in parallel, each port shared by the messages that cross it. The layers' latencies add up: the
// phase waits (layers - 1) x the slowest used kind's latency, then every message starts at once:
//   (layers - 1) max alpha + max over kinds (alpha + peers * bytes / (ranks * beta)).
// With every peer over one link this is layers * alpha + (n-1)/n * bytes / beta. 0 for no bytes,
// no layer or no peer.
inline double AllToAllSeconds(int ranks, double bytes, int layers,
                              std::span<const AllToAllPeers> kinds) {
  if (ranks <= 1 || bytes <= 0 || layers <= 0) return 0;
  double latency = 0, slowest = 0;
  for (const AllToAllPeers& k : kinds) {
    if (k.peers <= 0) continue;
    latency = std::max(latency, k.link.latency);
    slowest = std::max(slowest, k.link.latency + k.peers * bytes / (ranks * k.link.bandwidth));
  }
  return slowest > 0 ? (layers - 1) * latency + slowest : 0;
}

}  // namespace pipette
