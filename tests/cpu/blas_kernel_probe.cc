// A program as pipette-train starts: EnsureBlasKernel first, then it prints which OpenBLAS kernels
// it runs (BlasKernelNote). blas_kernel_test runs it.
#include <cstdio>

#include "cpu/blas_kernel.h"

int main(int, char** argv) {
  pipette::cpu::EnsureBlasKernel(argv);
  std::printf("%s\n", pipette::cpu::BlasKernelNote().c_str());
  return 0;
}
