#include "pipette/fidelity/least_squares.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace pipette {

namespace {

using Matrix = std::vector<std::vector<double>>;  // column-major: Matrix[column][row]

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Least squares over the columns `use` of `a` (column-major) for `b`, by modified Gram-Schmidt QR;
// the columns are independent (the caller pivoted them). Returns one value per used column.
std::vector<double> SolveSubset(const Matrix& a, const std::vector<int>& use,
                                const std::vector<double>& b) {
  const std::size_t k = use.size();
  std::vector<std::vector<double>> q;
  std::vector<std::vector<double>> r(k, std::vector<double>(k, 0));
  for (std::size_t j = 0; j < k; ++j) {
    std::vector<double> v = a[use[j]];
    for (std::size_t i = 0; i < j; ++i) {
      r[i][j] = Dot(q[i], v);
      for (std::size_t t = 0; t < v.size(); ++t) v[t] -= r[i][j] * q[i][t];
    }
    r[j][j] = std::sqrt(Dot(v, v));
    for (double& x : v) x = r[j][j] > 0 ? x / r[j][j] : 0;
    q.push_back(std::move(v));
  }
  std::vector<double> x(k, 0);
  for (std::size_t j = k; j-- > 0;) {
    double s = Dot(q[j], b);
    for (std::size_t i = j + 1; i < k; ++i) s -= r[j][i] * x[i];
    x[j] = r[j][j] > 0 ? s / r[j][j] : 0;
  }
  return x;
}

// Lawson and Hanson's NNLS over the columns `cols` of `a` for `b`: values per column of `cols`.
std::vector<double> Nnls(const Matrix& a, const std::vector<int>& cols,
                         const std::vector<double>& b) {
  const std::size_t n = cols.size();
  std::vector<double> x(n, 0);
  std::vector<bool> passive(n, false);
  const double eps = 1e-12;
  for (int iteration = 0; iteration < 30 * static_cast<int>(n) + 30; ++iteration) {
    std::vector<double> residual = b;  // b - A x
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t t = 0; t < b.size(); ++t) residual[t] -= a[cols[j]][t] * x[j];
    }
    int best = -1;
    double best_gradient = eps;
    for (std::size_t j = 0; j < n; ++j) {
      const double gradient = Dot(a[cols[j]], residual);
      if (!passive[j] && gradient > best_gradient) {
        best_gradient = gradient;
        best = static_cast<int>(j);
      }
    }
    if (best < 0) break;
    passive[best] = true;
    for (;;) {  // solve on the passive set; step back while a value would turn negative
      std::vector<int> use, index;
      for (std::size_t j = 0; j < n; ++j) {
        if (passive[j]) {
          use.push_back(cols[j]);
          index.push_back(static_cast<int>(j));
        }
      }
      const std::vector<double> z = SolveSubset(a, use, b);
      double alpha = 1;
      int blocking = -1;
      for (std::size_t t = 0; t < z.size(); ++t) {
        if (z[t] <= 0) {
          const double step = x[index[t]] / (x[index[t]] - z[t]);
          if (step < alpha) {
            alpha = step;
            blocking = index[t];
          }
        }
      }
      if (blocking < 0) {
        for (std::size_t t = 0; t < z.size(); ++t) x[index[t]] = z[t];
        break;
      }
      for (std::size_t t = 0; t < z.size(); ++t) {
        x[index[t]] += alpha * (z[t] - x[index[t]]);
      }
      for (std::size_t j = 0; j < n; ++j) {
        if (passive[j] && x[j] <= eps * std::max(1.0, std::abs(x[j]))) {
          passive[j] = false;
          x[j] = 0;
        }
      }
      passive[blocking] = false;
      x[blocking] = 0;
    }
  }
  return x;
}

}  // namespace

LeastSquaresSolution SolveNonNegativeLeastSquares(const LeastSquaresProblem& problem) {
  const std::size_t rows = problem.rows.size();
  const std::size_t n = rows == 0 ? problem.priors.size() : problem.rows[0].size();
  auto weight = [&](std::size_t i) { return problem.weights.empty() ? 1.0 : problem.weights[i]; };
  auto prior = [&](std::size_t j) { return problem.priors.empty() ? 0.0 : problem.priors[j]; };
  LeastSquaresSolution out;
  out.values.assign(n, 0);
  out.status.assign(n, FitStatus::kFitted);
  out.with.assign(n, {});
  // Weighted columns, each scaled to unit length (the scale undone at the end).
  Matrix a(n, std::vector<double>(rows, 0));
  std::vector<double> scale(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < rows; ++i) a[j][i] = weight(i) * problem.rows[i][j];
    scale[j] = std::sqrt(Dot(a[j], a[j]));
    if (!(scale[j] > 0)) {
      out.status[j] = FitStatus::kUnconstrained;
      continue;
    }
    for (double& v : a[j]) v /= scale[j];
  }
  // Gram-Schmidt in parameter order: a column whose part outside the span of the fitted ones
  // before it is below the tolerance is confounded with them.
  std::vector<int> fitted;
  std::vector<std::vector<double>> basis;
  out.independence.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    if (out.status[j] != FitStatus::kFitted) continue;
    std::vector<double> v = a[j];
    for (const std::vector<double>& q : basis) {
      const double c = Dot(q, v);
      for (std::size_t i = 0; i < rows; ++i) v[i] -= c * q[i];
    }
    const double norm = std::sqrt(Dot(v, v));
    out.independence[j] = norm;
    if (!(norm > problem.tolerance)) continue;
    for (double& x : v) x /= norm;
    basis.push_back(std::move(v));
    fitted.push_back(static_cast<int>(j));
  }
  std::sort(fitted.begin(), fitted.end());
  for (std::size_t j = 0; j < n; ++j) {
    if (out.status[j] != FitStatus::kFitted ||
        std::find(fitted.begin(), fitted.end(), static_cast<int>(j)) != fitted.end()) {
      continue;
    }
    out.status[j] = FitStatus::kConfounded;
    // The fitted columns it moves with: those with a weight in its least-squares expression.
    const std::vector<double> c = SolveSubset(a, fitted, a[j]);
    for (std::size_t t = 0; t < c.size(); ++t) {
      if (std::abs(c[t]) > 1e-6) out.with[j].push_back(fitted[t]);
    }
  }
  // The targets less what the held parameters explain, then NNLS over the fitted ones.
  std::vector<double> b(rows, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    double held = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (out.status[j] != FitStatus::kFitted) held += problem.rows[i][j] * prior(j);
    }
    b[i] = weight(i) * (problem.targets[i] - held);
  }
  const std::vector<double> x = Nnls(a, fitted, b);
  for (std::size_t j = 0; j < n; ++j) {
    if (out.status[j] != FitStatus::kFitted) out.values[j] = prior(j);
  }
  for (std::size_t t = 0; t < fitted.size(); ++t) out.values[fitted[t]] = x[t] / scale[fitted[t]];
  for (std::size_t i = 0; i < rows; ++i) {
    out.residuals.push_back(Dot(problem.rows[i], out.values) - problem.targets[i]);
  }
  return out;
}

}  // namespace pipette
