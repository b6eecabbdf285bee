// The row-by-row join of a predicted and a measured run (fidelity/run_compare.h) on hand-built runs
// whose errors are known exactly: medians and 90th percentiles (linear interpolation), step
// origins, the worst list, peak memory, and every kind of mismatch refused with the first
// mismatching key and both runs named.
#include "pipette/fidelity/run_compare.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipette/fidelity/relative_error.h"

namespace pipette {
namespace {

constexpr char kConfig[] = R"({"schedule":"1f1b","pp":2,"v":1,"m":5})";

EventRow Event(int rank, int step, int instr, EventKind kind, double start, double end,
               int microbatch = 0) {
  EventRow e;
  e.rank = rank;
  e.step = step;
  e.instr_id = instr;
  e.kind = kind;
  e.stage = instr < 0 ? -1 : rank;
  e.microbatch = instr < 0 ? -1 : microbatch;
  e.start_s = start;
  e.end_s = end;
  return e;
}

RunData NewRun(std::int64_t id, const std::string& engine) {
  RunData run;
  run.run.id = id;
  run.run.engine = engine;
  run.run.config = kConfig;
  return run;
}

// Measured: rank 0 runs five F of 1 s back to back from t = 0, a SEND_F at t = 5 that takes no
// time and an ALLREDUCE over [5, 6]. Predicted: the same program starting at t = 10 (its own
// common start), F start errors 0, 0.1, -0.2, 0.3, 0 and durations 1.1, 0.9, 1.2, 1, 1.5, the
// SEND_F on time but 0.5 s long, the ALLREDUCE exact.
struct Known {
  RunData predicted = NewRun(1, "sim");
  RunData measured = NewRun(2, "cpu");
  Known() {
    const double start_error[] = {0, 0.1, -0.2, 0.3, 0};
    const double duration[] = {1.1, 0.9, 1.2, 1.0, 1.5};
    for (int k = 0; k < 5; ++k) {
      measured.events.push_back(Event(0, 0, k, EventKind::kF, k, k + 1, k));
      const double start = 10 + k + start_error[k];
      predicted.events.push_back(Event(0, 0, k, EventKind::kF, start, start + duration[k], k));
    }
    measured.events.push_back(Event(0, 0, 5, EventKind::kSendF, 5, 5, 4));
    predicted.events.push_back(Event(0, 0, 5, EventKind::kSendF, 15, 15.5, 4));
    measured.events.push_back(Event(0, 0, -1, EventKind::kAllReduce, 5, 6));
    predicted.events.push_back(Event(0, 0, -1, EventKind::kAllReduce, 15, 16));
  }
};

const KindErrors& KindOf(const RunComparison& c, EventKind kind) {
  for (const KindErrors& k : c.kinds) {
    if (k.kind == kind) return k;
  }
  ADD_FAILURE() << "no kind " << EventKindName(kind);
  return c.all;
}

TEST(RelativeError, IsSignedAndItsMeanMagnitudeIsTheMape) {
  EXPECT_DOUBLE_EQ(RelativeError(110, 100), 0.1);
  EXPECT_DOUBLE_EQ(RelativeError(90, 100), -0.1);
  EXPECT_EQ(RelativeError(5, 0), 0);
  EXPECT_DOUBLE_EQ(MeanAbsoluteRelativeError({90, 220}, {100, 200}), 0.1);
  EXPECT_EQ(MeanAbsoluteRelativeError({}, {}), 0);
}

TEST(Percentile, InterpolatesLinearlyBetweenClosestRanks) {
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2, 4}, 90), 3.7);  // rank 2.7: 3 + 0.7 (4 - 3)
  EXPECT_DOUBLE_EQ(Percentile({5, 1, 3}, 50), 3);
  EXPECT_DOUBLE_EQ(Percentile({5, 1, 3}, 100), 5);
  EXPECT_DOUBLE_EQ(Percentile({5, 1, 3}, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile({7}, 90), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(CompareRuns, ARunAgainstItselfHasNoError) {
  const Known k;
  const Result<RunComparison> c = CompareRuns(k.measured, k.measured, 10);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->pairs, 7u);
  EXPECT_EQ(c->all.count, 7);
  EXPECT_EQ(c->all.start_abs_s.p90, 0);
  EXPECT_EQ(c->all.duration_abs_rel.p90, 0);
  EXPECT_EQ(c->all.duration_abs_rel.count, 6);  // the SEND takes no time: no relative error
  ASSERT_EQ(c->worst.size(), 7u);
  for (const EventPair& p : c->worst) EXPECT_EQ(p.displacement_s(), 0);
  ASSERT_EQ(c->steps.size(), 1u);
  EXPECT_EQ(c->steps[0].measured_s, 6);
  EXPECT_EQ(c->steps[0].error_rel, 0);
}

TEST(CompareRuns, KindStatisticsAreTheKnownErrors) {
  const Known k;
  const Result<RunComparison> c = CompareRuns(k.predicted, k.measured, 2);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->kinds.size(), 3u);  // F, SEND_F, ALLREDUCE in EventKind order
  EXPECT_EQ(c->kinds[0].kind, EventKind::kF);
  EXPECT_EQ(c->kinds[1].kind, EventKind::kSendF);
  EXPECT_EQ(c->kinds[2].kind, EventKind::kAllReduce);
  const KindErrors& f = KindOf(*c, EventKind::kF);
  EXPECT_EQ(f.count, 5);
  // |start errors| 0, 0, 0.1, 0.2, 0.3: median 0.1, p90 at rank 3.6: 0.2 + 0.6 * 0.1.
  EXPECT_NEAR(f.start_abs_s.median, 0.1, 1e-12);
  EXPECT_NEAR(f.start_abs_s.p90, 0.26, 1e-12);
  // As a fraction of the measured step span, 6 s (origin 0, the all-reduce ends at 6).
  EXPECT_NEAR(f.start_abs_frac.median, 0.1 / 6, 1e-12);
  EXPECT_NEAR(f.start_abs_frac.p90, 0.26 / 6, 1e-12);
  // Relative duration errors 0.1, -0.1, 0.2, 0, 0.5: |.| sorted 0, 0.1, 0.1, 0.2, 0.5.
  EXPECT_EQ(f.duration_abs_rel.count, 5);
  EXPECT_NEAR(f.duration_abs_rel.median, 0.1, 1e-12);
  EXPECT_NEAR(f.duration_abs_rel.p90, 0.38, 1e-12);
  EXPECT_NEAR(f.duration_signed_median_rel, 0.1, 1e-12);
  EXPECT_NEAR(f.duration_abs_s.p90, 0.38, 1e-12);
  const KindErrors& send = KindOf(*c, EventKind::kSendF);
  EXPECT_EQ(send.duration_abs_rel.count, 0);  // measured 0 s
  EXPECT_NEAR(send.duration_abs_s.median, 0.5, 1e-12);
  const KindErrors& ar = KindOf(*c, EventKind::kAllReduce);
  EXPECT_NEAR(ar.start_abs_s.median, 0, 1e-12);
  EXPECT_NEAR(ar.duration_abs_rel.median, 0, 1e-12);
  EXPECT_EQ(c->all.count, 7);
  // Predicted step: origin 10, last end 16 (all-reduce); measured 0..6.
  ASSERT_EQ(c->steps.size(), 1u);
  EXPECT_NEAR(c->steps[0].predicted_s, 6, 1e-12);
  EXPECT_NEAR(c->steps[0].error_rel, 0, 1e-12);
}

