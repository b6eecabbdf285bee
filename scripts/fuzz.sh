#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang in build-fuzz (ASan + UBSan + libFuzzer;
# only the fuzz targets and the layers they link) and runs each as its ctest test (label fuzz).
#   scripts/fuzz.sh                           every target, PIPETTE_FUZZ_SECONDS (default 5) each
#   PIPETTE_FUZZ_SECONDS=600 scripts/fuzz.sh  ten minutes each
#   scripts/fuzz.sh -R schedule_csv           ctest arguments choose the targets
# What a run finds stays in build-fuzz/fuzz/<target>/ (corpus/ and crash-*). The main build
# (build/, g++) does not need clang; install-deps.sh installs clang and libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(schedule_csv_fuzz model_toml_fuzz cluster_toml_fuzz sweep_spec_fuzz)
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON  # as scripts/build.sh
# Line tables only (-g1): a crash's stack keeps its file and line.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPETTE_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DPIPETTE_BUILD_TESTS=OFF -DPIPETTE_BUILD_BENCHMARKS=OFF -DPIPETTE_WITH_CUDA=OFF \
  -DPIPETTE_WERROR="$werror" >/dev/null
cmake --build build-fuzz -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
# One fuzzer per core: each is one process.
ctest --test-dir build-fuzz --output-on-failure -L fuzz -j "${JOBS:-$(nproc)}" "$@"
