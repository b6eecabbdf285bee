#!/usr/bin/env python3
"""Unit tests of the GPU machine's scripts (label unit), no GPU needed:
  - scripts/gpu-run.sh: the budgets fit a call; a part past its budget is recorded `timeout` and
    the later parts still run; the deadline skips what has no time left; a bundle-less call;
    one archive in $OUT whatever happens.
  - the dry run: `gpu-run.sh first` and `second` with a bundle of the build's binaries (those this
    build has; --binaries), then scripts/gpu/results.py on the two archives: every target reads
    UNMEASURED. Skipped where nvidia-smi lists a GPU (there the parts would really run).
  - scripts/gpu/bundle-env.sh: the CUDA libraries of a python environment's nvidia wheels come
    first, and `find` is not run when they are all there.
  - scripts/gpu/travel_size.py: the tree and the bundle together against the limit.
Run: python3 tests/scripts/gpu_run_test.py [--binaries FILE...]"""
import argparse
import json
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU_RUN = os.path.join(ROOT, "scripts", "gpu-run.sh")
RESULTS = os.path.join(ROOT, "scripts", "gpu", "results.py")
TRAVEL_SIZE = os.path.join(ROOT, "scripts", "gpu", "travel_size.py")
PARTS = {"first": ["env", "kernels", "sanitizer", "gemm-tests", "engine", "bench-quick"],
         "second": ["env", "benchmark", "gemm", "attention", "fidelity"],
         "all": ["env", "kernels", "sanitizer", "gemm-tests", "engine", "bench-quick", "gemm",
                 "attention", "fidelity", "benchmark"]}
BINARIES = []  # --binaries: the build's gpu binaries, for the dry run's bundle

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))
import results  # noqa: E402


def clean_env(**extra):
    """The environment without the callers' overrides of gpu-run.sh, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIPETTE_GPU_RUN_") and k not in ("OUT", "PIPETTE_BUNDLE")}
    env["PIPETTE_PYTHON"] = sys.executable
    env.update(extra)
    return env


def write_script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def run_gpu_run(selection, out, timeout=120, **env):
    """(exit status, output, seconds) of gpu-run.sh SELECTION with OUT=out."""
    start = time.monotonic()
    proc = subprocess.run(["bash", GPU_RUN, selection], env=clean_env(OUT=out, **env),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, time.monotonic() - start


def archive_rows(out, selection):
    """parts.tsv of the one archive in out, as {part: row}, and the archive's member names."""
    path = os.path.join(out, "gpu-run-%s.tar.gz" % selection)
    with tarfile.open(path) as tar:
        names = tar.getnames()
        text = tar.extractfile("gpu-run-%s/parts.tsv" % selection).read().decode()
    lines = text.strip().split("\n")
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    return rows, names


def has_gpu():
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


