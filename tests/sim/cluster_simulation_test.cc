// Simulating on the cluster platform with real message sizes. Where no two messages share a link
// direction at the same time, every message takes alpha + S/beta of its path, so the simulation
// must equal evaluate() with that latency: GPipe (forwards then backwards, one message per port
// direction at a time) and 1F1B on two GPUs, inside a node (NVLink) and across nodes (NIC), with
// transfers shorter than a forward. Longer transfers overlap on a port and share it: slower.
#include <gtest/gtest.h>

#include <memory>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

struct Case {
  std::string schedule;
  int p, m;
  std::vector<int> gpus;
  double bytes;
  int nodes;
};

TEST(ClusterSimulation, ContentionFreeRunsEqualEvaluateWithAlphaPlusSizeOverBeta) {
  // Every transfer is shorter than a forward (1 ms), so a port never carries two at once.
  const Case cases[] = {
      {"gpipe", 4, 8, {0, 1, 2, 3}, 1e6, 1},  // NVLink: 4.2 us per message
      {"1f1b", 2, 8, {2, 6}, 2e8, 1},         // NVLink: 0.45 ms
      {"gpipe", 2, 6, {0, 8}, 2e7, 2},        // across nodes, its NIC: 0.4 ms
      {"1f1b", 2, 8, {5, 13}, 3e7, 2},        // across nodes: 0.6 ms
      // Contention: 2 ms transfers overlap on the sender's port and share its bandwidth.
      {"gpipe", 2, 6, {0, 8}, 1e8, 2},
  };
  std::vector<std::unique_ptr<Program>> programs;
  std::vector<std::unique_ptr<ClusterSpec>> clusters;
  std::vector<double> expected;
  std::vector<SimulationCase> sim_cases;
  const StageCost cost{1e-3, 1.5e-3, 0.5e-3};
  for (const Case& c : cases) {
    clusters.push_back(std::make_unique<ClusterSpec>(*MakeCluster("dgx-h100", c.nodes)));
    const ClusterSpec& cluster = *clusters.back();
    programs.push_back(std::make_unique<Program>(
        *Lower(*MakeSchedule(c.schedule, ScheduleParams{c.p, 0, c.m, 0}))));
    const LinkSpec link = c.nodes == 1 ? cluster.intra_node : cluster.inter_node;
    EvaluateOptions options;
    options.p2p_latency = link.latency + c.bytes / link.bandwidth;
    const Costs costs = Costs::Uniform(programs.back()->num_stages(), cost);
    expected.push_back(Evaluate(*programs.back(), costs, options)->makespan);

    SimulationCase sc;
    sc.program = programs.back().get();
    sc.costs = costs;
    sc.sizes.stage_output_bytes.assign(programs.back()->num_stages(),
                                       static_cast<std::int64_t>(c.bytes));
    sc.cluster = &cluster;
    sc.gpu_of_rank = c.gpus;
    sim_cases.push_back(std::move(sc));
  }
  Result<std::vector<SimulationResult>> results = Simulate(sim_cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::size_t contended = sim_cases.size() - 1;
  EXPECT_GT((*results)[contended].makespan, expected[contended] * 1.05);
  for (std::size_t k = 0; k < contended; ++k) {
    EXPECT_NEAR((*results)[k].makespan, expected[k], 1e-12 * expected[k])
        << cases[k].schedule << " on GPUs " << cases[k].gpus[0] << ", " << cases[k].gpus[1];
  }
  // The messages are traced with their sizes.
  for (const TraceEvent& e : (*results)[0].trace) {
    if (!IsCompute(e.action.kind)) {
      EXPECT_EQ(e.bytes, 1'000'000);
    }
  }
}

TEST(ClusterSimulation, RejectsABadGpuMapping) {
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 1);
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 2, 0}));
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(2, {});
  sc.cluster = &cluster;
  sc.gpu_of_rank = {3, 3};
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().message(),
            "simulation case 0: rank 1 of replica 0 on GPU 3: cluster 'dgx-h100' has GPUs 0..7, "
            "one rank each");
}

