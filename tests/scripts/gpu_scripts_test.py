#!/usr/bin/env python3
"""Unit tests of scripts/gpu/ (label unit): the results writer fed with sample outputs (one folder,
and archives of several scripts/gpu-run.sh calls merged), the fidelity check's arithmetic on
sample command outputs, the attention reference's FLOPs and its graceful answer without torch.
Run: python3 tests/scripts/gpu_scripts_test.py"""
import contextlib
import io
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))

import attention_reference  # noqa: E402
import fidelity  # noqa: E402
import results  # noqa: E402

# The shape of `pipette train/simulate/compare --format json` (fields as the binaries write them).
TRAIN = {"run_id": 1, "step_time_s": [0.20, 0.10, 0.12, 0.11]}
SIMULATED = {"run_id": 2, "costs_from": 1, "step_time_s": [0.2, 0.1122, 0.1122, 0.1122],
             "measured_step_time_s": [0.20, 0.10, 0.12, 0.11]}
COMPARED = {"pairs": 784, "step_time": {"predicted_s": 0.1122, "measured_s": 0.11, "error_rel": 0.02},
            "kinds": {"F": {"count": 128, "duration_abs_rel": {"median": 0.01},
                            "duration_signed_median_rel": -0.005}}}


def stage(preset, f, i, w, b, mfu, tflops=400.0):
    return {"stage": preset, "preset": preset, "blocks": 1, "f_ms": f, "i_ms": i, "w_ms": w,
            "b_ms": b, "fiw_ms": f + i + w, "tflops": tflops, "mfu": mfu,
            "iw_over_b": (i + w) / b, "attention_module": {"fiw_ms": 3.0}}


MIB = 1048576
MEMORY = {"measured": {"held_bytes": 576 * MIB, "after_f_bytes": 1377 * MIB,
                       "after_i_bytes": 1920 * MIB, "peak_bytes": 2049 * MIB,
                       "pool_used_high_bytes": 2753 * MIB},
          "model": {"params": 50331648,
                    "bf16": {"activation_bytes": 1824 * MIB, "wgrad_input_bytes": 224 * MIB,
                             "weights_gradients_optimizer_bytes": 768 * MIB},
                    "fp32": {"activation_bytes": 3360 * MIB, "wgrad_input_bytes": 448 * MIB,
                             "weights_gradients_optimizer_bytes": 640 * MIB}}}


GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="{failures}" name="AllTests">
  <testsuite name="S" tests="3">
    <testcase name="a" status="run" result="completed">{body}</testcase>
    <testcase name="b" status="run" result="{result}">{skip}</testcase>
    <testcase name="c" status="run" result="{result}">{skip}</testcase>
  </testsuite>
</testsuites>"""


def write(folder, name, text):
    with open(os.path.join(folder, name), "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(text))


def read(path):
    with open(path) as f:
        return f.read()


def run_results(argv):
    """results.main without its printout and messages."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return results.main(argv)


def by_target(collected):
    return {t["target"]: t for t in collected["targets"]}


