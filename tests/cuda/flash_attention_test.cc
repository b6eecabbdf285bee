// The tiled attention algorithm of the tensor-core kernels (backends/cuda/flash_attention_math.h)
// run on the host, against the CPU engine's attention (cpu::AttentionForward / InputGrad) on the
// same inputs: in fp32 (no rounding anywhere: 1e-5, as the exact kernels) and in the bf16 mode of
// the device (tile operands rounded to bf16), over sequences shorter than a tile, not a multiple
// of it, several tiles, multi-head and grouped-query heads (2:1, 4:1), head_dim 64 and 128. Also
// bf16 rounding itself and the FLOP count. No GPU needed (label unit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/tensor.h"
#include "cpu_compare_util.h"
#include "cuda/flash_attention_math.h"

namespace pipette::cuda::flash {
namespace {

using cpu::Tensor;
using test_util::ExpectClose;
using test_util::Floats;
using test_util::Random;
using test_util::ToTensor;

struct Result {
  Floats out, lse, dqkv;
};

// The CPU engine's attention and the log-sum-exp of each query row from its probabilities:
// lse_r = s_r0 - log p_r0, s_r0 = scale q_r . k_0 (key 0 is visible to every row), in double.
Result Cpu(const Floats& qkv, const Floats& dout, const AttnDims& s) {
  const int rows = s.batch * s.seq;
  Tensor probs(s.batch * s.heads * s.seq, s.seq), out(rows, s.out_cols()), dqkv(rows, s.qkv_cols());
  const Tensor qkv_t = ToTensor(qkv, rows, s.qkv_cols());
  cpu::AttentionForward(qkv_t, s.batch, s.seq, s.heads, s.kv_heads, probs, out);
  cpu::AttentionInputGrad(ToTensor(dout, rows, s.out_cols()), qkv_t, probs, s.batch, s.seq, s.heads,
                          s.kv_heads, dqkv);
  Floats lse;
  const int d = s.head_dim, ld = s.qkv_cols();
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < s.heads; ++j) {
      for (int r = 0; r < s.seq; ++r) {
        const std::size_t q = std::size_t{1} * (b * s.seq + r) * ld + j * d;
        const std::size_t k = std::size_t{1} * b * s.seq * ld + (s.heads + j / s.group()) * d;
        double dot = 0;
        for (int t = 0; t < d; ++t) dot += double{qkv[q + t]} * qkv[k + t];
        const double p0 = probs.row((b * s.heads + j) * s.seq + r)[0];
        lse.push_back(static_cast<float>(dot / std::sqrt(double(d)) - std::log(p0)));
      }
    }
  }
  return {Floats(out.data(), out.data() + out.size()), lse,
          Floats(dqkv.data(), dqkv.data() + dqkv.size())};
}

// The tiled algorithm on the host, forward then backward.
Result Tiled(const Floats& qkv, const Floats& dout, const AttnDims& s, bool bf16) {
  const std::size_t query_rows = std::size_t{1} * s.batch * s.heads * s.seq;
  Result r{Floats(dout.size(), -99.0f), Floats(query_rows, -99.0f),
           Floats(qkv.size(), -99.0f)};  // every element must be written
  Floats delta(query_rows);
  if (s.head_dim == 64) {
    ForwardOnHost<64>(qkv.data(), s, bf16, r.out.data(), r.lse.data());
    InputGradOnHost<64>(dout.data(), qkv.data(), r.out.data(), r.lse.data(), s, bf16, r.dqkv.data(),
                        delta.data());
  } else {
    ForwardOnHost<128>(qkv.data(), s, bf16, r.out.data(), r.lse.data());
    InputGradOnHost<128>(dout.data(), qkv.data(), r.out.data(), r.lse.data(), s, bf16,
                         r.dqkv.data(), delta.data());
  }
  return r;
}

// The largest |actual - expected| over the largest |expected|.
double MaxRelError(const Floats& actual, const Floats& expected) {
  double err = 0, mx = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    err = std::max(err, double{std::abs(actual[i] - expected[i])});
    mx = std::max(mx, double{std::abs(expected[i])});
  }
  return err / mx;
}

Floats RoundedToBf16(Floats v) {
  for (float& x : v) x = RoundToBf16(x);
  return v;
}

// The shapes every test runs: seq shorter than a tile, not a multiple of it, several tiles; MHA and
// grouped-query 2:1 and 4:1; head_dim 64 and 128; one to three sequences.
const AttnDims kShapes[] = {
    {2, 150, 4, 1, 64},   // 4:1, three tiles, the last partial
    {1, 40, 4, 2, 128},   // 2:1, shorter than a tile
    {3, 65, 2, 2, 128},   // MHA, one row past a tile
    {2, 128, 4, 4, 64},   // MHA, exactly two tiles
    {1, 200, 8, 2, 128},  // 4:1, four tiles
};

struct Inputs {
  Floats qkv, dout;
};
Inputs InputsFor(const AttnDims& s, std::uint32_t seed) {
  const std::size_t rows = std::size_t{1} * s.batch * s.seq;
  return {Random(rows * s.qkv_cols(), seed, -1.5f, 1.5f), Random(rows * s.out_cols(), seed + 1)};
}

// fp32: the same arithmetic as the CPU engine in another order. dk and dv sum up to
// group * seq = 800 terms here; fp32 rounding of such sums is ~sqrt(800) * 2^-24 ~ 2e-6 of the
// terms' magnitude, so 2e-5 (as kernel_math_test's 1e-5 for its 7 to 9 rows, scaled) is tight:
// bf16 operands would miss it by 100x.
constexpr double kFp32Rel = 2e-5;

