// Non-negative weighted least squares that says what the data cannot determine: the solver behind
// `pipette fit` (cost_fit.h). Small dense problems (tens of rows, about ten parameters). Pure
// functions.
//
// Minimises sum_i (w_i (a_i . x - b_i))^2 over x >= 0. Before solving, the columns (scaled by the
// weights and to unit length) are sorted into three kinds:
//   - unconstrained: the column is zero (no row depends on the parameter); its value is its prior
//     (0 without one);
//   - confounded: the column lies, within `tolerance`, in the span of the fitted columns before it
//     (the data sees only a combination); its value is held at its prior and the combination is
//     fitted through the others; `with` lists those others;
//   - fitted: the rest, solved by Lawson and Hanson's active-set method (NNLS).
// Listing the best-determined parameters first decides which one of a confounded pair is fitted.
// Deterministic.
#pragma once

#include <vector>

namespace pipette {

// kUnused is not the solver's: a caller's mark for a parameter its model leaves out (cost_fit.h:
// the GEMM terms a GEMM table replaces, or the table's scale without one).
enum class FitStatus { kFitted, kUnconstrained, kConfounded, kUnused };

struct LeastSquaresProblem {
  std::vector<std::vector<double>> rows;  // a_i, each of the same size (the parameters)
  std::vector<double> targets;            // b_i
  std::vector<double> weights;            // w_i > 0; empty: all 1
  std::vector<double> priors;             // values of parameters the data cannot fit; empty: 0
  // A column whose part outside the span of the fitted ones before it is below this (of its length)
  // is confounded: at 0.05, 1% noise in the rows moves a parameter by at most about 20% of itself
  // before it is called determined.
  double tolerance = 0.05;
};

struct LeastSquaresSolution {
  std::vector<double> values;
  std::vector<FitStatus> status;
  std::vector<std::vector<int>> with;  // per confounded parameter: the fitted ones it moves with
  std::vector<double> residuals;       // a_i . x - b_i per row (unweighted)
  // Per parameter: the length of its weighted, unit-scaled column outside the span of the fitted
  // ones before it (1: independent of them; near 0: nearly confounded, its value is sensitive to
  // noise); 0 for an unconstrained one.
  std::vector<double> independence;
};

// REQUIRES: every row has the size of the first; targets (and weights, priors when given) match.
LeastSquaresSolution SolveNonNegativeLeastSquares(const LeastSquaresProblem& problem);

}  // namespace pipette
