// Internal to the CUDA engine's GEMM files (gemm_plan.cc, rank_device.cc, rank_device_gemm.cc):
// GemmPlan, one cached GEMM of a RankDevice, with the cuBLASLt objects it is made of (descriptor,
// layouts, heuristic preference, each owning its handle: not copyable, destroyed with it), and the
// helpers the plan key and the GEMM calls share. A plan is owned by its RankDevice (plans_) and,
// like it, used from the rank's thread only.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "check.h"
#include "gemm_plan.h"

namespace pipette::cuda {
namespace internal {

// A cuBLASLt matrix layout of `rows` x `cols` column-major with leading dimension `ld`.
struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  Layout(cudaDataType_t type, int rows, int cols, int ld) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&handle, type, rows, cols, ld));
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(handle); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

struct MatmulDesc {
  cublasLtMatmulDesc_t handle = nullptr;
  MatmulDesc(bool trans_a, bool trans_b) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&handle, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(handle); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;

  void SetEpilogue(GemmEpilogue epilogue) {
    const cublasLtEpilogue_t e = LtEpilogue(epilogue);
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
  }
  // The bias vector's type is left at its default, D's (fp32), which our bias is.
  void SetBias(const float* bias) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &bias, sizeof bias));
  }
};

struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  Preference(std::size_t workspace, std::uint32_t alignment) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&handle));
    Set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
    for (const cublasLtMatmulPreferenceAttributes_t a :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      Set(a, &alignment, sizeof alignment);
    }
  }
  ~Preference() { cublasLtMatmulPreferenceDestroy(handle); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  void Set(cublasLtMatmulPreferenceAttributes_t attribute, const void* value, std::size_t size) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(handle, attribute, value, size));
  }
};

// The most algorithms a plan asks the heuristic for (the candidates autotuning times).
constexpr int kMaxCandidates = 32;

// Elements a column-major operand spans in memory: all columns but the last whole, the last to
// its rows.
inline std::int64_t Span(int rows, int cols, int ld) {
  return static_cast<std::int64_t>(cols - 1) * ld + rows;
}

// Whether the GEMM writes D over C (C is not read when beta is 0).
inline bool CIsD(const GemmArgs& args) {
  return args.beta == 0.0f || args.c == nullptr || args.c == args.d;
}

}  // namespace internal

// One cached GEMM: the descriptor (transposes, epilogue), the four layouts and the algorithms the
// heuristic offered, `chosen` the one every call runs.
struct GemmPlan {
  internal::MatmulDesc desc;
  internal::Layout a, b, c, d;
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  int chosen = 0;
  bool bias_kernel = false;  // the heuristic had nothing with the bias epilogue: AddBias after

  GemmPlan(const GemmPlanKey& key, const ColumnMajorGemm& g, int c_ld)
      : desc(g.first_op_t, g.second_op_t),
        a(InType(key), g.first_rows, g.first_cols, g.first_ld),
        b(InType(key), g.second_rows, g.second_cols, g.second_ld),
        c(CUDA_R_32F, g.c_rows, g.c_cols, c_ld),
        d(CUDA_R_32F, g.c_rows, g.c_cols, g.c_ld) {}
  static cudaDataType_t InType(const GemmPlanKey& key) {
    return key.precision == GemmPrecision::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
  }
  const cublasLtMatmulAlgo_t& algo() const { return candidates[chosen].algo; }
};

}  // namespace pipette::cuda
