// RankDevice's GEMM path on a GPU (label gpu; every test skips without a device): the linear
// layers through cached plans against the CPU engine (the bias in the epilogue, the residual as
// C), plan reuse, the bf16 shadows of the weights (made once, stale until refreshed, counted and
// freed with their tensor), the algorithm timings that leave the caller's output alone, every GEMM
// of the benchmark stages' real shapes (sampled against the host) and an odd leading dimension.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/tensor.h"
#include "cpu_compare_util.h"
#include "cuda/device_tensor.h"
#include "cuda/gemm_plan.h"
#include "cuda/linear.h"
#include "cuda/model.h"
#include "cuda/rank_device.h"
#include "cuda_gemm_cases.h"

namespace pipette::cuda {
namespace {

using test_util::Floats;
using test_util::Random;
using test_util::ToFloats;
using test_util::ToTensor;

void ExpectClose(const Floats& actual, const Floats& expected, double rel, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], rel * (1 + std::abs(expected[i]))) << what << " at " << i;
  }
}

class GemmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount says " << cudaGetErrorName(status);
    }
    if (count == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found 0";
  }
};

constexpr int kRows = 37, kIn = 48, kOut = 40;

TEST_F(GemmGpu, LinearLayersMatchTheCpuEngineInFp32) {
  RankDevice dev(GemmPrecision::kFp32, false);
  const Floats x = Random(kRows * kIn, 1), w = Random(kOut * kIn, 2), b = Random(kOut, 3);
  const Floats res = Random(kRows * kOut, 4), dy = Random(kRows * kOut, 5);
  const Floats dw0 = Random(kOut * kIn, 6);
  DeviceTensor dx_t = dev.Upload(x.data(), kRows, kIn), dw_t = dev.Upload(w.data(), kOut, kIn);
  DeviceTensor db_t = dev.Upload(b.data(), 1, kOut), dres = dev.Upload(res.data(), kRows, kOut);
  DeviceTensor ddy = dev.Upload(dy.data(), kRows, kOut), y = dev.Tensor(kRows, kOut);
  DeviceTensor dgrad = dev.Upload(dw0.data(), kOut, kIn), dxg = dev.Tensor(kRows, kIn);

  cpu::Tensor y_cpu(kRows, kOut), dx_cpu(kRows, kIn), dw_cpu = ToTensor(dw0, kOut, kIn);
  const cpu::Tensor b_cpu = ToTensor(b, 1, kOut), x_cpu = ToTensor(x, kRows, kIn);
  const cpu::Tensor w_cpu = ToTensor(w, kOut, kIn), dy_cpu = ToTensor(dy, kRows, kOut);
  cpu::LinearForward(x_cpu, w_cpu, &b_cpu, y_cpu);
  cpu::LinearInputGrad(dy_cpu, w_cpu, dx_cpu);
  cpu::LinearWeightGrad(dy_cpu, x_cpu, dw_cpu, nullptr);

  LinearForward(dev, dx_t, dw_t, &db_t, y);
  ExpectClose(dev.Download(y), ToFloats(y_cpu), 1e-5, "x W^T + b");
  LinearForward(dev, dx_t, dw_t, &db_t, y, &dres);
  Floats with_res = ToFloats(y_cpu);
  for (std::size_t i = 0; i < with_res.size(); ++i) with_res[i] += res[i];
  ExpectClose(dev.Download(y), with_res, 1e-5, "x W^T + b + residual");
  LinearInputGrad(dev, ddy, dw_t, dxg);
  ExpectClose(dev.Download(dxg), ToFloats(dx_cpu), 1e-5, "dy W");
  LinearWeightGrad(dev, ddy, dx_t, dgrad, nullptr);
  ExpectClose(dev.Download(dgrad), ToFloats(dw_cpu), 1e-5, "dw += dy^T x");
  EXPECT_EQ(dev.num_gemm_plans(), 4);  // F, F with C beside D, I, W
  EXPECT_EQ(dev.num_bf16_shadows(), 0);

  LinearForward(dev, dx_t, dw_t, &db_t, y);  // the same call again: its plan
  EXPECT_EQ(dev.num_gemm_plans(), 4);
  ExpectClose(dev.Download(y), ToFloats(y_cpu), 1e-5, "x W^T + b, second time");
  DeviceTensor other_x = dev.Upload(x.data(), kRows, kIn), other_y = dev.Tensor(kRows, kOut);
  LinearForward(dev, other_x, dw_t, &db_t, other_y);  // the same shape on other buffers
  const GemmOperand w_op{dw_t.data(), nullptr};
  const bool same_key =
      MakeGemmPlanKey(LinearForwardArgs(kRows, kIn, kOut, {other_x.data(), nullptr}, w_op,
                                        db_t.data(), nullptr, other_y.data()),
                      GemmPrecision::kFp32) ==
      MakeGemmPlanKey(LinearForwardArgs(kRows, kIn, kOut, {dx_t.data(), nullptr}, w_op, db_t.data(),
                                        nullptr, y.data()),
                      GemmPrecision::kFp32);
  EXPECT_EQ(dev.num_gemm_plans(), same_key ? 4 : 5);
  ExpectClose(dev.Download(other_y), ToFloats(y_cpu), 1e-5, "x W^T + b on other buffers");
}

