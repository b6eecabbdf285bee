// Device memory and the per-rank execution context of the CUDA engine.
//
// DeviceTensor is a move-only rows x cols fp32 matrix in device memory, allocated and freed in
// stream order (cudaMallocAsync / cudaFreeAsync) on its rank's stream and counted by its rank's
// DeviceMeter, which is how the engine measures each rank's memory (one process may hold several
// ranks: --virtual-ranks). RankDevice is what one rank computes with: its stream, its cuBLASLt
// handle and workspace, the GEMM precision and the meter. Used from the rank's thread only.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
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

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // rows x cols, zero-filled in stream order on `stream`. REQUIRES: rows, cols >= 0.
  DeviceTensor(int rows, int cols, cudaStream_t stream, DeviceMeter* meter);
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
  void set_stream(cudaStream_t stream) { stream_ = stream; }
  // Counts the tensor on `meter` from now on instead of its allocating rank's.
  void set_meter(DeviceMeter* meter);

 private:
  void Release();

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

class RankDevice {
 public:
  // Creates the rank's stream, cuBLASLt handle and workspace on the current device.
  explicit RankDevice(GemmPrecision precision);
  ~RankDevice();
  RankDevice(const RankDevice&) = delete;
  RankDevice& operator=(const RankDevice&) = delete;

  cudaStream_t stream() const { return stream_; }
  DeviceMeter& meter() { return meter_; }
  GemmPrecision precision() const { return precision_; }

  // A zero-filled tensor of this rank.
  DeviceTensor Tensor(int rows, int cols) { return DeviceTensor(rows, cols, stream_, &meter_); }
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

 private:
  // `x`'s n elements as bf16 in a scratch buffer of this rank (slot 0 or 1).
  const void* AsBf16(const float* x, std::int64_t n, int slot);

  GemmPrecision precision_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::int64_t workspace_bytes_ = 0;
  void* bf16_[2] = {nullptr, nullptr};
  std::int64_t bf16_elements_[2] = {0, 0};
  DeviceMeter meter_;
};

// y = x W^T + bias (bias may be null): the CPU engine's LinearForward on the device.
void LinearForward(RankDevice& dev, const DeviceTensor& x, const DeviceTensor& w,
                   const DeviceTensor* bias, DeviceTensor& y);
// dx = dy W (accumulates into dx when `accumulate`).
void LinearInputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& w,
                     DeviceTensor& dx, bool accumulate = false);
// dw += dy^T x; dbias += column sums of dy (dbias may be null).
void LinearWeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                      DeviceTensor& dw, DeviceTensor* dbias);

}  // namespace pipette::cuda
