// What the kernel tests share: running a kernel's per-thread function over every index on the
// host, as a launch would, and reproducible random inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace pipette::cuda::test_util {

using Floats = std::vector<float>;

// Calls f(i) for every thread index i < n.
template <class F>
void ForEachIndex(std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) f(i);
}

// n values uniform in [lo, hi) from `seed`.
inline Floats Random(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Floats v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace pipette::cuda::test_util
