// The launchers of backends/cuda/kernels.h on a GPU against the per-thread math of kernel_math.h
// run on the host over the same inputs (which kernel_math_test checks against the CPU engine).
// Label gpu. Without a device (cudaGetDeviceCount fails or finds none) every test is skipped with
// the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "cuda/check.h"
#include "cuda/flash_attention.h"
#include "cuda/flash_attention_math.h"
#include "cuda/kernel_math.h"
#include "cuda/kernels.h"
#include "kernel_test_util.h"

namespace pipette::cuda::kernels {
namespace {

using test_util::Floats;
using Ints = std::vector<std::int32_t>;

using test_util::ForEachIndex;
using test_util::Random;

// Device memory holding a copy of a host vector (or n zero bytes' worth of T). Not copyable.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    PIPETTE_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&data_), std::max<std::size_t>(bytes(), 1)));
    PIPETTE_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  explicit DeviceArray(std::size_t n) : n_(n) {
    PIPETTE_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&data_), std::max<std::size_t>(bytes(), 1)));
    PIPETTE_CUDA_CHECK(cudaMemset(data_, 0, bytes()));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  // The contents, after everything queued on the device finished.
  std::vector<T> Host() const {
    PIPETTE_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> host(n_);
    PIPETTE_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  std::size_t n_;
  T* data_ = nullptr;
};

// Within `rel` of the host value, relative to it plus the vector's mean magnitude (the device
// contracts a*b+c into FMAs and its expf differs from glibc's in the last bits).
// `absolute` (when not empty) adds a bound of its own to each element's tolerance.
void ExpectClose(const Floats& device, const Floats& host, const char* what, double rel = 1e-5,
                 const Floats& absolute = {}) {
  ASSERT_EQ(device.size(), host.size()) << what;
  ASSERT_TRUE(absolute.empty() || absolute.size() == host.size()) << what;
  double mean = 0;
  for (float h : host) mean += std::abs(h);
  mean /= std::max<std::size_t>(host.size(), 1);
  int failures = 0;
  for (std::size_t i = 0; i < host.size() && failures < 5; ++i) {
    const double tol = rel * (std::abs(host[i]) + mean) + (absolute.empty() ? 0 : absolute[i]);
    if (!(std::abs(device[i] - host[i]) <= tol)) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "]: device " << device[i] << ", host " << host[i]
                    << ", tolerance " << tol;
    }
  }
}

class KernelsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount says " << cudaGetErrorName(status) << " ("
                   << cudaGetErrorString(status) << ")";
    }
    if (count == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found 0";
    PIPETTE_CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

// `device` holds the bf16 bits of every value of `values` (a kernel's rounding of its own output).
void ExpectBf16Of(const std::vector<std::uint16_t>& device, const Floats& values,
                  const char* what) {
  ASSERT_EQ(device.size(), values.size()) << what;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(device[i], math::Bf16Bits(values[i])) << what << " at " << i;
  }
}

// Rows x cols not multiples of the row block (256 lanes), the column tile (32) or the row chunk
// (64): the fused forward, the input gradient with the residual (and in place), the two-pass
// weight gradients.
TEST_F(KernelsGpu, LayerNormMatchesTheHostBlockMath) {
  const int rows = 167, cols = 777;
  const Floats x = Random(rows * cols, 1, -2, 3), gamma = Random(cols, 2), beta = Random(cols, 3);
  const Floats dy = Random(rows * cols, 4), dx0 = Random(rows * cols, 5);
  const Floats dgamma0 = Random(cols, 6), dbeta0 = Random(cols, 7);
  DeviceArray<float> d_x(x), d_gamma(gamma), d_beta(beta), d_dy(dy), d_res(dx0), d_dx(x.size());
  DeviceArray<float> d_dgamma(dgamma0), d_dbeta(dbeta0), d_mean(rows), d_rstd(rows), d_y(x.size());
  DeviceArray<std::uint16_t> d_y_bf16(x.size());
  LayerNormForward(d_x.get(), d_gamma.get(), d_beta.get(), rows, cols, d_y.get(), d_mean.get(),
                   d_rstd.get(), stream_, reinterpret_cast<__nv_bfloat16*>(d_y_bf16.get()));
  ExpectBf16Of(d_y_bf16.Host(), d_y.Host(), "LayerNorm's bf16 output");
  LayerNormInputGrad(d_dy.get(), d_x.get(), d_mean.get(), d_rstd.get(), d_gamma.get(), d_res.get(),
                     rows, cols, d_dx.get(), stream_);
  LayerNormInputGrad(d_dy.get(), d_x.get(), d_mean.get(), d_rstd.get(), d_gamma.get(), d_res.get(),
                     rows, cols, d_res.get(), stream_);  // in place
  LayerNormWeightGrad(d_dy.get(), d_x.get(), d_mean.get(), d_rstd.get(), rows, cols, d_dgamma.get(),
                      d_dbeta.get(), stream_);

  Floats y(x.size()), mean(rows), rstd(rows), dx(x.size()), dgamma = dgamma0, dbeta = dbeta0;
  ForEachIndex(rows, [&](std::int64_t r) {
    math::LayerNormForwardBlock(r, x.data(), gamma.data(), beta.data(), cols, y.data(), mean.data(),
                                rstd.data());
  });
  ForEachIndex(rows, [&](std::int64_t r) {
    math::LayerNormInputGradBlock(r, dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                                  dx0.data(), cols, dx.data());
  });
  math::ColReduceModel(math::AffineTerms{dy.data(), x.data(), mean.data(), rstd.data()}, rows, cols,
                       dgamma.data(), dbeta.data());
  ExpectClose(d_y.Host(), y, "y");
  ExpectClose(d_mean.Host(), mean, "mean");
  ExpectClose(d_rstd.Host(), rstd, "rstd");
  ExpectClose(d_dx.Host(), dx, "dx");
  EXPECT_EQ(d_res.Host(), d_dx.Host()) << "in place";
  ExpectClose(d_dgamma.Host(), dgamma, "dgamma");
  ExpectClose(d_dbeta.Host(), dbeta, "dbeta");
}

