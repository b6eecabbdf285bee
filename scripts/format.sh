#!/usr/bin/env bash
# Formats the C++ sources with clang-format (the root .clang-format). Only C++: CMake files and
# scripts are not clang-format's language and come out mangled. `--check` changes nothing and
# exits 1 listing the files that are not formatted (or when clang-format cannot check them).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format: clang-format not found" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" != "--check" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# --Werror: any file that would change makes clang-format exit non-zero, as does any error.
if ! report=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "not formatted (run scripts/format.sh):"
  grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' <<<"$report" | cut -d: -f1 | sort -u
  exit 1
fi
echo "format: ${#files[@]} files formatted"
