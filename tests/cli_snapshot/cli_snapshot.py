#!/usr/bin/env python3
"""A snapshot of what the pipette CLI does, to prove a refactoring changed nothing.

Runs a fixed list of commands (every subcommand; text and JSON; bad input; the database a run
writes) with one pipette build in a scratch folder, and writes for each command its exit status,
standard output, standard error and any file it wrote, plus a dump of every row of every
database table, into OUT. Two snapshots of two builds (before and after a change) are compared
with --diff: the command exits 1 and prints the first differing lines of each file that differs.

  cli_snapshot.py --pipette build/pipette --out /tmp/before
  cli_snapshot.py --pipette build/pipette --out /tmp/after
  cli_snapshot.py --diff /tmp/before /tmp/after

What changes from run to run is normalised in the snapshot, not hidden in the comparison: the
scratch folder's path (<DIR>), timestamps (<TIME>), the git revision and process ids in the
version and in the runs table, and the measured times of real (cpu) training runs, whose losses
are kept. Everything else, the simulator's times included, must match to the byte. Commands run
in order and share one database (d.db): later ones read what earlier ones recorded.
"""
import argparse
import difflib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, arguments, files the command writes that the snapshot keeps). Paths are relative to the
# scratch folder; {root} is the repository (models, experiments, paper data).
COMMANDS = [
    ("version", ["--version"], []),
    ("help", ["--help"], []),
    ("schedule-list", ["schedule", "--list"], []),
    ("schedule-1f1b", ["schedule", "1f1b", "-p", "4", "-m", "8"], []),
    ("schedule-zbh1-json", ["schedule", "zb-h1", "-p", "4", "-m", "8", "--format", "json"], []),
    ("schedule-interleaved", ["schedule", "interleaved-1f1b", "-p", "4", "-m", "8", "-v", "2",
                              "--times", "F=1,I=1.5,W=0.5"], []),
    ("schedule-dualpipev", ["schedule", "dualpipe-v", "-p", "4", "-m", "8"], []),
    ("schedule-unknown", ["schedule", "bogus", "-p", "4", "-m", "8"], []),
    ("schedule-bad-m", ["schedule", "zb-h1", "-p", "4", "-m", "2"], []),
    ("schedule-search", ["schedule", "search", "-p", "2", "-m", "4"], []),
    ("partition", ["partition", "--model", "gpt2-124m", "--pp", "4"], []),
    ("partition-json", ["partition", "--model", "llama2-7b", "--pp", "8", "--format", "json"], []),
    ("partition-bad", ["partition", "--model", "gpt2-124m", "--pp", "0"], []),
    ("models", ["models"], []),
    ("clusters", ["clusters"], []),
    ("simulate-default", ["simulate", "--db", "d.db"], []),
    ("simulate-json", ["simulate", "--model", "llama2-7b", "--pp", "4", "--dp", "2", "-m", "8",
                       "--format", "json", "--db", "d.db"], []),
    ("simulate-times", ["simulate", "--times", "F=1,I=1,W=1", "--ideal-network", "--schedule",
                        "zb-h1", "-p", "4", "-m", "8", "--db", "d.db"], []),
    ("simulate-uneven", ["simulate", "--times", "F=1,I=1,W=1", "--ideal-network", "--schedule",
                         "1f1b", "-p", "4", "-m", "8", "--rank-speed", "2=0.5", "--db", "d.db"],
     []),
    ("simulate-grad", ["simulate", "--model", "gpt2-124m", "--pp", "2", "--dp", "4", "-m", "4",
                       "--grad-reduce", "ring", "--db", "d.db", "--format", "json"], []),
    ("simulate-bad-key", ["simulate", "--pp", "0", "--db", "d.db"], []),
    ("simulate-bad-model", ["simulate", "--model", "nope", "--db", "d.db"], []),
    ("simulate-costs-from-sim", ["simulate", "--costs-from", "1", "--db", "d.db"], []),
    ("train-bad", ["train", "--steps", "0", "--no-db"], []),
    ("train-cpu", ["train", "--model", "tiny", "-m", "2", "--steps", "2", "--db", "d.db"], []),
    # Measured runs whose times are known (the snapshot's own SQL copies a simulation as a cpu
    # run, COPIES below): run 3 (simulate --times) predicted, then that prediction, which has
    # every row a real engine records, predicted and compared with its own prediction.
    ("costs-from", ["simulate", "--costs-from", "{measured}", "--db", "d.db", "--format", "json"],
     []),
    ("costs-from-alone", ["simulate", "--costs-from", "{measured}", "--cores", "1",
                          "--alone-costs", "--db", "d.db"], []),
    ("costs-from-again", ["simulate", "--costs-from", "{measured2}", "--db", "d.db", "--format",
                          "json"], []),
    ("compare", ["compare", "{prediction2}", "{measured2}", "--db", "d.db"], []),
    ("compare-json", ["compare", "{prediction2}", "{measured2}", "--db", "d.db", "--format",
                      "json"], []),
    ("compare-mismatch", ["compare", "{prediction}", "{measured}", "--db", "d.db"], []),
    ("runs", ["runs", "--db", "d.db"], []),
    ("runs-json", ["runs", "--db", "d.db", "--format", "json"], []),
    ("runs-missing-db", ["runs", "--db", "missing.db"], []),
    ("export-chrome", ["export", "--db", "d.db", "--run", "3", "--out", "trace.json"],
     ["trace.json"]),
    ("export-csv", ["export", "--db", "d.db", "--run", "3", "--format", "csv"], []),
    ("export-no-run", ["export", "--db", "d.db", "--run", "99"], []),
    ("plot-timeline", ["plot", "timeline", "--db", "d.db", "--run", "3", "--out", "t.svg"],
     ["t.svg"]),
    ("plot-bubble", ["plot", "bubble", "--db", "d.db", "--run", "1,2", "--out", "b.svg"],
     ["b.svg"]),
    ("plot-bad-kind", ["plot", "nope", "--db", "d.db"], []),
    ("calibrations", ["calibrations", "--db", "d.db"], []),
    ("calibrate-bad", ["calibrate", "--cores", "0", "--db", "d.db"], []),
    ("papers-zero-bubble", ["papers", "zero-bubble", "--data", "{root}/experiments/papers"], []),
    ("papers-megatron", ["papers", "megatron", "--data", "{root}/experiments/papers", "--check"],
     []),
    ("papers-dualpipe-csv", ["papers", "dualpipe", "--data", "{root}/experiments/papers",
                             "--format", "csv"], []),
    ("sweep", ["sweep", "study.toml", "--db", "d.db"], []),
    ("sweep-bad", ["sweep", "missing.toml", "--db", "d.db"], []),
    ("db-merge", ["db", "merge", "merged.db", "d.db"], []),
    ("runs-merged", ["runs", "--db", "merged.db"], []),
]

