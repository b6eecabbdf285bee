#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: the ctest command of each `fuzz` test.
#   run_fuzzer.sh BINARY SEED_CORPUS WORK_DIR [DICT]
# Fuzzes for ${PIPETTE_FUZZ_SECONDS:-5} seconds (one process) starting from WORK_DIR/corpus (what
# earlier runs found; grown here) and SEED_CORPUS (committed; only read). A crash, a leak, a
# sanitizer report, a timeout of one input (-timeout, 10 s) or more than 2 GB of memory fails the
# test and leaves the input in WORK_DIR/crash-* (reproduce: BINARY WORK_DIR/crash-...).
set -euo pipefail
binary=$1 seeds=$2 work=$3 dict=${4:-}
mkdir -p "$work/corpus"
# Readable stacks in reports: llvm-14's symbolizer (install-deps.sh) is not on PATH by that name.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
args=(-max_total_time="${PIPETTE_FUZZ_SECONDS:-5}" -timeout=10 -rss_limit_mb=2048 -max_len=4096
      -print_final_stats=1 -artifact_prefix="$work/")
if [ -n "$dict" ]; then args+=(-dict="$dict"); fi
exec "$binary" "${args[@]}" "$work/corpus" "$seeds"
