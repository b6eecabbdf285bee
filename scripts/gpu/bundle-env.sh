# shellcheck shell=bash
# Sourced by scripts/gpu-test.sh and scripts/gpu-bench.sh, from the repository root with
# gpu-bundle/ (scripts/gpu-bundle.sh): sets $bundle, the library path for the bundle's binaries on
# the GPU machine's image, and PIPETTE_TRAIN_BINARY (pipette train execs it).
bundle=gpu-bundle
if [ ! -d "$bundle/bin" ]; then
  echo "$(basename "$0"): no $bundle/ (run scripts/gpu-bundle.sh here first)" >&2
  exit 2
fi

# The bundle's own libraries travel gzipped (scripts/gpu-bundle.sh): unpacked once, outside the
# bundle (which stays small enough to travel again), into a folder named by the archive's checksum.
bundle_lib="$PWD/$bundle/lib"
if [ -f "$bundle/lib.tar.gz" ]; then
  bundle_lib="${TMPDIR:-/tmp}/pipette-bundle-lib.$(cksum <"$bundle/lib.tar.gz" | cut -d' ' -f1)"
  if [ ! -d "$bundle_lib/lib" ]; then
    rm -rf "$bundle_lib" "$bundle_lib.part"
    if ! { mkdir -p "$bundle_lib.part" && tar xzf "$bundle/lib.tar.gz" -C "$bundle_lib.part" &&
      mv "$bundle_lib.part" "$bundle_lib"; }; then
      echo "$(basename "$0"): cannot unpack $bundle/lib.tar.gz" >&2
      exit 2
    fi
  fi
  bundle_lib="$bundle_lib/lib"
fi

# The image's CUDA libraries: the toolkit's, else the ones PyTorch's wheels carry.
libdirs="$bundle_lib"
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
  dir=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    if [ -e "$d/$lib" ]; then dir=$d; break; fi
  done
  if [ -z "$dir" ]; then
    found=$(find / -xdev -name "$lib" -not -path '/proc/*' 2>/dev/null | head -1)
    [ -n "$found" ] && dir=$(dirname "$found")
  fi
  [ -n "$dir" ] && libdirs="$libdirs:$dir"
done
export LD_LIBRARY_PATH="$libdirs:${LD_LIBRARY_PATH:-}"
# The image's C++ runtime unless it is missing or older than the build's: then the bundle's.
if ldd "$bundle/bin/cuda_engine_gpu_test" 2>&1 | grep -q 'not found'; then
  export LD_LIBRARY_PATH="$PWD/$bundle/lib-fallback:$LD_LIBRARY_PATH"
fi
export PIPETTE_TRAIN_BINARY="$PWD/$bundle/bin/pipette-train"
