#!/usr/bin/env python3
"""The bad-input matrix: every option of every pipette subcommand, given values no command should
take silently, checked for the one rule of docs/reliability.md.

Options are read from each subcommand's --help (CLI11 prints the type: INT, UINT, FLOAT, TEXT; a
flag has none), so a new option joins the matrix by itself. Each option is given each value class
on top of a base command line that is valid and fast on its own (a tiny database made first).

What must hold, for every case:
  - no hang (each run has a time limit) and no crash (the exit code is 0, 1 or 2);
  - a value that is never a number (empty, hexadecimal, octal-looking, nan, inf, beyond 64 bits,
    control bytes) is refused by every numeric option: exit 2, never 0;
  - an empty value is refused by every option that takes one: never exit 0;
  - every exit 2 quotes the text given (control bytes as \\xHH), or names the combination that
    excludes it;
  - no raw control byte reaches standard output or error.

Usage: bad_input_matrix.py PIPETTE [--jobs N] [--only SUBCOMMAND]. Prints the counts; exit 1 with
every failing case listed.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Subcommand: the base arguments (valid and fast on their own). {db}: a database of one run.
BASES = {
    "schedule": ["schedule", "1f1b", "-p", "2", "-m", "2"],
    "partition": ["partition", "--model", "gpt2-124m", "--pp", "2"],
    "models": ["models"],
    "clusters": ["clusters"],
    "simulate": ["simulate", "-p", "2", "-m", "2", "--no-db"],
    "runs": ["runs", "--db", "{db}"],
    "export": ["export", "--db", "{db}", "--format", "csv"],
    "plot": ["plot", "timeline", "--db", "{db}", "--out", "{dir}/plot.svg"],
    "compare": ["compare", "1", "1", "--db", "{db}"],
    "sweep": ["sweep", "{dir}/spec.toml", "--dry-run", "--db", "{db}"],
    "db merge": ["db", "merge", "{dir}/merged.db", "{db}"],
    "papers": ["papers", "megatron"],
    "calibrations": ["calibrations", "--db", "{db}"],
    "train": ["train", "--steps", "1", "--no-db"],
}
# Options left out, and why: they change what the base command is (help), or run for minutes by
# design on a good value (the matrix gives only bad ones, but a value class such as 0 can be good).
SKIPPED = {"--help", "-h", "--version"}

CONTROL = "a\x1b[2J\x07b"
NUMERIC_BAD = ["", "0x10", "nan", "inf", "-inf", "1e400", "99999999999999999999999999", "1.5.2",
               CONTROL]
INTEGER_BAD = ["010"]  # CLI11 alone reads it as octal 8
TEXT_BAD = ["", CONTROL]
EDGE = ["0", "-1", "1e-320", "18446744073709551616"]  # may be valid: no crash, no hang, quoting

# Combinations where an option has no effect, and files of the wrong kind: each must be exit 2 (a
# FIFO that nobody writes must not block a reader). {fifo}: a FIFO nobody opens.
REFUSED = [
    ["simulate", "--times", "F=1", "--ideal-network", "--model", "gpt2-124m", "--no-db"],
    ["simulate", "--times", "F=1", "--ideal-network", "--efficiency", "0.5", "--no-db"],
    ["simulate", "--cost-statistic", "mean", "--no-db"],
    ["simulate", "--db", "{dir}/x.db", "--no-db"],
    ["export", "--db", "{db}", "--step", "1"],
    ["plot", "timeline", "--db", "{db}", "--x", "m", "--out", "{dir}/t.svg"],
    ["runs", "--db", "{db}", "--all-hosts"],
    ["train", "--tolerance", "0.1", "--no-db"],
    ["train", "--trace-steps", "1", "--trace", "none", "--no-db"],
    ["calibrate", "--list", "--repeats", "3", "--db", "{db}"],
    ["simulate", "--db", "/dev/null"],
    ["simulate", "--db", "{dir}"],
    ["simulate", "--db", "{fifo}"],
    ["simulate", "--db", "{db}-wal"],
    ["simulate", "--model", "{dir}", "--no-db"],
    ["simulate", "--model", "{fifo}", "--no-db"],
    ["simulate", "--cluster", "{fifo}", "--no-db"],
    ["simulate", "--schedule", "csv:{fifo}", "--no-db"],
    ["sweep", "{fifo}", "--dry-run", "--db", "{db}"],
    ["db", "merge", "{dir}/m2.db", "{fifo}"],
    ["export", "--db", "{db}", "--out", "{fifo}"],
    ["export", "--db", "{db}", "--out", ""],
]

HELP_LINE = re.compile(r"^\s+(?:(-\w),)?(--[\w-]+)(?: (INT|UINT|FLOAT|TEXT)\b)?")


def printable(text):
    return "".join(c if 0x20 <= ord(c) < 0x7f or ord(c) > 0x7f else "\\x%02x" % ord(c)
                   for c in text)


def options_of(pipette, subcommand):
    out = subprocess.run([pipette] + subcommand.split() + ["--help"], capture_output=True,
                         text=True, timeout=30).stdout
    found = []
    for line in out.splitlines():
        m = HELP_LINE.match(line)
        if m and m.group(2) not in SKIPPED:
            found.append(((m.group(1), m.group(2)), m.group(3)))  # type None: a flag
    return found


def run_case(pipette, args, timeout, cwd):
    try:
        r = subprocess.run([pipette] + args, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=cwd)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, "", ""


def quotes(err, value):
    shown = printable(value)
    if value == "":
        return "''" in err
    if shown in err or value in err:
        return True
    # A number a command read and then checked may be shown as it read it (1e+26 for
    # 99999999999999999999999999): the same value, never another one.
    try:
        number = float(value)
    except ValueError:
        return False
    for token in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", err):
        if float(token) == number:
            return True
    return False


COMBINATION_WORDS = ("excludes", "requires", "applies only", "needs", "only with", "not with")


def check(case, code, out, err):
    subcommand, option, kind, value = case
    if subcommand == "refused":
        if code is None:
            return ["%s: hangs" % option]
        return [] if code == 2 else ["%s: exit %d, not 2\n%s" % (option, code, err[-300:])]
    problems = []
    label = "%s %s %r" % (subcommand, option, value)
    if code is None:
        return ["%s: hangs (no exit within the limit)" % label]
    if code not in (0, 1, 2):
        problems.append("%s: exit %d (a crash?)\n%s" % (label, code, err[-500:]))
    if "\x1b" in out or "\x1b" in err or "\x07" in err:
        problems.append("%s: a raw control byte reached the terminal" % label)
    always_bad = ((kind in ("INT", "UINT", "FLOAT") and value in NUMERIC_BAD) or value == "" or
                  (kind in ("INT", "UINT") and value in INTEGER_BAD))
    if always_bad and code == 0:
        problems.append("%s: exit 0 (taken silently)" % label)
    if always_bad and kind in ("INT", "UINT", "FLOAT") and code == 1:
        problems.append("%s: exit 1 for bad input (must be 2)\n%s" % (label, err[-300:]))
    if code == 2 and not quotes(err, value) and not any(w in err for w in COMBINATION_WORDS):
        problems.append("%s: exit 2 without quoting the text given\n%s" % (label, err[-300:]))
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipette")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=60)
    a = parser.parse_args()
    pipette = os.path.abspath(a.pipette)
    work = tempfile.mkdtemp(prefix="pipette_matrix_")
    try:
        db = os.path.join(work, "m.db")
        subprocess.run([pipette, "simulate", "--times", "F=1", "--ideal-network", "-p", "2", "-m",
                        "2", "--db", db], check=True, capture_output=True)
        with open(os.path.join(work, "spec.toml"), "w") as f:
            f.write('[fixed]\ntimes = "F=1"\nideal-network = true\n')
        cases = []
        for subcommand, base in BASES.items():
            if a.only and subcommand != a.only:
                continue
            base = [b.format(db=db, dir=work) for b in base]
            for (short, option), kind in options_of(pipette, subcommand):
                if kind is None:
                    continue  # flags take no value; their combinations have their own tests
                values = (NUMERIC_BAD if kind in ("INT", "UINT", "FLOAT") else TEXT_BAD) + (
                    EDGE if kind in ("INT", "UINT", "FLOAT") else []) + (
                    INTEGER_BAD if kind in ("INT", "UINT") else [])
                # The option given once: the base's own value for it is taken out.
                own = base
                for name in (short, option):
                    if name and name in own:
                        at = own.index(name)
                        own = own[:at] + own[at + 2:]
                for value in values:
                    cases.append(((subcommand, option, kind, value), own + [option, value]))
        fifo = os.path.join(work, "nobody.fifo")
        os.mkfifo(fifo)
        for args in REFUSED:
            cases.append((("refused", " ".join(args), None, None),
                          [x.format(db=db, dir=work, fifo=fifo) for x in args]))
        failures = []
        counts = {}
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            results = pool.map(lambda c: (c[0], run_case(pipette, c[1], a.timeout, work)), cases)
            for case, (code, out, err) in results:
                key = "hang" if code is None else "exit %d" % code
                counts[key] = counts.get(key, 0) + 1
                failures += check(case, code, out, err)
        print("bad-input matrix: %d cases over %d subcommands: %s" % (
            len(cases), len({c[0][0] for c in cases}),
            ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items()))))
        if failures:
            print("%d failures:" % len(failures))
            for f in failures:
                print("  " + printable(f).replace("\\x0a", "\n    "))
            return 1
        print("no case taken silently, no hang, no crash; every exit 2 quotes the text given")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
