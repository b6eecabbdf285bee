#include "sim/cluster_platform.h"

#include <fmt/core.h>

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace pipette {

namespace sg4 = simgrid::s4u;
using Direction = sg4::LinkInRoute::Direction;

ClusterPlatform BuildClusterPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                     sg4::NetZone* parent) {
  ClusterPlatform platform;
  auto* top = sg4::create_star_zone(prefix + "switch");
  if (parent != nullptr) top->set_parent(parent);
  const int gpus = cluster.gpus_per_node;
  const int nics = std::clamp(cluster.nics_per_node, 1, gpus);
  for (int n = 0; n < cluster.nodes; ++n) {
    const std::string node = fmt::format("{}node{}", prefix, n);
    auto* zone = sg4::create_full_zone(node);
    zone->set_parent(top);
    auto* gateway = zone->create_router(node + "-gateway");
    std::vector<sg4::Host*> hosts;
    std::vector<sg4::Link*> nvlink, nic_links;
    for (int g = 0; g < gpus; ++g) {
      hosts.push_back(zone->create_host(fmt::format("{}-gpu{}", node, g), 1.0)->seal());
      nvlink.push_back(zone->create_split_duplex_link(fmt::format("{}-gpu{}-nvlink", node, g),
                                                      cluster.intra_node.bandwidth)
                           ->set_latency(cluster.intra_node.latency / 2)
                           ->seal());
    }
    for (int k = 0; k < nics; ++k) {
      nic_links.push_back(zone->create_split_duplex_link(fmt::format("{}-nic{}", node, k),
                                                         cluster.inter_node.bandwidth)
                              ->set_latency(cluster.inter_node.latency / 2)
                              ->seal());
    }
    for (int a = 0; a < gpus; ++a) {
      for (int b = 0; b < gpus; ++b) {
        if (a == b) continue;
        zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(nvlink[a], Direction::UP),
                         sg4::LinkInRoute(nvlink[b], Direction::DOWN)},
                        false);
      }
      sg4::Link* nic = nic_links[a * nics / gpus];
      zone->add_route(hosts[a]->get_netpoint(), gateway, nullptr, nullptr,
                      {sg4::LinkInRoute(nic, Direction::UP)}, false);
      zone->add_route(gateway, hosts[a]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(nic, Direction::DOWN)}, false);
    }
    zone->seal();
    auto* uplink =
        top->create_split_duplex_link(node + "-uplink", nics * cluster.inter_node.bandwidth)
            ->seal();
    top->add_route(zone->get_netpoint(), nullptr, gateway, nullptr,
                   {sg4::LinkInRoute(uplink, Direction::UP)}, true);
    platform.gpus.insert(platform.gpus.end(), hosts.begin(), hosts.end());
  }
  top->seal();
  return platform;
}

}  // namespace pipette
