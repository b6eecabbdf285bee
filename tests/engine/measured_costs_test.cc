// Measured stage costs: the median per stage and kind, step 0 left out only when later steps were
// traced, overlapped cells and communication left out, kinds a stage never ran absent.
#include "pipette/engine/measured_costs.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TraceEvent Event(Action action, int step, double start, double end) {
  return TraceEvent{.step = step, .action = action, .start = start, .end = end};
}

TEST(MeasureStageCosts, MedianPerStageAndKindWithoutTheWarmUpStep) {
  const std::vector<TraceEvent> trace{
      Event(Action::F(0, 0), 0, 0, 100),  // warm-up: left out
      Event(Action::F(0, 0), 1, 0, 2),
      Event(Action::F(0, 1), 1, 2, 6),
      Event(Action::F(0, 2), 2, 18, 68),  // a descheduled outlier: the median ignores it
      Event(Action::I(1, 0), 1, 6, 9),
      Event(Action::W(1, 0), 2, 9, 10),
      Event(Action::W(1, 1), 2, 10, 13),
      Event(Action::B(0, 0), 2, 13, 18),
      Event(Action::Make(ActionKind::kSendForward, 0, 0), 1, 0, 50),
      Event(Action::Overlap(Action::F(1, 2), Action::B(0, 1)), 1, 0, 70),
  };
  const std::vector<MeasuredStageCost> costs = MeasureStageCosts(trace, 3);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].f, 4.0) << "the median of 2, 4 and 50 (the mean would be 18.7)";
  EXPECT_EQ(costs[0].b, 5.0);
  EXPECT_FALSE(costs[0].i.has_value());
  EXPECT_FALSE(costs[0].w.has_value());
  EXPECT_FALSE(costs[1].f.has_value()) << "the overlapped cell's forward is not timed apart";
  EXPECT_EQ(costs[1].i, 3.0);
  EXPECT_EQ(costs[1].w, 2.0);
  EXPECT_EQ(costs[1].Of(ActionKind::kWeightBackward), 2.0);
  EXPECT_FALSE(costs[2].f || costs[2].i || costs[2].w || costs[2].b);
}

TEST(MeasureStageCosts, AOneStepTraceKeepsStepZero) {
  const std::vector<TraceEvent> trace{Event(Action::F(0, 0), 0, 0, 4),
                                      Event(Action::F(0, 1), 0, 4, 6)};
  const std::vector<MeasuredStageCost> costs = MeasureStageCosts(trace, 1);
  EXPECT_EQ(costs[0].f, 3.0);  // the median of two: their mean
}

TEST(Median, OddAndEvenCountsInAnyOrder) {
  EXPECT_EQ(Median({7}), 7.0);
  EXPECT_EQ(Median({9, 1, 5}), 5.0);
  EXPECT_EQ(Median({10, 1, 4, 2}), 3.0);
  EXPECT_EQ(Median({1e12, -3, 2, 2, 0}), 2.0);
  EXPECT_EQ(Median({}), 0.0);
}

}  // namespace
}  // namespace pipette
