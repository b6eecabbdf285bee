// The CPU engine's activations (GELU, SwiGLU) at every magnitude a diverging run reaches. tensor.cc
// is built with fast math, which (with -ffinite-math-only) divided through a reciprocal estimate:
// 1 / (1 + exp(t)) became NaN instead of 0 once exp(t) overflowed, so every GELU input below about
// -10 (and SiLU gate below -88) turned into NaN, and a run at a large learning rate "diverged" in
// the normal build and not in the sanitizer build. The inputs are 64 wide so that the vectorised
// loop, not only its scalar tail, computes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "cpu/tensor.h"

namespace pipette::cpu {
namespace {

// Each of `values` repeated to fill a 1 x 64 row, element i = values[i % size].
Tensor Row(const std::vector<float>& values) {
  Tensor t(1, 64);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = values[i % values.size()];
  return t;
}

// The tanh GELU and its derivative in double, from their definition.
double Gelu(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
double GeluDerivative(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

const std::vector<float> kMagnitudes = {-1e30f, -1e13f, -1e4f, -100.0f, -20.5f, -12.0f, -10.5f,
                                        -9.0f,  -3.0f,  -0.5f, 0.0f,    0.5f,   3.0f,   9.0f,
                                        12.0f,  100.0f, 1e4f,  1e13f,   1e30f};

TEST(GeluKernel, IsFiniteAndEqualsTheDefinitionAtEveryMagnitude) {
  const Tensor x = Row(kMagnitudes);
  Tensor y(1, 64), dx(1, 64);
  Tensor ones(1, 64);
  for (std::size_t i = 0; i < ones.size(); ++i) ones[i] = 1.0f;
  GeluForward(x, y);
  GeluInputGrad(ones, x, dx);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    ASSERT_TRUE(std::isfinite(y[i])) << "gelu(" << v << ") = " << y[i];
    ASSERT_TRUE(std::isfinite(dx[i])) << "gelu'(" << v << ") = " << dx[i];
    EXPECT_NEAR(y[i], Gelu(v), 1e-6 * std::max(1.0, std::abs(v))) << "gelu(" << v << ")";
    EXPECT_NEAR(dx[i], GeluDerivative(v), 1e-5) << "gelu'(" << v << ")";
  }
}

// A NaN input stays NaN through every activation and derivative: a diverged run must not look
// healthy (fast math without finite-math-only keeps NaN semantics; the clamp passes NaN).
TEST(GeluKernel, ANanStaysANan) {
  const Tensor x = Row({NAN});
  Tensor y(1, 64), dx(1, 64), ones = Row({1.0f});
  GeluForward(x, y);
  GeluInputGrad(ones, x, dx);
  Tensor gate_up = Row({NAN}), sy(1, 32), sdy(1, 32), sdg(1, 64);
  for (int c = 0; c < 32; ++c) sdy[c] = 1.0f;
  SwigluForward(gate_up, sy);
  SwigluInputGrad(sdy, gate_up, sdg);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(std::isnan(y[i]) && std::isnan(dx[i])) << i;
    ASSERT_TRUE(std::isnan(sdg[i])) << i;
    if (i < 32) {
      ASSERT_TRUE(std::isnan(sy[i])) << i;
    }
  }
}

TEST(SwigluKernel, IsFiniteAndEqualsSiluTimesUpAtEveryGateMagnitude) {
  // gate_up rows are [gate | up]: 32 gates then 32 ups of 2.
  Tensor gate_up(1, 64), y(1, 32), dy(1, 32), dgate_up(1, 64);
  for (int c = 0; c < 32; ++c) {
    gate_up[c] = kMagnitudes[c % kMagnitudes.size()];
    gate_up[32 + c] = 2.0f;
    dy[c] = 1.0f;
  }
  SwigluForward(gate_up, y);
  SwigluInputGrad(dy, gate_up, dgate_up);
  for (int c = 0; c < 32; ++c) {
    const double g = gate_up[c];
    const double s = g < -700 ? 0.0 : 1.0 / (1.0 + std::exp(-g));
    ASSERT_TRUE(std::isfinite(y[c]) && std::isfinite(dgate_up[c]) &&
                std::isfinite(dgate_up[32 + c]))
        << "gate " << g << ": y " << y[c] << ", dgate " << dgate_up[c] << ", dup "
        << dgate_up[32 + c];
    EXPECT_NEAR(y[c], 2.0 * g * s, 1e-6 * std::max(1.0, std::abs(g))) << "gate " << g;
    EXPECT_NEAR(dgate_up[32 + c], g * s, 1e-6 * std::max(1.0, std::abs(g))) << "gate " << g;
    EXPECT_NEAR(dgate_up[c], 2.0 * s * (1.0 + g * (1.0 - s)), 1e-5) << "gate " << g;
  }
}

}  // namespace
}  // namespace pipette::cpu
