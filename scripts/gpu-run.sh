#!/usr/bin/env bash
# The CUDA engine's checks on a borrowed GPU machine (the CUDA 13 image: no Debian packages, no MPI
# launcher, no network), run from the repository root with gpu-bundle/ (scripts/gpu-bundle.sh)
# carried. A device call lasts at most 600 s and brings back only a few files from $OUT, which is
# emptied before every call, so the checks come as two selections of at most 540 s each, or all
# in one call where the GPU is fast enough (the deadline skips what finds no time left):
#
#   bash scripts/gpu-run.sh first    env, kernels, sanitizer, gemm-tests, engine, bench-quick
#   bash scripts/gpu-run.sh second   env, benchmark, gemm, attention, fidelity
#   bash scripts/gpu-run.sh all      every part in one call (the H200 ran them all in about
#                                    330 s): first's, then gemm, attention, fidelity, benchmark
#   bash scripts/gpu-run.sh --plan first|second|all
#                                    prints each part's budget in seconds and the sum; runs nothing
#
# Parts (each writes <part>.log, its stdout and stderr, also shown here):
#   env          nvidia-smi, GPU name and driver, CUDA versions, ldd of every bundled binary, the
#                library path and where each library resolved from, python and torch, the bundle's
#                COMMIT, the date; env.json {gpu, driver, cuda, commit, date, selection}
#   kernels      kernels_gpu_test (kernels.xml)
#   sanitizer    compute-sanitizer --tool racecheck, then --tool memcheck, on the attention, norm
#                and cross-entropy kernel tests (sanitizer-racecheck.xml/.log,
#                sanitizer-memcheck.xml/.log, sanitizer.tsv: tool, exit, seconds, budget); skipped
#                without a GPU or compute-sanitizer
#   gemm-tests   gemm_gpu_test (gemm-tests.xml)
#   engine       cuda_engine_gpu_test (engine.xml)
#   bench-quick  cuda_engine_benchmark --quick --no-bubbles (benchmark-quick.json)
#   benchmark    cuda_engine_benchmark (benchmark.json; BENCH_ARGS adds options, e.g. "--blocks 2")
#   gemm         cuda_gemm_benchmark (gemm.json)
#   attention    scripts/gpu/attention_reference.py with the python that has torch (attention.json)
#   fidelity     scripts/gpu/fidelity.py, every built-in schedule at p = 4 in virtual-ranks mode
#                (fidelity.json, fidelity.db); only with a GPU. FIDELITY_MODEL (default gpt2-124m)
#                and FIDELITY_ARGS (default "--dtype bf16 --micro-batch-size 2 --seq-len 512")
#
# Everything is written to a scratch folder; after every part (and once before the first) the
# folder is packed into the one file $OUT/gpu-run-<selection>.tar.gz (OUT defaults to gpu-out),
# written under a temporary name and renamed, so a call killed at any point leaves an archive
# holding every part finished so far. Inside: gpu-run-<selection>/ with parts.tsv (part, status
# ok|failed|timeout|skipped|missing, exit, seconds, budget, reason), env.json and the parts' files.
# scripts/gpu/results.py turns one or more archives into backends/cuda/results/DATE-GPU.md.
#
# Every part runs under `timeout -k 10` with min(its budget, the time left before the deadline:
# the start + PIPETTE_GPU_RUN_TOTAL (540) - PIPETTE_GPU_RUN_RESERVE (20, for the kill grace and the
# last packing)); a part with no time left is recorded as skipped, a part whose binary is not in
# the bundle as missing. Exit status: 0 when every part that ran exited 0 (fidelity's exit 1 is its
# verdict, not a failure), 1 otherwise, 2 for bad usage; the archive is there in every case but
# bad usage.
#
# For tests: PIPETTE_BUNDLE (the bundle folder, default gpu-bundle), PIPETTE_GPU_RUN_BUDGET_<PART>
# (one part's budget, e.g. PIPETTE_GPU_RUN_BUDGET_GEMM_TESTS=60), PIPETTE_GPU_RUN_TOTAL,
# PIPETTE_GPU_RUN_RESERVE, PIPETTE_PYTHON, PIPETTE_COMPUTE_SANITIZER.
# budget_* are read and part_* called by name (budget_of, --part):
# shellcheck disable=SC2034,SC2317
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
self="$PWD/scripts/gpu-run.sh"

