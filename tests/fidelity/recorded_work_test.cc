// ShareOutContention (fidelity/recorded_work.h): the work each compute of a run did alone when the
// run's ranks shared `cores` cores, against closed forms of processor sharing.
#include "pipette/fidelity/recorded_work.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipette {
namespace {

EventRow Row(int rank, int instr, EventKind kind, double start, double end) {
  EventRow e;
  e.rank = rank;
  e.step = 0;
  e.instr_id = instr;
  e.kind = kind;
  e.start_s = start;
  e.end_s = end;
  return e;
}

std::vector<double> Durations(const std::vector<EventRow>& rows) {
  std::vector<double> d;
  for (const EventRow& e : rows) d.push_back(e.end_s - e.start_s);
  return d;
}

TEST(ShareOutContention, TwoOverlappingComputesOnOneCoreShareTheOverlap) {
  // [0, 2) and [1, 3): alone on [0, 1) and [2, 3), half a core each on [1, 2): 1.5 each.
  const std::vector<EventRow> run = {Row(0, 0, EventKind::kF, 0, 2),
                                     Row(1, 0, EventKind::kF, 1, 3)};
  const std::vector<EventRow> alone = ShareOutContention(run, 1);
  EXPECT_DOUBLE_EQ(alone[0].end_s - alone[0].start_s, 1.5);
  EXPECT_DOUBLE_EQ(alone[1].end_s - alone[1].start_s, 1.5);
  EXPECT_DOUBLE_EQ(alone[1].start_s, 1);  // starts stay
  // Two cores: nobody shared.
  EXPECT_EQ(Durations(ShareOutContention(run, 2)), Durations(run));
}

TEST(ShareOutContention, ThreeComputesOnTwoCoresGetTwoThirdsOfACoreEach) {
  const std::vector<EventRow> run = {Row(0, 0, EventKind::kI, 0, 3), Row(1, 0, EventKind::kW, 0, 3),
                                     Row(2, 0, EventKind::kB, 0, 3)};
  for (double d : Durations(ShareOutContention(run, 2))) EXPECT_DOUBLE_EQ(d, 2);
  for (double d : Durations(ShareOutContention(run, 1))) EXPECT_DOUBLE_EQ(d, 1);
}

TEST(ShareOutContention, UnrecordedReplicasComputeAsTheRecordedOne) {
  // Replica 0's two ranks overlap on [1, 2), and so do replica 1's (not recorded): on [0, 1) and
  // [2, 3) two computes in all, a core each; on [1, 2) four on the two cores, half a core each.
  const std::vector<EventRow> run = {Row(0, 0, EventKind::kF, 0, 2),
                                     Row(1, 0, EventKind::kF, 1, 3)};
  for (double d : Durations(ShareOutContention(run, 2, 2))) EXPECT_DOUBLE_EQ(d, 1.5);
  for (double d : Durations(ShareOutContention(run, 2, 1))) EXPECT_DOUBLE_EQ(d, 2);
}

TEST(ShareOutContention, ACellOccupiesOneCoreAndUpdatesShareButMessagesDoNot) {
  // Rank 0's overlapped (F;B) cell is two rows of one instruction over [0, 4); rank 1's update
  // runs over [0, 2) and its message over [0, 4). Two computes on one core while both run: the
  // cell did 2 * 0.5 + 2 = 3 alone (not 2 * 1/3 + 2: its rows are one compute), the update 1.
  const std::vector<EventRow> run = {Row(0, 5, EventKind::kF, 0, 4), Row(0, 5, EventKind::kB, 0, 4),
                                     Row(1, -1, EventKind::kOptimizer, 0, 2),
                                     Row(1, 3, EventKind::kRecvF, 0, 4)};
  const std::vector<double> alone = Durations(ShareOutContention(run, 1));
  EXPECT_DOUBLE_EQ(alone[0], 3);
  EXPECT_DOUBLE_EQ(alone[1], 3);
  EXPECT_DOUBLE_EQ(alone[2], 1);
  EXPECT_DOUBLE_EQ(alone[3], 4);  // a message waits; it computes nothing
}

TEST(ShareOutContention, AComputeAloneAndAnEmptyOneKeepTheirTimes) {
  const std::vector<EventRow> run = {Row(0, 0, EventKind::kF, 0, 1), Row(1, 0, EventKind::kF, 2, 2),
                                     Row(1, 1, EventKind::kF, 2, 5)};
  EXPECT_EQ(Durations(ShareOutContention(run, 1)), Durations(run));
  EXPECT_TRUE(ShareOutContention({}, 1).empty());
}

// A plain instruction of rank `rank` in step `step`: `kind` of stage `stage` over [start, end).
TraceEvent Plain(int rank, int step, ActionKind kind, int stage, double start, double end) {
  TraceEvent e;
  e.rank = rank;
  e.step = step;
  e.action.kind = kind;
  e.action.stage = stage;
  e.start = start;
  e.end = end;
  return e;
}

TEST(StepSlowdowns, EachRanksComputesAgainstTheirCostsStepByStepWithoutStepZero) {
  // Stage 0 (rank 0): F 1, B 2; stage 1 (rank 1): F 1, I 1, W 0.5. Three steps; step 0 is left
  // out. Step 1: rank 0 took 1.1 + 2.2 = 3.3 of 3 (1.1), rank 1 2.5 of 2.5 (1). Step 2: rank 0
  // 3 (1); rank 1 took 1.5 + 1.5 + 0.75 = 3.75 of 2.5 (1.5). Sends and receives do not count.
  std::vector<MeasuredStageCost> stages(2);
  stages[0].f = 1;
  stages[0].b = 2;
  stages[1].f = 1;
  stages[1].i = 1;
  stages[1].w = 0.5;
  std::vector<TraceEvent> trace;
  for (int step = 0; step < 3; ++step) {
    const double r0 = step == 1 ? 1.1 : 1, r1 = step == 2 ? 1.5 : 1;
    // Step 0's forward took 9 (a first step's warm-up): left out while later steps exist.
    trace.push_back(Plain(0, step, ActionKind::kForward, 0, 0, step == 0 ? 9 : r0));
    trace.push_back(Plain(0, step, ActionKind::kFullBackward, 0, 5, 5 + 2 * r0));
    trace.push_back(Plain(0, step, ActionKind::kSendForward, 0, 1, 4));
    trace.push_back(Plain(1, step, ActionKind::kForward, 1, 1, 1 + r1));
    trace.push_back(Plain(1, step, ActionKind::kInputBackward, 1, 3, 3 + r1));
    trace.push_back(Plain(1, step, ActionKind::kWeightBackward, 1, 4, 4 + 0.5 * r1));
    trace.push_back(Plain(1, step, ActionKind::kRecvForward, 0, 0, 1));
  }
  const std::vector<std::vector<double>> slow = StepSlowdowns(trace, stages, 2, 3);
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_DOUBLE_EQ(slow[0][0], 1.1);
  EXPECT_DOUBLE_EQ(slow[0][1], 1);
  EXPECT_DOUBLE_EQ(slow[1][0], 1);
  EXPECT_DOUBLE_EQ(slow[1][1], 1.5);
  // One traced step: that one. A rank that computed nothing in a step: none at all.
  EXPECT_EQ(StepSlowdowns(trace, stages, 2, 1).size(), 1u);
  EXPECT_DOUBLE_EQ(StepSlowdowns(trace, stages, 2, 1)[0][0], (9.0 + 2) / 3);
  EXPECT_TRUE(StepSlowdowns(trace, stages, 3, 3).empty());
}

}  // namespace
}  // namespace pipette
