#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in one go (issue 8): configure a fresh Release build with
# the CUDA plugin for sm_90 only, build what the CUDA suites and benchmarks need, run every CUDA
# test suite (tests/plugins/cuda/*_test.cpp), the op conformance harness on its cuda backend,
# a short `loom train --device cuda`, the CUDA benchmarks (Loom against raw cuBLAS / cuDNN, and
# against PyTorch when python3 has a CUDA torch), and print a short table last. Exits 1 when a
# build, a test or a benchmark's Loom side fails; 0 otherwise, also when there is no GPU (then
# every row says "skipped: <reason>"). Expected on an H200 with 16 cores: about 5 to 8 minutes,
# most of it the build.
#
# Usage:
#   bash tests/gpu/run.sh                on the GPU machine (builds in build-gpu)
#   bash tests/gpu/run.sh --fetch-deps   on a Debian 12 machine with apt: downloads the .deb
#                                        files of the build dependencies the GPU image lacks
#                                        (Boost, Abseil, nlohmann-json, GoogleTest, zlib) into
#                                        .gpu-deps/ (git-ignored); carry that folder along
# Environment:
#   LOOM_GPU_BUILD_DIR  the build folder (default build-gpu). One already configured is reused
#                       as it is (e.g. the shared CPU build, to check this script where there is
#                       no GPU: it builds the same targets there and reports the skips)
#   LOOM_GPU_JOBS       parallel build jobs (default: the number of cores)
#   LOOM_BUILD_LOCK     a lock file; when set every build step runs under flock on it
#   LOOM_GPU_DEPS       folder of .deb files unpacked into the build folder (default .gpu-deps)
#   LOOM_GPU_CMAKE_ARGS extra arguments for the fresh configure
#   LOOM_GPU_LOG_DIR    where the logs, bench.json and the training run go (default
#                       <build folder>/gpu-run)
#   LOOM_GPU_FASHION_MNIST  the Fashion-MNIST folder for loom train (default Debian's; when it
#                       is missing, a synthetic set of the same size and format is written)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEB_PACKAGES=(libboost1.74-dev libabsl-dev libabsl20220623 nlohmann-json3-dev libgtest-dev
              libgmock-dev zlib1g-dev zlib1g)

if [ "${1:-}" = "--fetch-deps" ]; then
  deps="${LOOM_GPU_DEPS:-$ROOT/.gpu-deps}"
  mkdir -p "$deps" && cd "$deps" || exit 1
  apt-get download "${DEB_PACKAGES[@]}" || exit 1
  exclude="$ROOT/.git/info/exclude"
  if [ -d "$ROOT/.git" ] && ! grep -qx '/.gpu-deps/' "$exclude" 2>/dev/null; then
    echo '/.gpu-deps/' >> "$exclude"
  fi
  echo "run.sh: $(ls "$deps"/*.deb | wc -l) packages in $deps ($(du -sh "$deps" | cut -f1)); carry .gpu-deps to the GPU machine"
  exit 0
fi

