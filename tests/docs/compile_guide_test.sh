#!/usr/bin/env bash
# Follows docs/guide/compile.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install) and checks what the guide says:
# the compiled function matches eager (values, and gradients in training), the first run
# builds its loop and the second loads it from the disk cache, LOOM_LOGS shows the graph and the
# generated code, and without a compiler one warning is given and the results stay right. The timings are printed, never checked.
# Run by ctest with the source and build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" compile.md compile 1

# The program runs four times: twice in section 3, once in 4 (stdout discarded), once in 5.
[ "$(grep -c '^max |compiled - eager| = .* (< 1e-5)$' <<<"$out")" = 3 ] ||
  fail "a run did not match eager within 1e-5"
# Training: the gradient matches eager's; fused (forward and backward) except without a compiler.
training="$(grep '^max |compiled grad - eager grad| = ' <<<"$out")"
[ "$(grep -c ' (< 1e-5), fused_groups=[01]$' <<<"$training")" = 3 ] ||
  fail "a run's compiled gradient did not match eager within 1e-5"
[ "$(grep -c 'fused_groups=1$' <<<"$training")" = 2 ] ||
  fail "the training graph did not fuse in section 3"
grep -Eq '^eager: +[0-9.]+ ms per call$' <<<"$out" || fail "no eager timing"
grep -Eq '^compiled: +[0-9.]+ ms per call$' <<<"$out" || fail "no compiled timing"
stats="$(grep '^compiles=' <<<"$out")"
[ "$(wc -l <<<"$stats")" = 3 ] || fail "expected three stats lines, got: $stats"
# Section 3: cold, then warm from the disk cache; section 5: no compiler.
[ "$(sed -n 1p <<<"$stats")" = "compiles=1 cache_hits=0 fallbacks=0" ] ||
  fail "the first run did not build its loop: $(sed -n 1p <<<"$stats")"
[ "$(sed -n 2p <<<"$stats")" = "compiles=0 cache_hits=1 fallbacks=0" ] ||
  fail "the second run did not load the loop from the cache: $(sed -n 2p <<<"$stats")"
[ "$(sed -n 3p <<<"$stats")" = "compiles=0 cache_hits=0 fallbacks=1" ] ||
  fail "the run without a compiler did not fall back: $(sed -n 3p <<<"$stats")"
groups="$(grep '^captures=' <<<"$out")"
grep -Eq '^captures=1 replays=[1-9][0-9]* fused_groups=1$' <<<"$(sed -n 1,2p <<<"$groups")" ||
  fail "the chain was not one fused group: $groups"
[ "$(sed -n 3p <<<"$groups" | grep -c 'fused_groups=0$')" = 1 ] ||
  fail "fused groups without a compiler: $groups"
ls "$work"/loom-cache/compile/*.so "$work"/loom-cache/compile/*.meta > /dev/null ||
  fail "no cache entry in the guide's LOOM_CACHE_DIR"

# Section 4: the graph and the generated code.
grep -q 'aten::gelu' "$work/logs.txt" || fail "LOOM_LOGS=graph printed no gelu node"
grep -q 'loom_group_0' "$work/logs.txt" || fail "LOOM_LOGS=code printed no loom_group_0"

# Section 5: one warning, naming the missing compiler.
[ "$(grep -c "no C++ compiler found ('/nonexistent/c++'" <<<"$out")" = 1 ] ||
  fail "not exactly one no-compiler warning"
done_with_guide
