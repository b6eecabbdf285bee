// OpenBLAS's kernels for this CPU. Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) chooses its kernels
// by the CPU's family and model at load time; a model newer than it knows falls back to the
// generic SSE3 "Prescott" kernels. Seen on the 2-core development VM on 2026-11-30 (an Intel Xeon
// of family 6, model 207, Emerald Rapids, with AVX-512): sgemm ran at 26 GFLOP/s per core, against
// 150 GFLOP/s with the Skylake-X kernels, so every CPU-engine measurement there was 5.7x slower on
// its GEMMs than the same VM class measured days before (Sapphire Rapids).
//
// EnsureBlasKernel, first thing in a program's main (before MPI_Init: the process re-executes
// itself), picks the kernels the CPU can run when OpenBLAS chose kernels without AVX2 on a CPU
// that has it and OPENBLAS_CORETYPE is not set: OPENBLAS_CORETYPE=SkylakeX with AVX-512 (F, CD,
// BW, DQ, VL), else Haswell (AVX2 and FMA). OpenBLAS reads the variable only when it loads, so the
// program executes itself again (/proc/self/exe, the same arguments; the variable set keeps it from
// doing so twice), with PIPETTE_BLAS_CHOSEN naming OpenBLAS's own choice. A set OPENBLAS_CORETYPE
// is always left as it is. BlasKernelNote says which kernels run, for calibrate's output.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pipette::cpu {

// What the CPU can execute, for the choice.
struct CpuVectorUnits {
  bool avx2_fma = false;  // AVX2 and FMA
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL (OpenBLAS's SkylakeX kernels)
};

// This CPU's (GCC's __builtin_cpu_supports).
CpuVectorUnits ThisCpu();

// The OPENBLAS_CORETYPE to run with, given OpenBLAS's own choice `corename`
// (openblas_get_corename(), e.g. "Prescott", "Haswell", "SkylakeX", "SapphireRapids") and the
// CPU's units: "SkylakeX" or "Haswell" when `corename` is a kernel set without AVX2 that the CPU
// outgrows; nullopt to keep OpenBLAS's choice.
std::optional<std::string> BlasCoreOverride(std::string_view corename, CpuVectorUnits cpu);

// As described above; returns only when nothing is to change (or the re-execution failed, which
// it reports on standard error and carries on with OpenBLAS's choice).
void EnsureBlasKernel(char** argv);

// "OpenBLAS kernels: SkylakeX", with " (set by pipette: OpenBLAS chose Prescott)" after
// EnsureBlasKernel replaced them, or " (OPENBLAS_CORETYPE)" when the user set them.
std::string BlasKernelNote();

}  // namespace pipette::cpu