START=$SECONDS
B="${LOOM_GPU_BUILD_DIR:-$ROOT/build-gpu}"
case "$B" in /*) ;; *) B="$ROOT/$B" ;; esac
JOBS="${LOOM_GPU_JOBS:-$(nproc 2>/dev/null || echo 4)}"
LOG="${LOOM_GPU_LOG_DIR:-$B/gpu-run}"
ROWS=()      # the final table: "what|result|detail"
FAILED=0

row() { ROWS+=("$1|$2|$3"); }
fail_row() { row "$1" "FAIL" "$2"; FAILED=1; }
print_table() {
  echo
  echo "== tests/gpu/run.sh: $(( SECONDS - START )) s =="
  printf '%-34s %-8s %s\n' "what" "result" "detail"
  for r in "${ROWS[@]}"; do
    IFS='|' read -r what result detail <<<"$r"
    printf '%-34s %-8s %s\n' "$what" "$result" "$detail"
  done
}
locked() {  # runs "$@" under the build lock when one is given
  if [ -n "${LOOM_BUILD_LOCK:-}" ]; then flock "$LOOM_BUILD_LOCK" "$@"; else "$@"; fi
}

# ---- is there a GPU? -----------------------------------------------------------------------
GPU_REASON=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  GPU_REASON="no NVIDIA driver (nvidia-smi is not installed)"
elif ! gpus="$(nvidia-smi -L 2>&1)" || ! grep -q '^GPU ' <<<"$gpus"; then
  GPU_REASON="nvidia-smi lists no GPU: $(head -1 <<<"$gpus")"
else
  echo "run.sh: $(head -1 <<<"$gpus")"
fi
if [ -n "$GPU_REASON" ] && [ -z "${LOOM_GPU_BUILD_DIR:-}" ]; then
  row "everything" "skipped" "no CUDA device ($GPU_REASON); set LOOM_GPU_BUILD_DIR to build and run the skips"
  print_table
  exit 0
fi

# ---- the toolkit, dependencies the GPU image lacks, and cuDNN --------------------------------
if ! command -v nvcc >/dev/null; then
  for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && export PATH="$d/bin:$PATH" && break
  done
fi
export LOOM_PLUGIN_PATH=
EXTRA_LD=""
CMAKE_ARGS=()
deps="${LOOM_GPU_DEPS:-$ROOT/.gpu-deps}"
# Only for a fresh folder or one configured with them (a reused CPU build has its own).
if compgen -G "$deps/*.deb" >/dev/null &&
   { [ ! -f "$B/CMakeCache.txt" ] || grep -q 'deps-sysroot' "$B/CMakeCache.txt"; }; then
  sysroot="$B/deps-sysroot"
  mkdir -p "$sysroot"
  for f in "$deps"/*.deb; do dpkg -x "$f" "$sysroot" || { echo "run.sh: cannot unpack $f"; exit 1; }; done
  # Links to absolute paths (libz.so -> /lib/...) point into the unpacked tree instead.
  while read -r link; do
    target="$(readlink "$link")"
    [ -e "$sysroot$target" ] && ln -sfn "$sysroot$target" "$link"
  done < <(find "$sysroot" -type l -lname '/*')
  CMAKE_ARGS+=("-DCMAKE_PREFIX_PATH=$sysroot/usr")
  EXTRA_LD="$sysroot/usr/lib/x86_64-linux-gnu:$sysroot/lib/x86_64-linux-gnu"
  echo "run.sh: build dependencies from $(ls "$deps"/*.deb | wc -l) carried packages"
fi
cudnn_found() {
  for d in "${CUDNN_HOME:-}" "${CUDA_HOME:-}" /usr/local/cuda /usr; do
    [ -n "$d" ] && [ -f "$d/include/cudnn.h" ] && return 0
  done
  [ -f /usr/include/x86_64-linux-gnu/cudnn.h ]
}
if ! cudnn_found && command -v python3 >/dev/null; then
  # The GPU image's cuDNN 9 may come only with its PyTorch (the nvidia-cudnn wheel): a
  # CUDNN_HOME for it, with the unversioned library name the plugin's find_library looks for.
  pip_cudnn="$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)"
  if [ -n "$pip_cudnn" ] && [ -f "$pip_cudnn/include/cudnn.h" ]; then
    home="$B/cudnn-home"
    mkdir -p "$home/lib"
    ln -sfn "$pip_cudnn/include" "$home/include"
    lib="$(ls "$pip_cudnn"/lib/libcudnn.so* | head -1)"
    ln -sf "$lib" "$home/lib/libcudnn.so"
    export CUDNN_HOME="$home"
    EXTRA_LD="${EXTRA_LD:+$EXTRA_LD:}$pip_cudnn/lib"
    echo "run.sh: cuDNN from python3's nvidia-cudnn wheel ($pip_cudnn)"
  fi
fi
[ -n "$EXTRA_LD" ] && export LD_LIBRARY_PATH="$EXTRA_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- configure (fresh folders only) and build ------------------------------------------------
mkdir -p "$LOG"
if [ ! -f "$B/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  # shellcheck disable=SC2206
  extra=(${LOOM_GPU_CMAKE_ARGS:-})
  if ! locked cmake -S "$ROOT" -B "$B" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DLOOM_WITH_CUDA=ON -DLOOM_CUDA_ARCHITECTURES=90-real -DCMAKE_CUDA_ARCHITECTURES=90-real \
      -DLOOM_BUILD_TESTS=ON -DLOOM_BUILD_BENCH=ON -DLOOM_WITH_LIBTORCH=OFF \
      -DLOOM_WITH_DOXYGEN=OFF "${CMAKE_ARGS[@]}" "${extra[@]}" > "$LOG/configure.log" 2>&1; then
    tail -30 "$LOG/configure.log"
    hint=""
    compgen -G "$deps/*.deb" >/dev/null ||
      hint=" (missing Boost/Abseil/GoogleTest? run.sh --fetch-deps on a Debian 12 machine, carry .gpu-deps)"
    fail_row "configure" "see $LOG/configure.log$hint"
    print_table
    exit 1
  fi
  row "configure" "ok" "fresh Release build in $B (sm_90)"
else
  row "configure" "reused" "$B"
fi
if ! grep -q '^LOOM_WITH_CUDA:BOOL=ON' "$B/CMakeCache.txt"; then
  row "everything" "skipped" "$B is configured without LOOM_WITH_CUDA (no CUDA toolkit found?)"
  print_table
  exit 0
fi
suites=()
for src in "$ROOT"/tests/plugins/cuda/*_test.cpp; do
  [ -e "$src" ] && suites+=("cuda_$(basename "$src" .cpp)")
done
# The SDK suites with CUDA tests (through the stable ABI), run with a CUDA filter below.
sdk_suites=()
for src in "$ROOT"/tests/extension_sdk/*_test.cpp; do
  [ -e "$src" ] && grep -qE 'TEST.*(Cuda|CUDA)' "$src" && sdk_suites+=("$(basename "$src" .cpp)")
done
targets=(cuda ops_core ops_nn loom loom-train op_conformance_test loom-bench "${suites[@]}"
         "${sdk_suites[@]}")
t0=$SECONDS
if ! locked cmake --build "$B" -j "$JOBS" --target "${targets[@]}" > "$LOG/build.log" 2>&1; then
  grep -E "error|Error" "$LOG/build.log" | head -20
  fail_row "build" "see $LOG/build.log"
  print_table
  exit 1
fi
row "build" "ok" "$(( SECONDS - t0 )) s, ${#targets[@]} targets, -j $JOBS"

# What `loom info` says about CUDA (runtime, driver, libraries, architectures, devices).
"$B/bin/loom" info > "$LOG/info.log" 2>&1
grep -iE 'driver|runtime|cudnn|cublas|architecture|sm_|H200|no CUDA' "$LOG/info.log" | head -8 | sed 's/^/  loom info: /'

# ---- the CUDA test suites --------------------------------------------------------------------
# gtest's summary lines: "[  PASSED  ] 3 tests.", "[  SKIPPED ] 2 tests, listed below:",
# "[  FAILED  ] 1 test, listed below:"; the first skip's reason is the line after "Skipped".
gtest_counts() {  # file -> "passed skipped failed"
  local p s f
  p="$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$1" | tail -1)"
  s="$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?,.*/\1/p' "$1" | tail -1)"
  f="$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?,.*/\1/p' "$1" | tail -1)"
  echo "${p:-0} ${s:-0} ${f:-0}"
}
first_skip_reason() { grep -A1 -m1 ': Skipped$' "$1" | tail -1 | cut -c1-110; }
run_suite() {  # label log timeout command...
  local label="$1" log="$2" limit="$3"; shift 3
  timeout "$limit" "$@" > "$log" 2>&1
  local code=$? p s f
  read -r p s f < <(gtest_counts "$log")
  if [ "$code" -ne 0 ] || [ "$f" -ne 0 ]; then
    local why="exit $code"; [ "$code" = 124 ] && why="timed out after $limit s"
    fail_row "$label" "$p passed, $f failed, $s skipped ($why; $log)"
    grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | head -5 | sed 's/^/    /'
  elif [ -z "$GPU_REASON" ] && grep -qE 'no (usable )?CUDA device' "$log"; then
    fail_row "$label" "nvidia-smi lists a GPU but Loom sees none: $(first_skip_reason "$log")"
  elif [ "$p" = 0 ] && [ "$s" != 0 ]; then
    row "$label" "skipped" "$s tests: $(first_skip_reason "$log")"
  else
    row "$label" "ok" "$p passed, $s skipped"
  fi
}
for suite in "${suites[@]}"; do
  run_suite "$suite" "$LOG/$suite.log" 240 "$B/bin/$suite" --gtest_brief=0