class GpuRunBudgetTest(unittest.TestCase):
    def plan(self, selection, **env):
        proc = subprocess.run(["bash", GPU_RUN, "--plan", selection], env=clean_env(**env),
                              stdout=subprocess.PIPE, text=True, timeout=30, check=True)
        return [line.split("\t") for line in proc.stdout.strip().split("\n")]

    def test_default_budgets_fit_a_540_s_call(self):
        for selection in ("first", "second"):
            rows = self.plan(selection)
            budgets = {name: int(value) for name, value in rows}
            parts = [name for name, _ in rows if name not in ("sum", "total", "reserve")]
            self.assertEqual(parts, PARTS[selection])
            self.assertEqual(sum(budgets[p] for p in parts), budgets["sum"])
            self.assertLessEqual(budgets["sum"], 520, selection)
            self.assertEqual(budgets["total"], 540)
            self.assertLessEqual(budgets["sum"] + budgets["reserve"], budgets["total"])
        # `all`: every part of both, env once, correctness first; its sum may pass the deadline.
        rows = self.plan("all")
        parts = [name for name, _ in rows if name not in ("sum", "total", "reserve")]
        self.assertEqual(parts, PARTS["all"])
        self.assertEqual(sorted(parts), sorted(set(PARTS["first"] + PARTS["second"])))
        self.assertEqual(parts[:len(PARTS["first"])], PARTS["first"])
        engine = dict(self.plan("first"))
        self.assertEqual(max(engine, key=lambda k: int(engine[k]) if k in PARTS["first"] else 0),
                         "engine")  # the engine tests get the most

    def test_a_part_budget_can_be_overridden(self):
        rows = dict(self.plan("first", PIPETTE_GPU_RUN_BUDGET_GEMM_TESTS="7"))
        self.assertEqual(rows["gemm-tests"], "7")

    def test_bad_selection_is_a_usage_error(self):
        proc = subprocess.run(["bash", GPU_RUN, "third"], env=clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("usage", proc.stderr)


class GpuRunPartsTest(unittest.TestCase):
    """gpu-run.sh with a fake bundle: shell scripts in place of the binaries."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bundle = os.path.join(self.tmp.name, "bundle")
        self.out = os.path.join(self.tmp.name, "out")
        os.makedirs(os.path.join(self.bundle, "bin"))
        with open(os.path.join(self.bundle, "COMMIT"), "w") as f:
            f.write("fake\n")

    def tearDown(self):
        self.tmp.cleanup()

    def binary(self, name, body):
        write_script(os.path.join(self.bundle, "bin", name), body)

    def test_a_part_past_its_budget_times_out_and_the_later_parts_still_run(self):
        self.binary("kernels_gpu_test", "exec sleep 30")  # killed after its 1 s
        self.binary("gemm_gpu_test", 'echo "gemm tests: $1"')
        self.binary("cuda_engine_gpu_test", "echo engine broke; exit 3")
        rc, output, seconds = run_gpu_run(
            "first", self.out, PIPETTE_BUNDLE=self.bundle, PIPETTE_GPU_RUN_BUDGET_KERNELS="1",
            PIPETTE_GPU_RUN_BUDGET_SANITIZER="1")
        self.assertEqual(rc, 1, output)  # a timeout and a failure
        self.assertLess(seconds, 25)
        self.assertEqual(os.listdir(self.out), ["gpu-run-first.tar.gz"])
        rows, names = archive_rows(self.out, "first")
        self.assertEqual([r["part"] for r in rows], PARTS["first"])
        by_part = {r["part"]: r for r in rows}
        self.assertEqual(by_part["env"]["status"], "ok")
        self.assertEqual((by_part["kernels"]["status"], by_part["kernels"]["exit"],
                          by_part["kernels"]["budget"]), ("timeout", "124", "1"))
        self.assertIn("killed after 1 s", by_part["kernels"]["reason"])
        self.assertEqual(by_part["gemm-tests"]["status"], "ok")
        self.assertEqual((by_part["engine"]["status"], by_part["engine"]["exit"]), ("failed", "3"))
        self.assertEqual(by_part["bench-quick"]["status"], "missing")
        self.assertIn("cuda_engine_benchmark is not in", by_part["bench-quick"]["reason"])
        for name in ("env.json", "env.log", "kernels.log", "gemm-tests.log", "engine.log"):
            self.assertIn("gpu-run-first/" + name, names)
        with tarfile.open(os.path.join(self.out, "gpu-run-first.tar.gz")) as tar:
            env = json.load(tar.extractfile("gpu-run-first/env.json"))
            engine_log = tar.extractfile("gpu-run-first/engine.log").read().decode()
        self.assertEqual((env["commit"], env["selection"]), ("fake", "first"))
        self.assertEqual(set(env), {"gpu", "driver", "cuda", "commit", "date", "selection"})
        self.assertIn("engine broke", engine_log)

    def test_the_deadline_skips_the_parts_with_no_time_left(self):
        self.binary("kernels_gpu_test", "exec sleep 30")
        self.binary("gemm_gpu_test", "exit 0")
        rc, output, seconds = run_gpu_run("first", self.out, PIPETTE_BUNDLE=self.bundle,
                                          PIPETTE_GPU_RUN_TOTAL="4", PIPETTE_GPU_RUN_RESERVE="1")
        self.assertEqual(rc, 1, output)
        self.assertLess(seconds, 15)
        self.assertEqual(os.listdir(self.out), ["gpu-run-first.tar.gz"])
        by_part = {r["part"]: r for r in archive_rows(self.out, "first")[0]}
        # env uses part of the 3 s; kernels gets the rest (or nothing on a slow machine).
        self.assertIn(by_part["kernels"]["status"], ("timeout", "skipped"))
        self.assertIn("deadline", by_part["kernels"]["reason"])
        self.assertEqual(by_part["gemm-tests"]["status"], "skipped")
        self.assertIn("no time left", by_part["gemm-tests"]["reason"])
        self.assertEqual(by_part["engine"]["status"], "missing")

    def test_the_sanitizer_runs_both_tools_and_results_reads_their_verdicts(self):
        """A fake GPU (nvidia-smi) and a fake compute-sanitizer: racecheck clean, memcheck with
        3 errors."""
        fakebin = os.path.join(self.tmp.name, "fakebin")
        os.makedirs(fakebin)
        write_script(os.path.join(fakebin, "nvidia-smi"), """case "$*" in
  *--query-gpu=name,driver_version*) echo "NVIDIA H200, 580.95" ;;
  *--query-gpu=name*) echo "NVIDIA H200" ;;
  *--query-gpu=driver_version*) echo "580.95" ;;
  *) echo "| NVIDIA-SMI 580.95   Driver Version: 580.95   CUDA Version: 13.0 |" ;;
