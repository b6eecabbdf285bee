#!/usr/bin/env bash
# Cost of the cluster platform against its size: wall time and peak resident memory of
# `pipette simulate` for a fixed 2-GPU job on ever more nodes (only the used GPUs are built, so
# this stays flat) and for jobs that use every GPU of ever more nodes (linear in the GPUs: the
# node zones are attached after their links exist, sim/README.md).
# Usage: benchmarks/platform_scaling.sh [PIPETTE_BINARY]
set -euo pipefail
bin=${1:-build/pipette}
run() {  # nodes pp dp
  local out
  out=$( { /usr/bin/time -f '%e %M' "$bin" simulate --no-db --nodes "$1" --pp "$2" --dp "$3" \
    -m 4 >/dev/null; } 2>&1)
  read -r wall kib <<<"$out"
  printf '%7d %4d %5d %9.2f %9.1f\n' "$1" "$2" "$3" "$wall" "$(awk -v k="$kib" 'BEGIN{print k/1024}')"
}
echo "# gpt3-1.3b 1F1B step on dgx-h100, m = 4"
echo "#  nodes   pp    dp   wall[s]  rss[MiB]"
echo "# a 2-GPU job on ever more nodes"
for n in 512 2048 8192 131072; do run "$n" 2 1; done
echo "# every GPU of the nodes used (pp 2 x dp = 8 x nodes)"
for n in 128 256 512 1024; do run "$n" 2 $((4 * n)); done
