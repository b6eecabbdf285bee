// PIPETTE_CUDA_CHECK, PIPETTE_CUBLAS_CHECK and PIPETTE_NCCL_CHECK (backends/cuda/check.h): a failed
// status throws std::runtime_error naming the library, the host, the pid, file:line, the
// expression and the library's own error name; success passes. Error strings need no device, so
// this runs everywhere the CUDA engine builds.
#include "cuda/check.h"

#include <cublasLt.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace pipette::cuda {
namespace {

// The message of what `f` throws ("" when it throws nothing).
template <class F>
std::string ThrownMessage(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string Host() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return host;
}

TEST(DeviceChecks, CudaFailureNamesHostPidFileLineExpressionAndError) {
  const int line = __LINE__ + 1;
  const std::string m = ThrownMessage([] { PIPETTE_CUDA_CHECK(cudaErrorInvalidValue); });
  EXPECT_EQ(m.rfind("CUDA error on " + Host() + " (pid " + std::to_string(getpid()) + ") at ", 0),
            0u)
      << m;
  EXPECT_NE(m.find("check_test.cc:" + std::to_string(line) + ": cudaErrorInvalidValue: "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("cudaErrorInvalidValue: invalid argument"), std::string::npos) << m;
}

TEST(DeviceChecks, CublasFailureNamesTheStatus) {
  const std::string m = ThrownMessage([] { PIPETTE_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED); });
  EXPECT_EQ(m.rfind("cuBLAS error on ", 0), 0u) << m;
  EXPECT_NE(m.find(": CUBLAS_STATUS_NOT_SUPPORTED: CUBLAS_STATUS_NOT_SUPPORTED: "),
            std::string::npos)
      << m;
}

TEST(DeviceChecks, NcclFailureNamesTheResultAndInProgressPasses) {
  const std::string m = ThrownMessage([] { PIPETTE_NCCL_CHECK(ncclInvalidArgument); });
  EXPECT_EQ(m.rfind("NCCL error on ", 0), 0u) << m;
  EXPECT_NE(
      m.find(": ncclInvalidArgument: " + std::string(ncclGetErrorString(ncclInvalidArgument))),
      std::string::npos)
      << m;
  EXPECT_EQ(ThrownMessage([] { PIPETTE_NCCL_CHECK(ncclInProgress); }), "");
}

TEST(DeviceChecks, SuccessPasses) {
  EXPECT_EQ(ThrownMessage([] {
              PIPETTE_CUDA_CHECK(cudaSuccess);
              PIPETTE_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS);
              PIPETTE_NCCL_CHECK(ncclSuccess);
            }),
            "");
}

}  // namespace
}  // namespace pipette::cuda
