#!/usr/bin/env bash
# Follows docs/guide/custom-cuda-op.md verbatim (run_guide.sh): installs the build into a
# prefix under the build folder, builds the CUDA extension and its app with nvcc against it,
# and checks that `loom plugin check` accepts the extension and that the app refuses a CPU
# tensor. Where a GPU is usable the app must also run the kernels and match the formula;
# without one it must say why. Skipped (exit 77) without nvcc or Loom's CUDA plugin.
# Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "SKIP: no nvcc (the CUDA toolkit is not installed): the guide cannot be built here"
  exit 77
fi
if [ ! -f "$build/lib/loom/plugins/libloom_cuda.so" ]; then
  echo "SKIP: this Loom build has no CUDA plugin (LOOM_WITH_CUDA is OFF)"
  exit 77
fi
work="$build/guide-tests/custom_cuda_op"
log="$work.log"
mkdir -p "$(dirname "$log")"  # tee opens the log before the guide runner makes the folder
bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/custom-cuda-op.md" "$work" \
  2>&1 | tee "$log"
out="$(cat "$log")"
grep -q "^OK plugin 'guide_swish_cuda' 0.1.0 can be loaded$" <<<"$out"
grep -q "^    impl guide_cuda::swish for CUDA " <<<"$out"
grep -q "^    impl guide_cuda::swish_backward for CUDA " <<<"$out"
grep -q "^on the CPU: Could not run 'guide_cuda::swish' with arguments from the {CPU} dispatch key set" <<<"$out"
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  grep -q "^on cuda:0: y and dy/dx match the formula" <<<"$out"
else
  grep -q "^no CUDA device: ." <<<"$out"
  echo "(no GPU here: the kernels were built and the extension loaded, but not run)"
fi
rm -rf "$work" "$work.sh" "$log"
