#include "sim/replica_symmetry.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <utility>

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

// Every ordered pair of ranks that exchange a message in `program`, both directions.
std::vector<std::pair<int, int>> MessagePairs(const Program& program) {
  std::set<std::pair<int, int>> pairs;
  for (const RankProgram& rank : program.ranks) {
    for (const Instruction& ins : rank.instructions) {
      if (ins.peer < 0 || ins.peer == rank.rank) continue;
      pairs.insert({rank.rank, ins.peer});
      pairs.insert({ins.peer, rank.rank});
    }
  }
  return {pairs.begin(), pairs.end()};
}

int Root(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// A group's replicas (ascending) as numbers: per replica its ranks' hosts (speed, cores), then per
// message pair the route's latency and links, each link as its first appearance in the group (so
// the pattern of links shared inside the group counts) with its bandwidth, latency and policy.
std::vector<double> Signature(const std::vector<int>& group,
                              const std::vector<std::vector<std::vector<sg4::Link*>>>& links,
                              const std::vector<std::vector<double>>& latency,
                              const std::vector<sg4::Host*>& hosts, int p) {
  std::vector<double> sig{static_cast<double>(group.size())};
  std::unordered_map<const sg4::Link*, int> local;
  for (const int d : group) {
    for (int r = 0; r < p; ++r) {
      sig.push_back(hosts[static_cast<std::size_t>(d) * p + r]->get_speed());
      sig.push_back(hosts[static_cast<std::size_t>(d) * p + r]->get_core_count());
    }
    for (std::size_t k = 0; k < links[d].size(); ++k) {
      sig.push_back(latency[d][k]);
      sig.push_back(static_cast<double>(links[d][k].size()));
      for (const sg4::Link* link : links[d][k]) {
        const auto [it, fresh] = local.try_emplace(link, static_cast<int>(local.size()));
        sig.push_back(it->second);
        if (!fresh) continue;
        sig.push_back(link->get_bandwidth());
        sig.push_back(link->get_latency());
        sig.push_back(static_cast<double>(link->get_sharing_policy()));
      }
    }
  }
  return sig;
}

}  // namespace

ReplicaClasses DistinctReplicas(const Program& program, const std::vector<sg4::Host*>& hosts,
                                int replicas) {
  const int p = program.p;
  const std::vector<std::pair<int, int>> pairs = MessagePairs(program);
  std::vector<std::vector<std::vector<sg4::Link*>>> links(replicas);
  std::vector<std::vector<double>> latency(replicas);
  std::vector<int> parent(replicas);
  std::iota(parent.begin(), parent.end(), 0);
  std::unordered_map<const sg4::Link*, int> user;  // link -> a replica crossing it
  for (int d = 0; d < replicas; ++d) {
    for (const auto& [a, b] : pairs) {
      std::vector<sg4::Link*> route;
      double lat = 0;
      hosts[static_cast<std::size_t>(d) * p + a]->route_to(
          hosts[static_cast<std::size_t>(d) * p + b], route, &lat);
      for (const sg4::Link* link : route) {
        const auto [it, fresh] = user.try_emplace(link, d);
        if (!fresh) parent[Root(parent, d)] = Root(parent, it->second);
      }
      links[d].push_back(std::move(route));
      latency[d].push_back(lat);
    }
  }
  std::map<int, std::vector<int>> groups;  // root -> replicas, ascending
  for (int d = 0; d < replicas; ++d) groups[Root(parent, d)].push_back(d);
  std::vector<std::vector<int>> ordered;  // by first replica
  for (auto& [root, group] : groups) ordered.push_back(std::move(group));
  std::sort(ordered.begin(), ordered.end());

  std::map<std::vector<double>, std::size_t> first_alike;  // signature -> group in `ordered`
  std::vector<std::size_t> representative(ordered.size());
  for (std::size_t g = 0; g < ordered.size(); ++g) {
    representative[g] =
        first_alike.try_emplace(Signature(ordered[g], links, latency, hosts, p), g).first->second;
  }
  ReplicaClasses classes;
  classes.stands_for.assign(replicas, -1);
  for (std::size_t g = 0; g < ordered.size(); ++g) {
    if (representative[g] != g) continue;
    for (const int d : ordered[g]) classes.simulated.push_back(d);
  }
  std::sort(classes.simulated.begin(), classes.simulated.end());
  std::vector<int> index(replicas, -1);
  for (std::size_t i = 0; i < classes.simulated.size(); ++i) {
    index[classes.simulated[i]] = static_cast<int>(i);
  }
  for (std::size_t g = 0; g < ordered.size(); ++g) {
    const std::vector<int>& rep = ordered[representative[g]];
    for (std::size_t k = 0; k < ordered[g].size(); ++k) {
      classes.stands_for[ordered[g][k]] = index[rep[k]];
    }
  }
  return classes;
}

}  // namespace pipette