TEST_F(KernelsGpu, RmsNormMatchesTheHostBlockMath) {
  const int rows = 145, cols = 300;
  const Floats x = Random(rows * cols, 8, -2, 2), gamma = Random(cols, 9);
  const Floats dy = Random(rows * cols, 10), dgamma0 = Random(cols, 11);
  DeviceArray<float> d_x(x), d_gamma(gamma), d_dy(dy), d_dgamma(dgamma0), d_y(x.size()),
      d_rstd(rows), d_dx(x.size());
  DeviceArray<std::uint16_t> d_y_bf16(std::size_t{1} * rows * cols);
  RmsNormForward(d_x.get(), d_gamma.get(), rows, cols, d_y.get(), d_rstd.get(), stream_,
                 reinterpret_cast<__nv_bfloat16*>(d_y_bf16.get()));
  ExpectBf16Of(d_y_bf16.Host(), d_y.Host(), "RMSNorm's bf16 output");
  RmsNormInputGrad(d_dy.get(), d_x.get(), d_rstd.get(), d_gamma.get(), nullptr, rows, cols,
                   d_dx.get(), stream_);
  RmsNormWeightGrad(d_dy.get(), d_x.get(), d_rstd.get(), rows, cols, d_dgamma.get(), stream_);

  Floats y(x.size()), rstd(rows), dx(x.size()), dgamma = dgamma0;
  ForEachIndex(rows, [&](std::int64_t r) {
    math::RmsNormForwardBlock(r, x.data(), gamma.data(), cols, y.data(), rstd.data());
  });
  ForEachIndex(rows, [&](std::int64_t r) {
    math::RmsNormInputGradBlock(r, dy.data(), x.data(), rstd.data(), gamma.data(), nullptr, cols,
                                dx.data());
  });
  math::ColReduceModel(math::RmsNormTerms{dy.data(), x.data(), rstd.data()}, rows, cols,
                       dgamma.data(), nullptr);
  ExpectClose(d_y.Host(), y, "y");
  ExpectClose(d_rstd.Host(), rstd, "rstd");
  ExpectClose(d_dx.Host(), dx, "dx");
  ExpectClose(d_dgamma.Host(), dgamma, "dgamma");
}

// The reductions have no atomics: two launches on the same inputs give the same bits.
TEST_F(KernelsGpu, RowAndColumnReductionsAreBitReproducible) {
  const int rows = 8192 / 16, cols = 2048;
  const Floats x = Random(std::size_t{1} * rows * cols, 12, -3, 3), gamma = Random(cols, 13);
  DeviceArray<float> d_x(x), d_gamma(gamma), d_y(x.size()), d_rstd(rows);
  std::vector<Floats> dgammas;
  for (int run = 0; run < 2; ++run) {
    DeviceArray<float> d_dgamma(cols);
    RmsNormForward(d_x.get(), d_gamma.get(), rows, cols, d_y.get(), d_rstd.get(), stream_);
    RmsNormWeightGrad(d_x.get(), d_y.get(), d_rstd.get(), rows, cols, d_dgamma.get(), stream_);
    dgammas.push_back(d_dgamma.Host());
  }
  EXPECT_EQ(dgammas[0], dgammas[1]);
}

