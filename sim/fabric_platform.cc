#include "sim/fabric_platform.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <utility>

namespace pipette {

namespace sg4 = simgrid::s4u;
namespace routing = simgrid::kernel::routing;
using simgrid::kernel::resource::StandardLinkImpl;

namespace {

// One direction of a split-duplex link, with its latency (the zone adds route latencies itself).
struct Hop {
  StandardLinkImpl* link = nullptr;
  double latency = 0;
};

// Both directions of one split-duplex link.
struct Duplex {
  Hop up;
  Hop down;
};

// Where each used GPU sits, and the links of its own; a mirror has its GPU's place and level.
struct GpuPlace {
  int node = -1;
  int nic = 0;  // its NIC's index in the node: its rail
  Duplex nvlink;
  Duplex nic_link;
  const routing::NetPoint* mirror_of = nullptr;  // a mirror: its GPU
  int level = 0;                                 // a mirror: its level (MirrorLevel)
};

// The cluster's coordinates of a node: its leaf (rail-optimised: its SU) and pod.
struct Coordinates {
  int leaf = 0;
  int pod = 0;
};

class FabricZone final : public routing::NetZoneImpl {
 public:
  FabricZone(const std::string& name, const ClusterSpec& cluster)
      : NetZoneImpl(name), cluster_(cluster) {}

  // A split-duplex link `name` of `bandwidth` whose directions each have `latency`.
  Duplex Link(const std::string& name, double bandwidth, double latency) {
    sg4::SplitDuplexLink* link = get_iface()->create_split_duplex_link(name, bandwidth);
    link->set_latency(latency)->seal();
    ++links_;
    return Duplex{{link->get_link_up()->get_impl(), latency},
                  {link->get_link_down()->get_impl(), latency}};
  }

  Coordinates Of(int node) const {
    const int leaf = node / cluster_.fabric.nodes_per_leaf;
    return {leaf, leaf / cluster_.fabric.leaves_per_pod};
  }

  std::vector<GpuPlace> places;           // by netpoint id
  std::unordered_map<int, Duplex> nodes;  // fat-tree: node -> its uplink
  std::map<std::int64_t, Duplex> leaves;  // leaf (rail-optimised: SU * nics + rail) -> uplink
  std::unordered_map<int, Duplex> pods;   // fat-tree with 3 levels: pod -> uplink
  std::int64_t links() const { return links_; }

 protected:
  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst,
                       routing::Route* into, double* latency) override {
    const GpuPlace& a = places.at(src->id());
    const GpuPlace& b = places.at(dst->id());
    auto add = [&](const Hop& hop) {
      into->link_list_.push_back(hop.link);
      if (latency != nullptr) *latency += hop.latency;
    };
    if (src == dst) return;
    // Only a GPU's route to its own mirror is defined: without cross-traffic (sim_engine.cc) no
    // reverse route is asked for.
    xbt_assert(a.mirror_of == nullptr, "a route from a mirror is not defined");
    if (b.mirror_of != nullptr) {
      xbt_assert(b.mirror_of == src, "a route to another GPU's mirror is not defined");
      AddLoop(a, b.level, add);
      return;
    }
    if (a.node == b.node) {
      add(a.nvlink.up);
      add(b.nvlink.down);
      return;
    }
    add(a.nic_link.up);
    if (cluster_.topology == Topology::kRailOptimised) {
      const int nics = cluster_.nics_per_node;
      const std::int64_t from = std::int64_t{Of(a.node).leaf} * nics + a.nic;
      const std::int64_t to = std::int64_t{Of(b.node).leaf} * nics + b.nic;
      if (from != to) {
        add(leaves.at(from).up);
        add(leaves.at(to).down);
      }
    } else {
      AddTreeRoute(a.node, b.node, add);
    }
    add(b.nic_link.down);
  }

