#!/usr/bin/env bash
# Packs what the GPU machines need to run the CUDA engine's tests and benchmark into gpu-bundle/
# (ignored by git; at most 64 MiB): the gpu test binaries, the GPU benchmarks (cuda_engine_benchmark;
# cuda_gemm_benchmark when this build has it), pipette-train and pipette (simulate --costs-from and
# compare, for scripts/gpu-bench.sh's fidelity check), stripped, plus every non-CUDA shared library
# they load (resolved with ldd: MPI, OpenBLAS, SQLite, SimGrid, fmt, ...). The CUDA libraries (cudart, cuBLAS/cuBLASLt, NCCL) and the driver come from
# the GPU machine's image, which has no Debian packages and no network. scripts/gpu-test.sh and
# scripts/gpu-bench.sh run the bundle there.
#
#   bash scripts/gpu-bundle.sh        builds what is missing (the build needs CUDA: nvcc in
#                                     /usr/local/cuda), then packs
#
# The gpu tests and the benchmark link no MPI (virtual ranks need none); pipette-train does, and
# the image has no MPI launcher, so the NCCL path (two GPUs, mpirun) is not exercised from here.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
targets=(cuda_engine_gpu_test kernels_gpu_test cuda_engine_benchmark pipette-train pipette)
targets+=(gemm_gpu_test)  # the GEMM path (backends/cuda/README.md)

if [ ! -f build/CMakeCache.txt ]; then bash scripts/build.sh >/dev/null; fi
if ! cmake --build build --target help | grep kernels_gpu_test >/dev/null; then
  echo "gpu-bundle: this build has no CUDA engine (pipette --version says why)" >&2
  exit 1
fi
# Optional target: packed when this build defines it.
if cmake --build build --target help | grep -qw cuda_gemm_benchmark; then
  targets+=(cuda_gemm_benchmark)
fi
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
size=$(du -sm "$bundle" | cut -f1)
echo "gpu-bundle: $(find "$bundle/bin" -type f | wc -l) binaries, $nlibs libraries (lib.tar.gz), ${size} MiB in $bundle/"
if [ "$size" -gt 64 ]; then
  echo "gpu-bundle: ${size} MiB is over the 64 MiB a GPU machine takes" >&2
  exit 1
fi
