#!/usr/bin/env bash
# The fidelity study on the CPU engine (docs/fidelity.md), one command from the repository root:
#   bash experiments/fidelity/run.sh [DB]
# Calibrates this machine (pipette calibrate), runs both sweeps (each point measured, then
# predicted from its own costs with that calibration), draws their figures and prints the
# summaries (pipette compare --experiment). Run it on an otherwise idle machine: other load
# distorts the measurements. DB defaults to experiments/fidelity/fidelity.db (not committed).
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
db=${1:-experiments/fidelity/fidelity.db}
"$pipette" calibrate --engine cpu --db "$db" --cluster-out experiments/fidelity/host.toml \
  > experiments/fidelity/calibration.txt
tail -n 3 experiments/fidelity/calibration.txt
for study in fidelity-cpu fidelity-cpu-oversubscribed; do
  "$pipette" sweep "experiments/$study.toml" --db "$db"
  "$pipette" compare --experiment "$study" --db "$db" | tee "experiments/fidelity/$study.txt"
  "$pipette" compare --experiment "$study" --db "$db" --format json \
    > "experiments/fidelity/$study.json"
done
