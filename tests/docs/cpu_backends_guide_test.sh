#!/usr/bin/env bash
# Follows docs/guide/cpu-backends.md verbatim (run_guide.sh) against the installed, moved prefix
# of the fixture (install_prefix.sh) and checks what the guide says the program prints. Run by
# ctest with the source and build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" cpu-backends.md cpu_backends
if [ -f "$LOOM_PREFIX/lib/loom/plugins/libloom_cpu_onednn.so" ]; then
  # The first run: oneDNN by default; the second: LOOM_CPU_PROVIDER=reference.
  [ "$(grep -c '^active: onednn$' <<<"$out")" = 1 ]
  [ "$(grep -c '^active: reference$' <<<"$out")" = 5 ]
  grep -q "^reference [0-9.]* ms, onednn [0-9.]* ms$" <<<"$out"
else
  [ "$(grep -c '^active: reference$' <<<"$out")" = 6 ]
fi
[ "$(grep -c '^results agree: yes$' <<<"$out")" = 2 ]
[ "$(grep -c '^after unload: reference, still agrees: yes$' <<<"$out")" = 2 ]
done_with_guide
