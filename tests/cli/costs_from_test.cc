// `pipette simulate --costs-from RUN`, the calibration round trip: a synthetic engine whose costs
// are known (the shared training loop on virtual clocks, with a barrier before every step like
// the real engines', per-stage costs that differ, a fused B that is not I + W, a parameter update
// per rank) records a "measured" run; its prediction must reproduce every event of every step
// exactly. And what --costs-from refuses.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "../engine/fake_runtime.h"
#include "pipette/common/host_machine.h"
#include "pipette/engine/calibration.h"
#include "pipette/engine/step_loop.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/trace_rows.h"
#include "pipette_runner.h"

namespace pipette {
namespace {

using testing::Pipette;
using testing::ScratchDir;

// A fake real engine: every step starts on every rank at the latest end of the previous step (the
// barrier), and the update takes `update` seconds.
struct StepClock {
  explicit StepClock(int ranks) : sync(ranks) {}
  std::barrier<> sync;
  std::mutex mutex;
  double latest = 0;
};

class SyntheticRuntime : public testing::FakeRuntime {
 public:
  SyntheticRuntime(testing::FakeNetwork& network, const Costs& costs, StepClock& clock,
                   double update)
      : FakeRuntime(network, costs), steps_(clock), update_(update) {}

  Status BeginStep(int step) override {
    {
      std::lock_guard lock(steps_.mutex);
      steps_.latest = std::max(steps_.latest, clock_);
    }
    steps_.sync.arrive_and_wait();
    clock_ = steps_.latest;
    steps_.sync.arrive_and_wait();  // nobody raises `latest` before everyone has read it
    return FakeRuntime::BeginStep(step);
  }
  Status UpdateParameters(int) override {
    clock_ += update_;
    return Status::Ok();
  }