TEST_F(KernelsGpu, ActivationsMatchTheHostMath) {
  const int rows = 33, f = 70;
  const std::int64_t n = std::int64_t{rows} * f;
  const Floats x = Random(n, 12, -8, 8), dy = Random(n, 13), gate_up = Random(2 * n, 14, -6, 6);
  DeviceArray<float> d_x(x), d_dy(dy), d_gate_up(gate_up), d_gelu(n), d_dgelu(n), d_swiglu(n),
      d_dgate_up(2 * n);
  DeviceArray<std::uint16_t> d_gelu_bf16(n), d_swiglu_bf16(n);
  GeluForward(d_x.get(), n, d_gelu.get(), stream_,
              reinterpret_cast<__nv_bfloat16*>(d_gelu_bf16.get()));
  DeviceArray<std::uint16_t> d_dgelu_bf16(n), d_dgate_up_bf16(2 * n);
  GeluInputGrad(d_dy.get(), d_x.get(), n, d_dgelu.get(), stream_,
                reinterpret_cast<__nv_bfloat16*>(d_dgelu_bf16.get()));
  SwiGluForward(d_gate_up.get(), rows, f, d_swiglu.get(), stream_,
                reinterpret_cast<__nv_bfloat16*>(d_swiglu_bf16.get()));
  ExpectBf16Of(d_gelu_bf16.Host(), d_gelu.Host(), "GELU's bf16 output");
  ExpectBf16Of(d_swiglu_bf16.Host(), d_swiglu.Host(), "SwiGLU's bf16 output");
  SwiGluInputGrad(d_dy.get(), d_gate_up.get(), rows, f, d_dgate_up.get(), stream_,
                  reinterpret_cast<__nv_bfloat16*>(d_dgate_up_bf16.get()));
  ExpectBf16Of(d_dgelu_bf16.Host(), d_dgelu.Host(), "GELU's bf16 input gradient");
  ExpectBf16Of(d_dgate_up_bf16.Host(), d_dgate_up.Host(), "SwiGLU's bf16 input gradient");

  Floats gelu(n), dgelu(n), swiglu(n), dgate_up(2 * n);
  ForEachIndex(n, [&](std::int64_t i) {
    math::GeluAt(i, x.data(), gelu.data());
    math::GeluInputGradAt(i, dy.data(), x.data(), dgelu.data());
    math::SwiGluAt(i, gate_up.data(), f, swiglu.data());
    math::SwiGluInputGradAt(i, dy.data(), gate_up.data(), f, dgate_up.data());
  });
  ExpectClose(d_gelu.Host(), gelu, "gelu");
  ExpectClose(d_dgelu.Host(), dgelu, "gelu dx");
  ExpectClose(d_swiglu.Host(), swiglu, "swiglu");
  ExpectClose(d_dgate_up.Host(), dgate_up, "swiglu dgate_up");
}

TEST_F(KernelsGpu, RopeMatchesTheHostMathAndInverts) {
  const AttentionShape shape{2, 1500, 4, 2, 16};
  const math::AttnDims s{2, 1500, 4, 2, 16};
  const Floats qkv = Random(std::size_t{3000} * shape.qkv_cols(), 15);
  DeviceArray<float> d_qkv(qkv), d_back(qkv);
  RopeForward(d_qkv.get(), shape, 10000.0f, stream_);
  RopeForward(d_back.get(), shape, 10000.0f, stream_);
  RopeInputGrad(d_back.get(), shape, 10000.0f, stream_);
  Floats rotated = qkv;
  ForEachIndex(std::int64_t{3000} * 6 * 8,
               [&](std::int64_t i) { math::RopeAt(i, rotated.data(), s, 10000.0f, false); });
  ExpectClose(d_qkv.Host(), rotated, "rope");
  ExpectClose(d_back.Host(), qkv, "inverse(rope)", 1e-6);
}

TEST_F(KernelsGpu, AttentionMatchesTheHostMath) {
  for (const int kv_heads : {4, 2, 1}) {
    SCOPED_TRACE(kv_heads);
    const AttentionShape shape{3, 37, 4, kv_heads, 16};
    const math::AttnDims s{3, 37, 4, kv_heads, 16};
    const int rows = 3 * 37;
    const std::int64_t query_rows = 3 * 4 * 37, key_rows = 3 * kv_heads * 37;
    const Floats qkv = Random(std::size_t{1} * rows * shape.qkv_cols(), 16, -1.5f, 1.5f);
    const Floats dout = Random(std::size_t{1} * rows * shape.out_cols(), 17);
    DeviceArray<float> d_qkv(qkv), d_dout(dout), d_out(dout.size()), d_lse(query_rows),
        d_dqkv(qkv.size()), d_delta(query_rows);
    AttentionForward(d_qkv.get(), shape, d_out.get(), d_lse.get(), stream_);
    AttentionInputGrad(d_dout.get(), d_qkv.get(), d_out.get(), d_lse.get(), shape, d_dqkv.get(),
                       d_delta.get(), stream_);

    Floats out(dout.size()), lse(query_rows), delta(query_rows), dqkv(qkv.size());
    ForEachIndex(query_rows, [&](std::int64_t i) {
      math::AttentionForwardAt(i, qkv.data(), s, out.data(), lse.data());
    });
    ForEachIndex(query_rows, [&](std::int64_t i) {
      math::AttentionDeltaAt(i, dout.data(), out.data(), s, delta.data());
      math::AttentionDqAt(i, dout.data(), qkv.data(), lse.data(), delta.data(), s, dqkv.data());
    });
    ForEachIndex(key_rows, [&](std::int64_t i) {
      math::AttentionDkvAt(i, dout.data(), qkv.data(), lse.data(), delta.data(), s, dqkv.data());
    });
    ExpectClose(d_out.Host(), out, "out");
    ExpectClose(d_lse.Host(), lse, "lse");
    ExpectClose(d_dqkv.Host(), dqkv, "dqkv");
  }
}

