#!/usr/bin/env bash
# Follows docs/guide/autograd.md verbatim: saves its program, runs its compile command
# (with the build folder under test in place of build/) and checks what the guide says the
# program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
src="$1" build="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
guide="$src/docs/guide/autograd.md"
# The first ```cpp block is the program; the ```sh block of section 2 is the command.
awk '/^```cpp$/{on=1; next} /^```$/{if (on) exit} on' "$guide" > "$work/train.cpp"
awk '/^## 2\./{s=1} s && /^```sh$/{on=1; next} on && /^```$/{exit} on' "$guide" > "$work/compile.sh"
test -s "$work/train.cpp" && test -s "$work/compile.sh"
cd "$src"
sed -e "s|train.cpp|$work/train.cpp|; s|-o train|-o $work/train|" \
  -e "s|\"\$PWD/build/lib\"|$build/lib|; s|-Lbuild/lib|-L$build/lib|" \
  -e "s|^./train$|$work/train|" "$work/compile.sh" > "$work/run.sh"
out="$(LOOM_PLUGIN_PATH= bash "$work/run.sh")"
echo "$out"
grep -Eq "^w = (3|2\.99[0-9]*|3\.00[0-9]*), b = (2|1\.99[0-9]*|2\.00[0-9]*)$" <<<"$out"
grep -q "^first 12, second 12$" <<<"$out"
grep -q "^gradcheck passed$" <<<"$out"
grep -q "Trying to backward through the graph a second time" <<<"$out"
