#!/usr/bin/env bash
# Runs on a GPU machine (CUDA 13 image, no Debian packages, no network), from the repository root,
# with gpu-bundle/ from scripts/gpu-bundle.sh: the correctness part of scripts/gpu-bench.sh, i.e.
# the gpu-labelled tests (the kernels on the device against their host math; the GEMM path; the
# CUDA engine against the CPU engine's reference for every schedule; bf16 against fp32; a hung
# rank), then results.md. Everything lands under $OUT (default gpu-out/). For the speed benchmarks
# and the fidelity check as well: scripts/gpu-bench.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PARTS=${PARTS:-tests} exec bash scripts/gpu-bench.sh "$@"
