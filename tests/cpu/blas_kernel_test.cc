// OpenBLAS's generic kernels on a CPU they do not fit are replaced (SkylakeX with AVX-512, Haswell
// with AVX2 and FMA); a recognised CPU's choice, or a CPU without AVX2, is left alone; and the
// override reaches OpenBLAS in a program run by this test's own process image.
#include "cpu/blas_kernel.h"

#include <cblas.h>
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "pipette/common/subprocess.h"

namespace pipette::cpu {
namespace {

TEST(BlasKernel, GenericKernelsOnAModernCpuAreReplaced) {
  const CpuVectorUnits avx512{true, true}, avx2{true, false}, old{false, false};
  EXPECT_EQ(BlasCoreOverride("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(BlasCoreOverride("Prescott", avx2), "Haswell");
  EXPECT_EQ(BlasCoreOverride("Nehalem", avx512), "SkylakeX");
  EXPECT_EQ(BlasCoreOverride("Sandybridge", avx2), "Haswell");
  EXPECT_EQ(BlasCoreOverride("Prescott", old), std::nullopt);  // nothing better to run
  // OpenBLAS recognised the CPU: its choice stays.
  for (const char* known : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}) {
    EXPECT_EQ(BlasCoreOverride(known, avx512), std::nullopt) << known;
  }
}

// A program that calls EnsureBlasKernel runs the kernels the CPU can use: the ones OpenBLAS chose
// in this test's process (started without OPENBLAS_CORETYPE) when they fit, else the replacement,
// noted as set by pipette. On the 2-core VM of 2026-11-30 (Emerald Rapids) OpenBLAS chose
// Prescott and the program runs SkylakeX.
TEST(BlasKernel, AProgramThatEnsuresItRunsKernelsTheCpuCanUse) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  const std::string chosen = openblas_get_corename();
  ::unsetenv("PIPETTE_BLAS_CHOSEN");
  Result<Subprocess> probe = Subprocess::Run(PIPETTE_BLAS_PROBE, {"blas_kernel_probe"});
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  ASSERT_EQ(probe->Wait().code, 0) << probe->err();
  const std::optional<std::string> core = BlasCoreOverride(chosen, ThisCpu());
  EXPECT_EQ(probe->out(), core ? fmt::format("OpenBLAS kernels: {} (set by pipette: OpenBLAS "
                                             "chose {})\n",
                                             *core, chosen)
                               : fmt::format("OpenBLAS kernels: {}\n", chosen));
}

}  // namespace
}  // namespace pipette::cpu
