// Data-parallel gradient reduction as simulated traffic. Collectives decomposed into messages
// (sim/collectives.h) take, on an idle network, exactly the alpha-beta times of
// pipette/cost/collectives.h (ring: 2(n-1)(alpha + S/(n beta)) of its slowest hop; double binary
// tree: 2(D + G - 1)(alpha + S/(G beta))), inside a node and across nodes; two rings sharing NICs
// take the ring time at half the bandwidth. Buckets (sim/gradient_reduction.h) follow the program:
// a stage's buckets start when its last weight gradient is computed, and overlapping them with the
// backward shortens every rank's step by exactly the part of its buckets that ran before its
// program ended. ctest runs every TEST in its own process (one SimGrid engine per process).
#include "sim/gradient_reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <simgrid/s4u.hpp>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/collectives.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/cluster_platform.h"
#include "sim/collectives.h"
#include "sim/sim_engine.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

struct Group {
  std::vector<int> gpus;
  double bytes;
};

// Runs the all-reduces of `groups` at once on `cluster` (GPUs node * 8 + gpu) and returns when
// each group's last member finished.
std::vector<double> RunGroups(const ClusterSpec& cluster, CollectiveAlgorithm algorithm,
                              const std::vector<Group>& groups) {
  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  std::vector<int> all;
  for (const Group& g : groups) all.insert(all.end(), g.gpus.begin(), g.gpus.end());
  const ClusterPlatform platform = BuildClusterPlatform(cluster, "", nullptr, all);
  std::vector<std::unique_ptr<CollectiveGroup>> built;
  std::vector<double> finish(groups.size(), 0.0);
  std::size_t next = 0;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    std::vector<sg4::Host*> hosts(
        platform.gpus.begin() + static_cast<std::ptrdiff_t>(next),
        platform.gpus.begin() + static_cast<std::ptrdiff_t>(next + groups[k].gpus.size()));
    next += groups[k].gpus.size();
    built.push_back(std::make_unique<CollectiveGroup>("g" + std::to_string(k), hosts, algorithm));
    for (int i = 0; i < built.back()->size(); ++i) {
      const CollectiveGroup* group = built.back().get();
      const double bytes = groups[k].bytes;
      double* end = &finish[k];
      sg4::Actor::create("member", hosts[i], [group, i, bytes, end] {
        group->AllReduce(i, bytes);
        *end = std::max(*end, sg4::Engine::get_clock());
      });
    }
  }
  engine->run();
  return finish;
}

// GPU 0 of each of n nodes from node `first` on.
std::vector<int> OnePerNode(int first, int n) {
  std::vector<int> gpus;
  for (int k = 0; k < n; ++k) gpus.push_back(8 * (first + k));
  return gpus;
}

// The first n GPUs of node `node`, in reverse order.
std::vector<int> InNode(int node, int n) {
  std::vector<int> gpus;
  for (int g = n - 1; g >= 0; --g) gpus.push_back(8 * node + g);
  return gpus;
}

TEST(Collectives, TreeDepthIsFloorLog2) {
  EXPECT_EQ(TreeDepth(1), 0);
  EXPECT_EQ(TreeDepth(2), 1);
  EXPECT_EQ(TreeDepth(3), 1);
  EXPECT_EQ(TreeDepth(4), 2);
  EXPECT_EQ(TreeDepth(7), 2);
  EXPECT_EQ(TreeDepth(8), 3);
  EXPECT_EQ(TreeDepth(1024), 10);
  EXPECT_EQ(TreeDepth(1023), 9);
}

TEST(Collectives, TreeFormulaByHand) {
  // n = 4: depth 2, 8 chunks: 2 (2 + 8 - 1) hops of 2 us + 1.6 GB / (8 x 450 GB/s).
  const LinkSpec nvlink{450e9, 2e-6};
  EXPECT_NEAR(TreeAllReduceSeconds(4, 1.6e9, nvlink), 18 * (2e-6 + 1.6e9 / (8 * 450e9)), 1e-15);
  EXPECT_EQ(TreeAllReduceSeconds(1, 1e9, nvlink), 0);
  EXPECT_EQ(TreeAllReduceSeconds(8, 0, nvlink), 0);
}