 private:
  StepClock& steps_;
  const double update_;
};

// Costs that differ by stage, in seconds, with a fused B cheaper than I + W.
Costs SyntheticCosts(int stages) {
  Costs costs;
  for (int s = 0; s < stages; ++s) {
    costs.stages.push_back({1e-3 * (1 + s), 1.5e-3 * (1 + s % 2), 0.5e-3 * (2 + s)});
    costs.full_backward.push_back(0.9 * costs.stages.back().b());
  }
  return costs;
}

// Records the synthetic engine's run of `schedule` into `db_path` as a cpu run; returns its id.
// With `uneven`, the engine really runs uneven work (its costs through ApplyUnevenWork) and the
// run records seq_len = uneven->reference_seqlen.
std::int64_t RecordSyntheticRun(const std::string& db_path, const std::string& schedule, int p,
                                int m, int steps, double latency = 0,
                                const UnevenWork* uneven = nullptr) {
  const Schedule s = *MakeSchedule(schedule, {.p = p, .v = 0, .m = m});
  const Program program = *Lower(s);
  const Costs costs = uneven == nullptr ? SyntheticCosts(program.num_stages())
                                        : *ApplyUnevenWork(SyntheticCosts(program.num_stages()),
                                                           s.placement, m, *uneven);
  testing::FakeNetwork network(latency);
  StepClock clock(p);
  std::vector<RankLog> logs(p);
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r) {
    ranks.emplace_back([&, r] {
      SyntheticRuntime runtime(network, costs, clock, 0.25e-3 * (r + 1));
      StepLoopOptions options;
      options.steps = steps;
      EXPECT_TRUE(RunSteps(program, r, {}, options, runtime, logs[r]).ok());
    });
  }
  for (std::thread& t : ranks) t.join();
  std::vector<TraceEvent> trace;
  std::vector<AllReduceEvent> updates;
  for (const RankLog& log : logs) {
    trace.insert(trace.end(), log.trace.begin(), log.trace.end());
    updates.insert(updates.end(), log.updates.begin(), log.updates.end());
  }
  RunData data;
  data.events = ToEventRows(program, trace, {}, updates);
  for (int k = 0; k < steps; ++k) {
    double start = 1e300, end = 0;
    for (const RankLog& log : logs) {
      start = std::min(start, log.steps[k].start);
      end = std::max(end, log.steps[k].end);
    }
    data.metrics.push_back({"step_times_s[" + std::to_string(k) + "]", end - start, "s"});
  }
  RunRecord run;
  run.engine = "cpu";
  nlohmann::json config{{"engine", "cpu"}, {"schedule", schedule}, {"p", p}, {"v", s.v}, {"m", m},
                        {"dp", 1}};
  if (uneven != nullptr) config["seq_len"] = uneven->reference_seqlen;
  // As `pipette train` records uneven work (train_main.cc): the options' syntax, what was given.
  if (uneven != nullptr && !uneven->rank_speed.empty()) {
    config["rank_speed"] = FormatRankSpeeds(uneven->rank_speed);
  }
  if (uneven != nullptr && !uneven->microbatch_seqlens.empty()) {
    config["microbatch_seqlens"] = FormatMicrobatchSeqlens(uneven->microbatch_seqlens);
  }
  run.config = config.dump();
  auto db = ExperimentDb::Open(db_path);
  EXPECT_TRUE(db.ok()) << db.status().message();
  const std::int64_t id = *db->BeginRun(run);
  EXPECT_TRUE(db->FinishRun(id, data, kRunOk).ok());
  return id;
}

// Every event of `a` equals the event of `b` with the same (rank, step, instr_id, kind).
void ExpectSameEvents(const RunData& a, const RunData& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  auto key = [](const EventRow& e) { return std::tuple(e.rank, e.step, e.kind, e.instr_id); };
  std::map<decltype(key(a.events[0])), const EventRow*> index;
  for (const EventRow& e : b.events) index[key(e)] = &e;
  for (const EventRow& e : a.events) {
    const auto it = index.find(key(e));
    ASSERT_NE(it, index.end()) << "rank " << e.rank << " step " << e.step << " instr "
                               << e.instr_id;
    EXPECT_NEAR(e.start_s, it->second->start_s, 1e-12)
        << EventKindName(e.kind) << " " << e.instr_id;
    EXPECT_NEAR(e.end_s, it->second->end_s, 1e-12) << EventKindName(e.kind) << " " << e.instr_id;
  }
}

class CostsFromRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(CostsFromRoundTrip, ThePredictionOfAKnownEngineIsExact) {
  const std::string name = GetParam();
  const std::string db = ScratchDir() + "/round-" + name + ".db";
  const std::int64_t measured = RecordSyntheticRun(db, name, 4, 8, 3);
  const auto run = Pipette("simulate --costs-from " + std::to_string(measured) +
                           " --cores 0 --db " + db + " --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  auto store = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(store.ok());
  const RunData want = *store->LoadRun(measured);
  const RunData got = *store->LoadRun(json["run_id"].get<std::int64_t>());
  EXPECT_EQ(got.run.engine, "sim");
  EXPECT_EQ(nlohmann::json::parse(got.run.config)["costs_from"], measured);
  ExpectSameEvents(got, want);
  for (int k = 0; k < 3; ++k) {
    const std::string metric = "step_times_s[" + std::to_string(k) + "]";
    EXPECT_NEAR(got.Metric(metric), want.Metric(metric), 1e-12) << metric;
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, CostsFromRoundTrip,
                         ::testing::Values("gpipe", "1f1b", "eager-1f1b", "zb-h1", "zb-h2",
                                           "interleaved-1f1b", "interleaved-1f1b-plus-one",
                                           "kimi-k2", "interleaved-gpipe", "interleaved-zb", "zbv",
                                           "dualpipe", "dualpipe-v"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Ranks that shared one core (a --virtual-ranks run on one GPU): the synthetic engine's run is
// simulated on one shared core, which stretches each compute by the others running beside it
// (unevenly: a stage's instructions no longer take one time), and that simulation is recorded as
// a measured run. --cores 1 --alone-costs takes the sharing out again (processor sharing's
// inverse) and predicts the run exactly, event by event; the measured medians replayed on a core
// each do not, nor do they on the shared core (the sharing counted twice).
class CostsFromSharedCore : public ::testing::TestWithParam<const char*> {};

TEST_P(CostsFromSharedCore, AloneCostsPredictARunOnASharedCoreExactly) {
  const std::string name = GetParam();
  const std::string db = ScratchDir() + "/shared-" + name + ".db";
  const std::int64_t alone = RecordSyntheticRun(db, name, 4, 8, 3);
  auto run = Pipette("simulate --costs-from " + std::to_string(alone) + " --cores 1 --db " + db +
                     " --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::int64_t shared = 0;
  {
    auto store = ExperimentDb::Open(db);
    ASSERT_TRUE(store.ok());
    RunData data = *store->LoadRun(nlohmann::json::parse(run.out)["run_id"].get<std::int64_t>());
    nlohmann::json config = nlohmann::json::parse(data.run.config);
    config["engine"] = "cuda";  // recorded as a real engine's run
    RunRecord record;
    record.engine = "cuda";
    record.config = config.dump();
    shared = *store->BeginRun(record);
    ASSERT_TRUE(store->FinishRun(shared, data, kRunOk).ok());
  }
  auto predict = [&](const std::string& options) {
    const auto p = Pipette("simulate --costs-from " + std::to_string(shared) + " " + options +
                           " --db " + db + " --format json");
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return nlohmann::json::parse(p.out)["run_id"].get<std::int64_t>();
  };
  const std::int64_t exact = predict("--cores 1 --alone-costs");
  const std::int64_t replayed = predict("--cores 0");
  const std::int64_t twice = predict("--cores 1");
  auto store = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(store.ok());
  const RunData want = *store->LoadRun(shared);
  const RunData got = *store->LoadRun(exact);
  EXPECT_EQ(nlohmann::json::parse(got.run.config)["prediction"]["costs"], "alone");
  ExpectSameEvents(got, want);
  const double measured = want.SteadyStepTime();
  EXPECT_NEAR(got.SteadyStepTime(), measured, 1e-9 * measured);
  EXPECT_GT(std::abs(store->LoadRun(replayed)->SteadyStepTime() - measured), 1e-3 * measured);
  EXPECT_GT(store->LoadRun(twice)->SteadyStepTime(), 1.2 * measured);
}

INSTANTIATE_TEST_SUITE_P(Schedules, CostsFromSharedCore,
                         ::testing::Values("1f1b", "zb-h1", "interleaved-1f1b", "dualpipe-v"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A calibration's message time applies to every message: the synthetic engine's messages take
// 0.4 ms, and a calibration that measured alpha = 0.4 ms (beta 0, no overhead) predicts it exactly.
TEST(CostsFrom, ACalibrationsMessageTimeReproducesTheEnginesLatency) {
  const std::string db = ScratchDir() + "/calibrated.db";
  const std::int64_t measured = RecordSyntheticRun(db, "interleaved-1f1b", 4, 8, 2, 0.4e-3);
  Calibration c;
  c.engine = "cpu";
  c.host = HostName();
  c.created_at = UtcNow();
  c.ranks = 4;
  c.cores = 4;
  c.p2p = {0.4e-3, 0};
  c.points = {{"p2p", 2, 0, 0.4e-3}, {"p2p", 2, 1024, 0.4e-3}};
  std::int64_t calibration = 0;
  {
    auto store = ExperimentDb::Open(db);
    ASSERT_TRUE(store.ok());
    calibration = *store->RecordCalibration(c);
  }
  const auto run =
      Pipette("simulate --costs-from " + std::to_string(measured) + " --calibration " +
              std::to_string(calibration) + " --cores 0 --db " + db + " --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["prediction"]["calibration"], calibration);
  auto store = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(store.ok());
  ExpectSameEvents(*store->LoadRun(json["run_id"].get<std::int64_t>()), *store->LoadRun(measured));
  const auto latest = Pipette("simulate --costs-from " + std::to_string(measured) +
                              " --calibration latest --cores 0 --db " + db + " --format json");
  ASSERT_EQ(latest.exit_code, 0) << latest.err;
  EXPECT_EQ(nlohmann::json::parse(latest.out)["prediction"]["calibration"], calibration);
  const auto bad =
      Pipette("simulate --costs-from " + std::to_string(measured) + " --calibration 99 --db " + db);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--calibration = 99"), std::string::npos) << bad.err;
}

// What the straggler and variable-length studies do: predict a slowed run from an unslowed one.
// The synthetic engine runs rank 2 at half speed and microbatches of other lengths (its costs
// scaled as uneven_work.h says, attention share 0.25); the prediction of the even run with the
// same --rank-speed, --microbatch-seqlens and --attention-share reproduces every event. (This
// checks the plumbing end to end; whether the CPU engine's real work scales so is the studies'.)
TEST(CostsFrom, PredictsAnUnevenRunFromAnEvenOne) {
  const std::string db = ScratchDir() + "/uneven.db";
  UnevenWork even;
  even.reference_seqlen = 64;
  UnevenWork uneven = even;
  uneven.rank_speed = {1, 1, 0.5, 1};
  uneven.microbatch_seqlens = {64, 32, 128, 64, 96, 64, 16, 64};
  uneven.attention_share = 0.25;
  for (const char* schedule : {"1f1b", "zbv"}) {
    SCOPED_TRACE(schedule);
    const std::int64_t base = RecordSyntheticRun(db, schedule, 4, 8, 2, 0, &even);
    const std::int64_t slowed = RecordSyntheticRun(db, schedule, 4, 8, 2, 0, &uneven);
    const auto run = Pipette("simulate --costs-from " + std::to_string(base) +
                             " --rank-speed 2=0.5 --microbatch-seqlens 64,32,128,64,96,64,16,64 "
                             "--attention-share 0.25 --cores 0 --db " +
                             db + " --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto store = ExperimentDb::OpenReadOnly(db);
    ASSERT_TRUE(store.ok());
    const RunData got = *store->LoadRun(nlohmann::json::parse(run.out)["run_id"].get<int>());
    EXPECT_EQ(nlohmann::json::parse(got.run.config)["uneven"]["rank_speed"],
              nlohmann::json({1, 1, 0.5, 1}));
    ExpectSameEvents(got, *store->LoadRun(slowed));
    // Without the uneven work the prediction is the even run's, far from the slowed one.
    EXPECT_LT(store->LoadRun(base)->Metric("step_times_s[1]"),
              0.8 * store->LoadRun(slowed)->Metric("step_times_s[1]"));
  }
  // A run that ran uneven work is not scaled again, and a run of mixed lengths has no one
  // length's costs to predict from; a slowed run's own costs predict it (they hold the slowdown).
  const std::string mixed = std::to_string(RecordSyntheticRun(db, "1f1b", 4, 8, 1, 0, &uneven));
  const auto twice = Pipette("simulate --costs-from " + mixed + " --rank-speed 2=0.5 --db " + db);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("the run already ran uneven work ({\"rank_speed\":\"2=0.5\""),
            std::string::npos)
      << twice.err;
  const auto own = Pipette("simulate --costs-from " + mixed + " --db " + db);
  EXPECT_EQ(own.exit_code, 2);
  EXPECT_NE(own.err.find("the run's microbatches have different lengths"), std::string::npos)
      << own.err;
  UnevenWork straggler = even;
  straggler.rank_speed = {1, 0.5, 1, 1};
  const auto slowed_own = Pipette(
      "simulate --costs-from " +
      std::to_string(RecordSyntheticRun(db, "1f1b", 4, 8, 1, 0, &straggler)) + " --db " + db);
  EXPECT_EQ(slowed_own.exit_code, 0) << slowed_own.err;
  const auto no_seq_len =
      Pipette("simulate --costs-from " + std::to_string(RecordSyntheticRun(db, "1f1b", 2, 2, 1)) +
              " --microbatch-seqlens 1,2 --db " + db);
  EXPECT_EQ(no_seq_len.exit_code, 2);
  EXPECT_NE(no_seq_len.err.find("the run records no seq_len"), std::string::npos) << no_seq_len.err;
}

TEST(CostsFrom, RefusesSimulatedUnknownAndContradictedRuns) {
  const auto sim = Pipette("simulate --times F=1,I=1,W=1 --ideal-network --db refuse.db");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto run = Pipette("simulate --costs-from 1 --db refuse.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--costs-from = 1: run 1 is a simulation"), std::string::npos) << run.err;
  run = Pipette("simulate --costs-from 99 --db refuse.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--costs-from = 99: no such run"), std::string::npos) << run.err;
  run = Pipette("simulate --costs-from 1 --schedule gpipe --db refuse.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--schedule with --costs-from = 1"), std::string::npos) << run.err;
  for (const char* ignored : {"--steps 3", "--cluster host", "--recompute", "--efficiency 0.1"}) {
    run = Pipette(std::string("simulate --costs-from 1 --db refuse.db ") + ignored);
    EXPECT_EQ(run.exit_code, 2) << ignored;
    EXPECT_NE(run.err.find("with --costs-from = 1: the program"), std::string::npos) << run.err;
  }
  run = Pipette("simulate --costs-from 1 --db missing.db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("missing.db"), std::string::npos) << run.err;
  run = Pipette("simulate --cores 2 --db refuse.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--cores = 2: applies only with --costs-from"), std::string::npos)
      << run.err;
  run = Pipette("simulate --alone-costs --db refuse.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--alone-costs: applies only with --costs-from"), std::string::npos)
      << run.err;
  for (const char* cores : {"", "--cores 0"}) {
    run =
        Pipette(std::string("simulate --costs-from 1 --alone-costs ") + cores + " --db refuse.db");
    EXPECT_EQ(run.exit_code, 2) << cores;
    EXPECT_NE(run.err.find("--alone-costs with --cores = "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("needs --cores N >= 1"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace pipette