done

for suite in "${sdk_suites[@]}"; do
  run_suite "$suite (CUDA tests)" "$LOG/$suite.log" 120 "$B/bin/$suite" \
    '--gtest_filter=*Cuda*:*CUDA*'
done

# The conformance harness on its cuda backend (tests/conformance/backends.cpp): every op the
# plugin provides, against the reference kernels. Without a GPU the backend removes itself.
conf_log="$LOG/op_conformance_cuda.log"
run_suite "op_conformance (cuda backend)" "$conf_log" 300 "$B/bin/op_conformance_test" \
  --gtest_brief=1 '--gtest_filter=Backends/OpConformance.*/cuda_*'
if skip="$(grep -m1 '^conformance: backend cuda skipped' "$conf_log")"; then
  unset 'ROWS[${#ROWS[@]}-1]'
  if [ -n "$GPU_REASON" ]; then
    row "op_conformance (cuda backend)" "skipped" "${skip#conformance: backend cuda skipped: }"
  else
    fail_row "op_conformance (cuda backend)" "nvidia-smi lists a GPU but Loom sees none: ${skip#conformance: backend cuda skipped: }"
  fi
elif [ -z "$GPU_REASON" ] && ! grep -qE '^\[==========\] [1-9][0-9]* tests? from' "$conf_log"; then
  fail_row "op_conformance (cuda backend)" "no cuda case ran: the plugin provides no op? ($conf_log)"