// Runs `groups` side by side (disjoint GPUs, nodes and links) and checks each against `want`.
void ExpectAlone(const ClusterSpec& cluster, CollectiveAlgorithm algorithm,
                 const std::vector<Group>& groups, const std::vector<double>& want) {
  const std::vector<double> finish = RunGroups(cluster, algorithm, groups);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    EXPECT_NEAR(finish[k], want[k], 1e-12 * want[k]) << groups[k].gpus.size() << " members";
  }
}

TEST(Collectives, RingInsideANodeEqualsTheAlphaBetaTime) {
  // 2(n-1) = 2, 4, 6, 14 steps: one step per segment, and up to four per segment.
  const ClusterSpec c = *MakeCluster("dgx-h100", 4);
  const std::vector<Group> groups = {
      {{0, 5}, 1e9}, {{9, 10, 11}, 3e8}, {{16, 18, 20, 22}, 4e8}, {InNode(3, 8), 1.6e9}};
  std::vector<double> want;
  for (const Group& g : groups) {
    want.push_back(RingAllReduceSeconds(static_cast<int>(g.gpus.size()), g.bytes, c.intra_node));
  }
  ExpectAlone(c, CollectiveAlgorithm::kRing, groups, want);
}

TEST(Collectives, RingAcrossNodesEqualsTheAlphaBetaTimeOfItsSlowestHop) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 25);
  std::vector<Group> groups = {
      {OnePerNode(0, 2), 3.2e8}, {OnePerNode(2, 5), 8e8}, {OnePerNode(7, 16), 2.56e9}};
  // 16 GPUs on two nodes: 14 NVLink hops and two NIC hops; the NIC hops gate every segment.
  std::vector<int> two_nodes;
  for (int g = 0; g < 16; ++g) two_nodes.push_back(8 * 23 + g);
  groups.push_back({two_nodes, 1.6e9});
  std::vector<double> want;
  for (const Group& g : groups) {
    want.push_back(RingAllReduceSeconds(static_cast<int>(g.gpus.size()), g.bytes, c.inter_node));
  }
  ExpectAlone(c, CollectiveAlgorithm::kRing, groups, want);
}

TEST(Collectives, TreeInsideANodeEqualsTheAlphaBetaTime) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 5);
  std::vector<Group> groups;
  std::vector<double> want;
  int node = 0;
  for (const int n : {2, 3, 4, 7, 8}) {
    groups.push_back({InNode(node++, n), 1.6e9});
    want.push_back(TreeAllReduceSeconds(n, 1.6e9, c.intra_node));
  }
  ExpectAlone(c, CollectiveAlgorithm::kTree, groups, want);
}

TEST(Collectives, TreeAcrossNodesEqualsTheAlphaBetaTime) {
  const ClusterSpec c = *MakeCluster("dgx-h100", 55);
  std::vector<Group> groups;
  std::vector<double> want;
  int node = 0;
  for (const int n : {2, 5, 16, 32}) {
    groups.push_back({OnePerNode(node, n), 3.2e8});
    node += n;
    want.push_back(TreeAllReduceSeconds(n, 3.2e8, c.inter_node));
  }
  ExpectAlone(c, CollectiveAlgorithm::kTree, groups, want);
}

TEST(Collectives, TreeBeatsRingOnLatencyAtScale) {
  // Small bytes over 32 nodes: 2(D + G - 1) = 24 latencies against the ring's 2(n - 1) = 62.
  const ClusterSpec c = *MakeCluster("dgx-h100", 32);
  const double bytes = 1.6e5;
  const double tree =
      RunGroups(c, CollectiveAlgorithm::kTree, {{OnePerNode(0, 32), bytes}}).front();
  EXPECT_LT(tree, RingAllReduceSeconds(32, bytes, c.inter_node));
}