// ---- tensor-core attention (flash_attention.h)
// ---------------------------------------------------

struct AttentionRun {
  Floats out, lse, dqkv;
};

// Forward and backward through `flash` (the tensor-core launchers) or the exact ones.
AttentionRun RunAttention(const Floats& qkv, const Floats& dout, const AttentionShape& shape,
                          bool flash, cudaStream_t stream) {
  const std::size_t query_rows = std::size_t{1} * shape.batch * shape.heads * shape.seq;
  DeviceArray<float> d_qkv(qkv), d_dout(dout), d_out(dout.size()), d_lse(query_rows),
      d_dqkv(Floats(qkv.size(), -99.0f)), d_delta(query_rows);  // dqkv: all overwritten
  if (flash) {
    FlashAttentionForward(d_qkv.get(), shape, d_out.get(), d_lse.get(), stream);
    FlashAttentionInputGrad(d_dout.get(), d_qkv.get(), d_out.get(), d_lse.get(), shape,
                            d_dqkv.get(), d_delta.get(), stream);
  } else {
    AttentionForward(d_qkv.get(), shape, d_out.get(), d_lse.get(), stream);
    AttentionInputGrad(d_dout.get(), d_qkv.get(), d_out.get(), d_lse.get(), shape, d_dqkv.get(),
                       d_delta.get(), stream);
  }
  return {d_out.Host(), d_lse.Host(), d_dqkv.Host()};
}

// The largest |a - b| over the largest |b|.
double MaxRelError(const Floats& a, const Floats& b) {
  double err = 0, mx = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, double{std::abs(a[i] - b[i])});
    mx = std::max(mx, double{std::abs(b[i])});
  }
  return err / mx;
}

// Per output row of (b, head j, query q): the bound of what probability roundings the host does not
// share can move it. The device sums the tile products in another order and contracts FMAs, and
// its expf may differ in the last bit, so a probability exp(scale s - max) can round to the
// neighbouring bf16 value: one term off by 2^-8 of itself (at most 2^-8, as p <= 1 against the
// row's final max), times |v| <= vmax, over the row's sum of probabilities, sum = exp(lse - max)
// >= 1. An early row sees a few keys, so its sum is small and one flip moves it by up to 2^-8
// vmax: the H200's first run (2026-11-28) showed such a row off by 1.5e-3 at d = 128. `flips`
// terms per row are allowed.
Floats FlipBoundPerOutput(const Floats& qkv, const Floats& lse, const math::AttnDims& s,
                          int flips) {
  const int d = s.head_dim, ld = s.qkv_cols(), oc = s.out_cols();
  float vmax = 0;
  for (std::int64_t r = 0; r < std::int64_t{s.batch} * s.seq; ++r) {
    for (int c = (s.heads + s.kv_heads) * d; c < ld; ++c)
      vmax = std::max(vmax, std::abs(qkv[r * ld + c]));
  }
  Floats bound(static_cast<std::size_t>(s.batch) * s.seq * oc);
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < s.heads; ++j) {
      const int kv = j / s.group();
      for (int q = 0; q < s.seq; ++q) {
        const float* qrow = &qkv[(std::int64_t{b} * s.seq + q) * ld + j * d];
        float mx = -INFINITY;
        for (int k = 0; k <= q; ++k) {
          const float* krow = &qkv[(std::int64_t{b} * s.seq + k) * ld + (s.heads + kv) * d];
          float dot = 0;
          for (int e = 0; e < d; ++e)
            dot += flash::RoundToBf16(qrow[e]) * flash::RoundToBf16(krow[e]);
          mx = std::max(mx, s.scale() * dot);
        }
        const float sum = std::exp(lse[(std::int64_t{b} * s.heads + j) * s.seq + q] - mx);
        const float at_most = flips * vmax / 256.0f / std::max(sum, 1.0f);
        for (int e = 0; e < d; ++e) bound[(std::int64_t{b} * s.seq + q) * oc + j * d + e] = at_most;
      }
    }
  }
  return bound;
}

