#!/usr/bin/env bash
# End-to-end: examples/roce_study/convoy.sh as a user runs it.  The packet
# and flow levels (flow with FLOW_ACK_LOAD 1), given the same schedule (the
# packet-level simulation's own messages, replayed by etsim netsim), agree
# message by message: median within 2 %, p90 within 5 %.  The two whole
# simulations differ much more: ring pieces bunch on links (docs/netsim.md).
. "$(dirname "$0")/../lib.sh"

ETSIM_BIN=$BIN "$SRC/examples/roce_study/convoy.sh" "$T/out" > "$T/log" 2>&1 || fail "convoy.sh: $(cat "$T/log")"
cat "$T/log"
python3 - "$T/log" <<'PY' || fail "levels on the same schedule"
import re, sys
log = open(sys.argv[1]).read()
m = re.search(r"(\d+) messages: .* median ([-+\d.]+) %, p10 ([-+\d.]+) %, p90 ([-+\d.]+) %", log)
assert m, log
n, med, p10, p90 = int(m[1]), float(m[2]), float(m[3]), float(m[4])
assert n == 32 * 62 * 4, n          # 32 NPUs, 2 (n - 1) steps, 4 chunks
assert abs(med) <= 2 and -5 <= p10 and p90 <= 5, (med, p10, p90)
flow = int(re.search(r"^flow +(\d+) ns", log, re.M)[1])
# flow level without ACK load, no piece ever shares a link: the closed form
# per step is (wire bytes / rate + 2 links x 1 us + 1 store-and-forward) on
# a leaf, plus 2 more links across; the chain of 4 x 62 steps runs through
# the slower crossing once per revolution, so the run is at least 248 short steps
step = (131072 + 132 * 36) * 8 / 100e9 * 1e9 + 2000 + 1036 * 8 / 100
assert 248 * step <= flow <= 248 * (step + 2200), (flow, step)
# with credits no piece shares a link, and the two levels agree within the
# ACK bytes and per-packet costs (5 %)
rows = {k: (int(t), int(m)) for k, t, m in
        re.findall(r"^(\w+), --ring-window 1 +(\d+) ns +up to +(\d+)", log, re.M)}
assert set(rows) == {"flow", "packet"}, rows
assert rows["flow"][1] == 1 and rows["packet"][1] == 1, rows
assert abs(rows["packet"][0] / rows["flow"][0] - 1) <= 0.05, rows
PY
