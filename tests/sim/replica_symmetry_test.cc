// Replica symmetry (sim/replica_symmetry.h): a case simulated with only its distinct replicas must
// give exactly what simulating every replica gives, and simulate only those replicas. Ring
// symmetry (ReplicaPeriod): with ring all-reduces joining neighbouring replicas, a period of
// replicas that the network maps onto the next period runs for all of them, and every event,
// collective and step must equal the run of every replica exactly; where no period passes the
// checks (an uneven layout, a ring of two), or the reduction is a tree, every replica runs. The MoE
// all-to-all over every replica folds the same way, its messages to copies of a sender's own
// replica sent to the sender's mirrors; over groups of ep < n replicas a period holds whole groups.
// ctest runs every TEST in its own process (one SimGrid engine per process).
#include <gtest/gtest.h>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/collectives.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/gradient_reduction.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

// GPU g of node n on a cluster of 8 GPUs per node.
int Gpu(int node, int g) { return node * 8 + g; }

// A case of `program` with ring reduction (100 MB buckets, overlapped with the backward) on
// `cluster`, rank r of replica d on GPU gpus[d * p + r], two steps.
SimulationCase RingCase(const Program& program, const ClusterSpec& cluster, std::vector<int> gpus,
                        bool symmetry) {
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(program.num_stages(), {1e-3, 1e-3, 1e-3});
  sc.sizes.stage_output_bytes.assign(program.num_stages(), 20'000'000);
  sc.cluster = &cluster;
  sc.replicas = static_cast<int>(gpus.size()) / program.p;
  sc.gpu_of_rank = std::move(gpus);
  sc.grad_reduction.mode = GradReduce::kRing;
  sc.grad_reduction.overlap = true;
  sc.grad_reduction.ranks =
      PlanGradientBuckets(program, std::vector<double>(program.num_stages(), 2e8), 1e8);
  sc.steps = 2;
  sc.replica_symmetry = symmetry;
  return sc;
}

// Rank r of replica d on GPU 4 d + r: two replicas per 8-GPU node.
std::vector<int> HalfNodes(int replicas, int p) {
  std::vector<int> gpus;
  for (int d = 0; d < replicas; ++d) {
    for (int r = 0; r < p; ++r) gpus.push_back(4 * d + r);
  }
  return gpus;
}

void ExpectSameRun(const SimulationResult& a, const SimulationResult& b) {
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
  ASSERT_EQ(a.updates.size(), b.updates.size());
  for (std::size_t k = 0; k < a.updates.size(); ++k) {
    EXPECT_EQ(a.updates[k].end, b.updates[k].end) << k;
  }
}

// Results in pairs (a case, then the same with every replica running): the first of pair j ran
// runs[j] replicas, the second `replicas`, and both gave the same run.
void ExpectFoldedPairs(const std::vector<SimulationResult>& r, const std::vector<int>& runs,
                       int replicas) {
  ASSERT_EQ(r.size(), 2 * runs.size());
  for (std::size_t j = 0; j < runs.size(); ++j) {
    EXPECT_EQ(r[2 * j].simulated_replicas, runs[j]) << "pair " << j;
    EXPECT_EQ(r[2 * j + 1].simulated_replicas, replicas) << "pair " << j;
    ExpectSameRun(r[2 * j], r[2 * j + 1]);
  }
}

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
  ExpectSameRun(a, b);
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

