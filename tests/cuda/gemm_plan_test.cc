// The CUDA engine's GEMM plans on the host (label unit, no GPU needed): what a plan key tells
// apart and what it shares, and the linear layers' GEMMs (epilogue bias, residual as C, the
// accumulating gradients) run the way cuBLASLt defines them, column-major, against the CPU
// engine's linear layers on the same inputs.
#include "cuda/gemm_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/tensor.h"
#include "cpu_compare_util.h"
#include "cuda/linear.h"
#include "cuda/model.h"

namespace pipette::cuda {
namespace {

using test_util::Floats;
using test_util::Random;
using test_util::ToFloats;
using test_util::ToTensor;

// What cublasLtMatmul computes for `args` (fp32), following its documented semantics on the
// column-major problem AsColumnMajor gives: D(i, j) = alpha sum_l opA(i, l) opB(l, j) +
// beta C(i, j) + bias[i] (CUBLASLT_EPILOGUE_BIAS: one bias element per row of D), with cuBLASLt's
// A the row-major B's memory and its B the row-major A's. C is D when the key says so.
void RunAsCublasLt(const GemmArgs& args) {
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  const GemmPlanKey key = MakeGemmPlanKey(args, GemmPrecision::kFp32);
  const float* first = args.b.f32;
  const float* second = args.a.f32;
  const float* c = key.c_is_d ? args.d : args.c;
  auto at = [](const float* x, int ld, bool t, int i, int j) {
    return t ? x[j + static_cast<std::int64_t>(i) * ld] : x[i + static_cast<std::int64_t>(j) * ld];
  };
  Floats out(static_cast<std::size_t>(g.m) * g.n);
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) {
      double sum = 0;
      for (int l = 0; l < g.k; ++l) {
        sum += static_cast<double>(at(first, g.first_ld, g.first_op_t, i, l)) *
               at(second, g.second_ld, g.second_op_t, l, j);
      }
      double v = args.alpha * sum;
      if (!key.beta_zero) v += static_cast<double>(args.beta) * c[i + j * c_ld];
      if (key.epilogue == GemmEpilogue::kBias) v += args.bias[i];
      out[i + static_cast<std::size_t>(j) * g.m] = static_cast<float>(v);
    }
  }
  for (int j = 0; j < g.n; ++j) {  // written after every read: C may be D
    for (int i = 0; i < g.m; ++i)
      args.d[i + j * g.c_ld] = out[i + static_cast<std::size_t>(j) * g.m];
  }
}

void ExpectClose(const Floats& actual, const Floats& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * (1 + std::abs(expected[i]))) << what << " at " << i;
  }
}

GemmOperand F32(const Floats& v) { return GemmOperand{v.data(), nullptr}; }

constexpr int kRows = 7, kIn = 5, kOut = 6;

TEST(LinearGemm, ForwardWithBiasInTheEpilogueAndResidualAsCMatchesTheCpuEngine) {
  const Floats x = Random(kRows * kIn, 1), w = Random(kOut * kIn, 2), bias = Random(kOut, 3);
  const Floats residual = Random(kRows * kOut, 4);
  cpu::Tensor y_cpu(kRows, kOut);
  const cpu::Tensor bias_t = ToTensor(bias, 1, kOut);
  cpu::LinearForward(ToTensor(x, kRows, kIn), ToTensor(w, kOut, kIn), &bias_t, y_cpu);
  const Floats plain = ToFloats(y_cpu);
  Floats with_residual = plain;
  for (std::size_t i = 0; i < plain.size(); ++i) with_residual[i] += residual[i];

  Floats y(kRows * kOut, 99.0f);  // beta 0: whatever y held does not matter
  GemmArgs args =
      LinearForwardArgs(kRows, kIn, kOut, F32(x), F32(w), bias.data(), nullptr, y.data());
  EXPECT_EQ(MakeGemmPlanKey(args, GemmPrecision::kFp32).epilogue, GemmEpilogue::kBias);
  RunAsCublasLt(args);
  ExpectClose(y, plain, "x W^T + b");

  std::fill(y.begin(), y.end(), 99.0f);
  args =
      LinearForwardArgs(kRows, kIn, kOut, F32(x), F32(w), bias.data(), residual.data(), y.data());
  const GemmPlanKey key = MakeGemmPlanKey(args, GemmPrecision::kFp32);
  EXPECT_FALSE(key.c_is_d);
  EXPECT_FALSE(key.beta_zero);
  RunAsCublasLt(args);
  ExpectClose(y, with_residual, "x W^T + b + residual");

  args = LinearForwardArgs(kRows, kIn, kOut, F32(x), F32(w), nullptr, nullptr, y.data());
  EXPECT_EQ(MakeGemmPlanKey(args, GemmPrecision::kFp32).epilogue, GemmEpilogue::kNone);
}

