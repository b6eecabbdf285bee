#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the test suite with ctest.
# Default selection: every test except those labelled slow, mpi or gpu. Pass ctest arguments to
# choose others, e.g. `scripts/test.sh -L golden` or `scripts/test.sh -L slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
if [ $# -eq 0 ]; then
  set -- -LE 'slow|mpi|gpu'
fi
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
