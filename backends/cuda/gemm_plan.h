// A GEMM of the CUDA engine as plain values: the row-major GEMM the engine asks for (GemmArgs, as
// the CPU engine's Gemm takes it), its mapping onto the column-major product cuBLASLt computes
// (AsColumnMajor) and the key of the cached plan that runs it (GemmPlanKey, MakeGemmPlanKey).
//
// Pure values and functions: no device, no cuBLASLt handle (only its epilogue enum), so
// tests/cuda/cuda_host_test.cc and gemm_plan_test.cc check them without a GPU. The plans themselves
// (descriptor, layouts, algorithms) are RankDevice's, one per key (rank_device.h). Thread-safe.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cstdint>

namespace pipette::cuda {

// A row-major GEMM C = alpha op(A) op(B) + beta C (the CPU engine's Gemm) as the column-major
// product cuBLASLt computes: C^T (n x m, leading dimension ldc) = op(B)^T op(A)^T. The first
// operand is B's memory as an `first_rows` x `first_cols` column-major matrix (leading dimension
// ldb) used with `first_op_t` (transposed or not), the second is A's likewise. Pure function;
// tests/cuda/cuda_host_test.cc checks it against a row-major product without a GPU.
struct ColumnMajorGemm {
  int m = 0, n = 0, k = 0;  // the column-major product: (m x k) (k x n), m = the row-major n
  bool first_op_t = false, second_op_t = false;
  int first_rows = 0, first_cols = 0, first_ld = 0;
  int second_rows = 0, second_cols = 0, second_ld = 0;
  int c_rows = 0, c_cols = 0, c_ld = 0;
};
ColumnMajorGemm AsColumnMajor(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb,
                              int ldc);

enum class GemmPrecision {
  kFp32,  // fp32 operands, fp32 accumulation: for checking against the CPU engine
  kBf16,  // bf16 operands (rounded from the fp32 values), fp32 accumulation and output
};

// One operand of a GEMM: its fp32 values and, when the caller has them (a weight's shadow), the
// same values rounded to bf16. fp32 precision reads f32 only; bf16 precision reads bf16 when it is
// there and otherwise rounds f32 into a scratch buffer (activations).
struct GemmOperand {
  const float* f32 = nullptr;
  const __nv_bfloat16* bf16 = nullptr;
};

// What cuBLASLt applies after the product. kBias: a bias vector of n elements (one per column of
// the row-major D, i.e. per row of cuBLASLt's column-major D: CUBLASLT_EPILOGUE_BIAS) added to
// every row.
enum class GemmEpilogue : std::uint8_t { kNone, kBias };

// One row-major GEMM D = alpha op(A) op(B) + beta C (+ bias on every row), op(A) m x k, op(B)
// k x n, row strides lda, ldb, ldc, ldd. `c` null means C is D (ldc is then ldd); C != D is how a
// residual add rides along (D = x W^T + b + residual).
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  GemmOperand a;
  int lda = 0;
  GemmOperand b;
  int ldb = 0;
  float beta = 0.0f;
  const float* c = nullptr;
  int ldc = 0;
  float* d = nullptr;
  int ldd = 0;
  const float* bias = nullptr;  // n floats: the epilogue kBias; null: kNone
};

// What a cached GEMM plan is for: everything that decides its descriptor, layouts and algorithm.
// Two calls with equal keys share one plan; pointers enter only through their alignment (the
// heuristic's min-alignment preferences) and whether C is D. Pure value; ordered for std::map.
struct GemmPlanKey {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0, ldd = 0;
  GemmPrecision precision = GemmPrecision::kFp32;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  bool beta_zero = false;
  bool c_is_d = true;
  std::uint32_t alignment = 256;       // bytes A, B, C and D are all aligned to, at most 256
  std::uint32_t bias_alignment = 256;  // the bias vector's (the heuristic reads its pointer)
  bool operator==(const GemmPlanKey& o) const;
  bool operator<(const GemmPlanKey& o) const;
};

// The largest power of two <= 256 that divides the address (256 for null).
std::uint32_t PointerAlignment(const void* p);
// The plan key of `args` at `precision`. beta = 0 plans C as D (cuBLASLt does not read C then).
// The alignment counts the bf16 operand a precision of bf16 reads, or its scratch (256 bytes).
GemmPlanKey MakeGemmPlanKey(const GemmArgs& args, GemmPrecision precision);
// The column-major product cuBLASLt runs for `args` (AsColumnMajor of its shape; D's leading
// dimension ldd in c_ld, C's ldc in `c_ld_out`).
ColumnMajorGemm AsColumnMajor(const GemmArgs& args, int* c_ld_out);
cublasLtEpilogue_t LtEpilogue(GemmEpilogue epilogue);

}  // namespace pipette::cuda