TEST(ClusterSimulation, ReplicasSharingANicShareItsBandwidth) {
  // Two nodes with one NIC each. Replica 0 runs on GPUs 0 and 8, replica 1 on GPUs 1 and 9: both
  // replicas' messages cross the same NICs at the same moments, so each takes alpha + 2 S / beta.
  // A third replica-free case with the same program is the reference with the NIC to itself.
  ClusterSpec cluster = *MakeCluster("dgx-h100", 2);
  cluster.nics_per_node = 1;
  ClusterSpec alone = cluster;
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 3, 0}));
  const Costs costs = Costs::Uniform(2, {1e-3, 1e-3, 1e-3});
  const double bytes = 5e6;  // 0.1 ms on a 50 GB/s NIC: shorter than a forward
  SimulationCase shared;
  shared.program = &program;
  shared.costs = costs;
  shared.sizes.stage_output_bytes = {static_cast<std::int64_t>(bytes), 0};
  shared.cluster = &cluster;
  shared.replicas = 2;
  shared.gpu_of_rank = {0, 8, 1, 9};
  SimulationCase single = shared;
  single.cluster = &alone;
  single.replicas = 1;
  single.gpu_of_rank = {0, 8};
  Result<std::vector<SimulationResult>> results = Simulate({shared, single});
  ASSERT_TRUE(results.ok()) << results.status().message();

  const LinkSpec nic = cluster.inter_node;
  EvaluateOptions contended, free;
  contended.p2p_latency = nic.latency + 2 * bytes / nic.bandwidth;
  free.p2p_latency = nic.latency + bytes / nic.bandwidth;
  const double want_shared = Evaluate(program, costs, contended)->makespan;
  const double want_single = Evaluate(program, costs, free)->makespan;
  ASSERT_GT(want_shared, want_single);
  const SimulationResult& r = (*results)[0];
  EXPECT_NEAR(r.makespan, want_shared, 1e-12 * want_shared);           // both replicas
  EXPECT_NEAR(r.pipeline_makespan, want_shared, 1e-12 * want_shared);  // replica 0
  EXPECT_NEAR((*results)[1].makespan, want_single, 1e-12 * want_single);
  EXPECT_EQ(r.trace.size(), program.num_instructions()) << "the trace is replica 0's";
}

TEST(ClusterSimulation, ASlowLinkTakesFactorTimesAsLongAndMessagesFollowTheirLength) {
  // Contention-free transfers (shorter than a forward) on a slowed pair take factor x (alpha +
  // S / beta): evaluate() with that latency, inside a node and across nodes.
  std::vector<std::unique_ptr<ClusterSpec>> clusters;
  clusters.push_back(std::make_unique<ClusterSpec>(*MakeCluster("dgx-h100", 1)));
  clusters.push_back(std::make_unique<ClusterSpec>(*MakeCluster("dgx-h100", 2)));
  const Program one_f1b = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 8, 0}));
  const Costs costs = Costs::Uniform(2, {1e-3, 1.5e-3, 0.5e-3});
  struct Slowed {
    int cluster;
    std::vector<int> gpus;
    double bytes, factor;
  };
  const Slowed slowed[] = {{0, {2, 6}, 2e8, 2.0}, {1, {5, 13}, 3e7, 1.5}};
  std::vector<SimulationCase> cases;
  std::vector<double> expected;
  for (const Slowed& c : slowed) {
    const ClusterSpec& cluster = *clusters[c.cluster];
    const LinkSpec link = c.cluster == 0 ? cluster.intra_node : cluster.inter_node;
    EvaluateOptions options;
    options.p2p_latency = c.factor * (link.latency + c.bytes / link.bandwidth);
    expected.push_back(Evaluate(one_f1b, costs, options)->makespan);
    SimulationCase sc;
    sc.program = &one_f1b;
    sc.costs = costs;
    sc.sizes.stage_output_bytes = {static_cast<std::int64_t>(c.bytes), 0};
    sc.cluster = &cluster;
    sc.gpu_of_rank = c.gpus;
    sc.link_slowdowns = {{1, 0, c.factor}};
    cases.push_back(std::move(sc));
  }
  // Variable lengths scale every message of a microbatch (0.5 and 1.5 of the reference
  // alternately): the traced sizes follow, and the first activation takes alpha + S_0 / beta.
  const Program gpipe = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 4, 0}));
  SimulationCase lengths;
  lengths.program = &gpipe;
  lengths.costs = costs;
  lengths.sizes.stage_output_bytes = {100'000'000, 0};
  lengths.sizes.microbatch_scale = {0.5, 1.5, 0.5, 1.5};
  lengths.cluster = clusters[0].get();
  lengths.gpu_of_rank = {0, 1};
  cases.push_back(lengths);
  Result<std::vector<SimulationResult>> results = Simulate(cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_NEAR((*results)[k].makespan, expected[k], 1e-12 * expected[k]) << "case " << k;
  }
  const LinkSpec nvlink = clusters[0]->intra_node;
  int receives = 0;
  for (const TraceEvent& e : (*results)[2].trace) {
    if (e.action.kind != ActionKind::kRecvForward || e.rank != 1) continue;
    const double bytes = e.action.microbatch % 2 == 0 ? 5e7 : 1.5e8;
    EXPECT_EQ(e.bytes, static_cast<std::int64_t>(bytes));
    ++receives;
  }
  EXPECT_EQ(receives, 4);
  // Rank 1's first forward starts when microbatch 0's activation (half the bytes) has arrived.
  for (const TraceEvent& e : (*results)[2].trace) {
    if (e.rank == 1 && e.action == Action::F(1, 0)) {
      const double want = 1e-3 + nvlink.latency + 5e7 / nvlink.bandwidth;
      EXPECT_NEAR(e.start, want, 1e-12 * want);
    }
  }
}

}  // namespace
}  // namespace pipette
