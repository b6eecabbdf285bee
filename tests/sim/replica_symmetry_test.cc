// Replica symmetry (sim/replica_symmetry.h): a case simulated with only its distinct replicas must
// give exactly what simulating every replica gives, and simulate only those replicas.
#include <gtest/gtest.h>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

// GPU g of node n on a cluster of 8 GPUs per node.
int Gpu(int node, int g) { return node * 8 + g; }

TEST(ReplicaSymmetry, DistinctReplicasGiveEveryReplicasTimesExactly) {
  // Six nodes, one NIC each. Four ranks per replica, two per node, so the messages between ranks
  // 1 and 2 cross both nodes' NICs and uplinks. Replicas 0 and 1 share nodes 0 and 1 (and contend
  // on their NICs), replicas 2 and 3 share nodes 2 and 3 the same way: the groups {0, 1} and
  // {2, 3} are alike. Replica 4 has nodes 4 and 5 to itself: its own class, faster. So 0, 1 and 4
  // run; 2 and 3 are copies of 0 and 1. The same case with the symmetry off runs all five, and
  // replica 0's layout alone shows the contention.
  ClusterSpec cluster = *MakeCluster("dgx-h100", 6);
  cluster.nics_per_node = 1;
  const ClusterSpec copy = cluster, single = cluster;
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{4, 0, 8, 0}));
  SimulationCase on;
  on.program = &program;
  on.costs = Costs::Uniform(4, {1e-3, 2e-3, 0});
  on.sizes.stage_output_bytes = {50'000'000, 50'000'000, 50'000'000, 0};  // 1 ms at 50 GB/s
  on.cluster = &cluster;
  on.replicas = 5;
  for (const auto& [node, g] : {std::pair{0, 0}, {0, 2}, {2, 0}, {2, 2}, {4, 0}}) {
    for (const int k : {0, 1}) on.gpu_of_rank.push_back(Gpu(node, g + k));
    for (const int k : {0, 1}) on.gpu_of_rank.push_back(Gpu(node + 1, g + k));
  }
  on.allreduce = {1e-3, 1e-3, 1e-3, 1e-3};
  on.steps = 2;
  SimulationCase off = on;
  off.cluster = &copy;
  off.replica_symmetry = false;
  SimulationCase alone = off;
  alone.cluster = &single;
  alone.replicas = 1;
  alone.gpu_of_rank.resize(4);
  Result<std::vector<SimulationResult>> results = Simulate({on, off, alone});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const SimulationResult& a = (*results)[0];
  const SimulationResult& b = (*results)[1];
  EXPECT_EQ(a.simulated_replicas, 3);
  EXPECT_EQ(b.simulated_replicas, 5);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.step_end, b.step_end);
  EXPECT_EQ(a.pipeline_makespan, b.pipeline_makespan);
  EXPECT_EQ(a.busy, b.busy);
  ASSERT_EQ(a.trace.size(), b.trace.size());
  for (std::size_t k = 0; k < a.trace.size(); ++k) {
    EXPECT_EQ(a.trace[k].start, b.trace[k].start) << k;
    EXPECT_EQ(a.trace[k].end, b.trace[k].end) << k;
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (std::size_t k = 0; k < a.collectives.size(); ++k) {
    EXPECT_EQ(a.collectives[k].start, b.collectives[k].start) << k;
    EXPECT_EQ(a.collectives[k].end, b.collectives[k].end) << k;
  }
  // The contention is real: replica 0's layout alone (replica 4's class) finishes its first step
  // earlier than replica 0 sharing its NICs with replica 1.
  EXPECT_GT(a.pipeline_makespan, (*results)[2].pipeline_makespan);
}

TEST(ReplicaSymmetry, WholeNodesPerReplicaOnTheSwitchSimulateOneReplica) {
  // pp 8 on 8-GPU nodes: every replica has a node (its links) to itself and all are alike.
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{8, 0, 8, 0}));
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(8, {1e-3, 2e-3, 0});
  sc.sizes.stage_output_bytes = std::vector<std::int64_t>(8, 1'000'000);
  sc.cluster = &cluster;
  sc.replicas = 4;
  for (int g = 0; g < 32; ++g) sc.gpu_of_rank.push_back(g);
  sc.allreduce = std::vector<double>(8, 1e-3);
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].simulated_replicas, 1);
}

}  // namespace
}  // namespace pipette
