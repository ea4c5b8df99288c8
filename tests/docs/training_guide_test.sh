#!/usr/bin/env bash
# Follows docs/guide/training.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install) and checks what the guide says:
# `loom train` writes its run folder and TensorBoard events, the loop reaches about 0.8 on 1000
# test images and reloads the same weights, and TensorBoard's own reader (PyPI tensorboard,
# installed by the guide into a virtual environment) sees the scalars the loop logged.
# Run by ctest with the source and build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" training.md training 1

# Section 2: the job's result line, run folder and event file.
grep -Eq '^RESULT model=mlp epochs=1 test_accuracy=0\.[0-9]{4} train_seconds=[0-9.]+$' <<<"$out" ||
  fail "no RESULT line from loom train"
for f in config.json train.log metrics.csv metrics.svg report.json checkpoint.safetensors; do
  test -s "$work/runs/guide/$f" || fail "the run folder lacks $f"
done
ls "$work"/runs/tb/job/events.out.tfevents.* > /dev/null || fail "loom train --tensorboard wrote no event file"

# Section 4: the loop.
acc="$(sed -n 's/^test accuracy \([0-9.]*\)$/\1/p' <<<"$out")"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.7 && a <= 0.9) }' || fail "test accuracy '$acc' is not about 0.8"
grep -q "^reloaded: same outputs$" <<<"$out" || fail "the reloaded model differs"
loss="$(sed -n 's/^logged 94 steps, last loss \([0-9.]*\)$/\1/p' <<<"$out")"
[ -n "$loss" ] || fail "the loop did not print its last loss"

# Section 5: what TensorBoard's reader sees equals what the loop printed (float32 rounding).
line="$(grep '^train/loss: ' <<<"$out")" || fail "read_tb.py printed no train/loss"
[[ "$line" =~ ^train/loss:\ 94\ values,\ last\ ([0-9.]+)\ at\ step\ 93$ ]] || fail "train/loss: '$line'"
awk -v a="${BASH_REMATCH[1]}" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * (b < 1 ? 1 : b) + 5e-7) }' ||
  fail "TensorBoard reads last loss ${BASH_REMATCH[1]}, the loop printed $loss"
line="$(grep '^test/accuracy: ' <<<"$out")" || fail "read_tb.py printed no test/accuracy"
[[ "$line" =~ ^test/accuracy:\ 1\ values,\ last\ ([0-9.]+)\ at\ step\ 94$ ]] || fail "test/accuracy: '$line'"
# The loop printed it with two decimals.
awk -v a="${BASH_REMATCH[1]}" -v b="$acc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.0050001) }' ||
  fail "TensorBoard reads test accuracy ${BASH_REMATCH[1]}, the loop printed $acc"
grep -q "^fc1/weight: histogram of 200704 values$" <<<"$out" || fail "no fc1/weight histogram"

# The job's events, read the same way: per-step loss and learning rate, per-epoch metrics.
job="$(cd "$work" && tb-venv/bin/python read_tb.py runs/tb/job)"
echo "$job"
for tag in train/loss train/lr; do
  grep -Eq "^$tag: [0-9]+ values" <<<"$job" || fail "loom train --tensorboard logged no $tag"
done
grep -q "^epoch/" <<<"$job" || fail "loom train --tensorboard logged no per-epoch metric"
done_with_guide
