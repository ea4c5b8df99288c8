#!/usr/bin/env bash
# Runs the core, dispatcher, plugin, operator and autograd suites and the conformance harness under
# ASan+UBSan, and the
# registration race, dispatcher and profiler suites under ThreadSanitizer. Called by
# scripts/run-tests.sh.
# A suite joins by adding its target name to the lists below.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

# Test executables that exist in this tree (targets named after their *_test.cpp file).
existing() {
  for t in "$@"; do
    grep -qs "loom_add_test($t " "$ROOT"/tests/*/CMakeLists.txt && echo "$t"
  done
}

asan_tests=($(existing dispatcher_test schema_parser_test registration_race_test \
  $(cd "$ROOT/tests" && ls core/*_test.cpp plugins/*_test.cpp 2>/dev/null | xargs -n1 basename 2>/dev/null | sed 's/\.cpp$//')))
# The operator suites are globbed (tests/ops/<family>_test.cpp -> ops_<family>_test).
for f in "$ROOT"/tests/ops/*_test.cpp; do
  [ -e "$f" ] && asan_tests+=("ops_$(basename "${f%.cpp}")")
done
for f in "$ROOT"/tests/ops/nn/*_test.cpp; do
  [ -e "$f" ] && asan_tests+=("ops_nn_$(basename "${f%.cpp}")")
done
# The autograd suites (tests/autograd/<name>_test.cpp -> autograd_<name>_test): LeakSanitizer
# also catches a reference cycle in the graph.
for f in "$ROOT"/tests/autograd/*_test.cpp; do
  [ -e "$f" ] && asan_tests+=("autograd_$(basename "${f%.cpp}")")
done
# The conformance harness runs every op on every dtype and layout: the widest net for
# out-of-bounds reads in kernels.
asan_tests+=(op_conformance_test)
# Unloading the oneDNN plugin mid-run, and the file readers (safetensors, IDX, CSV, npy),
# which take bytes from outside.
[ -e "$ROOT/tests/plugins/cpu_onednn/provider_switch_test.cpp" ] && asan_tests+=(onednn_provider_switch_test)
for f in safetensors datasets; do
  [ -e "$ROOT/tests/plugins/data/${f}_test.cpp" ] && asan_tests+=("data_${f}_test")
done
# The stable C ABI: reference counts and buffers handed across the boundary.
for f in capi stable; do
  [ -e "$ROOT/tests/extension_sdk/${f}_test.cpp" ] && asan_tests+=("${f}_test")
done
# Graph capture keeps tensors by address while a function runs (plugins/compile).
for f in "$ROOT"/tests/plugins/compile/*_test.cpp; do
  [ -e "$f" ] && asan_tests+=("compile_$(basename "${f%.cpp}")")
done
# Only these suites are built (their plugins and test plugins come as dependencies), at -O1
# with line tables: half the compile time of -O2 -g, and what ASan recommends.
echo "== ASan+UBSan: ${asan_tests[*]}"
loom_build "$ROOT/build-asan" -DLOOM_SANITIZE=address -DLOOM_BUILD_BENCH=OFF \
  -DLOOM_BUILD_TESTS=ON -DLOOM_WITH_DOXYGEN=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -- "${asan_tests[@]}"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for t in "${asan_tests[@]}"; do
  echo "-- $t (ASan+UBSan)"
  # LeakSanitizer's tracer crashes at exit (signal 11 while it stops the threads) once oneDNN
  # has run on a multi-thread OpenMP pool; one thread keeps leak detection on for that suite.
  threads=()
  [[ "$t" == onednn_* || "$t" == capi_test || "$t" == stable_test ]] && threads=(env OMP_NUM_THREADS=1)
  run=(env LOOM_TEST_PLUGIN_DIR="$ROOT/build-asan/lib/loom/test_plugins" LOOM_PLUGIN_PATH=
       "${threads[@]}" "$ROOT/build-asan/bin/$t" --gtest_brief=1)
  log="$ROOT/build-asan/$t.asan.log"
  if ! "${run[@]}" >"$log" 2>&1; then
    cat "$log"
    # Note [LSan and dynamic TLS]: gcc-12's LeakSanitizer can crash in its tracer while it
    # walks the dynamic TLS of dlopen'ed plugins ("Tracer caught signal 11", a bogus DTLS
    # address), after every test passed. Only then the suite runs again with TLS left out of
    # the leak scan; what only libgomp's thread-local pool holds is then suppressed.
    grep -q "Tracer caught signal" "$log" || exit 1
    echo "   LeakSanitizer's tracer crashed on dynamic TLS: once more without scanning TLS"
    LSAN_OPTIONS="use_tls=0:suppressions=$ROOT/tests/lsan_no_tls.supp" "${run[@]}"
  else
    tail -n 3 "$log"
  fi
done

# The profiler too: per-thread buffers that start() and stop() take from other threads.
echo "== ThreadSanitizer: registration_race_test dispatcher_test profiler_test"
loom_build "$ROOT/build-tsan" -DLOOM_SANITIZE=thread -DLOOM_BUILD_BENCH=OFF \
  -DLOOM_BUILD_TESTS=ON -DLOOM_WITH_DOXYGEN=OFF -- registration_race_test dispatcher_test \
  profiler_test
# gcc-12's TSan aborts ("unexpected memory mapping") on kernels with high mmap
# randomisation; running without ASLR avoids that.
no_aslr=()
setarch "$(uname -m)" -R true 2>/dev/null && no_aslr=(setarch "$(uname -m)" -R)
for t in registration_race_test dispatcher_test profiler_test; do
  echo "-- $t (TSan)"
  TSAN_OPTIONS="halt_on_error=1" LOOM_PLUGIN_PATH= \
    LOOM_TEST_PLUGIN_DIR="$ROOT/build-tsan/lib/loom/test_plugins" \
    "${no_aslr[@]}" "$ROOT/build-tsan/bin/$t" --gtest_brief=1
done
