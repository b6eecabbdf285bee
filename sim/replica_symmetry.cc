#include "sim/replica_symmetry.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
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

namespace {

struct Route {
  std::vector<sg4::Link*> links;
  double latency = 0;
};

Route RouteOf(sg4::Host* from, sg4::Host* to) {
  Route route;
  from->route_to(to, route.links, &route.latency);
  return route;
}

// A flow of every replica d: from its rank `from` to rank `to` of replica d + shift (mod n); with
// `ep` > 1 an all-to-all message, to replica d + shift inside d's group of ep (mod ep), which may
// stand for one to a copy of d's replica (a mirror).
struct FlowKind {
  int from = 0, to = 0, shift = 0;
  int ep = 0;

  int Target(int d, int n) const {
    if (ep <= 1) return (d + shift) % n;
    const int base = d / ep * ep;
    return base + (d - base + shift) % ep;
  }
};

// The program's messages (both directions), the ring hops and the all-to-all messages of every
// rank.
std::vector<FlowKind> FlowKinds(const Program& program, int replicas, const ReplicaFlows& flows) {
  std::vector<FlowKind> kinds;
  for (const auto& [a, b] : MessagePairs(program)) kinds.push_back({a, b, 0});
  for (int r = 0; r < program.p; ++r) {
    if (flows.ring && replicas > 1) kinds.push_back({r, r, 1});
    if (flows.expert_stride > 1 && flows.expert_stride < replicas) {
      kinds.push_back({r, r, flows.expert_stride});
    }
    for (int shift = 1; shift < flows.ep; ++shift) kinds.push_back({r, r, shift, flows.ep});
  }
  return kinds;
}

bool AlikeLinks(const sg4::Link* x, const sg4::Link* y) {
  return x->get_bandwidth() == y->get_bandwidth() && x->get_latency() == y->get_latency() &&
         x->get_sharing_policy() == y->get_sharing_policy();
}

using LinkMap = std::unordered_map<const sg4::Link*, const sg4::Link*>;

// (a): the link bijection that shifting every replica by k induces, or nothing.
std::optional<LinkMap> ShiftMap(const std::vector<std::vector<Route>>& routes, int k) {
  const int n = static_cast<int>(routes.size());
  LinkMap forward, backward;
  for (int d = 0; d < n; ++d) {
    const std::vector<Route>& here = routes[d];
    const std::vector<Route>& there = routes[(d + k) % n];
    for (std::size_t f = 0; f < here.size(); ++f) {
      const Route& a = here[f];
      const Route& b = there[f];
      if (a.links.size() != b.links.size() || a.latency != b.latency) return std::nullopt;
      for (std::size_t j = 0; j < a.links.size(); ++j) {
        const sg4::Link* x = a.links[j];
        const sg4::Link* y = b.links[j];
        // A link the shift keeps would carry every copy of its flows (an orbit of one link, not
        // n/k >= 2): no period.
        if (x == y || forward.try_emplace(x, y).first->second != y ||
            backward.try_emplace(y, x).first->second != x || !AlikeLinks(x, y)) {
          return std::nullopt;
        }
      }
    }
  }
  return forward;
}

// (b): each link's orbit under `shift` (a permutation of its links) as a number, when every orbit
// has `length` links; nothing otherwise.
std::optional<std::unordered_map<const sg4::Link*, int>> Orbits(const LinkMap& shift, int length) {
  std::unordered_map<const sg4::Link*, int> orbit;
  int next = 0;
  for (const auto& [start, unused] : shift) {
    if (orbit.contains(start)) continue;
    const sg4::Link* link = start;
    int size = 0;
    do {
      orbit.emplace(link, next);
      const auto image = shift.find(link);
      if (image == shift.end()) return std::nullopt;  // not a permutation of its links
      link = image->second;
      ++size;
    } while (link != start && size <= length);
    if (size != length) return std::nullopt;
    ++next;
  }
  return orbit;
}

// The route of replica d's flow of `kind` in the first k replicas: to replica (d + shift) mod n,
// or past replica k - 1 to its image; an all-to-all message to a copy of d's own replica to the
// mirror of its sender (nothing without mirrors).
std::optional<Route> ImageRoute(const Route& real, const FlowKind& kind,
                                const std::vector<sg4::Host*>& hosts, const ReplicaFlows& flows,
                                int p, int n, int k, int d) {
  const int to = kind.Target(d, n);
  if (to < k) return real;
  const std::size_t from = static_cast<std::size_t>(d) * p + kind.from;
  if (to % k != d)
    return RouteOf(hosts[from], hosts[static_cast<std::size_t>(to % k) * p + kind.to]);
  if (kind.ep <= 1 || flows.mirrors == nullptr) return std::nullopt;
  return RouteOf(hosts[from], flows.mirrors->Of(from, static_cast<std::size_t>(to) * p + kind.to));
}

// (c): the first k replicas' flows, those past replica k - 1 sent to their image, cross one link of
// each orbit their real route crosses, the same link for every flow, none twice.
bool QuotientHolds(const std::vector<std::vector<Route>>& routes,
                   const std::vector<FlowKind>& kinds, const std::vector<sg4::Host*>& hosts,
                   const ReplicaFlows& flows, int p, int k,
                   const std::unordered_map<const sg4::Link*, int>& orbit) {
  const int n = static_cast<int>(routes.size());
  std::unordered_map<int, const sg4::Link*> standing;  // orbit -> its link in the k replicas
  for (int d = 0; d < k; ++d) {
    for (std::size_t f = 0; f < kinds.size(); ++f) {
      const Route& real = routes[d][f];
      const std::optional<Route> stands = ImageRoute(real, kinds[f], hosts, flows, p, n, k, d);
      if (!stands) return false;
      const Route& image = *stands;
      if (image.links.size() != real.links.size() || image.latency != real.latency) return false;
      std::set<const sg4::Link*> seen;
      for (std::size_t j = 0; j < real.links.size(); ++j) {
        const auto it = orbit.find(image.links[j]);
        if (it == orbit.end() || it->second != orbit.at(real.links[j]) ||
            standing.try_emplace(it->second, image.links[j]).first->second != image.links[j] ||
            !seen.insert(image.links[j]).second) {
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

int ReplicaPeriod(const Program& program, const std::vector<sg4::Host*>& hosts, int replicas,
                  const ReplicaFlows& flows) {
  const int p = program.p;
  const std::vector<FlowKind> kinds = FlowKinds(program, replicas, flows);
  std::vector<std::vector<Route>> routes(replicas);
  for (int d = 0; d < replicas; ++d) {
    for (const FlowKind& kind : kinds) {
      const int to = kind.Target(d, replicas);
      routes[d].push_back(RouteOf(hosts[static_cast<std::size_t>(d) * p + kind.from],
                                  hosts[static_cast<std::size_t>(to) * p + kind.to]));
    }
  }
  const auto below_n = [&](int stride) { return stride > 1 && stride < replicas ? stride : 1; };
  const int stride = std::lcm(below_n(flows.expert_stride), below_n(flows.ep));
  for (int k = stride; k < replicas; k += stride) {
    if (replicas % k != 0) continue;
    const std::optional<LinkMap> shift = ShiftMap(routes, k);
    if (!shift) continue;
    const auto orbit = Orbits(*shift, replicas / k);
    if (orbit && QuotientHolds(routes, kinds, hosts, flows, p, k, *orbit)) return k;
  }
  return replicas;
}

}  // namespace pipette
