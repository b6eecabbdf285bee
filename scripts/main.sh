#!/usr/bin/env bash
# Quick start: installs the dependencies, builds, and runs pipette's main job on built-in defaults:
# one simulated training step (GPT-3 1.3B, 1F1B, pp = 4, m = 8 on a DGX H100 node) recorded into
# the experiment database pipette.db, and its pipeline timeline drawn to timeline.png. It builds
# only the CLI (no tests, benchmarks, MPI helpers or CUDA engine: `bash scripts/build.sh` or
# scripts/test.sh builds the rest into the same build/ folder, reusing what is built).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Only the CLI; the binaries `pipette train` and `calibrate` exec are rebuilt too when an earlier
# full build left them there, so that they never lag behind the CLI.
targets=pipette
for sibling in pipette-train pipette-calibrate; do
  [ -x "build/$sibling" ] && targets="$targets $sibling"
done
TARGETS=$targets bash scripts/build.sh
./build/pipette simulate --db pipette.db
./build/pipette plot timeline --db pipette.db --run last --out timeline.png
