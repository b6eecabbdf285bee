#!/usr/bin/env bash
# Runs on a GPU machine (CUDA 13 image, no Debian packages, no network), from the repository root,
# with gpu-bundle/ from scripts/gpu-bundle.sh: the gpu-labelled tests (the kernels on the device
# against their host math; the CUDA engine against the CPU engine's reference for every schedule;
# bf16 against fp32; a hung rank), the GPU benchmark and one recorded training run. Everything it
# prints and writes lands under $OUT (default gpu-out/): environment.txt, *.log, *.xml,
# benchmark.json, gpu.db. Exit status: the first failing part's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
# shellcheck source=scripts/gpu/bundle-env.sh
source scripts/gpu/bundle-env.sh  # $bundle, LD_LIBRARY_PATH, PIPETTE_TRAIN_BINARY

{
  echo "commit $(cat "$bundle/COMMIT")"
  date -u
  nvidia-smi || true
  nvcc --version 2>/dev/null | tail -2 || true
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for t in "$bundle"/bin/*; do echo "== ldd $t"; ldd "$t" | grep -E 'not found|cuda|cublas|nccl' || true; done
} >"$out/environment.txt" 2>&1

status=0
run() {  # run NAME COMMAND...: output to $out/NAME.log, remembers the first failure
  local name=$1
  shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.log"
  local code=${PIPESTATUS[0]}
  echo "== $name: exit $code"
  [ "$code" -ne 0 ] && [ "$status" -eq 0 ] && status=$code
}
run kernels "$bundle/bin/kernels_gpu_test" --gtest_output="xml:$out/kernels.xml"
run engine "$bundle/bin/cuda_engine_gpu_test" --gtest_output="xml:$out/engine.xml"
run benchmark "$bundle/bin/cuda_engine_benchmark" --json "$out/benchmark.json"
run gemm "$bundle/bin/gemm_gpu_test" --gtest_output="xml:$out/gemm.xml"
run gemm-benchmark "$bundle/bin/cuda_gemm_benchmark" --json "$out/gemm_benchmark.json"
run train "$bundle/bin/pipette-train" --engine cuda --virtual-ranks -p 4 -m 8 --schedule zb-h1 \
  --steps 5 --verify --tolerance 1e-4 --db "$out/gpu.db"
exit "$status"
