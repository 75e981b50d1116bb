#!/usr/bin/env bash
# End-to-end: fabric generators from the command line.  `etsim gen topo`
# writes the ns-3 topology format; the same spec works in place of a
# topology file (TOPOLOGY_FILE, --net-topology) with the same results;
# bad specs are refused with the key named.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/netsim

# The 16-host Clos of the ns-3 comparison (4 leaves x 4 hosts, 2 spines),
# generated, is byte for byte the hand-written file.
"$BIN" gen topo clos2:leaves=4,hosts=4,spines=2 -o "$T/c.topo" > "$T/out" || fail "gen topo exit $?"
cmp -s "$T/c.topo" "$EX/clos16.topo" || fail "generated Clos differs: $(diff "$T/c.topo" "$EX/clos16.topo" | head -3)"
grep -q "16 hosts, 6 switches, 24 links" "$T/out" || fail "summary: $(cat "$T/out")"

# A spec as TOPOLOGY_FILE: the same FCT lines as the file.
sed 's|^TOPOLOGY_FILE .*|TOPOLOGY_FILE clos2:leaves=4,hosts=4,spines=2|' "$EX/clos16_ring.cfg" > "$T/spec.cfg"
cp "$EX/clos16_ring.flows" "$T/"
"$BIN" netsim --quiet --fct "$T/f1" "$T/spec.cfg" || fail "netsim with a spec exit $?"
"$BIN" netsim --quiet --fct "$T/f2" "$EX/clos16_ring.cfg" || fail "netsim with the file exit $?"
cmp -s "$T/f1" "$T/f2" || fail "spec and file runs differ"

# Sizes: a k=4 fat-tree has 16 hosts, 8 edge + 8 aggregation + 4 core
# switches and 48 links; 2 rail servers of 4 NPUs with one spine have 4 rail
# + 2 scale-up + 1 spine switches and 8 NIC + 8 NVLink + 4 spine links.
"$BIN" gen topo fattree:k=4 -o "$T/f.topo" > /dev/null || fail "fattree exit $?"
[ "$(head -1 "$T/f.topo")" = "36 20 48" ] || fail "fattree header: $(head -1 "$T/f.topo")"
"$BIN" gen topo rail:nodes=2,gpus=4,spines=1,nvlink=900Gbps,nic=400Gbps -o "$T/r.topo" > /dev/null || fail "rail exit $?"
[ "$(head -1 "$T/r.topo")" = "15 7 20" ] || fail "rail header: $(head -1 "$T/r.topo")"
[ "$(grep -c ' 900Gbps ' "$T/r.topo")" -eq 8 ] || fail "rail NVLink links"
[ "$(grep -c ' 400Gbps ' "$T/r.topo")" -eq 12 ] || fail "rail NIC and spine links"
# spines=0 is a rail fabric without a cross-rail path: no spine switch or link.
"$BIN" gen topo rail:nodes=2,gpus=4,spines=0 -o "$T/r0.topo" > /dev/null || fail "rail spines=0 exit $?"
[ "$(head -1 "$T/r0.topo")" = "14 6 16" ] || fail "rail spines=0 header: $(head -1 "$T/r0.topo")"
# Rates and delays round-trip through the file: 25 Gb/s and 2 us.
"$BIN" gen topo star:hosts=2,rate=25Gbps,delay=2us -o - > "$T/s.topo" || fail "star exit $?"
[ "$(sed -n 3p "$T/s.topo")" = "0 2 25Gbps 0.002ms 0" ] || fail "star link: $(sed -n 3p "$T/s.topo")"

# Bad specs: exit 2, the spec and the key named, no file.
for bad in "clos2:leaves=4,hosts=4|'spines' is required" \
           "clos2:leaves=4,hosts=4,spine=2|unknown key 'spine'" \
           "fattree:k=3|k must be even" \
           "star:hosts=4,rate=fast|rate 'fast' is not a rate" \
           "mesh:n=4|not a topology spec"; do
  spec=${bad%%|*}; msg=${bad#*|}
  "$BIN" gen topo "$spec" -o "$T/bad.topo" 2> "$T/e"; rc=$?
  [ $rc -eq 2 ] || fail "$spec: exit $rc"
  grep -qF "$msg" "$T/e" || fail "$spec: message $(cat "$T/e")"
  [ ! -e "$T/bad.topo" ] || fail "$spec: left a file"
done
echo "ok"