// The device kernels against the same tiled algorithm on the host (flash_attention_math.h, which
// flash_attention_test checks against the CPU engine). Both round the same operands to bf16, so
// they differ by the products' summation order and by probabilities rounded to the neighbouring
// bf16 value: out within 1e-3 relative to each element plus the tensor's mean magnitude, plus
// FlipBoundPerOutput of two flips per row; lse within 1e-4; dqkv within 4e-3 (its dS terms round
// the same way, each touching many rows' sums).
TEST_F(KernelsGpu, FlashAttentionMatchesTheHostTileAlgorithm) {
  const AttentionShape shapes[] = {
      {2, 150, 4, 1, 64}, {1, 200, 8, 2, 128}, {3, 65, 2, 2, 128}, {1, 40, 4, 4, 64}};
  std::uint32_t seed = 40;
  for (const AttentionShape& shape : shapes) {
    SCOPED_TRACE(testing::Message() << "seq " << shape.seq << " heads " << shape.heads << "/"
                                    << shape.kv_heads << " d " << shape.head_dim);
    ASSERT_TRUE(FlashAttentionSupports(shape));
    const math::AttnDims s{shape.batch, shape.seq, shape.heads, shape.kv_heads, shape.head_dim};
    const std::size_t rows = std::size_t{1} * shape.batch * shape.seq;
    const Floats qkv = Random(rows * shape.qkv_cols(), seed++, -1.5f, 1.5f);
    const Floats dout = Random(rows * shape.out_cols(), seed++);
    const AttentionRun device = RunAttention(qkv, dout, shape, true, stream_);
    Floats out(dout.size()), lse(device.lse.size()), dqkv(qkv.size()), delta(lse.size());
    if (shape.head_dim == 64) {
      flash::ForwardOnHost<64>(qkv.data(), s, true, out.data(), lse.data());
      flash::InputGradOnHost<64>(dout.data(), qkv.data(), out.data(), lse.data(), s, true,
                                 dqkv.data(), delta.data());
    } else {
      flash::ForwardOnHost<128>(qkv.data(), s, true, out.data(), lse.data());
      flash::InputGradOnHost<128>(dout.data(), qkv.data(), out.data(), lse.data(), s, true,
                                  dqkv.data(), delta.data());
    }
    ExpectClose(device.out, out, "out", 1e-3, FlipBoundPerOutput(qkv, lse, s, 2));
    ExpectClose(device.lse, lse, "lse", 1e-4);
    ExpectClose(device.dqkv, dqkv, "dqkv", 4e-3);
  }
}

// Each tensor of the tensor-core run within 2e-2 of its largest entry of the exact kernels' run,
// and not fp32-close (the bf16 path ran); the errors are printed.
void ExpectCloseToTheExactKernels(const AttentionRun& flash, const AttentionRun& exact) {
  for (const auto& [what, a, b] :
       {std::tuple{"out", &flash.out, &exact.out}, std::tuple{"lse", &flash.lse, &exact.lse},
        std::tuple{"dqkv", &flash.dqkv, &exact.dqkv}}) {
    const double err = MaxRelError(*a, *b);
    EXPECT_LE(err, 2e-2) << what;
    EXPECT_GT(err, 1e-6) << what;
    std::printf("%s: max error %.2e of the largest entry\n", what, err);
  }
}