TEST_F(GemmGpu, Bf16ShadowsAreMadeOnceStaleUntilRefreshedAndFreedWithTheirTensor) {
  RankDevice dev(GemmPrecision::kBf16, false);
  const Floats x = Random(kRows * kIn, 7), w = Random(kOut * kIn, 8);
  DeviceTensor dx = dev.Upload(x.data(), kRows, kIn), y = dev.Tensor(kRows, kOut);
  const std::int64_t before = dev.meter().live;
  {
    DeviceTensor dw = dev.Upload(w.data(), kOut, kIn);
    const std::int64_t with_weight = dev.meter().live;
    LinearForward(dev, dx, dw, nullptr, y);
    EXPECT_EQ(dev.num_bf16_shadows(), 1);  // the weight's; the activation's is not recast
    EXPECT_NE(dw.bf16_shadow(), nullptr);
    const __nv_bfloat16* x_shadow = dx.bf16_shadow();  // rounded once, kept for W
    EXPECT_NE(x_shadow, nullptr);
    EXPECT_EQ(dev.meter().live, with_weight + (dw.size() + dx.size()) * 2);
    const Floats first = dev.Download(y);
    cpu::Tensor y_cpu(kRows, kOut);
    cpu::LinearForward(ToTensor(x, kRows, kIn), ToTensor(w, kOut, kIn), nullptr, y_cpu);
    ExpectClose(first, ToFloats(y_cpu), 2e-2, "bf16 x W^T");

    Floats doubled = w;
    for (float& v : doubled) v *= 2;
    dev.Upload(doubled.data(), dw);
    LinearForward(dev, dx, dw, nullptr, y);
    EXPECT_EQ(dev.Download(y), first) << "the shadow is stale until refreshed";
    dev.RefreshBf16Shadows();
    LinearForward(dev, dx, dw, nullptr, y);
    Floats twice = first;
    for (float& v : twice) v *= 2;  // doubling is exact in bf16 and in the sums
    EXPECT_EQ(dev.Download(y), twice);
    EXPECT_EQ(dev.num_bf16_shadows(), 1);
    EXPECT_EQ(dx.bf16_shadow(), x_shadow);  // every GEMM read the same rounding of x
  }
  EXPECT_EQ(dev.num_bf16_shadows(), 0);
  // What stays: x's shadow, with x.
  EXPECT_EQ(dev.meter().live, before + static_cast<std::int64_t>(kRows) * kIn * 2);
  dx = DeviceTensor();
  EXPECT_EQ(dev.meter().live, before - static_cast<std::int64_t>(kRows) * kIn * 4);
}

TEST_F(GemmGpu, TimingTheAlgorithmsLeavesTheOutputAndAutotuneKeepsItsChoice) {
  for (const bool autotune : {false, true}) {
    RankDevice dev(GemmPrecision::kFp32, autotune);
    const Floats x = Random(256 * 128, 9), dy = Random(256 * 192, 10), d0 = Random(192 * 128, 11);
    DeviceTensor dx = dev.Upload(x.data(), 256, 128), ddy = dev.Upload(dy.data(), 256, 192);
    DeviceTensor dgrad = dev.Upload(d0.data(), 192, 128);
    const GemmArgs args = LinearWeightGradArgs(256, 128, 192, {ddy.data(), nullptr},
                                               {dx.data(), nullptr}, dgrad.data());
    int chosen = -1;
    const std::vector<double> seconds = dev.TimeGemmAlgos(args, 32, 1, 3, &chosen);
    ASSERT_FALSE(seconds.empty());
    ASSERT_GE(chosen, 0);
    ASSERT_LT(chosen, static_cast<int>(seconds.size()));
    EXPECT_TRUE(std::isfinite(seconds[chosen]));
    if (!autotune) {
      EXPECT_EQ(chosen, 0);
    }
    EXPECT_EQ(dev.Download(dgrad), d0) << "timings run on a scratch D";
    int again = -1;
    (void)dev.TimeGemmAlgos(args, 1, 0, 1, &again);
    EXPECT_EQ(again, chosen);
    EXPECT_EQ(dev.num_gemm_plans(), 1);
  }
}

// ---- the benchmark stages' real shapes, and an odd leading dimension ----

// The host's view of one GEMM operand or output (HashValue of its seed; seed 0: zeros).
struct HostMatrix {
  std::uint64_t seed = 0;
  int ld = 0;
  float at(std::int64_t r, std::int64_t c) const { return seed ? HashValue(seed, r * ld + c) : 0; }
};

