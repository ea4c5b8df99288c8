#!/usr/bin/env bash
# Follows docs/guide/cpp-api.md verbatim (follow_guide.sh) and checks what the guide says
# the program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
out="$(bash "$(dirname "$0")/follow_guide.sh" "$1" "$2" "$1/docs/guide/cpp-api.md" first 3)"
echo "$out"
grep -q "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x3)" <<<"$out"
grep -q "^x\[1:, \[0, 3\]\] = tensor(\[\[ 4.,  7.\]," <<<"$out"
grep -q "^features \[2, 4, 3, 3\], loss " <<<"$out"
