#!/usr/bin/env bash
# End-to-end: `etsim sim --net-timeline` on the packet and flow networks.
# The timeline must not change the simulation, its message slices must be
# the messages of the FCT file, and on a one-switch star every byte the
# hosts sent must come out of the switch towards the hosts (lossless).
. "$(dirname "$0")/../lib.sh"
command -v python3 > /dev/null || fail "python3 is needed (scripts/deps.sh installs it)"
SYS=$SH/configs/astra-sim/system/Ring_4chunks.json
need_shared configs/astra-sim/system/Ring_4chunks.json

"$BIN" gen micro --coll all-reduce --size 4MiB --npus 8 -o "$T/ar" > /dev/null || fail "gen exit $?"
printf 'topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 11.64 ]\nlatency: [ 1000 ]\n' > "$T/net.yml"
sim() { "$BIN" sim --workload "$T/ar" --network "$T/net.yml" --system "$SYS" --quiet "$@"; }

sim --backend packet --net-fct "$T/f0" > "$T/o0" || fail "packet exit $?"
sim --backend packet --net-fct "$T/f1" --net-timeline "$T/tl.json" > "$T/o1" || fail "packet timeline exit $?"
cmp -s "$T/o0" "$T/o1" || fail "--net-timeline changed the result: $(diff "$T/o0" "$T/o1" | head -4)"
cmp -s "$T/f0" "$T/f1" || fail "--net-timeline changed the FCT lines"
python3 - "$T/tl.json" "$T/f1" <<'EOF' || fail "packet timeline"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
fct = [l.split() for l in open(sys.argv[2])]
b = {e["id"]: e for e in ev if e["ph"] == "b"}
e = {x["id"]: x for x in ev if x["ph"] == "e"}
assert len(b) == len(fct) == len(e), (len(b), len(fct))
got = sorted(round((e[i]["ts"] - b[i]["ts"]) * 1000) for i in b)
assert got == sorted(int(l[6]) for l in fct), "slices differ from the FCT lines"
assert sum(x["args"]["bytes"] for x in b.values()) == sum(int(l[4]) for l in fct)
names = {x["pid"]: x["args"]["name"] for x in ev if x["ph"] == "M" and x["name"] == "process_name"}
tx = {}
for x in ev:
    if x["ph"] == "C" and x["name"] == "tx Gb/s":
        for k, v in x["args"].items():
            tx.setdefault((x["pid"], k), []).append((x["ts"], v))
def total(pts):  # bytes: a counter holds its value until the next event
    return sum(v * (pts[i + 1][0] - t) for i, (t, v) in enumerate(pts[:-1])) * 1e3 / 8
up = sum(total(p) for (pid, k), p in tx.items() if names[pid].startswith("host"))
down = sum(total(p) for (pid, k), p in tx.items() if names[pid].startswith("switch"))
payload = sum(int(l[4]) for l in fct)
assert abs(up - down) <= 1e-5 * up, (up, down)
assert payload < up < 1.1 * payload, (payload, up)
print("%d messages, %.0f bytes up = %.0f down, payload %d" % (len(b), up, down, payload))
EOF

# flow level: the messages only
sim --backend flow --net-fct "$T/ff" --net-timeline "$T/fl.json" > /dev/null || fail "flow exit $?"
python3 - "$T/fl.json" "$T/ff" <<'EOF' || fail "flow timeline"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
n = sum(1 for l in open(sys.argv[2]))
assert n > 0 and sum(1 for e in ev if e["ph"] == "b") == n
assert not [e for e in ev if e["ph"] == "C"]
EOF

# refused where there is no such network, and a bad step
sim --net-timeline "$T/x.json" > /dev/null 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "need --backend flow or packet" "$T/e" || fail "analytical: $rc $(cat "$T/e")"
sim --backend packet --net-timeline "$T/x.json" --net-timeline-step 0 > /dev/null 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "net-timeline-step" "$T/e" || fail "step 0: $rc $(cat "$T/e")"
[ ! -e "$T/x.json" ] || fail "a refused run wrote a timeline"
echo "ok"
