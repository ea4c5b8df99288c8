#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every GoogleTest suite
# through ctest, the ONNX node tests (`loom conformance onnx`), then the suites again
# under ASan+UBSan and the registration race under ThreadSanitizer, and the API docs
# with warnings shown.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ROOT/scripts/install-deps.sh"

echo "== build and test (RelWithDebInfo)"
loom_build "$ROOT/build" -DLOOM_BUILD_TESTS=ON
ctest --test-dir "$ROOT/build" -j "$JOBS" --output-on-failure

echo "== ONNX conformance (Debian's libonnx-testdata node tests)"
"$ROOT/build/bin/loom" conformance onnx > "$ROOT/build/onnx-conformance.txt" || {
  grep '^FAIL' "$ROOT/build/onnx-conformance.txt"
  tail -1 "$ROOT/build/onnx-conformance.txt"
  exit 1
}
tail -1 "$ROOT/build/onnx-conformance.txt"
if [ -f "$ROOT/build/lib/loom/plugins/libloom_cpu_onednn.so" ]; then
  echo "== ONNX conformance on the oneDNN CPU provider"
  "$ROOT/build/bin/loom" conformance onnx --provider onednn > "$ROOT/build/onnx-conformance-onednn.txt" || {
    grep '^FAIL' "$ROOT/build/onnx-conformance-onednn.txt"
    tail -1 "$ROOT/build/onnx-conformance-onednn.txt"
    exit 1
  }
  tail -1 "$ROOT/build/onnx-conformance-onednn.txt"
fi

bash "$ROOT/tests/sanitizers.sh"

if command -v doxygen >/dev/null; then
  echo "== API docs (doxygen; warnings are printed, not fatal)"
  cmake --build "$ROOT/build" --target docs
fi
