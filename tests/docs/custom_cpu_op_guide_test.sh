#!/usr/bin/env bash
# Follows docs/guide/custom-cpu-op.md verbatim (run_guide.sh): installs the build into a prefix
# under the build folder, builds the extension, its op-check program and the app against it
# with find_package(Loom), and checks what the guide says: `loom plugin check` accepts the
# extension, every op-check passes, the app's values and gradients are x*sigmoid(1.5x) and its
# derivative, and an int64 input is refused. Run by ctest with the source and build folders.
set -euo pipefail
src="$1" build="$2"
work="$build/guide-tests/custom_cpu_op"
log="$work.log"
mkdir -p "$(dirname "$log")"  # tee opens the log before the guide runner makes the folder
bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/custom-cpu-op.md" "$work" \
  2>&1 | tee "$log"
out="$(cat "$log")"
grep -q "^OK plugin 'guide_swish' 0.1.0 can be loaded$" <<<"$out"
grep -q "^    def guide::swish(Tensor x, float beta=1.) -> Tensor$" <<<"$out"
grep -q "^    impl guide::swish for CPU " <<<"$out"
grep -q "^    impl guide::swish for Autograd " <<<"$out"
grep -q "^opcheck guide::swish: \([0-9]*\) of \1 checks passed$" <<<"$out"
! grep -q "^  FAIL " <<<"$out"
grep -q "PASS gradcheck" <<<"$out"
# y = x * sigmoid(1.5 x) and dy/dx at x = -2, -0.5, 0, 1, 3 (float64 values, 4 digits).
awk '/^y    =/ { y = $0 } /^dy\/dx =/ { g = $0 } END {
  split("-0.0948517 -0.160411 0 0.817574 2.96704", ey); split("-0.0881041 0.1574 0.5 1.04129 1.03791", eg)
  n = split(y, gy); m = split(g, gg); if (n != 7 || m != 7) exit 1
  for (i = 1; i <= 5; ++i) {
    if ((gy[i + 2] - ey[i]) ^ 2 > 1e-8 || (gg[i + 2] - eg[i]) ^ 2 > 1e-8) exit 1
  }
}' <<<"$out"
grep -q "^error: guide::swish: expected x of dtype float32 or float64, got int64$" <<<"$out"
rm -rf "$work" "$work.sh" "$log"
