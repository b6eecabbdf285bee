// Device memory of the CUDA engine: DeviceTensor, a move-only rows x cols fp32 matrix in device
// memory, and DeviceMeter, the bytes one rank's tensors hold.
//
// A DeviceTensor is allocated and freed in stream order (cudaMallocAsync / cudaFreeAsync) on its
// rank's stream and counted by its rank's DeviceMeter, which is how the engine measures each
// rank's memory (one process may hold several ranks: --virtual-ranks). The tensor owns its memory
// and its bf16 shadow (bf16_shadow.h, made by RankDevice), both freed with it; ranks make them
// (RankDevice::Tensor, rank_device.h). Not thread-safe: used from its rank's thread only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

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

struct Bf16ShadowBuffer;  // a tensor's values rounded to bf16 (bf16_shadow.h)

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

}  // namespace pipette::cuda