// bf16 operands against the exact fp32 kernels on unrounded inputs in [-1, 1): scores move by
// about 2^-9 * |scale q.k| and the probabilities, outputs and gradients by ~1e-3 of their
// magnitude; 2e-2 of each tensor's largest entry bounds that with margin, and the error must not
// be fp32-small (the bf16 path ran). The same input twice gives the same bits (no atomics).
TEST_F(KernelsGpu, FlashAttentionIsCloseToTheExactKernelsAndDeterministic) {
  const AttentionShape shape{2, 300, 8, 2, 128};
  const std::size_t rows = std::size_t{1} * shape.batch * shape.seq;
  const Floats qkv = Random(rows * shape.qkv_cols(), 50);
  const Floats dout = Random(rows * shape.out_cols(), 51);
  const AttentionRun flash = RunAttention(qkv, dout, shape, true, stream_);
  const AttentionRun again = RunAttention(qkv, dout, shape, true, stream_);
  ExpectCloseToTheExactKernels(flash, RunAttention(qkv, dout, shape, false, stream_));
  EXPECT_EQ(0, std::memcmp(flash.out.data(), again.out.data(), flash.out.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(flash.lse.data(), again.lse.data(), flash.lse.size() * sizeof(float)));
  EXPECT_EQ(0,
            std::memcmp(flash.dqkv.data(), again.dqkv.data(), flash.dqkv.size() * sizeof(float)));
}

// The model's own shapes at their sequence length (2048): GPT-3 1.3B's 16 heads of 128 and
// Llama 3.2 1B's 32 query heads of 64 over 8 KV heads, against the exact kernels with the bar of
// the test above (2e-2 of each tensor's largest entry; the bf16 path must have run). Long rows
// are where an online-softmax rescaling error or a tile-edge mask error would show. Not part of
// the sanitizer runs (scripts/gpu-run.sh filters out *LongSequence*: racecheck at this size
// would take minutes).
TEST_F(KernelsGpu, LongSequenceFlashAttentionIsCloseToTheExactKernels) {
  const AttentionShape shapes[] = {{1, 2048, 16, 16, 128}, {1, 2048, 32, 8, 64}};
  std::uint32_t seed = 60;
  for (const AttentionShape& shape : shapes) {
    SCOPED_TRACE(testing::Message()
                 << "heads " << shape.heads << "/" << shape.kv_heads << " d " << shape.head_dim);
    ASSERT_TRUE(FlashAttentionSupports(shape));
    const std::size_t rows = std::size_t{1} * shape.batch * shape.seq;
    const Floats qkv = Random(rows * shape.qkv_cols(), seed++);
    const Floats dout = Random(rows * shape.out_cols(), seed++);
    ExpectCloseToTheExactKernels(RunAttention(qkv, dout, shape, true, stream_),
                                 RunAttention(qkv, dout, shape, false, stream_));
  }
}

// Head dims the tensor-core kernels do not take run the exact kernels: the same bits.
TEST_F(KernelsGpu, FlashAttentionFallsBackToTheExactKernels) {
  const AttentionShape shape{2, 37, 4, 2, 16};
  EXPECT_FALSE(FlashAttentionSupports(shape));
  const std::size_t rows = std::size_t{1} * shape.batch * shape.seq;
  const Floats qkv = Random(rows * shape.qkv_cols(), 52, -1.5f, 1.5f);
  const Floats dout = Random(rows * shape.out_cols(), 53);
  const AttentionRun flash = RunAttention(qkv, dout, shape, true, stream_);
  const AttentionRun exact = RunAttention(qkv, dout, shape, false, stream_);
  EXPECT_EQ(flash.out, exact.out);
  EXPECT_EQ(flash.lse, exact.lse);
  EXPECT_EQ(flash.dqkv, exact.dqkv);
}

TEST_F(KernelsGpu, EmbeddingMatchesTheHostMathAndIsDeterministic) {
  const int batch = 4, seq = 64, hidden = 48, vocab = 10;  // 256 tokens of 10 ids: long chains
  Ints tokens(batch * seq);
  std::mt19937 rng(18);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % vocab);
  const Floats wte = Random(vocab * hidden, 19), wpe = Random(seq * hidden, 20);
  const Floats dy = Random(tokens.size() * hidden, 21);
  const Floats dwte0 = Random(wte.size(), 22), dwpe0 = Random(wpe.size(), 23);
  DeviceArray<std::int32_t> d_tokens(tokens);
  DeviceArray<float> d_wte(wte), d_wpe(wpe), d_dy(dy), d_y(dy.size()), d_dwte(dwte0), d_dwpe(dwpe0),
      d_dwte_again(dwte0);
  EmbeddingForward(d_tokens.get(), d_wte.get(), d_wpe.get(), batch, seq, hidden, d_y.get(),
                   stream_);
  EmbeddingWeightGrad(d_dy.get(), d_tokens.get(), batch, seq, hidden, d_dwte.get(), d_dwpe.get(),
                      stream_);
  EmbeddingWeightGrad(d_dy.get(), d_tokens.get(), batch, seq, hidden, d_dwte_again.get(), nullptr,
                      stream_);

  const std::int64_t n = batch * seq;
  Floats y(dy.size()), dwte = dwte0, dwpe = dwpe0;
  Ints next(n), leader(n);
  ForEachIndex(n * hidden, [&](std::int64_t i) {
    math::EmbeddingAt(i, tokens.data(), wte.data(), wpe.data(), seq, hidden, y.data());
  });
  ForEachIndex(n, [&](std::int64_t t) {
    math::EmbeddingChainAt(t, tokens.data(), n, next.data(), leader.data());
  });
  ForEachIndex(n * hidden, [&](std::int64_t i) {
    math::EmbeddingWteGradAt(i, dy.data(), tokens.data(), hidden, next.data(), leader.data(),
                             dwte.data());
  });
  ForEachIndex(seq * hidden, [&](std::int64_t i) {
    math::EmbeddingWpeGradAt(i, dy.data(), batch, seq, hidden, dwpe.data());
  });
  EXPECT_EQ(d_y.Host(), y);  // additions only, in the host's order: bit for bit
  EXPECT_EQ(d_dwte.Host(), dwte);
  EXPECT_EQ(d_dwpe.Host(), dwpe);
  EXPECT_EQ(d_dwte_again.Host(), dwte);  // the same again: no atomics
}

