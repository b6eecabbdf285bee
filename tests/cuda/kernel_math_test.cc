// The CUDA kernels' per-thread math (backends/cuda/kernel_math.h) run on the host over every thread
// index, against the CPU engine's kernels on the same random inputs: LayerNorm, Affine, GELU, the
// Linear bias parts, attention (multi-head against cpu::Attention*, grouped-query against the CPU
// kernel on repeated kv heads), the embedding and loss modules, ParamSet::Step. RMSNorm, RoPE and
// SwiGLU are checked against references written here from the Llama conventions and against
// finite differences. No GPU needed: this is how the kernels' math is tested in CI.
#include "cuda/kernel_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../cpu/small_specs.h"
#include "cpu/gpt.h"
#include "cpu/param_set.h"
#include "cpu/tensor.h"
#include "cpu_compare_util.h"
#include "pipette/engine/corpus.h"

namespace pipette::cuda::math {
namespace {

using cpu::Tensor;
using test_util::Floats;

using test_util::ExpectClose;
using test_util::ForEachIndex;
using test_util::Random;
using test_util::ToFloats;
using test_util::ToTensor;

void ExpectClose(const Floats& actual, const Tensor& expected, double rel, const char* what) {
  ExpectClose(actual, ToFloats(expected), rel, what);
}

constexpr double kRel = 1e-5;  // kernel math against the CPU engine

// ---- norms ------------------------------------------------------------------------------------

// ---- block reductions --------------------------------------------------------------------------

// 32 lanes exchanging values by xor shuffles, as a warp does: lane i adds lane (i ^ o)'s value.
std::vector<double> Butterfly(std::vector<double> v) {
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    std::vector<double> next(v.size());
    for (int i = 0; i < kWarpSize; ++i) next[i] = v[i] + v[i ^ o];
    v = next;
  }
  return v;
}

TEST(KernelMathBlockReduce, HalvingTreeIsTheWarpButterflyBitForBit) {
  const Floats x = Random(kWarpSize, 90, -1e4f, 1e4f);
  std::vector<double> v(x.begin(), x.end());
  for (int i = 0; i < kWarpSize; i += 3) v[i] *= 1e-9;  // magnitudes whose order of addition shows
  const std::vector<double> lanes = Butterfly(v);
  for (int i = 1; i < kWarpSize; ++i) EXPECT_EQ(lanes[i], lanes[0]) << "lane " << i;
  std::vector<double> halved = v;
  EXPECT_EQ(HalvingTree(halved.data(), kWarpSize, SumOp{}), lanes[0]);
}

TEST(KernelMathBlockReduce, BlockReduceModelIsTheTwoLevelTree) {
  std::vector<double> v(kRowThreads);
  for (int i = 0; i < kRowThreads; ++i) v[i] = (i % 7 == 0 ? 1e12 : 1.0) * (i + 1) / 3.0;
  std::vector<double> warps(kWarpSize, 0.0);
  for (int w = 0; w < kRowWarps; ++w) {
    warps[w] = Butterfly(
        std::vector<double>(v.begin() + w * kWarpSize, v.begin() + (w + 1) * kWarpSize))[0];
  }
  const double expected = Butterfly(warps)[0];
  std::vector<double> copy = v;
  EXPECT_EQ(BlockReduceModel(copy.data(), 0.0, SumOp{}), expected);
  // Whole numbers sum exactly whatever the order.
  for (int i = 0; i < kRowThreads; ++i) v[i] = i + 1;
  EXPECT_EQ(BlockReduceModel(v.data(), 0.0, SumOp{}), 0.5 * kRowThreads * (kRowThreads + 1));
}

// kernels.cu's BlockReduce as every thread runs it: each warp's lanes by xor shuffles (thread i
// computes op(its value, lane i ^ o's value)), then every warp the warps' results (identity past
// the last warp) the same way. Returns each of the kRowThreads threads' result.
template <class T, class Op>
std::vector<T> DeviceBlockReduce(const std::vector<T>& v, T identity, Op op) {
  auto warp = [&](std::vector<T> lanes) {
    for (int o = kWarpSize / 2; o > 0; o /= 2) {
      std::vector<T> next(lanes.size());
      for (int i = 0; i < kWarpSize; ++i) next[i] = op(lanes[i], lanes[i ^ o]);
      lanes = next;
    }
    return lanes;
  };
  std::vector<T> shared(kRowWarps), out(kRowThreads);
  for (int w = 0; w < kRowWarps; ++w) {
    shared[w] = warp(std::vector<T>(v.begin() + w * kWarpSize, v.begin() + (w + 1) * kWarpSize))[0];
  }
  std::vector<T> second(kWarpSize, identity);
  for (int l = 0; l < kRowWarps; ++l) second[l] = shared[l];
  const std::vector<T> reduced = warp(second);
  for (int t = 0; t < kRowThreads; ++t) out[t] = reduced[t % kWarpSize];
  return out;
}

// CrossEntropyKernel's every thread uses the merged softmax for its own columns of the gradient:
// all threads must hold the same bits, and those of the host's model (CrossEntropyBlock).
TEST(KernelMathBlockReduce, EveryThreadGetsTheSameMergedSoftmax) {
  for (const int vocab : {100, 256, 1000, 4099}) {  // lanes with no column, one, several
    SCOPED_TRACE(vocab);
    Floats z = Random(vocab, 91 + vocab, -8, 8);
    for (int c = 0; c < vocab; c += 37) z[c] *= 3.0f;  // maxima spread over lanes
    std::vector<OnlineSoftmax> lanes(kRowThreads);
    for (int l = 0; l < kRowThreads; ++l) lanes[l] = SoftmaxLane(l, z.data(), vocab);
    const std::vector<OnlineSoftmax> threads =
        DeviceBlockReduce(lanes, EmptySoftmax(), SoftmaxMergeOp{});
    std::vector<OnlineSoftmax> copy = lanes;
    const OnlineSoftmax model = BlockReduceModel(copy.data(), EmptySoftmax(), SoftmaxMergeOp{});
    for (int t = 0; t < kRowThreads; ++t) {
      ASSERT_EQ(threads[t].max, model.max) << "thread " << t;
      ASSERT_EQ(threads[t].sum, model.sum) << "thread " << t;
    }
    double expected = 0;  // and it is the row's softmax denominator
    const float mx = *std::max_element(z.begin(), z.end());
    for (float v : z) expected += std::exp(static_cast<double>(v) - mx);
    EXPECT_EQ(model.max, mx);
    EXPECT_NEAR(model.sum, expected, 1e-5 * expected);
  }
}

// ---- norms ------------------------------------------------------------------------------------

// Column counts below, between and past multiples of the block's kRowThreads lanes.
constexpr int kNormCols[] = {48, 300, 777};

TEST(KernelMathNorms, LayerNormForwardMatchesCpuNormAndAffine) {
  const int rows = 9;
  for (const int cols : kNormCols) {
    SCOPED_TRACE(cols);
    const Floats x = Random(rows * cols, 1, -2, 3), gamma = Random(cols, 2), beta = Random(cols, 3);
    Tensor xhat_cpu(rows, cols), rstd_cpu(rows, 1), y_cpu(rows, cols);
    cpu::LayerNormForward(ToTensor(x, rows, cols), xhat_cpu, rstd_cpu);
    cpu::Affine(xhat_cpu, ToTensor(gamma, 1, cols), ToTensor(beta, 1, cols), y_cpu);

    Floats y(rows * cols), mean(rows), rstd(rows), xhat(rows * cols);
    ForEachIndex(rows, [&](std::int64_t r) {
      LayerNormForwardBlock(r, x.data(), gamma.data(), beta.data(), cols, y.data(), mean.data(),
                            rstd.data());
    });
    for (int i = 0; i < rows * cols; ++i) xhat[i] = Xhat(x[i], {mean[i / cols], rstd[i / cols]});
    ExpectClose(y, y_cpu, kRel, "y");
    ExpectClose(rstd, rstd_cpu, kRel, "rstd");
    ExpectClose(xhat, xhat_cpu, kRel, "xhat recomputed from mean and rstd");
  }
}

// dx = residual + the gradient, with no residual, a residual, and the residual aliasing dx.
TEST(KernelMathNorms, LayerNormInputGradWithResidualMatchesCpu) {
  const int rows = 7;
  for (const int cols : kNormCols) {
    SCOPED_TRACE(cols);
    const Floats x = Random(rows * cols, 4, -2, 2), gamma = Random(cols, 5), beta(cols, 0.0f);
    const Floats dy = Random(rows * cols, 6), dx0 = Random(rows * cols, 7);
    Tensor xhat(rows, cols), rstd_cpu(rows, 1);
    cpu::LayerNormForward(ToTensor(x, rows, cols), xhat, rstd_cpu);
    Floats y(rows * cols), mean(rows), rstd(rows);
    ForEachIndex(rows, [&](std::int64_t r) {
      LayerNormForwardBlock(r, x.data(), gamma.data(), beta.data(), cols, y.data(), mean.data(),
                            rstd.data());
    });
    for (const bool residual : {false, true}) {
      Tensor dx_cpu = ToTensor(dx0, rows, cols);
      cpu::LayerNormInputGrad(ToTensor(dy, rows, cols), xhat, rstd_cpu, ToTensor(gamma, 1, cols),
                              dx_cpu, residual);
      Floats dx(rows * cols, -99.0f), in_place = dx0;
      ForEachIndex(rows, [&](std::int64_t r) {
        LayerNormInputGradBlock(r, dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                                residual ? dx0.data() : nullptr, cols, dx.data());
        if (residual) {
          LayerNormInputGradBlock(r, dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                                  in_place.data(), cols, in_place.data());
        }
      });
      ExpectClose(dx, dx_cpu, kRel, residual ? "residual + dx" : "dx");
      if (residual) {
        EXPECT_EQ(in_place, dx);
      }
    }
  }
}

// Rows past and not a multiple of the chunk, columns not a multiple of the tile.
TEST(KernelMathNorms, LayerNormWeightGradAddsTheCpuSums) {
  for (const int rows : {11, 64, 150}) {
    SCOPED_TRACE(rows);
    const int cols = 40;
    const Floats x = Random(rows * cols, 8, -2, 2), gamma(cols, 1.0f), beta(cols, 0.0f);
    const Floats dy = Random(rows * cols, 9);
    Floats y(rows * cols), mean(rows), rstd(rows);
    ForEachIndex(rows, [&](std::int64_t r) {
      LayerNormForwardBlock(r, x.data(), gamma.data(), beta.data(), cols, y.data(), mean.data(),
                            rstd.data());
    });
    Floats dgamma = Random(cols, 10), dbeta = Random(cols, 11);  // earlier microbatches' sums
    Tensor xhat(rows, cols), rstd_cpu(rows, 1);
    cpu::LayerNormForward(ToTensor(x, rows, cols), xhat, rstd_cpu);
    Tensor dgamma_cpu = ToTensor(dgamma, 1, cols), dbeta_cpu = ToTensor(dbeta, 1, cols);
    cpu::AffineWeightGrad(ToTensor(dy, rows, cols), xhat, dgamma_cpu, dbeta_cpu);
    ColReduceModel(AffineTerms{dy.data(), x.data(), mean.data(), rstd.data()}, rows, cols,
                   dgamma.data(), dbeta.data());
    ExpectClose(dgamma, dgamma_cpu, kRel, "dgamma");
    ExpectClose(dbeta, dbeta_cpu, kRel, "dbeta");
  }
}

// The conventions' RMSNorm in double: y = x / sqrt(mean(x^2) + 1e-5) * gamma.
// An independent reference from the convention (LlamaAgainstCpuEngine compares with the CPU
// engine's own kernel).
std::vector<double> RmsNormReference(const Floats& x, const Floats& gamma, int rows, int cols) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double squares = 0;
    for (int c = 0; c < cols; ++c) squares += double{x[r * cols + c]} * x[r * cols + c];
    const double rstd = 1.0 / std::sqrt(squares / cols + 1e-5);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * rstd * gamma[c];
  }
  return y;
}

