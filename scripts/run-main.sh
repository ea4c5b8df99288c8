#!/usr/bin/env bash
# The main job: install what is missing (Debian's dataset-fashion-mnist among it), build,
# then `loom info` and `loom train`: the Fashion-MNIST CNN for 2 epochs, whose last line is
# RESULT model=cnn epochs=2 test_accuracy=... train_seconds=... (run folder: runs/main).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ROOT/scripts/install-deps.sh"
loom_build "$ROOT/build" -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCH=OFF

"$ROOT/build/bin/loom" info
echo
"$ROOT/build/bin/loom" train --model cnn --epochs 2 --out "$ROOT/runs/main" "$@"
