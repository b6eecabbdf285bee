// The cluster platform gives messages their alpha-beta times, and a ring all-reduce simulated
// message by message matches 2(n-1)(alpha + S/(n beta)): S bytes over a path of bandwidth B
// and latency A take A + S/B (CM02 without cross-traffic or TCP-gamma bound). ctest runs every
// TEST in its own process, which SimGrid needs (one engine per process).
#include "sim/cluster_platform.h"

#include <gtest/gtest.h>

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
  LaunchRingAllReduce({platform.gpus.begin(), platform.gpus.begin() + n}, bytes, &finish);
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