struct RmsNormCase {
  int rows = 5, cols = 16;
  Floats x = Random(5 * 16, 12, -2, 2), gamma = Random(16, 13, 0.5f, 1.5f);
  Floats w = Random(5 * 16, 14);  // L = sum(w * y), so dy = w

  Floats Forward(Floats* rstd_out = nullptr) const {
    Floats y(x.size()), rstd(rows);
    ForEachIndex(rows, [&](std::int64_t r) {
      RmsNormForwardBlock(r, x.data(), gamma.data(), cols, y.data(), rstd.data());
    });
    if (rstd_out != nullptr) *rstd_out = rstd;
    return y;
  }
  double Loss() const {
    const Floats y = Forward();
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += double{w[i]} * y[i];
    return sum;
  }
};

// Central differences of L in `values` (a member of c), against `analytic`.
template <class Case>
void ExpectFiniteDifferences(Case& c, Floats& values, const Floats& analytic, float h,
                             const char* what) {
  ASSERT_EQ(values.size(), analytic.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = saved + h;
    const double up = c.Loss();
    values[i] = saved - h;
    const double down = c.Loss();
    values[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 * std::max(1.0, std::abs(numeric)))
        << what << "[" << i << "]";
  }
}

TEST(KernelMathNorms, RmsNormForwardMatchesTheConventions) {
  const RmsNormCase c;
  Floats rstd;
  const Floats y = c.Forward(&rstd);
  const std::vector<double> expected = RmsNormReference(c.x, c.gamma, c.rows, c.cols);
  ExpectClose(y, Floats(expected.begin(), expected.end()), kRel, "y");
  // A row of equal values v: rstd = 1/sqrt(v^2 + 1e-5).
  const Floats twos(8, 2.0f), ones(8, 1.0f);
  Floats y2(8), rstd2(1);
  RmsNormForwardBlock(0, twos.data(), ones.data(), 8, y2.data(), rstd2.data());
  EXPECT_FLOAT_EQ(rstd2[0], static_cast<float>(1.0 / std::sqrt(4.0 + 1e-5)));
}

