#include "cpu/blas_kernel.h"

#include <cblas.h>
#include <fmt/core.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pipette::cpu {

CpuVectorUnits ThisCpu() {
  __builtin_cpu_init();
  CpuVectorUnits units;
  units.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  units.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl");
  return units;
}

std::optional<std::string> BlasCoreOverride(std::string_view corename, CpuVectorUnits cpu) {
  // OpenBLAS's x86-64 kernel sets without AVX2 (its names, case as openblas_get_corename gives
  // them); a CPU it recognises with AVX2 or AVX-512 gets Haswell, Zen, SkylakeX, Cooperlake or
  // SapphireRapids instead.
  constexpr std::array<std::string_view, 14> kWithoutAvx2 = {
      "Prescott",   "Core2",     "Penryn", "Dunnington", "Nehalem",   "Atom",   "Katmai",
      "Coppermine", "Northwood", "Banias", "Opteron",    "Barcelona", "Bobcat", "Sandybridge"};
  bool generic = false;
  for (std::string_view name : kWithoutAvx2) generic = generic || corename == name;
  if (!generic || !cpu.avx2_fma) return std::nullopt;
  return cpu.avx512 ? "SkylakeX" : "Haswell";
}

void EnsureBlasKernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* corename = openblas_get_corename();
  const std::optional<std::string> core =
      BlasCoreOverride(corename != nullptr ? corename : "", ThisCpu());
  if (!core) return;
  // The variable set is what keeps the program from executing itself again: without it, no exec.
  if (::setenv("OPENBLAS_CORETYPE", core->c_str(), 1) != 0) return;
  if (::setenv("PIPETTE_BLAS_CHOSEN", corename, 1) == 0) {  // what OpenBLAS chose, for the record
    ::execv("/proc/self/exe", argv);
  }
  const int error = errno;
  // Still OpenBLAS's own kernels: neither this program's note nor its children may say otherwise.
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv("PIPETTE_BLAS_CHOSEN");
  fmt::print(stderr,
             "pipette: OpenBLAS chose its generic {} kernels on a CPU with {}; executing again "
             "with OPENBLAS_CORETYPE={} failed ({}): carrying on with the slow kernels\n",
             corename, *core == "SkylakeX" ? "AVX-512" : "AVX2", *core, std::strerror(error));
}

std::string BlasKernelNote() {
  std::string note = fmt::format("OpenBLAS kernels: {}", openblas_get_corename());
  if (const char* chosen = std::getenv("PIPETTE_BLAS_CHOSEN")) {
    return note + fmt::format(" (set by pipette: OpenBLAS chose {})", chosen);
  }
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return note + " (OPENBLAS_CORETYPE)";
  return note;
}

}  // namespace pipette::cpu
