// Uneven work: the parsers (values and every error), ApplyUnevenWork's cost sets, and Evaluate's
// makespans with stragglers, variable-length microbatches and slow links against closed forms.
#include "pipette/schedule/uneven_work.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "test_util.h"

namespace pipette {
namespace {

using testing::MustMake;

// Expects `result` to fail with a message containing every one of `parts`.
template <typename T>
void ExpectError(const Result<T>& result, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << result.status().message();
  for (const std::string& part : parts) {
    EXPECT_NE(result.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << result.status().message();
  }
}

TEST(ParseRankSpeeds, ListedRanksGetTheirSpeedOthersOne) {
  EXPECT_EQ(*ParseRankSpeeds("3=0.8,1=0.5", 4), (std::vector<double>{1, 0.5, 1, 0.8}));
  EXPECT_EQ(*ParseRankSpeeds(" 0=2 , 1=0.25", 2), (std::vector<double>{2, 0.25}));
  EXPECT_EQ(*ParseRankSpeeds("0=100", 1), (std::vector<double>{100}));
  EXPECT_TRUE(ParseRankSpeeds("", 4)->empty());
}

TEST(ParseRankSpeeds, RefusesBadItemsNamingKeyValueAndRule) {
  ExpectError(ParseRankSpeeds("3", 4), {"--rank-speed", "'3'", "RANK=SPEED"});
  ExpectError(ParseRankSpeeds("4=0.5", 4), {"--rank-speed", "'4=0.5'", "[0, 4)"});
  ExpectError(ParseRankSpeeds("-1=0.5", 4), {"rank '-1'", "[0, 4)"});
  ExpectError(ParseRankSpeeds("x=0.5", 4), {"rank 'x'"});
  ExpectError(ParseRankSpeeds("1=0", 4), {"speed '0'", "(0, 100]"});
  ExpectError(ParseRankSpeeds("1=101", 4), {"speed '101'", "(0, 100]"});
  ExpectError(ParseRankSpeeds("1=nan", 4), {"speed 'nan'"});
  ExpectError(ParseRankSpeeds("1=inf", 4), {"speed 'inf'"});
  ExpectError(ParseRankSpeeds("1=0.5x", 4), {"speed '0.5x'"});
  ExpectError(ParseRankSpeeds("1=0.5,1=0.6", 4), {"'1=0.6'", "rank 1 is given twice"});
  ExpectError(ParseRankSpeeds("1=0.5,", 4), {"''", "RANK=SPEED"});
  ExpectError(ParseRankSpeeds("5=1", 1, "rank-speed"), {"rank-speed '5=1'"});
}

TEST(ParseMicrobatchSeqlens, ListAndFile) {
  EXPECT_EQ(*ParseMicrobatchSeqlens("512,1024, 2048", 3), (std::vector<int>{512, 1024, 2048}));
  EXPECT_TRUE(ParseMicrobatchSeqlens("", 3)->empty());
  const std::string path = ::testing::TempDir() + "/seqlens.txt";
  {
    std::ofstream out(path);
    out << "# lengths of the four microbatches\n512 1024\n2048,\n  # a comment line\n4096 # last\n";
  }
  EXPECT_EQ(*ParseMicrobatchSeqlens(path, 4), (std::vector<int>{512, 1024, 2048, 4096}));
  ExpectError(ParseMicrobatchSeqlens(path, 3),
              {"--microbatch-seqlens", "file '" + path + "'", "4 sequence lengths for 3"});
  std::remove(path.c_str());
}

TEST(ParseMicrobatchSeqlens, RefusesBadLists) {
  ExpectError(ParseMicrobatchSeqlens("512,1024", 3),
              {"--microbatch-seqlens list", "2 sequence lengths for 3 microbatches"});
  ExpectError(ParseMicrobatchSeqlens("512,0,1", 3), {"item 1 '0'", "[1, 16777216]"});
  ExpectError(ParseMicrobatchSeqlens("512,99999999,1", 3), {"item 1 '99999999'"});
  // Not a list (a sign, a dot, letters): read as a path, which does not exist.
  Result<std::vector<int>> missing = ParseMicrobatchSeqlens("512,-1", 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("--microbatch-seqlens file '512,-1'"),
            std::string::npos)
      << missing.status().message();
  const std::string path = ::testing::TempDir() + "/bad_seqlens.txt";
  {
    std::ofstream out(path);
    out << "512\n1.5\n";
  }
  ExpectError(ParseMicrobatchSeqlens(path, 2), {"item 1 '1.5'"});
  std::remove(path.c_str());
}

TEST(ParseLinkSlowdowns, PairsAndErrors) {
  EXPECT_EQ(*ParseLinkSlowdowns("0-1=2,3-2=1.5", 4),
            (std::vector<LinkSlowdown>{{0, 1, 2.0}, {3, 2, 1.5}}));
  EXPECT_TRUE(ParseLinkSlowdowns("", 4)->empty());
  ExpectError(ParseLinkSlowdowns("0-1", 4), {"--link-slowdown '0-1'", "A-B=FACTOR"});
  ExpectError(ParseLinkSlowdowns("0=2", 4), {"'0=2'", "A-B=FACTOR"});
  ExpectError(ParseLinkSlowdowns("0-4=2", 4), {"rank '4'", "[0, 4)"});
  ExpectError(ParseLinkSlowdowns("1-1=2", 4), {"'1-1=2'", "two different ranks"});
  ExpectError(ParseLinkSlowdowns("0-1=0.5", 4), {"factor '0.5'", "[1, 1000]"});
  ExpectError(ParseLinkSlowdowns("0-1=1001", 4), {"factor '1001'"});
  ExpectError(ParseLinkSlowdowns("0-1=2,1-0=3", 4), {"'1-0=3'", "given twice"});
}

TEST(UnevenWork, FormatsRoundTrip) {
  EXPECT_EQ(FormatRankSpeeds(*ParseRankSpeeds("3=0.8,1=0.5", 4)), "1=0.5,3=0.8");
  EXPECT_EQ(FormatMicrobatchSeqlens({512, 1024}), "512,1024");
  EXPECT_EQ(FormatLinkSlowdowns(*ParseLinkSlowdowns("0-1=2,3-2=1.5", 4)), "0-1=2,3-2=1.5");
  EXPECT_EQ(FormatRankSpeeds({}), "");
}

TEST(UnevenWork, CheckNamesTheOption) {
  UnevenWork work;
  work.microbatch_seqlens = {512, 1024};
  Status s = CheckUnevenWork(work, 2, 2);
  EXPECT_NE(s.message().find("--seq-len 0"), std::string::npos) << s.message();
  work.reference_seqlen = 1024;
  EXPECT_TRUE(CheckUnevenWork(work, 2, 2).ok());
  EXPECT_NE(CheckUnevenWork(work, 2, 3).message().find("2 sequence lengths for 3"),
            std::string::npos);
  work.attention_share = 1.5;
  EXPECT_NE(CheckUnevenWork(work, 2, 2).message().find("--attention-share 1.5"), std::string::npos);
  work.attention_share = 0;
  work.rank_speed = {1.0};
  EXPECT_NE(CheckUnevenWork(work, 2, 2).message().find("1 speeds for 2 ranks"), std::string::npos);
}

TEST(UnevenWork, SeqlenCostFactorIsLinearPlusQuadraticShare) {
  EXPECT_DOUBLE_EQ(SeqlenCostFactor(2048, 1024, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(SeqlenCostFactor(2048, 1024, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(SeqlenCostFactor(2048, 1024, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(SeqlenCostFactor(512, 1024, 0.25), 0.75 * 0.5 + 0.25 * 0.25);
  EXPECT_DOUBLE_EQ(SeqlenCostFactor(1024, 1024, 0.7), 1.0);
}

TEST(ApplyUnevenWork, SpeedsFoldThroughThePlacementAndLengthsGetOneSetEach) {
  // V placement, p = 2: rank 0 holds stages 0 and 3, rank 1 holds 1 and 2.
  Costs nominal;
  nominal.stages = {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {4, 4, 4}};
  nominal.full_backward = {5, 5, 5, 7};
  UnevenWork work;
  work.rank_speed = {0.5, 1.0};
  work.reference_seqlen = 100;
  work.microbatch_seqlens = {100, 200, 100, 50};
  work.attention_share = 0.5;
  Result<Costs> costs = ApplyUnevenWork(nominal, Placement::VShape(2), 4, work);
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_DOUBLE_EQ(costs->stages[0].f, 2);
  EXPECT_DOUBLE_EQ(costs->stages[1].f, 1);
  EXPECT_DOUBLE_EQ(costs->stages[3].w, 8);
  EXPECT_DOUBLE_EQ(costs->full_backward[3], 14);
  ASSERT_EQ(costs->variants.size(), 3u);  // 100, 200, 50
  EXPECT_EQ(costs->microbatch_variant, (std::vector<int>{0, 1, 0, 2}));
  // 200: factor 0.5 * 2 + 0.5 * 4 = 3; 50: 0.5 * 0.5 + 0.5 * 0.25 = 0.375.
  EXPECT_DOUBLE_EQ(costs->Of(Action::F(0, 1)), 1 * 3 / 0.5);
  EXPECT_DOUBLE_EQ(costs->Of(Action::I(2, 1)), 2 * 3);
  EXPECT_DOUBLE_EQ(costs->Of(Action::B(3, 1)), 7 * 3 / 0.5);
  EXPECT_DOUBLE_EQ(costs->Of(Action::W(3, 3)), 4 * 0.375 / 0.5);
  EXPECT_DOUBLE_EQ(costs->Of(Action::F(1, 2)), 1);
  EXPECT_TRUE(costs->Check(4, 4).ok());
  EXPECT_FALSE(costs->Check(4, 5).ok());
  // A placement of another size.
  EXPECT_FALSE(ApplyUnevenWork(nominal, Placement::Loop(2, 1), 4, work).ok());
}

TEST(ApplyUnevenWork, ModelModePricesEachDistinctLengthOnce) {
  std::vector<int> asked;
  CostsAtSeqlen costs_at = [&](int seqlen) -> Result<Costs> {
    asked.push_back(seqlen);
    return Costs::Uniform(2, StageCost{seqlen / 100.0, 0, 0});
  };
  UnevenWork work;
  work.reference_seqlen = 300;
  work.microbatch_seqlens = {100, 200, 100, 300};
  work.rank_speed = {1.0, 0.25};
  Result<Costs> costs = ApplyUnevenWork(costs_at, Placement::Loop(2, 1), 4, work);
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(asked, (std::vector<int>{300, 100, 200}));
  EXPECT_DOUBLE_EQ(costs->stages[1].f, 12);
  EXPECT_DOUBLE_EQ(costs->Of(Action::F(0, 2)), 1);
  EXPECT_DOUBLE_EQ(costs->Of(Action::F(1, 1)), 8);
  EXPECT_DOUBLE_EQ(costs->Of(Action::F(1, 3)), 12);
}

// --- Evaluate with uneven work: closed forms ---

Evaluation EvaluateUneven(const Schedule& s, StageCost cost, const UnevenWork& work,
                          double latency = 0.0) {
  Result<Program> program = Lower(s);
  EXPECT_TRUE(program.ok()) << program.status().message();
  Result<Costs> costs =
      ApplyUnevenWork(Costs::Uniform(s.num_stages(), cost), s.placement, s.m, work);
  EXPECT_TRUE(costs.ok()) << costs.status().message();
  if (!program.ok() || !costs.ok()) return {};
  EvaluateOptions options;
  options.p2p_latency = latency;
  options.link_slowdowns = work.link_slowdowns;
  Result<Evaluation> e = Evaluate(*program, *costs, options);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : Evaluation{};
}

TEST(EvaluateUneven, OneF1BWithOneSlowRank) {
  // 1F1B, no latency, every stage (f, b = i + w) except rank k's at speed s: (f', b') = (f, b) / s.
  // When the slow rank is the bottleneck throughout (b' >= f + b: a gradient returns before the
  // slow rank needs it, except the first), rank k idles only before its first backward. It runs
  // its n = min(p - k, m) leading forwards back to back from k f; a fast rank r > k starts its
  // first backward after its own min(p - r, m) leading forwards, the last of which left rank k at
  // k f + min(p - r, m) f', and that backward reaches rank k (r - k)(f + b) later, so rank k's
  // first backward starts at
  //   T = max(k f + n f', max over r > k of k f + min(p - r, m) f' + (r - k)(f + b)).
  // It then works m (f' + b') - n f' without a gap, and its last gradient crosses the k fast
  // ranks above it: makespan = T + m (f' + b') - n f' + k b.
  // For the last rank (k = p - 1) this is sum_k t_k + (m - 1) max_k t_k with t = f + b.
  const double f = 1, i = 1, w = 1, b = i + w;
  for (int p : {2, 3, 4, 6}) {
    for (int m : {1, 2, 3, 5, 8, 12}) {
      for (int k = 0; k < p; ++k) {
        for (double s : {0.5, 0.25}) {
          UnevenWork work;
          work.rank_speed.assign(p, 1.0);
          work.rank_speed[k] = s;
          const double f1 = f / s, b1 = b / s;
          const int n = std::min(p - k, m);
          double t = k * f + n * f1;
          for (int r = k + 1; r < p; ++r) {
            t = std::max(t, k * f + std::min(p - r, m) * f1 + (r - k) * (f + b));
          }
          const double expected = t + m * (f1 + b1) - n * f1 + k * b;
          Evaluation e = EvaluateUneven(MustMake("1f1b", p, m), {f, i, w}, work);
          EXPECT_DOUBLE_EQ(e.makespan, expected)
              << "p=" << p << " m=" << m << " k=" << k << " s=" << s;
          if (k == p - 1) {
            EXPECT_DOUBLE_EQ(e.makespan, (p - 1) * (f + b) + m * (f1 + b1));
          }
          EXPECT_DOUBLE_EQ(e.busy[k], m * (f1 + b1));
        }
      }
    }
  }
  // p = 2, m = 2, rank 0 at 0.5 by hand: r0 F0 [0,2] F1 [2,4]; r1 F0 [2,3] B0 [3,5]; r0 B0 [5,9];
  // r1 F1 [5,6] B1 [6,8]; r0 B1 [9,13].
  UnevenWork work;
  work.rank_speed = {0.5, 1.0};
  EXPECT_DOUBLE_EQ(EvaluateUneven(MustMake("1f1b", 2, 2), {f, i, w}, work).makespan, 13);
}

TEST(EvaluateUneven, GPipeWithOneLongMicrobatch) {
  // GPipe is two flow shops (forwards, then backwards) whose job j costs t_j on every stage:
  // each takes sum_j t_j + (p - 1) max_j t_j. With one microbatch K times the others:
  // makespan = (f + b) * (m - 1 + p * K).
  const int p = 4, m = 8;
  for (int longest : {0, 3, 7}) {
    UnevenWork work;
    work.reference_seqlen = 1024;
    work.microbatch_seqlens.assign(m, 1024);
    work.microbatch_seqlens[longest] = 2048;
    work.attention_share = 0.5;  // K = 0.5 * 2 + 0.5 * 4 = 3
    Evaluation e = EvaluateUneven(MustMake("gpipe", p, m), {1, 1, 1}, work);
    EXPECT_DOUBLE_EQ(e.makespan, 3.0 * (m - 1 + p * 3.0)) << "longest=" << longest;
    EXPECT_DOUBLE_EQ(e.busy[0], 3.0 * (m - 1 + 3.0));
  }
}

TEST(EvaluateUneven, GPipeWithAllLengthsDifferent) {
  // Flow shop: sum_j t_j + (p - 1) max_j t_j per phase; attention_share 0: t_j = (s_j / s0) t.
  UnevenWork work;
  work.reference_seqlen = 100;
  work.microbatch_seqlens = {100, 50, 300, 150};
  Evaluation e = EvaluateUneven(MustMake("gpipe", 3, 4), {1, 2, 2}, work);
  const double sum = 1 + 0.5 + 3 + 1.5, max = 3;
  EXPECT_DOUBLE_EQ(e.makespan, 5 * (sum + 2 * max));
}

TEST(EvaluateUneven, OverlappedCellCostsEachHalfAtItsOwnLength) {
  // kimi-k2, p = 1: F0 (F1;B0) (F2;B1) B2: every F and B once, back to back.
  UnevenWork work;
  work.reference_seqlen = 10;
  work.microbatch_seqlens = {10, 20, 40};
  Evaluation e = EvaluateUneven(MustMake("kimi-k2", 1, 3, 1), {1, 2, 3}, work);
  EXPECT_DOUBLE_EQ(e.makespan, 6 * (1 + 2 + 4));
}

TEST(EvaluateUneven, SlowLinkMultipliesItsLatency) {
  // 1F1B, m = 1: the microbatch crosses every link twice: 3 (f + b) + 2 * sum of link latencies.
  const double c = 0.25;
  UnevenWork work;
  work.link_slowdowns = {{2, 1, 3.0}};
  Evaluation e = EvaluateUneven(MustMake("1f1b", 3, 1), {1, 1, 1}, work, c);
  EXPECT_DOUBLE_EQ(e.makespan, 9 + 2 * (c + 3 * c));
  // No latency: a slow link costs nothing in the analytic model.
  EXPECT_DOUBLE_EQ(EvaluateUneven(MustMake("1f1b", 3, 1), {1, 1, 1}, work).makespan, 9);
}

TEST(EvaluateUneven, EvenWorkChangesNothing) {
  UnevenWork work;
  work.rank_speed = {1, 1, 1, 1};
  work.reference_seqlen = 64;
  work.microbatch_seqlens.assign(8, 64);
  work.link_slowdowns = {{0, 3, 1.0}};
  EXPECT_TRUE(work.IsEven());
  for (const char* name : {"1f1b", "zb-h1", "interleaved-1f1b", "zbv"}) {
    const Schedule s = MustMake(name, 4, 8, name[0] == 'i' ? 2 : 0);
    EXPECT_DOUBLE_EQ(EvaluateUneven(s, {1, 2, 3}, work, 0.5).makespan,
                     testing::MustEvaluate(s, {1, 2, 3}, 0.5).makespan)
        << name;
  }
}

TEST(EvaluateUneven, RefusesCostsThatDoNotFitTheProgram) {
  Program program = *Lower(MustMake("1f1b", 2, 2));
  Costs costs = Costs::Uniform(2, {1, 1, 1});
  costs.microbatch_variant = {0, 1};
  costs.variants = {StageCostSet{{{1, 1, 1}, {1, 1, 1}}, {}}};
  Result<Evaluation> e = Evaluate(program, costs);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("microbatch 1 uses cost set 1"), std::string::npos);
  costs.microbatch_variant = {0};
  EXPECT_FALSE(Evaluate(program, costs).ok());
  EvaluateOptions options;
  options.link_slowdowns = {{0, 2, 2.0}};
  Result<Evaluation> bad_link = Evaluate(program, Costs::Uniform(2, {1, 1, 1}), options);
  ASSERT_FALSE(bad_link.ok());
  EXPECT_NE(bad_link.status().message().find("link slowdown 0-2=2"), std::string::npos);
}

}  // namespace
}  // namespace pipette
