#!/usr/bin/env bash
# The main job: install what is missing, build, then run `loom info` and the demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ROOT/scripts/install-deps.sh"
loom_build "$ROOT/build" -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCH=OFF

"$ROOT/build/bin/loom" info
echo
"$ROOT/build/bin/loom-hello"
