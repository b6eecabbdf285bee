// RankDevice's GEMM path on a GPU (label gpu; every test skips without a device): the linear
// layers through cached plans against the CPU engine (the bias in the epilogue, the residual as
// C), plan reuse, the bf16 shadows of the weights (made once, stale until refreshed, counted and
// freed with their tensor), and the algorithm timings that leave the caller's output alone.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu/tensor.h"
#include "cpu_compare_util.h"
#include "cuda/device.h"

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

}  // namespace
}  // namespace pipette::cuda
