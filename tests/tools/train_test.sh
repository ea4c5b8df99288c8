#!/usr/bin/env bash
# `loom train` as a user runs it (on Debian's dataset-fashion-mnist): bad arguments and a
# missing dataset give a message and exit 2; a short run writes its run folder and ends
# with the RESULT line; a run stopped part-way and resumed from its checkpoint ends exactly
# as the uninterrupted run; a corrupted checkpoint is refused with a reason; --config works.
# Usage: train_test.sh BUILD_DIR
set -euo pipefail
loom="$1/bin/loom"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_exit2() {  # expect_exit2 "message part" args...
  local want="$1"; shift
  set +e
  out="$("$loom" train "$@" 2>&1)"; code=$?
  set -e
  [ "$code" = 2 ] || fail "loom train $* exited $code (want 2): $out"
  grep -qF -- "$want" <<<"$out" || fail "loom train $*: no '$want' in: $out"
}
expect_exit2 "--epochs expects an integer >= 1, got '0'" --epochs 0
expect_exit2 "--model must be one of mlp, cnn, got 'resnet'" --model resnet
expect_exit2 "unknown option --learning-rate" --learning-rate 0.1
expect_exit2 "--lr expects a number" --lr fast
expect_exit2 "early stopping watches the validation loss" --patience 2
expect_exit2 "the Fashion-MNIST files are not in $work/nowhere" --data "$work/nowhere" --out "$work/x"
expect_exit2 "--device must be cpu, cuda or cuda:N, got 'gpu'" --device gpu

# --device cuda: without a usable GPU (no cuda plugin, no driver, no device) the run is refused
# before it reads data or makes its folder, naming the reason; with one, a short CNN run on it
# writes a checkpoint that a CPU run resumes.
if ! nvidia-smi -L >/dev/null 2>&1; then
  set +e
  out="$("$loom" train --device cuda --data "$work/nowhere" --out "$work/g" 2>&1)"; code=$?
  set -e
  [ "$code" = 2 ] || fail "loom train --device cuda without a GPU exited $code (want 2): $out"
  grep -Eq -- "--device cuda: (no CUDA device is available|the CUDA plugin \(cuda\) could not be loaded): .+" <<<"$out" \
    || fail "loom train --device cuda: no reason in: $out"
  [ ! -e "$work/g" ] || fail "loom train --device cuda made its run folder before refusing"
  expect_exit2 "--device cuda:3: " --device cuda:3 --out "$work/g3"
else
  "$loom" train --device cuda --model cnn --epochs 2 --limit-train 1024 --limit-test 256 \
    --stop-after-steps 20 --out "$work/g" --progress none > "$work/g1.txt"
  grep -q "device cuda:0" "$work/g/train.log" || fail "cuda run: $(head -3 "$work/g/train.log")"
  "$loom" train --resume "$work/g/checkpoint.safetensors" --device cpu --progress none > "$work/g2.txt"
  tail -1 "$work/g2.txt" | grep -q '^RESULT model=cnn epochs=2 ' || fail "cuda -> cpu resume: $(tail -3 "$work/g2.txt")"
  "$loom" train --device cuda --model mlp --epochs 1 --limit-train 2048 --limit-test 512 \
    --out "$work/g4" --progress none > "$work/g4.txt"
  acc="$(tail -1 "$work/g4.txt" | sed 's/.*test_accuracy=\([0-9.]*\).*/\1/')"
  awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || fail "cuda: 2048 samples, 1 epoch: accuracy $acc"
  grep -q '"device": "cuda:0"' "$work/g4/report.json" || fail "report.json lacks the device"
fi

quick=(--model mlp --epochs 2 --limit-train 2048 --limit-test 512 --progress lines)
"$loom" train "${quick[@]}" --out "$work/a" > "$work/a.txt"
tail -1 "$work/a.txt" | grep -Eq '^RESULT model=mlp epochs=2 test_accuracy=0\.[0-9]{4} train_seconds=[0-9.]+$' \
  || fail "no RESULT line: $(tail -3 "$work/a.txt")"
