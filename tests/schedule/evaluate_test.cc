#include "pipette/schedule/evaluate.h"

#include <gtest/gtest.h>

#include "pipette/schedule/lower.h"
#include "test_util.h"

namespace pipette {
namespace {

using testing::MustEvaluate;
using testing::MustMake;

TEST(Evaluate, TwoRankOneMicrobatchByHand) {
  // r0: F [0,1]; r1: F [1+c, 2+c], B [2+c, 4+c]; r0: B [4+2c, 6+2c].
  const double c = 0.25;
  Schedule s = MustMake("1f1b", 2, 1);
  Program program = *Lower(s);
  EvaluateOptions options;
  options.p2p_latency = c;
  options.record_timeline = true;
  Evaluation e = *Evaluate(program, Costs::Uniform(2, StageCost{1, 1, 1}), options);
  EXPECT_DOUBLE_EQ(e.makespan, 6 + 2 * c);
  EXPECT_DOUBLE_EQ(e.busy[0], 3);
  EXPECT_DOUBLE_EQ(e.busy[1], 3);
  EXPECT_DOUBLE_EQ(e.bubble_ratio, 1 - 6 / (2 * (6 + 2 * c)));
  EXPECT_EQ(e.peak_activations, (std::vector<int>{1, 1}));
  // rank 1: RECV_F0, F0, B0, SEND_B0
  ASSERT_EQ(program.ranks[1].instructions.size(), 4u);
  EXPECT_DOUBLE_EQ(e.timeline[1][0].end, 1 + c);  // the receive completes when the data arrives
  EXPECT_DOUBLE_EQ(e.timeline[1][1].start, 1 + c);
  EXPECT_DOUBLE_EQ(e.timeline[1][2].end, 4 + c);
  // rank 0: F0, SEND_F0, RECV_B0, B0; the receive was posted at 1 and its data arrives at 4 + 2c.
  EXPECT_DOUBLE_EQ(e.timeline[0][2].start, 1);
  EXPECT_DOUBLE_EQ(e.timeline[0][2].end, 4 + 2 * c);
  EXPECT_DOUBLE_EQ(e.timeline[0][3].start, 4 + 2 * c);
  EXPECT_DOUBLE_EQ(e.timeline[0][3].end, 6 + 2 * c);
}

TEST(Evaluate, BusyTimeKeepsItsPrecisionLateInALongRun) {
  Evaluation e = MustEvaluate(MustMake("1f1b", 2, 2), StageCost{0.001, 0.001, 0.001}, 1e12);
  EXPECT_DOUBLE_EQ(e.busy[0], 0.006);
  EXPECT_DOUBLE_EQ(e.busy[1], 0.006);
}

TEST(Evaluate, HeterogeneousStageCostsAreUsedPerStage) {
  Schedule s = MustMake("gpipe", 2, 1);
  Program program = *Lower(s);
  Costs costs;
  costs.stages = {StageCost{1, 2, 3}, StageCost{10, 20, 30}};
  Evaluation e = *Evaluate(program, costs);
  EXPECT_DOUBLE_EQ(e.makespan, 1 + 10 + 50 + 5);
  EXPECT_DOUBLE_EQ(e.busy[0], 6);
  EXPECT_DOUBLE_EQ(e.busy[1], 60);
}

TEST(Evaluate, OverlappedCellWaitsForBothInputsAndCostsFPlusB) {
  // kimi-k2, p = 1: F0 then (F1;B0) ... ; with one rank every input is local.
  Schedule s = MustMake("kimi-k2", 1, 3, 1);
  ASSERT_EQ(testing::RankOrder(s, 0), "0F0 (0F1;0B0) (0F2;0B1) 0B2");
  Evaluation e = MustEvaluate(s, StageCost{1, 2, 3});
  EXPECT_DOUBLE_EQ(e.makespan, 3 * (1 + 5));
  EXPECT_EQ(e.peak_activations, (std::vector<int>{2}));
}

TEST(Evaluate, PeakActivationsCountChunksWhoseBackwardHasNotRun) {
  EXPECT_EQ(MustEvaluate(MustMake("gpipe", 4, 8), {}).peak_activations,
            (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(MustEvaluate(MustMake("1f1b", 4, 8), {}).peak_activations,
            (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(MustEvaluate(MustMake("1f1b", 4, 2), {}).peak_activations,
            (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(MustEvaluate(MustMake("eager-1f1b", 4, 8), {}).peak_activations,
            (std::vector<int>{7, 5, 3, 1}));
  // W does not hold activations in this count: zb-h1 keeps 1F1B's.
  EXPECT_EQ(MustEvaluate(MustMake("zb-h1", 4, 8), {}).peak_activations,
            (std::vector<int>{4, 3, 2, 1}));
  // ... but rank r defers r weight gradients, so up to r+1 chunks wait for their W.
  EXPECT_EQ(MustEvaluate(MustMake("zb-h1", 4, 8), {}).peak_pending_w,
            (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(MustEvaluate(MustMake("1f1b", 4, 8), {}).peak_pending_w,
            (std::vector<int>{0, 0, 0, 0}));
}

TEST(Evaluate, RejectsCostsOfTheWrongShapeAndBadLatency) {
  Program program = *Lower(MustMake("1f1b", 2, 2));
  Result<Evaluation> wrong = Evaluate(program, Costs::Uniform(3, {}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "costs: 3 stage entries for a program of 2 stages");
  EvaluateOptions options;
  options.p2p_latency = -1;
  EXPECT_FALSE(Evaluate(program, Costs::Uniform(2, {}), options).ok());
}

TEST(Evaluate, ReportsADeadlockInAHandMadeProgram) {
  Program program = *Lower(MustMake("1f1b", 2, 1));
  // Drop rank 0's SEND_F0: rank 1 waits forever for its input.
  auto& r0 = program.ranks[0].instructions;
  ASSERT_EQ(r0[1].action.kind, ActionKind::kSendForward);
  r0.erase(r0.begin() + 1);
  Result<Evaluation> e = Evaluate(program, Costs::Uniform(2, {}));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "evaluate: deadlock: rank 0 at instruction 2 (0B0); rank 1 at instruction 1 (1F0)");
}

}  // namespace
}  // namespace pipette
