#!/usr/bin/env bash
# Issue 15 on a GPU machine in one command, from the repository root with gpu-bundle/ from
# scripts/gpu-bundle.sh (the CUDA 13 image: no Debian packages, no network; python3 with PyTorch):
#   1. the gpu-labelled tests (kernels.xml, engine.xml)
#   2. cuda_engine_benchmark: the GPT-3-1.3B and Llama-3.2-1B stages, F/I/W/B, MFU (benchmark.json)
#   3. cuda_gemm_benchmark when the bundle has it: every GEMM against cuBLASLt's best (gemm.json)
#   4. scripts/gpu/attention_reference.py: cuDNN's attention for the same shapes (attention.json)
#   5. scripts/gpu/fidelity.py: every built-in schedule at p = 4 in virtual-ranks mode, measured
#      step time against `pipette simulate --costs-from` and `pipette compare` (fidelity.json,
#      fidelity.db)
#   6. scripts/gpu/results.py: ONE results file, $OUT/results.md (+ results.json): GPU, driver,
#      CUDA version, commit, date, every target with its measured value and PASS / FAIL /
#      UNMEASURED.
# Everything lands under $OUT (default gpu-out/), each part's output in NAME.log. Without a GPU
# the parts that need one are skipped and every target reads UNMEASURED.
#   PARTS           the parts to run (default "tests benchmark gemm attention fidelity"); results.md
#                   is always written from what $OUT holds, so a long run can be split over
#                   several calls with one $OUT (e.g. PARTS=tests, then PARTS="benchmark gemm", ...)
#   BENCH_ARGS      extra cuda_engine_benchmark options (e.g. "--blocks 2")
#   FIDELITY_MODEL  the fidelity runs' model (default gpt2-124m); FIDELITY_ARGS extra train options
#                   (default "--dtype bf16 --micro-batch-size 2 --seq-len 512")
# Exit status: 0 when every part ran (the targets' verdicts are in results.md), else the first
# failing part's.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-gpu-out}
mkdir -p "$out"
# shellcheck source=scripts/gpu/bundle-env.sh
source scripts/gpu/bundle-env.sh  # $bundle, LD_LIBRARY_PATH, PIPETTE_TRAIN_BINARY
python=$(command -v python3 || command -v python || true)

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cuda=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3)
commit=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
{
  echo "commit $commit"
  date -u
  nvidia-smi || echo "nvidia-smi: not available"
  echo "python: ${python:-none}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
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
skip() { echo "== $1: skipped ($2)" | tee "$out/$1.log"; }
parts=" ${PARTS:-tests benchmark gemm attention fidelity} "
want() { [[ "$parts" == *" $1 "* ]]; }

# 1-2. The tests skip and the benchmark says so without a device; both always run.
if want tests; then
  run kernels "$bundle/bin/kernels_gpu_test" --gtest_output="xml:$out/kernels.xml"
  run engine "$bundle/bin/cuda_engine_gpu_test" --gtest_output="xml:$out/engine.xml"
  run gemm-tests "$bundle/bin/gemm_gpu_test" --gtest_output="xml:$out/gemm-tests.xml"
fi
if want benchmark; then
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
  run benchmark "$bundle/bin/cuda_engine_benchmark" --json "$out/benchmark.json" ${BENCH_ARGS:-}
fi
# 3. The GEMM benchmark (the bundle has it once the build defines it).
if ! want gemm; then
  :
elif [ -x "$bundle/bin/cuda_gemm_benchmark" ]; then
  run gemm "$bundle/bin/cuda_gemm_benchmark" --json "$out/gemm.json"
else
  skip gemm "cuda_gemm_benchmark is not in $bundle/bin"
fi
if [ -z "$python" ]; then
  echo "gpu-bench: no python3: no attention reference, fidelity check or $out/results.md" >&2
  exit 1
fi
# 4. cuDNN's attention: the script answers {"available": false, ...} without torch or a GPU.
if want attention; then
  run attention "$python" scripts/gpu/attention_reference.py --json "$out/attention.json"
fi
# 5. The fidelity check: trains for real, so only with a device.
if ! want fidelity; then
  :
elif [ -n "$gpu" ]; then
  rm -f "$out/fidelity.db" "$out/fidelity.json"
  before=$status
  train_args=()
  for a in ${FIDELITY_ARGS:---dtype bf16 --micro-batch-size 2 --seq-len 512}; do
    train_args+=("--train-arg=$a")
  done
  run fidelity "$python" scripts/gpu/fidelity.py --pipette "$bundle/bin/pipette" --engine cuda \
    --virtual-ranks --db "$out/fidelity.db" --json "$out/fidelity.json" -p 4 -m 8 --steps 6 \
    --model "${FIDELITY_MODEL:-gpt2-124m}" "${train_args[@]}"
  # fidelity.py exits 1 when a schedule misses 3 %: a verdict (results.md), not a broken part.
  if [ "$before" -eq 0 ] && [ "$status" -eq 1 ] && [ -s "$out/fidelity.json" ]; then status=0; fi
else
  skip fidelity "no GPU (nvidia-smi lists none)"
fi
# 6. The one results file.
run results "$python" scripts/gpu/results.py "$out" --gpu "${gpu:-none}" --driver "${driver:-none}" \
  --cuda "${cuda:-none}" --commit "$commit" --date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "gpu-bench: $out/results.md"
exit "$status"
