// The fitted cost model end to end on synthetic runs the simulator makes itself (fidelity/
// cost_fit.h, study/prediction.h PlanFitPrediction): known parameters price a set of CPU-engine
// configurations, each is simulated and recorded as if the engine had measured it, and the fit of
// those runs must give the parameters back (within 1%); a fit from one run says what it cannot
// determine; a configuration outside the fitted family is refused with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/engine/train_plan.h"
#include "pipette/fidelity/cost_fit.h"
#include "pipette/report/fit_report.h"
#include "pipette/store/training_run.h"
#include "pipette/study/prediction.h"

namespace pipette {
namespace {

// A GPT-style model file (learned positions up to 64, biases, GELU MLPs of 4x the width, one head
// per 16 columns) in the temporary directory, one per test and shape.
std::string GptFile(int width, int depth, int vocab = 50) {
  // Named after the test too: ctest runs the tests of this file at once, in separate processes.
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) /
      ("fit-" + test + "-w" + std::to_string(width) + "-l" + std::to_string(depth) + "-v" +
       std::to_string(vocab) + ".toml");
  std::ofstream out(path);
  out << "name = \"fit-gpt\"\n[[layer]]\nname = \"embedding\"\ntype = \"embedding\"\nvocab = "
      << vocab << "\nhidden = " << width << "\npositions = 64\n";
  for (int b = 0; b < depth; ++b) {
    out << "[[layer]]\nname = \"block" << b << ".attn\"\ntype = \"attention\"\nhidden = " << width
        << "\nheads = " << width / 16 << "\nbias = true\n";
    out << "[[layer]]\nname = \"block" << b << ".mlp\"\ntype = \"mlp\"\nhidden = " << width
        << "\nffn_hidden = " << 4 * width << "\nbias = true\n";
  }
  out << "[[layer]]\nname = \"final_norm\"\ntype = \"norm\"\nhidden = " << width
      << "\nbias = true\n[[layer]]\nname = \"head\"\ntype = \"head\"\nhidden = " << width
      << "\nvocab = " << vocab << "\n[[layer]]\nname = \"loss\"\ntype = \"loss\"\nvocab = " << vocab
      << "\n";
  return path.string();
}

// The parameters the synthetic engine runs with (plausible for one CPU core).
CostFit Truth() {
  CostFit truth;
  truth.id = 1;
  truth.family = {"cpu", "fp32", "gpt"};
  truth.values = {1.1e-11, 1.0e-10, 3.0e-10, 2.0e-10, 2.0e-7, 3.0e-10, 2.5e-9,
                  9.0e-10, 2.0e-9,  5.0e-7,  3.0e-6,  7.0e-9, 0};
  truth.status.assign(kCostParameters, FitStatus::kFitted);
  truth.status[kGemmTable] = FitStatus::kUnused;  // no GEMM table
  truth.independence.assign(kCostParameters, 1);
  truth.with.assign(kCostParameters, {});
  return truth;
}

TrainOptions Options(const std::string& model, const std::string& schedule, int m, int mbs,
                     int seq) {
  TrainOptions o;
  o.model = model;
  o.schedule = schedule;
  o.p = 2;
  o.m = m;
  o.micro_batch_size = mbs;
  o.seq_len = seq;
  o.steps = 3;
  o.trace_steps = 3;
  return o;
}

// The runs the CPU engine would record if it computed exactly as `truth` says: each configuration
// simulated (all in one Simulate(): SimGrid runs once per process, and ctest runs each test
// alone) and recorded as engine "cpu" with the training run's configuration.
std::vector<RunData> SyntheticRuns(const CostFit& truth, const std::vector<TrainOptions>& configs) {
  std::vector<CostsFromPlan> plans;
  for (const TrainOptions& o : configs) {
    Result<CostsFromPlan> plan = PlanFitPrediction(truth, o, PredictionSettings{}, o.steps, 0);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    plans.push_back(std::move(*plan));
  }
  std::vector<SimulationCase> cases;
  for (const CostsFromPlan& plan : plans) cases.push_back(CaseOf(plan));
  Result<std::vector<SimulationResult>> results = Simulate(cases);
  EXPECT_TRUE(results.ok()) << results.status().message();
  std::vector<RunData> runs;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    RunData data = RunDataOf(CostsFromReport{plans[i], std::move((*results)[i]), {}});
    data.run.id = static_cast<std::int64_t>(i) + 1;
    data.run.engine = "cpu";
    data.run.status = "ok";
    const Result<TrainPlan> train = PlanTraining(configs[i]);
    EXPECT_TRUE(train.ok());
    data.run.config = nlohmann::ordered_json(TrainingConfigOf("cpu", configs[i], *train)).dump();
    runs.push_back(std::move(data));
  }
  return runs;
}