// Checks `samples` entries (the corners among them) of D = op(A) op(B) + beta C (+ bias) against
// double sums on the host: within 1e-4 (fp32) or 2^-7 (bf16 operands) of sum |a b| + |beta c|.
void ExpectSampledEntries(const GemmArgs& g, const HostMatrix& a, const HostMatrix& b,
                          const HostMatrix& c, const HostMatrix& bias, const Floats& d, bool bf16,
                          const std::string& what) {
  std::mt19937 rng(7);
  const double rel = bf16 ? 1.0 / 128 : 1e-4;
  for (int s = 0; s < 64; ++s) {
    const int i = s == 0 ? 0 : s == 1 ? g.m - 1 : static_cast<int>(rng() % g.m);
    const int j = s == 0 ? 0 : s == 1 ? g.n - 1 : static_cast<int>(rng() % g.n);
    double sum = 0, mag = 0;
    for (int l = 0; l < g.k; ++l) {
      const double x = g.trans_a ? a.at(l, i) : a.at(i, l);
      const double y = g.trans_b ? b.at(j, l) : b.at(l, j);
      sum += x * y;
      mag += std::abs(x * y);
    }
    const double cv = g.beta * static_cast<double>(c.at(i, j)), bv = bias.at(0, j);
    const double expected = g.alpha * sum + cv + bv;
    const double got = d[static_cast<std::size_t>(i) * g.ldd + j];
    ASSERT_NEAR(got, expected, rel * (mag + std::abs(cv) + std::abs(bv)) + 1e-6)
        << what << " D(" << i << ", " << j << ")";
  }
}

// Every GEMM cuda_gemm_benchmark times (GPT-3 1.3B and Llama 3.2 1B stages, 8192 tokens; the heads
// at 2048, their padded logits as the model runs them), made as the benchmark makes them, in fp32
// and bf16: the first time these shapes meet cuBLASLt's heuristic. Each D sampled against the
// host; no operand rounded inside a call (the benchmark times the plan's algorithm alone, like
// the candidates it compares it with).
TEST_F(GemmGpu, TheBenchmarkStagesGemmsMatchTheHostInFp32AndBf16) {
  for (const GemmPrecision precision : {GemmPrecision::kFp32, GemmPrecision::kBf16}) {
    const bool bf16 = precision == GemmPrecision::kBf16;
    for (const StageModel& model : BenchmarkStages()) {
      for (const LinearLayer& l : model.layers) {
        const std::string what = model.name + "." + l.name + (bf16 ? " bf16" : " fp32");
        SCOPED_TRACE(what);
        RankDevice dev(precision, false);
        LayerTensors t(dev, l.head ? 2048 : 8192, l);
        const LayerGemms g = MakeLayerGemms(dev, l, t);
        for (const GemmArgs* args : {&g.f, &g.i, &g.w}) dev.Gemm(*args);
        EXPECT_EQ(dev.num_gemm_plans(), 3);
        EXPECT_EQ(dev.num_operand_roundings(), 0);
        const HostMatrix none{}, x{kSeedX, l.in}, w{kSeedW, l.in}, dy{kSeedDy, t.out_cols};
        ExpectSampledEntries(g.f, x, w, l.residual ? HostMatrix{kSeedResidual, l.out} : none,
                             l.bias ? HostMatrix{kSeedBias, l.out} : none, dev.Download(t.y), bf16,
                             what + " F");
        ExpectSampledEntries(g.i, dy, w, none, none, dev.Download(t.dx), bf16, what + " I");
        ExpectSampledEntries(g.w, dy, x, HostMatrix{kSeedDw, l.in}, none, dev.Download(t.dw), bf16,
                             what + " W");
      }
    }
  }
}

// Operands whose rows are not 16-byte aligned (an odd leading dimension: a view into a wider
// buffer, D likewise): fp32 and bf16 (whose scratch keeps the odd stride, rows 2-byte aligned)
// must still find an algorithm and compute the product.
TEST_F(GemmGpu, AnOddLeadingDimensionStillComputesTheProduct) {
  const int rows = 1000, in = 2048, out = 768, lda = in + 1, ldd = out + 3;
  for (const GemmPrecision precision : {GemmPrecision::kFp32, GemmPrecision::kBf16}) {
    const bool bf16 = precision == GemmPrecision::kBf16;
    SCOPED_TRACE(bf16 ? "bf16" : "fp32");
    RankDevice dev(precision, false);
    DeviceTensor x = HashTensor(dev, rows, lda, 11), w = HashTensor(dev, out, in, 12);
    DeviceTensor y = dev.Tensor(rows, ldd);
    GemmArgs f = LinearForwardArgs(rows, in, out, {x.data(), nullptr}, dev.WeightOperand(w),
                                   nullptr, nullptr, y.data());
    f.lda = lda;
    f.ldc = f.ldd = ldd;
    dev.Gemm(f);
    ExpectSampledEntries(f, HostMatrix{11, lda}, HostMatrix{12, in}, HostMatrix{}, HostMatrix{},
                         dev.Download(y), bf16, "odd lda and ldd");
  }
}

}  // namespace
}  // namespace pipette::cuda
