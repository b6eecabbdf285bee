#!/usr/bin/env bash
# Installs every Debian package pipette needs (idempotent). Run as root, or as a user with sudo.
# Packages already present are not reinstalled; apt-get update runs only when something is missing.
#   bash scripts/install-deps.sh [--browser]
# --browser also installs Debian's headless Chromium, which only the test of `pipette report`'s page
# uses (ReportBrowser.*: skipped, saying so, without it); scripts/test.sh runs it after the rest,
# and carries on without the browser where it cannot be installed.
set -euo pipefail

packages=(
  # toolchain
  cmake g++ make pkg-config git clang-format python3
  # core libraries
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libboost-graph-dev
  # experiment store and plots
  libsqlite3-dev sqlite3 gnuplot-nox
  # imported traces (pipette import pytorch: gzip)
  zlib1g-dev
  # engines: SimGrid (simulated cluster), OpenBLAS + OpenMPI (CPU engine)
  libsimgrid-dev libopenblas-dev openmpi-bin libopenmpi-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # fuzzing (scripts/fuzz.sh): clang and libFuzzer (libclang-rt-14-dev is only recommended by
  # clang, so named here), llvm-symbolizer for readable sanitizer reports. g++ brings ASan/UBSan.
  clang libclang-rt-14-dev llvm-14
)
if [ "${1:-}" = "--browser" ]; then
  packages+=(chromium-headless-shell)
elif [ $# -gt 0 ]; then
  echo "install-deps: unknown option '$1' (the one option is --browser)" >&2
  exit 2
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
