#!/usr/bin/env bash
# The predict-unseen study on the CPU engine (docs/fidelity.md, "Unseen configurations"), one
# command from the repository root:
#   bash experiments/predict-unseen/run.sh [DB]
# Measures ONE run (gpt-w256-l8, 1F1B, p = 2, m = 8, micro-batch size 4, sequence length 64, every
# step traced, its kernels profiled), fits the cost model to it (pipette fit: fit 1, fit.txt), then
# runs both sweeps (experiments/predict-unseen-schedules.toml, -shapes.toml): every point measured
# and predicted from fit 1 alone (pipette simulate --fit 1 --costs-from RUN reads the point's
# configuration, never its measured costs). Times the fit and 40 predictions again (timing.txt),
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

if ! "$pipette" fits --db "$db" 2> /dev/null | grep -q '^ *1 '; then
  "${launch[@]}" "$pipette" train --engine cpu --model "$out/gpt-w256-l8.toml" --schedule 1f1b \
    -p 2 -m 8 --micro-batch-size 4 --seq-len 64 --steps 8 --trace-steps 8 --db "$db" \
    --experiment predict-unseen-base --format json > /dev/null
  base=$("$pipette" runs --experiment predict-unseen-base --db "$db" --format json |
    grep -o '"id":[0-9]*' | head -1 | cut -d: -f2)
  "$pipette" fit "$base" --db "$db" > "$out/fit.txt"
fi
head -n 16 "$out/fit.txt"

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
base=$(measured_runs predict-unseen-base | head -n 1)
start=$(date +%s.%N)
"$pipette" fit "$base" --db "$db" --format json > /dev/null
for id in $(echo $all_measured | tr ' ' '\n' | head -n 40); do
  "$pipette" simulate --fit 1 --costs-from "$id" --db "$db" --experiment predict-unseen-timing \
    --point-key "run=$id" --format json > /dev/null
done
end=$(date +%s.%N)
echo "fit + 40 predictions: $(echo "$end - $start" | bc) s wall" | tee "$out/timing.txt"

python3 "$out/summarise.py" "$db" "$out/predict-unseen.dat" | tee "$out/summary.txt"
gnuplot -e "datafile='$out/predict-unseen.dat'; outfile='$out/predict-unseen.png'" \
  "$out/predict-unseen.gp"
