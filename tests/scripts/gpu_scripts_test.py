#!/usr/bin/env python3
"""Unit tests of scripts/gpu/ (label unit): the results writer fed with sample outputs, the
fidelity check's arithmetic on sample command outputs, the attention reference's FLOPs and its
graceful answer without torch. Run: python3 tests/scripts/gpu_scripts_test.py"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    """results.main without its printout."""
    with contextlib.redirect_stdout(io.StringIO()):
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
