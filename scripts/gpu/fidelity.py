#!/usr/bin/env python3
"""The fidelity check: does `pipette simulate --costs-from` predict a measured run?

For every schedule (default: every built-in one, `pipette schedule --list`): train with the given
engine recording into DB (`pipette train ... --format json`: the run id), predict that run
(`pipette simulate --costs-from RUN --format json`), and join the two instruction by instruction
(`pipette compare PRED RUN --format json`). The step time judged is the steady-state one
(docs/fidelity.md): the mean of the traced steps k >= 1 (all of them when only one ran), measured
(`measured_step_time_s` of the prediction, the run's `step_time_s`) against simulated
(`step_time_s` of the prediction). A schedule PASSes when |simulated - measured| / measured <= the
tolerance (default 3 %); the check passes when every schedule ran and passed. The --json summary
is rewritten after each schedule ("complete": false until the last), so a run cut short by a time
limit keeps the schedules it measured.

  fidelity.py --pipette build/pipette --db F.db --json fidelity.json [--engine cpu|cuda]
              [--launcher "mpirun -np 4 --oversubscribe"] [--virtual-ranks] [--schedules a,b]
              [-p 4] [-m 8] [--steps 6] [--model tiny] [--train-arg=--dtype=bf16 ...]
              [--simulate-arg=--cores=1 --simulate-arg=--alone-costs ...]

Virtual ranks share one GPU: scripts/gpu-run.sh predicts them with --cores=1 --alone-costs (each
compute costed alone, the ranks sharing one simulated core; docs/fidelity.md).

Exit status: 0 when every schedule passed, 1 when one failed or did not run, 2 for bad usage.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

TOLERANCE = 0.03


def steady_mean(times):
    """Mean of steps k >= 1 (step 0 is warm-up), or of all when only one step ran."""
    steady = list(times[1:]) if len(times) > 1 else list(times)
    return sum(steady) / len(steady) if steady else None


def evaluate_schedule(schedule, train, simulated, compared, tolerance=TOLERANCE):
    """One schedule's record from the three commands' JSON outputs (pure: unit-tested)."""
    measured = steady_mean(simulated.get("measured_step_time_s") or train.get("step_time_s", []))
    predicted = steady_mean(simulated.get("step_time_s", []))
    record = {"schedule": schedule, "run": train.get("run_id"), "prediction": simulated.get("run_id"),
              "measured_step_s": measured, "simulated_step_s": predicted}
    if not measured or predicted is None:
        record.update({"status": "error", "error": "no step times in the outputs"})
        return record
    error = (predicted - measured) / measured
    record.update({"error_rel": error, "status": "PASS" if abs(error) <= tolerance else "FAIL"})
    step = compared.get("step_time", {})
    record["compare_step_error_rel"] = step.get("error_rel")
    record["compare_measured_s"] = step.get("measured_s")
    record["compare_predicted_s"] = step.get("predicted_s")
    record["compare_pairs"] = compared.get("pairs")
    kinds = {}
    for kind, stats in sorted(compared.get("kinds", {}).items()):
        duration = stats.get("duration_abs_rel", {})
        kinds[kind] = {"count": stats.get("count"), "duration_abs_rel_median": duration.get("median"),
                       "duration_signed_median_rel": stats.get("duration_signed_median_rel")}
    record["kinds"] = kinds
    return record


def summarize(records, tolerance=TOLERANCE):
    """The check over every schedule: PASS when each ran and passed."""
    ok = bool(records) and all(r.get("status") == "PASS" for r in records)
    errors = [abs(r["error_rel"]) for r in records if r.get("error_rel") is not None]
    return {"tolerance": tolerance, "status": "PASS" if ok else "FAIL",
            "schedules": len(records), "passed": sum(r.get("status") == "PASS" for r in records),
            "worst_abs_error_rel": max(errors) if errors else None,
            "mape": sum(errors) / len(errors) if errors else None, "records": records}


def parse_schedule_list(text):
    """The names of `pipette schedule --list` (lines "  NAME  constraints  what")."""
    names = []
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.strip():
            names.append(line.split()[0])
    return names


def run_json(argv):
    """Runs argv; returns (parsed stdout JSON or None, a message for a failure)."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, "exit %d: %s" % (proc.returncode, " | ".join(tail))
    try:
        return json.loads(proc.stdout), ""
    except ValueError as e:
        return None, "not JSON (%s): %s" % (e, proc.stdout[:200])


