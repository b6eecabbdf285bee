#!/usr/bin/env python3
"""cli_snapshot.py on this build: two snapshots of the same binary are identical (what varies from
run to run is normalised, so a difference in a before/after comparison is a real one), they cover
every subcommand with at least 40 commands, and --diff finds a changed line.

  cli_snapshot_test.py PIPETTE
"""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_snapshot  # noqa: E402

PIPETTE = None


class CliSnapshotTest(unittest.TestCase):
    def test_two_snapshots_of_one_build_are_identical_and_a_change_is_found(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            self.assertGreaterEqual(cli_snapshot.take(PIPETTE, a), 40)
            cli_snapshot.take(PIPETTE, b)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(cli_snapshot.diff(a, b), 0, out.getvalue())
            # Every subcommand of `pipette --help` is run.
            used = {args[0] for _, args, _ in cli_snapshot.COMMANDS}
            for sub in ("schedule", "partition", "models", "clusters", "simulate", "runs",
                        "export", "plot", "compare", "sweep", "db", "papers", "calibrations",
                        "calibrate", "train"):
                self.assertIn(sub, used)
            # The commands did what they say: a simulation recorded, the comparison exact.
            with open(os.path.join(a, "compare.txt")) as f:
                compare = f.read()
            self.assertTrue(compare.startswith("exit 0"), compare[:300])
            self.assertIn("error +0.00%", compare)
            with open(os.path.join(a, "simulate-bad-key.txt")) as f:
                self.assertTrue(f.read().startswith("exit 2"))
            with open(os.path.join(b, "schedule-1f1b.txt"), "a") as f:
                f.write("one more line\n")
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(cli_snapshot.diff(a, b), 1)
            self.assertIn("schedule-1f1b.txt differs", out.getvalue())
            self.assertIn("+one more line", out.getvalue())


if __name__ == "__main__":
    PIPETTE = os.path.abspath(sys.argv.pop(1))
    unittest.main()
