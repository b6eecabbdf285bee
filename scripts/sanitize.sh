#!/usr/bin/env bash
# Builds the tree with AddressSanitizer + UndefinedBehaviorSanitizer (g++, PIPETTE_SANITIZE=ON) in
# build-asan and runs the tests of the default suite under them: any memory error, leak or
# undefined behaviour fails its test. The selection is scripts/test.sh's default one (every test
# but the labels slow, mpi, gpu and fuzz) less the lint tests (they read sources, run nothing).
# The pipette-train and pipette-calibrate binaries (the only ones that start MPI) skip the leak
# check at exit, because OpenMPI 4.1 leaves its own allocations (hwloc, MCA components) behind
# (train_main.cc); the rest
# of ASan and UBSan stays on. Pass ctest arguments to choose others, e.g.
# `scripts/sanitize.sh -R Csv`.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
# Line tables only (-g1): reports keep their file and line, and a test file compiles in three
# quarters of -g's time (23.8 s against 31.7 s, g++ 12 -O2). CI (as scripts/build.sh) compiles
# without debug information (16.9 s): ASan's stacks then name functions without lines, UBSan's
# reports keep their file and line (the checks carry them); rerun here without CI=true for lines.
flags="-O2 -g1 -DNDEBUG"
if [ "${CI:-}" = "true" ]; then
  werror=ON
  flags="-O2 -DNDEBUG"
fi
# The CUDA engine stays out: its device code is not instrumented and the CUDA runtime does not run
# under ASan's default shadow layout; its host-side math (tests/cuda/kernel_math_test) is in.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPETTE_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
  -DPIPETTE_BUILD_BENCHMARKS=OFF -DPIPETTE_WITH_CUDA=OFF -DPIPETTE_WERROR="$werror" >/dev/null
cmake --build build-asan -j "${JOBS:-$(nproc)}"

asan=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# run_ctest ASAN_OPTIONS ctest-arguments...
run_ctest() {
  ASAN_OPTIONS=$1 ctest --test-dir build-asan --output-on-failure -j "${JOBS:-$(nproc)}" "${@:2}"
  # ASan only warns when a program switches stacks behind its back (SimGrid's contexts;
  # sim_engine.cc runs actors as threads in this build): reports after it cannot be trusted.
  local log=build-asan/Testing/Temporary/LastTest.log
  if grep -q "ASan is ignoring requested __asan_handle_no_return" "$log"; then
    echo "sanitize: a test switched stacks behind ASan's back (see $log)" >&2
    exit 1
  fi
}
if [ $# -gt 0 ]; then
  run_ctest "$asan" "$@"
  exit 0
fi
selection=(-LE 'slow|mpi|gpu|fuzz')
run_ctest "$asan" "${selection[@]}" -E '^(lint|layering)\.'
