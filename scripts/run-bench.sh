#!/usr/bin/env bash
# Benchmarks beside PyTorch (not part of the tests): sets up the peers, builds loom-bench into
# the same build/ the tests use (RelWithDebInfo; the hot kernels get -O3 per file), runs
# `loom bench` and writes bench.json (one JSON object per line).
#
#   scripts/run-bench.sh [JSON_FILE] [loom bench options, e.g. --filter REGEX]
#
# Peers (bench/README.md): "torch", libtorch from a PyTorch 2.x wheel installed once into the
# git-ignored virtual environment .venv-bench/ (pip install torch numpy: large, so only this
# script does it, never the tests), plus its Python side for the train.* rows; and
# "libtorch113", Debian's libtorch-dev.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ROOT/scripts/install-deps.sh" libtorch-dev libopenblas-dev python3-venv

VENV="$ROOT/.venv-bench"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import torch, numpy' 2>/dev/null; then
  echo "run-bench.sh: setting up PyTorch in $VENV (once)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet torch numpy
fi
TORCH_PREFIX="$("$VENV/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"

loom_build "$ROOT/build" -DLOOM_BUILD_TESTS=ON -DLOOM_BENCH_LIBTORCH113=ON \
  -DLOOM_BENCH_TORCH_PREFIX="$TORCH_PREFIX" -- loom-bench

JSON="${1:-$ROOT/bench.json}"
(($#)) && shift
# train.*: the torch column also times bench/python/train_peer.py with this interpreter.
export LOOM_BENCH_PYTHON="$VENV/bin/python"
"$ROOT/build/bin/loom" bench --json "$JSON" "$@"
