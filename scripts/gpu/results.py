#!/usr/bin/env python3
"""The CUDA engine's results file: every target of issue 15, measured, PASS / FAIL / UNMEASURED.

Reads the archives scripts/gpu-run.sh leaves (gpu-run-first.tar.gz, gpu-run-second.tar.gz, one
per device call) or folders holding their files, merges them (each call's parts.tsv and env.json
are kept apart; every other file has one name per selection, and a later argument's copy wins),
and writes ONE markdown file and its JSON twin (FILE.json beside FILE.md). Each file is optional;
a missing or empty one makes its targets UNMEASURED, never guessed:
  parts.tsv, env.json        each call's parts (status, exit, seconds, budget, reason) and machine
  kernels.xml, engine.xml, gemm-tests.xml   the gpu-labelled tests (GoogleTest XML)
  sanitizer.tsv, sanitizer-{racecheck,memcheck}.{xml,log}   compute-sanitizer on kernel tests
  benchmark.json, benchmark-quick.json   cuda_engine_benchmark --json (stages: F, I, W, B, MFU,
                             (I+W)/B), the full run and --quick --no-bubbles
  gemm.json                  cuda_gemm_benchmark --json (one object per GEMM: engine_s, best_s,
                             convert_s)
  attention.json             scripts/gpu/attention_reference.py (cuDNN attention)
  fidelity.json              scripts/gpu/fidelity.py (measured step vs simulate --costs-from)
benchmark.json, benchmark-quick.json and gemm.json may list `errors` ({"part", "error"}: a part
of the benchmark that threw while the rest went on): the "Failed parts" section lists them and the
targets they touch say so.

  results.py ARCHIVE|DIR... [--out FILE] [--gpu NAME] [--driver V] [--cuda V] [--commit C]
             [--date D]

FILE defaults to backends/cuda/results/DATE-GPU.md in this repository (DATE and GPU from the
first call's env.json, e.g. 2026-11-28-h200.md; UNKNOWN-DATE, UNKNOWN-GPU without one, nogpu when
the machine had none). With a single folder and no --out, as before the archives: DIR/results.md
and DIR/results.json. --gpu and the others override what env.json says.

Targets (issue 15): each stage's F + I + W at >= 45 % MFU (model FLOPs as llm.c and Megatron-LM
count them; bf16 dense peak of the device), every GEMM within 10 % of cuBLASLt's best for its
shape (engine_s / best_s), the split backward (I + W) within 5 % of a fused B ("a few percent"),
the attention rate reported against cuDNN's (no threshold), the fidelity check (every schedule
within 3 %), the gpu tests passing. A stage the full benchmark did not measure is taken from the
quick one, and says so. Besides, the sanitizer: PASS when compute-sanitizer exited 0 and tests ran.
Exit status: 0 when the file was written (the file is the verdict), 2 for an argument that is
neither a readable archive nor a folder.
"""
import argparse
import json
import os
import re
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

MFU_TARGET = 0.45
GEMM_SLACK = 0.10
SPLIT_SLACK = 0.05
FIDELITY_TOLERANCE = 0.03
STAGES = ["gpt3-1.3b", "llama3.2-1b"]
SANITIZER_TOOLS = ["racecheck", "memcheck"]
ERROR_FILES = ["benchmark.json", "benchmark-quick.json", "gemm.json"]
ENV_KEYS = ("gpu", "driver", "cuda", "commit", "date")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class InputError(Exception):
    """An argument that is neither an archive nor a folder."""


def target(name, goal, status, measured="-", detail=""):
    return {"target": name, "goal": goal, "status": status, "measured": measured, "detail": detail}


def join_detail(*parts):
    return "; ".join(p for p in parts if p)


