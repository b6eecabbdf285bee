#!/usr/bin/env python3
"""The straggler study's table (straggler.txt on stdout, straggler.dat for gnuplot) from the
points run.sh kept: per schedule and speed of rank 1, the measured step time (mean over steps >= 1,
as `pipette compare`), the simulator's prediction from the unslowed run's costs plus --rank-speed,
their relative error, and the slowdown of each over the schedule's unslowed step.
Usage: summarise.py OUT_DIR "SCHEDULES" "SPEEDS"."""
import json
import sys


def steady_mean(times):
    later = times[1:] if len(times) > 1 else times
    return sum(later) / len(later)


def load(out, key):
    with open(f"{out}/points/{key}.json") as f:
        return json.loads(f.read())


def main():
    out, schedules, speeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
    rows = []
    for schedule in schedules:
        base_measured = steady_mean(load(out, f"train-{schedule}-1")["step_time_s"])
        for speed in speeds:
            measured = steady_mean(load(out, f"train-{schedule}-{speed}")["step_time_s"])
            predicted = steady_mean(load(out, f"predict-{schedule}-{speed}")["step_time_s"])
            rows.append((schedule, float(speed), measured, predicted, base_measured))
    print("# straggler study: p = 2, gpt-w256, m = 8; rank 1 slowed to speed S (--rank-speed 1=S)")
    print("# measured: pipette train (mean step over steps >= 1); predicted: pipette simulate")
    print("# --costs-from <the unslowed run> --rank-speed 1=S --calibration latest")
    print(f"# {'schedule':<18} {'speed':>5} {'meas [ms]':>10} {'pred [ms]':>10} {'error':>7} "
          f"{'meas x':>7} {'pred x':>7}")
    errors = []
    with open(f"{out}/straggler.dat", "w") as dat:
        dat.write("# schedule speed measured_ms predicted_ms measured_slowdown predicted_slowdown\n")
        for schedule, speed, measured, predicted, base in rows:
            error = (predicted - measured) / measured
            errors.append(abs(error))
            print(f"  {schedule:<18} {speed:>5.2f} {measured * 1e3:>10.2f} {predicted * 1e3:>10.2f} "
                  f"{100 * error:>+6.1f}% {measured / base:>7.2f} {predicted / base:>7.2f}")
            dat.write(f"{schedule} {speed} {measured * 1e3:.4f} {predicted * 1e3:.4f} "
                      f"{measured / base:.4f} {predicted / base:.4f}\n")
    print(f"# step-time MAPE {100 * sum(errors) / len(errors):.2f}% "
          f"(worst {100 * max(errors):.1f}%) over {len(errors)} points")


main()
