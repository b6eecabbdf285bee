#!/usr/bin/env bash
# Quick start: installs the dependencies, builds, and runs pipette's main job on built-in defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/pipette simulate
