// Device memory and the per-rank execution context of the CUDA engine.
//
// DeviceTensor is a move-only rows x cols fp32 matrix in device memory, allocated and freed in
// stream order (cudaMallocAsync / cudaFreeAsync) on its rank's stream and counted by its rank's
// DeviceMeter, which is how the engine measures each rank's memory (one process may hold several
// ranks: --virtual-ranks). RankDevice is what one rank computes with: its stream, its cuBLASLt
// handle and workspace, the GEMM precision, its cache of GEMM plans (one per shape: descriptor,
// layouts and algorithm, chosen once), the bf16 shadows of its weights and the meter. Used from
// the rank's thread only.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace pipette::cuda {

// Bytes held by one rank's tensors now and at their peak.
struct DeviceMeter {
  std::int64_t live = 0;
  std::int64_t peak = 0;
  void Add(std::int64_t bytes) {
    live += bytes;
    if (live > peak) peak = live;
  }
  void ResetPeak() { peak = live; }
};

struct Bf16ShadowBuffer;  // a tensor's values rounded to bf16 (device.cc)

class DeviceTensor {
 public:
  DeviceTensor();
  // rows x cols in stream order on `stream`, zero-filled unless `zero` is false (then undefined
  // until written). REQUIRES: rows, cols >= 0.
  DeviceTensor(int rows, int cols, cudaStream_t stream, DeviceMeter* meter, bool zero = true);
  ~DeviceTensor();
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  std::int64_t size() const { return static_cast<std::int64_t>(rows_) * cols_; }
  std::int64_t bytes() const { return size() * static_cast<std::int64_t>(sizeof(float)); }
  bool empty() const { return size() == 0; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  // The stream the tensor is freed on (its allocating stream unless moved to another rank's).
  void set_stream(cudaStream_t stream);
  // Counts the tensor on `meter` from now on instead of its allocating rank's.
  void set_meter(DeviceMeter* meter);
  // The bf16 copy of the values made by RankDevice::Bf16Shadow, or null before it.
  const __nv_bfloat16* bf16_shadow() const;

 private:
  friend class RankDevice;
  void Release();

  // A cache of the values (RankDevice::Bf16Shadow adds it to a const weight); freed with them.
  mutable std::unique_ptr<Bf16ShadowBuffer> shadow_;
  int rows_ = 0;
  int cols_ = 0;
  float* data_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceMeter* meter_ = nullptr;
};

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

// The GEMMs of the linear layers (row-major, `rows` tokens, weight w out x in), as plain values:
// y = x W^T (+ bias in the epilogue) (+ residual as C with beta 1, D = y).
GemmArgs LinearForwardArgs(int rows, int in, int out, GemmOperand x, GemmOperand w,
                           const float* bias, const float* residual, float* y);
// dx (+)= dy W.
GemmArgs LinearInputGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand w, float* dx,
                             bool accumulate);
// dw += dy^T x (no epilogue: the bias gradient is a kernel, see LinearWeightGrad).
GemmArgs LinearWeightGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand x, float* dw);

// The median of `reps` timings (seconds, CUDA events on `stream`) of `fn`'s work on `stream`,
// after `warmup` untimed runs.
double MedianStreamSeconds(cudaStream_t stream, int warmup, int reps,
                           const std::function<void()>& fn);

// True when the environment sets PIPETTE_GEMM_AUTOTUNE=1.
bool GemmAutotuneFromEnv();

struct GemmPlan;  // device.cc: descriptor, layouts, algorithm

class RankDevice {
 public:
  // Creates the rank's stream, cuBLASLt handle and workspace on the current device. With
  // `autotune` every new GEMM plan times the heuristic's candidates once and keeps the fastest
  // (default off: the heuristic's first; the choice, once made, never changes).
  explicit RankDevice(GemmPrecision precision, bool autotune = GemmAutotuneFromEnv());
  ~RankDevice();
  RankDevice(const RankDevice&) = delete;
  RankDevice& operator=(const RankDevice&) = delete;

  cudaStream_t stream() const { return stream_; }
  DeviceMeter& meter() { return meter_; }
  GemmPrecision precision() const { return precision_; }

  // A zero-filled tensor of this rank.
  DeviceTensor Tensor(int rows, int cols) { return DeviceTensor(rows, cols, stream_, &meter_); }
  // A tensor of this rank with undefined contents, for an output that a kernel or a GEMM with
  // beta 0 writes whole: no fill pass (a GEMM output of a 1.3B stage is tens of MB).
  DeviceTensor Uninitialized(int rows, int cols) {
    return DeviceTensor(rows, cols, stream_, &meter_, /*zero=*/false);
  }
  // A copy of `t` (same rank).
  DeviceTensor Clone(const DeviceTensor& t);
  // Host -> device and back (the download waits for the stream).
  DeviceTensor Upload(const float* host, int rows, int cols);
  void Upload(const float* host, DeviceTensor& t);
  std::vector<float> Download(const DeviceTensor& t);
  // An int32 device array of `values` (freed by the caller's Free), e.g. a microbatch's tokens.
  std::int32_t* UploadInts(const std::vector<std::int32_t>& values);
  void Free(void* device_pointer);
  void Synchronize();

