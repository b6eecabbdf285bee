#!/usr/bin/env bash
# Scaling study of `pipette simulate`: wall time, user CPU time and peak resident memory of one
# training step (1F1B) against GPUs (pp x dp x tp), microbatches, the data-parallel gradient
# reduction (analytic, or ring traffic simulated on the cluster), replica symmetry (default: only
# the replicas the network can make differ run; --every-replica: all) and the cluster's fabric.
# Usage: benchmarks/sim_scaling.sh [PIPETTE_BINARY] [SECTION...]
#   sections: gpus microbatches 16k gpt3 scale (default: all; scale ends with deepseek-v3 at ep 64). FABRICS="dgx-h100 ..." picks the cluster
#   presets of the 16k and gpt3 sections (default dgx-h100: a single non-blocking switch).
set -euo pipefail
bin=${1:-build/pipette}
shift || true
sections=${*:-gpus microbatches 16k gpt3 scale}
fabrics=${FABRICS:-dgx-h100}
run() {  # model cluster pp dp tp m grad [extra flags...]
  local model=$1 cluster=$2 pp=$3 dp=$4 tp=$5 m=$6 grad=$7 nodes out wall user kib
  shift 7
  nodes=$(((pp * dp * tp + 7) / 8))
  out=$( { /usr/bin/time -f '%e %U %M' "$bin" simulate --model "$model" --cluster "$cluster" \
    --nodes "$nodes" --pp "$pp" --dp "$dp" --tp "$tp" -m "$m" --grad-reduce "$grad" "$@" \
    --no-db --format json >/dev/null; } 2>&1 | tail -1)
  read -r wall user kib <<<"$out"
  printf '%-10s %-10s %6d %4d %5d %3d %5d %-8s %-4s %9d %8.2f %8.2f %9.1f\n' "$model" "$cluster" \
    $((pp * dp * tp)) "$pp" "$dp" "$tp" "$m" "$grad" "$([[ " $* " == *" --every-replica "* ]] && echo all || echo sym)" \
    $((6 * pp * dp * m)) "$wall" "$user" "$(awk -v k="$kib" 'BEGIN{print k/1024}')"
}
echo "# one 1F1B step; instr ~ 6 pp dp m (F, B, sends, receives; every replica's, simulated or not)"
echo "# replicas: sym = only the distinct ones simulated (default), all = --every-replica"
echo "# model      cluster      gpus   pp    dp  tp     m grad     rep      instr  wall[s]  user[s]  rss[MiB]"
for section in $sections; do
  case $section in
    gpus)
      echo "# against GPUs (llama2-7b, m = 64, analytic all-reduce, every replica)"
      for g in "4 1" "16 4" "16 16" "16 64" "64 16" "16 256"; do
        run llama2-7b dgx-h100 ${g% *} ${g#* } 1 64 analytic --every-replica
      done ;;
    microbatches)
      echo "# against microbatches (llama2-7b, pp = 16, dp = 64, analytic, every replica)"
      for m in 16 64 256 1024; do run llama2-7b dgx-h100 16 64 1 "$m" analytic --every-replica; done ;;
    16k)
      echo "# 16,384 GPUs: llama2-7b pp 16 x dp 1024, m = 64"
      for f in $fabrics; do
        run llama2-7b "$f" 16 1024 1 64 analytic
        run llama2-7b "$f" 16 1024 1 64 ring
        run llama2-7b "$f" 16 1024 1 64 analytic --every-replica
      done ;;
    gpt3)
      echo "# 16,384 GPUs: gpt3-175b tp 8 x pp 16 x dp 128, m = 64"
      for f in $fabrics; do
        run gpt3-175b "$f" 16 128 8 64 analytic
        run gpt3-175b "$f" 16 128 8 64 ring
        run gpt3-175b "$f" 16 128 8 64 analytic --every-replica
      done ;;
    scale)
      echo "# ring reduction from 1,024 to 131,072 GPUs (a period of replicas runs for all)"
      run llama2-7b dgx-h100 16 64 1 64 ring
      run llama2-7b dgx-h100 16 1024 1 64 ring
      run llama2-7b dgx-h100 16 6400 1 64 ring
      run llama2-7b dgx-h100-superpod 16 6400 1 64 ring
      run llama3-405b dgx-h100-superpod 16 1024 8 8 ring
      echo "# DeepSeek-V3's layout: the MoE all-to-all over all 64 replicas, folded onto mirrors"
      run deepseek-v3 dgx-h100 16 64 1 16 ring --ep 64 ;;
  esac
done