TEST(Collectives, TwoRingsSharingNicsTakeTheRingTimeAtHalfTheBandwidth) {
  // One NIC per node: ring A on GPU 0 of four nodes, ring B on GPU 1 of the same nodes. Every hop
  // of both rings crosses the same NIC at the same moments, so each gets half of it.
  ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  cluster.nics_per_node = 1;
  const double bytes = 4e8;
  const std::vector<double> finish = RunGroups(cluster, CollectiveAlgorithm::kRing,
                                               {{{0, 8, 16, 24}, bytes}, {{1, 9, 17, 25}, bytes}});
  LinkSpec shared = cluster.inter_node;
  shared.bandwidth /= 2;
  const double want = RingAllReduceSeconds(4, bytes, shared);
  ASSERT_GT(want, RingAllReduceSeconds(4, bytes, cluster.inter_node) * 1.5);
  EXPECT_NEAR(finish[0], want, 1e-12 * want);
  EXPECT_NEAR(finish[1], want, 1e-12 * want);
  // Alone, the same ring takes the full-bandwidth time.
}

TEST(Collectives, OneRingAloneOnSharedNicsTakesTheFullBandwidthTime) {
  ClusterSpec cluster = *MakeCluster("dgx-h100", 4);
  cluster.nics_per_node = 1;
  const double bytes = 4e8;
  const double want = RingAllReduceSeconds(4, bytes, cluster.inter_node);
  EXPECT_NEAR(RunGroups(cluster, CollectiveAlgorithm::kRing, {{{0, 8, 16, 24}, bytes}})[0], want,
              1e-12 * want);
}

// ---- buckets ------------------------------------------------------------------------------------

TEST(GradientBuckets, StagesInTheOrderTheirLastBackwardRunsBucketsFromTheLastLayer) {
  // Interleaved 1F1B, p = 2, v = 2: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3. A rank's
  // later stage finishes its backwards first.
  const Program program = *Lower(*MakeSchedule("interleaved-1f1b", ScheduleParams{2, 2, 4, 0}));
  const std::vector<RankBuckets> ranks = PlanGradientBuckets(program, {10, 25, 7, 0}, 10);
  ASSERT_EQ(ranks.size(), 2u);
  const RankBuckets& r0 = ranks[0];
  ASSERT_EQ(r0.buckets.size(), 2u);
  EXPECT_EQ(r0.buckets[0].stage, 2);
  EXPECT_EQ(r0.buckets[0].bytes, 7);
  EXPECT_EQ(r0.buckets[1].stage, 0);
  EXPECT_EQ(r0.buckets[1].bytes, 10);
  ASSERT_EQ(r0.completes.size(), 2u);
  EXPECT_EQ(r0.completes[0].first, Action::B(2, 3));
  EXPECT_EQ(r0.completes[0].second, 1);
  EXPECT_EQ(r0.completes[1].first, Action::B(0, 3));
  EXPECT_EQ(r0.completes[1].second, 2);
  // Rank 1: stage 3 has no gradients (no bucket), stage 1 three: 10, 10, 5.
  const RankBuckets& r1 = ranks[1];
  ASSERT_EQ(r1.buckets.size(), 3u);
  for (const GradientBucket& b : r1.buckets) EXPECT_EQ(b.stage, 1);
  EXPECT_EQ(r1.buckets[0].bytes, 10);
  EXPECT_EQ(r1.buckets[1].bytes, 10);
  EXPECT_EQ(r1.buckets[2].bytes, 5);
  ASSERT_EQ(r1.completes.size(), 2u);
  EXPECT_EQ(r1.completes[0].first, Action::B(3, 3));
  EXPECT_EQ(r1.completes[0].second, 0);
  EXPECT_EQ(r1.completes[1].first, Action::B(1, 3));
  EXPECT_EQ(r1.completes[1].second, 3);
}