fi

# ---- loom train --device cuda ----------------------------------------------------------------
train_log="$LOG/train.log"
if [ -n "$GPU_REASON" ]; then
  "$B/bin/loom" train --device cuda --progress none --out "$LOG/train-run" > "$train_log" 2>&1
  code=$?
  if [ "$code" = 2 ] && grep -q -- "--device cuda: " "$train_log"; then
    row "loom train --device cuda" "skipped" "exit 2: $(grep -m1 -- '--device cuda' "$train_log" | cut -c1-100)"
  else
    fail_row "loom train --device cuda" "exit $code without a GPU (want 2 and the reason): $train_log"
  fi
else
  data="${LOOM_GPU_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
  if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
    # No dataset here: a synthetic one in the same format (60000 + 10000 28x28 images whose
    # class is a bright 8x8 block's position), so the run is an epoch of the real size that a
    # working CNN learns almost perfectly.
    data="$LOG/synthetic-fashion-mnist"
    mkdir -p "$data"
    python3 - "$data" <<'EOF' || fail_row "loom train --device cuda" "could not write the synthetic data"
import struct, sys, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(0)
for name, n in (("train", 60000), ("t10k", 10000)):
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    images = rng.integers(0, 60, (n, 28, 28), dtype=np.uint8)
    for c in range(10):
        r, k = 2 + (c // 5) * 12, 2 + (c % 5) * 5
        images[labels == c, r:r + 8, k:k + 4] = 220
    with open(f"{out}/{name}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    with open(f"{out}/{name}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())
EOF
  fi
  if timeout 180 "$B/bin/loom" train --device cuda --model cnn --epochs 1 --progress none \
      --data "$data" --out "$LOG/train-run" > "$train_log" 2>&1; then
    result="$(tail -1 "$train_log")"
    rate="$(grep -m1 -oE '[0-9]+ samples/s' "$LOG/train-run/train.log")"
    acc="$(sed -nE 's/.*test_accuracy=([0-9.]+).*/\1/p' <<<"$result")"
    if awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.5) }'; then
      row "loom train --device cuda (cnn)" "ok" "1 epoch, ${rate:-? samples/s}, test accuracy $acc ($(basename "$data"))"
    else
      fail_row "loom train --device cuda (cnn)" "test accuracy ${acc:-?} after an epoch: $train_log"
    fi
  else
    fail_row "loom train --device cuda (cnn)" "failed: $(tail -1 "$train_log" | cut -c1-100)"
  fi
