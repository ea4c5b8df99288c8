#!/usr/bin/env bash
# Follows docs/guide/profiling.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install) and checks what the guide says:
# the tables, the trace (valid JSON in Chrome's trace format, with op, backward and counter
# events), `loom train --profile`'s files, and `loom profile`'s output.
# Run by ctest with the source and build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" profiling.md profiling 1

# Section 3: the tables and the trace.
grep -q "^Name .*Self %.*Self Mem.*Peak Mem" <<<"$out" || fail "no table with memory columns"
grep -Eq "^aten::(conv2d|convolution_backward) " <<<"$out" || fail "no convolution in the table"
grep -Eq "^[0-9]+ events, [1-9][0-9]* memory events; wrote prof/trace.json$" <<<"$out" ||
  fail "the program did not report its events"
grep -Eq "^peak tensor memory on the CPU: [1-9][0-9]* bytes$" <<<"$out" || fail "no peak memory"
python3 - "$work/prof/trace.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
kinds = {e["ph"] for e in events}
assert {"X", "M", "C", "s", "f"} <= kinds, kinds
ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
assert ops and all(e["dur"] >= 0 and e["ts"] >= 0 for e in ops)
assert any(e["args"].get("provider") for e in ops), "no op names its provider"
assert any(e["args"].get("input_shapes") for e in ops), "no op has shapes"
assert any(e["cat"] == "backward" for e in events if e["ph"] == "X"), "no backward node"
ranges = {e["name"] for e in events if e["ph"] == "X" and e["cat"] == "user_range"}
assert "train_step" in ranges and "Optimizer.step#SGD.step" in ranges, ranges
nodes = {e["name"] for e in events if e["ph"] == "X" and e["cat"] == "backward"}
assert "Conv2dBackward0" in nodes, nodes
# What Chrome's trace format requires of each kind (Perfetto's JSON importer reads the same).
flows = {}
for e in events:
    assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), e
    if e["ph"] == "X":
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
    elif e["ph"] == "C":
        assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
    elif e["ph"] in ("s", "f"):
        flows.setdefault(e["id"], set()).add(e["ph"])
    elif e["ph"] == "M":
        assert e["name"] in ("process_name", "thread_name") and e["args"]["name"], e
    else:
        raise AssertionError("unexpected phase %r" % e["ph"])
assert flows and all(v == {"s", "f"} for v in flows.values()), flows
print("trace.json: %d events, %d ops, %d forward-backward arrows" % (len(events), len(ops), len(flows)))
PY
# Perfetto's own trace processor, where its binary is at hand (the perfetto package downloads
# it from outside PyPI at first use, which CI's machines cannot): LOOM_PERFETTO_SHELL=<path>.
if [ -n "${LOOM_PERFETTO_SHELL:-}" ]; then
  slices="$(printf 'select count(*) from slice;\n' | "$LOOM_PERFETTO_SHELL" -q /dev/stdin "$work/prof/trace.json" | tail -1)"
  [ "${slices//[^0-9]/}" -gt 0 ] || fail "Perfetto's trace processor read no slices: $slices"
fi

# Section 4: loom train --profile.
test -s "$work/runs/prof/trace.json" || fail "loom train --profile wrote no trace.json"
grep -q "^By op:" "$work/runs/prof/profile.txt" || fail "profile.txt lacks the op table"
grep -q "^By op and provider:" "$work/runs/prof/profile.txt" || fail "profile.txt lacks the provider table"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/runs/prof/trace.json"

# Section 5: loom profile.
grep -q "^Name " "$work/outside.txt" || fail "loom profile printed no table"
grep -q "loom profile: .*trace.json" "$work/outside.txt" || fail "loom profile did not name the trace"
test -s "$work/outside/trace.json" && test -s "$work/outside/profile.txt" ||
  fail "loom profile left no trace.json / profile.txt"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/outside/trace.json"
done_with_guide
