#!/usr/bin/env python3
"""Summarises benchmarks/compare.sh's runs: per benchmark, OLD and NEW side by side.

Usage: compare_report.py RESULTS_DIR PROGRAM...
RESULTS_DIR holds PROGRAM.{old,new}.ROUND.json (Google Benchmark's JSON output). Prints, per
benchmark, each side's median real time per iteration over the rounds, the speed-up (OLD's median
over NEW's) and the min-max of the per-round speed-ups; then each rate counter (a counter whose
name ends in "/s") as medians and their ratio NEW / OLD. Google Benchmark computes those rates per
CPU second unless a benchmark uses real time, so on a loaded machine they can differ from the
speed-up, which is from real time.
"""
import glob
import json
import os
import statistics
import sys


def load(results, program, side):
    """Returns {round: {benchmark name: entry}} for one side."""
    rounds = {}
    for path in glob.glob(os.path.join(results, f"{program}.{side}.*.json")):
        round_number = int(path.rsplit(".", 2)[-2])
        with open(path) as f:
            data = json.load(f)
        rounds[round_number] = {
            b["name"]: b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"
        }
    return rounds


def seconds(entry):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return entry["real_time"] * scale


def report(results, program):
    old, new = load(results, program, "old"), load(results, program, "new")
    common_rounds = sorted(set(old) & set(new))
    if not common_rounds:
        print(f"{program}: no results")
        return
    names = [n for n in old[common_rounds[0]] if n in new[common_rounds[0]]]
    print(f"\n## {program}")
    print(f"{'benchmark':<58} {'OLD':>10} {'NEW':>10} {'speed-up':>9} {'spread':>13}")
    for name in names:
        rounds = [r for r in common_rounds if name in old[r] and name in new[r]]
        olds = [seconds(old[r][name]) for r in rounds]
        news = [seconds(new[r][name]) for r in rounds]
        ratios = [o / n for o, n in zip(olds, news) if n > 0]
        o, n = statistics.median(olds), statistics.median(news)
        if not ratios or n <= 0:
            print(f"{name:<58} {fmt_time(o):>10} {fmt_time(n):>10}         -")
            continue
        print(f"{name:<58} {fmt_time(o):>10} {fmt_time(n):>10} {o / n:>8.2f}x "
              f"{min(ratios):>5.2f}-{max(ratios):.2f}x")
    print(f"\n{'rate counter (median)':<58} {'OLD':>10} {'NEW':>10} {'NEW/OLD':>9}")
    for name in names:
        entry = old[common_rounds[0]][name]
        for counter in sorted(k for k in entry if k.endswith("/s")):
            rounds = [r for r in common_rounds if name in old[r] and name in new[r]]
            olds = [old[r][name].get(counter, 0.0) for r in rounds]
            news = [new[r][name].get(counter, 0.0) for r in rounds]
            o, n = statistics.median(olds), statistics.median(news)
            label = f"{name} {counter}"
            ratio = f"{n / o:8.2f}x" if o > 0 else "       -"
            print(f"{label:<58} {fmt_rate(o):>10} {fmt_rate(n):>10} {ratio:>9}")


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_rate(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g}"


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for program in sys.argv[2:]:
        report(sys.argv[1], program)


if __name__ == "__main__":
    main()