esac""")
        sanitizer = os.path.join(fakebin, "fake-compute-sanitizer")
        write_script(sanitizer, """tool=$2
for a; do
  case $a in
    --gtest_output=xml:*) xml=${a#--gtest_output=xml:} ;;
    --gtest_filter=*) echo "filter ${a#--gtest_filter=}" ;;
  esac
done
echo '<testsuites><testsuite name="K"><testcase name="a"/></testsuite></testsuites>' >"$xml"
if [ "$tool" = memcheck ]; then echo "========= ERROR SUMMARY: 3 errors"; exit 1; fi
echo '========= ERROR SUMMARY: 0 errors'""")
        self.binary("kernels_gpu_test", "exit 0")
        rc, output, _ = run_gpu_run(
            "first", self.out, PIPETTE_BUNDLE=self.bundle, PIPETTE_COMPUTE_SANITIZER=sanitizer,
            PATH=fakebin + os.pathsep + os.environ["PATH"])
        self.assertEqual(rc, 1, output)  # memcheck's errors fail the part
        by_part = {r["part"]: r for r in archive_rows(self.out, "first")[0]}
        self.assertEqual((by_part["sanitizer"]["status"], by_part["sanitizer"]["exit"]),
                         ("failed", "1"))
        archive = os.path.join(self.out, "gpu-run-first.tar.gz")
        with tarfile.open(archive) as tar:
            log = tar.extractfile("gpu-run-first/sanitizer-racecheck.log").read().decode()
            env = json.load(tar.extractfile("gpu-run-first/env.json"))
        self.assertIn("filter KernelsGpu.FlashAttention*:KernelsGpu.LayerNorm*:KernelsGpu.RmsNorm*:"
                      "KernelsGpu.CrossEntropy*-*LongSequence*", log)
        self.assertEqual((env["gpu"], env["driver"], env["cuda"]),
                         ("NVIDIA H200", "580.95", "13.0"))
        md = os.path.join(self.tmp.name, "r.md")
        proc = subprocess.run([sys.executable, RESULTS, archive, "--out", md],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(self.tmp.name, "r.json")) as f:
            doc = json.load(f)
        self.assertEqual([s["status"] for s in doc["sanitizer"]], ["PASS", "FAIL"])
        self.assertIn("3 errors reported", doc["sanitizer"][1]["measured"])
        self.assertTrue(results.default_path(doc["env"]).endswith("-h200.md"))

    def test_without_a_bundle_every_binary_part_is_missing(self):
        rc, output, _ = run_gpu_run("second", self.out,
                                    PIPETTE_BUNDLE=os.path.join(self.tmp.name, "none"))
        self.assertEqual(rc, 0, output)  # env and attention ran, and exited 0
        self.assertEqual(os.listdir(self.out), ["gpu-run-second.tar.gz"])
        by_part = {r["part"]: r for r in archive_rows(self.out, "second")[0]}
        self.assertEqual([by_part[p]["status"] for p in PARTS["second"]],
                         ["ok", "missing", "missing", "ok", "missing"])


class DryRunTest(unittest.TestCase):
    """Both calls on this machine as on a GPU one. Expected exit status 0: without a GPU every
    gpu test skips and exits 0, the benchmarks say "no CUDA device" and exit 0, the attention
    reference answers "unavailable" with 0, the sanitizer and fidelity parts are skipped, and the
    binaries this build lacks are missing (not run)."""

    def test_both_calls_then_one_results_file_with_every_target_unmeasured(self):
        if has_gpu():
            self.skipTest("nvidia-smi lists a GPU: the parts would run for real")
        with tempfile.TemporaryDirectory() as tmp:
            bundle = os.path.join(tmp, "bundle")
            os.makedirs(os.path.join(bundle, "bin"))
            for path in BINARIES:
                if os.path.exists(path):
                    os.symlink(os.path.abspath(path),
                               os.path.join(bundle, "bin", os.path.basename(path)))
            with open(os.path.join(bundle, "COMMIT"), "w") as f:
                f.write("dryrun\n")
            archives = []
            for selection in ("first", "second"):
                out = os.path.join(tmp, "out-" + selection)
                rc, output, _ = run_gpu_run(selection, out, PIPETTE_BUNDLE=bundle)
                self.assertIn(rc, (0, 1), output)
                self.assertEqual(os.listdir(out), ["gpu-run-%s.tar.gz" % selection])
                rows, names = archive_rows(out, selection)
                self.assertIn("gpu-run-%s/parts.tsv" % selection, names)
                self.assertEqual([r["part"] for r in rows], PARTS[selection])
                statuses = {r["part"]: r["status"] for r in rows}
                self.assertNotIn("timeout", statuses.values(), output)
                self.assertEqual(rc == 0, set(statuses.values()) <= {"ok", "skipped", "missing"},
                                 output)
                self.assertEqual(rc, 0, output)  # expected here (see the class comment)
                archives.append(os.path.join(out, "gpu-run-%s.tar.gz" % selection))
            md = os.path.join(tmp, "results", "dry.md")
            proc = subprocess.run([sys.executable, RESULTS] + archives + ["--out", md],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(md) as f:
                text = f.read()
            with open(os.path.join(tmp, "results", "dry.json")) as f:
                doc = json.load(f)
            self.assertEqual(len(doc["targets"]), 11)
            self.assertEqual({t["status"] for t in doc["targets"] + doc["sanitizer"]},
                             {"UNMEASURED"})
            self.assertNotIn("**PASS**", text)
            self.assertNotIn("**FAIL**", text)
            self.assertIn("Summary: 11 UNMEASURED", text)
            self.assertIn("### first", text)
            self.assertIn("### second", text)
            self.assertEqual(text.count("| part | status | exit | seconds | budget | reason |"), 2)
            self.assertEqual([c["selection"] for c in doc["calls"]], ["first", "second"])
            self.assertEqual(doc["env"]["commit"], "dryrun")
            self.assertTrue(results.default_path(doc["env"]).endswith("-nogpu.md"))


class BundleEnvTest(unittest.TestCase):
    def test_a_python_environments_nvidia_libraries_come_first_and_nothing_is_searched(self):
        with tempfile.TemporaryDirectory() as tmp:
            site = os.path.join(tmp, "site-packages")
            libs = {"nccl": ["libnccl.so.2"], "cudnn": ["libcudnn.so.9"],
                    "cu13": ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"]}
            for package, names in libs.items():
                os.makedirs(os.path.join(site, "nvidia", package, "lib"))
                for name in names:
                    open(os.path.join(site, "nvidia", package, "lib", name), "w").close()
            fakebin = os.path.join(tmp, "fakebin")
            os.makedirs(fakebin)
            calls = os.path.join(tmp, "find-calls")
            write_script(os.path.join(fakebin, "find"), 'echo "find $*" >>"%s"' % calls)
            bundle = os.path.join(tmp, "bundle")
            os.makedirs(os.path.join(bundle, "bin"))
            env = clean_env(PIPETTE_BUNDLE=bundle, PYTHONPATH=site, LD_LIBRARY_PATH="/caller/lib",
                            PATH=fakebin + os.pathsep + os.environ["PATH"])
            proc = subprocess.run(
                ["bash", "-c", 'source scripts/gpu/bundle-env.sh && echo "$LD_LIBRARY_PATH" && '
                               'echo "$PIPETTE_TRAIN_BINARY"'],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            path, train = proc.stdout.strip().split("\n")
            dirs = path.split(":")
            wheel_dirs = {os.path.join(site, "nvidia", p, "lib") for p in libs}
            self.assertEqual(set(dirs[:3]), wheel_dirs, dirs)
            self.assertFalse(any(d.startswith("/usr/local/cuda") for d in dirs), dirs)
            self.assertEqual(dirs[-2:], [os.path.join(bundle, "lib"), "/caller/lib"])
            self.assertEqual(train, os.path.join(bundle, "bin", "pipette-train"))
            self.assertFalse(os.path.exists(calls), "find was run")

    def test_no_bundle_fails_with_a_message(self):
        proc = subprocess.run(["bash", "-c", "source scripts/gpu/bundle-env.sh; echo returned $?"],
                              cwd=ROOT, env=clean_env(PIPETTE_BUNDLE="/nonexistent"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)
        self.assertEqual(proc.stdout.strip(), "returned 2")
        self.assertIn("no /nonexistent/bin", proc.stderr)


class TravelSizeTest(unittest.TestCase):
    def test_the_tree_counts_with_the_bundle(self):
        mib = 1 << 20
        with tempfile.TemporaryDirectory() as tmp:
            repo, bundle = os.path.join(tmp, "repo"), os.path.join(tmp, "bundle")
            os.makedirs(repo)
            os.makedirs(os.path.join(bundle, "bin"))
            subprocess.run(["git", "init", "-q", repo], check=True)
            with open(os.path.join(repo, "tracked.bin"), "wb") as f:
                f.write(b"\0" * (3 * mib))
            with open(os.path.join(repo, "ignored.bin"), "wb") as f:
                f.write(b"\0" * (8 * mib))  # ignored: does not travel
            with open(os.path.join(repo, ".gitignore"), "w") as f:
                f.write("ignored.bin\n")
            subprocess.run(["git", "-C", repo, "add", "tracked.bin", ".gitignore"], check=True)
            with open(os.path.join(bundle, "bin", "x"), "wb") as f:
                f.write(b"\0" * (2 * mib))

            def check(limit):
                return subprocess.run([sys.executable, TRAVEL_SIZE, "--repo", repo, "--bundle",
                                       bundle, "--limit-mib", str(limit)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      timeout=60)

            over = check(4)  # the bundle alone (2 MiB) is under 4; with the tree (3 MiB) it is not
            self.assertEqual(over.returncode, 1, over.stdout)
            self.assertIn("over the 4.0 MiB", over.stderr)
            self.assertIn("tree", over.stdout)
            within = check(6)
            self.assertEqual(within.returncode, 0, within.stderr)
            self.assertIn("total                        5.0 MiB   of 6.0 MiB", within.stdout)

    def test_not_a_repository_exits_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, TRAVEL_SIZE, "--repo", tmp],
                                  env=dict(os.environ, GIT_CEILING_DIRECTORIES=tmp),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(proc.returncode, 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--binaries", nargs="*", default=[])
    known, rest = parser.parse_known_args()
    BINARIES.extend(known.binaries)
    unittest.main(argv=[sys.argv[0]] + rest)
