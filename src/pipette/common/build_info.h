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

// Returns (library, version) pairs for the compiler and every library linked into the core, in a
// stable order. Engines and front ends append their own (see cli/main.cc).
std::vector<std::pair<std::string, std::string>> CoreLibraryVersions();

}  // namespace pipette
