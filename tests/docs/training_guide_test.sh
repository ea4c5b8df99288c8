#!/usr/bin/env bash
# Follows docs/guide/training.md verbatim (follow_guide.sh, section 3) and checks what the
# guide says: the loop reaches about 0.8 on 1000 test images and reloads the same weights.
# Section 1's `loom train` command is run too. Run by ctest with the source and build folders.
set -euo pipefail
src="$1" build="$2"
work="$(mktemp -d)"
# The guide's program writes mnist.safetensors where it runs (the repository's root).
trap 'rm -rf "$work" "$src/mnist.safetensors"' EXIT
cmd="$(awk '/^## 1\./{s=1} s && /^```sh$/{on=1; next} on && /^```$/{exit} on' "$src/docs/guide/training.md")"
cmd="${cmd//build\/bin/$build/bin}"
cmd="${cmd//runs\/guide/$work/guide}"
out1="$(cd "$work" && bash -c "$cmd")"
tail -1 <<<"$out1" | grep -Eq '^RESULT model=mlp epochs=1 test_accuracy=0\.[0-9]{4} train_seconds=[0-9.]+$'
for f in config.json train.log metrics.csv metrics.svg report.json checkpoint.safetensors; do
  test -s "$work/guide/$f"
done
out="$(cd "$work" && bash "$src/tests/docs/follow_guide.sh" "$src" "$build" "$src/docs/guide/training.md" mnist 3)"
echo "$out"
acc="$(sed -n 's/^test accuracy \([0-9.]*\)$/\1/p' <<<"$out")"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.7 && a <= 0.9) }'
grep -q "^reloaded: same outputs$" <<<"$out"
