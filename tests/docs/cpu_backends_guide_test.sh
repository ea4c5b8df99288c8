#!/usr/bin/env bash
# Follows docs/guide/cpu-backends.md verbatim (follow_guide.sh) and checks what the guide
# says the program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
out="$(bash "$(dirname "$0")/follow_guide.sh" "$1" "$2" "$1/docs/guide/cpu-backends.md" backends 2)"
echo "$out"
if [ -f "$2/lib/loom/plugins/libloom_cpu_onednn.so" ]; then
  # The first run: oneDNN by default; the second: LOOM_CPU_PROVIDER=reference.
  [ "$(grep -c '^active: onednn$' <<<"$out")" = 1 ]
  [ "$(grep -c '^active: reference$' <<<"$out")" = 5 ]
  grep -q "^reference [0-9.]* ms, onednn [0-9.]* ms$" <<<"$out"
else
  [ "$(grep -c '^active: reference$' <<<"$out")" = 6 ]
fi
[ "$(grep -c '^results agree: yes$' <<<"$out")" = 2 ]
[ "$(grep -c '^after unload: reference, still agrees: yes$' <<<"$out")" = 2 ]