// The fitted costs of `o` under `fit`.
FittedWork Priced(const CostFit& fit, const TrainOptions& o) {
  const Result<TrainPlan> plan = PlanTraining(o);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Result<FittedWork> work = PriceWithFit(fit, *plan, FamilyOf(*plan, "cpu", o.dtype));
  EXPECT_TRUE(work.ok()) << work.status().message();
  return *work;
}

// Eight configurations whose runs tell every parameter apart: widths, depths, vocabularies,
// micro-batch sizes, lengths and schedules (F, I, W and B rows).
std::vector<TrainOptions> SyntheticConfigs() {
  return {Options(GptFile(32, 2), "1f1b", 4, 1, 16),
          Options(GptFile(64, 2), "zb-h1", 4, 2, 16),
          Options(GptFile(96, 4), "1f1b", 4, 4, 8),
          Options(GptFile(64, 4), "zb-h1", 6, 1, 32),
          Options(GptFile(32, 4), "1f1b", 4, 3, 64),
          Options(GptFile(128, 2), "zb-h1", 4, 2, 24),
          Options(GptFile(48, 6), "interleaved-1f1b", 4, 2, 40),
          Options(GptFile(64, 2, 300), "1f1b", 4, 1, 12)};
}

TEST(FitPrediction, TheFitOfSyntheticRunsRecoversTheirParameters) {
  const CostFit truth = Truth();
  const std::vector<TrainOptions> configs = SyntheticConfigs();
  const Result<CostFit> fit = FitCosts(SyntheticRuns(truth, configs));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  for (int k = 0; k < kCostParameters; ++k) {
    EXPECT_EQ(fit->status[k], truth.status[k]) << CostParameterName(k);
    EXPECT_NEAR(fit->values[k], truth.values[k], 0.01 * truth.values[k]) << CostParameterName(k);
  }
  for (const FitResidual& r : fit->residuals) {
    EXPECT_NEAR(r.fitted, r.measured, 1e-6 * r.measured) << r.run << " " << r.kind << r.index;
  }
  // The synthetic machine is steady: every run's steps 1 and 2, each rank at its costs' speed.
  ASSERT_EQ(fit->step_slowdown.size(), 2 * configs.size());
  for (const std::vector<double>& step : fit->step_slowdown) {
    ASSERT_EQ(step.size(), 2u);
    for (const double f : step) EXPECT_NEAR(f, 1, 1e-9);
  }
  // And the fit prices an unseen configuration as the truth does, stage by stage.
  const TrainOptions unseen = Options(GptFile(80, 3), "interleaved-1f1b", 8, 3, 20);
  const FittedWork want = Priced(truth, unseen), got = Priced(*fit, unseen);
  ASSERT_EQ(got.stages.size(), want.stages.size());
  for (std::size_t s = 0; s < want.stages.size(); ++s) {
    EXPECT_NEAR(*got.stages[s].f, *want.stages[s].f, 0.01 * *want.stages[s].f) << s;
    EXPECT_NEAR(*got.stages[s].i, *want.stages[s].i, 0.01 * *want.stages[s].i) << s;
    EXPECT_NEAR(*got.stages[s].w, *want.stages[s].w, 0.01 * *want.stages[s].w) << s;
  }
}

// A calibration whose GEMM table runs small-m GEMMs slower (sizes 16-512; seconds per FLOP
// 1e-11 x (1 + 32/m) x (1 + 16/k), the input gradient's 1.1x and the weight gradient's 1.3x
// that), on the synthetic runs' host.
Calibration TableCalibration(const std::string& host) {
  Calibration c;
  c.id = 4;
  c.host = host;
  const double slower[] = {1.0, 1.1, 1.3};
  for (const GemmPass pass : kAllGemmPasses) {
    for (const std::int64_t m : GemmTableSizes(512)) {
      for (const std::int64_t n : GemmTableSizes(512)) {
        for (const std::int64_t k : GemmTableSizes(512)) {
          const double per_flop = slower[static_cast<int>(pass)] * 1e-11 *
                                  (1 + 32.0 / static_cast<double>(m)) *
                                  (1 + 16.0 / static_cast<double>(k));
          c.gemms.push_back({m, n, k, 2, per_flop * 2.0 * static_cast<double>(m * n * k), pass});
        }
      }
    }
  }
  return c;
}

