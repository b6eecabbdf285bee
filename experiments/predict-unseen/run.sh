#!/usr/bin/env bash
# The predict-unseen study on the CPU engine (docs/fidelity.md, "Unseen configurations"), one
# command from the repository root:
#   bash experiments/predict-unseen/run.sh [DB]
# Checks that the machine is quiet (the fitted configuration three times: refused when their step
# times spread by more than QUIET_MAX, default 5 %; quiet.txt), calibrates it (pipette calibrate:
# calibration 1, with its GEMM table; calibration.txt), measures every point of the five sweeps in
# ROUNDS rounds (default 4; experiments/predict-unseen-schedules.toml, -shapes.toml, -gaps.toml,
# -ranking.toml, -zb.toml; every step traced, the kernels profiled; rounds 2, 3, 4 as experiments
# NAME-again, NAME-again3, NAME-again4, the even ones in the reverse order, so that a drift of the
# machine's speed over the study averages out of each point's median), fits the cost model to ONE
# run (the 1F1B, m = 8, micro-batch 4, sequence 64 point of gpt-w256-l8, the round whose step time
# is the median of the point's rounds; GEMMs priced by calibration 1's table: pipette fit, fit 1,
# fit.txt), then predicts every point from fit 1 alone (pipette simulate --fit 1 --costs-from RUN
# reads the point's configuration, never its measured costs; the fitted point's own prediction is
# reported apart). Times the fit and 40 predictions again (timing.txt), summarises (summary.txt:
# MAPE, worst, per-instruction-kind errors, schedule ranking) and draws predict-unseen.png.
# Resumable: finished points are kept. Run it on an otherwise idle machine.
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
# The study's sweeps (experiments/NAME.toml), in measuring order.
studies=(predict-unseen-schedules predict-unseen-shapes predict-unseen-gaps predict-unseen-ranking
  predict-unseen-zb)

# Is the machine quiet? The fitted configuration trained QUIET_RUNS times back to back (default
# 3, not recorded): when their steady step times (steps >= 1) spread by more than QUIET_MAX percent
# of their median (default 5), the machine's speed is drifting, and the study would measure the
# drift rather than the schedules (docs/fidelity.md, "Unseen configurations"): refuse, exit 1, with
# the times. QUIET_MAX=100 measures anyway. Run whenever a point is still to be measured (a fresh
# study, a resumed one, a sweep added to a finished one); every check, passed or refused, is
# appended to quiet.txt with its time.
quiet_check() {
  local times=""
  for _ in $(seq 1 "${QUIET_RUNS:-3}"); do
    times="$times $("${launch[@]}" "$pipette" train --engine cpu --pp 2 --schedule 1f1b -m 8 \
      --micro-batch-size 4 --seq-len 64 --steps 8 --trace-steps 8 --no-db --quiet --format json \
      --model "$out/gpt-w256-l8.toml" | python3 -c 'import json, statistics, sys
print(statistics.mean(json.load(sys.stdin)["step_time_s"][1:]))')"
  done
  python3 - "${QUIET_MAX:-5}" $times << 'EOF'
import datetime, statistics, sys
limit, times = float(sys.argv[1]), [float(t) for t in sys.argv[2:]]
spread = 100 * (max(times) - min(times)) / statistics.median(times)
verdict = "refused" if spread > limit else "passed"
print(f"# quiet check {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: the fitted "
      f"configuration's step time {', '.join(f'{1e3 * t:.1f}' for t in times)} ms, spread "
      f"{spread:.1f}% of the median (QUIET_MAX {limit:g}%): {verdict}", flush=True)
if spread > limit:
    sys.exit(f"run.sh: the machine is not quiet: the same run's step time spread {spread:.1f}% "
             f"(above QUIET_MAX {limit:g}%); measure later, or set QUIET_MAX=100 to measure anyway")
EOF
}

# The measuring specs: every sweep ROUNDS times (default 4; their specs without the predictions:
# round 1 keeps the experiments' names and point keys, so step 3 finds them measured; round r >= 2
# is experiment NAME-again (r = 2) or NAME-again<r>, every axis's values reversed in the even
# rounds, so that a drift of the machine's speed averages out of each point), in measuring order.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
round_spec() {  # round_spec SPEC SUFFIX REVERSE: the measuring spec of one round
  python3 - "$1" "$2" "$3" << 'EOF'
import json, sys, tomllib
spec, suffix, reverse = tomllib.load(open(sys.argv[1], "rb")), sys.argv[2], sys.argv[3] == "1"
print(f"name = {json.dumps(spec['name'] + suffix)}")
print(f"description = {json.dumps(spec['description'])}")
print(f"command = {json.dumps(spec['command'])}\n[fixed]")
for key, value in spec["fixed"].items():
    print(f"{json.dumps(key)} = {json.dumps(value)}")
print("[axes]")
for key, values in spec["axes"].items():
    print(f"{json.dumps(key)} = {json.dumps(values[::-1] if reverse else values)}")
EOF
}
specs=()
for round in $(seq 1 "${ROUNDS:-4}"); do
  suffix=$([ "$round" = 1 ] && echo "" || ([ "$round" = 2 ] && echo "-again" || echo "-again$round"))
  reverse=$((1 - round % 2))
  order=("${studies[@]}")
  [ "$reverse" = 1 ] && order=($(printf '%s\n' "${studies[@]}" | tac))
  for study in "${order[@]}"; do
    round_spec "experiments/$study.toml" "$suffix" "$reverse" > "$tmp/$study$suffix.toml"
    specs+=("$tmp/$study$suffix.toml")
  done
