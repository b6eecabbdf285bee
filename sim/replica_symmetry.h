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

}  // namespace pipette