TEST(RingSymmetry, APeriodOfReplicasGivesEveryReplicasTimesExactly) {
  // Eight replicas of four ranks, two per node on four nodes, one NIC per node: the two replicas
  // of a node share its NIC for their rings' hops to the next node, and replica 2j's hop to
  // 2j + 1 stays on NVLink. Shifting by one replica maps an NVLink hop onto a NIC hop; by one node
  // (two replicas) the network maps onto itself, but the last replica's hop would then come back
  // into its own node; by two nodes (four replicas) both hold: 4 of 8 run. With experts buckets
  // (ep 2: rings over d, d + 2, ...) the same period holds.
  ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  cluster.nics_per_node = 1;
  const ClusterSpec copies[] = {cluster, cluster, cluster};
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{4, 0, 8, 0}));
  const SimulationCase on = RingCase(program, cluster, HalfNodes(8, 4), true);
  const SimulationCase off = RingCase(program, copies[0], HalfNodes(8, 4), false);
  SimulationCase experts_on = RingCase(program, copies[1], HalfNodes(8, 4), true);
  experts_on.grad_reduction.ep = 2;
  experts_on.grad_reduction.ranks =
      PlanGradientBuckets(program, std::vector<double>(4, 2e8), 1e8, std::vector<double>(4, 1e8));
  SimulationCase experts_off = experts_on;
  experts_off.cluster = &copies[2];
  experts_off.replica_symmetry = false;
  Result<std::vector<SimulationResult>> results = Simulate({on, off, experts_on, experts_off});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::vector<SimulationResult>& r = *results;
  ExpectFoldedPairs(r, {4, 4}, 8);
  // Replica 0's ranks reduced their two buckets (dense; or dense then experts) in both steps.
  EXPECT_EQ(r[0].collectives.size(), 4u * 2 * 2);
  EXPECT_EQ(r[2].collectives.size(), 4u * 2 * 2);
  // The NICs are shared: the rings take longer than the 8-member ring on idle links would.
  EXPECT_GT(r[0].collectives[0].end - r[0].collectives[0].start,
            RingAllReduceSeconds(8, 1e8, cluster.inter_node));
}

TEST(RingSymmetry, ARailOptimisedFabricRunsTwoScalableUnitsForAll) {
  // Rail-optimised, two nodes per scalable unit, one replica per node (p = 8), eight replicas:
  // a ring hop inside a unit crosses the rail's NICs only, one between units the rail leaves'
  // uplinks too. Shifting by one unit maps the network onto itself, but the last hop would come
  // back inside the unit; two units pass: 4 of 8 replicas run.
  ClusterSpec cluster = *MakeCluster("dgx-h100-superpod", 8);
  cluster.fabric.nodes_per_leaf = 2;
  const ClusterSpec copy = cluster;
  const Program program = *Lower(*MakeSchedule("zb-h1", ScheduleParams{8, 0, 8, 0}));
  std::vector<int> gpus(64);
  for (int g = 0; g < 64; ++g) gpus[g] = g;
  Result<std::vector<SimulationResult>> results =
      Simulate({RingCase(program, cluster, gpus, true), RingCase(program, copy, gpus, false)});
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].simulated_replicas, 4);
  EXPECT_EQ((*results)[1].simulated_replicas, 8);
  ExpectSameRun((*results)[0], (*results)[1]);
}

TEST(RingSymmetry, WithoutAPeriodOrWithTreesEveryReplicaRuns) {
  // Replicas 0 and 1 share node 0, replicas 2 and 3 have nodes 1 and 2 to themselves: no shift
  // maps the network onto itself. Two replicas on two nodes: the shift by one is a symmetry, but
  // a ring of one would send to itself. A tree is never reduced.
  ClusterSpec cluster = *MakeCluster("dgx-h100", 3);
  cluster.nics_per_node = 1;
  const ClusterSpec copies[] = {cluster, cluster};
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{4, 0, 8, 0}));
  const SimulationCase uneven =
      RingCase(program, cluster, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19}, true);
  const SimulationCase pair = RingCase(program, copies[0], {12, 13, 14, 15, 20, 21, 22, 23}, true);
  SimulationCase tree = RingCase(program, copies[1], {}, true);
  tree.replicas = 2;
  tree.gpu_of_rank.clear();
  for (int g : {0, 1, 2, 3, 8, 9, 10, 11}) tree.gpu_of_rank.push_back(g);
  tree.grad_reduction.mode = GradReduce::kTree;
  Result<std::vector<SimulationResult>> results = Simulate({uneven, pair, tree});
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].simulated_replicas, 4);
  EXPECT_EQ((*results)[1].simulated_replicas, 2);
  EXPECT_EQ((*results)[2].simulated_replicas, 2);
}

// `sc` with the MoE all-to-all over groups of `ep` replicas: 30 MB per GPU and phase, 2 layers.
SimulationCase WithExperts(SimulationCase sc, int ep) {
  const int stages = sc.program->num_stages();
  sc.experts.ep = ep;
  sc.experts.stage_bytes.assign(stages, 30'000'000);
  sc.experts.stage_layers.assign(stages, 2);
  return sc;
}

