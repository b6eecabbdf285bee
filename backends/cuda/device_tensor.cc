#include "device_tensor.h"

#include <cstddef>
#include <cstdint>
#include <utility>

#include "bf16_shadow.h"
#include "check.h"

namespace pipette::cuda {

DeviceTensor::DeviceTensor(int rows, int cols, cudaStream_t stream, DeviceMeter* meter, bool zero)
    : rows_(rows), cols_(cols), stream_(stream), meter_(meter) {
  if (bytes() == 0) return;
  void* p = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(bytes()), stream_));
  if (zero) PIPETTE_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<std::size_t>(bytes()), stream_));
  data_ = static_cast<float*>(p);
  if (meter_ != nullptr) meter_->Add(bytes());
}

DeviceTensor::DeviceTensor() = default;

DeviceTensor::~DeviceTensor() { Release(); }

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : shadow_(std::move(other.shadow_)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      stream_(other.stream_),
      meter_(other.meter_) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    Release();
    shadow_ = std::move(other.shadow_);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    data_ = std::exchange(other.data_, nullptr);
    stream_ = other.stream_;
    meter_ = other.meter_;
  }
  return *this;
}

void DeviceTensor::set_stream(cudaStream_t stream) {
  stream_ = stream;
  if (shadow_ != nullptr) shadow_->stream = stream;
}

void DeviceTensor::set_meter(DeviceMeter* meter) {
  const std::int64_t held = bytes() + (shadow_ != nullptr ? shadow_->n * 2 : 0);
  if (meter_ != nullptr) meter_->live -= held;
  meter_ = meter;
  if (shadow_ != nullptr) shadow_->meter = meter;
  if (meter_ != nullptr) meter_->Add(held);
}

const __nv_bfloat16* DeviceTensor::bf16_shadow() const {
  return shadow_ != nullptr ? shadow_->data : nullptr;
}

void DeviceTensor::Release() {
  shadow_.reset();
  if (data_ == nullptr) return;
  (void)cudaFreeAsync(data_, stream_);  // a destructor does not throw; a failed free leaks
  if (meter_ != nullptr) meter_->live -= bytes();
  data_ = nullptr;
  rows_ = cols_ = 0;
}

}  // namespace pipette::cuda
