#!/usr/bin/env bash
# `loom train` as a user runs it (on Debian's dataset-fashion-mnist): bad arguments and a
# missing dataset give a message and exit 2; a short run writes its run folder and ends
# with the RESULT line; a run stopped part-way and resumed from its checkpoint ends exactly
# as the uninterrupted run; a corrupted or crafted checkpoint is refused with a reason naming
# the file and the field; stale temporary files are cleaned up; --config works; --compile
# gives the same run.
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
expect_exit2 "--workers expects an integer in [0, 256], got '100000'" --workers 100000
# Path options that name the wrong kind of thing: refused before any work, naming the option
# and the path (not a library's "basic_filebuf::underflow" or "filesystem error").
mkdir "$work/adir"
echo x > "$work/afile"
expect_exit2 "--config: cannot read '$work/adir': it is a directory, not a file" --config "$work/adir"
expect_exit2 "--config: cannot read '$work/none.json': no such file" --config "$work/none.json"
expect_exit2 "--resume: cannot read '$work/adir': it is a directory, not a file" --resume "$work/adir"
expect_exit2 "--resume: cannot read '$work/none.safetensors': no such file" \
  --resume "$work/none.safetensors"
expect_exit2 "--out $work/afile: is a file, not a folder" --out "$work/afile"
expect_exit2 "--data $work/afile: is a file, not a folder" --data "$work/afile" --out "$work/x"
expect_exit2 "--checkpoint $work/adir: is a directory" --checkpoint "$work/adir" --out "$work/x"
expect_exit2 "--checkpoint $work/none/c.safetensors: its folder $work/none does not exist" \
  --checkpoint "$work/none/c.safetensors" --out "$work/x"
[ ! -e "$work/x" ] || fail "a refused run made its run folder"

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
cp "$work/b/checkpoint.safetensors" "$work/b45.safetensors"
"$loom" train --resume "$work/b/checkpoint.safetensors" --epochs 2 --progress lines > "$work/b2.txt"
grep -q "resuming .* at epoch 2, step 13 of 32" "$work/b2.txt" || fail "resume: $(head -3 "$work/b2.txt")"
[ "$(tail -1 "$work/b2.txt" | cut -d' ' -f1-4)" = "$(tail -1 "$work/a.txt" | cut -d' ' -f1-4)" ] \
  || fail "resumed: $(tail -1 "$work/b2.txt"), uninterrupted: $(tail -1 "$work/a.txt")"
[ "$(cut -d, -f1-8 "$work/b/metrics.csv")" = "$(cut -d, -f1-8 "$work/a/metrics.csv")" ] \
  || fail "metrics differ: $(cat "$work/b/metrics.csv") vs $(cat "$work/a/metrics.csv")"
# --epochs on resume (Note [Options on resume]): given, the run ends after that epoch and the
# log says so; not before the epoch in progress.
"$loom" train --resume "$work/b45.safetensors" --epochs 3 --out "$work/b3" --progress none \
  > "$work/b3.txt"
grep -q "^--epochs 3: the resumed run ends after epoch 3 (the checkpoint's run had 2)$" \
  "$work/b3.txt" || fail "no --epochs note: $(head -3 "$work/b3.txt")"
tail -1 "$work/b3.txt" | grep -q '^RESULT model=mlp epochs=3 ' || fail "--epochs 3: $(tail -1 "$work/b3.txt")"
expect_exit2 "--resume $work/b45.safetensors: --epochs 1: the checkpoint's run is at epoch 2 already" \
  --resume "$work/b45.safetensors" --epochs 1 --out "$work/b1x"

# A corrupted checkpoint: refused with the file's name and the reason.
head -c 1000 "$work/a/checkpoint.safetensors" > "$work/bad.safetensors"
expect_exit2 "$work/bad.safetensors" --resume "$work/bad.safetensors"
# A safetensors file whose loom.train metadata lacks the run's fields.
h='{"__metadata__":{"loom.train":"{}"}}'
printf "\\x$(printf %02x ${#h})\\0\\0\\0\\0\\0\\0\\0%s" "$h" > "$work/empty.safetensors"
expect_exit2 "--resume $work/empty.safetensors: loom.train metadata: field 'format' is missing" \
  --resume "$work/empty.safetensors"
echo "not a checkpoint" > "$work/text.safetensors"
expect_exit2 "$work/text.safetensors" --resume "$work/text.safetensors"