 private:
  template <typename Add>
  void AddTreeRoute(int from, int to, const Add& add) const {
    const Coordinates x = Of(from);
    const Coordinates y = Of(to);
    add(nodes.at(from).up);
    if (x.leaf != y.leaf) {
      add(leaves.at(x.leaf).up);
      if (cluster_.fabric.levels == 3 && x.pod != y.pod) {
        add(pods.at(x.pod).up);
        add(pods.at(y.pod).down);
      }
      add(leaves.at(y.leaf).down);
    }
    add(nodes.at(to).down);
  }

  // GPU `a`'s route to its mirror at `level`: up the tiers over its own links, and back down.
  template <typename Add>
  void AddLoop(const GpuPlace& a, int level, const Add& add) const {
    if (level == 0) {
      add(a.nvlink.up);
      add(a.nvlink.down);
      return;
    }
    add(a.nic_link.up);
    const Coordinates x = Of(a.node);
    if (cluster_.topology == Topology::kRailOptimised) {
      if (level == 2) {
        const Duplex& leaf = leaves.at(std::int64_t{x.leaf} * cluster_.nics_per_node + a.nic);
        add(leaf.up);
        add(leaf.down);
      }
    } else {
      add(nodes.at(a.node).up);
      if (level >= 2) add(leaves.at(x.leaf).up);
      if (level == 3) {
        add(pods.at(x.pod).up);
        add(pods.at(x.pod).down);
      }
      if (level >= 2) add(leaves.at(x.leaf).down);
      add(nodes.at(a.node).down);
    }
    add(a.nic_link.down);
  }

  const ClusterSpec cluster_;  // a copy: the zone outlives the caller's spec
  std::int64_t links_ = 0;
};

// The tiers above the NICs of the used nodes: node, leaf and pod uplinks (fat-tree) or rail
// leaf uplinks (rail-optimised).
void BuildTiers(FabricZone& zone, const ClusterSpec& c, const std::string& prefix,
                const std::map<int, std::vector<int>>& used) {
  const FabricSpec& f = c.fabric;
  const double port = c.FabricLinkBandwidth();
  const double o1 = f.oversubscription.at(0);
  const int nics = std::clamp(c.nics_per_node, 1, c.gpus_per_node);
  for (const auto& [node, gpus] : used) {
    const Coordinates at = zone.Of(node);
    if (c.topology == Topology::kRailOptimised) {
      for (int g : gpus) {
        const int rail = g * nics / c.gpus_per_node;
        const std::int64_t leaf = std::int64_t{at.leaf} * nics + rail;
        if (zone.leaves.contains(leaf)) continue;
        zone.leaves[leaf] = zone.Link(fmt::format("{}su{}-rail{}-uplink", prefix, at.leaf, rail),
                                      f.nodes_per_leaf * port / o1, f.hop_latency);
      }
      continue;
    }
    zone.nodes[node] =
        zone.Link(fmt::format("{}node{}-uplink", prefix, node), nics * c.inter_node.bandwidth, 0.0);
    const double leaf_up = f.nodes_per_leaf * double{1.0} * nics * port / o1;
    if (!zone.leaves.contains(at.leaf)) {
      zone.leaves[at.leaf] =
          zone.Link(fmt::format("{}leaf{}-uplink", prefix, at.leaf), leaf_up, f.hop_latency);
    }
    if (f.levels == 3 && !zone.pods.contains(at.pod)) {
      zone.pods[at.pod] =
          zone.Link(fmt::format("{}pod{}-uplink", prefix, at.pod),
                    f.leaves_per_pod * leaf_up / f.oversubscription.at(1), f.hop_latency);
    }
  }
}

// Records `place` as the place of `host`'s netpoint.
void Place(FabricZone& zone, const sg4::Host* host, const GpuPlace& place) {
  const unsigned long id = host->get_netpoint()->id();
  if (zone.places.size() <= id) zone.places.resize(id + 1);
  zone.places[id] = place;
}

// The hosts of the used GPUs, their NVLink ports and NICs, and with `mirrors` their mirrors;
// returns the hosts by GPU index.
std::map<int, GpuHosts> BuildGpus(FabricZone& zone, const ClusterSpec& c, const std::string& prefix,
                                  const std::map<int, std::vector<int>>& used, bool mirrors) {
  const int nics = std::clamp(c.nics_per_node, 1, c.gpus_per_node);
  std::map<int, GpuHosts> host_of;
  for (const auto& [node, gpus] : used) {
    std::map<int, Duplex> nic_links;
    for (int g : gpus) {
      const std::string name = fmt::format("{}node{}-gpu{}", prefix, node, g);
      sg4::Host* host = zone.get_iface()->create_host(name, 1.0)->seal();
      GpuPlace place;
      place.node = node;
      place.nic = g * nics / c.gpus_per_node;  // GPUs share the NICs evenly
      place.nvlink = zone.Link(name + "-nvlink", c.intra_node.bandwidth, c.intra_node.latency / 2);
      if (!nic_links.contains(place.nic)) {
        nic_links[place.nic] = zone.Link(fmt::format("{}node{}-nic{}", prefix, node, place.nic),
                                         c.inter_node.bandwidth, c.inter_node.latency / 2);
      }
      place.nic_link = nic_links.at(place.nic);
      Place(zone, host, place);
      GpuHosts& hosts = host_of[node * c.gpus_per_node + g];
      hosts.host = host;
      for (int level = 0; mirrors && level < MirrorLevels(c); ++level) {
        sg4::Host* mirror =
            zone.get_iface()->create_host(fmt::format("{}-mirror{}", name, level), 1.0)->seal();
        GpuPlace at = place;
        at.mirror_of = host->get_netpoint();
        at.level = level;
        Place(zone, mirror, at);
        hosts.mirrors.push_back(mirror);
      }
    }
  }
  return host_of;
}

// Gives `zone` the models of `from` (see cluster_platform.cc's CopyModels).
void CopyModels(const sg4::NetZone* from, routing::NetZoneImpl* zone) {
  const routing::NetZoneImpl* models = from->get_impl();
  zone->set_network_model(models->get_network_model());
  zone->set_cpu_pm_model(models->get_cpu_pm_model());
  zone->set_cpu_vm_model(models->get_cpu_vm_model());
  zone->set_disk_model(models->get_disk_model());
  zone->set_host_model(models->get_host_model());
}

}  // namespace

