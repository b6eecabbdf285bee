// Fat-tree and rail-optimised fabrics (sim/fabric_platform.h): every route kind gives a message
// alpha + S/beta with the hop latencies it crosses, and the aggregate throughput of half the GPUs
// sending to the other half at once equals the bisection bandwidth's closed form
// (SummarizeFabric): an oversubscribed tier divides what crosses it, traffic under one leaf is
// not oversubscribed. ctest runs every TEST in its own process (SimGrid: one engine each).
#include <gtest/gtest.h>

#include <algorithm>
#include <simgrid/s4u.hpp>
#include <utility>
#include <vector>

#include "sim/cluster_platform.h"
#include "sim/sim_engine.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

constexpr double kNic = 50e9;      // bytes/s per NIC
constexpr double kNvlink = 450e9;  // bytes/s per GPU port
constexpr double kIb = 5e-6;       // inter-node alpha
constexpr double kNv = 2e-6;       // intra-node alpha
constexpr double kHop = 1e-6;      // per switch-to-switch link

// `nodes` 8-GPU nodes with 8 NICs on `topology`, `per_leaf` nodes per leaf (or SU).
ClusterSpec Cluster(Topology topology, int nodes, int per_leaf, std::vector<double> ratios,
                    double hop = kHop) {
  ClusterSpec c;
  c.name = "t";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  c.intra_node = {kNvlink, kNv};
  c.inter_node = {kNic, kIb};
  c.topology = topology;
  c.fabric.levels = static_cast<int>(ratios.size()) + 1;
  c.fabric.nodes_per_leaf = per_leaf;
  c.fabric.leaves_per_pod = 2;
  c.fabric.oversubscription = std::move(ratios);
  c.fabric.hop_latency = hop;
  return c;
}

// Starts every (from, to) message of `bytes` at time 0 on `cluster`; returns when the last ends.
double Makespan(const ClusterSpec& cluster, const std::vector<std::pair<int, int>>& flows,
                double bytes) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  std::vector<int> gpus;
  for (const auto& [a, b] : flows) {
    gpus.push_back(a);
    gpus.push_back(b);
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  const ClusterPlatform platform = BuildClusterPlatform(cluster, "", nullptr, gpus);
  auto host = [&](int gpu) {
    return platform.gpus[std::lower_bound(gpus.begin(), gpus.end(), gpu) - gpus.begin()];
  };
  double last = 0;
  for (const auto& [a, b] : flows) {
    sg4::Host* from = host(a);
    sg4::Host* to = host(b);
    sg4::Actor::create("sender", from, [&last, from, to, bytes] {
      sg4::Comm::sendto(from, to, static_cast<std::uint64_t>(bytes));
      last = std::max(last, sg4::Engine::get_clock());
    });
  }
  engine->run();
  return last;
}

// Sends each (from, to) message of `bytes` alone, one after the other; returns their durations.
std::vector<double> OneByOne(const ClusterSpec& cluster,
                             const std::vector<std::pair<int, int>>& messages, double bytes) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const ClusterPlatform platform = BuildClusterPlatform(cluster, "");
  std::vector<double> seconds;
  sg4::Actor::create("sender", platform.gpus[0], [&] {
    for (const auto& [a, b] : messages) {
      const double start = sg4::Engine::get_clock();
      sg4::Comm::sendto(platform.gpus[a], platform.gpus[b], static_cast<std::uint64_t>(bytes));
      seconds.push_back(sg4::Engine::get_clock() - start);
    }
  });
  engine->run();
  return seconds;
}

// Every GPU of the first half of the nodes sends to the same GPU index half the cluster away.
std::vector<std::pair<int, int>> HalfToHalf(const ClusterSpec& c) {
  std::vector<std::pair<int, int>> flows;
  const int half = c.world_size() / 2;
  for (int g = 0; g < half; ++g) flows.emplace_back(g, g + half);
  return flows;
}

