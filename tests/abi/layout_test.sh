#!/usr/bin/env bash
# The layout of ABI version 1 (abi_layout.c) printed by a program compiled against the frozen
# header and by one compiled against the current header must be the same.
#     layout_test.sh <abi_layout_frozen> <abi_layout_current>
set -euo pipefail
frozen="$("$1")"
current="$("$2")"
if [ "$frozen" != "$current" ]; then
  echo "FAIL: the current loom/capi.h changed the layout of version 1 (frozen < > current):" >&2
  diff <(echo "$frozen") <(echo "$current") >&2 || true
  exit 1
fi
echo "ok: $(wc -l <<<"$frozen") layout lines of version 1 unchanged"
