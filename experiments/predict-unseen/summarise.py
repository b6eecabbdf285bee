#!/usr/bin/env python3
"""The predict-unseen study's summary (run.sh): every prediction made by a fit (`simulate --fit F
--costs-from RUN`) against its measured run, from the experiment database.

Step time is the steady state: the mean of step_times_s[k] over the traced steps k >= 1, measured
and predicted alike; a point measured in several rounds (run.sh: experiments NAME-again,
NAME-again3, ...) is the median of its rounds (a round the shared machine disturbed, up to 1.7x
its others, does not move it; the summary prints the mean's figures too). Per instruction kind: the relative error of each executed instruction's
duration (steps >= 1, joined by rank, step, instruction id and kind), median of the absolute
values. Ranking: the runs that differ only in the schedule form a group; the predicted fastest
schedule against the measured one (counted where the measured gap between the two fastest is
> 5%), and Kendall's tau between predicted and measured step times over the group's schedules.

usage: summarise.py DB DATFILE   (writes DATFILE for predict-unseen.gp, prints the summary)"""
import json
import math
import sqlite3
import statistics
import sys


def steady(db, run):
    rows = db.execute("SELECT name, value FROM metrics WHERE run_id = ? AND name LIKE "
                      "'step_times_s[%'", (run,)).fetchall()
    times = sorted((int(n[len("step_times_s["):-1]), v) for n, v in rows)
    later = [v for k, v in times if k >= 1]
    return statistics.mean(later if later else [v for _, v in times])


def durations(db, run):
    out = {}
    for rank, step, instr, kind, start, end in db.execute(
            "SELECT rank, step, instr_id, kind, start_s, end_s FROM events WHERE run_id = ? AND "
            "step >= 1 AND kind IN ('F', 'I', 'W', 'B')", (run,)):
        out[(rank, step, instr, kind)] = end - start
    return out


class Table:
    """A fit's GEMM table (engine/gemm_table.h): per pass, the time per FLOP interpolated in log2
    of each size, held beyond the grid."""

    def __init__(self, timings):
        self.grids = {}
        for p, m, n, k, _, seconds in timings:
            self.grids.setdefault(p, {})[(m, n, k)] = math.log(seconds / (2 * m * n * k))
        self.sizes = {p: [sorted({key[d] for key in g}) for d in range(3)]
                      for p, g in self.grids.items()}

    def seconds(self, p, m, n, k):
        grid, sizes = self.grids[p], self.sizes[p]

        def bracket(values, x):
            if len(values) == 1 or x <= values[0]:
                return 0, 0.0
            if x >= values[-1]:
                return len(values) - 2, 1.0
            i = max(j for j in range(len(values) - 1) if values[j] < x)
            lo, hi = math.log2(values[i]), math.log2(values[i + 1])
            return i, (math.log2(x) - lo) / (hi - lo)

        (im, wm), (jn, wn), (kk, wk) = (bracket(sizes[d], x) for d, x in enumerate((m, n, k)))
        total = 0.0
        for dm in (0, 1):
            for dn in (0, 1):
                for dk in (0, 1):
                    w = (wm if dm else 1 - wm) * (wn if dn else 1 - wn) * (wk if dk else 1 - wk)
                    if w:
                        total += w * grid[(sizes[0][im + dm], sizes[1][jn + dn],
                                           sizes[2][kk + dk])]
        return math.exp(total) * 2 * m * n * k

    def mean_seconds(self, m, n, k):  # the profile merges the passes: their mean
        return statistics.mean(self.seconds(p, m, n, k) for p in self.grids)


def machine_speed(db, run, theta):
    """How much slower the machine ran `run`'s GEMMs than the fit expects: the run's own kernel
    profile (total GEMM seconds) over the fit's price of the same calls (by its GEMM table when it
    has one, the mean of the passes). 1: as fast as when the fitted run was measured. For analysis only (it reads the
    measured run)."""
    rows = dict(db.execute("SELECT name, value FROM metrics WHERE run_id = ? AND name LIKE "
                           "'kernel_gemm_%'", (run,)).fetchall())
    measured = predicted = 0.0
    for name, seconds in rows.items():
        if not name.startswith("kernel_gemm_s["):
            continue
        m, n, k = (int(x) for x in name[len("kernel_gemm_s["):-1].split("x"))
        calls = rows.get(f"kernel_gemm_calls[{m}x{n}x{k}]", 0)
        measured += seconds
        table = theta.get("table")
        predicted += calls * (theta["gemm_flops"] * 2 * m * n * k + theta["gemm_a"] * m * k +
                              theta["gemm_b"] * k * n + theta["gemm_c"] * m * n +
                              theta["gemm_calls"] +
                              (theta["gemm_table"] * table.mean_seconds(m, n, k) if table else 0))
    return measured / predicted if predicted > 0 else 1.0


