// The cluster platform gives messages their alpha-beta times, and a ring all-reduce simulated
// message by message matches 2(n-1)(alpha + S/(n beta)): S bytes over a path of bandwidth B
// and latency A take A + S/B (CM02 without cross-traffic or TCP-gamma bound). ctest runs every
// TEST in its own process, which SimGrid needs (one engine per process).
#include "sim/cluster_platform.h"

#include <gtest/gtest.h>

#include <limits>
#include <simgrid/s4u.hpp>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/collectives.h"
#include "sim/ring_allreduce.h"
#include "sim/sim_engine.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

// Sends `bytes` from GPU `from` to GPU `to` of a `nodes`-node dgx-h100 and returns the seconds.
double MessageSeconds(int nodes, int from, int to, double bytes) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const ClusterSpec cluster = *MakeCluster("dgx-h100", nodes);
  const ClusterPlatform platform = BuildClusterPlatform(cluster, "");
  double seconds = -1;
  sg4::Actor::create("sender", platform.gpus[from], [&] {
    const double start = sg4::Engine::get_clock();
    sg4::Comm::sendto(platform.gpus[from], platform.gpus[to], static_cast<uint64_t>(bytes));
    seconds = sg4::Engine::get_clock() - start;
  });
  engine->run();
  return seconds;
}

TEST(ClusterPlatform, IntraNodeMessageTakesNvlinkLatencyPlusSizeOverBandwidth) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 1);
  const double bytes = 1e9;
  EXPECT_NEAR(MessageSeconds(1, 0, 5, bytes), c.intra_node.latency + bytes / c.intra_node.bandwidth,
              1e-12);
}

TEST(ClusterPlatform, InterNodeMessageTakesNicLatencyPlusSizeOverNicBandwidth) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 2);
  const double bytes = 1e9;
  // One flow: its own NIC is the bottleneck (the node uplink aggregates all eight).
  EXPECT_NEAR(MessageSeconds(2, 3, 8 + 6, bytes),
              c.inter_node.latency + bytes / c.inter_node.bandwidth, 1e-12);
}

}  // namespace
}  // namespace pipette

namespace pipette {
namespace {

// Runs a ring all-reduce of `bytes` over the first `n` GPUs of a `nodes`-node dgx-h100.
double RingSeconds(int nodes, int n, double bytes) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const ClusterPlatform platform = BuildClusterPlatform(*MakeCluster("dgx-h100", nodes), "");
  double finish = 0;
  EXPECT_TRUE(
      LaunchRingAllReduce({platform.gpus.begin(), platform.gpus.begin() + n}, bytes, &finish).ok());
  engine->run();
  return finish;
}

TEST(RingAllReduce, PerMessageRingInsideANodeMatchesTheFormula) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 1);
  const double bytes = 1e9;  // 8 chunks of 125 MB
  EXPECT_NEAR(RingSeconds(1, 8, bytes), RingAllReduceSeconds(8, bytes, c.intra_node), 1e-12);
}

TEST(RingAllReduce, FourGpuRingByHand) {
  // 2(n-1) = 6 steps of 250 MB over 450 GB/s NVLink ports plus the 2 us port-to-port latency.
  EXPECT_NEAR(RingSeconds(1, 4, 1e9), 6 * (2e-6 + 250e6 / 450e9), 1e-12);
}

TEST(RingAllReduce, PerMessageRingAcrossNodesIsBoundByTheNicHop) {
  // 16 GPUs on 2 nodes: the two inter-node hops (NIC, 50 GB/s) gate every step.
  const ClusterSpec c = *MakeCluster("dgx-h100", 2);
  const double bytes = 1.6e9;
  EXPECT_NEAR(RingSeconds(2, 16, bytes), RingAllReduceSeconds(16, bytes, c.inter_node), 1e-12);
}

}  // namespace
}  // namespace pipette

namespace pipette {
namespace {

TEST(ClusterPlatform, BuildsOnlyTheGpusAJobUsesOnItsNodes) {
  // Two GPUs of an 8192-node cluster: two hosts on two nodes, not 65,536 hosts on 8192 nodes (the
  // whole cluster took over a minute to build and grew quadratically with the node count).
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 8192);
  const ClusterPlatform platform = BuildClusterPlatform(cluster, "", nullptr, {8 * 5000 + 1, 3});
  ASSERT_EQ(platform.gpus.size(), 2u);
  EXPECT_EQ(platform.nodes, 2);
  EXPECT_EQ(engine->get_host_count(), 2u);
  EXPECT_EQ(platform.gpus[0]->get_name(), "node5000-gpu1");
  EXPECT_EQ(platform.gpus[1]->get_name(), "node0-gpu3");
  // Per node: the GPU's NVLink port, its NIC and the node's uplink (split-duplex: two links
  // each), and SimGrid's loopback.
  EXPECT_EQ(engine->get_link_count(), 2u * (2 + 2 + 2) + 1);
  EXPECT_EQ(ClusterPlatformRoutes(cluster, {8 * 5000 + 1, 3}), 2 * (0 + 2 + kRoutesPerSwitchGpu));
  // The message between them still crosses NIC, uplinks and NIC.
  const double bytes = 1e9;
  double seconds = -1;
  sg4::Actor::create("sender", platform.gpus[0], [&] {
    sg4::Comm::sendto(platform.gpus[0], platform.gpus[1], static_cast<uint64_t>(bytes));
    seconds = sg4::Engine::get_clock();
  });
  engine->run();
  EXPECT_NEAR(seconds, cluster.inter_node.latency + bytes / cluster.inter_node.bandwidth, 1e-12);
}

TEST(ClusterPlatform, RoutesGrowWithTheSquareOfTheGpusUsedPerNode) {
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  EXPECT_EQ(ClusterPlatformRoutes(cluster, {}), 4 * (8 * 7 + 2 * 8 + 8 * kRoutesPerSwitchGpu));
  EXPECT_EQ(ClusterPlatformRoutes(cluster, {0, 1, 2, 8}),
            (3 * 2 + 2 * 3 + 3 * kRoutesPerSwitchGpu) + (0 + 2 + kRoutesPerSwitchGpu));
}

TEST(RingAllReduce, RefusesBytesThatAreNotAByteCount) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const ClusterPlatform platform = BuildClusterPlatform(*MakeCluster("dgx-h100", 1), "");
  double finish = 0;
  for (double bytes : {-1.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), 1e300}) {
    const Status status = LaunchRingAllReduce(platform.gpus, bytes, &finish);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bytes;
    EXPECT_NE(status.message().find("a number of bytes in [0, 1e+15]"), std::string::npos)
        << status.message();
  }
  EXPECT_EQ(LaunchRingAllReduce({}, 1, &finish).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sg4::Engine::get_instance()->get_actor_count(), 0u);
}

}  // namespace
}  // namespace pipette
