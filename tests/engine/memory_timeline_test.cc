// Memory over time: exact step functions for hand-made traces, and agreement with evaluate()'s
// in-flight counts for every schedule (the peak of a unit-byte timeline is the peak count).
#include "pipette/engine/memory_timeline.h"

#include <gtest/gtest.h>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {
namespace {

TraceEvent Event(int rank, Action action, double start, double end) {
  TraceEvent e;
  e.rank = rank;
  e.action = action;
  e.start = start;
  e.end = end;
  return e;
}

// The trace of `program` as evaluate() times it with `costs`.
std::vector<TraceEvent> TraceOf(const Program& program, const Costs& costs) {
  EvaluateOptions options;
  options.record_timeline = true;
  const Evaluation eval = *Evaluate(program, costs, options);
  std::vector<TraceEvent> trace;
  for (int r = 0; r < program.p; ++r) {
    const auto& ins = program.ranks[r].instructions;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      trace.push_back(Event(r, ins[k].action, eval.timeline[r][k].start, eval.timeline[r][k].end));
    }
  }
  return trace;
}

TEST(MemoryOverTime, ForwardAllocatesAtStartBackwardFreesAtEnd) {
  const std::vector<StageMemory> stages{{100, 30}};
  const std::vector<TraceEvent> trace{
      Event(0, Action::F(0, 0), 0, 1), Event(0, Action::F(0, 1), 1, 2),
      Event(0, Action::I(0, 0), 2, 4), Event(0, Action::W(0, 0), 4, 5),
      Event(0, Action::B(0, 1), 5, 8)};
  const std::vector<RankMemoryTimeline> lines = MemoryOverTime(trace, {1000}, stages);
  ASSERT_EQ(lines.size(), 1u);
  const std::vector<MemorySample> want{{0, 1100}, {1, 1200}, {4, 1130}, {5, 1100}, {8, 1000}};
  ASSERT_EQ(lines[0].samples.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(lines[0].samples[k].time, want[k].time) << k;
    EXPECT_EQ(lines[0].samples[k].bytes, want[k].bytes) << k;
  }
  EXPECT_EQ(lines[0].peak_bytes, 1200);
  EXPECT_EQ(lines[0].peak_time, 1);
}

TEST(MemoryOverTime, OverlappedCellAllocatesItsForwardAndFreesItsBackward) {
  const std::vector<StageMemory> stages{{10, 0}, {20, 5}};
  const std::vector<TraceEvent> trace{
      Event(0, Action::F(1, 0), 0, 1),
      Event(0, Action::Overlap(Action::F(0, 0), Action::I(1, 0)), 1, 3)};
  const RankMemoryTimeline line = MemoryOverTime(trace, {0}, stages)[0];
  ASSERT_EQ(line.samples.size(), 3u);
  EXPECT_EQ(line.samples[1].time, 1);
  EXPECT_EQ(line.samples[1].bytes, 30);  // both forwards' activations
  EXPECT_EQ(line.samples[2].time, 3);
  EXPECT_EQ(line.samples[2].bytes, 15);  // stage 0's activations + stage 1's W inputs
  EXPECT_EQ(line.peak_bytes, 30);
}