// Rank r of replica d on GPU r % 8 of node d * ceil(p / 8) + r / 8: whole nodes per replica.
std::vector<int> WholeNodes(int replicas, int p) {
  std::vector<int> gpus;
  const int nodes = (p + 7) / 8;
  for (int d = 0; d < replicas; ++d) {
    for (int r = 0; r < p; ++r) gpus.push_back(Gpu(d * nodes + r / 8, r % 8));
  }
  return gpus;
}

TEST(AllToAllSymmetry, AnAllToAllOverEveryReplicaFoldsOntoMirrorsExactly) {
  // Four replicas of two ranks, one node each, the all-to-all over all four (ep = n): a rank's
  // three messages per phase cross its NIC and node uplink to the other nodes. With ring
  // reduction, one replica cannot run for all (its ring hop would come back to itself), two can:
  // replica 0's message to replica 2 goes to its own mirror (NIC up, uplink up and down, NIC
  // down), to replica 3 to replica 1. With the all-reduce analytic, one replica runs: all three
  // messages to its mirrors. Every event equals the run of every replica. On a single node (four
  // replicas of two GPUs, NVLink only) the mirrors loop over the NVLink ports.
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  const ClusterSpec copies[] = {cluster, cluster, cluster, cluster, cluster};
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 8, 0}));
  const SimulationCase ring = WithExperts(RingCase(program, cluster, WholeNodes(4, 2), true), 4);
  SimulationCase ring_all = ring;
  ring_all.cluster = &copies[0];
  ring_all.replica_symmetry = false;
  SimulationCase analytic = ring;
  analytic.cluster = &copies[1];
  analytic.grad_reduction = {};
  analytic.allreduce = {2e-3, 3e-3};
  SimulationCase analytic_all = analytic;
  analytic_all.cluster = &copies[2];
  analytic_all.replica_symmetry = false;
  SimulationCase one_node = analytic;
  one_node.cluster = &copies[3];
  one_node.gpu_of_rank = {0, 1, 2, 3, 4, 5, 6, 7};
  SimulationCase one_node_all = one_node;
  one_node_all.cluster = &copies[4];
  one_node_all.replica_symmetry = false;
  Result<std::vector<SimulationResult>> results =
      Simulate({ring, ring_all, analytic, analytic_all, one_node, one_node_all});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::vector<SimulationResult>& r = *results;
  ExpectFoldedPairs(r, {2, 1, 1}, 4);
  // The phases take time: an F of rank 0 ends after its compute and two phases of 3 x 7.5 MB
  // over a NIC (a lower bound: the first F has its NIC to itself).
  const double phase = 3 * 7.5e6 / cluster.inter_node.bandwidth;
  EXPECT_GT(r[2].trace.front().end, 1e-3 + 2 * phase);
}

TEST(AllToAllSymmetry, FabricsFoldWhereTheAllToAllStaysInsideATierAndRunAllOtherwise) {
  // Rail-optimised, four nodes per scalable unit, one replica of eight ranks per node. Four
  // replicas in one unit: every all-to-all message crosses the rail's NICs only, and one
  // replica's mirrors (NIC up and down) stand for the others: with the all-reduce analytic one
  // runs. Eight replicas over two units, all-to-all over all eight: a message to the other unit
  // crosses the rail leaves' uplinks, one inside it does not, and no period folds one unit onto
  // the other without sending one kind on the other's route: every replica runs. Over groups of
  // four (ep 4, each group in its unit) a period of one unit holds: 4 of 8 run.
  ClusterSpec cluster = *MakeCluster("dgx-h100-superpod", 8);
  cluster.fabric.nodes_per_leaf = 4;
  const ClusterSpec copies[] = {cluster, cluster, cluster, cluster, cluster};
  const Program program = *Lower(*MakeSchedule("zb-h1", ScheduleParams{8, 0, 8, 0}));
  SimulationCase unit = WithExperts(RingCase(program, cluster, WholeNodes(4, 8), true), 4);
  unit.grad_reduction = {};
  unit.allreduce = std::vector<double>(8, 1e-3);
  SimulationCase unit_all = unit;
  unit_all.cluster = &copies[0];
  unit_all.replica_symmetry = false;
  SimulationCase two_units = unit;
  two_units.cluster = &copies[1];
  two_units.replicas = 8;
  two_units.gpu_of_rank = WholeNodes(8, 8);
  two_units.experts.ep = 8;
  SimulationCase groups = two_units;
  groups.cluster = &copies[2];
  groups.experts.ep = 4;
  SimulationCase groups_all = groups;
  groups_all.cluster = &copies[3];
  groups_all.replica_symmetry = false;
  Result<std::vector<SimulationResult>> results =
      Simulate({unit, unit_all, two_units, groups, groups_all});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::vector<SimulationResult>& r = *results;
  EXPECT_EQ(r[0].simulated_replicas, 1);
  EXPECT_EQ(r[1].simulated_replicas, 4);
  EXPECT_EQ(r[2].simulated_replicas, 8);
  EXPECT_EQ(r[3].simulated_replicas, 4);
  EXPECT_EQ(r[4].simulated_replicas, 8);
  ExpectSameRun(r[0], r[1]);
  ExpectSameRun(r[3], r[4]);
}

