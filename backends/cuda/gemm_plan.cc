#include "gemm_plan.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "gemm_plan_internal.h"

namespace pipette::cuda {

using internal::CIsD;

ColumnMajorGemm AsColumnMajor(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb,
                              int ldc) {
  ColumnMajorGemm g;
  g.m = n;
  g.n = m;
  g.k = k;
  // B (row-major, k x n, or n x k when transposed) read column-major is B^T (or B): op N gives
  // op(B)^T when B is not transposed, op T when it is.
  g.first_op_t = trans_b;
  g.first_rows = trans_b ? k : n;
  g.first_cols = trans_b ? n : k;
  g.first_ld = ldb;
  g.second_op_t = trans_a;
  g.second_rows = trans_a ? m : k;
  g.second_cols = trans_a ? k : m;
  g.second_ld = lda;
  g.c_rows = n;
  g.c_cols = m;
  g.c_ld = ldc;
  return g;
}

bool GemmPlanKey::operator==(const GemmPlanKey& o) const { return !(*this < o) && !(o < *this); }

bool GemmPlanKey::operator<(const GemmPlanKey& o) const {
  auto tie = [](const GemmPlanKey& x) {
    return std::make_tuple(x.trans_a, x.trans_b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, x.ldd,
                           static_cast<int>(x.precision), static_cast<int>(x.epilogue), x.beta_zero,
                           x.c_is_d, x.alignment, x.bias_alignment);
  };
  return tie(*this) < tie(o);
}

std::uint32_t PointerAlignment(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

namespace {

// The pointer cuBLASLt reads for an operand: the fp32 values, or at bf16 precision the shadow,
// or a scratch buffer of this rank's (nullptr here: aligned to 256 like every allocation).
const void* ReadPointer(const GemmOperand& op, GemmPrecision precision) {
  if (precision == GemmPrecision::kFp32) return op.f32;
  return op.bf16;
}

}  // namespace

GemmPlanKey MakeGemmPlanKey(const GemmArgs& args, GemmPrecision precision) {
  GemmPlanKey key;
  key.trans_a = args.trans_a;
  key.trans_b = args.trans_b;
  key.m = args.m;
  key.n = args.n;
  key.k = args.k;
  key.lda = args.lda;
  key.ldb = args.ldb;
  key.c_is_d = CIsD(args);
  key.ldd = args.ldd;
  key.ldc = key.c_is_d ? args.ldd : args.ldc;
  key.precision = precision;
  key.epilogue = args.bias != nullptr ? GemmEpilogue::kBias : GemmEpilogue::kNone;
  key.beta_zero = args.beta == 0.0f;
  key.alignment =
      std::min({PointerAlignment(ReadPointer(args.a, precision)),
                PointerAlignment(ReadPointer(args.b, precision)),
                PointerAlignment(key.c_is_d ? args.d : args.c), PointerAlignment(args.d)});
  key.bias_alignment = PointerAlignment(args.bias);
  return key;
}

ColumnMajorGemm AsColumnMajor(const GemmArgs& args, int* c_ld_out) {
  *c_ld_out = CIsD(args) ? args.ldd : args.ldc;
  return AsColumnMajor(args.trans_a, args.trans_b, args.m, args.n, args.k, args.lda, args.ldb,
                       args.ldd);
}

cublasLtEpilogue_t LtEpilogue(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace pipette::cuda
