#include "rank_device.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bf16_shadow.h"
#include "check.h"
#include "gemm_plan_internal.h"

namespace pipette::cuda {
namespace {

constexpr std::int64_t kWorkspaceBytes = 32LL << 20;  // cuBLASLt's recommendation for Hopper

}  // namespace

RankDevice::RankDevice(GemmPrecision precision, bool autotune)
    : precision_(precision), autotune_(autotune) {
  // The stream-ordered pool keeps what it has: with its default release threshold (0) every
  // synchronisation (one per step) would return its memory to the OS and the next step would map
  // it again, inside the timed instructions. And it reuses memory freed on another stream only
  // where the program already orders the two: by default it may also make an allocation wait for
  // another stream's free (another virtual rank's, the communication stream's), a dependency the
  // program does not have that would couple the ranks' timings.
  int device = 0;
  cudaMemPool_t pool = nullptr;
  PIPETTE_CUDA_CHECK(cudaGetDevice(&device));
  PIPETTE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = UINT64_MAX;
  PIPETTE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int off = 0;
  PIPETTE_CUDA_CHECK(
      cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
  PIPETTE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off));
  PIPETTE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PIPETTE_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_bytes_ = kWorkspaceBytes;
  PIPETTE_CUDA_CHECK(
      cudaMallocAsync(&workspace_, static_cast<std::size_t>(workspace_bytes_), stream_));
  meter_.Add(workspace_bytes_);
}

RankDevice::~RankDevice() {
  for (Bf16ShadowBuffer* shadow : shadows_)
    shadow->owner = nullptr;  // tensors outliving their rank
  plans_.clear();
  // Only what was allocated: cudaFreeAsync(nullptr) may return cudaErrorInvalidValue, which would
  // stay this thread's last error and fail the next launch check (cudaGetLastError).
  for (void* p : bf16_) {
    if (p != nullptr) (void)cudaFreeAsync(p, stream_);
  }
  if (workspace_ != nullptr) (void)cudaFreeAsync(workspace_, stream_);
  (void)cudaStreamSynchronize(stream_);
  (void)cublasLtDestroy(lt_);
  (void)cudaStreamDestroy(stream_);
}

DeviceTensor RankDevice::Clone(const DeviceTensor& t) {
  DeviceTensor copy = Uninitialized(t.rows(), t.cols());
  if (!t.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(copy.data(), t.data(), static_cast<std::size_t>(t.bytes()),
                                       cudaMemcpyDeviceToDevice, stream_));
  }
  return copy;
}

DeviceTensor RankDevice::Upload(const float* host, int rows, int cols) {
  DeviceTensor t = Uninitialized(rows, cols);
  Upload(host, t);
  return t;
}

void RankDevice::Upload(const float* host, DeviceTensor& t) {
  if (t.empty()) return;
  PIPETTE_CUDA_CHECK(cudaMemcpyAsync(t.data(), host, static_cast<std::size_t>(t.bytes()),
                                     cudaMemcpyHostToDevice, stream_));
  Synchronize();  // the host buffer may go away after the call
}

std::vector<float> RankDevice::Download(const DeviceTensor& t) {
  std::vector<float> host(static_cast<std::size_t>(t.size()));
  if (!t.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.data(), static_cast<std::size_t>(t.bytes()),
                                       cudaMemcpyDeviceToHost, stream_));
  }
  Synchronize();
  return host;
}

std::int32_t* RankDevice::UploadInts(const std::vector<std::int32_t>& values) {
  void* p = nullptr;
  const std::size_t bytes = std::max<std::size_t>(1, values.size()) * sizeof(std::int32_t);
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
  if (!values.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(p, values.data(), values.size() * sizeof(std::int32_t),
                                       cudaMemcpyHostToDevice, stream_));
  }
  Synchronize();
  return static_cast<std::int32_t*>(p);
}

void RankDevice::Free(void* device_pointer) {
  if (device_pointer != nullptr) PIPETTE_CUDA_CHECK(cudaFreeAsync(device_pointer, stream_));
}

void RankDevice::Synchronize() { PIPETTE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace pipette::cuda
