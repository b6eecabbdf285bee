// Internal to the CUDA engine's device files (device_tensor.cc, rank_device.cc,
// rank_device_shadows.cc): Bf16ShadowBuffer, a tensor's values rounded to bf16.
//
// Owned by its DeviceTensor (freed with it, in stream order on the tensor's stream, and uncounted
// from its meter then); a shadow that RankDevice recasts is also listed by that rank until it is
// freed (or the rank goes first). Used from the rank's thread only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "device_tensor.h"
#include "rank_device.h"

namespace pipette::cuda {

// A tensor's values rounded to bf16, in memory of the tensor's rank, listed by the RankDevice
// that made it until it is freed (with its tensor).
struct Bf16ShadowBuffer {
  __nv_bfloat16* data = nullptr;
  const float* source = nullptr;  // the tensor's fp32 values
  std::int64_t n = 0;
  cudaStream_t stream = nullptr;
  DeviceMeter* meter = nullptr;
  RankDevice* owner = nullptr;
  ~Bf16ShadowBuffer() {
    if (owner != nullptr) {
      std::vector<Bf16ShadowBuffer*>& list = owner->shadows_;
      list.erase(std::remove(list.begin(), list.end(), this), list.end());
    }
    (void)cudaFreeAsync(data, stream);  // a destructor does not throw; a failed free leaks
    if (meter != nullptr) meter->live -= n * 2;
  }
};

}  // namespace pipette::cuda