std::map<int, GpuHosts> BuildFabricPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                            sg4::NetZone* parent,
                                            const std::map<int, std::vector<int>>& used,
                                            bool mirrors) {
  auto* zone = new FabricZone(prefix + "fabric", cluster);  // owned by the engine
  if (parent != nullptr) CopyModels(parent, zone);          // attached last: see CopyModels
  std::map<int, GpuHosts> host_of = BuildGpus(*zone, cluster, prefix, used, mirrors);
  BuildTiers(*zone, cluster, prefix, used);
  if (parent != nullptr) zone->set_parent(parent->get_impl());
  zone->seal();
  return host_of;
}

std::int64_t FabricPlatformLinks(const ClusterSpec& c,
                                 const std::map<int, std::vector<int>>& used) {
  const int nics = std::clamp(c.nics_per_node, 1, c.gpus_per_node);
  const FabricSpec& f = c.fabric;
  std::int64_t links = 0;
  std::set<std::int64_t> leaves;
  std::set<int> pods;
  for (const auto& [node, gpus] : used) {
    std::set<int> node_nics;
    const int leaf = node / f.nodes_per_leaf;
    for (int g : gpus) {
      const int nic = g * nics / c.gpus_per_node;
      node_nics.insert(nic);
      if (c.topology == Topology::kRailOptimised) leaves.insert(std::int64_t{leaf} * nics + nic);
    }
    links += static_cast<std::int64_t>(gpus.size() + node_nics.size());
    if (c.topology == Topology::kFatTree) {
      links += 1;
      leaves.insert(leaf);
      if (f.levels == 3) pods.insert(leaf / f.leaves_per_pod);
    }
  }
  return links + static_cast<std::int64_t>(leaves.size() + pods.size());
}

}  // namespace pipette
