// The per-rank execution context of the CUDA engine: RankDevice is what one rank computes with:
// its stream, its cuBLASLt handle and workspace, the GEMM precision, its cache of GEMM plans (one
// per shape: descriptor, layouts and algorithm, chosen once), the bf16 shadows of its weights and
// the meter of its memory.
//
// The rank owns its stream, handle, workspace, bf16 scratch buffers and plans, released with it;
// its tensors (device_tensor.h) are the caller's, and a tensor that outlives its rank keeps its
// shadow. Defined in rank_device.cc (memory, copies), rank_device_gemm.cc (the GEMMs, their plans
// and autotuning) and rank_device_shadows.cc (bf16 shadows). Not thread-safe: used from the
// rank's thread only.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "device_tensor.h"
#include "gemm_plan.h"

namespace pipette::cuda {

// The median of `reps` timings (seconds, CUDA events on `stream`) of `fn`'s work on `stream`,
// after `warmup` untimed runs.
double MedianStreamSeconds(cudaStream_t stream, int warmup, int reps,
                           const std::function<void()>& fn);

// True when the environment sets PIPETTE_GEMM_AUTOTUNE=1.
bool GemmAutotuneFromEnv();

struct GemmPlan;  // gemm_plan_internal.h: descriptor, layouts, algorithm

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

}  // namespace pipette::cuda