class FidelityTest(unittest.TestCase):
    def test_steady_mean_leaves_out_step_zero(self):
        self.assertAlmostEqual(fidelity.steady_mean([0.2, 0.1, 0.12, 0.11]), 0.11)
        self.assertAlmostEqual(fidelity.steady_mean([0.3]), 0.3)
        self.assertIsNone(fidelity.steady_mean([]))

    def test_error_is_simulated_over_measured_steady_step(self):
        r = fidelity.evaluate_schedule("zb-h1", TRAIN, SIMULATED, COMPARED)
        self.assertAlmostEqual(r["measured_step_s"], 0.11)
        self.assertAlmostEqual(r["simulated_step_s"], 0.1122)
        self.assertAlmostEqual(r["error_rel"], 0.02)  # +2 %: within 3 %
        self.assertEqual(r["status"], "PASS")
        self.assertEqual((r["run"], r["prediction"], r["compare_pairs"]), (1, 2, 784))
        self.assertAlmostEqual(r["kinds"]["F"]["duration_abs_rel_median"], 0.01)
        self.assertEqual(fidelity.evaluate_schedule("zb-h1", TRAIN, SIMULATED, COMPARED,
                                                    tolerance=0.019)["status"], "FAIL")

    def test_too_slow_and_too_fast_both_fail(self):
        fast = dict(SIMULATED, step_time_s=[0.2, 0.1056, 0.1056])  # -4 %
        r = fidelity.evaluate_schedule("1f1b", TRAIN, fast, {})
        self.assertAlmostEqual(r["error_rel"], -0.04)
        self.assertEqual(r["status"], "FAIL")
        slow = dict(SIMULATED, step_time_s=[0.2, 0.1144, 0.1144])  # +4 %
        self.assertEqual(fidelity.evaluate_schedule("1f1b", TRAIN, slow, {})["status"], "FAIL")

    def test_missing_step_times_are_an_error(self):
        r = fidelity.evaluate_schedule("1f1b", {"run_id": 1}, {"run_id": 2}, {})
        self.assertEqual(r["status"], "error")

    def test_summary_passes_only_when_every_schedule_passed(self):
        ok = {"status": "PASS", "error_rel": 0.01}
        bad = {"status": "FAIL", "error_rel": -0.05}
        s = fidelity.summarize([ok, bad])
        self.assertEqual((s["status"], s["passed"], s["schedules"]), ("FAIL", 1, 2))
        self.assertAlmostEqual(s["worst_abs_error_rel"], 0.05)
        self.assertAlmostEqual(s["mape"], 0.03)
        self.assertEqual(fidelity.summarize([ok, ok])["status"], "PASS")
        self.assertEqual(fidelity.summarize([ok, {"status": "error"}])["status"], "FAIL")
        self.assertEqual(fidelity.summarize([])["status"], "FAIL")

    def test_schedule_list_parsing(self):
        text = ("# built-in schedules (pipette schedule NAME -p P -m M [-v V]); csv:FILE\n"
                "# name       constraints   what\n"
                "  gpipe      v = 1         all forwards\n"
                "  zb-h1      v = 1; m >= p zero bubble H1\n"
                "             continued description\n")
        self.assertEqual(fidelity.parse_schedule_list(text), ["gpipe", "zb-h1"])

    def test_the_prediction_takes_the_simulate_args(self):
        args = argparse.Namespace(pipette="bin/pipette", db="f.db",
                                  simulate_arg=["--cores=1", "--alone-costs"])
        self.assertEqual(fidelity.simulate_argv(args, 7), [
            "bin/pipette", "simulate", "--costs-from", "7", "--db", "f.db", "--format", "json",
            "--cores=1", "--alone-costs"])
        args.simulate_arg = None
        self.assertEqual(fidelity.simulate_argv(args, 7)[-2:], ["--format", "json"])


