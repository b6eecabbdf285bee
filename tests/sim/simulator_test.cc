// Golden: the SimGrid engine reproduces evaluate() on an ideal network, for every schedule and
// several (p, v, m), with zero and with fixed per-message latency: the makespan, every rank's busy
// time, and the start and end of every executed instruction. SimGrid runs once per process, so
// all cases go into one Simulate() call.
#include "sim/simulator.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <memory>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette {
namespace {

struct Expected {
  std::string label;
  std::unique_ptr<Program> program;
  Evaluation evaluation;
};

TEST(Simulator, ReproducesEvaluateExactlyForEverySchedule) {
  std::vector<Expected> expected;
  std::vector<SimulationCase> cases;
  const StageCost cost_sets[] = {{1, 1, 1}, {1.25, 2.5, 0.75}};
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    for (const auto& [p, v, m] : {std::tuple{2, 0, 4}, std::tuple{4, 0, 8}, std::tuple{4, 0, 12},
                                  std::tuple{3, 0, 6}, std::tuple{4, 3, 8}}) {
      ScheduleParams params{p, v, m, 0};
      params.v = v == 0 ? g->default_v() : v;
      if (!g->Check(params).ok()) continue;
      Result<Schedule> schedule = MakeSchedule(g->name(), params);
      ASSERT_TRUE(schedule.ok()) << schedule.status().message();
      for (const StageCost& cost : cost_sets) {
        for (double latency : {0.0, 0.5, 0.125}) {
          Expected e;
          e.label = fmt::format("{} p={} v={} m={} F={} I={} W={} c={}", g->name(), p, params.v, m,
                                cost.f, cost.i, cost.w, latency);
          e.program = std::make_unique<Program>(*Lower(*schedule));
          const Costs costs = Costs::Uniform(schedule->num_stages(), cost);
          EvaluateOptions options;
          options.p2p_latency = latency;
          options.record_timeline = true;
          e.evaluation = *Evaluate(*e.program, costs, options);
          SimulationCase sc;
          sc.program = e.program.get();
          sc.costs = costs;
          sc.latency = latency;
          cases.push_back(std::move(sc));
          expected.push_back(std::move(e));
        }
      }
    }
  }
  ASSERT_GT(cases.size(), 200u);

  Result<std::vector<SimulationResult>> results = Simulate(cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  ASSERT_EQ(results->size(), cases.size());
  int exact = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const SimulationResult& sim = (*results)[c];
    const Evaluation& eval = expected[c].evaluation;
    SCOPED_TRACE(expected[c].label);
    EXPECT_EQ(sim.makespan, eval.makespan);  // bit for bit
    exact += sim.makespan == eval.makespan;
    EXPECT_EQ(sim.bubble_ratio, eval.bubble_ratio);
    EXPECT_EQ(sim.busy, eval.busy);
    // One event per instruction, with the program's ids, at evaluate()'s times.
    std::size_t k = 0;
    for (int r = 0; r < expected[c].program->p; ++r) {
      const auto& instructions = expected[c].program->ranks[r].instructions;
      for (std::size_t i = 0; i < instructions.size(); ++i, ++k) {
        ASSERT_LT(k, sim.trace.size());
        const TraceEvent& event = sim.trace[k];
        EXPECT_EQ(event.rank, r);
        EXPECT_EQ(event.instr_id, static_cast<int>(i));
        EXPECT_EQ(event.action, instructions[i].action);
        // Sends at their time, receives from posting to arrival, compute from start to end.
        EXPECT_EQ(event.start, eval.timeline[r][i].start) << ToString(event.action);
        EXPECT_EQ(event.end, eval.timeline[r][i].end) << ToString(event.action);
      }
    }
    EXPECT_EQ(k, sim.trace.size());
  }
  EXPECT_EQ(exact, static_cast<int>(cases.size()));
  EXPECT_FALSE(Simulate(cases).ok()) << "a second engine in one process must be refused";
}

// The same with uneven work: a slow rank, variable-length microbatches and slow links. Costs such
// as 1 / 0.75 are not dyadic, and SimGrid rounds the remaining work of an action its own way, so
// the times agree to 1e-12 of the makespan rather than bit for bit.
TEST(Simulator, ReproducesEvaluateWithUnevenWork) {
  constexpr double kTolerance = 1e-12;
  std::vector<Expected> expected;
  std::vector<SimulationCase> cases;
  UnevenWork work;
  work.rank_speed = {1, 0.5, 1, 0.75};
  work.reference_seqlen = 1024;
  work.microbatch_seqlens = {1024, 512, 2048, 1024, 256, 3072, 1024, 1536};
  work.attention_share = 0.25;
  work.link_slowdowns = {{0, 1, 3}, {3, 2, 1.5}};
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    ScheduleParams params{4, g->default_v(), 8, 0};
    if (!g->Check(params).ok()) continue;
    Result<Schedule> schedule = MakeSchedule(g->name(), params);
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    for (double latency : {0.0, 0.125}) {
      Expected e;
      e.label = fmt::format("{} c={}", g->name(), latency);
      e.program = std::make_unique<Program>(*Lower(*schedule));
      Result<Costs> costs = ApplyUnevenWork(Costs::Uniform(schedule->num_stages(), {1, 0.5, 0.25}),
                                            schedule->placement, 8, work);
      ASSERT_TRUE(costs.ok()) << costs.status().message();
      EvaluateOptions options;
      options.p2p_latency = latency;
      options.record_timeline = true;
      options.link_slowdowns = work.link_slowdowns;
      e.evaluation = *Evaluate(*e.program, *costs, options);
      if (latency > 0 && g->name() == "1f1b") {  // the slow links are on its critical path
        options.link_slowdowns.clear();
        EXPECT_GT(e.evaluation.makespan, Evaluate(*e.program, *costs, options)->makespan);
      }
      SimulationCase sc;
      sc.program = e.program.get();
      sc.costs = *costs;
      sc.latency = latency;
      sc.link_slowdowns = work.link_slowdowns;
      cases.push_back(std::move(sc));
      expected.push_back(std::move(e));
    }
  }
  ASSERT_GT(cases.size(), 20u);
  Result<std::vector<SimulationResult>> results = Simulate(cases);
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const SimulationResult& sim = (*results)[c];
    const Evaluation& eval = expected[c].evaluation;
    SCOPED_TRACE(expected[c].label);
    EXPECT_NEAR(sim.makespan, eval.makespan, kTolerance * eval.makespan);
    for (int r = 0; r < expected[c].program->p; ++r) {
      EXPECT_NEAR(sim.busy[r], eval.busy[r], kTolerance * eval.busy[r]);
    }
    std::size_t k = 0;
    for (int r = 0; r < expected[c].program->p; ++r) {
      const auto& instructions = expected[c].program->ranks[r].instructions;
      for (std::size_t i = 0; i < instructions.size(); ++i, ++k) {
        ASSERT_LT(k, sim.trace.size());
        EXPECT_NEAR(sim.trace[k].start, eval.timeline[r][i].start, kTolerance * eval.makespan)
            << ToString(instructions[i].action);
        EXPECT_NEAR(sim.trace[k].end, eval.timeline[r][i].end, kTolerance * eval.makespan)
            << ToString(instructions[i].action);
      }
    }
  }
}

}  // namespace
}  // namespace pipette