def load_json(path):
    """The file's JSON, or None when it is missing, empty or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_tsv(path):
    """The rows of a tab-separated file with a header line, as dicts; [] when it is missing."""
    try:
        with open(path) as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return []
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t") + [""] * len(header))) for line in lines[1:]]


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


# ---- the inputs: archives and folders, one per device call ---------------------------------------

def call_folder(root):
    """The folder holding a call's files: root, or the one folder it alone contains (an archive
    unpacks to gpu-run-<selection>/)."""
    while not os.path.exists(os.path.join(root, "parts.tsv")):
        entries = os.listdir(root)
        if len(entries) != 1 or not os.path.isdir(os.path.join(root, entries[0])):
            break
        root = os.path.join(root, entries[0])
    return root


def unpack(path, into):
    """Unpacks the archive at path into the folder into; raises InputError."""
    try:
        if not tarfile.is_tarfile(path):
            raise InputError("%s: not an archive of scripts/gpu-run.sh (.tar.gz) nor a folder"
                             % path)
        with tarfile.open(path) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into)
    except (OSError, tarfile.TarError) as e:
        raise InputError("%s: cannot read it (%s)" % (path, e))


def open_inputs(paths, scratch):
    """The call folders of the arguments, in order (archives unpacked under scratch)."""
    folders = []
    for i, path in enumerate(paths):
        if os.path.isdir(path):
            folders.append(call_folder(path))
        elif os.path.isfile(path):
            into = os.path.join(scratch, "%d" % i)
            os.makedirs(into)
            unpack(path, into)
            folders.append(call_folder(into))
        else:
            raise InputError("%s: no such archive or folder" % path)
    return folders


def read_call(folder):
    """One call: its env.json, its parts.tsv rows, and which selection it was."""
    env = load_json(os.path.join(folder, "env.json"))
    env = env if isinstance(env, dict) else None
    name = os.path.basename(os.path.normpath(folder))
    selection = (env or {}).get("selection") or (name[len("gpu-run-"):]
                                                 if name.startswith("gpu-run-") else name)
    return {"folder": folder, "selection": selection, "env": env,
            "parts": read_tsv(os.path.join(folder, "parts.tsv"))}


def latest(folders, name):
    """The path of name in the last folder that has it (else in the first: a missing file)."""
    for folder in reversed(folders):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return os.path.join(folders[0], name)


def merged_env(calls, overrides):
    """gpu, driver, cuda, commit, date: the override, else the calls' values (all distinct ones
    when calls differ; the date is the first call's). A key no call recorded is None."""
    env = {}
    for key in ENV_KEYS:
        values = []
        for call in calls:
            value = (call["env"] or {}).get(key)
            if value is not None and value not in values:
                values.append(value)
        if overrides.get(key):
            env[key] = overrides[key]
        elif not values:
            env[key] = None
        elif key == "date":
            env[key] = values[0]
        else:
            env[key] = " / ".join(v or "none" for v in values)
    return env


def part_rows(calls):
    """{part: its row from the last call that has it}."""
    rows = {}
    for call in calls:
        for row in call["parts"]:
            rows[row.get("part")] = row
    return rows


def part_note(parts, *names):
    """Why a part gave nothing, e.g. "part engine: timeout, killed after 220 s", or ""."""
    for name in names:
        row = parts.get(name)
        if row and row.get("status") != "ok":
            return "part %s: %s%s" % (name, row.get("status"),
                                      ", " + row["reason"] if row.get("reason") else "")
    return ""


# ---- the targets -----------------------------------------------------------------------------

def test_target(name, path, part=None):
    """The gpu tests of one binary; part is its parts.tsv row, when there is one."""
    counts = gtest_counts(path)
    goal = "all pass on the GPU"
    status = (part or {}).get("status")
    why = part_note({part.get("part"): part}, part.get("part")) if part else ""
    if counts is None or counts[0] == 0:
        if status == "failed":  # ended without its results: a crash is a failure
            return target(name, goal, "FAIL", "exit %s, no test results" % part.get("exit"), why)
        return target(name, goal, "UNMEASURED", detail=join_detail("no test results", why))
    tests, failed, skipped = counts
    measured = "%d tests, %d failed, %d skipped" % counts
    if failed:
        return target(name, goal, "FAIL", measured)
    if status == "failed":
        return target(name, goal, "FAIL", measured, "exit %s after its tests" % part.get("exit"))
    if skipped == tests:
        return target(name, goal, "UNMEASURED", measured, "every test skipped (no device)")
    return target(name, goal, "PASS", measured)


def find_stage(bench, preset):
    for stage in (bench or {}).get("stages", []) or []:
        if stage.get("preset") == preset or stage.get("stage") == preset:
            return stage
    return None


def benchmark_errors(errors, preset):
    """What the benchmarks recorded as failed for a stage: the errors whose part names it (e.g.
    "stage gpt3-1.3b"), as one line."""
    named = [e for e in errors if e["file"] != "gemm.json" and preset in e["part"].lower()]
    return "; ".join("%s failed (%s): %s" % (e["part"], e["file"], e["error"]) for e in named)


