#!/usr/bin/env bash
# Benchmarks beside libtorch (not part of the tests): installs libtorch-dev, builds
# Release, runs `loom bench` and writes bench.json (one JSON object per line).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ROOT/scripts/install-deps.sh" libtorch-dev libopenblas-dev
loom_build "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_TESTS=OFF
"$ROOT/build-release/bin/loom" bench --json "${1:-$ROOT/bench.json}"