TEST(LinearGemm, InputGradOverwritesOrAccumulatesLikeTheCpuEngine) {
  const Floats dy = Random(kRows * kOut, 5), w = Random(kOut * kIn, 6),
               dx0 = Random(kRows * kIn, 7);
  cpu::Tensor dx_cpu(kRows, kIn);
  cpu::LinearInputGrad(ToTensor(dy, kRows, kOut), ToTensor(w, kOut, kIn), dx_cpu);
  const Floats expected = ToFloats(dx_cpu);
  Floats accumulated = expected;
  for (std::size_t i = 0; i < accumulated.size(); ++i) accumulated[i] += dx0[i];

  Floats dx = dx0;
  GemmArgs args = LinearInputGradArgs(kRows, kIn, kOut, F32(dy), F32(w), dx.data(), false);
  EXPECT_TRUE(MakeGemmPlanKey(args, GemmPrecision::kFp32).beta_zero);
  RunAsCublasLt(args);
  ExpectClose(dx, expected, "dx = dy W");
  dx = dx0;
  args = LinearInputGradArgs(kRows, kIn, kOut, F32(dy), F32(w), dx.data(), true);
  EXPECT_TRUE(MakeGemmPlanKey(args, GemmPrecision::kFp32).c_is_d);
  RunAsCublasLt(args);
  ExpectClose(dx, accumulated, "dx += dy W");
}

TEST(LinearGemm, WeightGradAccumulatesWithoutAnEpilogue) {
  const Floats dy = Random(kRows * kOut, 8), x = Random(kRows * kIn, 9),
               dw0 = Random(kOut * kIn, 10);
  cpu::Tensor dw_cpu = ToTensor(dw0, kOut, kIn);
  cpu::LinearWeightGrad(ToTensor(dy, kRows, kOut), ToTensor(x, kRows, kIn), dw_cpu, nullptr);
  Floats dw = dw0;
  const GemmArgs args = LinearWeightGradArgs(kRows, kIn, kOut, F32(dy), F32(x), dw.data());
  const GemmPlanKey key = MakeGemmPlanKey(args, GemmPrecision::kFp32);
  EXPECT_EQ(key.epilogue, GemmEpilogue::kNone);  // BGRAD overwrites: the bias gradient is a kernel
  EXPECT_TRUE(key.c_is_d);
  EXPECT_FALSE(key.beta_zero);
  RunAsCublasLt(args);
  ExpectClose(dw, ToFloats(dw_cpu), "dw += dy^T x");
}