def mfu_target(stage, preset, source="", errors=""):
    name = "%s stage F+I+W MFU" % preset
    goal = ">= %.0f%% of dense bf16 peak" % (100 * MFU_TARGET)
    if stage is None:
        return target(name, goal, "UNMEASURED", detail=join_detail("no benchmark result", errors))
    rate = "%.1f TFLOP/s, F+I+W %.3f ms" % (stage.get("tflops") or 0, stage.get("fiw_ms") or 0)
    if stage.get("mfu") is None:
        return target(name, goal, "UNMEASURED", rate,
                      join_detail("peak unknown for this device", source, errors))
    mfu = stage["mfu"]
    return target(name, goal, "PASS" if mfu >= MFU_TARGET else "FAIL",
                  "%.1f%% (%s)" % (100 * mfu, rate), join_detail(source, errors))


def split_target(stage, preset, source="", errors=""):
    name = "%s split backward (I+W)/B" % preset
    goal = "<= %.2f" % (1 + SPLIT_SLACK)
    if stage is None or not stage.get("b_ms"):
        return target(name, goal, "UNMEASURED", detail=join_detail("no benchmark result", errors))
    ratio = (stage["i_ms"] + stage["w_ms"]) / stage["b_ms"]
    return target(name, goal, "PASS" if ratio <= 1 + SPLIT_SLACK else "FAIL",
                  "%.3f (I %.3f + W %.3f ms, B %.3f ms)" %
                  (ratio, stage["i_ms"], stage["w_ms"], stage["b_ms"]), join_detail(source, errors))


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


def gemm_target(gemm, errors=(), why=""):
    """Every GEMM within the slack of cuBLASLt's best; a GEMM the benchmark could not time (an
    entry of gemm.json's errors) fails it once others were measured."""
    name = "every GEMM vs cuBLASLt's best"
    goal = "engine time <= %.2f x best" % (1 + GEMM_SLACK)
    failed = [e for e in errors if e["file"] == "gemm.json"]
    failed_text = "; ".join("%s failed: %s" % (e["part"], e["error"]) for e in failed)
    rows = [r for r in gemm_rows(gemm) if gemm_ratio(r) is not None]
    if not rows:
        return target(name, goal, "UNMEASURED",
                      detail=join_detail("no cuda_gemm_benchmark result", failed_text, why))
    worst = max(rows, key=gemm_ratio)
    slow = [r for r in rows if gemm_ratio(r) > 1 + GEMM_SLACK]
    measured = "worst %.3f (%s), %d of %d over" % (gemm_ratio(worst), worst.get("name", "?"),
                                                   len(slow), len(rows))
    return target(name, goal, "FAIL" if slow or failed else "PASS", measured,
                  join_detail("%d GEMMs not measured" % len(failed) if failed else "", failed_text))


def attention_target(stage, attention, preset, why=""):
    name = "%s attention vs cuDNN" % preset
    goal = "reported (no threshold)"
    if not attention or not attention.get("available"):
        reason = (attention or {}).get("reason", "no attention_reference result")
        return target(name, goal, "UNMEASURED", detail=join_detail(reason, why))
    ref = next((s for s in attention.get("shapes", []) if s.get("name") == preset), None)
    if ref is None:
        return target(name, goal, "UNMEASURED", detail="cuDNN did not time this shape")
    measured = "cuDNN fwd+bwd %.3f ms (%.1f TFLOP/s)" % (ref["fwd_bwd_ms"], ref["fwd_bwd_tflops"])
    module = (stage or {}).get("attention_module")
    if module and module.get("fiw_ms"):
        measured += "; engine attention module F+I+W %.3f ms = %.2f x cuDNN's core" % (
            module["fiw_ms"], module["fiw_ms"] / ref["fwd_bwd_ms"])
    return target(name, goal, "REPORTED", measured,
                  "the engine's module also holds the norm, QKV and output GEMMs and residual")


def fidelity_target(fidelity, why=""):
    name = "fidelity: step time vs simulate --costs-from"
    goal = "every schedule within %.0f%%" % (100 * FIDELITY_TOLERANCE)
    if not fidelity or not fidelity.get("records"):
        return target(name, goal, "UNMEASURED", detail=join_detail("no fidelity result", why))
    worst = fidelity.get("worst_abs_error_rel")
    measured = "%d of %d schedules pass; worst %s, MAPE %s" % (
        fidelity.get("passed", 0), fidelity.get("schedules", 0),
        "-" if worst is None else "%.2f%%" % (100 * worst),
        "-" if fidelity.get("mape") is None else "%.2f%%" % (100 * fidelity["mape"]))
    status = fidelity.get("status", "FAIL")
    if fidelity.get("complete") is False:  # cut short: a pass so far is no verdict
        measured += " (%d of %s schedules ran)" % (fidelity.get("schedules", 0),
                                                   fidelity.get("planned", "?"))
        if fidelity.get("passed", 0) == fidelity.get("schedules", 0):
            return target(name, goal, "UNMEASURED", measured, join_detail("incomplete", why))
    return target(name, goal, status, measured, why)


