#!/usr/bin/env bash
# The predict-unseen study on the CPU engine (docs/fidelity.md, "Unseen configurations"), one
# command from the repository root:
#   bash experiments/predict-unseen/run.sh [DB]
# Measures every point of both sweeps (experiments/predict-unseen-schedules.toml, -shapes.toml;
# every step traced, the kernels profiled), fits the cost model to ONE of them (the 1F1B, m = 8,
# micro-batch 4, sequence 64 point of gpt-w256-l8: pipette fit, fit 1, fit.txt), then predicts
# every point from fit 1 alone (pipette simulate --fit 1 --costs-from RUN reads the point's
# configuration, never its measured costs; the fitted run's own prediction is reported apart). Times the fit and 40 predictions again (timing.txt),
# summarises (summary.txt: MAPE, worst, per-instruction-kind errors, schedule ranking) and draws
# predict-unseen.png. Resumable: finished points are kept. Run it on an otherwise idle machine.
# DB defaults to experiments/predict-unseen/predict-unseen.db (not committed).
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
db=${1:-experiments/predict-unseen/predict-unseen.db}
out=experiments/predict-unseen
python3 "$out/make_models.py"
launch=(mpirun -np 2)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# 1. Measure every point of both sweeps (their specs without the predictions: the same experiment
#    and point keys, so step 3 finds them measured).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for study in predict-unseen-schedules predict-unseen-shapes; do
  sed '/^predict = /d; /^fit = /d' "experiments/$study.toml" > "$tmp/$study.toml"
  "$pipette" sweep "$tmp/$study.toml" --db "$db"
done

# 2. Fit ONE of them: the 1F1B m = 8 point (gpt-w256-l8, micro-batch 4, sequence 64), measured
#    among the runs it will predict, so that the machine's drift over the study is not a bias.
if ! "$pipette" fits --db "$db" 2> /dev/null | grep -q '^ *1 '; then
  fitted=$("$pipette" runs --experiment predict-unseen-schedules --db "$db" --format json |
    python3 -c 'import json, sys
for r in json.load(sys.stdin):
    c = r["config"]
    if r["engine"] == "cpu" and c["schedule"] == "1f1b" and c["m"] == 8:
        print(r["id"]); break')
  "$pipette" fit "$fitted" --db "$db" > "$out/fit.txt"
fi
head -n 16 "$out/fit.txt"

# 3. Predict every measured point from fit 1 alone (the specs' predict = true, fit = "1").
for study in predict-unseen-schedules predict-unseen-shapes; do
  "$pipette" sweep "experiments/$study.toml" --db "$db"
done

# The ids of experiment $1's measured (cpu) runs.
measured_runs() {
  "$pipette" runs --experiment "$1" --db "$db" --format json |
    grep -o '"id":[0-9]*,"experiment_id":[0-9]*,"engine":"cpu"' | cut -d: -f2 | cut -d, -f1
}
all_measured="$(measured_runs predict-unseen-schedules) $(measured_runs predict-unseen-shapes)"

# The noise floor: every measured run replayed from its own costs (simulate --costs-from).
for id in $all_measured; do
  "$pipette" simulate --costs-from "$id" --db "$db" --experiment predict-unseen-replay \
    --point-key "run=$id" --format json > /dev/null
done

# The fit and 40 predictions again, timed (the measuring above is the slow part); recorded under
# their own experiment, which the summary leaves out.
start=$(date +%s.%N)
"$pipette" fit "$("$pipette" fits --id 1 --db "$db" --format json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0])')" --db "$db" > /dev/null
for id in $(echo $all_measured | tr ' ' '\n' | head -n 40); do
  "$pipette" simulate --fit 1 --costs-from "$id" --db "$db" --experiment predict-unseen-timing \
    --point-key "run=$id" --format json > /dev/null
done
end=$(date +%s.%N)
echo "fit + 40 predictions: $(echo "$end - $start" | bc) s wall" | tee "$out/timing.txt"

python3 "$out/summarise.py" "$db" "$out/predict-unseen.dat" | tee "$out/summary.txt"
gnuplot -e "datafile='$out/predict-unseen.dat'; outfile='$out/predict-unseen.png'" \
  "$out/predict-unseen.gp"
