#!/usr/bin/env bash
# Configures and builds pipette into build/ (the CLI lands at build/pipette).
# Environment: BUILD_TYPE (default RelWithDebInfo; without -g when CI=true), JOBS (default: all
# cores), CMAKE_ARGS (extra),
# TARGETS (default: everything; e.g. TARGETS=pipette builds only the CLI with the simulator, as
# scripts/main.sh does: no tests, benchmarks, MPI helpers or CUDA engine).
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
# RelWithDebInfo's flags; CI compiles without debug information: -g never changes the code, and
# a file then compiles in about half the time (tests/study/fit_prediction_test.cc, g++ 12: 31.7 s
# with -O2 -g, 16.9 s with -O2).
flags="-O2 -g -DNDEBUG"
if [ "${CI:-}" = "true" ]; then
  werror=ON
  flags="-O2 -DNDEBUG"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DPIPETTE_WERROR="$werror" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="$flags" \
  ${CMAKE_ARGS:-}
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
cmake --build build -j "${JOBS:-$(nproc)}" "${targets[@]}"