def train_argv(args, schedule):
    argv = shlex.split(args.launcher) if args.launcher else []
    argv += [args.pipette, "train", "--engine", args.engine, "--model", args.model,
             "--schedule", schedule, "-p", str(args.p), "-m", str(args.m),
             "--steps", str(args.steps), "--trace-steps", str(args.steps), "--db", args.db,
             "--format", "json"]
    if args.virtual_ranks:
        argv.append("--virtual-ranks")
    return argv + list(args.train_arg or [])


def simulate_argv(args, run):
    """The prediction of run: `pipette simulate --costs-from RUN` with the --simulate-arg options
    (e.g. --cores=1 --alone-costs for virtual ranks sharing one GPU)."""
    return [args.pipette, "simulate", "--costs-from", str(run), "--db", args.db,
            "--format", "json"] + list(args.simulate_arg or [])


def check_schedule(args, schedule):
    train, why = run_json(train_argv(args, schedule))
    if train is None:
        return {"schedule": schedule, "status": "error", "error": "train: " + why}
    run = str(train.get("run_id"))
    simulated, why = run_json(simulate_argv(args, run))
    if simulated is None:
        return {"schedule": schedule, "run": train.get("run_id"), "status": "error",
                "error": "simulate: " + why}
    compared, why = run_json([args.pipette, "compare", str(simulated.get("run_id")), run,
                              "--db", args.db, "--format", "json"])
    record = evaluate_schedule(schedule, train, simulated, compared or {}, args.tolerance)
    if compared is None:
        record["compare_error"] = why
    return record


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipette", required=True, help="the pipette binary (with SimGrid)")
    parser.add_argument("--db", required=True)
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--engine", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--launcher", default="", help="prefix of train, e.g. mpirun -np 4")
    parser.add_argument("--virtual-ranks", action="store_true")
    parser.add_argument("--schedules", default="", help="comma-separated; default: all built-in")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("-p", type=int, default=4)
    parser.add_argument("-m", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--train-arg", action="append", help="extra train option (repeatable)")
    parser.add_argument("--simulate-arg", action="append",
                        help="extra simulate option (repeatable), e.g. --simulate-arg=--cores=1")
    args = parser.parse_args(argv)
    schedules = [s for s in args.schedules.split(",") if s]
    if not schedules:
        listing = subprocess.run([args.pipette, "schedule", "--list"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        schedules = parse_schedule_list(listing.stdout)

    def summary_of(records):
        summary = summarize(records, args.tolerance)
        summary.update({"engine": args.engine, "model": args.model, "p": args.p, "m": args.m,
                        "steps": args.steps, "virtual_ranks": args.virtual_ranks,
                        "simulate_args": list(args.simulate_arg or []),
                        "planned": len(schedules), "complete": len(records) == len(schedules)})
        if args.json:  # after every schedule, whole or not at all, so a run cut short keeps them
            with open(args.json + ".part", "w") as f:
                json.dump(summary, f, indent=2)
                f.write("\n")
            os.replace(args.json + ".part", args.json)
        return summary

    records = []
    for schedule in schedules:
        record = check_schedule(args, schedule)
        records.append(record)
        error = record.get("error_rel")
        print("%-28s %-6s %s" % (schedule, record["status"],
                                 "%+.2f%%" % (100 * error) if error is not None
                                 else record.get("error", "")), flush=True)
        summary = summary_of(records)
    if not schedules:
        summary = summary_of(records)
    print("fidelity: %s (%d of %d schedules within %.1f%%)" %
          (summary["status"], summary["passed"], summary["schedules"], 100 * args.tolerance))
    return 0 if summary["status"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