// The aggregate throughput of HalfToHalf: bytes moved over the time less the route's latency.
double HalfToHalfThroughput(const ClusterSpec& c, double alpha) {
  const double bytes = 1e9;
  const double seconds = Makespan(c, HalfToHalf(c), bytes);
  return bytes * (c.world_size() / 2) / (seconds - alpha);
}

constexpr double kS = 1e9;

TEST(FatTree, EachRouteKindTakesItsLatencyPlusSizeOverTheNic) {
  const ClusterSpec c = Cluster(Topology::kFatTree, 8, 2, {1.0, 1.0});  // 3 levels, 2 pods
  const std::vector<double> t = OneByOne(c, {{0, 5}, {3, 8 + 3}, {3, 16 + 6}, {0, 32 + 7}}, kS);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_NEAR(t[0], kNv + kS / kNvlink, 1e-12);          // same node: two NVLink ports
  EXPECT_NEAR(t[1], kIb + kS / kNic, 1e-12);             // same leaf: the NICs only
  EXPECT_NEAR(t[2], kIb + 2 * kHop + kS / kNic, 1e-12);  // leaf-spine-leaf: two hops
  EXPECT_NEAR(t[3], kIb + 4 * kHop + kS / kNic, 1e-12);  // through the core: four hops
}

TEST(RailOptimised, SameRailSameSuCrossesOneLeafEverythingElseTheSpine) {
  const ClusterSpec c = Cluster(Topology::kRailOptimised, 4, 2, {1.0});  // 2 SUs of 2 nodes
  const std::vector<double> t =
      OneByOne(c, {{2, 7}, {2, 8 + 2}, {2, 8 + 5}, {2, 16 + 2}, {2, 24 + 6}}, kS);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_NEAR(t[0], kNv + kS / kNvlink, 1e-12);          // same node
  EXPECT_NEAR(t[1], kIb + kS / kNic, 1e-12);             // rail 2 of SU 0: one leaf
  EXPECT_NEAR(t[2], kIb + 2 * kHop + kS / kNic, 1e-12);  // rails 2 -> 5: via a spine
  EXPECT_NEAR(t[3], kIb + 2 * kHop + kS / kNic, 1e-12);  // SU 0 -> SU 1 on rail 2
  EXPECT_NEAR(t[4], kIb + 2 * kHop + kS / kNic, 1e-12);  // both differ
}

TEST(FatTree, NonBlockingBisectionIsHalfTheInjection) {
  const ClusterSpec c = Cluster(Topology::kFatTree, 8, 2, {1.0});  // 4 leaves
  const FabricSummary s = SummarizeFabric(c);
  EXPECT_DOUBLE_EQ(s.bisection, 8 * 8 * kNic / 2);
  EXPECT_NEAR(HalfToHalfThroughput(c, kIb + 2 * kHop) / s.bisection, 1.0, 1e-9);
}

TEST(FatTree, TwoToOneHalvesWhatCrossesTheLeafUplinks) {
  const ClusterSpec c = Cluster(Topology::kFatTree, 8, 2, {2.0});
  const FabricSummary s = SummarizeFabric(c);
  EXPECT_DOUBLE_EQ(s.bisection, 8 * 8 * kNic / 2 / 2);
  EXPECT_NEAR(HalfToHalfThroughput(c, kIb + 2 * kHop) / s.bisection, 1.0, 1e-9);
}

TEST(FatTree, TrafficUnderOneLeafIsNotOversubscribed) {
  const ClusterSpec c = Cluster(Topology::kFatTree, 8, 2, {4.0});
  std::vector<std::pair<int, int>> flows;  // node 0 -> node 1, every GPU: one leaf
  for (int g = 0; g < 8; ++g) flows.emplace_back(g, 8 + g);
  EXPECT_NEAR(Makespan(c, flows, kS), kIb + kS / kNic, 1e-12);
}

