#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the test suite with ctest.
# Default selection: every test except those labelled slow, mpi or gpu, then the mpi tests. Pass
# ctest arguments to choose others, e.g. `scripts/test.sh -L golden` or `scripts/test.sh -L slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
run_ctest() { ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" "$@"; }
if [ $# -eq 0 ]; then
  run_ctest -LE 'slow|mpi|gpu'
  # Then real multi-process training under mpirun (label mpi; about 30 s on 2 cores).
  run_ctest -L mpi
else
  run_ctest "$@"
fi
