// The fit's solver (fidelity/least_squares.h): exact recovery, non-negativity, weights, and the
// parameters the data cannot determine reported as unconstrained or confounded.
#include "pipette/fidelity/least_squares.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TEST(LeastSquares, RecoversTheParametersOfConsistentRows) {
  // t = 2 a + 3 b + 0.5 c over rows that determine all three.
  LeastSquaresProblem p;
  p.rows = {{1, 0, 0}, {0, 1, 0}, {1, 1, 1}, {2, 1, 4}, {3, 5, 1}};
  for (const auto& r : p.rows) p.targets.push_back(2 * r[0] + 3 * r[1] + 0.5 * r[2]);
  const LeastSquaresSolution s = SolveNonNegativeLeastSquares(p);
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_NEAR(s.values[0], 2, 1e-12);
  EXPECT_NEAR(s.values[1], 3, 1e-12);
  EXPECT_NEAR(s.values[2], 0.5, 1e-12);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(s.status[k], FitStatus::kFitted);
  for (const double r : s.residuals) EXPECT_NEAR(r, 0, 1e-12);
}

TEST(LeastSquares, ValuesStayNonNegative) {
  // The unconstrained least squares would make b negative (t falls with column 1).
  LeastSquaresProblem p;
  p.rows = {{1, 0}, {1, 1}, {1, 2}, {1, 3}};
  p.targets = {4, 3, 2, 1};
  const LeastSquaresSolution s = SolveNonNegativeLeastSquares(p);
  EXPECT_EQ(s.values[1], 0);
  EXPECT_NEAR(s.values[0], 2.5, 1e-12);  // the mean, the best with b = 0
}

TEST(LeastSquares, WeightsDecideBetweenInconsistentRows) {
  LeastSquaresProblem p;
  p.rows = {{1}, {1}};
  p.targets = {1, 2};
  p.weights = {1, 0.01};  // the first row counts 10,000 times more
  const LeastSquaresSolution s = SolveNonNegativeLeastSquares(p);
  EXPECT_NEAR(s.values[0], 1.0001, 1e-4);
}

TEST(LeastSquares, AColumnNoRowUsesIsUnconstrainedAndKeepsItsPrior) {
  LeastSquaresProblem p;
  p.rows = {{1, 0}, {2, 0}};
  p.targets = {3, 6};
  p.priors = {0, 7};
  const LeastSquaresSolution s = SolveNonNegativeLeastSquares(p);
  EXPECT_EQ(s.status[0], FitStatus::kFitted);
  EXPECT_NEAR(s.values[0], 3, 1e-12);
  EXPECT_EQ(s.status[1], FitStatus::kUnconstrained);
  EXPECT_EQ(s.values[1], 7);
  EXPECT_EQ(s.independence[1], 0);
}

TEST(LeastSquares, ProportionalColumnsAreConfoundedWithTheFirst) {
  // Column 1 = 2 x column 0, and column 3 = column 2 - column 0: only combinations are seen.
  LeastSquaresProblem p;
  p.rows = {{1, 2, 1, 0}, {2, 4, 3, 1}, {1, 2, 4, 3}};
  p.targets = {3, 7, 6};  // 2 x column 0 + column 2
  const LeastSquaresSolution s = SolveNonNegativeLeastSquares(p);
  EXPECT_EQ(s.status[0], FitStatus::kFitted);
  EXPECT_EQ(s.status[1], FitStatus::kConfounded);
  EXPECT_EQ(s.with[1], std::vector<int>{0});
  EXPECT_EQ(s.status[2], FitStatus::kFitted);
  EXPECT_EQ(s.status[3], FitStatus::kConfounded);
  EXPECT_EQ(s.with[3], (std::vector<int>{0, 2}));
  EXPECT_EQ(s.values[1], 0);  // held at the prior; its share carried by the fitted ones
  for (const double r : s.residuals) EXPECT_NEAR(r, 0, 1e-9);
}

}  // namespace
}  // namespace pipette
