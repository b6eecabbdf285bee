# shellcheck shell=bash disable=SC2317  # `exit` runs when this file is run instead of sourced
# Sourced by scripts/gpu-run.sh, from the repository root with the bundle of scripts/gpu-bundle.sh:
# sets $bundle (the bundle's absolute path), the library path for the bundle's binaries on the GPU
# machine's image, and PIPETTE_TRAIN_BINARY (pipette train execs it). Returns 2 (exits 2 when not
# sourced) without the bundle or when its libraries cannot be unpacked.
#   PIPETTE_BUNDLE   the bundle folder (default gpu-bundle)
#   PIPETTE_PYTHON   the python whose wheels may hold the CUDA libraries (default python3, then
#                    python)
bundle=${PIPETTE_BUNDLE:-gpu-bundle}
if [ ! -d "$bundle/bin" ]; then
  echo "bundle-env: no $bundle/bin (run scripts/gpu-bundle.sh here first)" >&2
  return 2 2>/dev/null || exit 2
fi
bundle=$(cd "$bundle" && pwd)

# The bundle's own libraries travel gzipped (scripts/gpu-bundle.sh): unpacked once, outside the
# bundle (which stays small enough to travel again), into a folder named by the archive's checksum.
bundle_lib="$bundle/lib"
if [ -f "$bundle/lib.tar.gz" ]; then
  bundle_lib="${TMPDIR:-/tmp}/pipette-bundle-lib.$(cksum <"$bundle/lib.tar.gz" | cut -d' ' -f1)"
  if [ ! -d "$bundle_lib/lib" ]; then
    rm -rf "$bundle_lib" "$bundle_lib.part"
    if ! { mkdir -p "$bundle_lib.part" && tar xzf "$bundle/lib.tar.gz" -C "$bundle_lib.part" &&
      mv "$bundle_lib.part" "$bundle_lib"; }; then
      echo "bundle-env: cannot unpack $bundle/lib.tar.gz" >&2
      return 2 2>/dev/null || exit 2
    fi
  fi
  bundle_lib="$bundle_lib/lib"
fi

# The CUDA libraries the binaries load, from the image. On it NCCL, cuDNN and the CUDA 13 runtime
# come with PyTorch's wheels (site-packages/nvidia/<name>/lib; the CUDA 13 wheels use
# nvidia/cu13/lib): every nvidia/*/lib of the first python that has the `nvidia` namespace package
# comes first; then the toolkit's folders for what they lack; and only for what is still missing a
# search bounded in time and depth (a search of / took minutes on the image).
cuda_libs=(libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2 libcudnn.so.9)
wheel_dirs=""
for py in "${PIPETTE_PYTHON:-python3}" python; do
  command -v "$py" >/dev/null 2>&1 || continue
  wheel_dirs=$("$py" -c 'import glob, os, nvidia
for p in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(p, "*", "lib"))):
        print(d)' 2>/dev/null </dev/null)
  [ -n "$wheel_dirs" ] && break
done
cuda_dirs=()
while read -r d; do
  [ -n "$d" ] && cuda_dirs+=("$d")
done <<<"$wheel_dirs"
missing=()
for lib in "${cuda_libs[@]}"; do
  found=""
  for d in "${cuda_dirs[@]}"; do
    if [ -e "$d/$lib" ]; then found=$d; break; fi
  done
  if [ -z "$found" ]; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib \
      /usr/lib/x86_64-linux-gnu; do
      if [ -e "$d/$lib" ]; then found=$d; break; fi
    done
    [ -n "$found" ] && cuda_dirs+=("$found")
  fi
  [ -n "$found" ] || missing+=("$lib")
done
if [ "${#missing[@]}" -gt 0 ]; then
  names=()
  for lib in "${missing[@]}"; do names+=(-o -name "$lib"); done
  while read -r f; do
    [ -n "$f" ] && cuda_dirs+=("$(dirname "$f")")
  done < <(timeout 20 find /usr /opt /root /home -maxdepth 7 \( "${names[@]:1}" \) 2>/dev/null)
fi
# Each folder once, in that order, then the bundle's libraries, then what the caller had.
IFS=: read -ra caller_dirs <<<"${LD_LIBRARY_PATH:-}"
libdirs=""
for d in "${cuda_dirs[@]}" "$bundle_lib" "${caller_dirs[@]}"; do
  [ -n "$d" ] || continue
  case ":$libdirs:" in *":$d:"*) ;; *) libdirs="${libdirs:+$libdirs:}$d" ;; esac
done
export LD_LIBRARY_PATH="$libdirs"
# The image's C++ runtime unless it is missing or older than the build's: then the bundle's.
if [ -e "$bundle/bin/cuda_engine_gpu_test" ] && ldd "$bundle/bin/cuda_engine_gpu_test" 2>&1 |
  grep -Eq "GLIBCXX|CXXABI|(libstdc\+\+|libgcc_s)[^ ]* => not found"; then
  export LD_LIBRARY_PATH="$bundle/lib-fallback:$LD_LIBRARY_PATH"
fi
export PIPETTE_TRAIN_BINARY="$bundle/bin/pipette-train"
unset py d f lib found missing names wheel_dirs libdirs cuda_dirs caller_dirs cuda_libs
