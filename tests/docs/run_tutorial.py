#!/usr/bin/env python3
"""Runs docs/tutorial.md: every command of its console blocks, in order, in a scratch directory,
and checks each against the output the text shows (issue 33: the tutorial cannot rot).

A console block is a fenced block whose info string is `console`. In it, a line starting with
"$ " is a command (a trailing backslash continues it on the next line; a here-document
`<< 'EOF'` takes the lines up to EOF); the lines up to the next command are its output as the
text shows it. Each shown line must appear, in order, among the lines the command printed
(standard output and error together), compared with runs of spaces as one; a line "..." stands
for lines left out, and a line ending in " ..." must match the start of a printed line. A block
preceded by the comment `<!-- tutorial: measured -->` shows measured numbers: its commands must
succeed, their output is not compared. Commands run in bash with `pipette` (the build's binary)
first on PATH. Every figure the text embeds as ![...](img/NAME.png) must be written by the
commands as NAME.png; with --figures-to DIR they are copied there (how docs/img gets them).

  python3 tests/docs/run_tutorial.py --pipette build/pipette [--tutorial docs/tutorial.md]
      [--figures-to docs/img] [--print]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def commands_of(text):
    """[(command, shown output lines, checked)] of the console blocks, in order."""
    out = []
    lines = text.split("\n")
    k = 0
    measured = False
    while k < len(lines):
        line = lines[k]
        if line.strip() == "<!-- tutorial: measured -->":
            measured = True
        elif line.startswith("```console"):
            k += 1
            current = None
            while k < len(lines) and not lines[k].startswith("```"):
                line = lines[k]
                if line.startswith("$ "):
                    command = line[2:]
                    while command.endswith("\\"):
                        k += 1
                        command = command[:-1].rstrip() + " " + lines[k].strip()
                    heredoc = re.search(r"<<\s*'?(\w+)'?", command)
                    if heredoc:
                        end = heredoc.group(1)
                        while True:
                            k += 1
                            command += "\n" + lines[k]
                            if lines[k] == end:
                                break
                    current = [command, [], not measured]
                    out.append(current)
                elif current is not None:
                    current[1].append(line)
                k += 1
            measured = False
        k += 1
    return out


def squash(line):
    return " ".join(line.split())


def check(shown, printed):
    """The first shown line not found in order in `printed`, or None."""
    at = 0
    printed = [squash(p) for p in printed]
    for want in shown:
        if want.strip() in ("", "..."):
            continue
        w = squash(want)
        prefix = w.endswith(" ...")
        if prefix:
            w = w[:-4]
        while at < len(printed) and not (printed[at].startswith(w) if prefix else printed[at] == w):
            at += 1
        if at == len(printed):
            return want
        at += 1
    return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipette", required=True)
    parser.add_argument("--tutorial", default=os.path.join(here, "..", "..", "docs", "tutorial.md"))
    parser.add_argument("--figures-to")
    parser.add_argument("--print", action="store_true", help="print every command's output")
    args = parser.parse_args()
    text = open(args.tutorial, encoding="utf-8").read()
    steps = commands_of(text)
    if not steps:
        sys.exit(f"{args.tutorial}: no console block with a $ command")
    work = tempfile.mkdtemp(prefix="pipette-tutorial-")
    bin_dir = os.path.join(work, ".bin")
    os.mkdir(bin_dir)
    os.symlink(os.path.abspath(args.pipette), os.path.join(bin_dir, "pipette"))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    failures = 0
    for command, shown, checked in steps:
        run = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=work, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        printed = run.stdout.split("\n")
        if args.print:
            print(f"$ {command}\n{run.stdout}")
        if run.returncode != 0:
            print(f"FAILED (exit {run.returncode}): $ {command}\n{run.stdout}")
            failures += 1
            continue
        missing = check(shown, printed) if checked else None
        if missing is not None:
            print(f"FAILED: $ {command}\n  the text shows a line it did not print:\n    {missing}\n"
                  f"  it printed:\n" + "\n".join("    " + p for p in printed))
            failures += 1
    figures = re.findall(r"!\[[^\]]*\]\(img/([^)]+\.png)\)", text)
    for name in figures:
        made = os.path.join(work, name)
        if not os.path.exists(made):
            print(f"FAILED: the text embeds img/{name}, which no command wrote")
            failures += 1
        elif args.figures_to:
            shutil.copy(made, os.path.join(args.figures_to, name))
    print(f"tutorial: {len(steps)} commands, {len(figures)} figures, {failures} failures ({work})")
    if failures == 0:
        shutil.rmtree(work)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