TEST(AllToAllSymmetry, MirrorsClimbToTheLeafOrPodAndGroupsFoldWhole) {
  // One replica of eight ranks per node, one node per leaf: every all-to-all message crosses its
  // leaf's uplink (fat-tree, 2 levels: a mirror climbs to the spine), its pod's too (3 levels, one
  // leaf per pod: to the core), or its rail leaf's (rail-optimised, one node per unit). With the
  // all-reduce analytic one replica runs for all four in each. Over groups of two of eight
  // replicas (one node each, the single switch) with rings and experts buckets, a period holds
  // whole groups: 4 of 8 run (the expert rings d -> d + 2 need a multiple of 2 too).
  ClusterSpec tree = *MakeCluster("dgx-h100-ft-2to1", 4);
  tree.fabric.nodes_per_leaf = 1;
  ClusterSpec pods = tree;
  pods.fabric.levels = 3;
  pods.fabric.leaves_per_pod = 1;
  pods.fabric.oversubscription = {2.0, 2.0};
  ClusterSpec rails = *MakeCluster("dgx-h100-superpod", 4);
  rails.fabric.nodes_per_leaf = 1;
  const ClusterSpec single = *MakeCluster("dgx-h100", 8);
  const ClusterSpec copies[] = {tree, pods, rails, single};
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{8, 0, 8, 0}));
  std::vector<SimulationCase> cases;
  for (const ClusterSpec* c : std::initializer_list<const ClusterSpec*>{
           &tree, &pods, &rails, &copies[0], &copies[1], &copies[2]}) {
    SimulationCase sc = WithExperts(RingCase(program, *c, WholeNodes(4, 8), true), 4);
    sc.grad_reduction = {};
    sc.allreduce = std::vector<double>(8, 1e-3);
    sc.replica_symmetry = cases.size() < 3;
    cases.push_back(std::move(sc));
  }
  const Program pair = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 8, 0}));
  for (const ClusterSpec* c : std::initializer_list<const ClusterSpec*>{&single, &copies[3]}) {
    SimulationCase sc = WithExperts(RingCase(pair, *c, WholeNodes(8, 2), true), 2);
    sc.grad_reduction.ep = 2;
    sc.grad_reduction.ranks =
        PlanGradientBuckets(pair, std::vector<double>(2, 2e8), 1e8, std::vector<double>(2, 1e8));
    sc.replica_symmetry = c == &single;
    cases.push_back(std::move(sc));
  }
  Result<std::vector<SimulationResult>> results = Simulate(cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::vector<SimulationResult>& r = *results;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(r[k].simulated_replicas, 1) << k;
    EXPECT_EQ(r[k + 3].simulated_replicas, 4) << k;
    ExpectSameRun(r[k], r[k + 3]);
  }
  EXPECT_EQ(r[6].simulated_replicas, 4);
  EXPECT_EQ(r[7].simulated_replicas, 8);
  ExpectSameRun(r[6], r[7]);
  // The pods' tier makes the phases slower than the leaves' alone (oversubscribed twice).
  EXPECT_GT(r[1].makespan, r[0].makespan);
}

}  // namespace
}  // namespace pipette
