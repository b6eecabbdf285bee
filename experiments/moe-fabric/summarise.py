#!/usr/bin/env python3
"""Step times of the moe-fabric study from its (merged) database, by model, fabric and schedule.

Usage: summarise.py DB. Prints one table per model variant (the MoE model with and without the
(F;B) all-to-all overlap, the dense control; fabrics as rows, schedules as columns, step time in
ms), what the overlap saves per schedule, then per (variant, fabric) the ranking and DualPipe-V's
step time against the best of the other schedules. Reads the database only.
"""
import json
import sqlite3
import sys

SCHEDULES = ["1f1b", "interleaved-1f1b", "zb-h1", "dualpipe-v"]


def main(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT r.config, r.status, m.value FROM runs r JOIN experiments e ON e.id = r.experiment_id "
        "JOIN metrics m ON m.run_id = r.id AND m.name = 'step_time_s' "
        "WHERE e.name = 'moe-fabric' AND r.status IN ('ok', 'oom') ORDER BY r.id").fetchall()
    step = {}
    models, clusters = [], []
    for config_text, status, seconds in rows:
        config = json.loads(config_text)
        cluster = config["cluster"]
        model = config["model"]
        if config.get("ep", 1) > 1 and not config.get("alltoall_overlap", True):
            model += " (no overlap)"
        if model not in models:
            models.append(model)
        if cluster not in clusters:
            clusters.append(cluster)
        step[(model, cluster, config["schedule"])] = (seconds * 1e3, status)
    print(f"# moe-fabric: step time [ms] ({len(rows)} runs from {path})")
    for model in models:
        print(f"\n# model {model}")
        print(f"{'fabric':<26}" + "".join(f"{s:>18}" for s in SCHEDULES))
        for cluster in clusters:
            cells = []
            for s in SCHEDULES:
                ms, status = step.get((model, cluster, s), (None, ""))
                cells.append("-" if ms is None else f"{ms:.2f}" + (" oom" if status == "oom" else ""))
            print(f"{cluster:<26}" + "".join(f"{c:>18}" for c in cells))
    print("\n# what the (F;B) all-to-all overlap saves [ms] (step without - step with)")
    for model in models:
        base = model + " (no overlap)"
        if base not in models:
            continue
        print(f"{model:<14} {'fabric':<26}" + "".join(f"{s:>18}" for s in SCHEDULES))
        for cluster in clusters:
            cells = []
            for s in SCHEDULES:
                if (model, cluster, s) in step and (base, cluster, s) in step:
                    cells.append(f"{step[(base, cluster, s)][0] - step[(model, cluster, s)][0]:.2f}")
                else:
                    cells.append("-")
            print(f"{'':<14} {cluster:<26}" + "".join(f"{c:>18}" for c in cells))
    print("\n# ranking (fastest first); DualPipe-V against the best other schedule")
    for model in models:
        for cluster in clusters:
            have = [(step[(model, cluster, s)][0], s) for s in SCHEDULES if (model, cluster, s) in step]
            if not have:
                continue
            ranking = " < ".join(s for _, s in sorted(have))
            others = [ms for ms, s in have if s != "dualpipe-v"]
            line = f"{model:<26} {cluster:<18} {ranking}"
            if (model, cluster, "dualpipe-v") in step and others:
                dv = step[(model, cluster, "dualpipe-v")][0]
                line += f"   dualpipe-v {100 * (dv / min(others) - 1):+.1f}% vs best other"
            print(line)


if __name__ == "__main__":
    main(sys.argv[1])
