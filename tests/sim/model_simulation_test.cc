// SimulateModel: the data-parallel all-reduce of each rank goes over NVLink while its ring stays in
// a node and over the NICs once it leaves one, its events carry the gradient bytes, and the step
// times, memory, MFU and tokens/s follow from the simulated step. Each test calls Simulate() once
// (SimGrid allows one engine per process; ctest runs every test in its own process).
#include "sim/model_simulation.h"

#include <gtest/gtest.h>

#include <numeric>

#include "pipette/cost/collectives.h"

namespace pipette {
namespace {

ModelPlan MustPlan(int pp, int dp, int nodes) {
  ModelPlanOptions options;
  options.model = "gpt3-1.3b";
  options.cluster = "dgx-h100";
  options.nodes = nodes;
  options.schedule = "1f1b";
  options.config.pp = pp;
  options.config.dp = dp;
  options.config.microbatches = 8;
  Result<ModelPlan> plan = BuildModelPlan(options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

// Per rank: the gradient bytes its all-reduce moves.
std::vector<double> GradientBytes(const ModelPlan& plan) {
  std::vector<double> bytes(plan.config.pp, 0.0);
  for (const StageInfo& stage : plan.plan.stages) {
    bytes[stage.rank] += stage.params_per_gpu * BytesOf(plan.config.dtype);
  }
  return bytes;
}

TEST(ModelSimulation, AllReduceInsideANodeUsesNvlink) {
  // pp = 4, dp = 2 on one node: replica 1's rank r is GPU 4 + r, beside replica 0's.
  const ModelPlan plan = MustPlan(4, 2, 1);
  Result<ModelSimulation> m = SimulateModel(plan, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<double> bytes = GradientBytes(plan);
  ASSERT_EQ(m->allreduce.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(m->allreduce[r], RingAllReduceSeconds(2, bytes[r], plan.cluster.intra_node));
  }
  ASSERT_FALSE(m->sim.collectives.empty());
  for (const AllReduceEvent& a : m->sim.collectives) {
    EXPECT_EQ(a.bytes, static_cast<std::int64_t>(bytes[a.rank])) << "rank " << a.rank;
  }
}

TEST(ModelSimulation, AllReduceAcrossNodesUsesTheNicsAndTheMetricsFollowTheStep) {
  // pp = 4, dp = 4 on two nodes: replicas 0 and 1 on node 0, 2 and 3 on node 1.
  const ModelPlan plan = MustPlan(4, 4, 2);
  Result<ModelSimulation> m = SimulateModel(plan, ModelSimulationOptions{false, 0, 2});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<double> bytes = GradientBytes(plan);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(m->allreduce[r], RingAllReduceSeconds(4, bytes[r], plan.cluster.inter_node));
  }
  ASSERT_EQ(m->step_times.size(), 2u);
  EXPECT_DOUBLE_EQ(m->step_time, m->sim.makespan / 2);
  EXPECT_NEAR(std::accumulate(m->step_times.begin(), m->step_times.end(), 0.0), m->sim.makespan,
              1e-12);
  const ParallelConfig& c = plan.config;
  EXPECT_DOUBLE_EQ(m->tokens_per_s, 8.0 * c.micro_batch_size * c.seq_len * 4 / m->step_time);
  EXPECT_GT(m->mfu, 0.0);
  EXPECT_LT(m->mfu, plan.efficiency);
  ASSERT_EQ(m->memory.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(m->peak_memory[r], m->memory[r].peak_bytes);
  EXPECT_FALSE(m->oom.has_value());
}

}  // namespace
}  // namespace pipette
