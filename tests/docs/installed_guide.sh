# Sourced by the tests of the C++ API guides: follows a guide verbatim (run_guide.sh) against
# the installed, moved prefix of the fixture (install_prefix.sh), whose install is what the
# guides' section 1 does, so that section is not run.
#
#   source installed_guide.sh
#   follow_installed_guide SRC BUILD GUIDE.md NAME [SECTION...]   # sections left unrun
#   ... checks on "$out" (everything the guide printed) and files under "$work" ...
#   done_with_guide                                               # removes the work folder
#
# Sets LOOM_PREFIX (exported, as the guides expect), work, log, out; fail MESSAGE exits 1.

fail() { echo "FAIL: $*"; exit 1; }

follow_installed_guide() {
  local src="$1" build guide="$3" name="$4"
  build="$(cd "$2" && pwd)"
  shift 4
  export LOOM_PREFIX="$build/guide-tests/loom-prefix"
  [ -e "$LOOM_PREFIX/lib/cmake/Loom/LoomConfig.cmake" ] || fail "no install in $LOOM_PREFIX"
  work="$build/guide-tests/$name"
  log="$work.log"
  mkdir -p "$(dirname "$log")"
  bash "$src/tests/docs/run_guide.sh" "$src" "$build" "$src/docs/guide/$guide" "$work" "$@" \
    2>&1 | tee "$log"
  out="$(cat "$log")"
}

done_with_guide() { rm -rf "$work" "$work.sh" "$log"; }