TEST(KernelMathNorms, RmsNormGradientsMatchFiniteDifferences) {
  RmsNormCase c;
  Floats rstd;
  c.Forward(&rstd);
  Floats dx(c.x.size()), dgamma(c.cols, 0.0f);
  ForEachIndex(c.rows, [&](std::int64_t r) {
    RmsNormInputGradBlock(r, c.w.data(), c.x.data(), rstd.data(), c.gamma.data(), nullptr, c.cols,
                          dx.data());
  });
  ColReduceModel(RmsNormTerms{c.w.data(), c.x.data(), rstd.data()}, c.rows, c.cols, dgamma.data(),
                 nullptr);
  ExpectFiniteDifferences(c, c.x, dx, 1e-2f, "dx");
  ExpectFiniteDifferences(c, c.gamma, dgamma, 1e-2f, "dgamma");
}

TEST(KernelMathNorms, RmsNormGradientsAddTheResidual) {
  RmsNormCase c;
  Floats rstd;
  c.Forward(&rstd);
  Floats fresh(c.x.size()), summed = Random(c.x.size(), 15), dgamma = Random(c.cols, 16);
  const Floats before = summed, dgamma_before = dgamma;
  ForEachIndex(c.rows, [&](std::int64_t r) {
    RmsNormInputGradBlock(r, c.w.data(), c.x.data(), rstd.data(), c.gamma.data(), nullptr, c.cols,
                          fresh.data());
    RmsNormInputGradBlock(r, c.w.data(), c.x.data(), rstd.data(), c.gamma.data(), summed.data(),
                          c.cols, summed.data());
  });
  for (std::size_t i = 0; i < fresh.size(); ++i) EXPECT_FLOAT_EQ(summed[i], before[i] + fresh[i]);
  ColReduceModel(RmsNormTerms{c.w.data(), c.x.data(), rstd.data()}, c.rows, c.cols, dgamma.data(),
                 nullptr);
  for (int col = 0; col < c.cols; ++col) {  // dgamma adds sum_r w * x * rstd
    double sum = dgamma_before[col];
    for (int r = 0; r < c.rows; ++r)
      sum += double{c.w[r * c.cols + col]} * c.x[r * c.cols + col] * rstd[r];
    EXPECT_NEAR(dgamma[col], sum, 1e-5 * std::max(1.0, std::abs(sum)));
  }
}

// ---- activations ------------------------------------------------------------------------------

TEST(KernelMathActivations, GeluAndItsGradientMatchCpu) {
  const int n = 401;
  Floats x(n);
  for (int i = 0; i < n; ++i) x[i] = -8.0f + 16.0f * i / (n - 1);  // the tails and the bend
  const Floats dy = Random(n, 17);
  Tensor y_cpu(1, n), dx_cpu(1, n);
  cpu::GeluForward(ToTensor(x, 1, n), y_cpu);
  cpu::GeluInputGrad(ToTensor(dy, 1, n), ToTensor(x, 1, n), dx_cpu);
  Floats y(n), dx(n);
  ForEachIndex(n, [&](std::int64_t i) {
    GeluAt(i, x.data(), y.data());
    GeluInputGradAt(i, dy.data(), x.data(), dx.data());
  });
  ExpectClose(y, y_cpu, kRel, "gelu");
  ExpectClose(dx, dx_cpu, kRel, "gelu dx");
}

// At the magnitudes a diverging run reaches, both stay finite and equal to the CPU engine's (whose
// GELU was NaN below about -10 under -ffinite-math-only; the derivative here was NaN past 1.8e19).
TEST(KernelMathActivations, GeluAndItsGradientStayFiniteAtEveryMagnitude) {
  const Floats x = {-1e30f, -1e13f, -1e4f,  -100.0f, -20.5f, -10.5f,
                    10.5f,  20.5f,  100.0f, 1e4f,    1e13f,  1e30f};
  const int n = static_cast<int>(x.size());
  const Floats dy(n, 1.0f);
  Tensor y_cpu(1, n), dx_cpu(1, n);
  cpu::GeluForward(ToTensor(x, 1, n), y_cpu);
  cpu::GeluInputGrad(ToTensor(dy, 1, n), ToTensor(x, 1, n), dx_cpu);
  Floats y(n), dx(n);
  ForEachIndex(n, [&](std::int64_t i) {
    GeluAt(i, x.data(), y.data());
    GeluInputGradAt(i, dy.data(), x.data(), dx.data());
  });
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(y[i]) && std::isfinite(dx[i]))
        << "x " << x[i] << ": gelu " << y[i] << ", gelu' " << dx[i];
    EXPECT_NEAR(y[i], y_cpu[i], 1e-6 * std::max(1.0f, std::abs(x[i]))) << "x " << x[i];
    EXPECT_EQ(dx[i], x[i] > 0 ? 1.0f : 0.0f) << "x " << x[i];
    EXPECT_EQ(dx_cpu[i], dx[i]) << "x " << x[i];
  }
  // A NaN stays a NaN in both engines (a diverged run must not look healthy).
  const Floats nan_x = {NAN}, one = {1.0f};
  Floats nan_y(1), nan_dx(1);
  GeluAt(0, nan_x.data(), nan_y.data());
  GeluInputGradAt(0, one.data(), nan_x.data(), nan_dx.data());
  EXPECT_TRUE(std::isnan(nan_y[0]));
  EXPECT_TRUE(std::isnan(nan_dx[0]));
}

// Independent references from the convention (LlamaAgainstCpuEngine compares with the CPU
// engine's own kernels).
double Silu(double a) { return a / (1.0 + std::exp(-a)); }

struct SwiGluCase {
  int rows = 4, f = 6;
  Floats gate_up = Random(4 * 12, 18, -6, 6), w = Random(4 * 6, 19);
  Floats Forward() const {
    Floats y(rows * f);
    ForEachIndex(rows * f, [&](std::int64_t i) { SwiGluAt(i, gate_up.data(), f, y.data()); });
    return y;
  }
  double Loss() const {
    const Floats y = Forward();
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += double{w[i]} * y[i];
    return sum;
  }
};

TEST(KernelMathActivations, SwiGluMatchesTheConventions) {
  const SwiGluCase c;
  const Floats y = c.Forward();
  Floats expected(y.size());
  for (int r = 0; r < c.rows; ++r) {
    for (int k = 0; k < c.f; ++k) {  // [gate | up] column blocks
      const double gate = c.gate_up[r * 2 * c.f + k], up = c.gate_up[r * 2 * c.f + c.f + k];
      expected[r * c.f + k] = static_cast<float>(Silu(gate) * up);
    }
  }
  ExpectClose(y, expected, kRel, "swiglu");
}

TEST(KernelMathActivations, SwiGluInputGradMatchesFiniteDifferences) {
  SwiGluCase c;
  Floats dgate_up(c.gate_up.size(), -99.0f);
  ForEachIndex(c.rows * c.f, [&](std::int64_t i) {
    SwiGluInputGradAt(i, c.w.data(), c.gate_up.data(), c.f, dgate_up.data());
  });
  ExpectFiniteDifferences(c, c.gate_up, dgate_up, 1e-2f, "dgate_up");
}

