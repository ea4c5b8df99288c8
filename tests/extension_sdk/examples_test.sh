#!/usr/bin/env bash
# The ctest `extension_sdk_examples`: installs the build tree to a fresh prefix, moves the
# prefix (the SDK must not remember where it was installed), checks what was installed, and
# builds and tests every example of extension_sdk/examples against it exactly as the
# example's README says (extension_sdk/examples/README.md, Note [Examples are built as their
# README says]).
#
#   bash tests/extension_sdk/examples_test.sh SOURCE_DIR BUILD_DIR [EXAMPLE...]
#   LOOM_EXAMPLES_PREFIX=<dir> bash ...   builds against an SDK already installed in <dir>
#
# Everything lands under BUILD_DIR/extension_sdk_examples, emptied at each run.
set -euo pipefail

src="$(cd "$1" && pwd)"
build="$(cd "$2" && pwd)"
shift 2
only=("$@")

root="$build/extension_sdk_examples"
# One run at a time per build tree (a second one would empty the first's folder).
exec 9> "$root.lock"
flock 9
rm -rf "$root"
mkdir -p "$root/work" "$root/logs"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# Shows the end of a log and fails.
fail_log() {
  local log="$1"; shift
  echo "---- last lines of $log" >&2
  grep -v '^-- \(Installing\|Up-to-date\|Set runtime path\)' "$log" | tail -n 60 >&2 || true
  fail "$@"
}

t_all="$(now)"

# ---- 1. install, then move the prefix ----
# LOOM_EXAMPLES_PREFIX=<dir>: use an SDK installed there instead (no install, no move).
t0="$(now)"
if [ -n "${LOOM_EXAMPLES_PREFIX:-}" ]; then
  prefix="$(cd "$LOOM_EXAMPLES_PREFIX" && pwd)"
  echo "using the SDK installed in $prefix"
else
  cmake --install "$build" --prefix "$root/installed-here" > "$root/logs/install.log" 2>&1 ||
    fail_log "$root/logs/install.log" "cmake --install $build failed"
  mv "$root/installed-here" "$root/prefix"
  prefix="$root/prefix"
  echo "install + move: $(elapsed "$t0") s ($(du -sh "$prefix" | cut -f1))"
fi

# ---- 2. what the installed SDK must hold ----
for f in bin/loom lib/libloom.so lib/libloom_core.so lib/loom/plugins/libloom_ops_core.so \
         include/loom/capi.h include/loom/stable.hpp include/loom/opcheck.hpp \
         include/loom/dispatcher/plugin_abi.h \
         lib/cmake/Loom/LoomConfig.cmake lib/cmake/Loom/LoomConfigVersion.cmake \
         lib/cmake/Loom/LoomTargets.cmake lib/cmake/Loom/LoomExtension.cmake \
         lib/pkgconfig/loom.pc lib/pkgconfig/loom-cpp.pc lib/cmake/Loom/LoomCppTargets.cmake \
         include/loom/loom.h; do
  [ -e "$prefix/$f" ] || fail "the installed SDK lacks $f"
done
# No installed file may point back into the build or source tree (the prefix moved: a
# leftover absolute path would be a dangling one, or worse, one into the build tree).
if grep -rlI -e "$build" -e "$root/installed-here" "$prefix" > "$root/logs/abs-paths.txt"; then
  fail "installed files name the build tree or the old prefix: $(tr '\n' ' ' < "$root/logs/abs-paths.txt")"