def sanitizer_results(files, parts):
    """One row per compute-sanitizer tool: PASS when it exited 0 and tests ran, UNMEASURED when
    the part was skipped or never ran, FAIL otherwise."""
    runs = {r.get("tool"): r for r in read_tsv(files("sanitizer.tsv"))}
    goal = "exit 0, no errors reported"
    rows = []
    for tool in SANITIZER_TOOLS:
        name = "compute-sanitizer --tool %s" % tool
        run = runs.get(tool)
        if run is None or run.get("exit") in ("", "-", None):
            why = ("no time left in the part" if run else
                   part_note(parts, "sanitizer") or "not run")
            rows.append(target(name, goal, "UNMEASURED", detail=why))
            continue
        counts = gtest_counts(files("sanitizer-%s.xml" % tool))
        try:
            with open(files("sanitizer-%s.log" % tool), errors="replace") as f:
                # memcheck: "ERROR SUMMARY: 0 errors"; racecheck: "RACECHECK SUMMARY: 0 hazards
                # displayed (0 errors, 0 warnings)".
                summary = re.findall(r"(?:ERROR SUMMARY: |RACECHECK SUMMARY: \d+ hazards? "
                                     r"displayed \()(\d+) error", f.read())
        except OSError:
            summary = []
        errors = int(summary[-1]) if summary else None
        code = run["exit"]
        measured = "%s errors reported; %s; exit %s after %s s" % (
            "?" if errors is None else errors,
            "%d tests, %d failed, %d skipped" % counts if counts else "no test results",
            code, run.get("seconds", "?"))
        if code in ("124", "137"):
            rows.append(target(name, goal, "FAIL", measured,
                               "timed out after %s s" % run.get("budget", "?")))
        elif code != "0" or errors or counts is None or counts[0] == 0 or counts[1]:
            rows.append(target(name, goal, "FAIL", measured))
        elif counts[2] == counts[0]:
            rows.append(target(name, goal, "UNMEASURED", measured, "every test skipped"))
        else:
            rows.append(target(name, goal, "PASS", measured))
    return rows


def errors_of(doc, file):
    """The `errors` a benchmark recorded ({"part", "error"}), each with its file."""
    errors = (doc or {}).get("errors") if isinstance(doc, dict) else None
    return [{"file": file, "part": str(e.get("part", "?")), "error": str(e.get("error", "?"))}
            for e in errors or [] if isinstance(e, dict)]


def collect(folders):
    """Every target from the files in one folder or a list of call folders (later ones win)."""
    folders = [folders] if isinstance(folders, str) else list(folders)
    calls = [read_call(f) for f in folders]
    files = lambda name: latest(folders, name)  # noqa: E731
    bench = load_json(files("benchmark.json"))
    quick = load_json(files("benchmark-quick.json"))
    gemm = load_json(files("gemm.json"))
    attention = load_json(files("attention.json"))
    fidelity = load_json(files("fidelity.json"))
    errors = (errors_of(bench, "benchmark.json") + errors_of(quick, "benchmark-quick.json") +
              errors_of(gemm, "gemm.json"))
    parts = part_rows(calls)

    def stage_of(preset):
        """(stage, note): the full benchmark's, else the quick one's."""
        if find_stage(bench, preset):
            return find_stage(bench, preset), ""
        if find_stage(quick, preset):
            return find_stage(quick, preset), "from the quick benchmark (--quick)"
        return None, part_note(parts, "benchmark", "bench-quick")

    targets = [test_target("gpu tests: kernels", files("kernels.xml"), parts.get("kernels")),
               test_target("gpu tests: engine", files("engine.xml"), parts.get("engine")),
               test_target("gpu tests: GEMM path", files("gemm-tests.xml"),
                           parts.get("gemm-tests"))]
    for preset in STAGES:
        stage, note = stage_of(preset)
        targets.append(mfu_target(stage, preset, note,
                                  benchmark_errors(errors, preset)))
    targets.append(gemm_target(gemm, errors, part_note(parts, "gemm")))
    for preset in STAGES:
        stage, note = stage_of(preset)
        targets.append(split_target(stage, preset, note,
                                    benchmark_errors(errors, preset)))
    for preset in STAGES:
        targets.append(attention_target(stage_of(preset)[0], attention, preset,
                                        part_note(parts, "attention")))
    targets.append(fidelity_target(fidelity, part_note(parts, "fidelity")))
    return {"targets": targets, "sanitizer": sanitizer_results(files, parts), "errors": errors,
            "calls": calls, "benchmark": bench, "benchmark_quick": quick, "gemm": gemm,
            "fidelity": fidelity}