// The head over padded logits (model.h's LogitsCols): an odd vocabulary's GEMMs against the CPU
// engine's unpadded head, the padding never read (it holds values that would show) nor written,
// and every leading dimension a multiple of 16 bytes in bf16 and fp32 (GPT-2's 50257 columns
// alone would leave a bf16 row 2-byte aligned).
TEST(HeadGemm, AnOddVocabularyIsPaddedAlignedAndMatchesTheCpuEngine) {
  EXPECT_EQ(LogitsCols(50257), 50304);
  EXPECT_EQ(LogitsCols(128256), 128256);
  EXPECT_EQ(LogitsCols(64), 64);
  EXPECT_EQ(LogitsCols(1), 64);
  const int vocab = 67, cols = LogitsCols(vocab), h = 8, rows = kRows;
  ASSERT_EQ(cols, 128);
  const Floats x = Random(rows * h, 11), w = Random(vocab * h, 12), dy = Random(rows * vocab, 13);
  Floats dy_padded(static_cast<std::size_t>(rows) * cols, 1e30f);
  for (int r = 0; r < rows; ++r) {
    std::copy_n(dy.begin() + r * vocab, vocab, dy_padded.begin() + r * cols);
  }
  cpu::Tensor logits_cpu(rows, vocab), dx_cpu(rows, h), dw_cpu(vocab, h);
  cpu::LinearForward(ToTensor(x, rows, h), ToTensor(w, vocab, h), nullptr, logits_cpu);
  cpu::LinearInputGrad(ToTensor(dy, rows, vocab), ToTensor(w, vocab, h), dx_cpu);
  cpu::LinearWeightGrad(ToTensor(dy, rows, vocab), ToTensor(x, rows, h), dw_cpu, nullptr);

  Floats logits(static_cast<std::size_t>(rows) * cols, 99.0f);
  RunAsCublasLt(HeadForwardArgs(rows, h, vocab, F32(x), F32(w), logits.data()));
  Floats real;
  for (int r = 0; r < rows; ++r) {
    real.insert(real.end(), logits.begin() + r * cols, logits.begin() + r * cols + vocab);
    for (int c = vocab; c < cols; ++c) ASSERT_EQ(logits[r * cols + c], 99.0f) << r << "," << c;
  }
  ExpectClose(real, ToFloats(logits_cpu), "logits");
  Floats dx(static_cast<std::size_t>(rows) * h), dw(static_cast<std::size_t>(vocab) * h, 0.0f);
  RunAsCublasLt(HeadInputGradArgs(rows, h, vocab, F32(dy_padded), F32(w), dx.data()));
  ExpectClose(dx, ToFloats(dx_cpu), "dx = dlogits W");
  RunAsCublasLt(HeadWeightGradArgs(rows, h, vocab, F32(dy_padded), F32(x), dw.data()));
  ExpectClose(dw, ToFloats(dw_cpu), "dw += dlogits^T x");

  const int gpt2 = 50257, hidden = 768, tokens = 8192;
  for (const GemmArgs& g : {HeadForwardArgs(tokens, hidden, gpt2, {}, {}, nullptr),
                            HeadInputGradArgs(tokens, hidden, gpt2, {}, {}, nullptr),
                            HeadWeightGradArgs(tokens, hidden, gpt2, {}, {}, nullptr)}) {
    EXPECT_EQ(g.lda * 2 % 16, 0) << g.lda;
    EXPECT_EQ(g.ldb * 2 % 16, 0) << g.ldb;
    EXPECT_EQ(g.ldd * 4 % 16, 0) << g.ldd;
  }
}

// Buffers 256-aligned like device allocations, so keys of equal shapes on different buffers match.
struct Aligned {
  std::vector<float> storage = std::vector<float>(4096 + 64);
  float* at(int offset_floats = 0) {
    auto address = reinterpret_cast<std::uintptr_t>(storage.data());
    const std::uintptr_t aligned = (address + 255) / 256 * 256;
    return reinterpret_cast<float*>(aligned) + offset_floats;
  }
};

TEST(GemmPlanKey, EqualShapesOnOtherBuffersShareAPlan) {
  Aligned one[4], two[4];
  auto args = [](Aligned* buf) {
    return LinearForwardArgs(64, 32, 48, {buf[0].at(), nullptr}, {buf[1].at(), nullptr},
                             buf[2].at(), nullptr, buf[3].at());
  };
  EXPECT_EQ(MakeGemmPlanKey(args(one), GemmPrecision::kBf16),
            MakeGemmPlanKey(args(two), GemmPrecision::kBf16));
  // beta 0 never reads C: a C beside D plans like C = D.
  GemmArgs with_c = LinearInputGradArgs(64, 32, 48, {one[0].at(), nullptr}, {one[1].at(), nullptr},
                                        one[3].at(), false);
  const GemmPlanKey key = MakeGemmPlanKey(with_c, GemmPrecision::kFp32);
  with_c.c = one[2].at();
  with_c.ldc = 7;
  EXPECT_EQ(MakeGemmPlanKey(with_c, GemmPrecision::kFp32), key);
  EXPECT_TRUE(key.c_is_d);
  EXPECT_EQ(key.alignment, 256u);
}