# Budgets in seconds, from the H200's first runs (2026-11-28, backends/cuda/results/
# 2026-11-28-h200.md: each part's seconds in parts.tsv) with a margin of 2-3x for a slower GPU or
# a bigger test suite: env 9-11 s, kernels 4, sanitizer 20 (racecheck 16, memcheck 4), gemm-tests
# 17, engine 24, bench-quick 8; benchmark 130 (the bubbles of 15 schedules take most), gemm 17,
# attention 15, fidelity 60 (15 schedules). Each selection's budgets sum to at most 520 s, the
# 540 s a call may take less the reserve; `all` (every part, one call) sums to more and relies on
# the deadline: the parts run in priority order, correctness first, and what finds no time left
# is recorded as skipped.
budget_env=${PIPETTE_GPU_RUN_BUDGET_ENV:-20}
budget_kernels=${PIPETTE_GPU_RUN_BUDGET_KERNELS:-30}
budget_sanitizer=${PIPETTE_GPU_RUN_BUDGET_SANITIZER:-60}
budget_gemm_tests=${PIPETTE_GPU_RUN_BUDGET_GEMM_TESTS:-45}
budget_engine=${PIPETTE_GPU_RUN_BUDGET_ENGINE:-80}
budget_bench_quick=${PIPETTE_GPU_RUN_BUDGET_BENCH_QUICK:-30}
budget_benchmark=${PIPETTE_GPU_RUN_BUDGET_BENCHMARK:-240}
budget_gemm=${PIPETTE_GPU_RUN_BUDGET_GEMM:-45}
budget_attention=${PIPETTE_GPU_RUN_BUDGET_ATTENTION:-40}
budget_fidelity=${PIPETTE_GPU_RUN_BUDGET_FIDELITY:-150}
total=${PIPETTE_GPU_RUN_TOTAL:-540}
reserve=${PIPETTE_GPU_RUN_RESERVE:-20}
kill_grace=10

parts_first=(env kernels sanitizer gemm-tests engine bench-quick)
parts_second=(env benchmark gemm attention fidelity)
parts_all=(env kernels sanitizer gemm-tests engine bench-quick gemm attention fidelity benchmark)
# The sanitizer's tests: the kernels with shared-memory tiles and reductions, short sequences only.
sanitizer_filter='KernelsGpu.FlashAttention*:KernelsGpu.LayerNorm*:KernelsGpu.RmsNorm*:'
sanitizer_filter+='KernelsGpu.CrossEntropy*-*LongSequence*'

