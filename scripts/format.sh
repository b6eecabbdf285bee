#!/usr/bin/env bash
# Formats the C++ sources with clang-format (the root .clang-format). Only C++: CMake files and
# scripts are not clang-format's language and come out mangled. `--check` changes nothing and
# exits 1 listing the files that are not formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  unformatted=$(clang-format --dry-run "${files[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: warning' | cut -d: -f1 | sort -u || true)
  if [ -n "$unformatted" ]; then
    echo "not formatted (run scripts/format.sh):"
    echo "$unformatted"
    exit 1
  fi
  echo "format: ${#files[@]} files formatted"
else
  clang-format -i "${files[@]}"
fi
