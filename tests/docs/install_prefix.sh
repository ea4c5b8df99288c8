#!/usr/bin/env bash
# The ctest fixture of the C++ API guides (cpp-api.md, autograd.md, training.md): installs the
# build folder into a prefix, then moves the prefix to BUILD/guide-tests/loom-prefix, so that
# every guide builds against an install that no longer is where it was installed (the C++
# package must not remember its prefix). The guides' section 1 (build and install) is this.
# Usage: install_prefix.sh SRC BUILD
set -euo pipefail
build="$(cd "$2" && pwd)"
root="$build/guide-tests"
mkdir -p "$root"
rm -rf "$root/loom-staging" "$root/loom-prefix"
cmake --install "$build" --prefix "$root/loom-staging" > "$root/install.log" 2>&1 ||
  { tail -n 30 "$root/install.log"; exit 1; }
mv "$root/loom-staging" "$root/loom-prefix"
for f in lib/cmake/Loom/LoomConfig.cmake lib/cmake/Loom/LoomCppTargets.cmake \
         lib/pkgconfig/loom-cpp.pc include/loom/loom.h include/loom/nn/nn.h \
         include/loom/dispatcher/plugin_abi.h lib/libloom_core.so; do
  [ -e "$root/loom-prefix/$f" ] || { echo "the install lacks $f"; exit 1; }
done
# No installed text file may name the build tree or the staging prefix.
if grep -rlI -e "$build/lib" -e "$root/loom-staging" "$root/loom-prefix" | grep -v '\.log$'; then
  echo "installed files name the build tree or the prefix they were installed to (above)"
  exit 1
fi
echo "installed and moved to $root/loom-prefix ($(du -sh "$root/loom-prefix" | cut -f1))"
