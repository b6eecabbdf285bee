#!/usr/bin/env bash
# Scaling study of `pipette simulate`: wall time and peak resident memory of one llama2-7b 1F1B
# step (with the data-parallel all-reduce) against GPUs (pp x dp) and against microbatches.
# Usage: benchmarks/sim_scaling.sh [PIPETTE_BINARY]
set -euo pipefail
bin=${1:-build/pipette}
run() {  # pp dp m
  local pp=$1 dp=$2 m=$3 nodes out
  nodes=$(((pp * dp + 7) / 8))
  out=$( { /usr/bin/time -f '%e %M' "$bin" simulate --model llama2-7b --cluster dgx-h100 \
    --nodes "$nodes" --pp "$pp" --dp "$dp" -m "$m" --format json >/dev/null; } 2>&1)
  read -r wall kib <<<"$out"
  printf '%6d %4d %4d %6d %8d %9.2f %9.1f\n' $((pp * dp)) "$pp" "$dp" "$m" \
    $((6 * pp * dp * m)) "$wall" "$(awk -v k="$kib" 'BEGIN{print k/1024}')"
}
echo "# one llama2-7b 1F1B step on dgx-h100; every replica simulated; instr ~ 6 pp dp m (F, B, sends, receives)"
echo "#  gpus   pp   dp      m    instr   wall[s]   rss[MiB]"
echo "# against GPUs (m = 64)"
for g in "4 1" "8 2" "16 4" "16 16" "16 64" "32 32" "64 16"; do run $g 64; done
echo "# against microbatches (pp = 16, dp = 64)"
for m in 16 64 256 1024; do run 16 64 "$m"; done
