# Run by tests/extension_sdk/examples_test.sh after the README's commands, in this folder.
# Checks what the README does not show: the extension exports only its entry point, links
# libloom.so and not Loom's internal libraries, and `loom plugin check` lists its ops.
set -euo pipefail
so=build/libcustom_cpu_op.so

exported="$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^_init$\|^_fini$' | sort)"
if [ "$exported" != "loom_plugin_manifest" ]; then
  echo "FAIL: $so exports more than loom_plugin_manifest:"; echo "$exported"; exit 1
fi
needed="$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
grep -qx 'libloom.so.1' <<< "$needed" || { echo "FAIL: $so does not link libloom.so.1: $needed"; exit 1; }
if grep -q 'libloom_' <<< "$needed"; then
  echo "FAIL: $so links a Loom-internal library: $needed"; exit 1
fi

# The JSON report: loaded, under its manifest name, registering the namespace 'custom'.
report="$("$LOOM_PREFIX/bin/loom" plugin check --json "$so")"
for want in '"ok": true' '"name": "custom_cpu_op"' "'custom'"; do
  grep -qF "$want" <<< "$report" || { echo "FAIL: loom plugin check --json lacks $want:"; echo "$report"; exit 1; }
done
# Loaded by name through LOOM_PLUGIN_PATH, as the README says (the loader looks for
# libloom_<name>.so).
mkdir -p plugins
ln -sf ../build/libcustom_cpu_op.so plugins/libloom_custom_cpu_op.so
LOOM_PLUGIN_PATH="$PWD/plugins" ./build/scaled_softplus_test custom_cpu_op > by-name.log ||
  { echo "FAIL: loading custom_cpu_op by name through LOOM_PLUGIN_PATH:"; cat by-name.log; exit 1; }

echo "ok: $so exports only loom_plugin_manifest, needs libloom.so.1, registers the namespace custom, loads by name"