done

# 0. A quiet machine, when anything is still to be measured.
pending=0
for spec in "${specs[@]}"; do
  dry=$("$pipette" sweep "$spec" --db "$db" --dry-run)
  grep -q ', [1-9][0-9]* to run;' <<< "$dry" && pending=1
done
if [ "$pending" = 1 ]; then
  quiet_check | tee -a "$out/quiet.txt"
fi

# The machine's calibration (its GEMM table prices the fit's GEMMs by shape).
if ! "$pipette" calibrations --db "$db" 2> /dev/null | grep '^ *1 ' > /dev/null; then
  "$pipette" calibrate --engine cpu --db "$db" > "$out/calibration.txt"
fi

# 1. Measure every point of the sweeps in every round.
for spec in "${specs[@]}"; do
  "$pipette" sweep "$spec" --db "$db"
done

# 2. Fit ONE of them: the 1F1B m = 8 point (gpt-w256-l8, micro-batch 4, sequence 64), measured
#    among the runs it will predict, so that the machine's drift over the study is not a bias. The
#    point was measured once per round like every other: the fit takes the round whose steady step
#    time (steps >= 1) is the median of them (the lower median for an even count), so that a round
#    the machine slowed or sped does not set the speed of every prediction; the other rounds stay
#    measurements of the point.
if ! "$pipette" fits --db "$db" 2> /dev/null | grep '^ *1 ' > /dev/null; then
  fitted=$(python3 - "$db" << 'EOF'
import json, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rounds = []
for run, config in db.execute(
        "SELECT r.id, r.config FROM runs r JOIN experiments e ON r.experiment_id = e.id WHERE "
        "r.engine = 'cpu' AND r.status = 'ok' AND (e.name = 'predict-unseen-schedules' OR "
        "e.name LIKE 'predict-unseen-schedules-again%')"):
    config = json.loads(config)
    if config["schedule"] == "1f1b" and config["m"] == 8:
        steps = [v for n, v in db.execute("SELECT name, value FROM metrics WHERE run_id = ? AND "
                                          "name LIKE 'step_times_s[%'", (run,))
                 if int(n[len("step_times_s["):-1]) >= 1]
        rounds.append((statistics.mean(steps), run))
rounds.sort()
print(rounds[(len(rounds) - 1) // 2][1])
EOF
  )
  "$pipette" fit "$fitted" --calibration 1 --db "$db" > "$out/fit.txt"
fi
head -n 17 "$out/fit.txt"

# 3. Predict every measured point from fit 1 alone (the specs' predict = true, fit = "1").
for study in "${studies[@]}"; do
  "$pipette" sweep "experiments/$study.toml" --db "$db"
done

# The ids of experiment $1's measured (cpu) runs.
measured_runs() {
  "$pipette" runs --experiment "$1" --db "$db" --format json |
    grep -o '"id":[0-9]*,"experiment_id":[0-9]*,"engine":"cpu"' | cut -d: -f2 | cut -d, -f1
}
all_measured=""
for study in "${studies[@]}"; do
  all_measured="$all_measured $(measured_runs "$study")"
done

# The noise floor: every measured run replayed from its own costs (simulate --costs-from).
for id in $all_measured; do
  "$pipette" simulate --costs-from "$id" --db "$db" --experiment predict-unseen-replay \
    --point-key "run=$id" --format json > /dev/null
done

# The fit and 40 predictions again, timed (the measuring above is the slow part); recorded under
# their own experiment, which the summary leaves out.
start=$(date +%s.%N)
"$pipette" fit "$("$pipette" fits --id 1 --db "$db" --format json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0])')" --calibration 1 \
  --db "$db" > /dev/null
for id in $(echo $all_measured | tr ' ' '\n' | head -n 40); do
  "$pipette" simulate --fit 1 --costs-from "$id" --db "$db" --experiment predict-unseen-timing \
    --point-key "run=$id" --format json > /dev/null
done
end=$(date +%s.%N)
echo "fit + 40 predictions: $(echo "$end - $start" | bc) s wall" | tee "$out/timing.txt"

python3 "$out/summarise.py" "$db" "$out/predict-unseen.dat" | tee "$out/summary.txt"
gnuplot -e "datafile='$out/predict-unseen.dat'; outfile='$out/predict-unseen.png'" \
  "$out/predict-unseen.gp"