TEST(CompareRuns, WorstListsTheMostDisplacedFirst) {
  const Known k;
  const Result<RunComparison> c = CompareRuns(k.predicted, k.measured, 3);
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Displacements max(|start err|, |end err|): F 0.1, 0.1, 0.2, 0.3, 0.5; SEND 0.5; ALLREDUCE 0.
  ASSERT_EQ(c->worst.size(), 3u);
  EXPECT_EQ(c->worst[0].key.instr_id, 4);  // 0.5, F before SEND_F by key order
  EXPECT_EQ(c->worst[0].key.kind, EventKind::kF);
  EXPECT_EQ(c->worst[1].key.instr_id, 5);
  EXPECT_EQ(c->worst[1].key.kind, EventKind::kSendF);
  EXPECT_EQ(c->worst[2].key.instr_id, 3);
  EXPECT_NEAR(c->worst[2].start_error_s, 0.3, 1e-12);
  EXPECT_NEAR(c->worst[2].predicted_start_s, 3.3, 1e-12);
  EXPECT_NEAR(c->worst[2].measured_start_s, 3, 1e-12);
  EXPECT_NEAR(*c->worst[0].duration_error_rel, 0.5, 1e-12);
  EXPECT_TRUE(CompareRuns(k.predicted, k.measured, 0)->worst.empty());
}

