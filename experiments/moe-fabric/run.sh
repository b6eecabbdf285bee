#!/usr/bin/env bash
# The MoE x fabric study (experiments/moe-fabric.toml), run the way a study too large for one
# machine runs: as shards (`pipette sweep --shard auto`, K and N from mpirun's environment; on a
# cluster, a Slurm job array instead: docs/experiments.md), joined by `pipette db merge`, the
# figures drawn from the merged database. One command from the repository root:
#   bash experiments/moe-fabric/run.sh [SHARDS]
# SHARDS (default 2) processes under mpirun, each running the points i with i mod SHARDS = its
# rank into experiments/moe-fabric/moe-fabric.shard-K-of-SHARDS.db. Resumable: a shard skips the
# points its database already has, and the merge skips runs the merged database already has.
# Writes experiments/moe-fabric/moe-fabric.db (merged; not committed), the figures named in the
# spec, and summary.txt (step times by model, fabric and schedule, from the merged database).
set -euo pipefail
cd "$(dirname "$0")/../.."
pipette=${PIPETTE:-build/pipette}
shards=${1:-2}
out=experiments/moe-fabric
spec=experiments/moe-fabric.toml
launch=(mpirun --oversubscribe -np "$shards")
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)

"${launch[@]}" "$pipette" sweep "$spec" --db "$out/moe-fabric.db" --shard auto
inputs=()
for ((k = 0; k < shards; ++k)); do inputs+=("$out/moe-fabric.shard-$k-of-$shards.db"); done
"$pipette" db merge "$out/moe-fabric.db" "${inputs[@]}"
"$pipette" sweep "$spec" --db "$out/moe-fabric.db" --figures-only
python3 "$out/summarise.py" "$out/moe-fabric.db" > "$out/summary.txt"
cat "$out/summary.txt"