TEST(GradientBuckets, ExpertsGradientsFollowTheirStagesDenseOnesInBucketsOfTheirOwn) {
  // 1F1B, p = 2: stage 0 holds 25 bytes of which 12 are experts', stage 1 7 of which 7.
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 4, 0}));
  GradientReduction g;
  g.mode = GradReduce::kRing;
  g.ep = 2;
  g.ranks = PlanGradientBuckets(program, {25, 7}, 10, {12, 7});
  const std::vector<GradientBucket>& r0 = g.ranks[0].buckets;
  ASSERT_EQ(r0.size(), 4u);  // dense 10, 3; experts 10, 2
  const double bytes[] = {10, 3, 10, 2};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(r0[k].stage, 0);
    EXPECT_EQ(r0[k].bytes, bytes[k]) << k;
    EXPECT_EQ(r0[k].experts, k >= 2) << k;
  }
  EXPECT_EQ(g.ranks[0].completes[0].second, 4);
  ASSERT_EQ(g.ranks[1].buckets.size(), 1u);  // no dense bytes: no dense bucket
  EXPECT_TRUE(g.ranks[1].buckets[0].experts);
  // 8 replicas: a dense bucket's ring has 8 members (4 segments: 4 messages per member), an
  // experts bucket's 8 / ep = 4 (4 messages); at ep 4 the experts' ring has 2 members (2).
  EXPECT_EQ(g.MessagesPerReplicaStep(8), 5 * 4);
  g.ep = 4;
  EXPECT_EQ(g.MessagesPerReplicaStep(8), 2 * 4 + 3 * 2);
}

TEST(GradientBuckets, AZeroBubbleStageIsCompleteAtItsLastWeightGradient) {
  const Program program = *Lower(*MakeSchedule("zb-h1", ScheduleParams{2, 0, 4, 0}));
  const std::vector<RankBuckets> ranks = PlanGradientBuckets(program, {4, 4}, 4);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ranks[r].completes.size(), 1u);
    EXPECT_EQ(ranks[r].completes[0].first, Action::W(r, 3)) << "rank " << r;
  }
}

TEST(GradientBuckets, MegatronDefaultBucketSize) {
  EXPECT_EQ(DefaultBucketParams(1), 40'000'000);
  EXPECT_EQ(DefaultBucketParams(40), 40'000'000);
  EXPECT_EQ(DefaultBucketParams(64), 64'000'000);
  EXPECT_EQ(DefaultBucketParams(1024), 1'024'000'000);
}

TEST(GradientBuckets, ParsesTheModeAndNamesTheKeyOtherwise) {
  EXPECT_EQ(*ParseGradReduce("ring", "--grad-reduce"), GradReduce::kRing);
  EXPECT_EQ(*ParseGradReduce("tree", "--grad-reduce"), GradReduce::kTree);
  EXPECT_EQ(*ParseGradReduce("analytic", "--grad-reduce"), GradReduce::kAnalytic);
  const Result<GradReduce> bad = ParseGradReduce("butterfly", "--grad-reduce");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--grad-reduce = butterfly: must be analytic, ring or tree");
}

// ---- buckets in a simulated step
// ------------------------------------------------------------------

// Interleaved 1F1B, p = 2, v = 2, m = 4, on GPUs 0, 1 (replica 0) and 8, 9 (replica 1): pipeline
// messages over NVLink, the data-parallel rings over the NICs, so they never contend.
SimulationCase OverlapCase(const Program& program, const ClusterSpec& cluster, bool overlap) {
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(program.num_stages(), {1e-3, 1e-3, 1e-3});
  sc.sizes.stage_output_bytes.assign(program.num_stages(), 1'000'000);
  sc.cluster = &cluster;
  sc.replicas = 2;
  sc.gpu_of_rank = {0, 1, 8, 9};
  sc.grad_reduction.mode = GradReduce::kRing;
  sc.grad_reduction.overlap = overlap;
  // 100 MB buckets: 2 ms each on a 50 GB/s NIC (n = 2: two steps of half the bytes).
  sc.grad_reduction.ranks = PlanGradientBuckets(program, {2e8, 1e8, 3e8, 1e8}, 1e8);
  return sc;
}

TEST(GradientReduction, OverlapShortensEachRankByThePartOfItsBucketsThatRanUnderCompute) {
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 2);
  const Program program = *Lower(*MakeSchedule("interleaved-1f1b", ScheduleParams{2, 2, 4, 0}));
  Result<std::vector<SimulationResult>> results =
      Simulate({OverlapCase(program, cluster, false), OverlapCase(program, cluster, true)});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const SimulationResult& after = (*results)[0];
  const SimulationResult& overlapped = (*results)[1];
  const double bucket = RingAllReduceSeconds(2, 1e8, cluster.inter_node);
  double hidden_total = 0;
  for (int r = 0; r < 2; ++r) {
    double program_end = 0;
    for (const TraceEvent& e : after.trace) {
      if (e.rank == r) program_end = std::max(program_end, e.end);
    }
    // Without overlap: the buckets run back to back from the program's end.
    double t = program_end;
    int buckets = 0;
    for (const AllReduceEvent& a : after.collectives) {
      if (a.rank != r) continue;
      EXPECT_NEAR(a.start, t, 1e-12);
      EXPECT_NEAR(a.end - a.start, bucket, 1e-12);
      t = a.end;
      ++buckets;
    }
    EXPECT_EQ(buckets, r == 0 ? 5 : 2);
    // With overlap: the part of each bucket before the program's end ran under compute.
    double hidden = 0;
    for (const AllReduceEvent& a : overlapped.collectives) {
      if (a.rank != r) continue;
      EXPECT_NEAR(a.end - a.start, bucket, 1e-12);
      hidden += std::max(0.0, std::min(a.end, program_end) - a.start);
    }
    const double end_after = after.updates[r].start, end_overlapped = overlapped.updates[r].start;
    EXPECT_NEAR(end_after, program_end + buckets * bucket, 1e-12);
    EXPECT_NEAR(end_after - end_overlapped, hidden, 1e-12) << "rank " << r;
    if (r == 0) {
      EXPECT_GT(hidden, bucket) << "rank 0's stage 2 reduces under stage 0's backwards";
    }
    hidden_total += hidden;
  }
  // The step: its slowest rank (rank 0: five buckets) saves what rank 0 hid.
  EXPECT_GT(overlapped.makespan, 0);
  EXPECT_NEAR(after.makespan - overlapped.makespan,
              after.updates[0].start - overlapped.updates[0].start, 1e-12);
  EXPECT_GT(hidden_total, 0);
}