fi
# Every ELF file: RUNPATH only $ORIGIN-relative, and every dependency resolves.
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | tr -d '\0')" == $'\x7fELF' ]] || continue
  rpath="$(readelf -d "$f" | sed -n 's/.*(R\(UN\)\?PATH).*\[\(.*\)\]/\2/p')"
  IFS=: read -ra parts <<< "$rpath"
  for p in "${parts[@]}"; do
    case "$p" in
      '$ORIGIN'*) ;;
      *) fail "$f: RUNPATH entry '$p' is not \$ORIGIN-relative (RUNPATH: $rpath)" ;;
    esac
  done
  # libcuda.so.1 comes with the GPU driver, which a machine without a GPU lacks. MKL's
  # per-CPU kernel libraries (lib/loom/mkl) name libmkl_core without a run path: MKL opens
  # them itself once libmkl_core is loaded, so their folder is where they look.
  search=""
  case "$f" in "$prefix"/lib/loom/mkl/*) search="$(dirname "$f")" ;; esac
  missing="$(env -u LD_LIBRARY_PATH ${search:+LD_LIBRARY_PATH="$search"} ldd "$f" 2>/dev/null | grep 'not found' | grep -v 'libcuda\.so' || true)"
  [ -z "$missing" ] || fail "$f: unresolved dependencies from the moved prefix: $missing"
done < <(find "$prefix/bin" "$prefix/lib" -type f -print0)
unset LOOM_PLUGIN_PATH
"$prefix/bin/loom" info > "$root/logs/loom-info.txt" 2>&1 ||
  fail_log "$root/logs/loom-info.txt" "the installed bin/loom info failed"
libs="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs loom)"
[[ "$libs" == *-lloom* ]] || fail "pkg-config --libs loom says '$libs'"

# ---- 3. the environment the examples' README commands run in ----
export LOOM_PREFIX="$prefix"
command -v ninja > /dev/null && export CMAKE_GENERATOR=Ninja
export CMAKE_BUILD_PARALLEL_LEVEL=2
if command -v ccache > /dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
         CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi
nvcc=""
if command -v nvcc > /dev/null; then
  nvcc="$(command -v nvcc)"
elif [ -n "${CUDACXX:-}" ] && [ -x "$CUDACXX" ]; then
  nvcc="$CUDACXX"
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
  export CUDACXX="$nvcc"
fi

# The fenced blocks whose info string is exactly `sh`, in order (unindented fences only).
readme_commands() {
  awk '/^```sh[[:space:]]*$/ { on = 1; next } /^```/ { on = 0 } on' "$1"
}

ran=0 skipped=0
summary=()
for dir in "$src"/extension_sdk/examples/*/; do
  name="$(basename "$dir")"
  [ -f "$dir/CMakeLists.txt" ] && [ -f "$dir/README.md" ] || continue
  if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi

  # Requirements the machine may not meet: skip, saying why.
  reason=""
  for req in $(sed -n 's/.*<!-- examples_test: requires \([A-Za-z0-9_ -]*\) -->.*/\1/p' "$dir/README.md"); do
    case "$req" in
      nvcc) [ -n "$nvcc" ] || reason="no nvcc (not on PATH, CUDACXX or /usr/local/cuda/bin)" ;;
      loom-cuda) [ -e "$prefix/lib/loom/plugins/libloom_cuda.so" ] ||
        reason="the installed SDK has no CUDA plugin (Loom was configured with LOOM_WITH_CUDA=OFF)" ;;
      *) fail "$name/README.md: unknown requirement '$req' (known: nvcc, loom-cuda)" ;;
    esac
  done
  if [ -n "$reason" ]; then
    echo "SKIP: $name: $reason"
    summary+=("$name: skipped ($reason)")
    skipped=$((skipped + 1))
    continue
  fi

  work="$root/work/$name"
  cp -r "$dir" "$work"
  rm -rf "$work/build"  # a reader's own build folder in the source tree
  readme_commands "$dir/README.md" > "$root/logs/$name.readme.sh"
  [ -s "$root/logs/$name.readme.sh" ] || fail "$name/README.md has no \`\`\`sh block to run"

  t0="$(now)"
  (cd "$work" && bash -euo pipefail "$root/logs/$name.readme.sh") > "$root/logs/$name.log" 2>&1 ||
    fail_log "$root/logs/$name.log" "$name: the commands of its README failed (they are in $root/logs/$name.readme.sh)"
  t_readme="$(elapsed "$t0")"
  grep '^SKIP:' "$root/logs/$name.log" || true

  t_test="-"
  if [ -f "$work/test.sh" ]; then
    t0="$(now)"
    (cd "$work" && bash test.sh) > "$root/logs/$name.test.log" 2>&1 ||
      fail_log "$root/logs/$name.test.log" "$name: test.sh failed"
    t_test="$(elapsed "$t0")"
    grep '^SKIP:' "$root/logs/$name.test.log" || true
  fi
  echo "ok: $name (README commands $t_readme s, test.sh $t_test s)"
  summary+=("$name: ok (README $t_readme s, test.sh $t_test s)")
  ran=$((ran + 1))
done

if ((${#only[@]})) && ((ran + skipped == 0)); then
  fail "no example named ${only[*]} (folders with a CMakeLists.txt and a README.md)"
fi
echo "== extension_sdk examples: $ran built and tested, $skipped skipped, $(elapsed "$t_all") s in all"
printf '  %s\n' "${summary[@]}"
