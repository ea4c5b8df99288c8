#!/usr/bin/env bash
# Installs the Debian 12 packages Loom builds and tests with (libonnx-testdata: the ONNX
# node tests `loom conformance onnx` runs); installs only what is
# missing, so running it twice is harmless. Pass extra package names as arguments
# (run-bench.sh adds libtorch-dev).
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libboost-dev libabsl-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev
  libdnnl-dev ocl-icd-opencl-dev
  dataset-fashion-mnist
  doxygen
  libonnx-testdata
  python3-sklearn
  abigail-tools
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
