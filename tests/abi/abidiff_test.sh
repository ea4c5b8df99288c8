#!/usr/bin/env bash
# abidiff (Debian's abigail-tools) of the current libloom.so against the ABI of the first
# release, tests/abi/libloom.v1.abi.xml. Exits 77 (ctest: skipped) without abidiff.
#     abidiff_test.sh <libloom.so> <baseline.xml> <suppressions>
#
# Appending entries to LoomApi is allowed (Note [Stable ABI rules]): libloom.v1.abignore
# suppresses exactly that. Everything else abidiff reports (a changed function, a changed or
# reordered member, a removed symbol) fails. The baseline is regenerated only when a version
# is released, from that release's build (RelWithDebInfo: abidw needs the DWARF):
#     abidw --no-corpus-path --no-comp-dir-path --no-show-locs \
#       --out-file tests/abi/libloom.v1.abi.xml <build>/lib/libloom.so
set -euo pipefail
lib=$1 baseline=$2 suppressions=$3

if ! command -v abidiff >/dev/null; then
  echo "SKIP: abidiff not found (Debian package abigail-tools)"
  exit 77
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
  echo "SKIP: $lib has no debug info (abidiff compares types from DWARF; build RelWithDebInfo)"
  exit 77
fi
status=0
abidiff --no-show-locs --suppressions "$suppressions" "$baseline" "$lib" || status=$?
# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
if [ "$status" -ne 0 ]; then
  echo "FAIL: abidiff exited with $status (1 error, 2 usage, 4 ABI change, 8 incompatible change)" >&2
  exit 1
fi
echo "ok: no ABI change against the v1 baseline beyond appended LoomApi entries"
