# Run by tests/extension_sdk/examples_test.sh after the README's commands, in this folder:
# the extension exports only its entry point, links libloom.so (not Loom's internal libraries)
# and the shared CUDA runtime, and holds sm_90 code.
set -euo pipefail
so=build/libcustom_cuda_op.so

exported="$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^_init$\|^_fini$' | sort)"
if [ "$exported" != "loom_plugin_manifest" ]; then
  echo "FAIL: $so exports more than loom_plugin_manifest:"; echo "$exported"; exit 1
fi
needed="$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
for lib in libloom.so.1 'libcudart.so.*'; do
  grep -qx "$lib" <<< "$needed" || { echo "FAIL: $so does not link $lib: $needed"; exit 1; }
done
if grep -q 'libloom_' <<< "$needed"; then
  echo "FAIL: $so links a Loom-internal library: $needed"; exit 1
fi
# The kernels are in the module (a fat binary), compiled for sm_90: cuobjdump, beside nvcc,
# lists the machine code; without it, the architecture shows in nvcc's embedded options.
sections="$(readelf -S "$so")"
grep -q '\.nv_fatbin' <<< "$sections" || { echo "FAIL: $so holds no CUDA fat binary"; exit 1; }
nvcc="$(command -v nvcc || echo "${CUDACXX:-}")"
cuobjdump="${nvcc%/nvcc}/cuobjdump"
if [ -n "$nvcc" ] && [ -x "$cuobjdump" ]; then
  grep -q sm_90 <<< "$("$cuobjdump" --list-elf "$so")" || { echo "FAIL: $so holds no sm_90 code"; exit 1; }
else
  grep -aq -- '-arch sm_90' "$so" || { echo "FAIL: $so was not compiled for sm_90"; exit 1; }
fi
echo "ok: $so exports only loom_plugin_manifest, needs libloom.so.1 and libcudart, holds sm_90 code"