TEST(FatTree, ThreeLevelsDivideByBothTiers) {
  // 8 nodes, 2 per leaf, 2 leaves per pod: 2 pods; the halves are the pods.
  const ClusterSpec c = Cluster(Topology::kFatTree, 8, 2, {2.0, 2.0});
  const FabricSummary s = SummarizeFabric(c);
  EXPECT_DOUBLE_EQ(s.bisection, 8 * 8 * kNic / 2 / 4);
  EXPECT_EQ(s.pods, 2);
  EXPECT_NEAR(HalfToHalfThroughput(c, kIb + 4 * kHop) / s.bisection, 1.0, 1e-9);
}

TEST(RailOptimised, BisectionAcrossSusMatchesTheClosedForm) {
  for (const double ratio : {1.0, 2.0}) {
    const ClusterSpec c = Cluster(Topology::kRailOptimised, 4, 2, {ratio});
    const FabricSummary s = SummarizeFabric(c);
    EXPECT_DOUBLE_EQ(s.bisection, 4 * 8 * kNic / 2 / ratio);
    EXPECT_EQ(s.leaves, 16);  // 2 SUs x 8 rails
  }
  // One engine per process: simulate the 2:1 case.
  const ClusterSpec c = Cluster(Topology::kRailOptimised, 4, 2, {2.0});
  EXPECT_NEAR(HalfToHalfThroughput(c, kIb + 2 * kHop) / SummarizeFabric(c).bisection, 1.0, 1e-9);
}

TEST(FatTree, NonBlockingWithoutHopLatencyEqualsTheSingleSwitch) {
  // Every GPU of 4 nodes sends to a GPU of another node and 8 more flows crowd one NIC, on a 1:1
  // tree and on the single switch side by side (one engine): the tree's leaf uplinks never bind,
  // so every flow ends at the same time on both (ContendedNicCarriesExactlyItsBandwidth below
  // checks the crowded NIC's closed form on the same pattern).
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  auto* root = sg4::create_full_zone("root");
  const ClusterSpec tree = Cluster(Topology::kFatTree, 4, 1, {1.0}, 0.0);  // 4 leaves
  ClusterSpec flat = tree;
  flat.topology = Topology::kSingleSwitch;
  const ClusterPlatform t = BuildClusterPlatform(tree, "t-", root);
  const ClusterPlatform f = BuildClusterPlatform(flat, "f-", root);
  root->seal();
  std::vector<std::pair<int, int>> flows;
  for (int g = 0; g < 32; ++g) flows.emplace_back(g, (g + 8 + g % 3 * 8) % 32);
  for (int g = 0; g < 8; ++g) flows.emplace_back(g, 24);
  std::vector<double> ends(2 * flows.size(), 0.0);
  for (std::size_t k = 0; k < flows.size(); ++k) {
    for (int which = 0; which < 2; ++which) {
      const ClusterPlatform& p = which == 0 ? t : f;
      sg4::Host* from = p.gpus[flows[k].first];
      sg4::Host* to = p.gpus[flows[k].second];
      double* end = &ends[2 * k + which];
      sg4::Actor::create("s", from, [from, to, end] {
        sg4::Comm::sendto(from, to, static_cast<std::uint64_t>(kS));
        *end = sg4::Engine::get_clock();
      });
    }
  }
  engine->run();
  for (std::size_t k = 0; k < flows.size(); ++k) {
    EXPECT_NEAR(ends[2 * k], ends[2 * k + 1], 1e-9 * ends[2 * k + 1]) << "flow " << k;
  }
}

// Every GPU of 4 nodes sends to a GPU of another node, and GPUs 0-7 each send a second flow to
// GPU 24: those eight share GPU 24's NIC (its only bottleneck) and end together at
// alpha + 8 S / beta = 0.16 s. The other 32 flows end by 0.06 s. SimGrid 3.32's default lazy
// rate update ended the eight at 0.06 s on the single switch (0.093 s with the node uplinks in
// the route), a 50 GB/s NIC carrying 133 GB/s: MakeEngine selects network/optim:Full.
std::vector<std::pair<int, int>> CrowdedNic() {
  std::vector<std::pair<int, int>> flows;
  for (int g = 0; g < 32; ++g) flows.emplace_back(g, (g + 8 + g % 3 * 8) % 32);
  for (int g = 0; g < 8; ++g) flows.emplace_back(g, 24);
  return flows;
}

