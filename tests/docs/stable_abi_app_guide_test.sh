#!/usr/bin/env bash
# Follows docs/guide/stable-abi-app.md verbatim (run_guide.sh): installs the build into a
# prefix under the build folder, builds the C app with pkg-config and with CMake (Loom::loom)
# and the C++ one, and checks what the guide says they print and that the app links
# libloom.so alone. Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
work="$build/guide-tests/stable_abi_app"
log="$work.log"
mkdir -p "$(dirname "$log")"  # tee opens the log before the guide runner makes the folder
bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/stable-abi-app.md" "$work" \
  2>&1 | tee "$log"
out="$(cat "$log")"
# The C program runs twice (pkg-config, CMake), the C++ one once.
[ "$(grep -c '^Loom [0-9.]*, API version 2$' <<<"$out")" = 2 ]
[ "$(grep -c '^w = 2.000, b = 1.000, loss < 1e-6$' <<<"$out")" = 2 ]
[ "$(grep -c '^mm: code 2: mm: mat1 and mat2 shapes cannot be multiplied (2x4 and 2x4)$' <<<"$out")" = 2 ]
[ "$(grep -c "^OpFind: code 6: .*'myops::nothing'" <<<"$out")" = 2 ]
grep -Eq '^w = (2|1\.99[0-9]*|2\.00[0-9]*), b = (1|0\.99[0-9]*|1\.00[0-9]*)$' <<<"$out"
grep -q '^error: mm: mat1 and mat2 shapes cannot be multiplied (2x4 and 2x4)$' <<<"$out"
# What section 4 says of the app: it needs libloom.so and nothing of Loom's C++ side.
needed="$(readelf -d "$work/fit-pkgconfig" | grep NEEDED)"
grep -q 'libloom.so.1' <<<"$needed"
if grep -q 'libloom_core' <<<"$needed"; then echo "the app links libloom_core"; exit 1; fi
rm -rf "$work" "$work.sh" "$log"