// ---- RoPE -------------------------------------------------------------------------------------

// The conventions' rotation of one pair in long double, angle t * theta^(-2p/d).
// A long-double reference for any theta (LlamaAgainstCpuEngine compares with the CPU engine's
// cpu::Rope at theta 10000).
void RopeReference(Floats& qkv, const AttnDims& s, double theta) {
  const int half = s.head_dim / 2;
  for (int row = 0; row < s.batch * s.seq; ++row) {
    const long double t = row % s.seq;
    for (int head = 0; head < s.heads + s.kv_heads; ++head) {
      float* x = qkv.data() + static_cast<std::size_t>(row) * s.qkv_cols() + head * s.head_dim;
      for (int p = 0; p < half; ++p) {
        const long double angle =
            t * std::pow(static_cast<long double>(theta), -2.0L * p / s.head_dim);
        const long double a = x[p], b = x[p + half];
        x[p] = static_cast<float>(a * std::cos(angle) - b * std::sin(angle));
        x[p + half] = static_cast<float>(b * std::cos(angle) + a * std::sin(angle));
      }
    }
  }
}

void Rope(Floats& qkv, const AttnDims& s, float theta, bool inverse) {
  const std::int64_t pairs =
      std::int64_t{s.batch} * s.seq * (s.heads + s.kv_heads) * (s.head_dim / 2);
  ForEachIndex(pairs, [&](std::int64_t i) { RopeAt(i, qkv.data(), s, theta, inverse); });
}

TEST(KernelMathRope, PositionOneTurnsPairZeroByOneRadianAndLeavesValues) {
  const AttnDims s{1, 2, 1, 1, 4};  // q head, k head, v head of 4 columns each
  Floats qkv(2 * s.qkv_cols());
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = 1.0f;
  Rope(qkv, s, 10000.0f, false);
  for (int c = 0; c < s.qkv_cols(); ++c) EXPECT_EQ(qkv[c], 1.0f) << "position 0, column " << c;
  const float* row1 = qkv.data() + s.qkv_cols();
  for (int head = 0; head < 2; ++head) {  // pair (0, 2): angle 1; pair (1, 3): angle 1/100
    const float* x = row1 + head * 4;
    EXPECT_FLOAT_EQ(x[0], static_cast<float>(std::cos(1.0) - std::sin(1.0)));
    EXPECT_FLOAT_EQ(x[2], static_cast<float>(std::cos(1.0) + std::sin(1.0)));
    EXPECT_FLOAT_EQ(x[1], static_cast<float>(std::cos(0.01) - std::sin(0.01)));
    EXPECT_FLOAT_EQ(x[3], static_cast<float>(std::cos(0.01) + std::sin(0.01)));
  }
  for (int c = 8; c < 12; ++c) EXPECT_EQ(row1[c], 1.0f) << "v column " << c;
}

// Positions to 8191, where an angle computed in float is off by ~1e-4 rad.
TEST(KernelMathRope, MatchesTheConventionsAtLongPositions) {
  for (const float theta : {10000.0f, 500000.0f}) {
    const AttnDims s{1, 8192, 2, 1, 16};
    Floats qkv = Random(std::size_t{8192} * s.qkv_cols(), 20);
    Floats expected = qkv;
    Rope(qkv, s, theta, false);
    RopeReference(expected, s, theta);
    ExpectClose(qkv, expected, kRel, theta == 10000.0f ? "theta 1e4" : "theta 5e5");
  }
}

TEST(KernelMathRope, InverseUndoesForwardAndIsItsGradient) {
  const AttnDims s{2, 5, 4, 2, 8};
  const std::size_t size = std::size_t{10} * s.qkv_cols();
  const Floats x = Random(size, 21), w = Random(size, 22);
  Floats round_trip = x;
  Rope(round_trip, s, 10000.0f, false);
  Rope(round_trip, s, 10000.0f, true);
  ExpectClose(round_trip, x, 1e-6, "inverse(forward(x))");

  struct Case {
    const AttnDims& s;
    Floats x;
    const Floats& w;
    double Loss() const {  // sum(w * rope(x))
      Floats y = x;
      Rope(y, s, 10000.0f, false);
      double sum = 0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += double{w[i]} * y[i];
      return sum;
    }
  } c{s, x, w};
  Floats grad = w;  // the gradient of sum(w * rope(x)) is rope^-1(w)
  Rope(grad, s, 10000.0f, true);
  ExpectFiniteDifferences(c, c.x, grad, 0.25f, "drope");  // linear: no truncation error
}

// ---- attention --------------------------------------------------------------------------------

struct AttentionResult {
  Floats out, lse, dqkv;
};

AttentionResult KernelAttention(const Floats& qkv, const Floats& dout, const AttnDims& s) {
  const std::int64_t query_rows = std::int64_t{s.batch} * s.heads * s.seq;
  const std::int64_t key_rows = std::int64_t{s.batch} * s.kv_heads * s.seq;
  AttentionResult k{Floats(std::size_t{1} * s.batch * s.seq * s.out_cols()), Floats(query_rows),
                    Floats(qkv.size(), -99.0f)};  // every dqkv element must be overwritten
  Floats delta(query_rows);
  ForEachIndex(query_rows, [&](std::int64_t i) {
    AttentionForwardAt(i, qkv.data(), s, k.out.data(), k.lse.data());
  });
  ForEachIndex(query_rows, [&](std::int64_t i) {
    AttentionDeltaAt(i, dout.data(), k.out.data(), s, delta.data());
  });
  ForEachIndex(query_rows, [&](std::int64_t i) {
    AttentionDqAt(i, dout.data(), qkv.data(), k.lse.data(), delta.data(), s, k.dqkv.data());
  });
  ForEachIndex(key_rows, [&](std::int64_t i) {
    AttentionDkvAt(i, dout.data(), qkv.data(), k.lse.data(), delta.data(), s, k.dqkv.data());
  });
  return k;
}

// The CPU engine's multi-head attention (q, k, v in column blocks of heads * d).
AttentionResult CpuMultiHead(const Floats& qkv, const Floats& dout, const AttnDims& s) {
  const int rows = s.batch * s.seq, h = s.out_cols();
  Tensor probs(s.batch * s.heads * s.seq, s.seq), out(rows, h), dqkv(rows, 3 * h);
  const Tensor qkv_t = ToTensor(qkv, rows, 3 * h);
  cpu::AttentionForward(qkv_t, s.batch, s.seq, s.heads, s.heads, probs, out);
  cpu::AttentionInputGrad(ToTensor(dout, rows, h), qkv_t, probs, s.batch, s.seq, s.heads, s.heads,
                          dqkv);
  return {ToFloats(out), {}, ToFloats(dqkv)};
}