fi

# ---- benchmarks ------------------------------------------------------------------------------
bench_json="$LOG/bench.json"
timeout 300 "$B/bin/loom-bench" --filter '^cuda\.' --rounds 5 --sample-ms 20 --json "$bench_json" \
  > "$LOG/bench.log" 2>&1
bench_code=$?
cat "$LOG/bench.log"
json_field() {  # line field -> value (null when absent)
  local v
  v="$(grep -oE "\"$2\":(null|-?[0-9.eE+-]+|\"[^\"]*\")" <<<"$1" | head -1 | cut -d: -f2- | tr -d '"')"
  echo "${v:-null}"
}
if [ -s "$bench_json" ]; then
  while read -r line; do
    name="$(json_field "$line" name)" unit="$(json_field "$line" unit)"
    loom="$(json_field "$line" loom)" raw="$(json_field "$line" raw)"
    ratio_raw="$(json_field "$line" ratio_raw)" torch="$(json_field "$line" libtorch)"
    err="$(json_field "$line" error)"
    if [ "$err" != null ]; then
      fail_row "$name" "the Loom side failed: $err"
    elif [ "$loom" = null ] && [ -z "$GPU_REASON" ]; then
      fail_row "$name" "nvidia-smi lists a GPU but the benchmark was skipped: $LOG/bench.log"
    elif [ "$loom" = null ]; then
      row "$name" "skipped" "$(grep -m1 "  $name: skipped" "$LOG/bench.log" | sed 's/^ *[^:]*: skipped: //' | cut -c1-100)"
    else
      detail="loom $loom $unit"
      [ "$raw" != null ] && detail+=", raw $raw, ratio_raw $ratio_raw"
      [ "$torch" != null ] && detail+=", libtorch $torch"
      row "$name" "ok" "$detail"
    fi
  done < "$bench_json"
else
  fail_row "loom-bench" "no results (exit $bench_code): $LOG/bench.log"
fi
[ "$bench_code" -ne 0 ] && [ "$FAILED" = 0 ] && fail_row "loom-bench" "exit $bench_code: $LOG/bench.log"

# PyTorch beside Loom, where python3 has a CUDA torch (the GPU image's): the same CNN step and
# products, timed the same way (synchronized before and after each timed loop).
if [ -z "$GPU_REASON" ] && python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  torch_out="$(timeout 120 python3 - <<'EOF' 2>&1
import time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
def timed(f, n):
    f(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
    torch.nn.Linear(1600, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # PyTorch's default (foreach) on CUDA
x, y = torch.randn(64, 1, 28, 28, device=dev), torch.randint(0, 10, (64,), device=dev)
def step():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(f"cuda.cnn.step {1 / timed(step, 300):.4g} steps/s")
for dt, tag in ((torch.float32, "sgemm"), (torch.float16, "hgemm")):
    for n in (1024, 4096):
        a, b = torch.randn(n, n, device=dev, dtype=dt), torch.randn(n, n, device=dev, dtype=dt)
        s = timed(lambda: torch.mm(a, b), 50 if n == 4096 else 200)
        print(f"cuda.{tag}.{n} {2 * n ** 3 / s / 1e12:.4g} TFLOP/s")
EOF
)"
  echo "$torch_out" > "$LOG/pytorch.log"
  while read -r name value unit; do
    [[ "$name" == cuda.* ]] || continue
    loom_line="$(grep "\"name\":\"$name\"" "$bench_json" 2>/dev/null)"
    loom="$(json_field "$loom_line" loom)"
    ratio="n/a"
    [ "$loom" != null ] && ratio="$(awk -v t="$value" -v l="$loom" 'BEGIN { printf "%.3f", t / l }')"
    row "pytorch $name" "ok" "pytorch $value $unit, loom $loom (ratio pytorch/loom $ratio)"
  done <<<"$torch_out"
elif [ -z "$GPU_REASON" ]; then
  row "pytorch comparison" "skipped" "python3 has no CUDA torch (libtorch CPU-only or absent)"
fi

print_table
exit "$FAILED"
