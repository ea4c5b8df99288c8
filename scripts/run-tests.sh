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
# A failing test's output scrolls by among 1,700 others; CI keeps only the end of the log, so the
# failed tests run once more, alone, and print last (the run still fails).
ctest --test-dir "$ROOT/build" -j "$JOBS" --output-on-failure || {
  echo "== the failed tests again, alone, with their output"
  ctest --test-dir "$ROOT/build" --rerun-failed --output-on-failure 2>&1 | tail -n 150 || true
  exit 1
}

echo "== ONNX conformance (Debian's libonnx-testdata node tests)"
"$ROOT/build/bin/loom" conformance onnx > "$ROOT/build/onnx-conformance.txt" || {
  grep '^FAIL' "$ROOT/build/onnx-conformance.txt"
  tail -1 "$ROOT/build/onnx-conformance.txt"
  exit 1
}
tail -1 "$ROOT/build/onnx-conformance.txt"
# Each further CPU provider that was built (oneDNN; MKL, which takes the matmul family).
for provider in onednn mkl; do
  [ -f "$ROOT/build/lib/loom/plugins/libloom_cpu_$provider.so" ] || continue
  echo "== ONNX conformance on the $provider CPU provider"
  "$ROOT/build/bin/loom" conformance onnx --provider "$provider" \
    > "$ROOT/build/onnx-conformance-$provider.txt" || {
    grep '^FAIL' "$ROOT/build/onnx-conformance-$provider.txt"
    tail -1 "$ROOT/build/onnx-conformance-$provider.txt"
    exit 1
  }
  tail -1 "$ROOT/build/onnx-conformance-$provider.txt"
done

bash "$ROOT/tests/sanitizers.sh"

if command -v doxygen >/dev/null; then
  echo "== API docs (doxygen; warnings are printed, not fatal)"
  cmake --build "$ROOT/build" --target docs
fi
