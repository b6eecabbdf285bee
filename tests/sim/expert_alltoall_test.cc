// The MoE all-to-all simulated on the cluster (sim/expert_alltoall.h). On an idle network each
// phase takes cost/collectives.h's alpha-beta time: every peer across nodes (the NICs), a group
// split over NVLink and NICs, and several layers aggregated into one phase. A pipeline whose
// all-to-all shares no link with its messages equals evaluate() with those times, for 1F1B and
// for DualPipe-V with and without the overlap model. (Simulate() runs once per process: one test
// runs every case.)
#include <gtest/gtest.h>

#include <memory>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/collectives.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

struct Case {
  std::string schedule;
  int p, m, ep;
  std::vector<int> gpus;  // replica d's rank r: gpus[d * p + r]
  std::int64_t bytes;     // per GPU and phase, the stage's MoE layers together
  int layers;
  bool overlap;
  std::vector<AllToAllPeers> kinds;  // every member's peers by kind of link
};

TEST(ExpertAllToAll, IdleNetworkPhasesTakeTheirAlphaBetaTimeAndMatchEvaluate) {
  const std::unique_ptr<ClusterSpec> cluster =
      std::make_unique<ClusterSpec>(*MakeCluster("dgx-h100", 8));
  const LinkSpec nvl = cluster->intra_node, ib = cluster->inter_node;
  const double b = 8e8;  // 800 MB per GPU and phase
  const std::vector<AllToAllPeers> across = {{ib, 3}}, split = {{nvl, 1}, {ib, 2}},
                                   pair = {{ib, 1}};
  const Case cases[] = {
      // One GPU per node: 3 peers over the NICs; with 3 layers aggregated.
      {"1f1b", 1, 1, 4, {0, 8, 16, 24}, 800'000'000, 1, true, across},
      {"1f1b", 1, 1, 4, {0, 8, 16, 24}, 800'000'000, 3, true, across},
      // Two GPUs in each of two nodes: one NVLink peer, two NIC peers (the slower kind).
      {"1f1b", 1, 2, 4, {0, 1, 8, 9}, 800'000'000, 2, true, split},
      // Pipelines inside a node (messages on NVLink), the all-to-all across nodes (NICs).
      {"1f1b", 2, 8, 2, {0, 1, 8, 9}, 40'000'000, 2, true, pair},
      {"dualpipe-v", 2, 8, 2, {0, 1, 8, 9}, 40'000'000, 2, true, pair},
      {"dualpipe-v", 2, 8, 2, {0, 1, 8, 9}, 40'000'000, 2, false, pair},
      {"dualpipe-v", 4, 8, 2, {0, 1, 2, 3, 8, 9, 10, 11}, 200'000'000, 1, true, pair},
  };
  // The closed forms by hand: alpha + 3/4 S/beta; + 2 alpha for 3 layers; the slower kind
  // after one extra (the slowest) latency.
  EXPECT_DOUBLE_EQ(AllToAllSeconds(4, b, ib), ib.latency + 0.75 * b / ib.bandwidth);
  EXPECT_DOUBLE_EQ(AllToAllSeconds(4, b, 1, across), ib.latency + 0.75 * b / ib.bandwidth);
  EXPECT_DOUBLE_EQ(AllToAllSeconds(4, b, 3, across), 3 * ib.latency + 0.75 * b / ib.bandwidth);
  EXPECT_DOUBLE_EQ(AllToAllSeconds(4, b, 2, split),
                   ib.latency + std::max(nvl.latency + 0.25 * b / nvl.bandwidth,
                                         ib.latency + 0.5 * b / ib.bandwidth));
  std::vector<double> phases;

  std::vector<std::unique_ptr<Program>> programs;
  std::vector<double> expected;
  std::vector<SimulationCase> sim_cases;
  const StageCost cost{1e-3, 1.5e-3, 0.5e-3};
  for (const Case& c : cases) {
    programs.push_back(std::make_unique<Program>(
        *Lower(*MakeSchedule(c.schedule, ScheduleParams{c.p, 0, c.m, 0}))));
    const Program& program = *programs.back();
    const int stages = program.num_stages();
    const double phase = AllToAllSeconds(c.ep, static_cast<double>(c.bytes), c.layers, c.kinds);
    phases.push_back(phase);
    Costs costs = Costs::Uniform(stages, cost);
    costs.alltoall.assign(stages, StageComm{2 * phase, 2 * phase});
    costs.overlap_alltoall = c.overlap;
    EvaluateOptions options;
    options.p2p_latency = nvl.latency;  // 0-byte messages inside a node
    expected.push_back(Evaluate(program, costs, options)->makespan);

    SimulationCase sc;
    sc.program = &program;
    sc.costs = costs;
    sc.sizes.stage_output_bytes.assign(stages, 0);
    sc.cluster = cluster.get();
    sc.replicas = c.ep;
    sc.gpu_of_rank = c.gpus;
    sc.experts.ep = c.ep;
    sc.experts.stage_bytes.assign(stages, c.bytes);
    sc.experts.stage_layers.assign(stages, c.layers);
    sim_cases.push_back(std::move(sc));
  }
  Result<std::vector<SimulationResult>> results = Simulate(sim_cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (std::size_t k = 0; k < sim_cases.size(); ++k) {
    EXPECT_NEAR((*results)[k].pipeline_makespan, expected[k], 1e-9 * expected[k])
        << cases[k].schedule << " p = " << cases[k].p << " ep = " << cases[k].ep
        << " overlap = " << cases[k].overlap;
  }
  // A forward alone: its compute, then two phases.
  EXPECT_NEAR((*results)[0].trace.front().end, 1e-3 + 2 * phases[0], 1e-15);
  // The all-to-all is what DualPipe-V's overlap hides: on, the step is shorter.
  EXPECT_LT((*results)[4].pipeline_makespan, (*results)[5].pipeline_makespan - 1e-3);
}

TEST(ExpertAllToAll, RefusesExpertParallelismWithoutAClusterOrWithBadShapes) {
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 2, 0}));
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 1);
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(2, {});
  sc.experts.ep = 2;
  sc.experts.stage_bytes = {1, 1};
  sc.experts.stage_layers = {1, 1};
  sc.replicas = 2;
  Result<std::vector<SimulationResult>> none = Simulate({sc});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("ep = 2 needs a cluster"), std::string::npos)
      << none.status().message();
  sc.cluster = &cluster;
  sc.gpu_of_rank = {0, 1, 2, 3};
  sc.experts.stage_layers = {1};
  Result<std::vector<SimulationResult>> shape = Simulate({sc});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("for 2 stages"), std::string::npos)
      << shape.status().message();
}

}  // namespace
}  // namespace pipette
