// What a real engine adds around the schedule, simulated (SimulationCase's alpha-beta messages,
// per-instruction overhead, parameter updates, the step barrier, shared cores and a measured full
// backward): the inputs of `simulate --costs-from`. Exact values worked by hand.
#include <gtest/gtest.h>

#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

TEST(RealEngineCase, AlphaBetaMessagesUpdatesAndTheStepBarrier) {
  // GPipe, p = 2, m = 1, F = 1, B = 2; a message takes 0.5 + 1000 B * 0.001 s/B = 1.5.
  //   step 0: r0 F [0,1]; r1 F [2.5,3.5], B [3.5,5.5], update [5.5,5.75];
  //           r0 B [7,9], update [9,10].
  //   step 1 starts at 10 on both ranks (the barrier; r1 would start at 5.75 without it).
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 1, 0}));
  SimulationCase c;
  c.program = &program;
  c.costs = Costs::Uniform(2, {1, 1, 1});
  c.sizes.stage_output_bytes = {1000, 0};
  c.latency = 0.5;
  c.seconds_per_byte = 0.001;
  c.steps = 2;
  c.optimizer = {1, 0.25};
  c.step_barrier = true;
  SimulationCase unsynchronised = c;
  unsynchronised.step_barrier = false;
  Result<std::vector<SimulationResult>> results = Simulate({c, unsynchronised});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const SimulationResult& r = (*results)[0];
  ASSERT_EQ(r.step_spans.size(), 2u);
  EXPECT_DOUBLE_EQ(r.step_spans[0].start, 0);
  EXPECT_DOUBLE_EQ(r.step_spans[0].end, 10);
  EXPECT_DOUBLE_EQ(r.step_spans[1].start, 10);
  EXPECT_DOUBLE_EQ(r.step_spans[1].end, 20);
  ASSERT_EQ(r.updates.size(), 4u);  // rank by rank, step by step
  EXPECT_EQ(r.updates[0].rank, 0);
  EXPECT_DOUBLE_EQ(r.updates[0].start, 9);
  EXPECT_DOUBLE_EQ(r.updates[0].end, 10);
  EXPECT_EQ(r.updates[2].rank, 1);
  EXPECT_DOUBLE_EQ(r.updates[2].start, 5.5);
  EXPECT_DOUBLE_EQ(r.updates[2].end, 5.75);
  for (const TraceEvent& e : r.trace) {
    if (e.step == 0 && e.action.kind == ActionKind::kRecvForward) {
      EXPECT_DOUBLE_EQ(e.end, 2.5) << "alpha + beta * bytes after the send at 1";
    }
    if (e.step == 0 && e.action.kind == ActionKind::kRecvBackward) {
      EXPECT_DOUBLE_EQ(e.end, 7);
    }
  }
  const SimulationResult& u = (*results)[1];
  EXPECT_DOUBLE_EQ(u.step_spans[1].start, 5.75);
  EXPECT_DOUBLE_EQ(u.step_spans[1].end, 20);
}

TEST(RealEngineCase, SharedCoresOverheadAndAMeasuredFullBackward) {
  // p = 1, m = 1, F = 1, B = I + W = 2, two replicas computing at the same time.
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{1, 0, 1, 0}));
  SimulationCase one_core;
  one_core.program = &program;
  one_core.costs = Costs::Uniform(1, {1, 1, 1});
  one_core.replicas = 2;
  one_core.cores = 1;
  SimulationCase two_cores = one_core;
  two_cores.cores = 2;
  SimulationCase overhead = two_cores;
  overhead.instruction_overhead = 0.25;  // F and B: two instructions
  SimulationCase fused = two_cores;
  fused.costs.full_backward = {5};
  Result<std::vector<SimulationResult>> results = Simulate({one_core, two_cores, overhead, fused});
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_DOUBLE_EQ((*results)[0].makespan, 6) << "two ranks on one core: each at half speed";
  EXPECT_DOUBLE_EQ((*results)[1].makespan, 3);
  EXPECT_DOUBLE_EQ((*results)[2].makespan, 3.5);
  EXPECT_DOUBLE_EQ((*results)[3].makespan, 6) << "F 1 + the measured B 5";
}

TEST(RealEngineCase, StepSlowdownsScaleEachRanksComputesStepByStep) {
  // GPipe, p = 2, m = 1, F = 1, B = 2, latency 0, the step barrier; steps 0, 1, 2 take the
  // slowdown rows {1, 1}, {1.5, 1}, {1, 1} in turn (row s mod 2).
  //   step 0: r0 F [0,1], r1 F [1,2] B [2,4], r0 B [4,6]: 6.
  //   step 1: rank 0 at 1.5x: r0 F [6,7.5], r1 F [7.5,8.5] B [8.5,10.5], r0 B [10.5,13.5]: 7.5.
  //   step 2: as step 0: [13.5, 19.5].
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 1, 0}));
  SimulationCase c;
  c.program = &program;
  c.costs = Costs::Uniform(2, {1, 1, 1});
  c.steps = 3;
  c.step_barrier = true;
  c.step_slowdown = {{1, 1}, {1.5, 1}};
  SimulationCase wrong = c;
  wrong.step_slowdown = {{1, 1, 1}};
  SimulationCase zero = c;
  zero.step_slowdown = {{1, 0}};
  EXPECT_EQ(Simulate({wrong}).status().message(),
            "simulation case 0: a step slowdown of 3 ranks for 2 ranks: one factor per rank, "
            "without expert parallelism");
  EXPECT_EQ(Simulate({zero}).status().message(),
            "simulation case 0: step slowdown 0: must be a number in (0, 100]");
  Result<std::vector<SimulationResult>> results = Simulate({c});
  ASSERT_TRUE(results.ok()) << results.status().message();
  const std::vector<Span>& steps = (*results)[0].step_spans;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_DOUBLE_EQ(steps[0].end, 6);
  EXPECT_DOUBLE_EQ(steps[1].start, 6);
  EXPECT_DOUBLE_EQ(steps[1].end, 13.5);
  EXPECT_DOUBLE_EQ(steps[2].end, 19.5);
}

TEST(RealEngineCase, RefusesNegativeOverheadsAndOptimizerTimesOfTheWrongShape) {
  const Program program = *Lower(*MakeSchedule("gpipe", ScheduleParams{2, 0, 1, 0}));
  SimulationCase c;
  c.program = &program;
  c.costs = Costs::Uniform(2, {1, 1, 1});
  SimulationCase bad = c;
  bad.optimizer = {1};
  EXPECT_EQ(Simulate({bad}).status().message(), "simulation case 0: 1 optimizer times for 2 ranks");
  bad = c;
  bad.seconds_per_byte = -1;
  EXPECT_EQ(Simulate({bad}).status().message(),
            "simulation case 0: seconds per byte = -1: must be a number in [0, 1e+12]");
  bad = c;
  bad.cores = -2;
  EXPECT_EQ(Simulate({bad}).status().message(),
            "simulation case 0: cores = -2: must be in [0, 1024]");
}

}  // namespace
}  // namespace pipette
