#!/usr/bin/env bash
# The straggler study (docs/fidelity.md, "Uneven work: stragglers and variable lengths"), one
# command from the repository root:
#   bash experiments/straggler/run.sh [DB]
# p = 2 on the CPU engine (a core per rank on the 2-core machine), the fidelity study's wider
# model (gpt-w256, m = 8). Pipeline rank 1 is slowed to speed 1, 0.8, 0.5 and 0.25 (`pipette
# train --rank-speed 1=S`: each compute is followed by a busy wait of (1/S - 1) x its own CPU
# time) under 1F1B, ZB-H1 and interleaved 1F1B. Each slowed run is measured, and predicted by the
# simulator from the *unslowed* run's measured costs plus the same --rank-speed (`pipette
# simulate --costs-from UNSLOWED --rank-speed 1=S --calibration latest`), the question being
# whether the simulator predicts a straggler's effect on each schedule before it is run.
# Resumable: every point is recorded under a --point-key and its JSON kept in $out/points/; a
# point already there is not run again (to start over, delete points/ and the database together).
# Writes straggler.dat, straggler.txt and straggler.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
db=${1:-experiments/straggler/straggler.db}
out=experiments/straggler
mkdir -p "$out/points"
launch=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
train=(--model experiments/fidelity/gpt-w256.toml -p 2 -m 8 --steps 6 --trace-steps 6)
schedules=(1f1b zb-h1 interleaved-1f1b)
speeds=(1 0.8 0.5 0.25)

if ! "$pipette" calibrations --db "$db" 2> /dev/null | grep -q '^ *[0-9]'; then
  "$pipette" calibrate --engine cpu --db "$db" > "$out/calibration.txt"
fi

# Runs "$@" and keeps its last (JSON) line in $out/points/$key.json unless that is there already.
point() {
  local key=$1
  shift
  [ -s "$out/points/$key.json" ] && return 0
  "$@" | tail -n 1 > "$out/points/$key.json.tmp"
  mv "$out/points/$key.json.tmp" "$out/points/$key.json"
}

run_id() { grep -o '"run_id":[0-9]*' "$1" | cut -d: -f2; }

for schedule in "${schedules[@]}"; do  # measure every point first, then predict
  for speed in "${speeds[@]}"; do
    key="train-$schedule-$speed"
    point "$key" "${launch[@]}" "$pipette" train "${train[@]}" --schedule "$schedule" \
      --rank-speed "1=$speed" --db "$db" --experiment straggler --point-key "$key" --format json
  done
done
for schedule in "${schedules[@]}"; do
  base=$(run_id "$out/points/train-$schedule-1.json")
  for speed in "${speeds[@]}"; do
    key="predict-$schedule-$speed"
    point "$key" "$pipette" simulate --costs-from "$base" --rank-speed "1=$speed" \
      --calibration latest --db "$db" --experiment straggler-predicted --point-key "$key" \
      --format json
  done
done

python3 "$out/summarise.py" "$out" "${schedules[*]}" "${speeds[*]}" | tee "$out/straggler.txt"
gnuplot -e "datafile='$out/straggler.dat'; outfile='$out/straggler.png'" "$out/straggler.gp"
