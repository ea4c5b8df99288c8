#!/usr/bin/env bash
# Installs the Debian 12 packages Loom builds and tests with (libonnx-testdata: the ONNX
# node tests `loom conformance onnx` runs); installs only what is
# missing, so running it twice is harmless. Pass extra package names as arguments
# (run-bench.sh adds libtorch-dev).
#
# Then Intel MKL's BLAS for the cpu_mkl provider (docs/design/cpu-providers.md), from the
# `mkl` and `mkl-include` wheels, into the git-ignored .deps/mkl/{lib,include} (once per
# version; only the GNU-OpenMP runtime libraries and the CBLAS headers are kept, ~530 MB).
# A ~222 MB download (seconds), skipped with LOOM_WITH_MKL=0; CMake builds the plugin when
# it finds MKL there.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libboost-dev libabsl-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev
  libdnnl-dev ocl-icd-opencl-dev
  dataset-fashion-mnist
  doxygen
  libonnx-testdata
  python3-sklearn python3-pip
  abigail-tools
  protobuf-compiler libprotobuf-dev libpng-dev python3-venv
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "loom: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- Intel MKL (optional provider cpu_mkl) ----
mkl_version=2026.2.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkl_dir="$root/.deps/mkl"
if [ "${LOOM_WITH_MKL:-1}" = 1 ] && [ "$(cat "$mkl_dir/VERSION" 2>/dev/null)" != "$mkl_version" ]; then
  echo "loom: installing MKL $mkl_version into .deps/mkl (a ~222 MB download)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download -q --no-deps --only-binary=:all: --dest "$tmp" \
    "mkl==$mkl_version" "mkl-include==$mkl_version"
  rm -rf "$mkl_dir"
  mkdir -p "$mkl_dir/lib" "$mkl_dir/include"
  # The LP64 interface, the GNU OpenMP threading layer (Loom's OpenMP runtime, one thread
  # pool), the core and the per-CPU kernels the core opens at run time.
  python3 - "$tmp" "$mkl_dir" <<'PY'
import glob, os, re, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
libs = re.compile(r"lib/libmkl_(core|intel_lp64|gnu_thread|def|mc3|avx2|avx512|avx10|"
                  r"vml_(def|mc3|avx2|avx512|avx10|cmpt))\.so\.\d+$")
heads = re.compile(r"include/mkl_(cblas|cblas_64|types|service|version)\.h$")
for wheel in glob.glob(os.path.join(tmp, "*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            sub = "lib" if libs.search(name) else "include" if heads.search(name) else None
            if sub:
                with z.open(name) as src, open(os.path.join(dest, sub, os.path.basename(name)), "wb") as out:
                    out.write(src.read())
PY
  echo "$mkl_version" > "$mkl_dir/VERSION"
fi
