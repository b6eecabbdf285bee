#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "check.h"
#include "gemm_plan.h"
#include "gemm_plan_internal.h"
#include "kernels.h"
#include "rank_device.h"

namespace pipette::cuda {

using internal::CIsD;
using internal::kMaxCandidates;
using internal::Preference;
using internal::Span;

double MedianStreamSeconds(cudaStream_t stream, int warmup, int reps,
                           const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(std::max(reps, 1)));
  for (cudaEvent_t& e : events) PIPETTE_CUDA_CHECK(cudaEventCreate(&e));
  for (std::size_t i = 0; i < events.size(); i += 2) {
    PIPETTE_CUDA_CHECK(cudaEventRecord(events[i], stream));
    fn();
    PIPETTE_CUDA_CHECK(cudaEventRecord(events[i + 1], stream));
  }
  PIPETTE_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (std::size_t i = 0; i < events.size(); i += 2) {
    float ms = 0;
    PIPETTE_CUDA_CHECK(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
    seconds.push_back(ms * 1e-3);
  }
  for (cudaEvent_t& e : events) (void)cudaEventDestroy(e);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

bool GemmAutotuneFromEnv() {
  const char* value = std::getenv("PIPETTE_GEMM_AUTOTUNE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

const void* RankDevice::AsBf16(const float* x, std::int64_t n, int slot) {
  if (bf16_elements_[slot] < n) {  // grown in stream order; counted as the rank's memory
    if (bf16_[slot] != nullptr) PIPETTE_CUDA_CHECK(cudaFreeAsync(bf16_[slot], stream_));
    meter_.live -= bf16_elements_[slot] * 2;
    PIPETTE_CUDA_CHECK(cudaMallocAsync(&bf16_[slot], static_cast<std::size_t>(n) * 2, stream_));
    bf16_elements_[slot] = n;
    meter_.Add(n * 2);
  }
  kernels::CastToBf16(x, n, static_cast<__nv_bfloat16*>(bf16_[slot]), stream_);
  ++operand_roundings_;
  return bf16_[slot];
}

void RankDevice::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.a.f32 = a;
  g.lda = lda;
  g.b.f32 = b;
  g.ldb = ldb;
  g.beta = beta;
  g.d = c;
  g.ldd = ldc;
  Gemm(g);
}

namespace {

// D = beta C for an empty product (cuBLASLt refuses k = 0), beta 0 or 1, no bias.
void EmptyProduct(const GemmArgs& args, cudaStream_t stream) {
  if (args.bias != nullptr) throw std::invalid_argument("Gemm: k = 0 with a bias");
  const std::size_t row_bytes = static_cast<std::size_t>(args.n) * sizeof(float);
  const std::size_t d_pitch = static_cast<std::size_t>(args.ldd) * sizeof(float);
  if (args.beta == 0.0f) {
    PIPETTE_CUDA_CHECK(cudaMemset2DAsync(args.d, d_pitch, 0, row_bytes, args.m, stream));
  } else if (args.beta != 1.0f) {
    throw std::invalid_argument("Gemm: k = 0 with beta other than 0 or 1");
  } else if (!CIsD(args)) {
    PIPETTE_CUDA_CHECK(cudaMemcpy2DAsync(args.d, d_pitch, args.c,
                                         static_cast<std::size_t>(args.ldc) * sizeof(float),
                                         row_bytes, args.m, cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace

const void* RankDevice::OperandData(const GemmOperand& op, std::int64_t span, int slot) {
  if (precision_ == GemmPrecision::kFp32) return op.f32;
  if (op.bf16 != nullptr) return op.bf16;
  return AsBf16(op.f32, span, slot);
}

GemmPlan& RankDevice::Plan(const GemmArgs& args, const GemmPlanKey& key) {
  const auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  auto plan = std::make_unique<GemmPlan>(key, g, c_ld);
  auto ask = [&] {
    plan->desc.SetEpilogue(plan->bias_kernel ? GemmEpilogue::kNone : key.epilogue);
    if (key.epilogue == GemmEpilogue::kBias && !plan->bias_kernel) plan->desc.SetBias(args.bias);
    Preference pref(static_cast<std::size_t>(workspace_bytes_), key.alignment);
    std::vector<cublasLtMatmulHeuristicResult_t> results(kMaxCandidates);
    int found_count = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        lt_, plan->desc.handle, plan->a.handle, plan->b.handle, plan->c.handle, plan->d.handle,
        pref.handle, kMaxCandidates, results.data(), &found_count);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) {  // not supported (the epilogue?): none found
      PIPETTE_CUBLAS_CHECK(status);
    } else {
      found_count = 0;
    }
    plan->candidates.clear();
    for (int i = 0; i < found_count; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i]);
    }
  };
  ask();
  if (plan->candidates.empty() && key.epilogue == GemmEpilogue::kBias) {
    plan->bias_kernel = true;  // no algorithm with the epilogue for this shape: a kernel adds it
    ask();
  }
  if (plan->candidates.empty()) {
    throw std::runtime_error(fmt::format(
        "cuBLASLt offers no algorithm for the {} GEMM {}{} m {} n {} k {} (lda {}, ldb {}, ldc {}, "
        "ldd {}; operands {}-byte aligned){}",
        key.precision == GemmPrecision::kBf16 ? "bf16" : "fp32", args.trans_a ? "T" : "N",
        args.trans_b ? "T" : "N", args.m, args.n, args.k, args.lda, args.ldb, key.ldc, args.ldd,
        key.alignment, key.epilogue == GemmEpilogue::kBias ? " with a bias" : ""));
  }
  GemmPlan& made = *plan;
  plans_.emplace(key, std::move(plan));
  if (autotune_ && made.candidates.size() > 1) Autotune(args, made);
  return made;
}

void RankDevice::Gemm(const GemmArgs& args) {
  if (args.m == 0 || args.n == 0) return;
  if (args.k == 0) return EmptyProduct(args, stream_);
  if (args.c == args.d && args.c != nullptr && args.ldc != args.ldd) {
    throw std::invalid_argument("Gemm: C is D with ldc != ldd");
  }
  const GemmPlanKey key = MakeGemmPlanKey(args, precision_);
  GemmPlan& plan = Plan(args, key);
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  const void* first = OperandData(args.b, Span(g.first_rows, g.first_cols, g.first_ld), 0);
  const void* second = OperandData(args.a, Span(g.second_rows, g.second_cols, g.second_ld), 1);
  const bool epilogue_bias = key.epilogue == GemmEpilogue::kBias && !plan.bias_kernel;
  if (epilogue_bias) plan.desc.SetBias(args.bias);
  const float* c = key.c_is_d ? args.d : args.c;
  PIPETTE_CUBLAS_CHECK(cublasLtMatmul(lt_, plan.desc.handle, &args.alpha, first, plan.a.handle,
                                      second, plan.b.handle, &args.beta, c, plan.c.handle, args.d,
                                      plan.d.handle, &plan.algo(), workspace_,
                                      static_cast<std::size_t>(workspace_bytes_), stream_));
  if (plan.bias_kernel) {
    if (args.ldd != args.n) throw std::invalid_argument("Gemm: a bias needs ldd = n here");
    kernels::AddBias(args.d, args.bias, args.m, args.n, stream_);
  }
}

std::vector<double> RankDevice::TimeGemmAlgos(const GemmArgs& args, int max_algos, int warmup,
                                              int reps, int* chosen) {
  if (args.m == 0 || args.n == 0 || args.k == 0) return {};
  GemmPlan& plan = Plan(args, MakeGemmPlanKey(args, precision_));
  if (chosen != nullptr) *chosen = plan.chosen;
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  const void* first = OperandData(args.b, Span(g.first_rows, g.first_cols, g.first_ld), 0);
  const void* second = OperandData(args.a, Span(g.second_rows, g.second_cols, g.second_ld), 1);
  if (args.bias != nullptr && !plan.bias_kernel) plan.desc.SetBias(args.bias);
  void* scratch = nullptr;  // D's span: the timed runs leave the caller's D alone
  const std::size_t d_bytes = static_cast<std::size_t>(Span(g.c_rows, g.c_cols, g.c_ld)) * 4;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&scratch, d_bytes, stream_));
  float* d = static_cast<float*>(scratch);
  const float* c = CIsD(args) ? d : args.c;
  std::vector<double> seconds;
  const int count = std::min<int>(max_algos, static_cast<int>(plan.candidates.size()));
  for (int i = 0; i < count; ++i) {
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const double s = MedianStreamSeconds(stream_, warmup, reps, [&] {
      const cublasStatus_t r = cublasLtMatmul(
          lt_, plan.desc.handle, &args.alpha, first, plan.a.handle, second, plan.b.handle,
          &args.beta, c, plan.c.handle, d, plan.d.handle, &plan.candidates[i].algo, workspace_,
          static_cast<std::size_t>(workspace_bytes_), stream_);
      if (r != CUBLAS_STATUS_SUCCESS) status = r;
    });
    seconds.push_back(status == CUBLAS_STATUS_SUCCESS ? s
                                                      : std::numeric_limits<double>::infinity());
  }
  PIPETTE_CUDA_CHECK(cudaFreeAsync(scratch, stream_));
  Synchronize();
  return seconds;
}

void RankDevice::Autotune(const GemmArgs& args, GemmPlan& plan) {
  // Timed on a scratch D; ties keep the heuristic's order, so the choice is the earliest fastest.
  const std::vector<double> seconds = TimeGemmAlgos(args, kMaxCandidates, 2, 5);
  const auto best = std::min_element(seconds.begin(), seconds.end());
  if (best != seconds.end() && std::isfinite(*best)) {
    plan.chosen = static_cast<int>(best - seconds.begin());
  }
}

}  // namespace pipette::cuda
