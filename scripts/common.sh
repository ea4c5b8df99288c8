# Shared by the run-*.sh scripts: repository root, parallelism, configure+build.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc 2>/dev/null || echo 2)"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"

# loom_build DIR [cmake args...] -- [targets...]
loom_build() {
  local dir="$1"; shift
  local args=() targets=()
  while (($#)); do
    if [ "$1" = "--" ]; then shift; targets=("$@"); break; fi
    args+=("$1"); shift
  done
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}"
  if ((${#targets[@]})); then
    cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$JOBS"
  fi
}
