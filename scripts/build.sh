#!/usr/bin/env bash
# Configures and builds pipette into build/ (the CLI lands at build/pipette).
# Environment: BUILD_TYPE (default RelWithDebInfo), JOBS (default: all cores), CMAKE_ARGS (extra),
# TARGETS (default: everything; e.g. TARGETS=pipette builds only the CLI with the simulator, as
# scripts/main.sh does: no tests, benchmarks, MPI helpers or CUDA engine).
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DPIPETTE_WERROR="$werror" ${CMAKE_ARGS:-}
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
cmake --build build -j "${JOBS:-$(nproc)}" "${targets[@]}"
