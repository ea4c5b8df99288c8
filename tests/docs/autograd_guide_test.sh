#!/usr/bin/env bash
# Follows docs/guide/autograd.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install) and checks what the guide says the
# program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$(cd "$2" && pwd)"
export LOOM_PREFIX="$build/guide-tests/loom-prefix"
[ -e "$LOOM_PREFIX/lib/cmake/Loom/LoomConfig.cmake" ] || { echo "no install in $LOOM_PREFIX"; exit 1; }
work="$build/guide-tests/autograd"
log="$work.log"
bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/autograd.md" "$work" 1 \
  2>&1 | tee "$log"
out="$(cat "$log")"
grep -Eq "^w = (3|2\.99[0-9]*|3\.00[0-9]*), b = (2|1\.99[0-9]*|2\.00[0-9]*)$" <<<"$out"
grep -q "^first 12, second 12$" <<<"$out"
grep -q "^gradcheck passed$" <<<"$out"
grep -q "Trying to backward through the graph a second time" <<<"$out"
rm -rf "$work" "$work.sh" "$log"