TEST(FitPrediction, AFitWithAGemmTableRecoversItsScaleAndPricesByShape) {
  // The truth prices GEMMs as 1.07 x the table (plus gemm_calls); FLOPs and operands unused.
  CostFit truth = Truth();
  const Calibration calibration = TableCalibration("");
  truth.gemm_table = *GemmTable::Of(calibration.gemms);
  truth.calibration = calibration.id;
  truth.values[kGemmTable] = 1.07;
  truth.status[kGemmTable] = FitStatus::kFitted;
  for (const int k : kTableReplaces) {
    truth.values[k] = 0;
    truth.status[k] = FitStatus::kUnused;
  }
  const std::vector<TrainOptions> configs = SyntheticConfigs();
  const std::vector<RunData> runs = SyntheticRuns(truth, configs);
  const Calibration mine = TableCalibration(runs.front().run.host);
  const Result<CostFit> fit = FitCosts(runs, &mine);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->calibration, 4);
  for (int k = 0; k < kCostParameters; ++k) {
    EXPECT_EQ(fit->status[k], truth.status[k]) << CostParameterName(k);
    EXPECT_NEAR(fit->values[k], truth.values[k], 0.01 * truth.values[k]) << CostParameterName(k);
  }
  // Stored and read back, the table prices an unseen configuration as the truth does.
  Result<CostFit> back = FitOf(StoredFitOf(*fit));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gemm_table.timings(), fit->gemm_table.timings());
  const TrainOptions unseen = Options(GptFile(80, 3), "interleaved-1f1b", 8, 3, 20);
  const FittedWork want = Priced(truth, unseen), got = Priced(*back, unseen);
  ASSERT_EQ(got.stages.size(), want.stages.size());
  for (std::size_t s = 0; s < want.stages.size(); ++s) {
    EXPECT_NEAR(*got.stages[s].f, *want.stages[s].f, 0.01 * *want.stages[s].f) << s;
    EXPECT_NEAR(*got.stages[s].w, *want.stages[s].w, 0.01 * *want.stages[s].w) << s;
  }
  // A calibration without a table, or of another host, is refused naming --calibration.
  Calibration none = mine;
  none.gemms.clear();
  const Result<CostFit> without = FitCosts(runs, &none);
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.status().message().find("--calibration = 4: it has no GEMM table"),
            std::string::npos)
      << without.status().message();
  Calibration elsewhere = mine;
  elsewhere.host = mine.host + "-other";
  const Result<CostFit> other = FitCosts(runs, &elsewhere);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("a GEMM table describes one machine"), std::string::npos)
      << other.status().message();
}

TEST(FitPrediction, APredictionTakesTheFittedRunsStepSlowdownsInTurn) {
  // A fit whose machine ran rank 1 at 1.25x in its second step: stored and read back, and a
  // prediction at p = 4 takes the rows in turn, rank r the fitted rank r mod 2.
  CostFit fit = Truth();
  fit.step_slowdown = {{1, 1}, {1, 1.25}};
  Result<CostFit> back = FitOf(StoredFitOf(fit));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->step_slowdown, fit.step_slowdown);
  EXPECT_EQ(StepSlowdownsFor(*back, 4),
            (std::vector<std::vector<double>>{{1, 1, 1, 1}, {1, 1.25, 1, 1.25}}));
  TrainOptions o = Options(GptFile(64, 2), "1f1b", 4, 2, 16);
  o.p = 4;
  o.steps = o.trace_steps = 4;
  const Result<CostsFromPlan> plan = PlanFitPrediction(*back, o, PredictionSettings{}, 4, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(CaseOf(*plan).step_slowdown, StepSlowdownsFor(*back, 4));
  EXPECT_EQ(ConfigOf(*plan).prediction.step_slowdowns, 2);
  // A fit stored without them (before they were recorded) is a steady machine.
  StoredFit old = StoredFitOf(Truth());
  ASSERT_EQ(old.document.find("step_slowdown"), std::string::npos);
  EXPECT_TRUE(FitOf(old)->step_slowdown.empty());
  // A slowdown out of range is not a fit this pipette reads.
  fit.step_slowdown = {{1, -1}};
  EXPECT_FALSE(FitOf(StoredFitOf(fit)).ok());
}

