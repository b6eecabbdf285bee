// Checks for CUDA, cuBLAS(Lt) and NCCL calls: a failure throws std::runtime_error naming the host,
// the process id, file:line, the failed expression and the library's error string, e.g.
//   "CUDA error on gpu-node-3 (pid 4242) at backends/cuda/kernels.cu:97: cudaGetLastError():
//    cudaErrorInvalidConfiguration: invalid configuration argument"
// Device and communication failures are not recoverable (no Status): the engine lets the exception
// end the rank, which its peers then notice.
//
// PIPETTE_CUDA_CHECK needs only the CUDA runtime (included here). PIPETTE_CUBLAS_CHECK and
// PIPETTE_NCCL_CHECK name cuBLAS's and NCCL's types and functions only where they are used, so
// include <cublasLt.h> (the names come from cuBLASLt, so libcublas is not needed) / <nccl.h> in the
// file that uses them; this header does not. PIPETTE_NCCL_CHECK lets ncclInProgress pass (a
// non-blocking communicator's answer while an operation is under way).
#pragma once

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace pipette::cuda {

// Throws the std::runtime_error described above. `library`: "CUDA", "cuBLAS" or "NCCL".
[[noreturn]] inline void ThrowDeviceError(const char* library, const std::string& error,
                                          const char* expr, const char* file, int line) {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  throw std::runtime_error(std::string(library) + " error on " + host + " (pid " +
                           std::to_string(getpid()) + ") at " + file + ":" + std::to_string(line) +
                           ": " + expr + ": " + error);
}

inline void CheckCuda(cudaError_t status, const char* expr, const char* file, int line) {
  if (status == cudaSuccess) return;
  ThrowDeviceError("CUDA",
                   std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status), expr,
                   file, line);
}

}  // namespace pipette::cuda

#define PIPETTE_CUDA_CHECK(expr) ::pipette::cuda::CheckCuda((expr), #expr, __FILE__, __LINE__)

#define PIPETTE_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                        \
    const cublasStatus_t pipette_status_ = (expr);                                            \
    if (pipette_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::pipette::cuda::ThrowDeviceError("cuBLAS",                                             \
                                        std::string(cublasLtGetStatusName(pipette_status_)) + \
                                            ": " + cublasLtGetStatusString(pipette_status_),  \
                                        #expr, __FILE__, __LINE__);                           \
    }                                                                                         \
  } while (0)

// The message adds ncclGetLastError's detail when NCCL has one.
#define PIPETTE_NCCL_CHECK(expr)                                                             \
  do {                                                                                       \
    const ncclResult_t pipette_status_ = (expr);                                             \
    if (pipette_status_ != ncclSuccess && pipette_status_ != ncclInProgress) {               \
      const char* pipette_detail_ = ncclGetLastError(nullptr);                               \
      ::pipette::cuda::ThrowDeviceError("NCCL",                                              \
                                        std::string(ncclGetErrorString(pipette_status_)) +   \
                                            (pipette_detail_ != nullptr && *pipette_detail_  \
                                                 ? std::string(" (") + pipette_detail_ + ")" \
                                                 : std::string()),                           \
                                        #expr, __FILE__, __LINE__);                          \
    }                                                                                        \
  } while (0)
