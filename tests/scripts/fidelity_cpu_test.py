#!/usr/bin/env python3
"""scripts/gpu/fidelity.py end to end on the CPU engine (label mpi): train under mpirun -np 4 with
the tiny model, predict each run with `pipette simulate --costs-from`, compare, and check what the
check wrote against the database and against `pipette compare`'s own step-time error. The 3 %
target itself is not asserted (4 ranks on this machine's cores are oversubscribed,
docs/fidelity.md); the verdict's arithmetic is (a tolerance every run passes, one none does).

  fidelity_cpu_test.py PIPETTE MPIEXEC"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))

import fidelity  # noqa: E402

PIPETTE = MPIEXEC = ""
SCHEDULES = ["1f1b", "zb-h1", "dualpipe-v"]


def launcher():
    root = " --allow-run-as-root" if os.geteuid() == 0 else ""
    return MPIEXEC + root + " --oversubscribe -np 4"


def check(folder, tolerance):
    """Runs the check; returns (exit status, its JSON, the database path)."""
    db = os.path.join(folder, "f.db")
    out = os.path.join(folder, "fidelity.json")
    argv = [sys.executable, os.path.join(ROOT, "scripts", "gpu", "fidelity.py"), "--pipette", PIPETTE,
            "--db", db, "--json", out, "--engine", "cpu", "--launcher", launcher(),
            "--schedules", ",".join(SCHEDULES), "--steps", "4", "--tolerance", str(tolerance)]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600)
    with open(out) as f:
        return proc.returncode, json.load(f), db, proc.stdout


class FidelityCpuTest(unittest.TestCase):
    def test_every_schedule_measured_predicted_and_compared(self):
        with tempfile.TemporaryDirectory() as d:
            code, summary, db, log = check(d, 10.0)  # 1000 %: every schedule passes
            self.assertEqual(code, 0, log)
            self.assertEqual((summary["status"], summary["schedules"], summary["passed"]),
                             ("PASS", 3, 3), log)
            records = {r["schedule"]: r for r in summary["records"]}
            self.assertEqual(sorted(records), sorted(SCHEDULES))
            conn = sqlite3.connect(db)
            engines = dict(conn.execute("SELECT id, engine FROM runs").fetchall())
            conn.close()
            self.assertEqual(len(engines), 6)  # a measured run and its prediction per schedule
            errors = []
            for name, r in records.items():
                self.assertEqual(engines[r["run"]], "cpu", name)
                self.assertEqual(engines[r["prediction"]], "sim", name)
                self.assertGreater(r["measured_step_s"], 0, name)
                self.assertGreater(r["simulated_step_s"], 0, name)
                # The check's steady-state step times are pipette compare's.
                self.assertAlmostEqual(r["measured_step_s"] / r["compare_measured_s"], 1, 9, name)
                self.assertAlmostEqual(r["simulated_step_s"] / r["compare_predicted_s"], 1, 9, name)
                self.assertAlmostEqual(r["error_rel"], r["compare_step_error_rel"], 9, name)
                self.assertGreater(r["compare_pairs"], 0, name)
                self.assertIn("F", r["kinds"], name)
                errors.append(abs(r["error_rel"]))
            self.assertAlmostEqual(summary["worst_abs_error_rel"], max(errors))

    def test_a_schedule_beyond_the_tolerance_fails_the_check(self):
        with tempfile.TemporaryDirectory() as d:
            code, summary, _, log = check(d, 0.0)  # no prediction is exact
            self.assertEqual(code, 1, log)
            self.assertEqual(summary["status"], "FAIL")
            for r in summary["records"]:
                self.assertEqual(r["status"], "FAIL" if abs(r["error_rel"]) > 0 else "PASS")


if __name__ == "__main__":
    PIPETTE, MPIEXEC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
