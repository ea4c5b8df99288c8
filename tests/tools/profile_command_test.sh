#!/usr/bin/env bash
# `loom profile -- PROGRAM` (tools/loom/profile.cpp, Note [Profiling a program from outside]):
# a program that crashes after its ops leaves a trace that parses and holds them, and loom
# profile passes the program's status on; bad usage is refused with a message.
# Usage: profile_command_test.sh LOOM PROGRAM WORKDIR
set -euo pipefail
loom="$1" program="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
status=0
"$loom" profile --out "$work/crash" --flush-seconds 0.1 -- "$program" 600 > "$work/out.txt" 2>&1 ||
  status=$?
cat "$work/out.txt"
[ "$status" = 134 ] || fail "loom profile exited $status, expected the program's 134 (SIGABRT)"
grep -q "the trace up to its last write is" "$work/out.txt" || fail "no word on the partial trace"
python3 - "$work/crash/trace.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["name"] for e in events if e.get("ph") == "X"}
assert "aten::mm" in names or "aten::matmul" in names, sorted(names)[:20]
print("the crashed program's trace holds %d events" % len(events))
PY
# Usage errors: exit 2 with the usage.
status=0
"$loom" profile --out "$work/x" > "$work/usage.txt" 2>&1 || status=$?
[ "$status" = 2 ] && grep -q "no program given" "$work/usage.txt" || fail "a missing program: $status $(cat "$work/usage.txt")"
status=0
"$loom" profile --flush-seconds soon -- true > "$work/usage.txt" 2>&1 || status=$?
[ "$status" = 2 ] && grep -q "flush-seconds" "$work/usage.txt" || fail "a bad --flush-seconds: $status"
rm -rf "$work"
