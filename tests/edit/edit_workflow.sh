#!/usr/bin/env bash
# The Mystique-style workflow of docs/edit.md, command for command: take
# PARAM's ResNet-50 PyTorch trace, cut one step, time it from a profile of
# chakra.0.et, halve compute for a future GPU, anonymize it, make it two
# ranks, and hand it to `sim` and `replay --dry-run`.  The anonymized set
# simulates to the same cycles as the same edit without anonymizing, and
# differs from it only in names and the attributes stripped.
. "$(dirname "$0")/../lib.sh"
need_shared traces/chakra/feeder_tests_trace.tar.gz traces/param/resnet_2gpu_et.json.gz
cd "$T" || exit 1
etsim() { "$BIN" "$@"; }
tar xzf "$SH/traces/chakra/feeder_tests_trace.tar.gz" && cp tests/data/chakra.0.et . || fail tar
cp "$SH/traces/param/resnet_2gpu_et.json.gz" . || fail cp

etsim convert --from pytorch resnet_2gpu_et.json.gz -o resnet.et > /dev/null || fail convert
etsim jsonize chakra.0.et | python3 -c '
import json, re, sys, collections
t = collections.defaultdict(list)
for line in sys.stdin:
    o = json.loads(line)
    if "type" in o and o.get("durationMicros"):
        t[re.sub(r"\(\d+\)$", "", o["name"])].append(int(o["durationMicros"]))
print("name,duration_us")
for n in sorted(t):
    print("\"%s\",%.1f" % (n.replace("\"", "\"\""), sum(t[n]) / len(t[n])))
' > profile.csv || fail profile
SECRET=k3y
etsim edit resnet.et -o bench --iter 1 --profile profile.csv --scale-time 0.5 \
  --anonymize hash --salt "$SECRET" --strip-attrs sim --npus 2 > out || fail "edit: $(cat out)"
grep -q "3 iteration(s), by repeating structure (1 node(s) outside them); kept 1-1" out || fail "$(cat out)"
grep -q "^bench: 2 rank(s) in 1 file(s), 1238 node(s) written from 3712 read (2474 dropped" out ||
  fail "$(cat out)"
etsim validate -q bench || fail validate
etsim jsonize bench.c0.et | grep -q 'aten::' && fail "a name survived"

# Durations: set by the profile, then halved (conv2d: 26.9 us in the
# profile, 13.45 us = 13 whole us and duration_ns 13450).
etsim edit resnet.et -o plain --iter 1 --profile profile.csv --scale-time 0.5 --npus 2 -q || fail plain
etsim jsonize plain.c0.et | grep '"name":"aten::conv2d"' | head -1 | grep -q '"durationMicros":"13".*"name":"duration_ns","int64Val":"13450"' ||
  fail "profile and scale: $(etsim jsonize plain.c0.et | grep '"name":"aten::conv2d"' | head -1 | cut -c1-400)"

cat > net2.yml << 'Y'
topology: [ Switch ]
npus_count: [ 2 ]
bandwidth: [ 25.0 ]
latency: [ 2000.0 ]
Y
sed 's/\["ring", "ring"\]/["ring"]/; s/\["direct", "direct"\]/["direct"]/' \
  "$SRC/examples/dp_step/system.json" > sys1.json
etsim sim --workload bench --network net2.yml --system sys1.json > sim1 2> err || fail "sim: $(cat err)"
etsim sim --workload plain --network net2.yml --system sys1.json > sim2 2> err || fail "sim: $(cat err)"
grep '^sys\[' sim1 > c1
grep '^sys\[' sim2 > c2
[ "$(wc -l < c1)" -eq 2 ] || fail "two NPUs: $(cat c1)"
cmp -s c1 c2 || fail "anonymized bench simulates differently: $(cat c1 c2)"
etsim replay --dry-run bench > dry 2> err || fail "replay --dry-run: $(cat err)"
grep -Eq '^max +2476 ' dry || fail "dry run: $(cat dry)"
etsim diff bench plain > /dev/null && fail "diff should see the anonymization"
etsim diff --ignore-names --ignore-io --ignore-metadata --ignore-attr rf_id --ignore-attr fw_parent \
  --ignore-attr seq_id --ignore-attr scope --ignore-attr tid --ignore-attr fw_tid \
  --ignore-attr op_schema bench plain > d || fail "bench and plain differ beyond names: $(tail -3 d)"
echo ok
