#!/usr/bin/env bash
# Configures and builds pipette into build/ (the CLI lands at build/pipette).
# Environment: BUILD_TYPE (default RelWithDebInfo), JOBS (default: all cores), CMAKE_ARGS (extra).
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DPIPETTE_WERROR="$werror" ${CMAKE_ARGS:-}
cmake --build build -j "${JOBS:-$(nproc)}"
