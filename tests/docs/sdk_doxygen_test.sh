#!/usr/bin/env bash
# Doxygen covers the whole SDK: runs Doxygen (docs/Doxyfile.in) on the installed headers of
# extension_sdk/include (capi.h, stable.hpp and stable/, opcheck.hpp), plugin_abi.h and
# docs/sdk.dox, and fails on any warning (an undocumented public declaration, a broken
# command). The full API reference (`--target docs`) prints its warnings without failing.
# Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
if ! command -v doxygen >/dev/null; then
  echo "SKIP: doxygen is not installed"
  exit 77
fi
out="$build/guide-tests/sdk_doxygen"
rm -rf "$out"
mkdir -p "$out"
sed -e "s|@LOOM_DOXYGEN_OUTPUT@|$out|" \
    -e "s|@LOOM_DOXYGEN_INPUT@|$src/extension_sdk/include $src/dispatcher/include/loom/dispatcher/plugin_abi.h $src/docs/sdk.dox|" \
    -e "s|@PROJECT_SOURCE_DIR@|$src|g" -e "s|@PROJECT_VERSION@|sdk|" \
    -e "s|^USE_MDFILE_AS_MAINPAGE.*||" "$src/docs/Doxyfile.in" > "$out/Doxyfile"
(cd "$src" && doxygen "$out/Doxyfile") 2> "$out/warnings.txt"
if [ -s "$out/warnings.txt" ]; then
  echo "Doxygen warnings in the SDK headers:"
  sed "s|$src/||" "$out/warnings.txt"
  exit 1
fi
for page in capi_8h.html plugin__abi_8h.html structLoomApi.html classloom_1_1stable_1_1Tensor.html \
            classloom_1_1opcheck_1_1OpCheck.html; do
  test -s "$out/html/$page" || { echo "missing page $page"; exit 1; }
done
echo "SDK headers documented without warnings"
rm -rf "$out"
