// What the CUDA tests that compare with the CPU engine share: moving values into and out of the
// CPU engine's tensors, and the element-wise comparison with a tolerance relative to the tensor.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "cpu/tensor.h"
#include "kernel_test_util.h"

namespace pipette::cuda::test_util {

inline cpu::Tensor ToTensor(const Floats& v, int rows, int cols) {
  cpu::Tensor t(rows, cols);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

inline Floats ToFloats(const cpu::Tensor& t) { return Floats(t.data(), t.data() + t.size()); }

// Every element within `rel` of the expected one, relative to its size plus the tensor's mean
// magnitude (elements near zero come from cancelling sums; their error is relative to the terms).
// Reports the first five elements out of tolerance.
inline void ExpectClose(const Floats& actual, const Floats& expected, double rel,
                        const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double mean = 0;
  for (float e : expected) mean += std::abs(e);
  mean /= static_cast<double>(std::max<std::size_t>(expected.size(), 1));
  int failures = 0;
  for (std::size_t i = 0; i < expected.size() && failures < 5; ++i) {
    const double tol = rel * (std::abs(expected[i]) + mean);
    if (!(std::abs(actual[i] - expected[i]) <= tol)) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs expected " << expected[i]
                    << " (tolerance " << tol << ")";
    }
  }
}

}  // namespace pipette::cuda::test_util
