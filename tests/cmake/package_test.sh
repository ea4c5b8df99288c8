#!/usr/bin/env bash
# The installed package's rules (cmake/LoomPackage.cmake, extension_sdk/cmake/LoomConfig.cmake.in),
# against the installed, moved prefix of the fixture docs_install_prefix: which components
# exist, that a C++ component of another version is refused with the reason, that plain
# find_package(Loom) offers the C++ targets, that `sdk` alone loads none of them, and that
# loom-cpp.pc and the C++ libraries' sonames carry the whole version.
# Usage: package_test.sh SRC BUILD
set -euo pipefail
build="$(cd "$2" && pwd)"
prefix="$build/guide-tests/loom-prefix"
[ -e "$prefix/lib/cmake/Loom/LoomConfig.cmake" ] || { echo "no install in $prefix"; exit 1; }
work="$build/package-test"
rm -rf "$work"
mkdir -p "$work"
version="$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix/lib/cmake/Loom/LoomConfigVersion.cmake")"
IFS=. read -r major minor patch <<<"$version"
fail() { echo "FAIL: $*"; exit 1; }
# says TEXT PATTERN: whether TEXT holds PATTERN once CMake's line wrapping is undone. CMake wraps
# an error's reason at a width that counts the paths in it, so a phrase breaks across lines
# depending on where the build tree lies.
says() { tr '\n' ' ' <<<"$1" | tr -s ' ' | grep -q -- "$2"; }

# configure NAME LANGUAGES FIND_ARGS: configures a project whose only line is find_package(Loom
# FIND_ARGS) and reports which targets exist; prints CMake's output, returns its status.
configure() {
  local name="$1" langs="$2" args="$3"
  mkdir -p "$work/$name"
  cat > "$work/$name/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project($name $langs)
find_package(Loom $args PATHS "$prefix" NO_DEFAULT_PATH)
foreach(t Loom::loom Loom::sdk Loom::core Loom::nn Loom::optim Loom::data Loom::cpp)
  if(TARGET \${t})
    message(STATUS "target \${t}")
  endif()
endforeach()
message(STATUS "LOOM_CPP_LIBRARIES=\${LOOM_CPP_LIBRARIES}")
CMAKE
  echo "-- find_package(Loom $args)" >&2
  # Only the prefix under test (PATHS ... NO_DEFAULT_PATH above): no Loom from the environment,
  # a system prefix or CMake's package registries; Abseil and Boost are found as usual.
  env -u CMAKE_PREFIX_PATH -u Loom_DIR -u PKG_CONFIG_PATH \
    cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF 2>&1
}

# 1. The whole C++ API by component, at this version and at its major.minor.
out="$(configure exact CXX "$major.$minor REQUIRED COMPONENTS cpp")" || fail "COMPONENTS cpp: $out"
grep -q "target Loom::cpp" <<<"$out" && grep -q "LOOM_CPP_LIBRARIES=Loom::cpp" <<<"$out" ||
  fail "COMPONENTS cpp did not define Loom::cpp: $out"
out="$(configure parts CXX "$version REQUIRED COMPONENTS nn optim data")" || fail "nn optim data: $out"
grep -q "target Loom::nn" <<<"$out" || fail "COMPONENTS nn: no Loom::nn: $out"

# 2. Another version of the C++ API: refused, saying why. (The stable ABI's rule, same major
#    version, lets the version file pass it; the C++ rule is stricter.)
other="$major.$((minor + 1))"
[ "$minor" -gt 0 ] && other="$major.$((minor - 1))"
if out="$(configure older CXX "$other REQUIRED COMPONENTS cpp")"; then
  grep -q "target Loom::cpp" <<<"$out" && fail "Loom $version accepted a request for C++ API $other"
fi
says "$out" "binary" || says "$out" "could not be found\|not found\|NOT FOUND\|version" ||
  fail "refusing C++ API $other gave no reason: $out"
if [ "$minor" -gt 0 ]; then
  says "$out" "compatible within one version only" ||
    fail "refusing C++ API $other did not say why: $out"
fi

# 3. A component that is not there: refused, naming the ones that are.
if out="$(configure nosuch NONE "REQUIRED COMPONENTS nosuch")"; then
  fail "COMPONENTS nosuch was accepted: $out"
fi
says "$out" "has no component 'nosuch'" && says "$out" "optim" ||
  fail "COMPONENTS nosuch: unclear error: $out"

# 4. No component: the C++ API where its dependencies are found; `sdk` alone: the stable ABI only.
out="$(configure plain CXX "REQUIRED")" || fail "plain find_package(Loom): $out"
grep -q "target Loom::cpp" <<<"$out" && grep -q "target Loom::loom" <<<"$out" ||
  fail "plain find_package(Loom) lacks Loom::cpp or Loom::loom: $out"
out="$(configure sdk C "REQUIRED COMPONENTS sdk")" || fail "COMPONENTS sdk: $out"
grep -q "target Loom::loom" <<<"$out" || fail "COMPONENTS sdk: no Loom::loom: $out"
grep -q "target Loom::core" <<<"$out" && fail "COMPONENTS sdk loaded the C++ targets: $out"

# 5. pkg-config and sonames.
pc="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion loom-cpp)"
[ "$pc" = "$version" ] || fail "loom-cpp.pc says version $pc, the package $version"
libs="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs loom-cpp)"
for l in -lloom_core -lloom_nn -lloom_optim -lloom_data; do
  [[ " $libs " == *" $l "* ]] || fail "pkg-config --libs loom-cpp lacks $l: $libs"
done
for l in core nn optim data; do
  soname="$(readelf -d "$prefix/lib/libloom_$l.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$soname" = "libloom_$l.so.$version" ] || fail "libloom_$l.so: soname $soname, not libloom_$l.so.$version"
done
rm -rf "$work"
echo "package rules hold for Loom $version"
