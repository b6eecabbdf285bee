#!/usr/bin/env python3
"""The variable-length study's helpers (run.sh).
  summarise.py share OUT KEY128 KEY256  the attention share A at 256 tokens from two 1F1B runs
                                        of the same steps and m: r = the ranks' compute CPU time
                                        (work_s, the engine's own accounting, which a loaded
                                        machine does not inflate) at 128 over the same at 256, and
                                        (1 - A)/2 + A/4 = r, so A = 2 - 4r
  summarise.py table OUT "SCHEDULES" "CASES"
                                        varlen.txt on stdout and varlen.dat for gnuplot: per
                                        schedule and length list, measured and predicted step time
                                        (mean over steps >= 1, as pipette compare)."""
import json
import sys


def share(out, key128, key256):
    r = sum(load(out, key128)["work_s"]) / sum(load(out, key256)["work_s"])
    print(f"{min(1.0, max(0.0, 2 - 4 * r)):.3f}")


def steady_mean(times):
    later = times[1:] if len(times) > 1 else times
    return sum(later) / len(later)


def load(out, key):
    with open(f"{out}/points/{key}.json") as f:
        return json.loads(f.read())


def work_factor(lengths, share, reference=256):
    """The model's compute of a list over the uniform one's: mean of (1-A) s/s0 + A (s/s0)^2."""
    return sum((1 - share) * s / reference + share * (s / reference) ** 2
               for s in lengths) / len(lengths)


def table(out, schedules, cases):
    with open(f"{out}/share.txt") as f:
        share_line = f.read().strip()
    share = float(share_line.split()[-1])
    lists = {"uniform256": [256] * 8}
    with open(f"{out}/lists.txt") as f:
        for line in f:
            case, text = line.split()
            lists[case] = [int(s) for s in text.split(",")]
    print("# variable-length study: p = 2, gpt-long (width 64, 512 positions), m = 8 microbatches of")
    print("# two sequences, 4096 tokens per step, 20 steps; measured: pipette train --microbatch-seqlens;")
    print("# predicted: pipette simulate --costs-from <the uniform run> --microbatch-seqlens")
    print(f"# --attention-share A ({share_line})")
    print("# meas x, pred x: step time over the uniform run's; work x: the ranks' compute CPU time")
    print("# (work_s) over the uniform run's; model x: the s^2 model's (1-A) s/256 + A (s/256)^2")
    print(f"# {'schedule':<18} {'lengths':<12} {'meas [ms]':>10} {'pred [ms]':>10} {'error':>7} "
          f"{'meas x':>7} {'pred x':>7} {'work x':>7} {'model x':>7}")
    errors = []
    with open(f"{out}/varlen.dat", "w") as dat:
        dat.write("# schedule case measured_ms predicted_ms (x uniform: measured predicted)\n")
        for schedule in schedules:
            base_meas = steady_mean(load(out, f"train-{schedule}-uniform256")["step_time_s"])
            base_pred = steady_mean(load(out, f"predict-{schedule}-uniform256")["step_time_s"])
            base_work = sum(load(out, f"train-{schedule}-uniform256")["work_s"])
            for case in cases:
                run = load(out, f"train-{schedule}-{case}")
                meas = steady_mean(run["step_time_s"])
                work = sum(run["work_s"]) / base_work
                model = work_factor(lists[case], share)
                pred = steady_mean(load(out, f"predict-{schedule}-{case}")["step_time_s"])
                error = (pred - meas) / meas
                errors.append(abs(error))
                print(f"  {schedule:<18} {case:<12} {meas * 1e3:>10.2f} {pred * 1e3:>10.2f} "
                      f"{100 * error:>+6.1f}% {meas / base_meas:>7.2f} {pred / base_pred:>7.2f} "
                      f"{work:>7.2f} {model:>7.2f}")
                dat.write(f"{schedule} {case} {meas * 1e3:.4f} {pred * 1e3:.4f} "
                          f"{meas / base_meas:.4f} {pred / base_pred:.4f}\n")
    print(f"# step-time MAPE {100 * sum(errors) / len(errors):.2f}% "
          f"(worst {100 * max(errors):.1f}%) over {len(errors)} points")


if sys.argv[1] == "share":
    share(*sys.argv[2:5])
else:
    table(sys.argv[2], sys.argv[3].split(), sys.argv[4].split())