# Before the named command: ids[key] = a copy, as a measured cpu run, of the run ids[source] (or
# run `source` when it is a number), so the commands can name it.
COPIES = {"costs-from": ("measured", "3"), "costs-from-again": ("measured2", "prediction")}
# After the named command (JSON output): ids[key] = its run_id.
PREDICTIONS = {"costs-from": "prediction", "costs-from-again": "prediction2"}

STUDY = """name = "snapshot"
description = "two schedules, two microbatch counts"
command = "simulate"

[fixed]
times = "F=1,I=1,W=1"
ideal-network = true
p = 4

[axes]
schedule = ["1f1b", "zb-h1"]
m = [4, 8]
"""


def copy_as_measured(db_path, run_id):
    """Copies run `run_id` (a simulation) as a finished cpu run; returns its id."""
    db = sqlite3.connect(db_path)
    with db:
        row = db.execute("SELECT config, version, git_rev, libraries, host, started_at, "
                         "ended_at FROM runs WHERE id = ?", (run_id,)).fetchone()
        config = json.loads(row[0])
        config["engine"] = "cpu"
        if "pp" in config:
            config["p"] = config.pop("pp")  # as pipette train records it
        for key in ("costs_from", "prediction", "simulated_steps"):  # a prediction's own keys
            config.pop(key, None)
        cur = db.execute("INSERT INTO runs(engine, config, version, git_rev, libraries, host, "
                         "started_at, ended_at, status) VALUES ('cpu', ?, ?, ?, ?, ?, ?, ?, 'ok')",
                         (json.dumps(config),) + tuple(row[1:]))
        new = cur.lastrowid
        for table in ("events", "memory", "metrics"):
            cols = [c[1] for c in db.execute("PRAGMA table_info(%s)" % table)
                    if c[1] != "run_id"]
            db.execute("INSERT INTO %s(run_id, %s) SELECT ?, %s FROM %s WHERE run_id = ?" % (
                table, ", ".join(cols), ", ".join(cols), table), (new, run_id))
    db.close()
    return new


def normalise(text, scratch):
    text = text.replace(scratch, "<DIR>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<TIME>", text)
    text = re.sub(r'"pid":\s*\d+', '"pid":<pid>', text)
    text = re.sub(r'"git_rev":\s*"[^"]*"', '"git_rev":<git_rev>', text)
    # A sweep's wall-clock seconds, per point and in all.
    text = re.sub(r"(\] \w+\s+run \d+\s+)\d+\.\d+ s", r"\1<seconds> s", text)
    text = re.sub(r"(wall_time\s+)\d+(\.\d+)? s", r"\1<seconds> s", text)
    return text


