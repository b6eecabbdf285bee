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
  std::vector<sg4::Host*> hosts;  // parallel to the GPUs used
};

// One node's zone, detached, with the hosts of `used` (GPU indices in the node), their NVLink
// ports and the NICs they use, routed as the header says; its uplink is created in `top`.
NodeZone BuildNode(const ClusterSpec& cluster, const std::string& node,
                   const std::vector<int>& used, sg4::NetZone* top) {
  const int gpus = cluster.gpus_per_node;
  const int nics = std::clamp(cluster.nics_per_node, 1, gpus);
  NodeZone built{sg4::create_full_zone(node), nullptr, nullptr, {}};
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
  }
  built.uplink =
      top->create_split_duplex_link(node + "-uplink", nics * cluster.inter_node.bandwidth)->seal();
  return built;
}

}  // namespace

ClusterPlatform BuildClusterPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                     sg4::NetZone* parent, const std::vector<int>& gpus) {
  ClusterPlatform platform;
  if (cluster.topology != Topology::kSingleSwitch) {
    const std::map<int, std::vector<int>> used = UsedByNode(cluster, gpus);
    const std::map<int, sg4::Host*> host_of = BuildFabricPlatform(cluster, prefix, parent, used);
    platform.nodes = static_cast<int>(used.size());
    if (gpus.empty()) {
      for (const auto& [gpu, host] : host_of) platform.gpus.push_back(host);
    } else {
      for (int gpu : gpus) platform.gpus.push_back(host_of.at(gpu));
    }
    return platform;
  }
  auto* top = sg4::create_star_zone(prefix + "switch");
  if (parent != nullptr) CopyModels(parent, top);  // attached last, like the nodes
  std::vector<NodeZone> nodes;
  std::map<int, sg4::Host*> host_of;  // GPU -> its host
  for (const auto& [n, used] : UsedByNode(cluster, gpus)) {
    nodes.push_back(BuildNode(cluster, fmt::format("{}node{}", prefix, n), used, top));
    for (std::size_t k = 0; k < used.size(); ++k) {
      host_of[n * cluster.gpus_per_node + used[k]] = nodes.back().hosts[k];
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
  if (gpus.empty()) {
    for (const auto& [gpu, host] : host_of) platform.gpus.push_back(host);
  } else {
    for (int gpu : gpus) platform.gpus.push_back(host_of.at(gpu));
  }
  return platform;
}

std::int64_t ClusterPlatformRoutes(const ClusterSpec& cluster, const std::vector<int>& gpus) {
  if (cluster.topology != Topology::kSingleSwitch) {
    return kRoutesPerFabricLink * FabricPlatformLinks(cluster, UsedByNode(cluster, gpus));
  }
  std::int64_t routes = 0;
  for (const auto& [node, used] : UsedByNode(cluster, gpus)) {
    const auto u = static_cast<std::int64_t>(used.size());
    routes += u * (u - 1) + 2 * u + u * kRoutesPerSwitchGpu;
  }
  return routes;
}

}  // namespace pipette