class ResultsTest(unittest.TestCase):
    def test_empty_folder_leaves_every_target_unmeasured(self):
        with tempfile.TemporaryDirectory() as d:
            collected = results.collect(d)
            self.assertEqual(len(collected["targets"]), 11)
            self.assertEqual({t["status"] for t in collected["targets"]}, {"UNMEASURED"})
            self.assertEqual(run_results([d, "--gpu", "none"]), 0)
            text = read(os.path.join(d, "results.md"))
            self.assertIn("Summary: 11 UNMEASURED", text)
            self.assertIn("- gpu: none", text)
            self.assertEqual(len(json.loads(read(os.path.join(d, "results.json")))["targets"]), 11)

    def test_every_target_from_sample_outputs(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "kernels.xml", GTEST_XML.format(failures=0, body="", result="completed",
                                                     skip=""))
            write(d, "engine.xml", GTEST_XML.format(failures=1, body="<failure message='x'/>",
                                                    result="completed", skip=""))
            write(d, "benchmark.json", {"device": "NVIDIA H100 80GB HBM3",
                                        "peak": {"bf16_tflops": 989.4, "source": "datasheet"},
                                        "stages": [stage("gpt3-1.3b", 2.0, 2.0, 2.0, 3.9, 0.47),
                                                   stage("llama3.2-1b", 2.0, 2.2, 2.0, 3.9, 0.44)]})
            write(d, "gemm.json", {"gemms": [
                {"name": "gpt qkv F", "engine_s": 1.05e-3, "best_s": 1.0e-3},
                {"name": "gpt fc2 W", "engine_s": 1.2e-3, "best_s": 1.0e-3}]})
            write(d, "attention.json", {"available": True, "shapes": [
                {"name": "gpt3-1.3b", "fwd_bwd_ms": 1.5, "fwd_bwd_tflops": 500.0}]})
            write(d, "fidelity.json", fidelity.summarize([
                {"schedule": "1f1b", "status": "PASS", "error_rel": 0.01, "measured_step_s": 0.1,
                 "simulated_step_s": 0.101}]))
            t = by_target(results.collect(d))
            self.assertEqual(t["gpu tests: kernels"]["status"], "PASS")
            self.assertEqual(t["gpu tests: engine"]["status"], "FAIL")
            self.assertEqual(t["gpt3-1.3b stage F+I+W MFU"]["status"], "PASS")
            self.assertIn("47.0%", t["gpt3-1.3b stage F+I+W MFU"]["measured"])
            self.assertEqual(t["llama3.2-1b stage F+I+W MFU"]["status"], "FAIL")
            gemm = t["every GEMM vs cuBLASLt's best"]
            self.assertEqual(gemm["status"], "FAIL")
            self.assertIn("worst 1.200 (gpt fc2 W), 1 of 2 over", gemm["measured"])
            # (2 + 2) / 3.9 = 1.026 passes; (2.2 + 2) / 3.9 = 1.077 does not.
            self.assertEqual(t["gpt3-1.3b split backward (I+W)/B"]["status"], "PASS")
            self.assertEqual(t["llama3.2-1b split backward (I+W)/B"]["status"], "FAIL")
            attn = t["gpt3-1.3b attention vs cuDNN"]
            self.assertEqual(attn["status"], "REPORTED")
            self.assertIn("3.000 ms = 2.00 x cuDNN", attn["measured"])
            self.assertEqual(t["llama3.2-1b attention vs cuDNN"]["status"], "UNMEASURED")
            self.assertEqual(t["fidelity: step time vs simulate --costs-from"]["status"], "PASS")
            self.assertEqual(run_results([d]), 0)
            text = read(os.path.join(d, "results.md"))
            self.assertIn("| 1f1b | 100.000 | 101.000 | +1.00% | PASS |", text)
            self.assertIn("| gpt3-1.3b | 1 | 2.000 | 2.000 | 2.000 | 3.900 | 6.000 | 400.0 | 47.0% |",
                          text)

    def test_unknown_peak_and_all_skipped_tests_are_unmeasured(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "kernels.xml", GTEST_XML.format(
                failures=0, body="<skipped message='no device'/>", result="skipped",
                skip="<skipped message='no device'/>"))
            write(d, "benchmark.json", {"stages": [stage("gpt3-1.3b", 1, 1, 1, 2, None)]})
            write(d, "gemm.json", [{"name": "x", "ratio": 1.04}])
            t = by_target(results.collect(d))
            self.assertEqual(run_results([d]), 0)  # renders a stage without a peak
            self.assertIn("| unknown |", read(os.path.join(d, "results.md")))
            self.assertEqual(t["gpu tests: kernels"]["status"], "UNMEASURED")
            self.assertEqual(t["gpt3-1.3b stage F+I+W MFU"]["status"], "UNMEASURED")
            self.assertEqual(t["every GEMM vs cuBLASLt's best"]["status"], "PASS")

    def test_gtest_counts(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "t.xml", GTEST_XML.format(failures=1, body="<failure message='x'/>",
                                               result="skipped", skip="<skipped/>"))
            self.assertEqual(results.gtest_counts(os.path.join(d, "t.xml")), (3, 1, 2))
            write(d, "bad.xml", "<testsuites")
            self.assertIsNone(results.gtest_counts(os.path.join(d, "bad.xml")))


