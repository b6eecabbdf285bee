#!/usr/bin/env python3
"""What travels to a GPU machine, against its limit: the git tree plus the carried bundle.

A device call copies the working tree (tracked files and untracked ones git does not ignore:
`git ls-files -co --exclude-standard`) and the carried ignored paths (gpu-bundle/), 64 MiB in
all. This sums both, prints a breakdown (the tree's largest top-level entries, the bundle's
entries) and fails over the limit (default 60 MiB: a margin under the 64).

  travel_size.py [--repo DIR] [--bundle DIR] [--limit-mib N]

--repo defaults to the repository holding this script, --bundle to REPO/gpu-bundle (a missing
bundle counts 0). Exit status: 0 within the limit, 1 over it, 2 when git cannot list the tree.
"""
import argparse
import os
import subprocess
import sys

MIB = 1 << 20
DEFAULT_LIMIT_MIB = 60


def tree_files(repo):
    """{path relative to repo: size} of what git would send; None when git cannot list it."""
    try:
        listing = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "-z"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    sizes = {}
    for name in listing.stdout.decode(errors="replace").split("\0"):
        path = os.path.join(repo, name)
        # Deleted tracked files send nothing; a submodule (a folder here) travels without its files.
        if name and os.path.lexists(path) and not os.path.isdir(path):
            sizes[name] = os.lstat(path).st_size
    return sizes


def folder_files(folder):
    """{path relative to folder: size} of every file under folder (symlinks as themselves)."""
    sizes = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            sizes[os.path.relpath(path, folder)] = os.lstat(path).st_size
    return sizes


def by_top_entry(sizes):
    """{first path component: summed size}."""
    totals = {}
    for name, size in sizes.items():
        top = name.split("/", 1)[0]
        totals[top] = totals.get(top, 0) + size
    return totals


def mib(n):
    return "%.1f MiB" % (n / MIB)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--repo", default=here)
    parser.add_argument("--bundle", help="default: REPO/gpu-bundle")
    parser.add_argument("--limit-mib", type=float, default=DEFAULT_LIMIT_MIB)
    args = parser.parse_args(argv)
    repo = os.path.abspath(args.repo)
    bundle = os.path.abspath(args.bundle or os.path.join(repo, "gpu-bundle"))
    tree = tree_files(repo)
    if tree is None:
        print("travel_size: git cannot list the files of %s" % repo, file=sys.stderr)
        return 2
    # A bundle inside the tree that git does not ignore would be listed twice.
    inside = os.path.relpath(bundle, repo)
    if not inside.startswith(".."):
        tree = {n: s for n, s in tree.items() if not (n + "/").startswith(inside.rstrip("/") + "/")}
    carried = folder_files(bundle) if os.path.isdir(bundle) else {}
    tree_total, bundle_total = sum(tree.values()), sum(carried.values())
    total, limit = tree_total + bundle_total, args.limit_mib * MIB

    print("# travel size: the tree (git ls-files -co --exclude-standard) + the bundle; limit %s"
          % mib(limit))
    print("%-10s %6d files %12s   largest: %s" % (
        "tree", len(tree), mib(tree_total), ", ".join(
            "%s %s" % (n, mib(s)) for n, s in
            sorted(by_top_entry(tree).items(), key=lambda kv: -kv[1])[:5]) or "-"))
    print("%-10s %6d files %12s   %s" % (
        "bundle", len(carried), mib(bundle_total), ", ".join(
            "%s %s" % (n, mib(s)) for n, s in
            sorted(by_top_entry(carried).items(), key=lambda kv: -kv[1])) or "(none: %s)" % bundle))
    print("%-10s %6s       %12s   of %s" % ("total", "", mib(total), mib(limit)))
    if total > limit:
        print("travel_size: %s is over the %s a GPU machine takes (tree %s + bundle %s)" %
              (mib(total), mib(limit), mib(tree_total), mib(bundle_total)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
