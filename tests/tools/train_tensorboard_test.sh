#!/usr/bin/env bash
# `loom train --tensorboard DIR` (on Debian's dataset-fashion-mnist), read back by TensorBoard's
# own reader (tests/plugins/utils/tensorboard_reader_check.py, PyPI's tensorboard in a venv in
# the build folder): the per-step scalars equal steps.csv, the per-epoch ones metrics.csv, the
# run's options are in the HParams data; a run stopped part-way and resumed logs every step
# once (the resumed file purges what the first process logged past its checkpoint) with the
# uninterrupted run's values; metrics.svg has the per-step panel; a --tensorboard that names a
# file is refused with exit 2.
# Usage: train_tensorboard_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
loom="$2/bin/loom"
check="$src/tests/plugins/utils/tensorboard_reader_check.py"
source "$src/tests/plugins/utils/tensorboard_venv.sh" "$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
quick=(--model mlp --epochs 2 --batch-size 128 --limit-train 2048 --limit-test 512 --progress none)

# An uninterrupted run: 16 steps per epoch.
"$loom" train "${quick[@]}" --out "$work/a" --tensorboard "$work/tb_a" > "$work/a.txt"
grep -q "^TensorBoard log: $work/tb_a/events.out.tfevents." "$work/a.txt" || fail "no log line: $(cat "$work/a.txt")"
[ "$(wc -l < "$work/a/steps.csv")" = 33 ] || fail "steps.csv: $(wc -l < "$work/a/steps.csv") lines, want 33"
grep -q "training loss per step" "$work/a/metrics.svg" || fail "metrics.svg has no per-step panel"
"$TB_PYTHON" "$check" train "$work/tb_a" "$work/a"

# Stopped after 10 steps; resumed and stopped again after 20; then resumed from the step-10
# checkpoint again, as after a crash that lost the later one: TensorBoard must show steps 11
# to 20 once, from the last process (its file purges the second one's from step 11 on).
"$loom" train "${quick[@]}" --out "$work/b" --tensorboard "$work/tb_b" --stop-after-steps 10 > /dev/null
[ "$(wc -l < "$work/b/steps.csv")" = 11 ] || fail "stopped run's steps.csv: $(cat "$work/b/steps.csv")"
cp "$work/b/checkpoint.safetensors" "$work/step10.safetensors"
"$loom" train --resume "$work/b/checkpoint.safetensors" --tensorboard "$work/tb_b" \
  --stop-after-steps 20 --progress none > /dev/null
[ "$(wc -l < "$work/b/steps.csv")" = 21 ] || fail "second stop's steps.csv: $(wc -l < "$work/b/steps.csv") lines"
"$loom" train --resume "$work/step10.safetensors" --out "$work/b" --tensorboard "$work/tb_b" \
  --progress none > "$work/b.txt"
[ "$(ls "$work/tb_b" | grep -c '^events.out.tfevents.')" = 3 ] || fail "want 3 event files in tb_b: $(ls "$work/tb_b")"
"$TB_PYTHON" "$check" train "$work/tb_b" "$work/b"
# The resumed run's steps equal the uninterrupted run's (loss and lr; not the throughput).
cut -d, -f1-4 "$work/a/steps.csv" > "$work/a.steps"
cut -d, -f1-4 "$work/b/steps.csv" > "$work/b.steps"
cmp -s "$work/a.steps" "$work/b.steps" || fail "resumed steps.csv differs: $(diff "$work/a.steps" "$work/b.steps" | head)"

# A --tensorboard path that is a file.
echo x > "$work/afile"
set +e
out="$("$loom" train "${quick[@]}" --out "$work/c" --tensorboard "$work/afile" 2>&1)"; code=$?
set -e
[ "$code" = 2 ] || fail "--tensorboard FILE exited $code (want 2): $out"
grep -qF -- "--tensorboard $work/afile: SummaryWriter: $work/afile is a file, not a folder" <<<"$out" \
  || fail "--tensorboard FILE: $out"
echo "OK"
