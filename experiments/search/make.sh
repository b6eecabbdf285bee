#!/usr/bin/env bash
# Writes the searched schedules that experiments/search.toml sweeps beside the built-ins: one
# PyTorch compute-only CSV per (cost set, m), made by `pipette schedule search` with the default
# iteration budget and seed and no time limit, so the files are reproducible. Run from the
# repository root after building: bash experiments/search/make.sh [PIPETTE]
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${1:-build/pipette}
out=experiments/search
# m lengths cycling 512, 2048, 1024, 4096, comma-separated.
seqlens() {
  local cycle=(512 2048 1024 4096) list=""
  for ((k = 0; k < $1; ++k)); do list+="${list:+,}${cycle[k % 4]}"; done
  echo "$list"
}
for m in 8 16 32; do
  # second: F=1, I=2, W=1 (ms), flat loop placement, at most 6 chunks in flight per rank
  # (zb-h1 holds 4, zb-h2 7).
  "$pipette" schedule search -p 4 -m "$m" --times F=1,I=2,W=1 --memory-limit 6 --time-limit 0 \
    --format csv >"$out/second-limit6-m$m.csv"
  # forward-heavy: F=2, I=1, W=1, V placement, ZB-V's memory (2p = 8 chunks).
  "$pipette" schedule search -p 4 -m "$m" --placement v --times F=2,I=1,W=1 --memory-limit 8 \
    --time-limit 0 --format csv >"$out/v-forward-heavy-m$m.csv"
  # latency: F=1, I=2, W=1 with 500 us per message, V placement, ZB-V's memory.
  "$pipette" schedule search -p 4 -m "$m" --placement v --times F=1,I=2,W=1 --latency 0.5 \
    --memory-limit 8 --time-limit 0 --format csv >"$out/v-latency-m$m.csv"
  # variable-length microbatches: lengths cycling 512, 2048, 1024, 4096 against the reference
  # 1024 at which F=I=W=1, 30% of a chunk's cost growing with the square of the length; flat loop
  # placement at 1F1B's memory (4 chunks).
  seqlens=$(seqlens "$m")
  "$pipette" schedule search -p 4 -m "$m" --times F=1,I=1,W=1 --microbatch-seqlens "$seqlens" \
    --seq-len 1024 --attention-share 0.3 --memory-limit 4 --time-limit 0 \
    --format csv >"$out/seqlens-limit4-m$m.csv"
done
echo "search: wrote $(ls "$out"/*.csv | wc -l) schedules to $out"
