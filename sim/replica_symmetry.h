// Replica symmetry: which data-parallel replicas of a cluster case must be simulated.
//
// SimGrid couples two comms only through a link both cross (CM02 without cross-traffic: no other
// shared resource on the network; each rank computes on its own host). Replicas whose routes share
// a link form a group that must run together; replicas in different groups never interact on the
// network. Two groups whose routes are the same sequences of links of the same bandwidth, latency
// and sharing policy, shared among the group's own routes in the same pattern, run the same
// program with the same costs, so every instruction of the one starts and ends when it does in the
// other: simulating one of them gives the other's times. The barriers over replicas (the
// data-parallel all-reduce, the step barrier) release at the latest arrival, the same whether the
// copies run or not. (On a non-blocking single switch with whole nodes per replica every replica
// is its own group and all are alike: one replica is simulated for all.)
#pragma once

#include <vector>

#include "pipette/schedule/program.h"
#include "sim/cluster_platform.h"

namespace simgrid::s4u {
class Host;
}  // namespace simgrid::s4u

namespace pipette {

// The replicas to simulate, ascending (the first is 0), and for every replica the index in that
// list of the one standing for it. `hosts`: rank r of replica d on hosts[d * program.p + r].
// Routes checked: between every pair of ranks that exchange a message in `program` (both
// directions). REQUIRES: the platform is sealed.
struct ReplicaClasses {
  std::vector<int> simulated;
  std::vector<int> stands_for;  // per replica: index into `simulated`
};
ReplicaClasses DistinctReplicas(const Program& program,
                                const std::vector<simgrid::s4u::Host*>& hosts, int replicas);

// The flows between replicas that a period must map onto themselves, besides the program's
// messages inside each replica.
struct ReplicaFlows {
  bool ring = false;      // ring all-reduces: member d sends to d + 1 mod n
  int expert_stride = 1;  // > 1 and < n: expert rings too, d to d + expert_stride mod n
  // > 1: the MoE all-to-all over groups of ep consecutive replicas: rank r of replica d sends to
  // rank r of every other replica of its group. Below n, a period holds whole groups (a multiple
  // of ep); at n (one group) any period may, and a message to a copy of d's own replica goes to a
  // mirror of d's rank (cluster_platform.h) from `mirrors` (without them no period below n).
  int ep = 1;
  const MirrorHosts* mirrors = nullptr;
};

// Period symmetry: with rings or an all-to-all over the replicas every replica interacts with
// others, so no replica is alone; but where shifting every replica by k (d -> d + k mod n) maps
// the whole network onto itself, replica d + k does at every moment what replica d does, and only
// replicas 0 .. k-1 need to run: a flow that would reach replica e >= k goes to replica e mod k
// instead (an all-to-all message to a copy of its sender's own replica: to the sender's mirror),
// over the route that stands for the real one. Exact (every event of the first k replicas, every
// collective's and phase's times) when:
//  (a) the shift is an automorphism: zipping the route of every flow (the program's messages in
//      every replica, both directions; every ring hop; every all-to-all message) with the route of
//      its shifted flow gives one bijection of links that keeps bandwidth, latency and sharing
//      policy (and every route's latency);
//  (b) it moves every link: each link's orbit under it has n/k links, so a link carries exactly one
//      copy of each flow that crosses its orbit;
//  (c) the first k replicas' flows, with those past replica k - 1 sent to their image, cross one
//      link of each orbit their real routes cross, in the same order, and none twice.
// Then each link of the k replicas carries what each link of its orbit carries in the full run,
// every flow gets the rate of its copies, and every time is the full run's (a comm loads only its
// route's links: the engine runs without cross-traffic; compute never shares a host here; bit for
// bit in every layout tested, up to the order in which SimGrid's solver adds a link's flows in
// general). Returns the smallest k < n dividing n (a multiple of `flows.expert_stride` and of
// `flows.ep` where they are > 1 and < n) that passes, or n (every replica runs). `hosts`: rank r of
// replica d on hosts[d * program.p + r]. REQUIRES: the platform is sealed; replicas >= 1, divisible
// by flows.ep.
int ReplicaPeriod(const Program& program, const std::vector<simgrid::s4u::Host*>& hosts,
                  int replicas, const ReplicaFlows& flows);

// The fewest replicas a period can run where an MoE all-to-all spans groups of `ep` (1: none):
// one where it spans every replica (mirrors) or there is none, else a whole group.
inline int FewestReplicasRunning(int replicas, int ep) { return ep > 1 && ep < replicas ? ep : 1; }

}  // namespace pipette