def real_run_ids(db):
    return {r[0] for r in db.execute("SELECT id FROM runs WHERE engine != 'sim'")}


def dump_db(path, measured, scratch):
    """Every row of every table, in a stable order, with what varies from run to run replaced: a
    run's clock, host, pid and revision; a real training run's (not the copied one's) times."""
    if not os.path.exists(path):
        return "(no database)\n"
    db = sqlite3.connect(path)
    volatile = real_run_ids(db) - set(measured)
    out = []
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    for table in tables:
        cols = [c[1] for c in db.execute("PRAGMA table_info(%s)" % table)]
        out.append("## %s (%s)" % (table, ", ".join(cols)))
        for row in db.execute("SELECT * FROM %s ORDER BY %s" % (table, ", ".join(cols))):
            rec = dict(zip(cols, row))
            for key in ("started_at", "ended_at", "created_at", "merged_at", "host", "pid",
                        "git_rev", "owner_start", "libraries"):
                if key in rec:
                    rec[key] = "<%s>" % key
            run = rec.get("run_id", rec.get("id") if table == "runs" else None)
            if run in volatile and table in ("events", "memory"):
                for key in ("start_s", "end_s", "t_s", "bytes"):
                    if key in rec:
                        rec[key] = "<measured>"
            if run in volatile and table == "metrics" and not rec["name"].startswith(
                    ("loss", "final_loss", "params")):
                rec["value"] = "<measured>"
            out.append(json.dumps(rec, sort_keys=True))
    db.close()
    return normalise("\n".join(out) + "\n", scratch)


def take(pipette, out):
    scratch = tempfile.mkdtemp(prefix="pipette-snapshot-")
    try:
        with open(os.path.join(scratch, "study.toml"), "w") as f:
            f.write(STUDY)
        os.makedirs(out, exist_ok=True)
        ids = {"root": ROOT, "measured": "", "prediction": "", "measured2": "", "prediction2": ""}
        env = dict(os.environ, LC_ALL="C", OMPI_MCA_plm_rsh_agent="false")
        for name, args, files in COMMANDS:
            if name in COPIES:
                key, source = COPIES[name]
                source = source if source.isdigit() else ids[source]
                ids[key] = str(copy_as_measured(os.path.join(scratch, "d.db"), int(source)))
            argv = [pipette] + [a.format(**ids) for a in args]
            proc = subprocess.run(argv, cwd=scratch, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=600)
            stdout = proc.stdout
            if name in PREDICTIONS and proc.returncode == 0:
                ids[PREDICTIONS[name]] = str(json.loads(stdout)["run_id"])
            if name == "train-cpu":  # measured times vary: the losses and the shape stay
                stdout = re.sub(r"^(\s+\d+\s+\S+)\s+.*$", r"\1 <times>", stdout, flags=re.M)
                stdout = re.sub(r"(mean step|peak)[^\n]*", r"\1 <measured>", stdout)
            text = "exit %d\n--- stdout\n%s--- stderr\n%s" % (
                proc.returncode, normalise(stdout, scratch), normalise(proc.stderr, scratch))
            for f in files:
                path = os.path.join(scratch, f)
                text += "--- file %s\n" % f
                text += normalise(open(path).read(), scratch) if os.path.exists(path) else "(none)\n"
            with open(os.path.join(out, name + ".txt"), "w") as f:
                f.write(text)
        # The copies' times are the simulator's: exact, like every simulation's.
        measured = [int(ids[k]) for k in ("measured", "measured2") if ids[k]]
        for db in ("d.db", "merged.db"):
            with open(os.path.join(out, db + ".rows"), "w") as f:
                f.write(dump_db(os.path.join(scratch, db), measured, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return len(COMMANDS)


def diff(before, after):
    names = sorted(set(os.listdir(before)) | set(os.listdir(after)))
    differ = 0
    for name in names:
        a, b = os.path.join(before, name), os.path.join(after, name)
        if not os.path.exists(a) or not os.path.exists(b):
            print("%s: only in %s" % (name, before if os.path.exists(a) else after))
            differ += 1
            continue
        la, lb = open(a).read().splitlines(), open(b).read().splitlines()
        if la != lb:
            differ += 1
            print("%s differs:" % name)
            for line in list(difflib.unified_diff(la, lb, before, after, lineterm=""))[:20]:
                print("  " + line)
    print("%d of %d files differ" % (differ, len(names)))
    return 1 if differ else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipette", help="the pipette binary to snapshot")
    parser.add_argument("--out", help="the snapshot's folder")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if not args.pipette or not args.out:
        parser.error("--pipette and --out, or --diff BEFORE AFTER")
    n = take(os.path.abspath(args.pipette), args.out)
    print("cli_snapshot: %d commands into %s" % (n, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