// One block per row over vocabularies odd and past the lanes; loss only, and loss plus the
// gradient in place; the mean and the device-side loss total.
TEST_F(KernelsGpu, CrossEntropyMatchesTheHostBlockMathInPlace) {
  for (const int vocab : {1000, 50257}) {
    SCOPED_TRACE(vocab);
    const int rows = 40;
    Floats logits = Random(std::size_t{1} * rows * vocab, 24, -6, 6);
    Ints targets(rows);
    for (int r = 0; r < rows; ++r) targets[r] = (r * 37) % vocab;
    DeviceArray<float> d_logits(logits), d_loss(rows), d_loss_only(rows), d_mean(1);
    DeviceArray<double> d_total(std::vector<double>{0.5});
    DeviceArray<std::int32_t> d_targets(targets);
    DeviceArray<std::uint16_t> d_bf16(std::size_t{1} * rows * vocab);
    CrossEntropy(d_logits.get(), d_targets.get(), rows, vocab, vocab, 0.25f, d_loss_only.get(),
                 nullptr, nullptr, stream_);
    CrossEntropy(d_logits.get(), d_targets.get(), rows, vocab, vocab, 0.25f, d_loss.get(),
                 d_logits.get(), reinterpret_cast<__nv_bfloat16*>(d_bf16.get()), stream_);
    LossMean(d_loss.get(), rows, d_mean.get(), d_total.get(), stream_);
    Floats loss(rows);
    ForEachIndex(rows, [&](std::int64_t r) {
      math::CrossEntropyBlock(r, logits.data(), targets.data(), vocab, vocab, 0.25f, loss.data(),
                              logits.data());
    });
    ExpectClose(d_loss.Host(), loss, "row loss");
    EXPECT_EQ(d_loss_only.Host(), d_loss.Host());
    ExpectClose(d_logits.Host(), logits, "dlogits");
    const Floats device_dlogits = d_logits.Host();
    std::vector<std::uint16_t> rounded(device_dlogits.size());
    for (std::size_t i = 0; i < rounded.size(); ++i) rounded[i] = math::Bf16Bits(device_dlogits[i]);
    EXPECT_EQ(d_bf16.Host(), rounded) << "the bf16 gradient is the fp32 one rounded";
    std::vector<double> partials(math::kSumThreads);
    const Floats device_loss = d_loss.Host();
    for (int i = 0; i < math::kSumThreads; ++i) {
      partials[i] = math::SumPartialAt(i, device_loss.data(), rows);
    }
    const float mean = math::MeanOf(math::SumOfPartials(partials.data()), rows);
    EXPECT_EQ(d_mean.Host()[0], mean);
    EXPECT_EQ(d_total.Host()[0], 0.5 + mean);
  }
}

// The engine's padded logits (model.h's LogitsCols: 50257 columns in rows of 50304): the padding
// holds values that would win every softmax if read; the loss and the real columns' gradient are
// the host block math's, the padding's gradient zero in fp32 and bf16.
TEST_F(KernelsGpu, CrossEntropyOnPaddedRowsMatchesTheHostBlockMath) {
  const int vocab = 50257, ld = 50304, rows = 8;
  Floats logits(std::size_t{1} * rows * ld, 1e30f);
  const Floats real = Random(std::size_t{1} * rows * vocab, 29, -6, 6);
  for (int r = 0; r < rows; ++r) {
    std::copy_n(real.begin() + std::size_t{1} * r * vocab, vocab,
                logits.begin() + std::size_t{1} * r * ld);
  }
  Ints targets(rows);
  for (int r = 0; r < rows; ++r) targets[r] = (r * 6007) % vocab;
  DeviceArray<float> d_logits(logits), d_loss(rows);
  DeviceArray<std::int32_t> d_targets(targets);
  DeviceArray<std::uint16_t> d_bf16(std::vector<std::uint16_t>(logits.size(), 0xffff));
  CrossEntropy(d_logits.get(), d_targets.get(), rows, vocab, ld, 0.5f, d_loss.get(), d_logits.get(),
               reinterpret_cast<__nv_bfloat16*>(d_bf16.get()), stream_);
  Floats loss(rows), host = logits;
  ForEachIndex(rows, [&](std::int64_t r) {
    math::CrossEntropyBlock(r, host.data(), targets.data(), vocab, ld, 0.5f, loss.data(),
                            host.data());
  });
  ExpectClose(d_loss.Host(), loss, "row loss");
  const Floats dlogits = d_logits.Host();
  const std::vector<std::uint16_t> bf16 = d_bf16.Host();
  for (int r = 0; r < rows; ++r) {
    for (int c = vocab; c < ld; ++c) {
      ASSERT_EQ(dlogits[std::size_t{1} * r * ld + c], 0.0f) << r << "," << c;
      ASSERT_EQ(bf16[std::size_t{1} * r * ld + c], 0) << r << "," << c;
    }
  }
  ExpectClose(dlogits, host, "dlogits");
}

