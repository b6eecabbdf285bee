// RunRank and RunSteps alone, on a fake runtime with a virtual clock (fake_runtime.h): the shared
// loops reproduce evaluate()'s timeline for every schedule, stamp the step, and run the parts of a
// training step in order.
#include "pipette/engine/rank_interpreter.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <span>
#include <thread>

#include "fake_runtime.h"
#include "pipette/engine/step_loop.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {
namespace {

using testing::FakeNetwork;
using testing::FakeRuntime;

// Runs every rank of `program` for step `step` on its own thread; returns each rank's trace.
std::vector<std::vector<TraceEvent>> RunAllRanks(const Program& program, const Costs& costs,
                                                 double latency, int step) {
  FakeNetwork network(latency);
  std::vector<std::vector<TraceEvent>> traces(program.p);
  std::vector<std::thread> threads;
  for (int r = 0; r < program.p; ++r) {
    threads.emplace_back([&, r] {
      FakeRuntime runtime(network, costs);
      (void)runtime.BeginStep(step);
      RunRank(program, r, step, MessageSizes{}, runtime, traces[r]);
    });
  }
  for (std::thread& t : threads) t.join();
  return traces;
}

// Per stage: F, I and W all different, so a mixed-up stage or kind shows.
Costs UnevenCosts(int stages) {
  Costs costs;
  for (int s = 0; s < stages; ++s) costs.stages.push_back({1.0 + 0.25 * s, 1.5 + 0.125 * s, 0.75});
  return costs;
}

TEST(RunRank, TraceEqualsEvaluateTimelineForEverySchedule) {
  int cases = 0;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    for (const auto& [p, v, m] :
         {std::tuple{2, 0, 4}, std::tuple{4, 0, 8}, std::tuple{3, 0, 6}, std::tuple{4, 3, 8}}) {
      ScheduleParams params{p, v == 0 ? g->default_v() : v, m, 0};
      if (!g->Check(params).ok()) continue;
      const Result<Schedule> schedule = MakeSchedule(g->name(), params);
      ASSERT_TRUE(schedule.ok()) << schedule.status().message();
      const Program program = *Lower(*schedule);
      for (const Costs& costs :
           {Costs::Uniform(program.num_stages(), {1, 1, 1}), UnevenCosts(program.num_stages())}) {
        for (const double latency : {0.0, 0.5}) {
          SCOPED_TRACE(
              fmt::format("{} p={} v={} m={} latency={}", g->name(), p, params.v, m, latency));
          EvaluateOptions options;
          options.p2p_latency = latency;
          options.record_timeline = true;
          const Evaluation eval = *Evaluate(program, costs, options);
          const auto traces = RunAllRanks(program, costs, latency, /*step=*/3);
          for (int r = 0; r < program.p; ++r) {
            const auto& instructions = program.ranks[r].instructions;
            ASSERT_EQ(traces[r].size(), instructions.size());
            for (std::size_t i = 0; i < instructions.size(); ++i) {
              const TraceEvent& e = traces[r][i];
              EXPECT_EQ(e.rank, r);
              EXPECT_EQ(e.instr_id, static_cast<int>(i));
              EXPECT_EQ(e.step, 3);
              EXPECT_EQ(e.action, instructions[i].action);
              EXPECT_EQ(e.start, eval.timeline[r][i].start) << ToString(e.action);  // exact
              EXPECT_EQ(e.end, eval.timeline[r][i].end) << ToString(e.action);
            }
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 150);
}

TEST(RunRank, RecordsTheBytesOfEveryMessage) {
  const Program program = *Lower(*MakeSchedule("1f1b", {2, 1, 2, 0}));
  FakeNetwork network(0);
  const Costs costs = Costs::Uniform(2, {1, 1, 1});
  const MessageSizes sizes{{100, 7}, {}};  // stage 0's output: 100 bytes
  std::vector<TraceEvent> traces[2];
  std::thread other([&] {
    FakeRuntime runtime(network, costs);
    RunRank(program, 1, 0, sizes, runtime, traces[1]);
  });
  FakeRuntime runtime(network, costs);
  RunRank(program, 0, 0, sizes, runtime, traces[0]);
  other.join();
  int messages = 0;
  for (const auto& trace : traces) {
    for (const TraceEvent& e : trace) {
      const bool comm = !IsCompute(e.action.kind);
      EXPECT_EQ(e.bytes, comm ? 100 : 0) << ToString(e.action);  // activations and gradients
      messages += comm;
    }
  }
  EXPECT_EQ(messages, 8);  // 2 microbatches x (SEND_F, RECV_F, SEND_B, RECV_B)
}

// A fake that also records the parts of each step it is asked to run, with a reduction of fixed
// length, an optimizer of fixed length that can be made to fail.
class StepRecorder : public FakeRuntime {
 public:
  using FakeRuntime::FakeRuntime;
  std::vector<std::string> calls;
  int fail_update_at = -1;

  Status BeginStep(int step) override {
    calls.push_back(fmt::format("begin {}", step));
    return FakeRuntime::BeginStep(step);
  }
  void EndProgram(int step) override { calls.push_back(fmt::format("program {}", step)); }
  // Sees exactly this step's events, program order, and retimes them (as a device-timed engine).
  void TimeProgram(int step, std::span<TraceEvent> events) override {
    calls.push_back(fmt::format("time {}: {} events of step {}, ids {}..{}", step, events.size(),
                                events.front().step, events.front().instr_id,
                                events.back().instr_id));
    for (TraceEvent& e : events) e.end = e.start + 0.125;
  }
  std::optional<Span> ReduceGradients(int step) override {
    calls.push_back(fmt::format("reduce {}", step));
    const double start = clock_;
    clock_ += 0.5;
    return Span{start, clock_};
  }
  Status UpdateParameters(int step) override {
    calls.push_back(fmt::format("update {}", step));
    if (step == fail_update_at) return Status::Internal("optimizer failed");
    clock_ += 0.25;
    return Status::Ok();
  }
  void EndStep(int step, const Span& span) override {
    calls.push_back(fmt::format("end {} [{}, {}]", step, span.start, span.end));
  }
};

TEST(RunSteps, RunsTheProgramThenReducesUpdatesAndEndsEachStep) {
  const Program program = *Lower(*MakeSchedule("gpipe", {1, 1, 2, 0}));  // one rank: F F B B
  FakeNetwork network(0);
  const Costs costs = Costs::Uniform(1, {1, 1, 1});
  StepRecorder runtime(network, costs);
  StepLoopOptions options;
  options.steps = 3;
  options.trace_steps = 2;
  options.gradient_bytes = 64;
  RankLog log;
  ASSERT_TRUE(RunSteps(program, 0, {}, options, runtime, log).ok());
  // Each step: 2 F + 2 B of cost 1 + 2 = 6 s, a reduction of 0.5 s and an update of 0.25 s.
  EXPECT_EQ(
      runtime.calls,
      (std::vector<std::string>{
          "begin 0", "program 0", "time 0: 4 events of step 0, ids 0..3", "reduce 0", "update 0",
          "end 0 [0, 6.75]", "begin 1", "program 1", "time 1: 4 events of step 1, ids 0..3",
          "reduce 1", "update 1", "end 1 [6.75, 13.5]", "begin 2", "program 2",
          "time 2: 4 events of step 2, ids 0..3", "reduce 2", "update 2", "end 2 [13.5, 20.25]"}));
  ASSERT_EQ(log.trace.size(), 8u);  // two traced steps of four instructions
  EXPECT_EQ(log.trace[3].step, 0);
  EXPECT_EQ(log.trace[4].step, 1);
  EXPECT_EQ(log.trace[4].start, 6.75);
  EXPECT_EQ(log.trace[4].end, 6.875);  // TimeProgram's times are the log's
  EXPECT_EQ(log.trace[7].end, log.trace[7].start + 0.125);
  ASSERT_EQ(log.allreduces.size(), 2u);
  EXPECT_EQ(log.allreduces[1].step, 1);
  EXPECT_EQ(log.allreduces[1].start, 12.75);
  EXPECT_EQ(log.allreduces[1].end, 13.25);
  EXPECT_EQ(log.allreduces[1].bytes, 64);
  ASSERT_EQ(log.updates.size(), 2u);  // the traced steps' parameter updates
  EXPECT_EQ(log.updates[1].rank, 0);
  EXPECT_EQ(log.updates[1].step, 1);
  EXPECT_EQ(log.updates[1].start, 13.25);
  EXPECT_EQ(log.updates[1].end, 13.5);
  ASSERT_EQ(log.steps.size(), 3u);
  EXPECT_EQ(log.steps[2].start, 13.5);
  EXPECT_EQ(log.steps[2].end, 20.25);
}

TEST(RunSteps, StopsAtTheFirstFailingStepPart) {
  const Program program = *Lower(*MakeSchedule("gpipe", {1, 1, 2, 0}));
  FakeNetwork network(0);
  const Costs costs = Costs::Uniform(1, {1, 1, 1});
  StepRecorder runtime(network, costs);
  runtime.fail_update_at = 1;
  StepLoopOptions options;
  options.steps = 3;
  RankLog log;
  const Status status = RunSteps(program, 0, {}, options, runtime, log);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "optimizer failed");
  EXPECT_EQ(runtime.calls.back(), "update 1");  // no end of step 1, no step 2
  EXPECT_EQ(log.steps.size(), 1u);
}

}  // namespace
}  // namespace pipette