# ---- the file --------------------------------------------------------------------------------

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


def memory_table(bench):
    """Each stage's measured memory (the rank's meter around one microbatch) next to the model
    layer's amounts for the same layers; empty when the benchmark recorded none."""
    mib = lambda v: "-" if v is None else "%.0f" % (v / 1048576.0)  # noqa: E731
    lines = ["| stage | held MiB | after F MiB | model activations MiB (bf16 / fp32) | "
             "after I MiB | model W inputs MiB (bf16 / fp32) | peak MiB | pool high-water MiB | "
             "model weights+grads+Adam MiB (bf16) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = 0
    for s in (bench or {}).get("stages", []) or []:
        mem = s.get("memory")
        if not isinstance(mem, dict):
            continue
        got, model = mem.get("measured") or {}, mem.get("model") or {}
        bf16, fp32 = model.get("bf16") or {}, model.get("fp32") or {}
        lines.append("| %s | %s | %s | %s / %s | %s | %s / %s | %s | %s | %s |" % (
            s.get("stage"), mib(got.get("held_bytes")), mib(got.get("after_f_bytes")),
            mib(bf16.get("activation_bytes")), mib(fp32.get("activation_bytes")),
            mib(got.get("after_i_bytes")), mib(bf16.get("wgrad_input_bytes")),
            mib(fp32.get("wgrad_input_bytes")), mib(got.get("peak_bytes")),
            mib(got.get("pool_used_high_bytes")),
            mib(bf16.get("weights_gradients_optimizer_bytes"))))
        rows += 1
    return lines if rows else []


def gemm_table(gemm):
    """Every GEMM: the engine's call, cuBLASLt's best, and the fp32 -> bf16 conversion of its
    activation operands timed apart (convert_s; "-" when the record has none)."""
    micro = lambda v: "-" if v is None else "%.1f" % (1e6 * v)  # noqa: E731
    lines = ["| gemm | m | n | k | op | engine us | best us | engine / best | convert us | "
             "engine TFLOP/s |", "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in gemm_rows(gemm):
        ratio = gemm_ratio(r)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("name", "?"), r.get("m", "-"), r.get("n", "-"), r.get("k", "-"),
            r.get("trans", "-"), micro(r.get("engine_s")), micro(r.get("best_s")),
            "-" if ratio is None else "%.3f" % ratio, micro(r.get("convert_s")),
            "-" if r.get("tflops") is None else "%.1f" % r["tflops"]))
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


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def calls_section(calls):
    lines = ["## Calls (scripts/gpu-run.sh)", ""]
    for call in calls:
        env = call["env"] or {}
        lines += ["### %s" % call["selection"], "",
                  "GPU %s, driver %s, CUDA %s, commit %s, %s." % tuple(
                      "none" if env.get(k) == "" else env.get(k) or "unknown"
                      for k in ENV_KEYS), ""]
        if not call["parts"]:
            lines += ["No parts.tsv: this call's parts are unknown.", ""]
            continue
        lines += ["| part | status | exit | seconds | budget | reason |",
                  "|---|---|---:|---:|---:|---|"]
        for row in call["parts"]:
            lines.append("| %s |" % " | ".join(cell(row.get(k, "")) for k in (
                "part", "status", "exit", "seconds", "budget", "reason")))
        lines.append("")
    return lines


def target_rows(rows):
    lines = ["| target | goal | measured | status |", "|---|---|---|---|"]
    for t in rows:
        measured = t["measured"] + (" (%s)" % t["detail"] if t["detail"] else "")
        lines.append("| %s | %s | %s | **%s** |" % (t["target"], t["goal"], cell(measured),
                                                    t["status"]))
    return lines