# Crafted checkpoints (Note [Checkpoint checks] in tools/train/checkpoint.h): each is refused
# with exit 2, a message naming the file and the field, and never a JSON library's message.
# edit_checkpoint.py makes them from a short run and recomputes the metadata checksum, so the
# field's own check is what refuses them.
edit="$(dirname "$0")/edit_checkpoint.py"
"$loom" train --model mlp --epochs 1 --limit-train 256 --limit-test 64 --batch-size 32 \
  --scheduler cosine --stop-after-steps 3 --out "$work/k" --progress none > /dev/null
ck="$work/k/checkpoint.safetensors"
crafted() {  # crafted "message part" edits...
  local want="$1"; shift
  python3 "$edit" "$ck" "$work/crafted.safetensors" "$@"
  expect_exit2 "$want" --resume "$work/crafted.safetensors" --out "$work/kk"
  if grep -q "json.exception" <<<"$out"; then fail "a JSON library message for $*: $out"; fi
}
m="--resume $work/crafted.safetensors: loom.train metadata: field"
crafted "$m 'epoch' must be an integer in [1, 2], got -5" epoch=-5
crafted "$m 'epoch' must be an integer in [1, 2], got -1000000000000" epoch=-1000000000000
crafted "$m 'epoch' must be an integer in [1, 2], got \"2\"" 'epoch="2"'
crafted "$m 'step_in_epoch' must be an integer in [0, 8] (an epoch of at most 256 samples (limit_train) in batches of 32), got 9" \
  step_in_epoch=9 global_step=9
crafted "$m 'step_in_epoch' must be an integer in [0, 8] (an epoch of at most 256 samples (limit_train) in batches of 32), got 99999999999999" \
  step_in_epoch=99999999999999
# Within the bound of the stored config, past the steps of the data as loaded (60000 samples).
crafted "$m 'step_in_epoch' must be an integer in [0, 1875] (the steps of an epoch of this run), got 2000" \
  config.limit_train=0 step_in_epoch=2000 global_step=2000
crafted "$m 'global_step' must be an integer in [3, " global_step=-1
crafted "$m 'seen' must be an integer in [0, 96], got -1" seen=-1
crafted "$m 'correct' must be an integer in [0, 96], got 97" correct=97
crafted "$m 'loss_sum' must be a number in [0, " 'loss_sum="x"'
crafted "$m 'config': lr expects a number in [0, 1000], got '5000'" config.lr=5000
crafted "$m 'config': batch_size expects an integer >= 1, got '0'" config.batch_size=0
crafted "$m 'config': batch_size expects an integer >= 1, got '-64'" config.batch_size=-64
crafted "$m 'config': batch_size expects an integer >= 1, got 'true'" config.batch_size=true
crafted "$m 'config.model' is missing" del:config.model
crafted "$m 'rows' must be an array of 0 metrics rows" 'rows=[[1]]'
crafted "$m 'scheduler.base_lrs' must hold 1 learning rate(s)" 'scheduler@base_lrs=[]'
crafted "$m 'optimizer.param_groups[0].lr' breaks the rule of --lr" optimizer.param_groups.0.lr=1e9
crafted "$m 'optimizer.state.0.step' must be an integer in [0, 3], got -1" optimizer.state.0.step=-1
crafted "$m 'rng' must be an even number of lowercase hex digits" 'rng="abc"'
crafted "$m 'extra' is not a field of a loom train checkpoint" extra=1
# Resuming keeps the options that define the run (Note [Options on resume] in
# tools/train/checkpoint.h): another value, from a flag or a config file, is refused naming
# it and the stored value, not dropped; --epochs cannot stretch a cosine schedule.
r="--resume $ck:"
expect_exit2 "$r --model cnn conflicts with the checkpoint's model mlp" --resume "$ck" --model cnn --out "$work/kk"
expect_exit2 "$r --limit-train 32 conflicts with the checkpoint's limit_train 256" \
  --resume "$ck" --limit-train 32 --out "$work/kk"
printf '{"lr": 0.5}\n' > "$work/lr.json"
expect_exit2 "$r --config $work/lr.json: lr 0.5 conflicts with the checkpoint's lr 0.001" \
  --resume "$ck" --config "$work/lr.json" --out "$work/kk"
expect_exit2 "$r --epochs 3: the checkpoint's cosine schedule spans its run's 1 epochs" \
  --resume "$ck" --epochs 3 --out "$work/kk"
# A file without checksums (another writer's) is checked all the same, and loads when valid.
crafted "$m 'epoch' must be an integer in [1, 2], got 0" --drop-checksums epoch=0
python3 "$edit" "$ck" "$work/plain.safetensors" --drop-checksums
"$loom" train --resume "$work/plain.safetensors" --epochs 1 --out "$work/kp" --progress none \
  > "$work/kp.txt"