def kendall_tau(xs, ys):
    n, s = len(xs), 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = xs[i] - xs[j], ys[i] - ys[j]
            s += (a * b > 0) - (a * b < 0)
    return s / (n * (n - 1) / 2) if n > 1 else 1.0


def main():
    db = sqlite3.connect(sys.argv[1])
    replay = {}  # measured run -> its replay's steady step time (simulate --costs-from, no fit)
    for pred, config in db.execute("SELECT id, config FROM runs WHERE engine = 'sim' AND "
                                   "status = 'ok'"):
        c = json.loads(config)
        if c.get("costs_from") and not c.get("prediction", {}).get("fit"):
            replay[c["costs_from"]] = steady(db, pred)
    fits = {}
    for i, doc in db.execute("SELECT id, fit FROM fits"):
        doc = json.loads(doc)
        fits[i] = {p["name"]: p["value"] for p in doc["parameters"]}
        fits[i].setdefault("gemm_table", 0)
        timings = doc.get("gemm_table", {}).get("timings")
        fits[i]["table"] = Table(timings) if timings else None
    used = {json.loads(c)["prediction"]["fit"] for (c,) in db.execute(
        "SELECT config FROM runs WHERE engine = 'sim' AND json_extract(config, '$.prediction.fit') "
        "IS NOT NULL")}
    fitted_runs = {r for i, runs in db.execute("SELECT id, runs FROM fits") if i in used
                   for r in json.loads(runs)}
    def again(experiment, run):  # the same point's runs in the later rounds (NAME-again*)
        return [r for (r,) in db.execute(
            "SELECT r.id FROM runs r JOIN experiments e ON r.experiment_id = e.id WHERE e.name LIKE "
            "? AND r.engine = 'cpu' AND r.status = 'ok' AND r.point_key = (SELECT point_key FROM "
            "runs WHERE id = ?) ORDER BY r.id", (experiment + "-again%", run))]

    pairs = []
    for pred, config, experiment in db.execute(
            "SELECT r.id, r.config, e.name FROM runs r JOIN experiments e ON r.experiment_id = "
            "e.id WHERE r.engine = 'sim' AND r.status = 'ok' AND e.name IN "
            "('predict-unseen-schedules', 'predict-unseen-shapes', 'predict-unseen-gaps', "
            "'predict-unseen-ranking', 'predict-unseen-zb') ORDER BY r.id"):
        c = json.loads(config)
        if not c.get("prediction", {}).get("fit") or not c.get("costs_from"):
            continue
        measured = c["costs_from"]
        rounds = [measured] + again(experiment, measured)
        times = [steady(db, r) for r in rounds]
        seen = [r for r in rounds if r in fitted_runs]
        if seen:  # the fitted point (any of its rounds was fitted): seen, not unseen
            print(f"# seen (the fitted point, left out of everything below): {c['schedule']} "
                  f"m{c['m']}, fitted run {seen[0]}: measured {steady(db, seen[0]) * 1e3:.1f} ms "
                  f"(its rounds' median {statistics.median(times) * 1e3:.1f} ms, runs "
                  f"{', '.join(map(str, rounds))}), predicted {steady(db, pred) * 1e3:.1f} ms")
            continue
        rounds = times
        pairs.append({"experiment": experiment, "pred": pred, "meas": measured,
                      "schedule": c["schedule"], "model": c["model"].split("/")[-1][:-5],
                      "m": c["m"], "mbs": c["micro_batch_size"], "seq": c["seq_len"],
                      "measured": statistics.median(rounds), "first": rounds[0],
                      "rounds": rounds, "predicted": steady(db, pred),
                      "speed": machine_speed(db, measured, fits[c["prediction"]["fit"]])})
    errors = {}
    for p in pairs:
        p["error"] = (p["predicted"] - p["measured"]) / p["measured"]
        got, want = durations(db, p["pred"]), durations(db, p["meas"])
        for key, d in want.items():
            if key in got and d > 0:
                errors.setdefault(key[3], []).append(abs(got[key] - d) / d)
    with open(sys.argv[2], "w") as dat:
        dat.write("# experiment schedule model m mbs seq measured_ms predicted_ms error_pct\n")
        for p in pairs:
            dat.write(f"{p['experiment']} {p['schedule']} {p['model']} {p['m']} {p['mbs']} "
                      f"{p['seq']} {p['measured'] * 1e3:.3f} {p['predicted'] * 1e3:.3f} "
                      f"{100 * p['error']:+.2f}\n")
    print(f"# {'experiment':<25} {'schedule':<26} {'model':<13} {'m':>3} {'mbs':>3} {'seq':>4} "
          f"{'measured_ms':>12} {'predicted_ms':>12} {'error':>8}")
    for p in pairs:
        print(f"  {p['experiment']:<25} {p['schedule']:<26} {p['model']:<13} {p['m']:>3} "
              f"{p['mbs']:>3} {p['seq']:>4} {p['measured'] * 1e3:>12.1f} "
              f"{p['predicted'] * 1e3:>12.1f} {100 * p['error']:>+7.2f}%")
    for name, group in [("all", pairs)] + [(e, [p for p in pairs if p["experiment"] == e])
                                           for e in sorted({p["experiment"] for p in pairs})]:
        if not group:
            continue
        abs_errors = [abs(p["error"]) for p in group]
        worst = max(group, key=lambda p: abs(p["error"]))
        print(f"# {name}: {len(group)} predictions, step-time MAPE {100 * statistics.mean(abs_errors):.2f}%, "
              f"worst {100 * worst['error']:+.2f}% ({worst['schedule']} {worst['model']} m{worst['m']} "
              f"mbs{worst['mbs']} seq{worst['seq']}), mean signed "
              f"{100 * statistics.mean(p['error'] for p in group):+.2f}%")
        corrected = [abs(p["predicted"] * p["speed"] - p["measured"]) / p["measured"] for p in group]
        speeds = [p["speed"] for p in group]
        print(f"#   the machine's GEMM speed during these runs against the fitted run's (their own "
              f"kernel profiles): {min(speeds):.3f}-{max(speeds):.3f}x the fitted time; with each "
              f"prediction scaled by it (analysis only): MAPE {100 * statistics.mean(corrected):.2f}%, "
              f"worst {100 * max(corrected):.2f}%")
        replayed = [abs(replay[p["meas"]] - p["first"]) / p["first"] for p in group
                    if p["meas"] in replay]
        spread = [(max(p["rounds"]) - min(p["rounds"])) / p["measured"] for p in group
                  if len(p["rounds"]) > 1]
        single = [abs(r - p["predicted"]) / r for p in group for r in p["rounds"]]
        if spread:
            by_mean = [abs(p["predicted"] - statistics.mean(p["rounds"])) /
                       statistics.mean(p["rounds"]) for p in group]
            print(f"#   with the mean of the rounds as the measurement instead of their median: "
                  f"MAPE {100 * statistics.mean(by_mean):.2f}%, worst {100 * max(by_mean):.2f}%")
            print(f"#   the rounds of measurement ({len(group[0]['rounds'])} per point): the "
                  f"slowest against the fastest median {100 * statistics.median(spread):.2f}%, "
                  f"worst {100 * max(spread):.2f}% of the mean; against each round alone the "
                  f"predictions' MAPE {100 * statistics.mean(single):.2f}%, worst "
                  f"{100 * max(single):.2f}%")
        if replayed:
            print(f"#   the same runs replayed from their own costs (simulate --costs-from, the "
                  f"noise floor): MAPE {100 * statistics.mean(replayed):.2f}%, worst "
                  f"{100 * max(replayed):.2f}% ({len(replayed)} runs)")
    print("# per instruction kind, median |duration error| (steps >= 1): " + ", ".join(
        f"{k} {100 * statistics.median(v):.2f}% ({len(v)})" for k, v in sorted(errors.items())))
    groups = {}
    for p in pairs:
        groups.setdefault((p["model"], p["m"], p["mbs"], p["seq"]), []).append(p)
    agree = gapped = agree_gapped = 0
    taus = []
    for key, group in sorted(groups.items()):
        if len(group) < 2:
            continue
        by_measured = sorted(group, key=lambda p: p["measured"])
        by_predicted = min(group, key=lambda p: p["predicted"])
        same = by_predicted["schedule"] == by_measured[0]["schedule"]
        gap = (by_measured[1]["measured"] - by_measured[0]["measured"]) / by_measured[0]["measured"]
        tau = kendall_tau([p["measured"] for p in group], [p["predicted"] for p in group])
        taus.append(tau)
        agree += same
        if gap > 0.05:
            gapped += 1
            agree_gapped += same
        print(f"# group {key[0]} m{key[1]} mbs{key[2]} seq{key[3]}: {len(group)} schedules, "
              f"measured fastest {by_measured[0]['schedule']} (gap {100 * gap:.1f}%), predicted "
              f"fastest {by_predicted['schedule']}, Kendall tau {tau:+.2f}")
    pairs_gapped = pairs_right = 0
    for group in groups.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if abs(a["measured"] - b["measured"]) / min(a["measured"], b["measured"]) > 0.05:
                    pairs_gapped += 1
                    pairs_right += ((a["measured"] < b["measured"]) ==
                                    (a["predicted"] < b["predicted"]))
    if pairs_gapped:
        print(f"# pairs of schedules in a group whose measured step times differ by > 5%: the "
              f"predicted order right in {pairs_right} of {pairs_gapped}")
    if taus:
        print(f"# ranking: fastest schedule identified in {agree} of {len(taus)} groups; in "
              f"{agree_gapped} of {gapped} groups whose measured gap is > 5%; mean Kendall tau "
              f"{statistics.mean(taus):+.2f}")


if __name__ == "__main__":
    main()
