// The initial value of every model parameter, a pure function of (seed, parameter name), shared
// by the real engines: the CPU engine and the CUDA engine start from the same weights whatever
// the partition, so each checks the other and both check the unpipelined reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pipette {

// GPT-2's initial standard deviation of weight matrices and embeddings.
inline constexpr float kInitStd = 0.02f;

// Fills out[0..n) for parameter `name`: N(0, stddev^2) from a SplitMix64 stream keyed by
// (seed, name) when stddev > 0, else `fill` everywhere.
void InitParamValues(std::uint64_t seed, std::string_view name, float stddev, float fill,
                     float* out, std::size_t n);

}  // namespace pipette