TEST(CompareRuns, StartsAreComparedWithinTheirStep) {
  Known k;
  // Step 1 starts at 100 in the measured run and at 50 in the predicted one: same relative times.
  k.measured.events.push_back(Event(0, 1, 0, EventKind::kF, 100, 101));
  k.measured.events.push_back(Event(1, 1, 0, EventKind::kF, 101, 103));
  k.predicted.events.push_back(Event(0, 1, 0, EventKind::kF, 50, 51));
  k.predicted.events.push_back(Event(1, 1, 0, EventKind::kF, 51, 53));
  const Result<RunComparison> c = CompareRuns(k.predicted, k.measured, 100);
  ASSERT_TRUE(c.ok()) << c.status().message();
  for (const EventPair& p : c->worst) {
    if (p.key.step == 1) {
      EXPECT_NEAR(p.displacement_s(), 0, 1e-12);
    }
  }
  ASSERT_EQ(c->steps.size(), 2u);
  EXPECT_EQ(c->steps[1].step, 1);
  EXPECT_NEAR(c->steps[1].measured_s, 3, 1e-12);
  EXPECT_NEAR(c->steps[1].error_rel, 0, 1e-12);
}

TEST(CompareRuns, StepTimeAndPeakMemoryPerRank) {
  Known k;
  k.predicted.metrics = {{"step_time_s", 1.2, "s"},
                         {"peak_memory_bytes[0]", 100, "B"},
                         {"peak_memory_bytes[1]", 200, "B"}};
  k.measured.metrics = {{"step_time_s", 1.0, "s"},
                        {"peak_memory_bytes[0]", 80, "B"},
                        {"peak_memory_bytes[1]", 250, "B"}};
  const Result<RunComparison> c = CompareRuns(k.predicted, k.measured, 1);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->step_time.has_value());
  EXPECT_NEAR(c->step_time->error_rel, 0.2, 1e-12);
  ASSERT_EQ(c->memory.size(), 2u);
  EXPECT_EQ(c->memory[1].rank, 1);
  EXPECT_EQ(c->memory[1].measured_bytes, 250);
  EXPECT_NEAR(c->memory[0].error_rel, 0.25, 1e-12);
  EXPECT_NEAR(c->memory[1].error_rel, -0.2, 1e-12);
  k.measured.metrics.clear();
  const Result<RunComparison> none = CompareRuns(k.predicted, k.measured, 1);
  EXPECT_FALSE(none->step_time.has_value());
  EXPECT_TRUE(none->memory.empty());
}

TEST(CompareRuns, AnOverlappedCellIsTwoEventsOfOneInstruction) {
  RunData predicted = NewRun(1, "sim"), measured = NewRun(2, "cpu");
  // Instruction 0 is an (F;B) cell: its F half and its B half share the id.
  measured.events = {Event(0, 0, 0, EventKind::kF, 0, 1), Event(0, 0, 0, EventKind::kB, 1, 3)};
  predicted.events = {Event(0, 0, 0, EventKind::kF, 0, 1), Event(0, 0, 0, EventKind::kB, 1, 4)};
  const Result<RunComparison> c = CompareRuns(predicted, measured, 1);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->pairs, 2u);
  ASSERT_EQ(c->kinds.size(), 2u);
  EXPECT_NEAR(c->kinds[0].duration_abs_rel.median, 0, 1e-12);    // F
  EXPECT_NEAR(c->kinds[1].duration_abs_rel.median, 0.5, 1e-12);  // B: 3 s against 2 s
  ASSERT_EQ(c->worst.size(), 1u);
  EXPECT_EQ(c->worst[0].key.kind, EventKind::kB);
  EXPECT_NEAR(c->worst[0].displacement_s(), 1, 1e-12);
}

TEST(OrderForComparison, TheSimulatedRunIsAlwaysThePrediction) {
  const RunData sim = NewRun(1, "sim"), cpu = NewRun(2, "cpu"), cpu2 = NewRun(3, "cpu");
  EXPECT_EQ(OrderForComparison(cpu, sim).first, &sim);
  EXPECT_EQ(OrderForComparison(cpu, sim).second, &cpu);
  EXPECT_EQ(OrderForComparison(sim, cpu).first, &sim);
  EXPECT_EQ(OrderForComparison(cpu2, cpu).first, &cpu2);  // same engine: A predicts B
}

