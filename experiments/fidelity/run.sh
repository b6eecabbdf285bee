#!/usr/bin/env bash
# The fidelity study on the CPU engine (docs/fidelity.md), one command from the repository root:
#   bash experiments/fidelity/run.sh [DB]
# Calibrates this machine (pipette calibrate), runs both sweeps (each point measured, then
# predicted from its own costs with that calibration: medians, a core per rank), predicts the same
# measured runs again with the variants docs/fidelity.md discusses (means instead of medians;
# shared cores for the oversubscribed runs), draws the figures and prints every summary
# (pipette compare --experiment). Run it on an otherwise idle machine: other load distorts the
# measurements. DB defaults to experiments/fidelity/fidelity.db (not committed). About 6 min on the
# 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
db=${1:-experiments/fidelity/fidelity.db}
out=experiments/fidelity
"$pipette" calibrate --engine cpu --db "$db" --cluster-out "$out/host.toml" > "$out/calibration.txt"
tail -n 3 "$out/calibration.txt"

# The ids of experiment $1's measured (cpu) runs.
measured_runs() {
  "$pipette" runs --experiment "$1" --db "$db" --format json |
    grep -o '"id":[0-9]*,"experiment_id":[0-9]*,"engine":"cpu"' | cut -d: -f2 | cut -d, -f1
}

# Predicts experiment $1's measured runs again into experiment $2 with options $3.
predict_again() {
  for id in $(measured_runs "$1"); do
    "$pipette" simulate --costs-from "$id" --calibration latest $3 --db "$db" \
      --experiment "$2" --point-key "run=$id" --format json > /dev/null
  done
}

summarise() {
  "$pipette" compare --experiment "$1" --db "$db" | tee "$out/$1.txt" | tail -n 1
  "$pipette" compare --experiment "$1" --db "$db" --format json > "$out/$1.json"
}

for study in fidelity-cpu fidelity-cpu-oversubscribed; do
  "$pipette" sweep "experiments/$study.toml" --db "$db"
  summarise "$study"
done
predict_again fidelity-cpu fidelity-cpu-mean "--cost-statistic mean"
summarise fidelity-cpu-mean
predict_again fidelity-cpu-oversubscribed fidelity-cpu-oversubscribed-shared "--cores 2"
summarise fidelity-cpu-oversubscribed-shared

# The committed figures: predicted against measured (52 pairs: colour by model, marker by m, as
# chosen; the oversubscribed study by its layout, pp 4 or pp 2 x dp 2, and model), each study's
# error by schedule, and one step of tiny 1F1B (m = 8) stacked: the prediction above its
# measurement.
for study in fidelity-cpu fidelity-cpu-oversubscribed; do
  runs=$("$pipette" runs --experiment "$study" --db "$db" --format json |
    grep -o '"id":[0-9]*,"experiment' | cut -d: -f2 | cut -d, -f1 | paste -sd,)
  keys=()
  [ "$study" = fidelity-cpu-oversubscribed ] && keys=(--colour-by pp --marker-by model)
  "$pipette" plot compare --db "$db" --run "$runs" --out "$out/$study.png" --size 1200x800 \
    "${keys[@]}"
  "$pipette" plot errors --db "$db" --run "$runs" --out "$out/$study-errors.png" --size 1200x600
done
pair=$(grep -o '"predicted_run":[0-9]*,"measured_run":[0-9]*,"schedule":"1f1b","model":"tiny","p":2,"v":1,"m":8,' \
  "$out/fidelity-cpu.json" | grep -o '[0-9][0-9]*' | head -2 | paste -sd,)
"$pipette" plot timeline --db "$db" --run "$pair" --step 3 --out "$out/timeline-1f1b-tiny.png" \
  --size 1400x700

# The study's report page (pipette report) and, where Debian's headless Chromium is installed
# (scripts/install-deps.sh --browser), its screenshot in docs/img.
report=$(mktemp -d)
"$pipette" report --db "$db" --experiment fidelity-cpu --out "$report" > /dev/null
if command -v chromium-headless-shell > /dev/null 2>&1; then
  chromium-headless-shell --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1900 \
    --screenshot=docs/img/report-fidelity-cpu.png "file://$report/index.html" 2> /dev/null
fi
rm -rf "$report"
