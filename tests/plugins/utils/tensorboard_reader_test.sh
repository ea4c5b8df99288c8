#!/usr/bin/env bash
# TensorBoard's own reader (PyPI's tensorboard, EventAccumulator) on SummaryWriter's files:
# tensorboard_writer (argv[1]) writes every kind of summary, tensorboard_reader_check.py
# compares what TensorBoard reads with the values the program wrote.
# usage: tensorboard_reader_test.sh WRITER BUILD_DIR
set -euo pipefail
writer="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/tensorboard_venv.sh" "$2"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$writer" "$out/run"
"$TB_PYTHON" "$here/tensorboard_reader_check.py" writer "$out/run"
