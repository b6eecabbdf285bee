// Build information: pipette's version and the versions of the libraries it was built with.
// Everything here is fixed at compile time; the functions are thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pipette {

// Returns pipette's version ("0.1.0").
const char* Version();

// Returns the git commit pipette was configured from ("unknown" outside a checkout).
const char* GitRevision();

// Whether the CUDA/NCCL engine (`pipette train --engine cuda`) is in this build.
bool CudaEngineBuilt();
// What the build said of the CUDA engine: "built (CUDA 13.0.88, NCCL 2.28.3, sm_90)" or
// "not built: nvcc not found (...)".
const char* CudaEngineStatus();

// Returns (library, version) pairs for the compiler and every library linked into the core, in a
// stable order. Engines and front ends append their own (see cli/main.cc).
std::vector<std::pair<std::string, std::string>> CoreLibraryVersions();

}  // namespace pipette
