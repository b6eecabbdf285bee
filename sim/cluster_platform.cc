#include "sim/cluster_platform.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/fabric_platform.h"

namespace pipette {

namespace sg4 = simgrid::s4u;
namespace kernel = simgrid::kernel;
using Direction = sg4::LinkInRoute::Direction;

// The used GPUs of every node that has one: node -> its GPU indices inside the node, ascending.
std::map<int, std::vector<int>> UsedByNode(const ClusterSpec& cluster,
                                           const std::vector<int>& gpus) {
  std::map<int, std::vector<int>> used;
  const int per_node = cluster.gpus_per_node;
  if (gpus.empty()) {
    for (int n = 0; n < cluster.nodes; ++n) {
      for (int g = 0; g < per_node; ++g) used[n].push_back(g);
    }
    return used;
  }
  for (int gpu : gpus) used[gpu / per_node].push_back(gpu % per_node);
  for (auto& [node, list] : used) std::sort(list.begin(), list.end());
  return used;
}

int MirrorLevels(const ClusterSpec& cluster) {
  switch (cluster.topology) {
    case Topology::kSingleSwitch:
      return 2;
    case Topology::kRailOptimised:
      return 3;
    case Topology::kFatTree:
      return cluster.fabric.levels == 3 ? 4 : 3;
  }
  return 2;
}

int MirrorLevel(const ClusterSpec& cluster, int a, int b) {
  const int per_node = cluster.gpus_per_node;
  const int x = a / per_node, y = b / per_node;
  if (x == y) return 0;
  const FabricSpec& f = cluster.fabric;
  switch (cluster.topology) {
    case Topology::kSingleSwitch:
      return 1;
    case Topology::kRailOptimised: {
      const int nics = std::clamp(cluster.nics_per_node, 1, per_node);
      const bool same_rail = (a % per_node) * nics / per_node == (b % per_node) * nics / per_node;
      return same_rail && x / f.nodes_per_leaf == y / f.nodes_per_leaf ? 1 : 2;
    }
    case Topology::kFatTree: {
      const int leaf_x = x / f.nodes_per_leaf, leaf_y = y / f.nodes_per_leaf;
      if (leaf_x == leaf_y) return 1;
      return f.levels == 3 && leaf_x / f.leaves_per_pod != leaf_y / f.leaves_per_pod ? 3 : 2;
    }
  }
  return 1;
}

namespace {

// Gives `zone` the models of `from`, so that it can hold hosts and links before it has a parent.
// SimGrid checks every new link's name against every zone reachable from the platform's root, so
// building a zone while it is attached costs O(zones) per link and a platform O(links x nodes):
// the quadratic growth with the node count. Zones built detached and attached at the end cost
// O(1) per link.
void CopyModels(const sg4::NetZone* from, sg4::NetZone* zone) {
  const kernel::routing::NetZoneImpl* models = from->get_impl();
  kernel::routing::NetZoneImpl* impl = zone->get_impl();
  impl->set_network_model(models->get_network_model());
  impl->set_cpu_pm_model(models->get_cpu_pm_model());
  impl->set_cpu_vm_model(models->get_cpu_vm_model());
  impl->set_disk_model(models->get_disk_model());
  impl->set_host_model(models->get_host_model());
}

struct NodeZone {
  sg4::NetZone* zone;
  kernel::routing::NetPoint* gateway;
  sg4::Link* uplink;
  std::vector<sg4::Host*> hosts;                 // parallel to the GPUs used
  std::vector<std::vector<sg4::Host*>> mirrors;  // parallel to the GPUs used, when built
};

// One node's zone, detached, with the hosts of `used` (GPU indices in the node), their NVLink
// ports and the NICs they use, routed as the header says, and with `mirrors` each GPU's two
// mirrors; its uplink is created in `top`.
NodeZone BuildNode(const ClusterSpec& cluster, const std::string& node,
                   const std::vector<int>& used, sg4::NetZone* top, bool mirrors) {
  const int gpus = cluster.gpus_per_node;
  const int nics = std::clamp(cluster.nics_per_node, 1, gpus);
  NodeZone built{sg4::create_full_zone(node), nullptr, nullptr, {}, {}};
  sg4::NetZone* zone = built.zone;
  CopyModels(top, zone);
  built.gateway = zone->create_router(node + "-gateway");
  std::vector<sg4::Link*> nvlink;
  std::map<int, sg4::Link*> nic_links;
  for (int g : used) {
    built.hosts.push_back(zone->create_host(fmt::format("{}-gpu{}", node, g), 1.0)->seal());
    nvlink.push_back(zone->create_split_duplex_link(fmt::format("{}-gpu{}-nvlink", node, g),
                                                    cluster.intra_node.bandwidth)
                         ->set_latency(cluster.intra_node.latency / 2)
                         ->seal());
    const int k = g * nics / gpus;  // GPUs share the NICs evenly
    if (!nic_links.contains(k)) {
      nic_links[k] = zone->create_split_duplex_link(fmt::format("{}-nic{}", node, k),
                                                    cluster.inter_node.bandwidth)
                         ->set_latency(cluster.inter_node.latency / 2)
                         ->seal();
    }
  }
  built.uplink =
      top->create_split_duplex_link(node + "-uplink", nics * cluster.inter_node.bandwidth)->seal();
  const std::vector<sg4::Host*>& hosts = built.hosts;
  for (std::size_t a = 0; a < used.size(); ++a) {
    for (std::size_t b = 0; b < used.size(); ++b) {
      if (a == b) continue;
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(nvlink[a], Direction::UP),
                       sg4::LinkInRoute(nvlink[b], Direction::DOWN)},
                      false);
    }
    sg4::Link* nic = nic_links.at(used[a] * nics / gpus);
    zone->add_route(hosts[a]->get_netpoint(), built.gateway, nullptr, nullptr,
                    {sg4::LinkInRoute(nic, Direction::UP)}, false);
    zone->add_route(built.gateway, hosts[a]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(nic, Direction::DOWN)}, false);
    if (!mirrors) continue;
    const std::vector<std::vector<sg4::LinkInRoute>> loops = {
        {sg4::LinkInRoute(nvlink[a], Direction::UP), sg4::LinkInRoute(nvlink[a], Direction::DOWN)},
        {sg4::LinkInRoute(nic, Direction::UP), sg4::LinkInRoute(built.uplink, Direction::UP),
         sg4::LinkInRoute(built.uplink, Direction::DOWN), sg4::LinkInRoute(nic, Direction::DOWN)}};
    built.mirrors.emplace_back();
    for (std::size_t level = 0; level < loops.size(); ++level) {
      sg4::Host* mirror =
          zone->create_host(fmt::format("{}-mirror{}", hosts[a]->get_name(), level), 1.0)->seal();
      zone->add_route(hosts[a]->get_netpoint(), mirror->get_netpoint(), nullptr, nullptr,
                      loops[level], false);
      built.mirrors.back().push_back(mirror);
    }
  }
  return built;
}

}  // namespace