TEST(SingleSwitch, ContendedNicCarriesExactlyItsBandwidth) {
  ClusterSpec c = Cluster(Topology::kFatTree, 4, 1, {1.0}, 0.0);
  c.topology = Topology::kSingleSwitch;
  EXPECT_NEAR(Makespan(c, CrowdedNic(), kS), kIb + 8 * kS / kNic, 1e-12);
}

TEST(FatTree, ContendedNicCarriesExactlyItsBandwidth) {
  const ClusterSpec c = Cluster(Topology::kFatTree, 4, 1, {2.0});  // 4 leaves, 2:1, hop latency
  // Each leaf's uplink carries 200 GB/s: at most 16 flows of node 0 (300 GB/s in total before
  // the 2:1 cut), never the eight into GPU 24 alone; leaf, spine, leaf adds two hop latencies.
  EXPECT_NEAR(Makespan(c, CrowdedNic(), kS), kIb + 2 * kHop + 8 * kS / kNic, 1e-12);
}

TEST(FabricPlatform, BuildsOnlyTheUsedGpusOfAHugeCluster) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  ClusterSpec c = Cluster(Topology::kRailOptimised, 16384, 32, {1.0});  // 131,072 GPUs
  const std::vector<int> gpus = {0, 131071};
  const std::size_t before = engine->get_link_count();  // SimGrid's own loopback, if any
  const ClusterPlatform platform = BuildClusterPlatform(c, "", nullptr, gpus);
  EXPECT_EQ(platform.nodes, 2);
  EXPECT_EQ(platform.gpus.size(), 2u);
  // 2 NVLink ports, 2 NICs, 2 rail leaf uplinks (rail 0 of SU 0, rail 7 of SU 511).
  EXPECT_EQ(ClusterPlatformRoutes(c, gpus), 6 * kRoutesPerFabricLink);
  EXPECT_LE(engine->get_link_count() - before, 2u * 6 + 1);  // split-duplex: two directions each
  EXPECT_GE(engine->get_link_count(), 2u * 6);
  c.topology = Topology::kFatTree;  // + 2 node uplinks, 2 leaves
  EXPECT_EQ(ClusterPlatformRoutes(c, gpus), 8 * kRoutesPerFabricLink);
}

TEST(FabricPlatform, TwoFabricsSideBySideRouteIndependently) {
  // Simulate() builds one platform per case under one root; each must route on its own.
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  auto* root = sg4::create_full_zone("root");
  const ClusterSpec a = Cluster(Topology::kFatTree, 4, 2, {1.0});
  const ClusterSpec b = Cluster(Topology::kRailOptimised, 4, 2, {1.0});
  const ClusterPlatform pa = BuildClusterPlatform(a, "a-", root, {0, 16});
  const ClusterPlatform pb = BuildClusterPlatform(b, "b-", root, {0, 8});
  root->seal();
  double ta = 0, tb = 0;
  sg4::Actor::create("a", pa.gpus[0], [&] {
    sg4::Comm::sendto(pa.gpus[0], pa.gpus[1], static_cast<std::uint64_t>(kS));
    ta = sg4::Engine::get_clock();
  });
  sg4::Actor::create("b", pb.gpus[0], [&] {
    sg4::Comm::sendto(pb.gpus[0], pb.gpus[1], static_cast<std::uint64_t>(kS));
    tb = sg4::Engine::get_clock();
  });
  engine->run();
  EXPECT_NEAR(ta, kIb + 2 * kHop + kS / kNic, 1e-12);  // leaves 0 -> 1
  EXPECT_NEAR(tb, kIb + kS / kNic, 1e-12);             // rail 0 of SU 0
}

}  // namespace
}  // namespace pipette