TEST(GemmPlanKey, TellsApartEverythingThatChangesThePlan) {
  Aligned buf[5];
  const GemmArgs base = LinearForwardArgs(64, 32, 48, {buf[0].at(), nullptr},
                                          {buf[1].at(), nullptr}, nullptr, nullptr, buf[3].at());
  const GemmPlanKey base_key = MakeGemmPlanKey(base, GemmPrecision::kFp32);
  const std::vector<std::pair<const char*, std::function<void(GemmArgs&)>>> changes = {
      {"trans_a", [](GemmArgs& g) { g.trans_a = true; }},
      {"trans_b", [](GemmArgs& g) { g.trans_b = false; }},
      {"m", [](GemmArgs& g) { g.m = 63; }},
      {"n", [](GemmArgs& g) { g.n = 40; }},
      {"k", [](GemmArgs& g) { g.k = 16; }},
      {"lda", [](GemmArgs& g) { g.lda = 40; }},
      {"ldb", [](GemmArgs& g) { g.ldb = 40; }},
      {"ldd", [](GemmArgs& g) { g.ldd = 56; }},
      {"epilogue", [&](GemmArgs& g) { g.bias = buf[2].at(); }},
      {"beta", [](GemmArgs& g) { g.beta = 1.0f; }},
      {"C beside D", [&](GemmArgs& g) { g.beta = 1.0f, g.c = buf[4].at(), g.ldc = 48; }},
      {"alignment of A", [&](GemmArgs& g) { g.a.f32 = buf[0].at(1); }},
      {"alignment of D", [&](GemmArgs& g) { g.d = buf[3].at(4); }},
      {"alignment of the bias", [&](GemmArgs& g) { g.bias = buf[2].at(2); }},
  };
  std::vector<GemmPlanKey> keys{base_key};
  for (const auto& [what, change] : changes) {
    GemmArgs g = base;
    change(g);
    const GemmPlanKey key = MakeGemmPlanKey(g, GemmPrecision::kFp32);
    for (const GemmPlanKey& other : keys) EXPECT_FALSE(key == other) << what;
    keys.push_back(key);
  }
  EXPECT_FALSE(MakeGemmPlanKey(base, GemmPrecision::kBf16) == base_key) << "precision";
  // beta 1 with C = D and with C beside D: two plans.
  GemmArgs in_place = base, beside = base;
  in_place.beta = beside.beta = 1.0f;
  beside.c = buf[4].at();
  beside.ldc = 48;
  EXPECT_TRUE(MakeGemmPlanKey(in_place, GemmPrecision::kFp32).c_is_d);
  EXPECT_FALSE(MakeGemmPlanKey(beside, GemmPrecision::kFp32).c_is_d);
}

TEST(GemmPlanKey, Bf16ReadsTheShadowOrAnAlignedScratch) {
  Aligned buf[3];
  GemmArgs g = LinearForwardArgs(64, 32, 48, {buf[0].at(1), nullptr}, {buf[1].at(), nullptr},
                                 nullptr, nullptr, buf[2].at());
  EXPECT_EQ(MakeGemmPlanKey(g, GemmPrecision::kFp32).alignment, 4u);
  // bf16 rounds the misaligned fp32 x into an aligned scratch buffer.
  EXPECT_EQ(MakeGemmPlanKey(g, GemmPrecision::kBf16).alignment, 256u);
  g.b.bf16 = reinterpret_cast<const __nv_bfloat16*>(buf[1].at()) + 1;  // a shadow 2 bytes in
  EXPECT_EQ(MakeGemmPlanKey(g, GemmPrecision::kBf16).alignment, 2u);
  EXPECT_EQ(MakeGemmPlanKey(g, GemmPrecision::kFp32).alignment, 4u);
}

TEST(GemmPlanKey, PointerAlignmentIsTheLargestPowerOfTwoUpTo256) {
  EXPECT_EQ(PointerAlignment(nullptr), 256u);
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(std::uintptr_t{4096})), 256u);
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(std::uintptr_t{4096 + 48})), 16u);
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(std::uintptr_t{4096 + 2})), 2u);
  EXPECT_EQ(PointerAlignment(reinterpret_cast<const void*>(std::uintptr_t{4097})), 1u);
}

TEST(GemmPlanKey, EpiloguesMapToCublasLt) {
  EXPECT_EQ(LtEpilogue(GemmEpilogue::kNone), CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_EQ(LtEpilogue(GemmEpilogue::kBias), CUBLASLT_EPILOGUE_BIAS);
}

}  // namespace
}  // namespace pipette::cuda