namespace {

// The hosts (and mirrors, when built) of `gpus` (empty: every GPU, ascending) in that order.
void ListHosts(const ClusterSpec& cluster, const std::map<int, GpuHosts>& of,
               const std::vector<int>& gpus, ClusterPlatform& platform) {
  auto add = [&](int gpu, const GpuHosts& h) {
    platform.gpus.push_back(h.host);
    if (h.mirrors.empty()) return;
    platform.mirrors.cluster = &cluster;
    platform.mirrors.gpu.push_back(gpu);
    platform.mirrors.hosts.push_back(h.mirrors);
  };
  if (gpus.empty()) {
    for (const auto& [gpu, h] : of) add(gpu, h);
  } else {
    for (int gpu : gpus) add(gpu, of.at(gpu));
  }
}

}  // namespace

ClusterPlatform BuildClusterPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                     sg4::NetZone* parent, const std::vector<int>& gpus,
                                     bool mirrors) {
  ClusterPlatform platform;
  if (cluster.topology != Topology::kSingleSwitch) {
    const std::map<int, std::vector<int>> used = UsedByNode(cluster, gpus);
    ListHosts(cluster, BuildFabricPlatform(cluster, prefix, parent, used, mirrors), gpus, platform);
    platform.nodes = static_cast<int>(used.size());
    return platform;
  }
  auto* top = sg4::create_star_zone(prefix + "switch");
  if (parent != nullptr) CopyModels(parent, top);  // attached last, like the nodes
  std::vector<NodeZone> nodes;
  std::map<int, GpuHosts> host_of;  // GPU -> its host and mirrors
  for (const auto& [n, used] : UsedByNode(cluster, gpus)) {
    nodes.push_back(BuildNode(cluster, fmt::format("{}node{}", prefix, n), used, top, mirrors));
    for (std::size_t k = 0; k < used.size(); ++k) {
      GpuHosts& h = host_of[n * cluster.gpus_per_node + used[k]];
      h.host = nodes.back().hosts[k];
      if (mirrors) h.mirrors = nodes.back().mirrors[k];
    }
  }
  for (const NodeZone& node : nodes) {
    node.zone->set_parent(top);
    node.zone->seal();
    top->add_route(node.zone->get_netpoint(), nullptr, node.gateway, nullptr,
                   {sg4::LinkInRoute(node.uplink, Direction::UP)}, true);
  }
  if (parent != nullptr) top->set_parent(parent);
  top->seal();
  platform.nodes = static_cast<int>(nodes.size());
  ListHosts(cluster, host_of, gpus, platform);
  return platform;
}

std::int64_t ClusterPlatformRoutes(const ClusterSpec& cluster, const std::vector<int>& gpus,
                                   bool mirrors) {
  const std::map<int, std::vector<int>> used = UsedByNode(cluster, gpus);
  std::int64_t routes = 0;
  std::int64_t count = 0;  // GPUs
  if (cluster.topology != Topology::kSingleSwitch) {
    routes = kRoutesPerFabricLink * FabricPlatformLinks(cluster, used);
    for (const auto& [node, list] : used) count += static_cast<std::int64_t>(list.size());
    // A mirror is a GPU's worth: its host and its share of two links.
    return routes + (mirrors ? count * MirrorLevels(cluster) * 2 * kRoutesPerFabricLink : 0);
  }
  for (const auto& [node, list] : used) {
    const auto u = static_cast<std::int64_t>(list.size());
    routes += u * (u - 1) + 2 * u + u * kRoutesPerSwitchGpu;
    count += u;
  }
  return routes + (mirrors ? count * MirrorLevels(cluster) * kRoutesPerSwitchGpu : 0);
}

}  // namespace pipette
