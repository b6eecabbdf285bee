// Checked CUDA, cuBLAS(Lt) and NCCL calls: a failed call throws std::runtime_error naming the
// host, the call's file:line, the expression and the library's own error string. The engine's
// entry points turn the exception into a Status for the rank (and, under NCCL, abort the
// communicator so no peer waits forever).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace pipette::cuda {

[[noreturn]] void ThrowCudaError(const char* library, const char* expression, const char* file,
                                 int line, const std::string& error);

}  // namespace pipette::cuda

#define PIPETTE_CUDA_CHECK(expr)                                         \
  do {                                                                   \
    const cudaError_t pipette_err_ = (expr);                             \
    if (pipette_err_ != cudaSuccess) {                                   \
      ::pipette::cuda::ThrowCudaError("CUDA", #expr, __FILE__, __LINE__, \
                                      cudaGetErrorString(pipette_err_)); \
    }                                                                    \
  } while (false)

#define PIPETTE_CUBLAS_CHECK(expr)                                         \
  do {                                                                     \
    const cublasStatus_t pipette_st_ = (expr);                             \
    if (pipette_st_ != CUBLAS_STATUS_SUCCESS) {                            \
      ::pipette::cuda::ThrowCudaError("cuBLAS", #expr, __FILE__, __LINE__, \
                                      cublasGetStatusString(pipette_st_)); \
    }                                                                      \
  } while (false)

#define PIPETTE_NCCL_CHECK(expr)                                         \
  do {                                                                   \
    const ncclResult_t pipette_nr_ = (expr);                             \
    if (pipette_nr_ != ncclSuccess && pipette_nr_ != ncclInProgress) {   \
      ::pipette::cuda::ThrowCudaError("NCCL", #expr, __FILE__, __LINE__, \
                                      ncclGetErrorString(pipette_nr_));  \
    }                                                                    \
  } while (false)
