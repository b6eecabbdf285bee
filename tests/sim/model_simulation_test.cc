// SimulateModel: the data-parallel all-reduce of each rank goes over NVLink while its ring stays in
// a node and over the NICs once it leaves one, its events carry the gradient bytes, and the step
// times, memory, MFU and tokens/s follow from the simulated step. Each test calls Simulate() once
// (SimGrid allows one engine per process; ctest runs every test in its own process).
#include "sim/model_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>

#include "pipette/cost/collectives.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/uneven_work.h"

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
  ModelSimulationOptions two_steps;
  two_steps.steps = 2;
  Result<ModelSimulation> m = SimulateModel(plan, two_steps);
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

TEST(ModelSimulation, EachSequenceLengthIsPricedByTheModelOnTheSamePartition) {
  const ModelPlan plan = MustPlan(4, 1, 1);  // seq_len 2048 (the default)
  ASSERT_EQ(plan.config.seq_len, 2048);
  // At the plan's own length: the partition's costs, bit for bit.
  Result<StageCostsAtLength> same = StageCostsAt(plan, "gpt3-1.3b", 2048);
  ASSERT_TRUE(same.ok()) << same.status().message();
  const Costs reference = plan.plan.ToCosts();
  for (std::size_t s = 0; s < reference.stages.size(); ++s) {
    EXPECT_EQ(same->costs.stages[s].f, reference.stages[s].f);
    EXPECT_EQ(same->costs.stages[s].i, reference.stages[s].i);
    EXPECT_EQ(same->costs.stages[s].w, reference.stages[s].w);
  }
  // FLOPs are a s + b s^2 (attention's scores and values grow with s^2): with F(s) the FLOPs at
  // s, (F(4s) - 4 F(s)) / (F(2s) - 2 F(s)) = (16 - 4) / (4 - 2) = 6.
  const double f1 = StageCostsAt(plan, "gpt3-1.3b", 256)->model_flops;
  const double f2 = StageCostsAt(plan, "gpt3-1.3b", 512)->model_flops;
  const double f4 = StageCostsAt(plan, "gpt3-1.3b", 1024)->model_flops;
  EXPECT_GT(f2 - 2 * f1, 0);
  EXPECT_NEAR((f4 - 4 * f1) / (f2 - 2 * f1), 6.0, 1e-9);
  // Times grow at least linearly and at most quadratically.
  const Costs half = StageCostsAt(plan, "gpt3-1.3b", 1024)->costs;
  for (std::size_t s = 0; s < reference.stages.size(); ++s) {
    EXPECT_GE(reference.stages[s].f, 2 * half.stages[s].f * (1 - 1e-12)) << "stage " << s;
    EXPECT_LE(reference.stages[s].f, 4 * half.stages[s].f) << "stage " << s;
  }
}

TEST(ModelSimulation, UnevenWorkOnTheIdealNetworkEqualsEvaluate) {
  const ModelPlan plan = MustPlan(4, 1, 1);
  UnevenWork work;
  work.reference_seqlen = 2048;
  work.microbatch_seqlens = {2048, 1024, 2048, 512, 2048, 1024, 2048, 1536};
  work.rank_speed = {1, 1, 0.5, 1};
  ModelSimulationOptions options;
  options.ideal_network = true;
  const CostsAtSeqlen costs_at = [&](int seq_len) -> Result<Costs> {
    PIPETTE_ASSIGN_OR_RETURN(StageCostsAtLength at, StageCostsAt(plan, "gpt3-1.3b", seq_len));
    return std::move(at.costs);
  };
  Result<Costs> costs = ApplyUnevenWork(costs_at, plan.schedule.placement, 8, work);
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  options.costs = *costs;
  options.microbatch_scale = SeqlenRatios(work);
  Result<ModelSimulation> m = SimulateModel(plan, options);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const double want = Evaluate(plan.program, *costs)->makespan;
  EXPECT_NEAR(m->sim.pipeline_makespan, want, 1e-12 * want);
  EXPECT_GT(want, Evaluate(plan.program, plan.plan.ToCosts())->makespan);
  // Tokens count the real lengths: 12288 of 8 x 2048 per step.
  EXPECT_NEAR(m->tokens_per_s * m->step_time, 12288.0 * plan.config.micro_batch_size, 1e-6);
  // Messages follow their microbatch's length.
  for (const TraceEvent& e : m->sim.trace) {
    if (e.action.kind != ActionKind::kSendForward) continue;
    const std::int64_t full = plan.plan.stages[e.action.stage].boundary_bytes;
    EXPECT_EQ(e.bytes, std::llround(full * options.microbatch_scale[e.action.microbatch]));
  }
}

TEST(ModelSimulation, OnMixedGpusEachStageIsTimedOnItsRanksGpu) {
  // Node 1's GPU has half the H100's peak and half its HBM bandwidth: every roofline time there
  // is exactly twice the H100's (tp = 1: no collective). The partition is the uniform cluster's.
  const std::string path = ::testing::TempDir() + "/mixed_half.toml";
  {
    std::ofstream out(path);
    out << "base = \"dgx-h100\"\nnodes = 2\ngpus_per_node = 2\nnics_per_node = 2\n"
           "[[node_groups]]\nnodes = \"1\"\nbase = \"dgx-h100\"\n[node_groups.gpu]\n"
           "name = \"H100-half\"\nhbm_tb_per_s = 1.675\ntflops = { bf16 = 494.5 }\n";
  }
  auto plan_on = [](const std::string& cluster, int nodes) {
    ModelPlanOptions options;
    options.model = "gpt3-1.3b";
    options.cluster = cluster;
    options.nodes = nodes;
    options.schedule = "1f1b";
    options.config.pp = 4;
    options.config.microbatches = 8;
    Result<ModelPlan> plan = BuildModelPlan(options);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    return std::move(plan).value();
  };
  const ModelPlan mixed = plan_on(path, 0);
  const std::string uniform_path = ::testing::TempDir() + "/uniform.toml";
  {
    std::ofstream out(uniform_path);
    out << "base = \"dgx-h100\"\nnodes = 2\ngpus_per_node = 2\nnics_per_node = 2\n";
  }
  const ModelPlan uniform = plan_on(uniform_path, 0);
  ASSERT_EQ(mixed.plan.stages.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    const StageInfo& a = mixed.plan.stages[s];
    const StageInfo& b = uniform.plan.stages[s];
    ASSERT_EQ(a.layers, b.layers) << "stage " << s;
    const double k = a.rank >= 2 ? 2.0 : 1.0;  // ranks 2 and 3 on node 1
    EXPECT_EQ(a.time_f, k * b.time_f) << "stage " << s;
    EXPECT_EQ(a.time_i, k * b.time_i) << "stage " << s;
    EXPECT_EQ(a.time_w, k * b.time_w) << "stage " << s;
  }
  // StageCostsAt prices on the same GPUs.
  const Costs again = StageCostsAt(mixed, "gpt3-1.3b", mixed.config.seq_len)->costs;
  EXPECT_EQ(again.stages[3].f, mixed.plan.stages[3].time_f);
}

}  // namespace
}  // namespace pipette
