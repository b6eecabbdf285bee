// GemmTable: exact at its grid's shapes, the time per FLOP interpolated geometrically between
// sizes (linear in log2 of each size) and held at the edges beyond them, and a table that is not
// a full grid refused naming the shape.
#include "pipette/engine/gemm_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

namespace pipette {
namespace {

double Flops(double m, double n, double k) { return 2 * m * n * k; }

// Seconds per FLOP of shape m x n x k in the synthetic tables below: slower for small m.
double PerFlop(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 1e-11 * (1 + 64.0 / static_cast<double>(m)) * (1 + 1.0 / static_cast<double>(n + k));
}

std::vector<GemmTiming> Grid(const std::vector<std::int64_t>& sizes,
                             GemmPass pass = GemmPass::kForward, double slower = 1) {
  std::vector<GemmTiming> out;
  for (const std::int64_t m : sizes) {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t k : sizes) {
        out.push_back({m, n, k, 2, slower * PerFlop(m, n, k) * Flops(m, n, k), pass});
      }
    }
  }
  return out;
}

TEST(GemmTableSizes, ArePowersOfTwoFromSixteen) {
  EXPECT_EQ(GemmTableSizes(2048),
            (std::vector<std::int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048}));
  EXPECT_EQ(GemmTableSizes(100), (std::vector<std::int64_t>{16, 32, 64}));
  EXPECT_TRUE(GemmTableSizes(8).empty());
}

TEST(GemmTable, IsExactAtItsShapesInAnyOrder) {
  std::vector<GemmTiming> timings = Grid({16, 64, 256});
  std::reverse(timings.begin(), timings.end());
  const Result<GemmTable> table = GemmTable::Of(timings);
  ASSERT_TRUE(table.ok()) << table.status().message();
  for (const GemmTiming& t : timings) {
    EXPECT_NEAR(table->SecondsOf({t.m, t.n, t.k}, t.pass), t.seconds, 1e-12 * t.seconds)
        << t.m << "x" << t.n << "x" << t.k;
  }
}

TEST(GemmTable, InterpolatesTheTimePerFlopInLogSizeAndHoldsItBeyondTheGrid) {
  const Result<GemmTable> table = GemmTable::Of(Grid({16, 64, 256}));
  ASSERT_TRUE(table.ok()) << table.status().message();
  // m = 32 is halfway from 16 to 64 in log2: the time per FLOP is the geometric mean.
  const double mid = std::sqrt(PerFlop(16, 64, 256) * PerFlop(64, 64, 256));
  EXPECT_NEAR(table->SecondsOf({32, 64, 256}, GemmPass::kForward), mid * Flops(32, 64, 256), 1e-12);
  // m = 128, n = 32: halfway in both; the four corners' logs averaged.
  const double corners = std::pow(
      PerFlop(64, 16, 64) * PerFlop(256, 16, 64) * PerFlop(64, 64, 64) * PerFlop(256, 64, 64),
      0.25);
  EXPECT_NEAR(table->SecondsOf({128, 32, 64}, GemmPass::kForward) / Flops(128, 32, 64), corners,
              1e-9 * corners);
  // Beyond the grid: the edge's time per FLOP, times the shape's FLOPs.
  EXPECT_NEAR(table->SecondsOf({1024, 8, 256}, GemmPass::kForward) / Flops(1024, 8, 256),
              PerFlop(256, 16, 256), 1e-9 * PerFlop(256, 16, 256));
}

TEST(GemmTable, PricesEachPassByItsOwnGridAndAMissingPassByTheFirst) {
  std::vector<GemmTiming> timings = Grid({16, 64}, GemmPass::kWeightGrad, 1.5);
  const std::vector<GemmTiming> forward = Grid({16, 64, 256});
  timings.insert(timings.end(), forward.begin(), forward.end());
  const Result<GemmTable> table = GemmTable::Of(timings);
  ASSERT_TRUE(table.ok()) << table.status().message();
  const GemmShape shape{64, 16, 64};
  const double f = PerFlop(64, 16, 64) * Flops(64, 16, 64);
  EXPECT_NEAR(table->SecondsOf(shape, GemmPass::kForward), f, 1e-12 * f);
  EXPECT_NEAR(table->SecondsOf(shape, GemmPass::kWeightGrad), 1.5 * f, 1e-12 * f);
  EXPECT_NEAR(table->SecondsOf(shape, GemmPass::kInputGrad), f, 1e-12 * f);  // none: F's
  EXPECT_EQ(GemmPassOf("W"), GemmPass::kWeightGrad);
  EXPECT_EQ(GemmPassOf("B"), std::nullopt);
}

TEST(GemmTable, ARaggedTableIsRefusedNamingTheShape) {
  std::vector<GemmTiming> timings = Grid({16, 64});
  timings.erase(timings.begin() + 3);  // 16x64x64
  const Result<GemmTable> missing = GemmTable::Of(timings);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("F shape 16x64x64 is missing"), std::string::npos)
      << missing.status().message();
  timings = Grid({16, 64});
  timings.push_back(timings[5]);
  const Result<GemmTable> repeated = GemmTable::Of(timings);
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("is repeated"), std::string::npos)
      << repeated.status().message();
  timings = Grid({16, 64});
  timings[2].seconds = 0;
  EXPECT_FALSE(GemmTable::Of(timings).ok());
}

// The calibration times its table in rounds (TimeGemmTableInRounds): a slow spell of the machine
// as long as a round, wherever it starts, leaves every entry at its true time, and each shape's
// three passes are timed back to back (a spell shorter than three calls slows them alike).
TEST(GemmTableInRounds, ASlowSpellAsLongAsARoundMovesNoEntry) {
  const std::vector<std::int64_t> sizes = {16, 32, 64};
  const int repeats = 5, per_round = 27 * kGemmPasses;
  auto truth = [](GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k) {
    return (1 + 0.1 * static_cast<int>(pass)) * PerFlop(m, n, k) * Flops(m, n, k);
  };
  for (const int spell : {0, per_round, per_round + 40, 3 * per_round + 1, 5 * per_round}) {
    SCOPED_TRACE(spell);
    int call = 0;
    std::vector<GemmTiming> order;
    const std::vector<GemmTiming> table = TimeGemmTableInRounds(
        sizes, repeats, 2, [&](GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k) {
          order.push_back({m, n, k, 2, 0, pass});
          const bool slow = call >= spell && call < spell + per_round;
          ++call;
          return (slow ? 1.5 : 1.0) * truth(pass, m, n, k);
        });
    ASSERT_EQ(call, (repeats + 1) * per_round);  // a warm-up round, then the repeats
    for (std::size_t i = 0; i < order.size(); i += kGemmPasses) {
      for (int p = 0; p < kGemmPasses; ++p) {
        EXPECT_EQ(order[i + p].pass, kAllGemmPasses[p]);
        EXPECT_EQ(std::tie(order[i + p].m, order[i + p].n, order[i + p].k),
                  std::tie(order[i].m, order[i].n, order[i].k));
      }
    }
    ASSERT_EQ(table.size(), static_cast<std::size_t>(per_round));
    for (std::size_t i = 0; i < table.size(); ++i) {
      const GemmTiming& t = table[i];
      EXPECT_EQ(t.pass, kAllGemmPasses[i / 27]);  // by pass, then m, n, k
      EXPECT_EQ(t.ranks, 2);
      EXPECT_DOUBLE_EQ(t.seconds, truth(t.pass, t.m, t.n, t.k)) << t.m << "x" << t.n << "x" << t.k;
    }
    EXPECT_TRUE(GemmTable::Of(table).ok());
  }
}

}  // namespace
}  // namespace pipette