// The log-sum-exp of every query row's scaled scores, in double, layout (b, j, r).
Floats LseReference(const Floats& qkv, const AttnDims& s) {
  Floats lse;
  const int d = s.head_dim, ld = s.qkv_cols();
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < s.heads; ++j) {
      for (int r = 0; r < s.seq; ++r) {
        std::vector<double> scores;
        for (int c = 0; c <= r; ++c) {
          double dot = 0;
          for (int t = 0; t < d; ++t) {
            dot += double{qkv[(b * s.seq + r) * ld + j * d + t]} *
                   qkv[(b * s.seq + c) * ld + (s.heads + j / s.group()) * d + t];
          }
          scores.push_back(dot / std::sqrt(double(d)));
        }
        const double mx = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double x : scores) sum += std::exp(x - mx);
        lse.push_back(static_cast<float>(mx + std::log(sum)));
      }
    }
  }
  return lse;
}

TEST(KernelMathAttention, MultiHeadMatchesCpu) {
  const AttnDims s{2, 9, 4, 4, 8};
  const int rows = s.batch * s.seq;
  const Floats qkv = Random(std::size_t{1} * rows * s.qkv_cols(), 23, -1.5f, 1.5f);
  const Floats dout = Random(std::size_t{1} * rows * s.out_cols(), 24);
  const AttentionResult k = KernelAttention(qkv, dout, s);
  const AttentionResult cpu = CpuMultiHead(qkv, dout, s);
  ExpectClose(k.out, cpu.out, kRel, "out");
  ExpectClose(k.dqkv, cpu.dqkv, kRel, "dqkv");
  ExpectClose(k.lse, LseReference(qkv, s), kRel, "lse");
  // The first query row sees only key 0: its output is v_0 and its lse its one scaled score.
  for (int t = 0; t < s.head_dim; ++t) EXPECT_EQ(k.out[t], qkv[2 * s.out_cols() + t]);
}

// Grouped-query attention as multi-head attention: kv head g repeated for each query head of its
// group, run through the CPU kernel, and the repeated heads' dk, dv summed back onto g.
AttentionResult GroupedQueryReference(const Floats& qkv, const Floats& dout, const AttnDims& s) {
  const int rows = s.batch * s.seq, d = s.head_dim, h = s.out_cols();
  Floats mha(std::size_t{1} * rows * 3 * h);
  for (int r = 0; r < rows; ++r) {
    const float* in = qkv.data() + std::size_t{1} * r * s.qkv_cols();
    float* row = mha.data() + std::size_t{1} * r * 3 * h;
    for (int j = 0; j < s.heads; ++j) {
      const int g = j / s.group();
      std::copy_n(in + j * d, d, row + j * d);
      std::copy_n(in + (s.heads + g) * d, d, row + h + j * d);
      std::copy_n(in + (s.heads + s.kv_heads + g) * d, d, row + 2 * h + j * d);
    }
  }
  AttentionResult ref = CpuMultiHead(mha, dout, {s.batch, s.seq, s.heads, s.heads, d});
  Floats dqkv(qkv.size(), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* in = ref.dqkv.data() + std::size_t{1} * r * 3 * h;
    float* row = dqkv.data() + std::size_t{1} * r * s.qkv_cols();
    for (int j = 0; j < s.heads; ++j) {
      const int g = j / s.group();
      for (int t = 0; t < d; ++t) {
        row[j * d + t] = in[j * d + t];
        row[(s.heads + g) * d + t] += in[h + j * d + t];
        row[(s.heads + s.kv_heads + g) * d + t] += in[2 * h + j * d + t];
      }
    }
  }
  ref.dqkv = std::move(dqkv);
  return ref;
}

TEST(KernelMathAttention, GroupedQueryMatchesRepeatedHeadsOnCpu) {
  for (const int kv_heads : {2, 1}) {
    SCOPED_TRACE(kv_heads);
    const AttnDims s{2, 7, 4, kv_heads, 8};
    const int rows = s.batch * s.seq;
    const Floats qkv = Random(std::size_t{1} * rows * s.qkv_cols(), 25, -1.5f, 1.5f);
    const Floats dout = Random(std::size_t{1} * rows * s.out_cols(), 26);
    const AttentionResult k = KernelAttention(qkv, dout, s);
    const AttentionResult ref = GroupedQueryReference(qkv, dout, s);
    ExpectClose(k.out, ref.out, kRel, "out");
    ExpectClose(k.dqkv, ref.dqkv, kRel, "dqkv");
    ExpectClose(k.lse, LseReference(qkv, s), kRel, "lse");
  }
}

// ---- embedding --------------------------------------------------------------------------------

// The CPU engine tests' small GPT decoder (tests/cpu/small_specs.h), one block.
DecoderSpec SmallSpec() {
  DecoderSpec spec = cpu::test_specs::SmallGptSpec(/*tied=*/false);
  spec.layers = 1;
  return spec;
}

TEST(KernelMathEmbedding, ChainsLinkEachTokensPositionsInOrder) {
  const std::vector<std::int32_t> tokens{3, 1, 3, 3, 1, 2};
  std::vector<std::int32_t> next(6), leader(6);
  ForEachIndex(6, [&](std::int64_t t) {
    EmbeddingChainAt(t, tokens.data(), 6, next.data(), leader.data());
  });
  EXPECT_EQ(next, (std::vector<std::int32_t>{2, 4, 3, -1, -1, -1}));
  EXPECT_EQ(leader, (std::vector<std::int32_t>{1, 1, 0, 0, 0, 1}));
}

TEST(KernelMathEmbedding, ForwardAndWeightGradMatchTheCpuModule) {
  const DecoderSpec spec = SmallSpec();
  auto module = std::move(cpu::MakeModule(spec, "embedding", 5).value());
  cpu::Param& wte = module->params()[0];
  cpu::Param& wpe = module->params()[1];
  ASSERT_EQ(wte.name, "embedding.wte");
  ASSERT_EQ(wpe.name, "embedding.wpe");
  const Batch batch = MakeBatch(spec.vocab, 3, 3, 8, 1.0f);  // 24 tokens of 11: ids repeat
  const int n = batch.num_tokens(), h = spec.hidden;
  cpu::Cache cache;
  const Tensor y_cpu = module->Forward(batch, Tensor(), cache);
  Floats y(std::size_t{1} * n * h);
  ForEachIndex(std::int64_t{n} * h, [&](std::int64_t i) {
    EmbeddingAt(i, batch.tokens.data(), wte.value.data(), wpe.value.data(), batch.seq, h, y.data());
  });
  ExpectClose(y, y_cpu, kRel, "y");

  const Floats dy = Random(y.size(), 27);
  Floats dwte = Random(wte.grad.size(), 28), dwpe = Random(wpe.grad.size(), 29);
  std::copy(dwte.begin(), dwte.end(), wte.grad.data());  // earlier microbatches' sums
  std::copy(dwpe.begin(), dwpe.end(), wpe.grad.data());
  module->InputGrad(batch, ToTensor(dy, n, h), cache);
  module->WeightGrad(batch, cache);
  std::vector<std::int32_t> next(n), leader(n);
  ForEachIndex(n, [&](std::int64_t t) {
    EmbeddingChainAt(t, batch.tokens.data(), n, next.data(), leader.data());
  });
  ForEachIndex(std::int64_t{n} * h, [&](std::int64_t i) {
    EmbeddingWteGradAt(i, dy.data(), batch.tokens.data(), h, next.data(), leader.data(),
                       dwte.data());
  });
  ForEachIndex(std::int64_t{batch.seq} * h, [&](std::int64_t i) {
    EmbeddingWpeGradAt(i, dy.data(), batch.sequences, batch.seq, h, dwpe.data());
  });
  // Same additions in the same order as the CPU module: equal, not merely close.
  EXPECT_EQ(dwte, ToFloats(wte.grad));
  EXPECT_EQ(dwpe, ToFloats(wpe.grad));
}

