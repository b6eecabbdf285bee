// --placement-order decides which links the traffic shares: pp 8 x dp 2 on two 8-GPU nodes. With
// tp,pp,dp each replica fills a node: every pipeline message stays on NVLink and every gradient
// all-reduce crosses the NICs. With tp,dp,pp the two replicas of a rank sit side by side: the
// all-reduces stay on NVLink, and the message from rank 3 (GPU 6) to rank 4 (GPU 8) crosses nodes.
// One Simulate() per test (SimGrid: one engine per process; ctest runs each test alone).
#include <gtest/gtest.h>

#include "pipette/cost/collectives.h"
#include "sim/model_simulation.h"

namespace pipette {
namespace {

ModelPlan Plan(const char* order) {
  ModelPlanOptions options;
  options.model = "gpt3-1.3b";
  options.cluster = "dgx-h100";
  options.nodes = 2;
  options.schedule = "1f1b";
  options.config.pp = 8;
  options.config.dp = 2;
  options.config.microbatches = 8;
  options.config.placement = *ParsePlacementOrder(order);
  Result<ModelPlan> plan = BuildModelPlan(options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

// Checks every rank's all-reduce against the ring over `allreduce_link`, and the first forward
// message from rank 3 to rank 4 against alpha + S/beta of `message_link`.
void Check(const char* order, bool allreduce_inter, bool message_inter) {
  const ModelPlan plan = Plan(order);
  const LinkSpec& ar = allreduce_inter ? plan.cluster.inter_node : plan.cluster.intra_node;
  const LinkSpec& msg = message_inter ? plan.cluster.inter_node : plan.cluster.intra_node;
  Result<ModelSimulation> m = SimulateModel(plan, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (const StageInfo& stage : plan.plan.stages) {
    const double bytes = stage.params_per_gpu * BytesOf(plan.config.dtype);
    EXPECT_DOUBLE_EQ(m->allreduce[stage.rank], RingAllReduceSeconds(2, bytes, ar)) << stage.rank;
  }
  double sent = -1, arrived = -1;
  for (const TraceEvent& e : m->sim.trace) {
    if (e.step != 0 || e.action.microbatch != 0) continue;
    if (e.rank == 3 && e.action.kind == ActionKind::kForward) sent = e.end;
    if (e.rank == 4 && e.action.kind == ActionKind::kRecvForward) arrived = e.end;
  }
  ASSERT_GE(sent, 0);
  ASSERT_GE(arrived, 0);
  const double bytes = static_cast<double>(plan.plan.stages[3].boundary_bytes);
  EXPECT_NEAR(arrived - sent, msg.latency + bytes / msg.bandwidth, 1e-12);
}

TEST(PlacementOrder, ReplicasOutermostKeepThePipelineInANodeAndReduceAcrossNodes) {
  EXPECT_EQ(GpuOf(Plan("tp,pp,dp").config, 1, 3), 11);
  Check("tp,pp,dp", /*allreduce_inter=*/true, /*message_inter=*/false);
}

TEST(PlacementOrder, DataParallelInnermostReducesInANodeAndSendsAcrossNodes) {
  EXPECT_EQ(GpuOf(Plan("tp,dp,pp").config, 1, 3), 7);
  Check("tp,dp,pp", /*allreduce_inter=*/false, /*message_inter=*/true);
}

TEST(PlacementOrder, ParsesTheTwoOrdersAndRefusesOthers) {
  EXPECT_EQ(PlacementOrderName(*ParsePlacementOrder("tp,dp,pp")), "tp,dp,pp");
  EXPECT_EQ(PlacementOrderName(PlacementOrder{}), "tp,pp,dp");
  for (const char* bad : {"pp,tp,dp", "tp,pp", "tp,pp,pp", "tp,pp,dp,dp", "", "tp, pp, dp"}) {
    const Result<PlacementOrder> order = ParsePlacementOrder(bad);
    ASSERT_FALSE(order.ok()) << bad;
    EXPECT_EQ(order.status().message(),
              std::string("--placement-order = '") + bad +
                  "': must list tp, pp and dp once each, innermost first, with tp first (a "
                  "tensor-parallel group stays on consecutive GPUs of one node): tp,pp,dp "
                  "(replicas outermost, the default) or tp,dp,pp (data-parallel innermost)");
  }
}

}  // namespace
}  // namespace pipette