TEST(FlashAttentionHost, Fp32MatchesTheCpuEngine) {
  std::uint32_t seed = 100;
  for (const AttnDims& s : kShapes) {
    SCOPED_TRACE(testing::Message() << "batch " << s.batch << " seq " << s.seq << " heads "
                                    << s.heads << "/" << s.kv_heads << " d " << s.head_dim);
    const Inputs in = InputsFor(s, seed += 2);
    const Result tiled = Tiled(in.qkv, in.dout, s, false);
    const Result cpu = Cpu(in.qkv, in.dout, s);
    ExpectClose(tiled.out, cpu.out, kFp32Rel, "out");
    ExpectClose(tiled.lse, cpu.lse, kFp32Rel, "lse");
    ExpectClose(tiled.dqkv, cpu.dqkv, kFp32Rel, "dqkv");
  }
}

// bf16 mode against the CPU engine on the same inputs rounded to bf16 (q, k, v, dout are rounded
// by the tile loads either way, so only the kernel's own roundings differ: p before P.V and dS
// before dS.K and dS^T.Q, each by at most 2^-9 relative). out = sum_c p_c v_c / l moves by at most
// 2^-9 * max|v| per element; we allow 2^-8 of the tensor's largest entry for out and for every
// gradient (whose sums mix signs, so an elementwise bound needs dS itself), and check the error
// is not fp32-small, so the rounding does happen.
TEST(FlashAttentionHost, Bf16MatchesTheCpuEngineOnRoundedInputs) {
  std::uint32_t seed = 200;
  const double tol = std::ldexp(1.0, -8);
  for (const AttnDims& s : kShapes) {
    SCOPED_TRACE(testing::Message() << "seq " << s.seq << " heads " << s.heads << "/" << s.kv_heads
                                    << " d " << s.head_dim);
    Inputs in = InputsFor(s, seed += 2);
    in.qkv = RoundedToBf16(in.qkv);
    in.dout = RoundedToBf16(in.dout);
    const Result tiled = Tiled(in.qkv, in.dout, s, true);
    const Result cpu = Cpu(in.qkv, in.dout, s);
    double max_v = 0;  // the elementwise bound on out: 2^-9 max|v| (with 2x margin)
    for (std::size_t r = 0; r < std::size_t{1} * s.batch * s.seq; ++r) {
      for (int c = (s.heads + s.kv_heads) * s.head_dim; c < s.qkv_cols(); ++c) {
        max_v = std::max(max_v, double{std::abs(in.qkv[r * s.qkv_cols() + c])});
      }
    }
    for (std::size_t i = 0; i < cpu.out.size(); ++i) {
      ASSERT_LE(std::abs(tiled.out[i] - cpu.out[i]), tol * max_v) << "out[" << i << "]";
    }
    const double out_err = MaxRelError(tiled.out, cpu.out);
    const double dqkv_err = MaxRelError(tiled.dqkv, cpu.dqkv);
    EXPECT_LE(out_err, tol);
    EXPECT_LE(dqkv_err, tol);
    EXPECT_GT(out_err, 1e-5);  // p is rounded
    EXPECT_GT(dqkv_err, 1e-5);
    ExpectClose(tiled.lse, cpu.lse, 1e-5, "lse");  // scores are exact products of bf16 values
  }
}

// The same inputs give the same bits (the host order is fixed; the device's too: no atomics).
TEST(FlashAttentionHost, Bf16IsDeterministic) {
  const AttnDims s{2, 150, 4, 2, 64};
  const Inputs in = InputsFor(s, 300);
  const Result a = Tiled(in.qkv, in.dout, s, true), b = Tiled(in.qkv, in.dout, s, true);
  EXPECT_EQ(0, std::memcmp(a.dqkv.data(), b.dqkv.data(), a.dqkv.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(float)));
}

TEST(FlashAttentionHost, RoundToBf16IsNearestEven) {
  EXPECT_EQ(RoundToBf16(1.0f), 1.0f);
  EXPECT_EQ(RoundToBf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // halfway: to even (1.0)
  EXPECT_EQ(RoundToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));  // to even
  EXPECT_EQ(RoundToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
            1.0f + std::ldexp(1.0f, -7));  // above halfway: up
  EXPECT_EQ(RoundToBf16(-3.14159f), -3.140625f);
  EXPECT_TRUE(std::isnan(RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
}

TEST(FlashAttentionHost, MaskAndTiles) {
  EXPECT_TRUE(Visible(5, 5, 6));
  EXPECT_TRUE(Visible(5, 0, 6));
  EXPECT_FALSE(Visible(5, 6, 10));  // a later key
  EXPECT_FALSE(Visible(6, 0, 6));   // a query row past the sequence
  EXPECT_EQ(TileCount(1), 1);
  EXPECT_EQ(TileCount(64), 1);
  EXPECT_EQ(TileCount(65), 2);
  EXPECT_TRUE(FlashHeadDim(64));
  EXPECT_TRUE(FlashHeadDim(128));
  EXPECT_FALSE(FlashHeadDim(16));
  EXPECT_FALSE(FlashHeadDim(96));
  // Shared memory of the device blocks: all fit sm_90's 227 KiB per block (opt-in).
  EXPECT_LE(DkvSmemBytes(128), 227 * 1024);
  EXPECT_EQ(ForwardSmemBytes(64), 3 * 64 * 72 * 2 + 64 * 72 * 2 + 64 * 68 * 4 + 64 * 68 * 4 + 512);
}

}  // namespace
}  // namespace pipette::cuda::flash