  // C = alpha * op(A) op(B) + beta * C, row-major with row strides, op(X) = X or X^T, op(A) m x k,
  // op(B) k x n: the CPU engine's Gemm (backends/cpu/tensor.h), through cuBLASLt at this rank's
  // precision. An empty product (m, n or k = 0) only scales C.
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc);
  // `args` through this rank's cached plan for its key (created on first use: the heuristic is
  // asked once per key). An empty product (m, n or k = 0) only scales C into D (no bias).
  void Gemm(const GemmArgs& args);

  // The bf16 shadow of weight `w`: made (and cast) on first use, kept with `w`, counted on the
  // meter, recast by RefreshBf16Shadows. REQUIRES: `w` lives on this rank.
  const __nv_bfloat16* Bf16Shadow(const DeviceTensor& w);
  // The operand a GEMM reads for weight `w`: its fp32 values, and its shadow at bf16 precision.
  GemmOperand WeightOperand(const DeviceTensor& w);
  // The operand a GEMM reads for activation `x`: its fp32 values, and at bf16 precision its values
  // rounded once into a shadow kept with `x` (freed with it, counted on the meter, never recast):
  // every activation a linear layer reads in F or I is read again by W, which then rounds nothing.
  // REQUIRES: nothing writes `x` after its first GEMM.
  GemmOperand ActivationOperand(const DeviceTensor& x);
  // At bf16 precision: `t`'s (never recast) shadow, allocated but not cast, for the kernel that
  // writes `t` to fill with the same values rounded (ActivationOperand then reads it); null at
  // fp32. REQUIRES: `t` has no shadow yet.
  __nv_bfloat16* ShadowToWrite(const DeviceTensor& t);
  // Recasts every shadow of this rank from its tensor's values (in stream order): call after
  // anything writes weights (the optimizer step, copies between shared parameters).
  void RefreshBf16Shadows();
  // The weight shadows (ActivationOperand's are not listed: nothing recasts them).
  int num_bf16_shadows() const { return static_cast<int>(shadows_.size()); }

  // GEMM plans made so far (one per distinct key).
  int num_gemm_plans() const { return static_cast<int>(plans_.size()); }
  // Operands rounded to bf16 inside a Gemm call so far (an operand without a shadow at bf16
  // precision: a pass over it before the product).
  std::int64_t num_operand_roundings() const { return operand_roundings_; }
  // The median time of each algorithm the heuristic offers for `args` (at most `max_algos`, in the
  // heuristic's order; operands rounded once beforehand at bf16 precision), on a scratch D: C,
  // D and the operands are left as they were. `chosen` (if not null) gets the index of the
  // algorithm `args`' plan uses (its plan is made if it was not).
  std::vector<double> TimeGemmAlgos(const GemmArgs& args, int max_algos, int warmup, int reps,
                                    int* chosen = nullptr);

 private:
  // `t`'s shadow, made on first use (cast from `t` when `cast`); listed for RefreshBf16Shadows
  // when `recast`.
  __nv_bfloat16* MakeShadow(const DeviceTensor& t, bool recast, bool cast = true);
  // `x`'s n elements as bf16 in a scratch buffer of this rank (slot 0 or 1).
  const void* AsBf16(const float* x, std::int64_t n, int slot);
  // The operand pointer cuBLASLt reads for `op` spanning `span` elements (slot for a cast).
  const void* OperandData(const GemmOperand& op, std::int64_t span, int slot);
  GemmPlan& Plan(const GemmArgs& args, const GemmPlanKey& key);
  void Autotune(const GemmArgs& args, GemmPlan& plan);

  friend struct Bf16ShadowBuffer;

  GemmPrecision precision_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::int64_t workspace_bytes_ = 0;
  void* bf16_[2] = {nullptr, nullptr};
  std::int64_t bf16_elements_[2] = {0, 0};
  DeviceMeter meter_;
  bool autotune_ = false;
  std::int64_t operand_roundings_ = 0;
  std::map<GemmPlanKey, std::unique_ptr<GemmPlan>> plans_;
  std::vector<Bf16ShadowBuffer*> shadows_;  // in creation order; each removes itself when freed
};

// y = x W^T + bias (+ residual) (bias and residual may be null): the CPU engine's LinearForward
// (and the residual add after it) as one cuBLASLt call, the bias in its epilogue and the
// residual as its C (beta 1, C != D). At bf16 precision W is read from its shadow.
void LinearForward(RankDevice& dev, const DeviceTensor& x, const DeviceTensor& w,
                   const DeviceTensor* bias, DeviceTensor& y,
                   const DeviceTensor* residual = nullptr);
// dx = dy W (accumulates into dx when `accumulate`).
void LinearInputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& w,
                     DeviceTensor& dx, bool accumulate = false);
// dw += dy^T x; dbias += column sums of dy (dbias may be null) by the BiasGrad kernel: cuBLASLt's
// BGRAD epilogues overwrite their vector (dbias accumulates over microbatches) and, at bf16,
// would sum the rounded dy.
void LinearWeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                      DeviceTensor& dw, DeviceTensor* dbias);

}  // namespace pipette::cuda