TEST_F(KernelsGpu, ElementwiseMatchTheHostMath) {
  const int rows = 129, cols = 75;
  const std::int64_t n = std::int64_t{rows} * cols;
  const Floats a = Random(n, 25), b = Random(n, 26), bias = Random(cols, 27),
               dbias0 = Random(cols, 28);
  DeviceArray<float> d_a(a), d_b(b), d_y(a), d_bias(bias), d_dbias(dbias0), d_sum(1);
  DeviceArray<float> d_add(n);
  DeviceArray<__nv_bfloat16> d_bf16(n);
  AddBias(d_y.get(), d_bias.get(), rows, cols, stream_);
  Axpy(-0.5f, d_b.get(), n, d_y.get(), stream_);
  BiasGrad(d_a.get(), rows, cols, d_dbias.get(), stream_);
  Add(d_a.get(), d_b.get(), n, d_add.get(), stream_);
  Sum(d_a.get(), n, d_sum.get(), stream_);
  CastToBf16(d_a.get(), n, d_bf16.get(), stream_);

  Floats y = a, dbias = dbias0, add(n);
  ForEachIndex(n, [&](std::int64_t i) {
    math::AddBiasAt(i, bias.data(), cols, y.data());
    math::AxpyAt(i, -0.5f, b.data(), y.data());
    math::AddAt(i, a.data(), b.data(), add.data());
  });
  math::ColReduceModel(math::BiasTerms{a.data()}, rows, cols, dbias.data(), nullptr);
  std::vector<double> partials(math::kSumThreads);
  for (int i = 0; i < math::kSumThreads; ++i) partials[i] = math::SumPartialAt(i, a.data(), n);
  ExpectClose(d_y.Host(), y, "bias then axpy");
  ExpectClose(d_dbias.Host(), dbias, "dbias");
  EXPECT_EQ(d_add.Host(), add);
  EXPECT_EQ(d_sum.Host()[0], math::SumOfPartials(partials.data()));  // the same sums in double
  const std::vector<__nv_bfloat16> bf16 = d_bf16.Host();
  for (std::int64_t i = 0; i < n; ++i) {
    const __nv_bfloat16_raw raw = bf16[i];
    ASSERT_EQ(raw.x, math::Bf16Bits(a[i])) << i;
  }
}

TEST_F(KernelsGpu, AdamWStepsEveryTensorInOneLaunch) {
  const std::vector<std::int64_t> sizes{0, 1000, 7, 0, 4096, 1};
  std::vector<Floats> param, grad, m, v;
  std::vector<std::unique_ptr<DeviceArray<float>>> device;
  std::vector<AdamWTensor> tensors;
  std::vector<math::AdamWSlice> slices;
  std::int64_t total = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t n = sizes[k];
    param.push_back(Random(n, 30 + k));
    grad.push_back(Random(n, 40 + k));
    m.push_back(Random(n, 50 + k, -0.1f, 0.1f));
    v.push_back(Random(n, 60 + k, 0.0f, 0.01f));
    for (const Floats* h : {&param[k], &grad[k], &m[k], &v[k]}) {
      device.push_back(std::make_unique<DeviceArray<float>>(*h));
    }
    tensors.push_back({device[4 * k]->get(), device[4 * k + 1]->get(), device[4 * k + 2]->get(),
                       device[4 * k + 3]->get(), sizes[k], k % 2 == 1});
    slices.push_back({param[k].data(), grad[k].data(), m[k].data(), v[k].data(), total, sizes[k],
                      k % 2 == 1 ? 1 : 0});
    total += sizes[k];
  }
  const AdamWConfig config;
  AdamWStep(tensors, config, 3, stream_);
  const math::AdamWScalars s = math::MakeAdamWScalars(config.lr, config.beta1, config.beta2,
                                                      config.eps, config.weight_decay, 3);
  ForEachIndex(total, [&](std::int64_t i) {
    math::AdamWAt(i, slices.data(), static_cast<int>(slices.size()), s);
  });
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    SCOPED_TRACE(k);
    ExpectClose(device[4 * k]->Host(), param[k], "param", 1e-6);
    EXPECT_EQ(device[4 * k + 1]->Host(), grad[k]);  // gradients are left as they are
    ExpectClose(device[4 * k + 2]->Host(), m[k], "m", 1e-6);
    ExpectClose(device[4 * k + 3]->Host(), v[k], "v", 1e-6);
  }
}

// Indices past 2^31: the grid-stride loop's 64-bit index reaches the last element.
TEST_F(KernelsGpu, ElementwiseCoversMoreThanTwoBillionElements) {
  const std::int64_t n = (std::int64_t{1} << 31) + 1000;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)) != cudaSuccess)
    GTEST_SKIP() << "8 GiB not available";
  if (cudaMalloc(reinterpret_cast<void**>(&y), n * sizeof(float)) != cudaSuccess) {
    cudaFree(x);
    GTEST_SKIP() << "16 GiB not available";
  }
  PIPETTE_CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  PIPETTE_CUDA_CHECK(cudaMemset(y, 0, n * sizeof(float)));
  const float one = 1.0f;
  PIPETTE_CUDA_CHECK(cudaMemcpy(x + n - 1, &one, sizeof one, cudaMemcpyHostToDevice));
  Axpy(3.0f, x, n, y, stream_);
  float last = 0, before = -1;
  PIPETTE_CUDA_CHECK(cudaDeviceSynchronize());
  PIPETTE_CUDA_CHECK(cudaMemcpy(&last, y + n - 1, sizeof last, cudaMemcpyDeviceToHost));
  PIPETTE_CUDA_CHECK(cudaMemcpy(&before, y + n - 2, sizeof before, cudaMemcpyDeviceToHost));
  EXPECT_EQ(last, 3.0f);
  EXPECT_EQ(before, 0.0f);
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
}  // namespace pipette::cuda::kernels
