#!/usr/bin/env bash
# abidiff (Debian's abigail-tools) of the stable ABI against version 1, the first release:
#   1. the types: abi_probe.c built against the current header, against abi_probe.v1.abi.xml
#      (the same probe built against the frozen header). Every type of the header is reachable
#      from the probe's one function, so a changed entry signature, struct member or callback
#      type is reported;
#   2. the library: libloom.so against libloom.v1.abi.xml (its symbols, versions and, when the
#      build carries full DWARF for it, its interface types).
# Appending entries to LoomApi is allowed (Note [Stable ABI rules]): the probe does not reach
# LoomApi itself (see abi_probe.c), and libloom.v1.abignore suppresses changes of LoomApi in
# the library part (broadly: libabigail cannot tell an append from a change; the probe checks
# the v1 entries one by one). Anything else abidiff reports fails. Exits 77 (ctest: skipped)
# without abidiff.
#     abidiff_test.sh <tests/abi source dir> <abi_probe_current.so> <libloom.so>
#
# The baselines change only when a version is released, made from that release's build:
#     abidw --no-corpus-path --no-comp-dir-path --no-show-locs \
#       --out-file tests/abi/abi_probe.v1.abi.xml <build>/lib/libabi_probe_frozen.so
#     abidw --no-corpus-path --no-comp-dir-path --no-show-locs \
#       --out-file tests/abi/libloom.v1.abi.xml <build>/lib/libloom.so
# then strip the source folder from the path='...' attributes of libloom.v1.abi.xml (the probe
# is built with -fdebug-prefix-map and needs nothing).
set -euo pipefail
src=$1 probe=$2 lib=$3
suppressions="$src/libloom.v1.abignore"

if ! command -v abidiff >/dev/null; then
  echo "SKIP: abidiff not found (Debian package abigail-tools)"
  exit 77
fi

# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
compare() {
  local what=$1 baseline=$2 current=$3 status=0
  shift 3
  abidiff --no-show-locs "$@" "$baseline" "$current" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "FAIL: $what differs from version 1: abidiff exited with $status" \
      "(1 error, 2 usage, 4 ABI change, 8 incompatible change)" >&2
    exit 1
  fi
  echo "ok: $what: no change against version 1"
}

# (The two probes are two libraries of one build: their SONAMEs differ on purpose.)
compare "the types of loom/capi.h" "$src/abi_probe.v1.abi.xml" "$probe" --ignore-soname

# libloom.so is C++ built like the rest of Loom, often with line tables only (-g1), which
# describe no types: then its functions read `void f()` to abidw. Compare it only when it and
# the baseline agree on whether the types are there (the probe above checks them anyway).
typed() { grep -q "name='LoomApi'" "$1"; }
current_xml="$(mktemp)"
trap 'rm -f "$current_xml"' EXIT
abidw --no-corpus-path --no-show-locs --out-file "$current_xml" "$lib"
if [ "$(typed "$current_xml" && echo yes || echo no)" != \
     "$(typed "$src/libloom.v1.abi.xml" && echo yes || echo no)" ]; then
  echo "SKIP (library part): $lib and libloom.v1.abi.xml differ in debug info (one has the" \
    "interface types, the other not); the types were compared through the probe"
  exit 0
fi
compare "libloom.so" "$src/libloom.v1.abi.xml" "$lib" --suppressions "$suppressions"