TEST(GradientReduction, OverlappedBucketsStartWhenTheirStageIsComplete) {
  // Two steps: each step's buckets start at the end of the instruction that completes their
  // stage in that step (or when the rank's previous bucket ends).
  const ClusterSpec cluster = *MakeCluster("dgx-h100", 2);
  const Program program = *Lower(*MakeSchedule("interleaved-1f1b", ScheduleParams{2, 2, 4, 0}));
  SimulationCase sc = OverlapCase(program, cluster, true);
  sc.steps = 2;
  const std::vector<RankBuckets> plan = sc.grad_reduction.ranks;
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const SimulationResult& r = results->front();
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<AllReduceEvent> events;
      for (const AllReduceEvent& a : r.collectives) {
        if (a.rank == rank && a.step == step) events.push_back(a);
      }
      ASSERT_EQ(events.size(), plan[rank].buckets.size());
      std::size_t b = 0;
      double previous_end = 0;
      for (const auto& [completes, ready] : plan[rank].completes) {
        double complete = -1;
        for (const TraceEvent& e : r.trace) {
          if (e.rank == rank && e.step == step && e.action == completes) complete = e.end;
        }
        ASSERT_GE(complete, 0);
        for (; b < static_cast<std::size_t>(ready); ++b) {
          EXPECT_NEAR(events[b].start, std::max(complete, previous_end), 1e-12)
              << "step " << step << " rank " << rank << " bucket " << b;
          previous_end = events[b].end;
        }
      }
      // Rank 0's stage 2 starts at its last backward, while stage 0's backwards still run.
      if (rank == 0) {
        const double update = r.updates[step].start;  // rank 0's come first, step by step
        EXPECT_LT(events[0].start, update - 3 * (events[0].end - events[0].start));
      }
    }
  }
}

TEST(GradientReduction, RefusesASimulatedReductionWithoutACluster) {
  const Program program = *Lower(*MakeSchedule("1f1b", ScheduleParams{2, 0, 2, 0}));
  SimulationCase sc;
  sc.program = &program;
  sc.costs = Costs::Uniform(2, {});
  sc.grad_reduction.mode = GradReduce::kTree;
  sc.grad_reduction.ranks.resize(2);
  Result<std::vector<SimulationResult>> results = Simulate({sc});
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().message(),
            "simulation case 0: a tree gradient reduction needs a cluster and no analytic "
            "all-reduce times");
}

}  // namespace
}  // namespace pipette
