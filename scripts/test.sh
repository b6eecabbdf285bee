#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the test suite with ctest.
# Default selection: every test except those labelled slow, mpi, gpu or fuzz, then the mpi tests;
# with CI=true (what .ci/run sets in CI) then also the sanitizer phase (scripts/sanitize.sh: the
# unit and golden tests under ASan + UBSan, in build-asan) and the fuzz phase (scripts/fuzz.sh:
# each libFuzzer target for PIPETTE_FUZZ_SECONDS, default 5, in build-fuzz). Pass ctest arguments
# to choose others, e.g. `scripts/test.sh -L golden` or `scripts/test.sh -L slow` (build/ only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The headless browser only the test of the report's page uses (ReportBrowser.*, skipped without it).
bash scripts/install-deps.sh --browser ||
  echo "test.sh: Debian's chromium-headless-shell is not installed: ReportBrowser.* will skip" >&2
bash scripts/build.sh
run_ctest() { ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" "$@"; }
if [ $# -eq 0 ]; then
  run_ctest -LE 'slow|mpi|gpu|fuzz'
  # Then real multi-process training under mpirun (label mpi; about 30 s on 2 cores).
  run_ctest -L mpi
  if [ "${CI:-}" = "true" ]; then
    bash scripts/sanitize.sh
    bash scripts/fuzz.sh
  fi
else
  run_ctest "$@"
fi
