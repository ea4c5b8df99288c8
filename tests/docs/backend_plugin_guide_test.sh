#!/usr/bin/env bash
# Follows docs/guide/backend-plugin.md verbatim (run_guide.sh) and checks what the guide says:
# the provider is registered and active for aten::relu, the toy device appears in `loom info`
# and a program computes on it. Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
work="$build/guide-tests/backend_plugin"
log="$work.log"
mkdir -p "$(dirname "$log")"  # tee opens the log before the guide runner makes the folder
bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/backend-plugin.md" "$work" \
  2>&1 | tee "$log"
out="$(cat "$log")"
grep -q "^OK plugin 'guide_relu' 0.1.0 can be loaded$" <<<"$out"
grep -q "impl aten::relu for CPU (provider 'guide', priority 20)" <<<"$out"
grep -Eq "^ +\* +guide +priority 20 +plugin 'guide_relu' at relu_provider.cpp:[0-9]+$" <<<"$out"
grep -q "^OK plugin 'toy_device' 0.1.0 can be loaded$" <<<"$out"
grep -q "device hooks for 'toy'" <<<"$out"
grep -Eq "^  toy +TOY +toy-malloc$" <<<"$out"
grep -q "^\[4\] toy:0 float32$" <<<"$out"
grep -q "^tensor(\[1., 2., 3., 4.\])$" <<<"$out"
grep -q "^error: Could not run 'aten::relu' with arguments from the {TOY} dispatch key set" <<<"$out"
rm -rf "$work" "$work.sh" "$log"
