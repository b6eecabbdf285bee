// Published results reproduced (the papers layer, src/pipette/papers/): every cell of the Zero
// Bubble paper's Table 5 that pipette has a schedule for, at the printed precision; Megatron's
// interleaved bubble over a grid; the DualPipe README's closed forms against the evaluated
// schedules. The published values come from the data files in experiments/papers/
// (PIPETTE_PAPERS_DIR).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipette/papers/comparison.h"
#include "pipette/papers/dualpipe.h"
#include "pipette/papers/zero_bubble.h"
#include "pipette/schedule/registry.h"
#include "pipette_runner.h"

namespace pipette::cli {
namespace {

const std::string kDir = PIPETTE_PAPERS_DIR;

std::vector<ZeroBubbleSetting> Settings() {
  Result<std::vector<ZeroBubbleSetting>> s = LoadZeroBubbleSettings(kDir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : std::vector<ZeroBubbleSetting>{};
}

TEST(ZeroBubblePaper, DataFilesHoldTwelveSettingsOfSixColumns) {
  const std::vector<ZeroBubbleSetting> settings = Settings();
  ASSERT_EQ(settings.size(), 12u);
  // Spot values typed from Table 9 and Table 5 (first and last row).
  EXPECT_EQ(settings[0].model, "1.5B");
  EXPECT_EQ(settings[0].p, 8);
  EXPECT_EQ(settings[0].m, 24);
  EXPECT_DOUBLE_EQ(settings[0].cost.f, 18.522);
  EXPECT_DOUBLE_EQ(settings[0].cost.i, 18.086);
  EXPECT_DOUBLE_EQ(settings[0].cost.w, 9.337);
  EXPECT_DOUBLE_EQ(settings[0].comm, 0.601);
  EXPECT_EQ(settings[0].published,
            (std::vector<std::string>{"0.2431", "0.1055", "0.1585", "0.1083", "0.1585", "0.0433"}));
  EXPECT_EQ(settings[11].model, "28.3B");
  EXPECT_EQ(settings[11].p, 32);
  EXPECT_EQ(settings[11].m, 256);
  EXPECT_EQ(settings[11].interleaved_v, 2);
  EXPECT_EQ(settings[11].published[3], "0.0257");
}

// Every cell of 1F1B, ZB-H1 and ZB-H2 (12 settings each) equals the printed value when rounded to
// its four decimals.
TEST(ZeroBubblePaper, OneFOneBAndHandcraftedCellsMatchTableFiveAtFourDecimals) {
  int checked = 0;
  for (const ZeroBubbleSetting& s : Settings()) {
    for (std::size_t c : {0, 2, 3}) {
      const std::string& column = ZeroBubbleColumns()[c];
      Result<double> cost = ZeroBubbleCost(s, column);
      ASSERT_TRUE(cost.ok()) << cost.status().message();
      const double rate = ZeroBubbleRate(s, *cost);
      EXPECT_EQ(fmt::format("{:.4f}", rate), s.published[c])
          << s.model << " m=" << s.m << " " << column << ": " << rate;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 36);
}

// 1F1B-I differs from Table 5 because the authors' get_interleave_schedule checks the
// wrap-around dependency (last rank -> rank 0) only for the first microbatch of each group of p.
// pipette's values below are what that script gives once the check is made for every microbatch
// (run for this test: identical to six digits); each is above the published one.
TEST(ZeroBubblePaper, InterleavedColumnIsTheAuthorsScriptWithEveryDependency) {
  const std::vector<std::string> expected = {"0.108968", "0.084676", "0.046142", "0.082679",
                                             "0.064443", "0.032797", "0.113628", "0.087824",
                                             "0.045886", "0.152796", "0.119158", "0.064138"};
  const std::vector<ZeroBubbleSetting> settings = Settings();
  ASSERT_EQ(settings.size(), expected.size());
  for (std::size_t k = 0; k < settings.size(); ++k) {
    Result<double> cost = ZeroBubbleCost(settings[k], "1F1B-I");
    ASSERT_TRUE(cost.ok()) << cost.status().message();
    const double rate = ZeroBubbleRate(settings[k], *cost);
    EXPECT_EQ(fmt::format("{:.6f}", rate), expected[k]) << settings[k].model;
    EXPECT_GT(rate, std::stod(settings[k].published[1])) << settings[k].model;
  }
}

// Closed forms behind the table: with T_comm = c, the authors' assertions in efficiency.py.
TEST(ZeroBubblePaper, CostsFollowTheAuthorsClosedForms) {
  for (const ZeroBubbleSetting& s : Settings()) {
    const double f = s.cost.f, b = s.cost.i, w = s.cost.w, c = s.comm;
    const double ideal = s.m * (f + b + w);
    // ZB-H2's per-rank span: m(F+B+W) + (p-1)(F+B+2c-2W).
    EXPECT_NEAR(*ZeroBubbleCost(s, "ZB-H2"), ideal + (s.p - 1) * (f + b + 2 * c - 2 * w), 1e-9)
        << s.model << " m=" << s.m;
  }
  // At zero latency, 1F1B and ZB-H1 take (p-1)(F+B+W) and (p-1)(F+B-W) more than the ideal.
  ZeroBubbleSetting s = Settings().front();
  s.comm = 0.0;
  const double ideal = s.m * (s.cost.f + s.cost.i + s.cost.w);
  EXPECT_NEAR(*ZeroBubbleCost(s, "1F1B"), ideal + 7 * (s.cost.f + s.cost.i + s.cost.w), 1e-9);
  EXPECT_NEAR(*ZeroBubbleCost(s, "ZB-H1"), ideal + 7 * (s.cost.f + s.cost.i - s.cost.w), 1e-9);
}

// The authors measure ZB-H2 by the largest per-rank span, not the makespan from a common start.
// The makespan adds the ramp of the first forwards: ideal + (p-1) max(T_F + c, T_F + T_B + 2c -
// 2T_W). It equals the span only where T_B + c >= 2T_W (the 1.5B rows); in the other 9 settings
// pipette's own bubble_ratio, 1 - busy / (p * makespan), misses Table 5's ZB-H2 value.
TEST(ZeroBubblePaper, HandcraftedH2NeedsThePerRankSpanNotTheMakespan) {
  int differ = 0;
  for (const ZeroBubbleSetting& s : Settings()) {
    const double f = s.cost.f, b = s.cost.i, w = s.cost.w, c = s.comm;
    EvaluateOptions latency;
    latency.p2p_latency = c;
    Result<Evaluation> e =
        EvaluateNamedSchedule("zb-h2", ScheduleParams{s.p, 1, s.m, 0}, s.cost, latency);
    ASSERT_TRUE(e.ok());
    const double ideal = s.m * (f + b + w);
    EXPECT_NEAR(e->makespan, ideal + (s.p - 1) * std::max(f + c, f + b + 2 * c - 2 * w), 1e-9)
        << s.model << " m=" << s.m;
    EXPECT_NEAR(e->bubble_ratio, ZeroBubbleRate(s, e->makespan), 1e-12);
    const bool same = fmt::format("{:.4f}", e->bubble_ratio) == s.published[3];
    EXPECT_EQ(same, s.model == "1.5B") << s.model << " m=" << s.m << ": " << e->bubble_ratio;
    differ += same ? 0 : 1;
  }
  EXPECT_EQ(differ, 9);
}

TEST(ZeroBubblePaper, AutomaticSchedulesAreNotReproduced) {
  const ZeroBubbleSetting s = Settings().front();
  EXPECT_EQ(ZeroBubbleCost(s, "ZB-1p").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ZeroBubbleCost(s, "ZB-2p").status().code(), StatusCode::kNotFound);
}

TEST(ZeroBubblePaper, TableCountsMatchesDeviationsAndTypedInCells) {
  Result<ComparisonTable> t = BuildComparison("zero-bubble", kDir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows.size(), 72u);
  EXPECT_EQ(t->compared(), 48);
  EXPECT_EQ(t->matched(), 36);
  EXPECT_EQ(t->unexplained(), 0);
  for (const ComparisonRow& row : t->rows) {
    EXPECT_EQ(!row.deviation.empty(), row.cells[3] == "1F1B-I") << row.cells[0] << row.cells[2];
  }
  // First row: 1.5B, p=8, m=24, 1F1B; paper 0.2431, pipette 0.243054 (the authors' script: the
  // same).
  EXPECT_EQ(t->rows[0].cells, (std::vector<std::string>{"1.5B", "8", "24", "1F1B", "0.2431",
                                                        "0.2431", "0.243054", "yes"}));
}

TEST(MegatronPaper, InterleavedBubbleIsPMinusOneOverVmOnTheWholeGrid) {
  Result<ComparisonTable> t = BuildComparison("megatron", kDir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->rows.size(), 48u);  // p in {2,4,8,16} x v in {1,2,4} x m in {p,2p,4p,8p}
  EXPECT_EQ(t->matched(), 48);
  for (const ComparisonRow& row : t->rows)
    EXPECT_TRUE(row.match) << fmt::format("{}", row.cells[0]);
  // p=16, v=4, m=16: 15/64 = 0.234375; makespan (m*v + p-1)(F+B) = 79 * 3.
  const ComparisonRow& r = t->rows[44];  // p = 16 (4th), v = 4 (3rd), m = p
  EXPECT_EQ(r.cells,
            (std::vector<std::string>{"16", "4", "16", "0.234375", "0.234375", "237", "yes"}));
}

TEST(DualPipeReadme, EveryRowMatchesTheClosedFormsAcrossPAndM) {
  Result<ComparisonTable> t = BuildComparison("dualpipe", kDir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->rows.size(), 4u * 4 * 4 * 2);  // methods x cost sets x p x m
  EXPECT_EQ(t->compared(), 128);
  EXPECT_EQ(t->unexplained(), 0);
  // Only DualPipe (p = 4, 6, 8) and DualPipeV (p = 2..8) at F = 1, I = 2, W = 1 differ: 14 rows,
  // each by exactly one time unit below the form.
  EXPECT_EQ(t->matched(), 128 - 14);
  for (const ComparisonRow& row : t->rows) {
    const bool estimate =
        row.cells[5] == "F=1 B=3 W=1 F&B=4" &&
        (row.cells[0] == "DualPipeV" || (row.cells[0] == "DualPipe" && row.cells[2] != "2"));
    EXPECT_EQ(row.match, !estimate)
        << fmt::format("{} p={} m={} {}", row.cells[0], row.cells[2], row.cells[4], row.cells[5]);
    if (estimate) {
      EXPECT_EQ(std::stod(row.cells[6]) - std::stod(row.cells[7]), 1.0);
    }
  }
}

TEST(DualPipeReadme, MeasuresAtPEightUnitCosts) {
  const StageCost unit{1, 1, 1};  // F = 1, B = 2, W = 1, F&B = 3
  Result<DualPipeMeasure> dp = MeasureDualPipeRow("dualpipe", 8, 16, unit);
  ASSERT_TRUE(dp.ok());
  EXPECT_DOUBLE_EQ(dp->bubble, 6);  // (8/2-1)(3+2-3)
  EXPECT_EQ(dp->parameters, 2);
  EXPECT_EQ(dp->activations, 9);  // PP+1
  EXPECT_EQ(dp->pp, 8);
  Result<DualPipeMeasure> dpv = MeasureDualPipeRow("dualpipe-v", 8, 16, unit);
  ASSERT_TRUE(dpv.ok());
  EXPECT_EQ(dpv->pp, 16);             // 2p stages on p devices: #Devices = PP/2
  EXPECT_DOUBLE_EQ(dpv->bubble, 14);  // (16/2-1)(3+2-3)
  EXPECT_EQ(dpv->parameters, 2);
  EXPECT_EQ(dpv->activations, 17);
  Result<DualPipeMeasure> zb = MeasureDualPipeRow("zb-h1", 8, 16, unit);
  ASSERT_TRUE(zb.ok());
  EXPECT_DOUBLE_EQ(zb->bubble, 7);  // (8-1)(1+2-2)
  EXPECT_EQ(zb->parameters, 1);
  EXPECT_EQ(zb->activations, 8);
}

// Where the README's DualPipe form is only an estimate: with F != I pipette's bubble differs
// (documented in docs/papers.md), e.g. F=1, I=2, W=1 (B = 3) at p = 8: 11 against the form's 12.
TEST(DualPipeReadme, FormIsAnEstimateWhenForwardAndInputBackwardDiffer) {
  const StageCost second{1, 2, 1};
  Result<DualPipeMeasure> dp = MeasureDualPipeRow("dualpipe", 8, 16, second);
  ASSERT_TRUE(dp.ok());
  EXPECT_DOUBLE_EQ(dp->bubble, 11);
  EXPECT_DOUBLE_EQ(DualPipeReadmeBubble("DualPipe", 8, second), 12);
}

class PaperDataDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           fmt::format("paper_tables_test_{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
      std::filesystem::copy(entry.path(), dir_ / entry.path().filename());
    }
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(PaperDataDir, RefusesAChangedFormulaNamingTheFileAndLine) {
  Write("dualpipe_comparison.csv",
        "method,bubble,parameter_per_device,activation_per_device,devices\n"
        "1F1B,(PP-1)(F+B),1x,PP,PP\nZB1P,(PP-1)(F+B-W),1x,PP,PP\n"
        "DualPipe,(PP/2-1)(F&B+B-3W),2x,PP+1,PP\nDualPipeV,(PP/2-1)(F&B+B-3W),2x,PP+1,PP/2\n");
  Result<ComparisonTable> t = BuildComparison("dualpipe", dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("dualpipe_comparison.csv' line 3"), std::string::npos)
      << t.status().message();
}

TEST_F(PaperDataDir, RefusesABadNumberAndMismatchedSettings) {
  Write("zero_bubble_bubble_rates.csv",
        "model,p,m,1F1B,1F1B-I,ZB-H1,ZB-H2,ZB-1p,ZB-2p\n1.5B,8,24,0.2431,x,0,0,0,0\n");
  Result<std::vector<ZeroBubbleSetting>> s = LoadZeroBubbleSettings(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("1 settings: must be the 12"), std::string::npos)
      << s.status().message();
  Write("zero_bubble_profiled_times.csv",
        "model,p,m,T_F,T_B,T_W,T_comm,interleaved_v\n1.5B,8,24,18.522,18.086,9.337,0.601,3\n");
  s = LoadZeroBubbleSettings(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("line 2: 1F1B-I = 'x': must be a non-negative number"),
            std::string::npos)
      << s.status().message();
}

TEST_F(PaperDataDir, MissingFileAndUnknownTableAreNotFound) {
  std::filesystem::remove(dir_ / "megatron_interleaved.csv");
  EXPECT_EQ(BuildComparison("megatron", dir_.string()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(BuildComparison("gpipe", dir_.string()).status().code(), StatusCode::kNotFound);
}

// The command end to end: the table on stdout, --check, and bad input with exit code 2.
TEST_F(PaperDataDir, CommandPrintsTheTableAndCheckRefusesAnUndocumentedMismatch) {
  using testing::Pipette;
  testing::CommandResult ok =
      Pipette("papers megatron --format csv --check --data " + dir_.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\np,v,m,formula,pipette,makespan,match\n2,1,2,0.500000,0.500000,9,yes\n"),
            std::string::npos)
      << ok.out;
  // A published ZB-H1 value typed wrong (0.1585 -> 0.1586) is a mismatch --check refuses...
  std::string rates = testing::ReadFile((dir_ / "zero_bubble_bubble_rates.csv").string());
  const std::size_t at = rates.find("0.2431,0.1055,0.1585");
  ASSERT_NE(at, std::string::npos);
  rates.replace(at, 20, "0.2431,0.1055,0.1586");
  Write("zero_bubble_bubble_rates.csv", rates);
  testing::CommandResult bad = Pipette("papers zero-bubble --check --data " + dir_.string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("| 1.5B | 8 | 24 | ZB-H1 | 0.1586 | 0.1585 | 0.158520 | NO |"),
            std::string::npos);
  EXPECT_NE(bad.err.find("zero-bubble: 1 of 48 compared cells differ from the published values "
                         "without a documented reason"),
            std::string::npos)
      << bad.err;
  // ...and without --check the table is still printed, exit 0.
  EXPECT_EQ(Pipette("papers zero-bubble --data " + dir_.string()).exit_code, 0);
  testing::CommandResult unknown = Pipette("papers gpipe");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("gpipe not in {zero-bubble,megatron,dualpipe}"), std::string::npos)
      << unknown.err;
  testing::CommandResult missing = Pipette("papers dualpipe --data " + dir_.string() + "/none");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("dualpipe_comparison.csv': no such file"), std::string::npos)
      << missing.err;
}

TEST(PaperTables, CsvQuotesCellsWithCommasAndMarkdownEscapesBars) {
  ComparisonTable t;
  t.name = "x";
  t.notes = {"a note"};
  t.header = {"a", "b"};
  t.rows.push_back(ComparisonRow{{"1,2", "x|y"}, true, true, ""});
  const std::string summary =
      "1 of 1 compared cells match, 0 differ for the documented reason, 0 differ without one (0 "
      "typed in without a pipette counterpart)";
  EXPECT_EQ(FormatCsv(t), "# a note\n# " + summary + "\na,b\n\"1,2\",x|y\n");
  EXPECT_EQ(FormatMarkdown(t),
            "- a note\n\n| a | b |\n|---|---|\n| 1,2 | x\\|y |\n\n" + summary + ".\n");
}

}  // namespace
}  // namespace pipette::cli
