#!/usr/bin/env bash
# Packs what the GPU machines need to run the CUDA engine's tests and benchmarks into gpu-bundle/
# (ignored by git, carried to the device): the gpu test binaries, the GPU benchmarks
# (cuda_engine_benchmark; cuda_gemm_benchmark when this build has it), pipette-train and pipette
# (simulate --costs-from and compare, for the fidelity check), stripped, plus every non-CUDA shared
# library they load (resolved with ldd: MPI, OpenBLAS, SQLite, SimGrid, fmt, ...). The CUDA
# libraries (cudart, cuBLAS/cuBLASLt, NCCL) and the driver come from the GPU machine's image, which
# has no Debian packages and no network. scripts/gpu-run.sh runs the bundle there. What travels is
# the tree and the bundle together, at most 64 MiB: scripts/gpu/travel_size.py checks both against
# 60 MiB.
#
#   bash scripts/gpu-bundle.sh        builds what is missing (the build needs CUDA: nvcc in
#                                     /usr/local/cuda), then packs
#
# The gpu tests and the benchmark link no MPI (virtual ranks need none); pipette-train does, and
# the image has no MPI launcher, so the NCCL path (two GPUs, mpirun) is not exercised from here.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
targets=(cuda_engine_gpu_test kernels_gpu_test gemm_gpu_test pipette-train pipette)
targets+=(cuda_engine_benchmark cuda_gemm_benchmark)  # scripts/gpu-run.sh's second call

if [ ! -f build/CMakeCache.txt ]; then bash scripts/build.sh >/dev/null; fi
# Read whole before grep looks at it: `cmake ... | grep -q` under pipefail fails when grep stops
# reading early (cmake gets SIGPIPE), which once left cuda_gemm_benchmark out of every bundle.
help=$(cmake --build build --target help)
for t in "${targets[@]}"; do
  if ! grep -qw -- "$t" <<<"$help"; then
    echo "gpu-bundle: this build has no $t (the CUDA engine and the benchmarks must be in it;" \
      "pipette --version says whether CUDA is)" >&2
    exit 1
  fi
done
cmake --build build -j "${JOBS:-$(nproc)}" --target "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/lib-fallback"
for t in "${targets[@]}"; do
  bin=$(find build -type f -name "$t" -perm -u+x | head -1)
  [ -n "$bin" ] || { echo "gpu-bundle: $t was not built (is the CUDA engine in this build?)" >&2; exit 1; }
  strip --strip-debug -o "$bundle/bin/$t" "$bin"
done

# Libraries the image provides (CUDA, the driver) or every Linux has (glibc's own).
provided='^(linux-vdso|ld-linux|libc\.|libm\.|libmvec|libpthread|libdl\.|librt\.|libcuda\.|libcudart|libcublas|libcublasLt|libnccl|libnvrtc|libnvJitLink|libcudnn)'
# The C++ runtime the image has is used unless it is missing or too old (scripts/gpu/bundle-env.sh decides):
# ours needs glibc 2.36, which older images lack.
fallback='^(libstdc\+\+|libgcc_s)'
for t in "${targets[@]}"; do
  ldd "$bundle/bin/$t" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if [[ "$name" =~ $provided ]]; then continue; fi
    dir=lib
    if [[ "$name" =~ $fallback ]]; then dir=lib-fallback; fi
    [ -f "$bundle/$dir/$name" ] || cp -L "$path" "$bundle/$dir/$name"
  done
done
strip --strip-unneeded "$bundle"/lib*/*.so* 2>/dev/null || true
# The libraries travel gzipped (SimGrid's ns-3 and OpenBLAS alone are over 60 MiB unpacked);
# scripts/gpu/bundle-env.sh unpacks them on the GPU machine before the first binary runs.
nlibs=$(find "$bundle/lib" -type f | wc -l)
tar czf "$bundle/lib.tar.gz" -C "$bundle" lib
rm -rf "${bundle:?}/lib"
git rev-parse --short=12 HEAD >"$bundle/COMMIT" 2>/dev/null || echo unknown >"$bundle/COMMIT"
echo "gpu-bundle: $(find "$bundle/bin" -type f | wc -l) binaries, $nlibs libraries" \
  "(lib.tar.gz) in $bundle/"
# The tree travels with the bundle: both count against the device's limit.
python3 scripts/gpu/travel_size.py --bundle "$bundle"