usage() { echo "usage: bash scripts/gpu-run.sh [--plan] [first|second|all]"; }
budget_of() {
  local name="budget_${1//-/_}"
  echo "${!name}"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds_since() {  # seconds_since START_MS: elapsed seconds with one decimal
  local ms=$(($(now_ms) - $1))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}
json_str() {  # a JSON string of $1 (one line)
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$(printf '%s' "$s" | tr '\t\n\r' '   ')"
}
sanitizer_binary() {
  local s
  for s in "${PIPETTE_COMPUTE_SANITIZER:-}" "$(command -v compute-sanitizer)" \
    /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$s" ] && [ -x "$s" ]; then
      echo "$s"
      return
    fi
  done
}
pythons() {  # the python interpreters here, PIPETTE_PYTHON first
  local p
  for p in "${PIPETTE_PYTHON:-}" python3 python; do
    [ -n "$p" ] && command -v "$p"
  done | awk '!seen[$0]++'
}

# ---- the parts: each runs as `bash gpu-run.sh --part NAME` under timeout, in $GPU_RUN_DIR -------

part_env() {
  local dir=$GPU_RUN_DIR b py gpu driver cuda commit
  echo "# date"
  echo "$GPU_RUN_DATE"
  commit=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
  echo "# bundle: $bundle, COMMIT $commit"
  echo "# nvidia-smi"
  timeout 15 nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  echo "# nvidia-smi --query-gpu=name,driver_version --format=csv,noheader"
  timeout 15 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || true
  gpu=$(timeout 15 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  driver=$(timeout 15 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null |
    head -1)
  cuda=$(timeout 15 nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3)
  # Without a driver: the runtime's version, from the libcudart the binaries resolve.
  [ -n "$cuda" ] || cuda=$(ldd "$bundle"/bin/* 2>/dev/null | awk '/libcudart/ {print $3; exit}' |
    xargs -r readlink -f | grep -o 'so\.[0-9.]*$' | cut -c4-)
  # env.json first: what follows (ldd, torch's import) may run out of time.
  printf '{"gpu": %s, "driver": %s, "cuda": %s, "commit": %s, "date": %s, "selection": %s}\n' \
    "$(json_str "$gpu")" "$(json_str "$driver")" "$(json_str "$cuda")" "$(json_str "$commit")" \
    "$(json_str "$GPU_RUN_DATE")" "$(json_str "$GPU_RUN_SELECTION")" >"$dir/env.json"
  echo "# env.json"
  cat "$dir/env.json"
  echo "# CUDA ${cuda:-unknown} (the driver's, else the runtime's); the toolkit here:"
  if [ -f /usr/local/cuda/version.json ]; then
    grep -A2 '"cuda"' /usr/local/cuda/version.json
  else
    echo "no /usr/local/cuda/version.json"
  fi
  for b in nvcc /usr/local/cuda/bin/nvcc; do
    if command -v "$b" >/dev/null; then
      "$b" --version | tail -2
      break
    fi
  done
  echo "# LD_LIBRARY_PATH"
  echo "${LD_LIBRARY_PATH:-}" | tr ':' '\n'
  echo "# ldd of every binary in $bundle/bin"
  for b in "$bundle"/bin/*; do
    [ -e "$b" ] || continue
    echo "## $(basename "$b")"
    ldd "$b" 2>&1
  done
  echo "# where each library resolved from (every binary's ldd, once each)"
  for b in "$bundle"/bin/*; do
    [ -e "$b" ] && ldd "$b" 2>/dev/null
  done | awk '/=>/ {sub(/ \(0x[0-9a-f]+\)$/, ""); print $1, "=>", $3, $4}' | sort -u |
    while read -r name _ path rest; do
      if [ "$path" = not ]; then
        echo "$name => not found"
      else
        echo "$name => $(readlink -f "$path") ($path)${rest:+ $rest}"
      fi
    done
  echo "# python"
  pythons | while read -r py; do
    echo "## $py: $("$py" --version 2>&1 </dev/null)"
    timeout 15 "$py" </dev/null -c 'import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
      torch.backends.cudnn.version(), "devices", torch.cuda.device_count())
print("nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")' 2>&1 | tail -2
  done
  return 0  # a record of what is there: what is missing is no failure
}

part_kernels() {
  "$bundle/bin/kernels_gpu_test" --gtest_output="xml:$GPU_RUN_DIR/kernels.xml"
}

# racecheck gets 55 % of the part's time, memcheck what is left but a margin for the outer kill.
part_sanitizer() {
  local dir=$GPU_RUN_DIR sanitizer tool t0 budget code status=0 end
  end=$(($(date +%s) + GPU_RUN_SECONDS - 3))
  sanitizer=$(sanitizer_binary)
  printf 'tool\texit\tseconds\tbudget\n' >"$dir/sanitizer.tsv"
  for tool in racecheck memcheck; do
    if [ "$tool" = racecheck ]; then
      budget=$((GPU_RUN_SECONDS * 55 / 100))
    else
      budget=$((end - $(date +%s)))
    fi
    if [ "$budget" -lt 1 ]; then
      echo "== sanitizer $tool: no time left"
      printf '%s\t-\t0\t0\n' "$tool" >>"$dir/sanitizer.tsv"
      status=1
      continue
    fi
    echo "== sanitizer $tool: up to $budget s (full output in sanitizer-$tool.log)"
    t0=$(now_ms)
    timeout -k 2 "$budget" "$sanitizer" --tool "$tool" --error-exitcode 1 \
      "$bundle/bin/kernels_gpu_test" --gtest_filter="$sanitizer_filter" \
      --gtest_output="xml:$dir/sanitizer-$tool.xml" >"$dir/sanitizer-$tool.log" 2>&1
    code=$?
    printf '%s\t%s\t%s\t%s\n' "$tool" "$code" "$(seconds_since "$t0")" "$budget" \
      >>"$dir/sanitizer.tsv"
    tail -n 15 "$dir/sanitizer-$tool.log"
    echo "== sanitizer $tool: exit $code"
    [ "$code" -eq 0 ] || status=1
  done
  return "$status"
}

part_gemm_tests() {
  "$bundle/bin/gemm_gpu_test" --gtest_output="xml:$GPU_RUN_DIR/gemm-tests.xml"
}

part_engine() {
  "$bundle/bin/cuda_engine_gpu_test" --gtest_output="xml:$GPU_RUN_DIR/engine.xml"
}

part_bench_quick() {
  "$bundle/bin/cuda_engine_benchmark" --quick --no-bubbles \
    --json "$GPU_RUN_DIR/benchmark-quick.json"
}

part_benchmark() {
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
  "$bundle/bin/cuda_engine_benchmark" --json "$GPU_RUN_DIR/benchmark.json" ${BENCH_ARGS:-}
}

part_gemm() {
  "$bundle/bin/cuda_gemm_benchmark" --json "$GPU_RUN_DIR/gemm.json"
}

# cuDNN's attention needs torch: the first python that imports it, else the first python (the
# script then records why it is unavailable).
part_attention() {
  local py chosen=""
  while read -r py; do
    if "$py" -c 'import torch' </dev/null 2>/dev/null; then
      chosen=$py
      break
    fi
  done < <(pythons)
  [ -n "$chosen" ] || chosen=$(pythons | head -1)
  echo "== attention: $chosen"
  "$chosen" scripts/gpu/attention_reference.py --json "$GPU_RUN_DIR/attention.json"
}

part_fidelity() {
  local a train_args=()
  for a in ${FIDELITY_ARGS:---dtype bf16 --micro-batch-size 2 --seq-len 512}; do
    train_args+=("--train-arg=$a")
  done
  # The virtual ranks share the one GPU: each compute costed alone, the ranks sharing one
  # simulated core (simulate --alone-costs; on the H200 MAPE 3.5 % against 5.4 % as measured).
  "$(pythons | head -1)" scripts/gpu/fidelity.py --pipette "$bundle/bin/pipette" --engine cuda \
    --virtual-ranks --db "$GPU_RUN_DIR/fidelity.db" --json "$GPU_RUN_DIR/fidelity.json" \
    -p 4 -m 8 --steps 6 --model "${FIDELITY_MODEL:-gpt2-124m}" "${train_args[@]}" \
    --simulate-arg=--cores=1 --simulate-arg=--alone-costs
}

# ---- the driver -------------------------------------------------------------------------------

# why_not PART: "missing<TAB>reason" or "skipped<TAB>reason" when PART cannot run here, else
# nothing.
why_not() {
  local need=()
  case $1 in
    kernels | sanitizer) need=(kernels_gpu_test) ;;
    gemm-tests) need=(gemm_gpu_test) ;;
    engine) need=(cuda_engine_gpu_test) ;;
    bench-quick | benchmark) need=(cuda_engine_benchmark) ;;
    gemm) need=(cuda_gemm_benchmark) ;;
    fidelity) need=(pipette) ;;
  esac
  local b
  for b in "${need[@]}"; do
    if [ ! -x "$bundle/bin/$b" ]; then
      printf 'missing\t%s is not in %s/bin\n' "$b" "$bundle"
      return
    fi
  done
  case $1 in
    attention | fidelity)
      if [ -z "$(pythons)" ]; then
        printf 'missing\tno python3 or python\n'
        return
      fi
      ;;
  esac
  case $1 in
    sanitizer | fidelity)
      if [ -z "$gpu" ]; then
        printf 'skipped\tno GPU (nvidia-smi lists none)\n'
        return
      fi
      ;;
  esac
  if [ "$1" = sanitizer ] && [ -z "$(sanitizer_binary)" ]; then
    printf 'skipped\tcompute-sanitizer not found (PATH, /usr/local/cuda)\n'
  fi
}

record() {  # record PART STATUS EXIT SECONDS BUDGET REASON: one row of parts.tsv
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$dir/parts.tsv"
  echo "== $1: $2${6:+ ($6)}"
}

# Packs the scratch folder into $out/gpu-run-<selection>.tar.gz: written beside $out (same file
# system, so the rename is atomic), or inside it as a dot file when its parent is not writable.
pack() {
  local name="gpu-run-$selection.tar.gz" tmp
  tmp="$(dirname "$out")/.$name.$$"
  if ! tar czf "$tmp" -C "$scratch" "gpu-run-$selection" 2>/dev/null; then
    rm -f "$tmp"
    tmp="$out/.$name.$$"
    tar czf "$tmp" -C "$scratch" "gpu-run-$selection" || { rm -f "$tmp"; return 1; }
  fi
  mv -f "$tmp" "$out/$name"
}

run_part() {
  local part=$1 budget left t why t0 code status reason=""
  budget=$(budget_of "$part")
  why=$(why_not "$part")
  if [ -n "$why" ]; then
    echo "${why#*$'\t'}" >"$dir/$part.log"
    record "$part" "${why%%$'\t'*}" - 0 "$budget" "${why#*$'\t'}"
    return
  fi
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 1 ]; then
    echo "no time left before the deadline" >"$dir/$part.log"
    record "$part" skipped - 0 "$budget" "no time left before the ${total} s deadline"
    return
  fi
  t=$((budget < left ? budget : left))
  [ "$t" -lt "$budget" ] && reason="cut to ${t} s by the deadline"
  echo "== $part: up to ${t} s"
  t0=$(now_ms)
  GPU_RUN_SECONDS=$t timeout -k "$kill_grace" "$t" bash "$self" --part "$part" </dev/null 2>&1 |
    tee "$dir/$part.log"
  code=${PIPESTATUS[0]}
  case $code in
    0) status=ok ;;
    124 | 137) status=timeout reason="killed after ${t} s${reason:+; $reason}" ;;
    *) status=failed ;;
  esac
  if [ "$part" = fidelity ] && [ "$code" -eq 1 ] && [ -s "$dir/fidelity.json" ]; then
    status=ok reason="exit 1 is the verdict: a schedule outside the tolerance (fidelity.json)"
  fi
  [ "$status" = ok ] || exit_status=1
  record "$part" "$status" "$code" "$(seconds_since "$t0")" "$budget" "$reason"
}

main() {
  local plan=0 arg part sum=0 parts
  selection=""
  for arg in "$@"; do
    case $arg in
      --plan) plan=1 ;;
      first | second | all) selection=$arg ;;
      -h | --help)
        usage
        return 0
        ;;
      *)
        usage >&2
        return 2
        ;;
    esac
  done
  selection=${selection:-first}
  parts=("${parts_first[@]}")
  [ "$selection" = second ] && parts=("${parts_second[@]}")
  [ "$selection" = all ] && parts=("${parts_all[@]}")
  if [ "$plan" -eq 1 ]; then
    for part in "${parts[@]}"; do
      printf '%s\t%s\n' "$part" "$(budget_of "$part")"
      sum=$((sum + $(budget_of "$part")))
    done
    printf 'sum\t%s\ntotal\t%s\nreserve\t%s\n' "$sum" "$total" "$reserve"
    return 0
  fi

  deadline=$(($(date +%s) + total - reserve))
  out=${OUT:-gpu-out}
  mkdir -p "$out" && out=$(cd "$out" && pwd) || return 2
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpu-run.XXXXXX") || return 2
  trap 'rm -rf "$scratch"' EXIT
  dir="$scratch/gpu-run-$selection"
  mkdir "$dir" || return 2
  printf 'part\tstatus\texit\tseconds\tbudget\treason\n' >"$dir/parts.tsv"
  pack

  # The bundle's library path (bundle-env.sh says why it failed in bundle-env.log, kept).
  bundle=${PIPETTE_BUNDLE:-gpu-bundle}
  if [ -d "$bundle/bin" ]; then
    # shellcheck source=scripts/gpu/bundle-env.sh
    source scripts/gpu/bundle-env.sh 2>"$dir/bundle-env.log"  # $bundle, LD_LIBRARY_PATH, ...
    cat "$dir/bundle-env.log" >&2
  else
    echo "gpu-run: no $bundle/bin (run scripts/gpu-bundle.sh here first): its parts are missing" |
      tee "$dir/bundle-env.log" >&2
  fi
  gpu=$(timeout 15 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  export bundle GPU_RUN_DIR=$dir GPU_RUN_SELECTION=$selection
  export GPU_RUN_DATE
  GPU_RUN_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)

  exit_status=0
  for part in "${parts[@]}"; do
    run_part "$part"
    pack || echo "gpu-run: cannot write $out/gpu-run-$selection.tar.gz" >&2
  done
  echo "gpu-run: $out/gpu-run-$selection.tar.gz (exit $exit_status)"
  return "$exit_status"
}

if [ "${1:-}" = --part ]; then
  "part_${2//-/_}"
  exit $?
fi
main "$@"
exit $?
