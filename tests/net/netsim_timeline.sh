#!/usr/bin/env bash
# End-to-end: `etsim netsim --timeline` as a user runs it.  The timeline's
# counters must add up to the run's own totals (bytes sent and paused time
# per port from --ports), its message slices must equal the FCT lines, and
# recording must not change a single byte of the other outputs.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/netsim
command -v python3 > /dev/null || fail "python3 is needed (scripts/deps.sh installs it)"

# check.py TIMELINE PORTS FCT: integrals of tx Gb/s and paused % per port
# against the ports table, each message's slice against its FCT line.
cat > "$T/check.py" <<'EOF'
import json, sys
tl, ports, fct = sys.argv[1:4]
ev = json.load(open(tl))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev
         if e["ph"] == "M" and e["name"] == "process_name"}
# node -> {series: [(ts_us, value)]} per counter
series = {}
for e in ev:
    if e["ph"] != "C" or e["name"] not in ("tx Gb/s", "paused %"):
        continue
    for k, v in e["args"].items():
        series.setdefault((e["pid"] - 1, e["name"], k), []).append((e["ts"], v))
def integral(pts):
    # a counter holds its value until the next event
    return sum(v * (pts[i + 1][0] - pts[i][0]) for i, (t, v) in enumerate(pts[:-1]))
bad = 0
checked = 0
for line in open(ports):
    node, port, peer, rate, tx, util, pauses, paused_us, peak = line.split()
    key = "p%s>%s" % (port, peer)
    tx_pts = series.get((int(node), "tx Gb/s", key))
    if int(tx) == 0 and float(paused_us) == 0:
        if tx_pts and any(v for _, v in tx_pts):
            print("idle port %s %s has traffic in the timeline" % (node, key)); bad += 1
        continue
    got = integral(tx_pts) * 1e3 / 8 if tx_pts else 0  # Gb/s * us -> bytes
    if abs(got - int(tx)) > 1e-5 * int(tx) + 1:
        print("node %s %s: timeline %.1f bytes, ports table %s" % (node, key, got, tx)); bad += 1
    p_pts = series.get((int(node), "paused %", key))
    got = integral(p_pts) / 100 if p_pts else 0  # % * us -> us
    if abs(got - float(paused_us)) > 1e-4 * float(paused_us) + 0.002:
        print("node %s %s: paused %.3f us in the timeline, %s in the ports table"
              % (node, key, got, paused_us)); bad += 1
    checked += 1
begin = {e["id"]: e for e in ev if e["ph"] == "b"}
end = {e["id"]: e for e in ev if e["ph"] == "e"}
fcts = sorted(int(l.split()[6]) for l in open(fct))
slices = sorted(round((end[i]["ts"] - begin[i]["ts"]) * 1000) for i in begin)
if fcts != slices:
    print("slices %s... vs FCT %s..." % (slices[:4], fcts[:4])); bad += 1
print("%d ports, %d messages checked" % (checked, len(slices)))
sys.exit(1 if bad or not checked else 0)
EOF

# incast with a 1 MB buffer: pauses happen; every output byte-identical
# with and without the timeline; integrals match the ports table
run() { "$BIN" netsim --quiet --set BUFFER_SIZE=1 --set HAS_WIN=0 "$@" "$EX/incast8.cfg"; }
run --fct "$T/f0" --pfc "$T/p0" --ports "$T/ports0" || fail "plain run exit $?"
run --fct "$T/f1" --pfc "$T/p1" --ports "$T/ports1" --timeline "$T/tl.json" || fail "timeline run exit $?"
cmp -s "$T/f0" "$T/f1" || fail "FCT output changed by --timeline"
cmp -s "$T/p0" "$T/p1" || fail "PFC output changed by --timeline"
cmp -s "$T/ports0" "$T/ports1" || fail "ports table changed by --timeline"
[ -s "$T/p0" ] || fail "the scenario should pause"
python3 "$T/check.py" "$T/tl.json" "$T/ports1" "$T/f1" || fail "incast timeline totals"
grep -q '"name":"switch 9"' "$T/tl.json" || fail "switch 9 named"
grep -q '"name":"rate Gb/s"' "$T/tl.json" || fail "message rates"

# a 1 ns step over a 0.67 ms run: samples merge (the interval doubles), the
# totals still hold and the file stays small
run --fct "$T/f2" --ports "$T/ports2" --timeline "$T/tl2.json" --timeline-step 1 || fail "step 1 exit $?"
python3 "$T/check.py" "$T/tl2.json" "$T/ports2" "$T/f2" || fail "merged timeline totals"
[ "$(stat -c %s "$T/tl2.json")" -lt 8000000 ] || fail "merged timeline is $(stat -c %s "$T/tl2.json") bytes"

# DCQCN: the sending rates congestion control sets move below line rate
"$BIN" netsim --quiet --cc dcqcn --set HAS_WIN=0 --timeline "$T/dc.json" "$EX/incast8.cfg" || fail "dcqcn exit $?"
python3 - "$T/dc.json" <<'EOF' || fail "DCQCN rates"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
r = [v for e in ev if e.get("name") == "rate Gb/s" for v in e["args"].values()]
assert max(r) == 100 and 0 < min(v for v in r if v > 0) < 50, (max(r), min(r))
EOF

# flow level: message slices only, equal to its FCT lines
"$BIN" netsim --quiet --backend flow --fct "$T/ff" --timeline "$T/fl.json" "$EX/incast8.cfg" || fail "flow exit $?"
python3 - "$T/fl.json" "$T/ff" <<'EOF' || fail "flow-level slices"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
b = {e["id"]: e["ts"] for e in ev if e["ph"] == "b"}
e = {x["id"]: x["ts"] for x in ev if x["ph"] == "e"}
got = sorted(round((e[i] - b[i]) * 1000) for i in b)
want = sorted(int(l.split()[6]) for l in open(sys.argv[2]))
assert got == want, (got, want)
assert not [x for x in ev if x["ph"] == "C"]
EOF

# a PFC deadlock still writes the timeline (exit 1): the ring's ports end
# fully paused
"$BIN" netsim --timeline "$T/dead.json" "$EX/ring5_deadlock.cfg" 2> /dev/null; rc=$?
[ $rc -eq 1 ] || fail "deadlock exit $rc"
python3 - "$T/dead.json" <<'EOF' || fail "deadlock timeline"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pe = [e for e in ev if e.get("name") == "paused %"]
end = max(e["ts"] for e in pe)  # the closing event, all zero
last = {}
for e in pe:
    if e["ts"] < end:
        for k, v in e["args"].items():
            last[(e["pid"], k)] = v
assert sum(1 for v in last.values() if v == 100) >= 5, last
EOF

# bad options
"$BIN" netsim --timeline-step 0 --timeline "$T/x.json" "$EX/single.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "--timeline-step 0 exit $rc"
grep -q "timeline-step" "$T/e" || fail "step message: $(cat "$T/e")"
[ ! -e "$T/x.json" ] || fail "a refused run wrote a timeline"
"$BIN" netsim --timeline "$T/nodir/x.json" "$EX/single.cfg" > /dev/null 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "unwritable timeline exit $rc"
grep -q "$T/nodir/x.json" "$T/e" || fail "unwritable timeline message: $(cat "$T/e")"
echo "ok"