PARTS_HEADER = "part\tstatus\texit\tseconds\tbudget\treason\n"


def call_folder(root, selection, env, parts, files):
    """A folder as scripts/gpu-run.sh packs it: gpu-run-SELECTION/ with env.json, parts.tsv and
    files ({name: text or JSON}); returns the archive's path."""
    folder = os.path.join(root, "gpu-run-" + selection)
    os.makedirs(folder)
    write(folder, "env.json", dict(env, selection=selection))
    write(folder, "parts.tsv", PARTS_HEADER + "".join("\t".join(row) + "\n" for row in parts))
    for name, text in files.items():
        write(folder, name, text)
    archive = os.path.join(root, "gpu-run-%s.tar.gz" % selection)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="gpu-run-" + selection)
    return archive


ENV = {"gpu": "NVIDIA H200", "driver": "580.95", "cuda": "13.0", "commit": "abc123",
       "date": "2026-11-28T10:00:00Z"}
SANITIZER_TSV = "tool\texit\tseconds\tbudget\nracecheck\t0\t40.1\t66\nmemcheck\t1\t20.0\t51\n"


class ResultsArchivesTest(unittest.TestCase):
    """results.py over the archives of two calls (first, then second)."""

    def make_calls(self, d):
        first = call_folder(d, "first", ENV, [
            ["env", "ok", "0", "2.0", "20", ""],
            ["kernels", "ok", "0", "30.0", "60", ""],
            ["sanitizer", "failed", "1", "60.1", "120", ""],
            ["gemm-tests", "failed", "139", "3.0", "40", ""],
            ["engine", "timeout", "124", "220.0", "220", "killed after 220 s"],
            ["bench-quick", "ok", "0", "20.0", "60", ""]], {
            "kernels.xml": GTEST_XML.format(failures=0, body="", result="completed", skip=""),
            "sanitizer.tsv": SANITIZER_TSV,
            "sanitizer-racecheck.xml": GTEST_XML.format(failures=0, body="", result="completed",
                                                        skip=""),
            "sanitizer-racecheck.log": "========= RACECHECK SUMMARY: 0 hazards displayed "
                                       "(0 errors, 0 warnings)\n",
            "sanitizer-memcheck.xml": GTEST_XML.format(failures=0, body="", result="completed",
                                                       skip=""),
            "sanitizer-memcheck.log": "========= Invalid __global__ read\n"
                                      "========= ERROR SUMMARY: 2 errors\n",
            "benchmark-quick.json": {"device": "NVIDIA H200", "stages": [
                dict(stage("gpt3-1.3b", 2.0, 2.0, 2.0, 3.9, 0.40), memory=MEMORY),
                stage("llama3.2-1b", 2.0, 2.0, 2.0, 3.9, 0.46)]}})
        second = call_folder(d, "second", dict(ENV, date="2026-11-28T10:20:00Z"), [
            ["env", "ok", "0", "2.0", "20", ""],
            ["benchmark", "ok", "0", "100.0", "150", ""],
            ["gemm", "ok", "0", "30.0", "60", ""],
            ["attention", "ok", "0", "20.0", "40", ""],
            ["fidelity", "timeout", "124", "250.0", "250", "killed after 250 s"]], {
            "benchmark.json": {"device": "NVIDIA H200", "peak": {"bf16_tflops": 989.4,
                                                                 "source": "datasheet"},
                               "stages": [stage("gpt3-1.3b", 2.0, 2.0, 2.0, 3.9, 0.47)],
                               "errors": [{"part": "llama3.2-1b stage",
                                           "error": "CUDA error: out of memory"}]},
            "gemm.json": {"gemms": [
                {"name": "gpt3-1.3b.qkv.F", "m": 8192, "n": 6144, "k": 2048, "trans": "TN",
                 "engine_s": 1.05e-3, "best_s": 1.0e-3, "convert_s": 1.2e-5, "tflops": 600.0}],
                "errors": [{"part": "llama3.2-1b.fc2.W", "error": "no cuBLASLt algorithm"}]},
            "fidelity.json": dict(fidelity.summarize([
                {"schedule": "1f1b", "status": "PASS", "error_rel": 0.01,
                 "measured_step_s": 0.1, "simulated_step_s": 0.101}]), complete=False,
                planned=15)})
        return first, second

    def test_two_archives_make_one_file_with_each_calls_parts(self):
        with tempfile.TemporaryDirectory() as d:
            first, second = self.make_calls(d)
            out = os.path.join(d, "out", "r.md")
            self.assertEqual(run_results([first, second, "--out", out]), 0)
            text = read(out)
            doc = json.loads(read(os.path.join(d, "out", "r.json")))
            self.assertIn("- gpu: NVIDIA H200", text)
            self.assertIn("- date: 2026-11-28T10:00:00Z", text)  # the first call's
            self.assertIn("### first", text)
            self.assertIn("### second", text)
            self.assertIn("| engine | timeout | 124 | 220.0 | 220 | killed after 220 s |", text)
            self.assertIn("| fidelity | timeout | 124 | 250.0 | 250 | killed after 250 s |", text)
            self.assertEqual([c["selection"] for c in doc["calls"]], ["first", "second"])
            t = {x["target"]: x for x in doc["targets"]}
            self.assertEqual(t["gpu tests: kernels"]["status"], "PASS")
            self.assertEqual(t["gpu tests: engine"]["status"], "UNMEASURED")
            self.assertIn("part engine: timeout, killed after 220 s",
                          t["gpu tests: engine"]["detail"])
            self.assertEqual(t["gpu tests: GEMM path"]["status"], "FAIL")  # crashed, no results
            self.assertIn("exit 139", t["gpu tests: GEMM path"]["measured"])
            # gpt3 from the full benchmark; llama only in the quick one, and its full run failed.
            self.assertEqual(t["gpt3-1.3b stage F+I+W MFU"]["status"], "PASS")
            llama = t["llama3.2-1b stage F+I+W MFU"]
            self.assertEqual(llama["status"], "PASS")
            self.assertIn("from the quick benchmark", llama["detail"])
            self.assertIn("llama3.2-1b stage failed (benchmark.json): CUDA error: out of memory",
                          llama["detail"])
            gemm = t["every GEMM vs cuBLASLt's best"]
            self.assertEqual(gemm["status"], "FAIL")
            self.assertIn("1 GEMMs not measured", gemm["detail"])
            fid = t["fidelity: step time vs simulate --costs-from"]
            self.assertEqual(fid["status"], "UNMEASURED")
            self.assertIn("1 of 15 schedules ran", fid["measured"])
            self.assertEqual([s["status"] for s in doc["sanitizer"]], ["PASS", "FAIL"])
            self.assertIn("0 errors reported", doc["sanitizer"][0]["measured"])
            self.assertIn("2 errors reported", doc["sanitizer"][1]["measured"])
            # Memory in MiB: measured next to the model's bf16 / fp32 amounts; only the stage
            # that recorded memory has a row.
            self.assertIn("| gpt3-1.3b | 576 | 1377 | 1824 / 3360 | 1920 | 224 / 448 | 2049 | 2753 "
                          "| 768 |", text)
            self.assertNotIn("| llama3.2-1b | 576 |", text)
            self.assertEqual(len(doc["errors"]), 2)
            self.assertIn("| gemm.json | llama3.2-1b.fc2.W | no cuBLASLt algorithm |", text)
            self.assertIn("## Stages, quick (cuda_engine_benchmark --quick --no-bubbles)", text)
            self.assertIn("| gpt3-1.3b.qkv.F | 8192 | 6144 | 2048 | TN | 1050.0 | 1000.0 | 1.050 "
                          "| 12.0 | 600.0 |", text)

    def test_unpacked_folders_and_archives_read_alike(self):
        with tempfile.TemporaryDirectory() as d:
            first, second = self.make_calls(d)
            a, b = os.path.join(d, "a.md"), os.path.join(d, "b.md")
            self.assertEqual(run_results([first, second, "--out", a]), 0)
            self.assertEqual(run_results([os.path.join(d, "gpu-run-first"),
                                          os.path.join(d, "gpu-run-second"), "--out", b]), 0)
            self.assertEqual(read(a), read(b))

    def test_default_path_from_the_first_calls_date_and_gpu(self):
        self.assertTrue(results.default_path(ENV).endswith(
            os.path.join("backends", "cuda", "results", "2026-11-28-h200.md")))
        self.assertTrue(results.default_path({"date": None, "gpu": None}).endswith(
            "UNKNOWN-DATE-UNKNOWN-GPU.md"))
        self.assertEqual(results.gpu_slug("none"), "nogpu")
        self.assertEqual(results.gpu_slug(""), "nogpu")
        self.assertEqual(results.gpu_slug("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3")

    def test_an_argument_neither_archive_nor_folder_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "notes.txt", "not an archive")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(results.main([os.path.join(d, "notes.txt")]), 2)
                self.assertEqual(results.main([os.path.join(d, "missing.tar.gz")]), 2)
            self.assertIn("not an archive", err.getvalue())
            self.assertIn("no such archive or folder", err.getvalue())
            self.assertEqual(os.listdir(d), ["notes.txt"])

    def test_nothing_measured_is_unmeasured_everywhere(self):
        with tempfile.TemporaryDirectory() as d:
            archive = call_folder(d, "first", dict(ENV, gpu=""), [
                ["env", "ok", "0", "1.0", "20", ""],
                ["sanitizer", "skipped", "-", "0", "120", "no GPU (nvidia-smi lists none)"]], {})
            out = os.path.join(d, "r.md")
            self.assertEqual(run_results([archive, "--out", out]), 0)
            doc = json.loads(read(os.path.join(d, "r.json")))
            self.assertEqual({t["status"] for t in doc["targets"] + doc["sanitizer"]},
                             {"UNMEASURED"})
            self.assertIn("no GPU", doc["sanitizer"][0]["detail"])
            self.assertEqual(results.gpu_slug(doc["env"]["gpu"]), "nogpu")


class AttentionReferenceTest(unittest.TestCase):
    def test_flops_by_megatrons_convention(self):
        gpt = attention_reference.SHAPES[0]
        # 4 * 4 * 2048^2 * 16 * 128 forward, twice that backward.
        self.assertEqual(attention_reference.attention_flops(gpt, False), 137438953472.0)
        self.assertEqual(attention_reference.attention_flops(gpt, True), 2 * 137438953472.0)
        llama = attention_reference.SHAPES[1]
        self.assertEqual(attention_reference.attention_flops(llama, False),
                         attention_reference.attention_flops(gpt, False))

    def test_prints_json_and_exits_zero_whatever_is_missing(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "a.json")
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu",
                                                                "attention_reference.py"),
                                   "--json", out, "--iters", "2", "--warmup", "1"],
                                  stdout=subprocess.PIPE, text=True, timeout=600)
            self.assertEqual(proc.returncode, 0)
            result = json.loads(read(out))
            self.assertEqual(json.loads(proc.stdout), result)
            if result["available"]:
                self.assertEqual(len(result["shapes"]), 2)
            else:
                self.assertTrue(result["reason"])


if __name__ == "__main__":
    unittest.main()