TEST(KernelMathEmbedding, WithoutPositionsIsTheTokenRow) {
  const std::vector<std::int32_t> tokens{2, 0, 2};
  const Floats wte{0, 1, 10, 11, 20, 21};  // 3 x 2
  Floats y(6);
  ForEachIndex(6, [&](std::int64_t i) {
    EmbeddingAt(i, tokens.data(), wte.data(), nullptr, 3, 2, y.data());
  });
  EXPECT_EQ(y, (Floats{20, 21, 0, 1, 20, 21}));
}

// ---- loss -------------------------------------------------------------------------------------

// Vocabularies below and past the block's lanes (empty lanes; several columns a lane), the
// gradient in place in the same kernel as the loss, as the loss module's forward runs it.
TEST(KernelMathLoss, CrossEntropyAndItsGradientMatchTheCpuLossModule) {
  for (const int vocab : {13, 1001}) {
    SCOPED_TRACE(vocab);
    DecoderSpec spec = SmallSpec();
    spec.vocab = vocab;
    const int rows = 6;
    Batch batch;
    batch.sequences = 2;
    batch.seq = 3;
    batch.tokens.assign(rows, 0);
    batch.targets = {0, 12, 5, 7, 7, 3};
    batch.loss_scale = 1.0f / rows;
    Floats logits = Random(std::size_t{1} * rows * vocab, 30, -4, 4);
    logits[5 * vocab + 3] = -150.0f;  // p(target) underflows: the 1e-30 clamp decides the loss
    logits[5 * vocab + 4] = 150.0f;
    logits[2 * vocab + vocab - 1] = 9.0f;  // the max in the last column of a row

    auto module = std::move(cpu::MakeModule(spec, "loss", 0).value());
    cpu::Cache cache;
    module->Forward(batch, ToTensor(logits, rows, vocab), cache);
    const Tensor dlogits_cpu = module->InputGrad(batch, Tensor(), cache);

    Floats row_loss(rows), loss_only(rows), dlogits = logits;  // in place, as the engine calls it
    ForEachIndex(rows, [&](std::int64_t r) {
      CrossEntropyBlock(r, logits.data(), batch.targets.data(), vocab, vocab, batch.loss_scale,
                        loss_only.data(), nullptr);
      CrossEntropyBlock(r, dlogits.data(), batch.targets.data(), vocab, vocab, batch.loss_scale,
                        row_loss.data(), dlogits.data());
    });
    EXPECT_EQ(loss_only, row_loss);
    // With the bf16 output: the same fp32 gradient, and its round-to-nearest-even bits.
    Floats with_bf16 = logits;
    std::vector<std::uint16_t> bf16(logits.size());
    ForEachIndex(rows, [&](std::int64_t r) {
      CrossEntropyBlock(r, with_bf16.data(), batch.targets.data(), vocab, vocab, batch.loss_scale,
                        loss_only.data(), with_bf16.data(), bf16.data());
    });
    EXPECT_EQ(with_bf16, dlogits);
    for (std::size_t i = 0; i < bf16.size(); ++i) {
      ASSERT_EQ(bf16[i], Bf16Bits(dlogits[i])) << i;
      float back = 0;
      const std::uint32_t bits = static_cast<std::uint32_t>(bf16[i]) << 16;
      std::memcpy(&back, &bits, sizeof back);
      ASSERT_LE(std::abs(back - dlogits[i]), std::abs(dlogits[i]) * 0x1p-8f) << i;
    }
    double total = 0;
    for (float l : row_loss) total += l;
    EXPECT_NEAR(total / rows, cache.loss, kRel * cache.loss);
    EXPECT_FLOAT_EQ(row_loss[5], static_cast<float>(-std::log(1e-30)));
    ExpectClose(dlogits, dlogits_cpu, kRel, "dlogits");
  }
}

// The engine's logits rows are padded (model.h's LogitsCols: GPT-2's 50257 columns to 50304):
// the padding never enters the softmax even where it holds the largest values, and the gradient
// (fp32 and bf16) is zero there; the real columns are the unpadded rows' bits.
TEST(KernelMathLoss, PaddedRowsGiveTheUnpaddedLossAndAZeroGradientInThePadding) {
  const int vocab = 1001, ld = 1024, rows = 4;
  const std::int32_t targets[rows] = {0, 1000, 17, 640};
  const Floats logits = Random(std::size_t{1} * rows * vocab, 31, -4, 4);
  Floats padded(std::size_t{1} * rows * ld, 1e30f);  // would win every softmax if it were read
  for (int r = 0; r < rows; ++r) {
    std::copy_n(logits.begin() + r * vocab, vocab, padded.begin() + r * ld);
  }
  Floats loss(rows), padded_loss(rows), dlogits = logits, dpadded = padded;
  std::vector<std::uint16_t> bf16(logits.size()), padded_bf16(padded.size(), 0xffff);
  ForEachIndex(rows, [&](std::int64_t r) {
    CrossEntropyBlock(r, dlogits.data(), targets, vocab, vocab, 0.5f, loss.data(), dlogits.data(),
                      bf16.data());
    CrossEntropyBlock(r, dpadded.data(), targets, vocab, ld, 0.5f, padded_loss.data(),
                      dpadded.data(), padded_bf16.data());
  });
  EXPECT_EQ(padded_loss, loss);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < ld; ++c) {
      const std::size_t at = std::size_t{1} * r * ld + c;
      if (c < vocab) {
        ASSERT_EQ(dpadded[at], dlogits[std::size_t{1} * r * vocab + c]) << r << "," << c;
        ASSERT_EQ(padded_bf16[at], bf16[std::size_t{1} * r * vocab + c]) << r << "," << c;
      } else {
        ASSERT_EQ(dpadded[at], 0.0f) << r << "," << c;
        ASSERT_EQ(padded_bf16[at], 0) << r << "," << c;
      }
    }
  }
}