tail -1 "$work/kp.txt" | grep -q '^RESULT model=mlp epochs=1 ' || fail "no checksums: $(tail -3 "$work/kp.txt")"
# A flipped bit, an edit that leaves the checksum as it was, data cut short.
crafted "safetensors: '$work/crafted.safetensors': tensor 'optim.state.3.exp_avg_sq': checksum mismatch" \
  --flip-last-byte
crafted "safetensors: '$work/crafted.safetensors': __metadata__: checksum mismatch" \
  --keep-checksums epoch=2
head -c "$(( $(stat -c %s "$ck") - 4 ))" "$ck" > "$work/cut.safetensors"
expect_exit2 "safetensors: '$work/cut.safetensors': file is truncated: the tensors need" \
  --resume "$work/cut.safetensors"

# Leftovers of interrupted saves: a resume removes Loom's own temporary files in the run folder
# whose process is gone, and leaves a live process's and every other file alone.
dead="$(sh -c 'echo $$')"
touch "$work/k/.checkpoint.safetensors.tmp-$dead-0" "$work/k/.metrics.csv.tmp-$dead-2" \
  "$work/k/.checkpoint.safetensors.tmp-$$-1" "$work/k/notes.tmp" "$work/k/.notes.tmp-1-x"
# (Without --epochs the run ends where the checkpoint's did; options equal to the stored ones
# are accepted.)
"$loom" train --resume "$ck" --model mlp --batch-size 32 --progress none > "$work/k2.txt"
tail -1 "$work/k2.txt" | grep -q '^RESULT model=mlp epochs=1 ' || fail "resume: $(tail -1 "$work/k2.txt")"
grep -qF "removed $work/k/.checkpoint.safetensors.tmp-$dead-0, the temporary file of an interrupted save" \
  "$work/k2.txt" || fail "no stale file removed: $(head -3 "$work/k2.txt")"
for f in ".checkpoint.safetensors.tmp-$dead-0" ".metrics.csv.tmp-$dead-2"; do
  [ ! -e "$work/k/$f" ] || fail "the stale $f is still there"
done
for f in ".checkpoint.safetensors.tmp-$$-1" notes.tmp .notes.tmp-1-x; do
  [ -e "$work/k/$f" ] || fail "$f was removed"
done

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
# Memory format: a channels-last CNN saves and resumes as a contiguous one (the checkpoint is
# the same either way); a bad value is refused.
"$loom" train --model cnn --epochs 1 --limit-train 512 --limit-test 128 --memory-format channels-last \
  --stop-after-steps 2 --out "$work/m" --progress none > "$work/m1.txt"
grep -q "channels-last" "$work/m/train.log" || fail "no channels-last in the log: $(head -2 "$work/m/train.log")"
"$loom" train --resume "$work/m/checkpoint.safetensors" --memory-format contiguous --progress none > "$work/m2.txt"
tail -1 "$work/m2.txt" | grep -q '^RESULT model=cnn epochs=1 ' || fail "channels-last resume: $(tail -3 "$work/m2.txt")"
expect_exit2 "memory-format" --memory-format sideways
# --compile: the same run through loom::compile gives the same epoch's numbers (the CNN's ops
# are library ops and single pointwise ops, replayed as recorded) and logs its counts; it
# applies per process, so a compiled run resumes uncompiled.
cnn=(--model cnn --epochs 1 --limit-train 512 --limit-test 128 --progress none)
"$loom" train "${cnn[@]}" --out "$work/p0" > "$work/p0.txt"
LOOM_CACHE_DIR="$work/cache" "$loom" train "${cnn[@]}" --compile --stop-after-steps 5 \
  --out "$work/p1" > "$work/p1.txt"
grep -q '^loom::compile: [0-9]* graphs recorded, [1-9][0-9]* calls replayed' "$work/p1/train.log" ||
  fail "--compile: no counts in the log: $(tail -3 "$work/p1/train.log")"
grep -q '"compile": true' "$work/p1/config.json" || fail "--compile not in config.json"
"$loom" train --resume "$work/p1/checkpoint.safetensors" --progress none > "$work/p2.txt"
[ "$(tail -1 "$work/p2.txt" | cut -d' ' -f1-3)" = "$(tail -1 "$work/p0.txt" | cut -d' ' -f1-3)" ] ||
  fail "compiled then resumed: $(tail -1 "$work/p2.txt"), uncompiled: $(tail -1 "$work/p0.txt")"
expect_exit2 "compile" --compile sometimes
echo "loom train: all checks passed"
