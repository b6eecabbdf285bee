#!/usr/bin/env bash
# The variable-length study (docs/fidelity.md, "Uneven work: stragglers and variable lengths"),
# one command from the repository root:
#   bash experiments/varlen/run.sh [DB]
# p = 2 on the CPU engine, a narrow long-context GPT (gpt-long.toml: width 64, 512 positions),
# m = 8 microbatches of two sequences, 4096 tokens per step in every case, 20 steps:
#   uniform      256 x 8                                (the reference run, --seq-len 256)
#   mixed        512,32,448,96,384,160,320,96           (sum of s^2 1.45x uniform's)
#   long-first   the mixed lengths sorted longest first
#   short-first  the mixed lengths sorted shortest first
# under 1F1B, ZB-H1 and interleaved 1F1B. Each mixed run is measured (`pipette train
# --microbatch-seqlens LIST --seq-len 512`) and predicted from the uniform run's measured costs
# (`pipette simulate --costs-from UNIFORM --microbatch-seqlens LIST --attention-share A`), where
# A, the share of a chunk's cost at 256 tokens that grows with s^2, is measured, not assumed: one
# more 1F1B run at --seq-len 128 gives r = (compute CPU time at 128) / (the same at 256) over both
# ranks (the engine's own accounting, `work_s`), and (1 - A)/2 + A/4 = r. Resumable as experiments/straggler/run.sh. Writes varlen.dat, varlen.txt
# and varlen.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
db=${1:-experiments/varlen/varlen.db}
out=experiments/varlen
mkdir -p "$out/points"
launch=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
train=(--model "$out/gpt-long.toml" -p 2 -m 8 --micro-batch-size 2 --steps 20 --trace-steps 20)
schedules=(1f1b zb-h1 interleaved-1f1b)
declare -A lists=(
  [mixed]=512,32,448,96,384,160,320,96
  [long-first]=512,448,384,320,160,96,96,32
  [short-first]=32,96,96,160,320,384,448,512
)
cases=(mixed long-first short-first)
for c in "${cases[@]}"; do echo "$c ${lists[$c]}"; done > "$out/lists.txt"

if ! "$pipette" calibrations --db "$db" 2> /dev/null | grep -q '^ *[0-9]'; then
  "$pipette" calibrate --engine cpu --db "$db" > "$out/calibration.txt"
fi

point() {  # as experiments/straggler/run.sh
  local key=$1
  shift
  [ -s "$out/points/$key.json" ] && return 0
  "$@" | tail -n 1 > "$out/points/$key.json.tmp"
  mv "$out/points/$key.json.tmp" "$out/points/$key.json"
}
run_id() { grep -o '"run_id":[0-9]*' "$out/points/$1.json" | cut -d: -f2; }
record() { echo --db "$db" --experiment "$1" --point-key "$2" --format json; }

# The attention share A from 1F1B at 128 and 256 tokens.
for s in 128 256; do
  point "train-1f1b-uniform$s" "${launch[@]}" "$pipette" train "${train[@]}" --schedule 1f1b \
    --seq-len "$s" $(record varlen "train-1f1b-uniform$s")
done
share=$(python3 "$out/summarise.py" share "$out" train-1f1b-uniform128 train-1f1b-uniform256)
echo "attention share at 256 tokens: $share" | tee "$out/share.txt"

for schedule in "${schedules[@]}"; do  # measure every point first, then predict
  [ "$schedule" = 1f1b ] ||
    point "train-$schedule-uniform256" "${launch[@]}" "$pipette" train "${train[@]}" \
      --schedule "$schedule" --seq-len 256 $(record varlen "train-$schedule-uniform256")
  for c in "${cases[@]}"; do
    point "train-$schedule-$c" "${launch[@]}" "$pipette" train "${train[@]}" \
      --schedule "$schedule" --seq-len 512 --microbatch-seqlens "${lists[$c]}" \
      $(record varlen "train-$schedule-$c")
  done
done
for schedule in "${schedules[@]}"; do
  base=$(run_id "train-$schedule-uniform256")
  for c in "${cases[@]}"; do
    point "predict-$schedule-$c" "$pipette" simulate --costs-from "$base" --calibration latest \
      --microbatch-seqlens "${lists[$c]}" --attention-share "$share" \
      $(record varlen-predicted "predict-$schedule-$c")
  done
  point "predict-$schedule-uniform256" "$pipette" simulate --costs-from "$base" \
    --calibration latest $(record varlen-predicted "predict-$schedule-uniform256")
done

python3 "$out/summarise.py" table "$out" "${schedules[*]}" "uniform256 ${cases[*]}" |
  tee "$out/varlen.txt"
gnuplot -e "datafile='$out/varlen.dat'; outfile='$out/varlen.png'" "$out/varlen.gp"
