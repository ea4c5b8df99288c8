#!/usr/bin/env bash
# Follows docs/guide/autograd.md verbatim (follow_guide.sh) and checks what the guide says
# the program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
out="$(bash "$(dirname "$0")/follow_guide.sh" "$1" "$2" "$1/docs/guide/autograd.md" train 2)"
echo "$out"
grep -Eq "^w = (3|2\.99[0-9]*|3\.00[0-9]*), b = (2|1\.99[0-9]*|2\.00[0-9]*)$" <<<"$out"
grep -q "^first 12, second 12$" <<<"$out"
grep -q "^gradcheck passed$" <<<"$out"
grep -q "Trying to backward through the graph a second time" <<<"$out"
