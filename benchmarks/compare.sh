#!/usr/bin/env bash
# Compares the Google Benchmark programs of two commits on this machine, side by side in one run.
#
# Usage: benchmarks/compare.sh OLD NEW [BENCHMARK...]
#   OLD, NEW   commits (anything `git rev-parse` takes; NEW may be "worktree" for the uncommitted tree)
#   BENCHMARK  programs to run (default: schedule_benchmark); each must exist in both commits
# Environment:
#   FILTER     --benchmark_filter regex (default: the issue figures, Pipeline/Lower/Evaluate at
#              interleaved-1f1b p64 v4 m1024)
#   ROUNDS     interleaved rounds (default 5); each round runs OLD then NEW, the next NEW then OLD
#   MIN_TIME   --benchmark_min_time per run (default 0.5, seconds)
#   DIR        where the two builds live (default build-compare/); a commit's build is reused
#   JOBS       build parallelism (default: all cores)
#
# Each commit is exported with `git archive` into DIR/<sha>/src and built there, Release with the
# same compiler and flags, tests, the CUDA engine and unity builds off, only the named programs. The machines are
# shared and noisy, so the two are never timed apart: round k runs both, alternating which goes
# first, and the script prints, per benchmark, each side's median time per iteration, the speed-up
# (OLD's median over NEW's: 2.0 = NEW takes half the time) and the spread of the per-round
# speed-ups (min-max), then the rate counters (actions/s, ...) the same way.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(build ...) stops the script too
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
old=$1 new=$2
shift 2
programs=${*:-schedule_benchmark}
filter=${FILTER:-'(Pipeline|Lower|Evaluate)/interleaved-1f1b_p64_v4_m1024'}
rounds=${ROUNDS:-5}
min_time=${MIN_TIME:-0.5}
dir=${DIR:-build-compare}
jobs=${JOBS:-$(nproc)}
case $rounds in '' | *[!0-9]* | 0)
  echo "compare.sh: ROUNDS=$rounds: must be a positive integer" >&2
  exit 2
  ;;
esac

# build REV -> prints the folder holding the built programs
build() {
  local rev=$1 sha src out
  if [ "$rev" = worktree ]; then
    sha=worktree
    src=$dir/worktree/src
    rm -rf "$src"
    mkdir -p "$src"
    # tracked and untracked-but-not-ignored files, as they are now
    # (deleted files are skipped; times kept, so an unchanged file is not rebuilt)
    git ls-files -co --exclude-standard -z |
      while IFS= read -r -d '' file; do
        [ -e "$file" ] && cp -p --parents "$file" "$src"
      done
  else
    if ! sha=$(git rev-parse --verify --quiet "$rev^{commit}"); then
      echo "compare.sh: $rev: not a commit" >&2
      exit 2
    fi
    src=$dir/$sha/src
    if [ ! -d "$src" ]; then  # extracted whole or not at all: an interrupted export is not reused
      rm -rf "$src.partial"
      mkdir -p "$src.partial"
      git archive "$sha" | tar -x -C "$src.partial"
      mv "$src.partial" "$src"
    fi
  fi
  out=$dir/$sha/build
  # Unity builds off on both sides (commits before 3112a1d have none; batching changes inlining).
  cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release -DPIPETTE_BUILD_TESTS=OFF \
    -DPIPETTE_WITH_CUDA=OFF -DPIPETTE_UNITY_BUILD=OFF >"$dir/$sha.configure.log" 2>&1 ||
    { echo "compare.sh: configuring $rev failed: $dir/$sha.configure.log" >&2 && exit 1; }
  for program in $programs; do
    cmake --build "$out" -j "$jobs" --target "$program" >>"$dir/$sha.build.log" 2>&1 ||
      { echo "compare.sh: building $program at $rev failed: $dir/$sha.build.log" >&2 && exit 1; }
  done
  echo "$out"
}

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "building $old ..." >&2
old_out=$(build "$old")/benchmarks
echo "building $new ..." >&2
new_out=$(build "$new")/benchmarks
results=$dir/results-$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"
for ((round = 1; round <= rounds; round++)); do
  order="old new"
  [ $((round % 2)) -eq 0 ] && order="new old"
  for program in $programs; do
    for side in $order; do
      folder=$old_out
      [ "$side" = new ] && folder=$new_out
      echo "round $round/$rounds: $program ($side)" >&2
      "$folder/$program" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
        --benchmark_format=json --benchmark_out="$results/$program.$side.$round.json" \
        --benchmark_out_format=json >/dev/null
    done
  done
done
echo "# $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# OLD $old ($(git rev-parse --short "$old" 2>/dev/null || echo "$old")), NEW $new" \
  "($(git rev-parse --short "$new" 2>/dev/null || echo "$new")); $rounds rounds, min_time $min_time s"
python3 benchmarks/compare_report.py "$results" $programs
