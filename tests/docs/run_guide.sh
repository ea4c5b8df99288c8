#!/usr/bin/env bash
# Follows a guide of docs/guide verbatim, the way a reader types it into one terminal: every
# ```sh block runs in order, in one shell (so `cd` and variables carry over), and every block
# announced by a line "Save this as `PATH`:" is written to PATH first, when the reader reaches
# it. Other blocks (```console, ```text, ...) are shown output and are not run.
#
# The guide's two placeholder lines are the only edits: `export LOOM_SRC=...` (the reader's
# Loom checkout) and `export LOOM_BUILD=...` (its build folder) become SRC and BUILD.
#
# Usage: run_guide.sh SRC BUILD GUIDE.md WORK [SECTION...]
#   WORK      an empty folder the guide runs in (made afresh)
#   SECTION   numbers of `## N.` sections whose ```sh blocks are not run (e.g. the CUDA
#             guide's "run it on a GPU" section on a machine without one); their files are
#             still written
set -euo pipefail
src="$1" build="$2" guide="$3" work="$4"
shift 4
skip=" $* "

rm -rf "$work"
mkdir -p "$work"
script="$work.sh"
awk -v skip="$skip" -v src="$src" -v build="$build" '
  /^## [0-9]+\./ { section = $2; sub(/\.$/, "", section) }
  !on && match($0, /^Save (this|it) as `[^`]+`/) {
    path = substr($0, RSTART, RLENGTH); sub(/^Save (this|it) as `/, "", path); sub(/`$/, "", path)
    pending = path; next
  }
  !on && /^```/ {
    on = 1; lang = substr($0, 4)
    if (pending != "") {
      mode = "file"
      printf "mkdir -p \"$(dirname \"%s\")\"\ncat > \"%s\" <<'"'"'LOOM_GUIDE_EOF'"'"'\n", pending, pending
      pending = ""
    } else if (lang == "sh" && (section == "" || index(skip, " " section " ") == 0)) {
      mode = "run"; ++blocks
      printf "echo \"== guide: section %s, block %d\" >&2\n", section, blocks
    } else {
      mode = "skip"
    }
    next
  }
  on && /^```$/ {
    if (mode == "file") print "LOOM_GUIDE_EOF"
    on = 0; next
  }
  on && mode == "file" { print; next }
  on && mode == "run" {
    if ($0 ~ /^export LOOM_SRC=/) { print "export LOOM_SRC=\"" src "\""; next }
    if ($0 ~ /^export LOOM_BUILD=/) { print "export LOOM_BUILD=\"" build "\""; next }
    print; next
  }
' "$guide" > "$script"
grep -q "== guide: section" "$script"  # a guide without a single command is a broken guide

# What CI adds and the reader does not need: ccache for the CMake builds (CMake reads these
# variables from the environment), two build jobs, no plugin path from the caller.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi
export CMAKE_BUILD_PARALLEL_LEVEL=2
unset LOOM_PLUGIN_PATH
cd "$work"
bash -euo pipefail "$script"