TEST(MemoryOverTime, PeakEqualsEvaluatePeakCountsForEverySchedule) {
  int checked = 0;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    ScheduleParams params{4, g->default_v(), 8, 0};
    if (!g->Check(params).ok()) continue;
    const Schedule schedule = *MakeSchedule(g->name(), params);
    const Program program = *Lower(schedule);
    const Costs costs = Costs::Uniform(schedule.num_stages(), {1, 1.5, 0.5});
    const Evaluation eval = *Evaluate(program, costs);
    const std::vector<TraceEvent> trace = TraceOf(program, costs);
    const std::vector<double> zero(program.p, 0.0);
    // Unit activation bytes count in-flight chunks; unit W-input bytes count pending W.
    const auto activations =
        MemoryOverTime(trace, zero, std::vector<StageMemory>(schedule.num_stages(), {1, 0}));
    const auto pending_w =
        MemoryOverTime(trace, zero, std::vector<StageMemory>(schedule.num_stages(), {0, 1}));
    for (int r = 0; r < program.p; ++r) {
      EXPECT_EQ(activations[r].peak_bytes, eval.peak_activations[r]) << g->name() << " rank " << r;
      EXPECT_EQ(pending_w[r].peak_bytes, eval.peak_pending_w[r]) << g->name() << " rank " << r;
      EXPECT_EQ(activations[r].samples.back().bytes, 0) << g->name() << ": all freed at the end";
      EXPECT_EQ(pending_w[r].samples.back().bytes, 0) << g->name();
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

TEST(MemoryOverTime, OneFOneBHoldsPActivationsOnRankZeroFromItsPthForward) {
  const Schedule schedule = *MakeSchedule("1f1b", {4, 1, 8, 0});
  const Program program = *Lower(schedule);
  const std::vector<TraceEvent> trace = TraceOf(program, Costs::Uniform(4, {1, 1, 1}));
  const auto lines = MemoryOverTime(trace, {50, 50, 50, 50}, std::vector<StageMemory>(4, {10, 0}));
  EXPECT_EQ(lines[0].peak_bytes, 50 + 4 * 10);
  EXPECT_EQ(lines[0].peak_time, 3);  // the 4th forward starts at 3F
  EXPECT_EQ(lines[3].peak_bytes, 50 + 1 * 10);
}

// The CPU engine's buffers: a send holds its bytes to the end of the rank's program in that step,
// a receive from its post to the end of its consumer, and a compute its workspace while it runs.
TEST(MemoryOverTime, MessageBuffersAndWorkspaceAsTheCpuEngineHoldsThem) {
  // Rank 0 of GPipe p = 2, m = 1, by hand: F [0,1], SEND_F at 1, RECV_B posted at 1 and arrived
  // at 4, B [4,6]; activation 10, workspace 5, messages 3 bytes.
  const std::vector<TraceEvent> trace{
      {0, 0, 0, Action::F(0, 0), 0, 1, 0},
      {0, 1, 0, Action::Make(ActionKind::kSendForward, 0, 0), 1, 1, 3},
      {0, 2, 0, Action::Make(ActionKind::kRecvBackward, 0, 0), 1, 4, 3},
      {0, 3, 0, Action::B(0, 0), 4, 6, 0},
  };
  const std::vector<StageMemory> stages{{10, 0, 5}, {10, 0, 5}};
  // static 100; t0: +5 +10; t1: -5 +3 +3; t4: +5; t6: -5 -10 -3 -3.
  const auto with = MemoryOverTime(trace, {100}, stages, /*message_buffers=*/true);
  EXPECT_EQ(with[0].peak_bytes, 121);
  EXPECT_EQ(with[0].peak_time, 4);
  EXPECT_EQ(with[0].samples.back().time, 6);
  EXPECT_EQ(with[0].samples.back().bytes, 100);
  const auto without = MemoryOverTime(trace, {100}, stages);
  EXPECT_EQ(without[0].peak_bytes, 115);
  EXPECT_EQ(without[0].peak_time, 0);
}

TEST(FirstOutOfMemory, NamesTheEarliestRankAndTime) {
  std::vector<RankMemoryTimeline> lines(3);
  lines[0].samples = {{0, 10}, {5, 30}};
  lines[1].samples = {{0, 10}, {2, 25}, {3, 10}};
  lines[2].samples = {{0, 10}, {2, 40}};
  const std::optional<OutOfMemory> oom = FirstOutOfMemory(lines, 20);
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->rank, 1);
  EXPECT_EQ(oom->time, 2);
  EXPECT_EQ(oom->bytes, 25);
  EXPECT_FALSE(FirstOutOfMemory(lines, 40).has_value());
  const std::optional<OutOfMemory> at_start = FirstOutOfMemory(lines, 5);
  ASSERT_TRUE(at_start.has_value());
  EXPECT_EQ(at_start->rank, 0);
  EXPECT_EQ(at_start->time, 0);
}

}  // namespace
}  // namespace pipette