for f in config.json train.log metrics.csv metrics.svg report.json checkpoint.safetensors; do
  [ -s "$work/a/$f" ] || fail "the run folder lacks $f"
done
[ "$(wc -l < "$work/a/metrics.csv")" = 3 ] || fail "metrics.csv: $(cat "$work/a/metrics.csv")"
grep -q '"confusion_matrix"' "$work/a/report.json" || fail "report.json has no confusion matrix"
grep -q "<svg" "$work/a/metrics.svg" || fail "metrics.svg is not an SVG"
acc="$(tail -1 "$work/a.txt" | sed 's/.*test_accuracy=\([0-9.]*\).*/\1/')"
awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || fail "2048 samples, 2 epochs: accuracy $acc"

# Stopped in the middle of epoch 2 (32 steps per epoch), then resumed: the same run.
"$loom" train "${quick[@]}" --out "$work/b" --stop-after-steps 45 > "$work/b1.txt"
grep -q "stopped after 45 steps" "$work/b1.txt" || fail "no stop: $(cat "$work/b1.txt")"
"$loom" train --resume "$work/b/checkpoint.safetensors" --epochs 2 --progress lines > "$work/b2.txt"
grep -q "resuming .* at epoch 2, step 13 of 32" "$work/b2.txt" || fail "resume: $(head -3 "$work/b2.txt")"
[ "$(tail -1 "$work/b2.txt" | cut -d' ' -f1-4)" = "$(tail -1 "$work/a.txt" | cut -d' ' -f1-4)" ] \
  || fail "resumed: $(tail -1 "$work/b2.txt"), uninterrupted: $(tail -1 "$work/a.txt")"
[ "$(cut -d, -f1-8 "$work/b/metrics.csv")" = "$(cut -d, -f1-8 "$work/a/metrics.csv")" ] \
  || fail "metrics differ: $(cat "$work/b/metrics.csv") vs $(cat "$work/a/metrics.csv")"

# A corrupted checkpoint: refused with the file's name and the reason.
head -c 1000 "$work/a/checkpoint.safetensors" > "$work/bad.safetensors"
expect_exit2 "$work/bad.safetensors" --resume "$work/bad.safetensors"
# A safetensors file whose loom.train metadata lacks the run's fields.
h='{"__metadata__":{"loom.train":"{}"}}'
printf "\\x$(printf %02x ${#h})\\0\\0\\0\\0\\0\\0\\0%s" "$h" > "$work/empty.safetensors"
expect_exit2 "--resume $work/empty.safetensors: its loom.train metadata has no usable config" \
  --resume "$work/empty.safetensors"
echo "not a checkpoint" > "$work/text.safetensors"
expect_exit2 "$work/text.safetensors" --resume "$work/text.safetensors"

# Early stopping on a validation split: stops before the last epoch when the loss stalls.
"$loom" train --model mlp --epochs 30 --lr 0.05 --limit-train 1024 --limit-test 256 \
  --val-fraction 0.25 --patience 1 --out "$work/e" --progress none > "$work/e.txt"
grep -q "^early stopping: validation loss did not improve for 1 epochs$" "$work/e.txt" \
  || fail "no early stop: $(tail -3 "$work/e.txt")"
grep -q "validation loss" "$work/e/train.log" || fail "no validation metrics in the log"

# A config file, and a flag over it.
printf '{"model": "cnn", "epochs": 3, "batch_size": 128, "limit_train": 512, "limit_test": 256}\n' > "$work/c.json"
"$loom" train --config "$work/c.json" --epochs 1 --out "$work/c" --progress none > "$work/c.txt"
tail -1 "$work/c.txt" | grep -q '^RESULT model=cnn epochs=1 ' || fail "config: $(tail -1 "$work/c.txt")"
grep -q '"batch_size": 128' "$work/c/config.json" || fail "config.json: $(cat "$work/c/config.json")"
expect_exit2 "unknown option 'epoch'" --config <(echo '{"epoch": 1}')
echo "loom train: all checks passed"
