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

namespace pipette {
namespace {

ModelPlanOptions Options(double efficiency) {
  ModelPlanOptions options;
  options.model = "gpt3-1.3b";
  options.cluster = "dgx-h100";
  options.schedule = "1f1b";
  options.config.pp = 4;
  options.config.microbatches = 8;
  options.efficiency = efficiency;
  return options;
}

TEST(ModelSimulation, AnInfiniteStageTimeIsRefusedNamingTheEfficiency) {
  // --efficiency 1e-320 lies in (0, 1] but makes every layer take forever: SimGrid ended it in
  // "deadlock detected" and a segfault.
  Result<ModelPlan> plan = BuildModelPlan(Options(1e-320));
  ASSERT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message().rfind("--efficiency = 1e-320 (of 989 TFLOP/s bf16 on cluster "
                                          "'dgx-h100'; layer 'block0.attn': ",
                                          0),
            0u)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("): layer 'block0.attn' forward would take inf s; a "
                                         "single duration must lie in [0, 1e+06] s"),
            std::string::npos)
      << plan.status().message();
}

TEST(ModelSimulation, AnAbsurdFiniteStageTimeIsRefusedNamingTheStage) {
  // 1e-300 gave status ok with a 10^300 ms step; 1e-9 makes each layer under the bound but the
  // stage of six layers over it.
  Result<ModelPlan> absurd = BuildModelPlan(Options(1e-300));
  ASSERT_EQ(absurd.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(absurd.status().message().find("forward would take 1.04e+296 s"), std::string::npos)
      << absurd.status().message();
  Result<ModelPlan> slow = BuildModelPlan(Options(1e-9));
  ASSERT_EQ(slow.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slow.status().message().rfind("--efficiency = 1e-09 (", 0), 0u)
      << slow.status().message();
  EXPECT_NE(slow.status().message().find("): stage 0 forward would take 1.56e+06 s"),
            std::string::npos)
      << slow.status().message();
  EXPECT_TRUE(BuildModelPlan(Options(1e-6)).ok());  // 1.6e3 s per stage: slow, but a number
}

TEST(ModelSimulation, AnAbsurdLinkIsRefusedBeforeSimulating) {
  ModelPlanOptions options = Options(0.5);
  options.config.dp = 2;
  Result<ModelPlan> plan = BuildModelPlan(options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  plan->cluster.intra_node.bandwidth = 1;  // 1 B/s, in a ClusterSpec built in code: no file floors
  const Status links = CheckModelSimulation(*plan, {});
  ASSERT_EQ(links.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(links.message(),
            "cluster 'dgx-h100': intra_node.bandwidth_gb_per_s = 1e-09, latency_us = 2: the "
            "bandwidth must be a finite number >= 0.001 GB/s and the latency in [0, 1e+06] us");
  // SimulateModel checks first: no engine starts.
  EXPECT_EQ(SimulateModel(*plan, {}).status().message(), links.message());
}

}  // namespace
}  // namespace pipette
