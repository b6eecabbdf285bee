#!/usr/bin/env python3
"""Issue 15's results file: every target, its measured value and PASS / FAIL / UNMEASURED.

Reads what scripts/gpu-bench.sh leaves in one folder (each file optional; a missing or empty one
makes its targets UNMEASURED, never guessed):
  kernels.xml, engine.xml, gemm-tests.xml   the gpu-labelled tests (GoogleTest XML)
  benchmark.json            cuda_engine_benchmark --json (stages: F, I, W, B, MFU, (I+W)/B)
  gemm.json                 cuda_gemm_benchmark --json (one object per GEMM: engine_s, best_s)
  attention.json            scripts/gpu/attention_reference.py (cuDNN attention)
  fidelity.json             scripts/gpu/fidelity.py (measured step vs simulate --costs-from)
and writes results.md (the table, then the details) and results.json (the same targets).

  results.py DIR [--gpu NAME] [--driver V] [--cuda V] [--commit C] [--date D]

Targets (issue 15): each stage's F + I + W at >= 45 % MFU (model FLOPs as llm.c and Megatron-LM
count them; bf16 dense peak of the device), every GEMM within 10 % of cuBLASLt's best for its
shape, the split backward (I + W) within 5 % of a fused B ("a few percent"), the attention rate
reported against cuDNN's (no threshold), the fidelity check (every schedule within 3 %), the gpu
tests passing. Exit status 0 (the results file is the verdict).
"""
import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET

MFU_TARGET = 0.45
GEMM_SLACK = 0.10
SPLIT_SLACK = 0.05
FIDELITY_TOLERANCE = 0.03
STAGES = ["gpt3-1.3b", "llama3.2-1b"]


def target(name, goal, status, measured="-", detail=""):
    return {"target": name, "goal": goal, "status": status, "measured": measured, "detail": detail}


def load_json(path):
    """The file's JSON, or None when it is missing, empty or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def gtest_counts(path):
    """(tests, failed, skipped) of a GoogleTest XML file, or None."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    tests = failed = skipped = 0
    for case in root.iter("testcase"):
        tests += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
    return tests, failed, skipped


def test_target(name, path):
    counts = gtest_counts(path)
    goal = "all pass on the GPU"
    if counts is None or counts[0] == 0:
        return target(name, goal, "UNMEASURED", detail="no test results")
    tests, failed, skipped = counts
    measured = "%d tests, %d failed, %d skipped" % counts
    if failed:
        return target(name, goal, "FAIL", measured)
    if skipped == tests:
        return target(name, goal, "UNMEASURED", measured, "every test skipped (no device)")
    return target(name, goal, "PASS", measured)


def find_stage(bench, preset):
    for stage in (bench or {}).get("stages", []) or []:
        if stage.get("preset") == preset or stage.get("stage") == preset:
            return stage
    return None


def mfu_target(bench, preset):
    name = "%s stage F+I+W MFU" % preset
    goal = ">= %.0f%% of dense bf16 peak" % (100 * MFU_TARGET)
    stage = find_stage(bench, preset)
    if stage is None:
        return target(name, goal, "UNMEASURED", detail="no benchmark result")
    rate = "%.1f TFLOP/s, F+I+W %.3f ms" % (stage.get("tflops") or 0, stage.get("fiw_ms") or 0)
    if stage.get("mfu") is None:
        return target(name, goal, "UNMEASURED", rate, "peak unknown for this device")
    mfu = stage["mfu"]
    return target(name, goal, "PASS" if mfu >= MFU_TARGET else "FAIL",
                  "%.1f%% (%s)" % (100 * mfu, rate))


