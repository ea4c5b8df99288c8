# Shared by the run-*.sh scripts: repository root, parallelism, configure+build.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc 2>/dev/null || echo 2)"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"

# loom_build DIR [cmake args...] -- [targets...]
# RelWithDebInfo with line tables only (-g1): full -g costs a quarter more compile time on
# 2 cores, and line tables are what stack traces and sanitizer reports need.
loom_build() {
  local dir="$1"; shift
  local args=() targets=()
  while (($#)); do
    if [ "$1" = "--" ]; then shift; targets=("$@"); break; fi
    args+=("$1"); shift
  done
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "${args[@]}"
  if ((${#targets[@]})); then
    cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$JOBS"
  fi
}
