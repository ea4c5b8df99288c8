#!/usr/bin/env bash
# Follows docs/guide/cpp-api.md verbatim: saves its program, runs its compile command
# (with the build folder under test in place of build/) and checks what the guide says the
# program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
guide="$src/docs/guide/cpp-api.md"
# The first ```cpp block is the program; the ```sh block of section 3 is the command.
awk '/^```cpp$/{on=1; next} /^```$/{if (on) exit} on' "$guide" > "$work/first.cpp"
awk '/^## 3\./{s=1} s && /^```sh$/{on=1; next} on && /^```$/{exit} on' "$guide" > "$work/compile.sh"
test -s "$work/first.cpp" && test -s "$work/compile.sh"
cd "$src"
sed -e "s|first.cpp|$work/first.cpp|; s|-o first|-o $work/first|" \
  -e "s|\"\$PWD/build/lib\"|$build/lib|; s|-Lbuild/lib|-L$build/lib|" \
  -e "s|^./first$|$work/first|" "$work/compile.sh" > "$work/run.sh"
out="$(LOOM_PLUGIN_PATH= bash "$work/run.sh")"
echo "$out"
grep -q "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x3)" <<<"$out"
grep -q "^x\[1:, \[0, 3\]\] = tensor(\[\[ 4.,  7.\]," <<<"$out"
grep -q "^features \[2, 4, 3, 3\], loss " <<<"$out"