// The machine's drift while the fitted run was measured: the largest step slowdown off their
// median. The committed study's fit (0.95-1.06) passes; the rerun the machine spoiled (0.74-1.38,
// experiments/predict-unseen/rerun-2026-11-30) is flagged, with the size and what to do.
TEST(FitPrediction, AFitWhoseMachineDriftedIsFlagged) {
  CostFit fit = Truth();
  EXPECT_EQ(StepDrift(fit), 0);                     // none recorded: a steady machine
  fit.step_slowdown = {{0.95, 1.06}, {1.0, 1.02}};  // median 1.01
  EXPECT_NEAR(StepDrift(fit), 0.06 / 1.01, 1e-12);
  EXPECT_LT(StepDrift(fit), kSteadyDrift);
  fit.step_slowdown = {{0.742, 1.0}, {1.02, 1.38}};
  EXPECT_NEAR(StepDrift(fit), 0.37 / 1.01, 1e-12);
  EXPECT_GT(StepDrift(fit), kSteadyDrift);
  const std::string warning = DriftWarning(fit);
  EXPECT_NE(warning.find("up to 36.6% off their median speed (beyond 10%)"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("measure the run again on a quiet machine"), std::string::npos);
}

TEST(FitPrediction, AFitFromOneRunSaysWhatItCannotDetermine) {
  RunData run = SyntheticRuns(Truth(), {Options(GptFile(64, 2), "1f1b", 4, 2, 16)}).front();
  std::erase_if(run.events, [](const EventRow& e) { return e.kind == EventKind::kOptimizer; });
  const Result<CostFit> fit = FitCosts({run});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // No row depends on the update: unconstrained. Two stages' F and B cannot tell twelve
  // parameters apart: most are confounded, each with the fitted ones it moves with.
  EXPECT_EQ(fit->status[kOptimizerParams], FitStatus::kUnconstrained);
  int confounded = 0;
  for (int k = 0; k < kCostParameters; ++k) {
    if (fit->status[k] != FitStatus::kConfounded) continue;
    ++confounded;
    EXPECT_FALSE(fit->with[k].empty()) << CostParameterName(k);
    EXPECT_EQ(fit->values[k], 0) << CostParameterName(k);
  }
  EXPECT_GE(confounded, 6);
  // The rows it has are reproduced closely (the confounded parameters' share carried by the
  // others, non-negative).
  for (const FitResidual& r : fit->residuals) EXPECT_NEAR(r.fitted, r.measured, 0.05 * r.measured);
  // A prediction that needs the update is refused, naming the parameter.
  CostFit stored = *fit;
  stored.id = 3;
  const Result<CostsFromPlan> plan = PlanFitPrediction(
      stored, Options(GptFile(64, 2), "1f1b", 8, 2, 16), PredictionSettings{}, 2, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("optimizer_params"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("unconstrained"), std::string::npos);
}

TEST(FitPrediction, AConfigurationOutsideTheFittedFamilyIsRefusedWithTheReason) {
  const CostFit truth = Truth();
  TrainOptions llama = Options("tiny-llama", "1f1b", 4, 2, 16);
  Result<CostsFromPlan> plan = PlanFitPrediction(truth, llama, PredictionSettings{}, 2, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("outside the fitted family"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("llama-style"), std::string::npos);
  // Another dtype is another family too.
  TrainOptions bf16 = Options(GptFile(64, 2), "1f1b", 4, 2, 16);
  bf16.dtype = "bf16";
  plan = PlanFitPrediction(truth, bf16, PredictionSettings{}, 2, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("dtype bf16"), std::string::npos)
      << plan.status().message();
  // Data parallelism needs a calibration's all-reduce.
  TrainOptions dp = Options(GptFile(64, 2), "1f1b", 4, 2, 16);
  dp.dp = 2;
  plan = PlanFitPrediction(truth, dp, PredictionSettings{}, 2, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--calibration"), std::string::npos);
  // Runs of two families are not one fit.
  RunData gpt = SyntheticRuns(truth, {Options(GptFile(64, 2), "1f1b", 4, 2, 16)}).front();
  RunData other = gpt;
  other.run.id = 2;
  nlohmann::json config = nlohmann::json::parse(other.run.config);
  config["dtype"] = "bf16";
  other.run.config = config.dump();
  const Result<CostFit> fit = FitCosts({gpt, other});
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("one fit models one engine"), std::string::npos)
      << fit.status().message();
}

}  // namespace
}  // namespace pipette