def split_target(bench, preset):
    name = "%s split backward (I+W)/B" % preset
    goal = "<= %.2f" % (1 + SPLIT_SLACK)
    stage = find_stage(bench, preset)
    if stage is None or not stage.get("b_ms"):
        return target(name, goal, "UNMEASURED", detail="no benchmark result")
    ratio = (stage["i_ms"] + stage["w_ms"]) / stage["b_ms"]
    return target(name, goal, "PASS" if ratio <= 1 + SPLIT_SLACK else "FAIL",
                  "%.3f (I %.3f + W %.3f ms, B %.3f ms)" %
                  (ratio, stage["i_ms"], stage["w_ms"], stage["b_ms"]))


def gemm_rows(gemm):
    """The GEMM records of cuda_gemm_benchmark's JSON: a list, or the first list of them inside."""
    if isinstance(gemm, list):
        return [g for g in gemm if isinstance(g, dict)]
    if isinstance(gemm, dict):
        for value in gemm.values():
            rows = gemm_rows(value) if isinstance(value, list) else []
            if rows and any("engine_s" in r for r in rows):
                return rows
    return []


def gemm_ratio(row):
    if row.get("engine_s") and row.get("best_s"):
        return row["engine_s"] / row["best_s"]
    return row.get("ratio")


def gemm_target(gemm):
    name = "every GEMM vs cuBLASLt's best"
    goal = "engine time <= %.2f x best" % (1 + GEMM_SLACK)
    rows = [r for r in gemm_rows(gemm) if gemm_ratio(r) is not None]
    if not rows:
        return target(name, goal, "UNMEASURED", detail="no cuda_gemm_benchmark result")
    worst = max(rows, key=gemm_ratio)
    slow = [r for r in rows if gemm_ratio(r) > 1 + GEMM_SLACK]
    measured = "worst %.3f (%s), %d of %d over" % (gemm_ratio(worst), worst.get("name", "?"),
                                                   len(slow), len(rows))
    return target(name, goal, "FAIL" if slow else "PASS", measured)


def attention_target(bench, attention, preset):
    name = "%s attention vs cuDNN" % preset
    goal = "reported (no threshold)"
    if not attention or not attention.get("available"):
        why = (attention or {}).get("reason", "no attention_reference result")
        return target(name, goal, "UNMEASURED", detail=why)
    ref = next((s for s in attention.get("shapes", []) if s.get("name") == preset), None)
    if ref is None:
        return target(name, goal, "UNMEASURED", detail="cuDNN did not time this shape")
    measured = "cuDNN fwd+bwd %.3f ms (%.1f TFLOP/s)" % (ref["fwd_bwd_ms"], ref["fwd_bwd_tflops"])
    stage = find_stage(bench, preset)
    module = (stage or {}).get("attention_module")
    if module and module.get("fiw_ms"):
        measured += "; engine attention module F+I+W %.3f ms = %.2f x cuDNN's core" % (
            module["fiw_ms"], module["fiw_ms"] / ref["fwd_bwd_ms"])
    return target(name, goal, "REPORTED", measured,
                  "the engine's module also holds the norm, QKV and output GEMMs and residual")


def fidelity_target(fidelity):
    name = "fidelity: step time vs simulate --costs-from"
    goal = "every schedule within %.0f%%" % (100 * FIDELITY_TOLERANCE)
    if not fidelity or not fidelity.get("records"):
        return target(name, goal, "UNMEASURED", detail="no fidelity result")
    worst = fidelity.get("worst_abs_error_rel")
    measured = "%d of %d schedules pass; worst %s, MAPE %s" % (
        fidelity.get("passed", 0), fidelity.get("schedules", 0),
        "-" if worst is None else "%.2f%%" % (100 * worst),
        "-" if fidelity.get("mape") is None else "%.2f%%" % (100 * fidelity["mape"]))
    return target(name, goal, fidelity.get("status", "FAIL"), measured)


