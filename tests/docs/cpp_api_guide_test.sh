#!/usr/bin/env bash
# Follows docs/guide/cpp-api.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install): builds the program with CMake and
# with pkg-config and checks what the guide says it prints. Run by ctest with the source and
# build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" cpp-api.md cpp_api 1
# The program runs twice (CMake, pkg-config): the same lines each time.
[ "$(grep -c "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x3)" <<<"$out")" = 2 ]
[ "$(grep -c "^x\[1:, \[0, 3\]\] = tensor(\[\[ 4.,  7.\]," <<<"$out")" = 2 ]
[ "$(grep -c "^features \[2, 4, 3, 3\], loss " <<<"$out")" = 2 ]
# Built against the install: its libraries, by their whole-version soname, not the build tree's.
needed="$(readelf -d "$work/first/build/first" | grep -E 'NEEDED|RUNPATH')"
grep -q 'libloom_core.so.[0-9]*\.[0-9]*\.[0-9]*\]' <<<"$needed"
grep -q "$LOOM_PREFIX/lib" <<<"$needed"
if grep -q "$(cd "$2" && pwd)/lib" <<<"$needed"; then echo "the program points into the build tree"; exit 1; fi
done_with_guide
