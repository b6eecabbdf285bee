#include "pipette/common/build_info.h"

#include <fmt/core.h>

#include "pipette/common/build_config.h"

namespace pipette {

const char* Version() { return PIPETTE_VERSION_STRING; }

const char* GitRevision() { return PIPETTE_GIT_REV; }

bool CudaEngineBuilt() { return PIPETTE_CUDA_ENGINE == 1; }

const char* CudaEngineStatus() { return PIPETTE_CUDA_STATUS; }

std::vector<std::pair<std::string, std::string>> CoreLibraryVersions() {
  return {
      {"compiler", PIPETTE_CXX_COMPILER},
      {"build type", PIPETTE_BUILD_TYPE},
      {"C++ standard", fmt::format("{}", __cplusplus)},
      {"fmt",
       fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
  };
}

}  // namespace pipette