def collect(folder):
    """Every target from the files in `folder`."""
    path = lambda f: os.path.join(folder, f)  # noqa: E731
    bench = load_json(path("benchmark.json"))
    gemm = load_json(path("gemm.json"))
    attention = load_json(path("attention.json"))
    fidelity = load_json(path("fidelity.json"))
    targets = [test_target("gpu tests: kernels", path("kernels.xml")),
               test_target("gpu tests: engine", path("engine.xml")),
               test_target("gpu tests: GEMM path", path("gemm-tests.xml"))]
    for preset in STAGES:
        targets.append(mfu_target(bench, preset))
    targets.append(gemm_target(gemm))
    for preset in STAGES:
        targets.append(split_target(bench, preset))
    for preset in STAGES:
        targets.append(attention_target(bench, attention, preset))
    targets.append(fidelity_target(fidelity))
    return {"targets": targets, "benchmark": bench, "fidelity": fidelity}


def stage_table(bench):
    lines = ["| stage | blocks | F ms | I ms | W ms | B ms | F+I+W ms | TFLOP/s | MFU | (I+W)/B |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in (bench or {}).get("stages", []) or []:
        mfu = "unknown" if s.get("mfu") is None else "%.1f%%" % (100 * s["mfu"])
        num = lambda key: s.get(key) or 0  # noqa: E731 (a null, e.g. an infinite rate, reads 0)
        lines.append("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f | %s | %.3f |" % (
            s.get("stage"), num("blocks"), num("f_ms"), num("i_ms"), num("w_ms"), num("b_ms"),
            num("fiw_ms"), num("tflops"), mfu, num("iw_over_b")))
    return lines


def fidelity_table(fidelity):
    lines = ["| schedule | measured ms | simulated ms | error | status |", "|---|---:|---:|---:|---|"]
    for r in (fidelity or {}).get("records", []):
        if r.get("error_rel") is None:
            lines.append("| %s | - | - | - | %s: %s |" % (r["schedule"], r["status"], r.get("error")))
            continue
        lines.append("| %s | %.3f | %.3f | %+.2f%% | %s |" % (
            r["schedule"], 1e3 * r["measured_step_s"], 1e3 * r["simulated_step_s"],
            100 * r["error_rel"], r["status"]))
    return lines


def render(results, env):
    """results.md's text."""
    lines = ["# Issue 15 results: CUDA engine speed and simulator fidelity", ""]
    for key in ("gpu", "driver", "cuda", "commit", "date"):
        lines.append("- %s: %s" % (key, env.get(key) or "unknown"))
    lines += ["", "| target | goal | measured | status |", "|---|---|---|---|"]
    for t in results["targets"]:
        measured = t["measured"] + (" (%s)" % t["detail"] if t["detail"] else "")
        lines.append("| %s | %s | %s | **%s** |" % (t["target"], t["goal"], measured, t["status"]))
    counts = {}
    for t in results["targets"]:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    lines += ["", "Summary: " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())), ""]
    if results.get("benchmark"):
        peak = results["benchmark"].get("peak") or {}
        lines += ["## Stages (cuda_engine_benchmark)", "",
                  "Device %s; peak %s." % (results["benchmark"].get("device"),
                                           "%s TFLOP/s dense bf16 (%s)" %
                                           (peak["bf16_tflops"], peak.get("source"))
                                           if peak else "unknown"), ""]
        lines += stage_table(results["benchmark"]) + [""]
    if results.get("fidelity"):
        lines += ["## Fidelity (scripts/gpu/fidelity.py)", ""] + fidelity_table(results["fidelity"])
        lines.append("")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    for key in ("gpu", "driver", "cuda", "commit", "date"):
        parser.add_argument("--" + key, default="")
    args = parser.parse_args(argv)
    env = {k: getattr(args, k) for k in ("gpu", "driver", "cuda", "commit", "date")}
    results = collect(args.folder)
    text = render(results, env)
    with open(os.path.join(args.folder, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.folder, "results.json"), "w") as f:
        json.dump({"env": env, "targets": results["targets"]}, f, indent=2)
        f.write("\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