// A row kernel's bf16 copy of its output: every column once, over all lanes, each the value's
// round-to-nearest-even bits (ties to even, NaN kept a NaN).
TEST(KernelMathBf16, Bf16LaneRoundsEveryColumnOfTheRow) {
  for (const int cols : {1, 255, 256, 777}) {
    Floats y = Random(cols, 40, -3, 3);
    y[0] = 1.0f + 0x1p-8f;  // a tie between two bf16 values: to the even one, 1.0
    std::vector<std::uint16_t> bits(cols, 0xdead);
    for (int l = 0; l < kRowThreads; ++l) Bf16Lane(l, y.data(), cols, bits.data());
    EXPECT_EQ(bits[0], 0x3f80) << cols;
    for (int c = 0; c < cols; ++c) ASSERT_EQ(bits[c], Bf16Bits(y[c])) << cols << " " << c;
  }
  EXPECT_EQ(Bf16Bits(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);  // the other tie: up, to even
  EXPECT_EQ(Bf16Bits(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
}

TEST(KernelMathLoss, OnlineSoftmaxMergeIsCommutativeAndSkipsEmptyLanes) {
  const OnlineSoftmax a{2.0f, 3.5}, b{-1.0f, 7.25}, empty = EmptySoftmax();
  const OnlineSoftmax ab = SoftmaxMergeOp{}(a, b), ba = SoftmaxMergeOp{}(b, a);
  EXPECT_EQ(ab.max, 2.0f);
  EXPECT_EQ(ab.sum, ba.sum);
  EXPECT_NEAR(ab.sum, 3.5 + 7.25 * std::exp(-3.0), 1e-6);
  EXPECT_EQ(SoftmaxMergeOp{}(empty, a).sum, a.sum);
  EXPECT_EQ(SoftmaxMergeOp{}(a, empty).max, a.max);
  EXPECT_EQ(SoftmaxMergeOp{}(empty, empty).sum, 0.0);
}

// ---- elementwise ------------------------------------------------------------------------------

TEST(KernelMathElementwise, BiasAndItsGradientMatchCpuLinear) {
  const int n = 6, in = 5, out = 4;
  const Tensor x = ToTensor(Random(n * in, 31), n, in), w = ToTensor(Random(out * in, 32), out, in);
  const Floats bias = Random(out, 33);
  Tensor y_cpu(n, out), y_nobias(n, out);
  cpu::LinearForward(x, w, nullptr, y_nobias);
  const Tensor bias_t = ToTensor(bias, 1, out);
  cpu::LinearForward(x, w, &bias_t, y_cpu);
  Floats y = ToFloats(y_nobias);
  ForEachIndex(n * out, [&](std::int64_t i) { AddBiasAt(i, bias.data(), out, y.data()); });
  ExpectClose(y, y_cpu, kRel, "x W^T + bias");

  // The gradient over rows past two chunks and columns past a tile.
  const int rows = 2 * kColChunkRows + 5, cols = kColTile + 7;
  const Floats dy = Random(rows * cols, 34), xs = Random(rows * in, 36);
  Floats dbias = Random(cols, 35);
  Tensor dw(cols, in), dbias_cpu = ToTensor(dbias, 1, cols);
  cpu::LinearWeightGrad(ToTensor(dy, rows, cols), ToTensor(xs, rows, in), dw, &dbias_cpu);
  ColReduceModel(BiasTerms{dy.data()}, rows, cols, dbias.data(), nullptr);
  ExpectClose(dbias, dbias_cpu, kRel, "dbias");
}

TEST(KernelMathElementwise, AddAndAxpy) {
  const Floats a{1, 2, 3}, b{0.5f, -2, 10};
  Floats y(3);
  ForEachIndex(3, [&](std::int64_t i) { AddAt(i, a.data(), b.data(), y.data()); });
  EXPECT_EQ(y, (Floats{1.5f, 0, 13}));
  ForEachIndex(3, [&](std::int64_t i) { AxpyAt(i, -2.0f, a.data(), y.data()); });
  EXPECT_EQ(y, (Floats{-0.5f, -4, 7}));
}

float SumByThreads(const Floats& x) {
  std::vector<double> partials(kSumThreads);
  for (int i = 0; i < kSumThreads; ++i) partials[i] = SumPartialAt(i, x.data(), x.size());
  return SumOfPartials(partials.data());
}

TEST(KernelMathElementwise, SumOfOneToNIsExact) {
  for (const int n : {0, 1, 100, kSumThreads + 3, 100000}) {
    Floats x(n);
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i + 1);
    EXPECT_EQ(SumByThreads(x), static_cast<float>(0.5 * n * (n + 1.0))) << n;
  }
}

// ---- bf16 -------------------------------------------------------------------------------------

TEST(KernelMathBf16, RoundsToNearestEven) {
  EXPECT_EQ(Bf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(Bf16Bits(-2.0f), 0xc000);
  EXPECT_EQ(Bf16Bits(1.0f + 0x1p-8f), 0x3f80);                     // tie: down to the even 0x3f80
  EXPECT_EQ(Bf16Bits(1.0f + 3 * 0x1p-8f), 0x3f82);                 // tie: up to the even 0x3f82
  EXPECT_EQ(Bf16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);          // past the tie: up
  EXPECT_EQ(Bf16Bits(1.0f + 0x1p-8f - 0x1p-20f), 0x3f80);          // short of the tie: down
  EXPECT_EQ(Bf16Bits(std::numeric_limits<float>::max()), 0x7f80);  // past bf16's largest: inf
  EXPECT_EQ(Bf16Bits(-INFINITY), 0xff80);
  EXPECT_EQ(Bf16Bits(-0.0f), 0x8000);
  EXPECT_EQ(Bf16Bits(NAN), 0x7fff);
  EXPECT_EQ(Bf16Bits(0x1p-133f), 0x0001);  // subnormal kept
}

// ---- AdamW ------------------------------------------------------------------------------------

TEST(KernelMathAdamW, FindSliceSkipsEmptyTensors) {
  // Tensors of 0, 3, 0, 0, 2 and 0 elements: indices 0..2 -> tensor 1, 3..4 -> tensor 4.
  std::vector<AdamWSlice> slices;
  for (const std::int64_t begin : {0, 0, 3, 3, 3, 5}) slices.push_back({.begin = begin});
  const int count = static_cast<int>(slices.size());
  EXPECT_EQ(FindSlice(slices.data(), count, 0), 1);
  EXPECT_EQ(FindSlice(slices.data(), count, 2), 1);
  EXPECT_EQ(FindSlice(slices.data(), count, 3), 4);
  EXPECT_EQ(FindSlice(slices.data(), count, 4), 4);
}

TEST(KernelMathAdamW, MultiTensorStepsMatchParamSet) {
  const DecoderSpec spec = SmallSpec();
  cpu::ModuleChain chain;
  for (const char* layer : {"block0.mlp", "final_norm"}) {
    chain.Add(std::move(cpu::MakeModule(spec, layer, 9).value()));
  }
  cpu::ParamSet params;
  params.Add(chain);
  params.AllocateOptimizerState();
  // The kernel's copies: value, m, v per tensor, with an empty tensor first and between.
  std::vector<Floats> value, m, v, grad;
  std::vector<AdamWSlice> slices;
  std::int64_t total = 0;
  auto add_slice = [&](std::size_t n, bool decay) {
    value.emplace_back(n);
    m.emplace_back(n);
    v.emplace_back(n);
    grad.emplace_back(n);
    slices.push_back({nullptr, nullptr, nullptr, nullptr, total, std::int64_t(n), decay ? 1 : 0});
    total += std::int64_t(n);
  };
  add_slice(0, true);
  bool decays = false;
  for (auto& [name, entry] : params.entries()) {
    const cpu::Param& p = *entry.copies.front();
    add_slice(p.value.size(), p.decay);
    value.back() = ToFloats(p.value);
    decays |= p.decay;
    if (name == "block0.mlp.fc.bias") add_slice(0, false);
  }
  ASSERT_TRUE(decays);
  for (std::size_t k = 0; k < slices.size(); ++k) {  // the vectors no longer move
    slices[k].param = value[k].data();
    slices[k].m = m[k].data();
    slices[k].v = v[k].data();
  }
  const cpu::AdamWConfig config{.lr = 1e-2, .weight_decay = 0.1};
  for (int step = 1; step <= 3; ++step) {
    std::uint32_t seed = 100 * step;
    for (std::size_t k = 0, e = 0; k < slices.size(); ++k) {
      if (slices[k].n == 0) continue;
      grad[k] = Random(grad[k].size(), ++seed);
      slices[k].grad = grad[k].data();
      auto entry = std::next(params.entries().begin(), static_cast<long>(e++));
      std::copy(grad[k].begin(), grad[k].end(), entry->second.copies.front()->grad.data());
    }
    params.Step(config, step);
    const AdamWScalars s = MakeAdamWScalars(config.lr, config.beta1, config.beta2, config.eps,
                                            config.weight_decay, step);
    ForEachIndex(total, [&](std::int64_t i) {
      AdamWAt(i, slices.data(), static_cast<int>(slices.size()), s);
    });
    std::size_t k = 0;
    for (auto& [name, entry] : params.entries()) {
      while (slices[k].n == 0) ++k;
      SCOPED_TRACE(name + " step " + std::to_string(step));
      ExpectClose(value[k], entry.copies.front()->value, 1e-6, "param");
      ExpectClose(m[k], entry.m, 1e-6, "m");
      ExpectClose(v[k], entry.v, 1e-6, "v");
      ++k;
    }
  }
}

// ---- the Llama block against the CPU engine's own kernels (backends/cpu/tensor.h) -------------

// RMSNorm forward, input gradient (overwriting and accumulating) and weight gradient.
TEST(LlamaAgainstCpuEngine, RmsNorm) {
  for (const int cols : kNormCols) {
    SCOPED_TRACE(cols);
    const int rows = 70;
    const Floats x = Random(rows * cols, 31), gamma = Random(cols, 32, 0.5f, 1.5f),
                 dy = Random(rows * cols, 33), base = Random(rows * cols, 34);
    Floats y(x.size()), rstd(rows), dx = base, dgamma = Random(cols, 35);
    ForEachIndex(rows, [&](std::int64_t r) {
      RmsNormForwardBlock(r, x.data(), gamma.data(), cols, y.data(), rstd.data());
    });
    ForEachIndex(rows, [&](std::int64_t r) {
      RmsNormInputGradBlock(r, dy.data(), x.data(), rstd.data(), gamma.data(), dx.data(), cols,
                            dx.data());
    });
    const Floats dgamma_before = dgamma;
    ColReduceModel(RmsNormTerms{dy.data(), x.data(), rstd.data()}, rows, cols, dgamma.data(),
                   nullptr);
    Tensor xhat(rows, cols), cpu_rstd(rows, 1), cpu_y(rows, cols),
        cpu_dx = ToTensor(base, rows, cols);
    Tensor cpu_dgamma = ToTensor(dgamma_before, 1, cols);
    const Tensor g = ToTensor(gamma, 1, cols), d = ToTensor(dy, rows, cols);
    cpu::RmsNormForward(ToTensor(x, rows, cols), g, xhat, cpu_rstd, cpu_y);
    cpu::RmsNormInputGrad(d, xhat, cpu_rstd, g, cpu_dx, true);
    cpu::RmsNormWeightGrad(d, xhat, cpu_dgamma);
    ExpectClose(y, cpu_y, kRel, "y");
    ExpectClose(rstd, cpu_rstd, kRel, "rstd");
    ExpectClose(dx, cpu_dx, kRel, "dx");
    ExpectClose(dgamma, cpu_dgamma, kRel, "dgamma");
  }
}

// RoPE forward and inverse on q and k of a grouped-query qkv, theta 10000, v untouched.
TEST(LlamaAgainstCpuEngine, Rope) {
  const AttnDims s{2, 9, 4, 2, 6};
  const int rows = s.batch * s.seq;
  for (const bool inverse : {false, true}) {
    Floats qkv = Random(static_cast<std::size_t>(rows) * s.qkv_cols(), inverse ? 41 : 42);
    Tensor cpu_qkv = ToTensor(qkv, rows, s.qkv_cols());
    ForEachIndex(std::int64_t{rows} * (s.heads + s.kv_heads) * (s.head_dim / 2),
                 [&](std::int64_t i) { RopeAt(i, qkv.data(), s, 10000.0f, inverse); });
    cpu::Rope(cpu_qkv, s.seq, s.heads, s.kv_heads, inverse);
    ExpectClose(qkv, cpu_qkv, kRel, inverse ? "rope inverse" : "rope");
  }
}

TEST(LlamaAgainstCpuEngine, SwiGlu) {
  const int rows = 5, f = 7;
  const Floats gate_up = Random(rows * 2 * f, 51, -5, 5), dy = Random(rows * f, 52);
  Floats y(rows * f), dgate_up(gate_up.size(), -99.0f);
  ForEachIndex(rows * f, [&](std::int64_t i) { SwiGluAt(i, gate_up.data(), f, y.data()); });
  ForEachIndex(rows * f, [&](std::int64_t i) {
    SwiGluInputGradAt(i, dy.data(), gate_up.data(), f, dgate_up.data());
  });
  Tensor cpu_y(rows, f), cpu_dgu(rows, 2 * f);
  const Tensor gu = ToTensor(gate_up, rows, 2 * f);
  cpu::SwigluForward(gu, cpu_y);
  cpu::SwigluInputGrad(ToTensor(dy, rows, f), gu, cpu_dgu);
  ExpectClose(y, cpu_y, kRel, "y");
  ExpectClose(dgate_up, cpu_dgu, kRel, "dgate_up");
}

// Grouped-query attention (4 query heads on 2 and on 1 kv heads) against the CPU engine's.
TEST(LlamaAgainstCpuEngine, GroupedQueryAttention) {
  for (const int kv : {2, 1}) {
    const AttnDims s{2, 7, 4, kv, 4};
    const int rows = s.batch * s.seq;
    const Floats qkv = Random(static_cast<std::size_t>(rows) * s.qkv_cols(), 60 + kv),
                 dout = Random(static_cast<std::size_t>(rows) * s.out_cols(), 70 + kv);
    const AttentionResult k = KernelAttention(qkv, dout, s);
    Tensor probs(s.batch * s.heads * s.seq, s.seq), out(rows, s.out_cols()),
        dqkv(rows, s.qkv_cols());
    const Tensor qkv_t = ToTensor(qkv, rows, s.qkv_cols());
    cpu::AttentionForward(qkv_t, s.batch, s.seq, s.heads, s.kv_heads, probs, out);
    cpu::AttentionInputGrad(ToTensor(dout, rows, s.out_cols()), qkv_t, probs, s.batch, s.seq,
                            s.heads, s.kv_heads, dqkv);
    ExpectClose(k.out, out, kRel, "out");
    ExpectClose(k.dqkv, dqkv, kRel, "dqkv");
  }
}

}  // namespace
}  // namespace pipette::cuda::math