def render(results, env):
    """The results file's text."""
    lines = ["# The CUDA engine on a GPU: tests, speed, memory and simulator fidelity "
             "(scripts/gpu-run.sh, scripts/gpu/results.py)", ""]
    for key in ENV_KEYS:
        lines.append("- %s: %s" % (key, env.get(key) or "unknown"))
    lines.append("")
    if any(call["parts"] or call["env"] for call in results.get("calls", [])):
        lines += calls_section(results["calls"])
    lines += ["## Targets", ""] + target_rows(results["targets"])
    counts = {}
    for t in results["targets"]:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    lines += ["", "Summary: " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())), ""]
    lines += ["## Sanitizer (compute-sanitizer on kernels_gpu_test: attention, norms, "
              "cross-entropy)", ""] + target_rows(results.get("sanitizer", [])) + [""]
    lines += ["## Failed parts (errors the benchmarks recorded and went on)", ""]
    if results.get("errors"):
        lines += ["| file | part | error |", "|---|---|---|"]
        lines += ["| %s | %s | %s |" % (e["file"], cell(e["part"]), cell(e["error"]))
                  for e in results["errors"]]
    else:
        lines.append("None recorded.")
    lines.append("")
    for key, title in (("benchmark", "Stages (cuda_engine_benchmark)"),
                       ("benchmark_quick", "Stages, quick (cuda_engine_benchmark --quick "
                                           "--no-bubbles)")):
        bench = results.get(key)
        if not isinstance(bench, dict) or not bench.get("stages"):
            continue
        peak = bench.get("peak") or {}
        lines += ["## " + title, "",
                  "Device %s; peak %s." % (bench.get("device"),
                                           "%s TFLOP/s dense bf16 (%s)" %
                                           (peak["bf16_tflops"], peak.get("source"))
                                           if peak else "unknown"), ""]
        lines += stage_table(bench) + [""]
        memory = memory_table(bench)
        if memory:
            lines += ["Memory per stage, one microbatch (the rank's meter: every device tensor; "
                      "after F, after I and peak less what was held before F):", ""]
            lines += memory + [""]
    if gemm_rows(results.get("gemm")):
        lines += ["## GEMMs (cuda_gemm_benchmark)", ""] + gemm_table(results["gemm"]) + [""]
    if results.get("fidelity"):
        lines += ["## Fidelity (scripts/gpu/fidelity.py)", ""] + fidelity_table(results["fidelity"])
        lines.append("")
    return "\n".join(lines)


def gpu_slug(gpu):
    """The GPU's part of the file name: "NVIDIA H200" -> "h200"; None -> UNKNOWN-GPU."""
    if gpu is None:
        return "UNKNOWN-GPU"
    name = re.sub(r"^nvidia\s+", "", gpu.strip().lower())
    if name in ("", "none", "-"):
        return "nogpu"
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "nogpu"


def default_path(env):
    match = re.match(r"\d{4}-\d{2}-\d{2}", env.get("date") or "")
    name = "%s-%s.md" % (match.group(0) if match else "UNKNOWN-DATE", gpu_slug(env.get("gpu")))
    return os.path.join(ROOT, "backends", "cuda", "results", name)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", metavar="ARCHIVE|DIR")
    parser.add_argument("--out", help="the markdown file (its JSON twin goes beside it)")
    for key in ENV_KEYS:
        parser.add_argument("--" + key, default="")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpu-results.") as scratch:
        try:
            folders = open_inputs(args.inputs, scratch)
        except InputError as e:
            print("results.py: %s" % e, file=sys.stderr)
            return 2
        results = collect(folders)
        env = merged_env(results["calls"], {k: getattr(args, k) for k in ENV_KEYS})
        if args.out:
            out = args.out
        elif len(args.inputs) == 1 and os.path.isdir(args.inputs[0]):
            out = os.path.join(args.inputs[0], "results.md")
        else:
            out = default_path(env)
        twin = (out[:-3] if out.endswith(".md") else out) + ".json"
        text = render(results, env)
        if os.path.dirname(out):
            os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        with open(twin, "w") as f:
            json.dump({"env": env,
                       "calls": [{k: c[k] for k in ("selection", "env", "parts")}
                                 for c in results["calls"]],
                       "targets": results["targets"], "sanitizer": results["sanitizer"],
                       "errors": results["errors"]}, f, indent=2)
            f.write("\n")
    print(text)
    print("results.py: wrote %s and %s" % (out, twin), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
