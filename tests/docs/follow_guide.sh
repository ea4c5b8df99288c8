#!/usr/bin/env bash
# Follows a guide of docs/guide verbatim and prints what its program prints: saves the
# guide's first ```cpp block as PROGRAM.cpp, takes the ```sh block of section SECTION as
# the command, puts the build folder under test in place of build/, and runs it.
# Usage: follow_guide.sh SRC BUILD GUIDE.md PROGRAM SECTION
set -euo pipefail
src="$1" build="$2" guide="$3" prog="$4" section="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
awk '/^```cpp$/{on=1; next} /^```$/{if (on) exit} on' "$guide" > "$work/$prog.cpp"
awk -v sec="^## $section\\\\." '$0 ~ sec {s=1} s && /^```sh$/{on=1; next} on && /^```$/{exit} on' \
  "$guide" > "$work/compile.sh"
test -s "$work/$prog.cpp" && test -s "$work/compile.sh"
cd "$src"
sed -e "s|$prog.cpp|$work/$prog.cpp|; s|-o $prog|-o $work/$prog|" \
  -e "s|\"\$PWD/build/lib\"|$build/lib|; s|-Lbuild/lib|-L$build/lib|" \
  -e "s|^./$prog$|$work/$prog|; s| ./$prog$| $work/$prog|" "$work/compile.sh" > "$work/run.sh"
LOOM_PLUGIN_PATH= bash "$work/run.sh"
