// Golden: makespans, bubbles and in-flight counts that the reference notes
// (../shared/reference/schedules.md, from an independent event simulation of the published orders)
// and DeepSeek's README state for p = 4, m = 8. "unit" costs are F = I = W = 1 (B = 2); the second
// set is F = 1, I = 2, W = 1 (B = 3).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace pipette {
namespace {

using testing::MustEvaluate;
using testing::MustMake;

constexpr StageCost kUnit{1, 1, 1};
constexpr StageCost kSecond{1, 2, 1};

struct Published {
  const char* schedule;
  int p, m, v;
  StageCost cost;
  double latency;
  double makespan;
  std::vector<int> peak_activations;  // empty: not published
};

TEST(PublishedValues, MakespansAndInFlightCountsAtP4) {
  const Published cases[] = {
      {"gpipe", 4, 8, 1, kUnit, 0, 33, {8, 8, 8, 8}},
      {"1f1b", 4, 8, 1, kUnit, 0, 33, {4, 3, 2, 1}},
      {"1f1b", 4, 8, 1, kSecond, 0, 44, {4, 3, 2, 1}},
      {"1f1b", 4, 8, 1, kUnit, 0.5, 41, {}},
      {"1f1b", 8, 32, 1, kUnit, 1, 185, {}},
      {"eager-1f1b", 4, 8, 1, kUnit, 0.5, 36, {7, 5, 3, 1}},
      {"eager-1f1b", 8, 32, 1, kUnit, 1, 131, {}},
      {"zb-h1", 4, 8, 1, kUnit, 0, 27, {4, 3, 2, 1}},
      {"zb-h1", 4, 8, 1, kSecond, 0, 38, {}},
      {"zb-h2", 4, 8, 1, kUnit, 0, 27, {7, 5, 3, 1}},
      {"zb-h2", 8, 16, 1, kUnit, 0, 55, {}},
      {"interleaved-1f1b", 4, 8, 2, kUnit, 0, 57, {11, 9, 7, 5}},
      {"interleaved-1f1b-plus-one", 4, 8, 2, kUnit, 0, 57, {12, 10, 8, 6}},
      {"kimi-k2", 4, 8, 2, kUnit, 0, 57, {12, 10, 8, 6}},
      {"interleaved-gpipe", 4, 8, 2, kUnit, 0, 57, {16, 16, 16, 16}},
      {"interleaved-zb", 4, 8, 2, kUnit, 0, 51, {8, 7, 6, 5}},
      {"interleaved-zb", 4, 8, 2, kSecond, 0, 70, {}},
      {"zbv", 4, 8, 2, kUnit, 0, 48 + 3, {8, 8, 8, 8}},
      {"zbv", 4, 8, 2, kSecond, 0, 64 + 6, {}},
      {"dualpipe", 4, 8, 2, kUnit, 0, 26, {5, 5, 5, 5}},
      {"dualpipe", 4, 8, 2, kSecond, 0, 35, {}},
      {"dualpipe-v", 4, 8, 2, kUnit, 0, 54, {9, 9, 9, 9}},
  };
  for (const Published& c : cases) {
    const std::string label = fmt::format("{} p={} m={} v={} F={} I={} W={} c={}", c.schedule, c.p,
                                          c.m, c.v, c.cost.f, c.cost.i, c.cost.w, c.latency);
    Evaluation e = MustEvaluate(MustMake(c.schedule, c.p, c.m, c.v), c.cost, c.latency);
    EXPECT_DOUBLE_EQ(e.makespan, c.makespan) << label;
    if (!c.peak_activations.empty()) {
      EXPECT_EQ(e.peak_activations, c.peak_activations) << label;
    }
  }
}

TEST(PublishedValues, BubbleRatiosAtP4M8) {
  EXPECT_NEAR(MustEvaluate(MustMake("gpipe", 4, 8), kUnit).bubble_ratio, 9.0 / 33, 1e-12);
  EXPECT_NEAR(MustEvaluate(MustMake("interleaved-1f1b", 4, 8, 2), kUnit).bubble_ratio, 9.0 / 57,
              1e-12);
}

TEST(PublishedValues, DualPipeInFlightIsPPlusOneChunks) {
  // DeepSeek README: activations of PP+1 chunks; at p = 8 the peak reaches 9 (DualPipe) and 17
  // (DualPipe-V, 2p stages).
  Evaluation dualpipe = MustEvaluate(MustMake("dualpipe", 8, 16), kUnit);
  EXPECT_EQ(*std::max_element(dualpipe.peak_activations.begin(), dualpipe.peak_activations.end()),
            9);
  Evaluation dualpipe_v = MustEvaluate(MustMake("dualpipe-v", 8, 16), kUnit);
  EXPECT_EQ(
      *std::max_element(dualpipe_v.peak_activations.begin(), dualpipe_v.peak_activations.end()),
      17);
}

}  // namespace
}  // namespace pipette
