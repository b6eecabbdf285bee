// Several training steps and the data-parallel all-reduce inside the simulation: steps run back to
// back, each rank's all-reduce waits for that rank in every replica, and the next step starts when
// the rank's all-reduce is over. Exact values worked by hand.
#include <gtest/gtest.h>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

TEST(SimulatedSteps, RunBackToBackWithEachRanksAllReduce) {
  // GPipe, p = 2, m = 1, F = 1, B = 2, ideal network.
  //   step 0: r0 F [0,1]; r1 F [1,2], B [2,4], all-reduce [4,7]; r0 B [4,6], all-reduce [6,7].
  //   step 1: r0 F [7,8]; r1 F [8,9], B [9,11], all-reduce [11,14]; r0 B [11,13], [13,14].
  // A plain case with no all-reduce repeats every 6.
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 1, 0}));
  SimulationCase with;
  with.program = &program;
  with.costs = Costs::Uniform(2, {1, 1, 1});
  with.steps = 2;
  with.allreduce = {1, 3};
  SimulationCase plain = with;
  plain.allreduce.clear();
  plain.steps = 3;
  Result<std::vector<SimulationResult>> results = Simulate({with, plain});
  ASSERT_TRUE(results.ok()) << results.status().message();

  const SimulationResult& r = (*results)[0];
  EXPECT_EQ(r.step_end, (std::vector<double>{7, 14}));
  EXPECT_EQ(r.makespan, 14);
  EXPECT_EQ(r.pipeline_makespan, 6);
  EXPECT_EQ(r.busy, (std::vector<double>{3, 3}));  // step 0
  ASSERT_EQ(r.collectives.size(), 4u);             // rank by rank, step by step
  const double want[4][4] = {{0, 0, 6, 7}, {0, 1, 13, 14}, {1, 0, 4, 7}, {1, 1, 11, 14}};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(r.collectives[k].rank, want[k][0]) << k;
    EXPECT_EQ(r.collectives[k].step, want[k][1]) << k;
    EXPECT_EQ(r.collectives[k].start, want[k][2]) << k;
    EXPECT_EQ(r.collectives[k].end, want[k][3]) << k;
  }
  // Both steps traced with the program's instruction ids.
  EXPECT_EQ(r.trace.size(), 2 * program.num_instructions());
  int step1_forward_rank1 = 0;
  for (const TraceEvent& e : r.trace) {
    if (e.step == 1 && e.rank == 1 && e.action.kind == ActionKind::kForward) {
      EXPECT_EQ(e.start, 8);
      ++step1_forward_rank1;
    }
  }
  EXPECT_EQ(step1_forward_rank1, 1);

  EXPECT_EQ((*results)[1].step_end, (std::vector<double>{6, 12, 18}));
  EXPECT_TRUE((*results)[1].collectives.empty());
}

TEST(SimulatedSteps, AllReduceWaitsForTheSlowestReplica) {
  // Replica 0 on GPUs 0 and 1 (NVLink), replica 1 on GPUs 2 and 8 (across nodes, slower
  // messages): every rank's all-reduce starts when replica 1's rank has finished.
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 2);
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 4, 0}));
  const Costs costs = Costs::Uniform(2, {1e-3, 1e-3, 1e-3});
  const double bytes = 2e7;
  SimulationCase sc;
  sc.program = &program;
  sc.costs = costs;
  sc.sizes.stage_output_bytes = {static_cast<std::int64_t>(bytes), 0};
  sc.cluster = &cluster;
  sc.replicas = 2;
  sc.gpu_of_rank = {0, 1, 2, 8};
  sc.allreduce = {5e-3, 5e-3};
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_TRUE(results.ok()) << results.status().message();

  EvaluateOptions fast, slow;
  fast.record_timeline = slow.record_timeline = true;
  fast.p2p_latency = cluster.intra_node.latency + bytes / cluster.intra_node.bandwidth;
  slow.p2p_latency = cluster.inter_node.latency + bytes / cluster.inter_node.bandwidth;
  const Evaluation replica0 = *Evaluate(program, costs, fast);
  const Evaluation replica1 = *Evaluate(program, costs, slow);
  const SimulationResult& r = results->front();
  EXPECT_NEAR(r.pipeline_makespan, replica0.makespan, 1e-12);
  ASSERT_EQ(r.collectives.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const double slow_end = replica1.timeline[rank].back().end;
    ASSERT_GT(slow_end, replica0.timeline[rank].back().end + 1e-6);
    EXPECT_NEAR(r.collectives[rank].start, slow_end, 1e-12) << rank;
    EXPECT_NEAR(r.collectives[rank].end, slow_end + 5e-3, 1e-12) << rank;
  }
  EXPECT_NEAR(r.makespan, replica1.makespan + 5e-3, 1e-12);
}

TEST(SimulatedSteps, RejectsBadStepsAndAllReduceTimes) {
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 1, 0}));
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(2, {1, 1, 1});
  sc.steps = 0;
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().message(), "simulation case 0: steps = 0: must be >= 1");
  sc.steps = 1;
  sc.allreduce = {1};
  results = Simulate({sc});
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().message(), "simulation case 0: 1 all-reduce times for 2 ranks");
  sc.allreduce = {1, -1};
  results = Simulate({sc});
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("all-reduce time -1"), std::string::npos);
}

}  // namespace
}  // namespace pipette
