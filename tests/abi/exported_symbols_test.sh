#!/usr/bin/env bash
# libloom.so exports the C entry points of loom/capi.h and nothing else: no C++ symbol of
# Loom or of a static dependency leaks into the stable ABI (extension_sdk/capi/libloom.map).
#     exported_symbols_test.sh <libloom.so>
set -euo pipefail
lib=$1

# `nm -D --defined-only` lists the defined dynamic symbols, with their version ("@@LOOM_1"),
# and the version node itself as an absolute symbol.
listing="$(nm -D --defined-only "$lib")"
echo "$listing"
got="$(awk '{print $NF}' <<<"$listing" | sort)"
want="$(printf '%s\n' LOOM_1 loom_api_version@@LOOM_1 loom_get_api@@LOOM_1 | sort)"
if [ "$got" != "$want" ]; then
  echo "FAIL: $lib exports something else than loom_get_api and loom_api_version (version LOOM_1):" >&2
  diff <(echo "$want") <(echo "$got") >&2 || true
  exit 1
fi
echo "ok: only loom_get_api and loom_api_version, version LOOM_1"