std::string Refusal(const RunData& predicted, const RunData& measured) {
  const Result<RunComparison> c = CompareRuns(predicted, measured, 10);
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

TEST(CompareRuns, RefusesAKeyInOneRunOnly) {
  Known k;
  k.measured.events.erase(k.measured.events.begin() + 4);  // instr 4
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: replica 0 rank 0 step 0 instr "
            "4 (F) is in run 1 (sim) and not in run 2 (cpu)");
  Known extra;
  extra.measured.events.push_back(Event(0, 0, -1, EventKind::kOptimizer, 6, 7));
  EXPECT_EQ(Refusal(extra.predicted, extra.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: replica 0 rank 0 step 0 "
            "OPTIMIZER is in run 2 (cpu) and not in run 1 (sim)");
}

TEST(CompareRuns, RefusesADifferentKindStageOrMicrobatch) {
  Known kind;
  kind.predicted.events[2].kind = EventKind::kI;  // F < I: F at instr 2 is the measured run's only
  EXPECT_EQ(Refusal(kind.predicted, kind.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: replica 0 rank 0 step 0 instr "
            "2 (F) is in run 2 (cpu) and not in run 1 (sim)");
  Known mb;
  mb.measured.events[1].microbatch = 3;
  EXPECT_EQ(Refusal(mb.predicted, mb.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: replica 0 rank 0 step 0 instr "
            "1 (F) is stage 0 chunk 0 microbatch 1 in run 1 (sim) and stage 0 chunk 0 microbatch "
            "3 in run 2 (cpu)");
}

// The step time fidelity is judged by: without the warm-up step 0, over the steps asked for.
TEST(SteadyStepTime, LeavesOutStepZeroAndStopsAtTheStepsAskedFor) {
  RunData run = NewRun(1, "cpu");
  run.metrics = {{"step_time_s", 9, "s"},
                 {"step_times_s[0]", 30, "s"},
                 {"step_times_s[1]", 10, "s"},
                 {"step_times_s[2]", 14, "s"},
                 {"step_times_s[3]", 100, "s"}};
  EXPECT_EQ(run.SteadyStepTime(), (10 + 14 + 100) / 3.0);
  EXPECT_EQ(run.SteadyStepTime(3), 12.0);
  EXPECT_EQ(run.SteadyStepTime(1), 30.0) << "step 0 alone when it is all there is";
  run.metrics = {{"step_time_s", 9, "s"}};
  EXPECT_EQ(run.SteadyStepTime(), 9.0) << "no per-step times: the mean";
}

TEST(CompareRuns, RefusesADifferentProgramConfiguration) {
  Known k;
  k.measured.run.config = R"({"schedule":"1f1b","pp":2,"v":1,"m":8})";
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: configuration key 'm' is 5 in "
            "run 1 (sim) and 8 in run 2 (cpu)");
  k.measured.run.config = R"({"schedule":"gpipe","pp":2,"m":5})";
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: configuration key 'schedule' "
            "is \"1f1b\" in run 1 (sim) and \"gpipe\" in run 2 (cpu)");
  k.measured.run.config = R"({"schedule":"1f1b","pp":2,"m":5})";
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: configuration key 'v' is 1 in "
            "run 1 (sim) and absent in run 2 (cpu)");
  // A different model, and a prediction of another run.
  k.measured.run.config = kConfig;
  k.measured.run.config.insert(k.measured.run.config.size() - 1, R"(,"model":"tiny")");
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: configuration key 'model' is "
            "absent in run 1 (sim) and \"tiny\" in run 2 (cpu)");
  k.measured.run.config = kConfig;
  k.predicted.run.config.insert(k.predicted.run.config.size() - 1, R"(,"costs_from":7)");
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 1 (sim) and run 2 (cpu) are not the same program: run 1 (sim) predicts run 7 "
            "(costs_from), not run 2 (cpu)");
}

TEST(CompareRuns, RefusesARunWithoutEventsOrWithAKeyTwice) {
  Known k;
  RunData empty = NewRun(2, "cpu");
  EXPECT_EQ(Refusal(k.predicted, empty),
            "run 2 (cpu) has no events (recorded with --trace none or summary): nothing to join "
            "with run 1 (sim)");
  k.measured.events.push_back(k.measured.events[0]);
  EXPECT_EQ(Refusal(k.predicted, k.measured),
            "run 2 (cpu) records replica 0 rank 0 step 0 instr 0 (F) twice: cannot join it with "
            "run 1 (sim)");
  EXPECT_EQ(CompareRuns(k.predicted, k.predicted, -1).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pipette
