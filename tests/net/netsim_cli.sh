#!/usr/bin/env bash
# End-to-end: `etsim netsim` on ns-3 RDMA scenario files as a user runs it.
# The FCT numbers are ns-3 reference points (issue 9, and measured again
# for examples/netsim/reference.csv; 100 Gb/s, 1 us links, 1000 B payload,
# 32 MB buffers): one 1 MB flow 87,091 ns, an 8-to-1 incast of 1 MB each
# 668,091 ns with PFC only and with DCTCP.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/netsim

"$BIN" netsim --help > "$T/help" || fail "--help exit $?"
grep -q "usage: etsim netsim" "$T/help" || fail "--help text"
"$BIN" --help | grep -q "^  netsim " || fail "etsim --help lists netsim"

# one flow: the exact ns-3 FCT line (addresses 0x0b000001 + id*256)
"$BIN" netsim --quiet --fct "$T/fct" "$EX/single.cfg" || fail "single exit $?"
[ "$(cat "$T/fct")" = "0b000001 0b000101 10000 100 1000000 0 87091 88000" ] ||
  fail "single FCT line: $(cat "$T/fct")"

# 8-to-1 incast: last completion, PFC only and DCTCP, each by its name
# (pfc: sim's second name for none) and by ns-3's CC_MODE number
for cc in none pfc 12 dctcp 8; do
  "$BIN" netsim --quiet --cc $cc --fct "$T/fct.$cc" "$EX/incast8.cfg" || fail "incast $cc exit $?"
  [ "$(wc -l < "$T/fct.$cc")" -eq 8 ] || fail "incast $cc: 8 FCT lines"
  last=$(awk '{ if ($7 > m) m = $7 } END { print m }' "$T/fct.$cc")
  [ "$last" = 668091 ] || fail "incast $cc last FCT $last, ns-3 gives 668091"
done
"$BIN" netsim --quiet --cc 5 "$EX/incast8.cfg" 2> "$T/err" && fail "--cc 5 accepted"
grep -q "CC_MODE 5 unknown (0 none, 1 dcqcn, 3 hpcc, 7 timely, 8 dctcp; 12 none too)" "$T/err" ||
  fail "--cc 5: $(cat "$T/err")"
awk '{ if ($1 !~ /^0b000[1-8]01$/ || $2 != "0b000001" || $5 != 1000000) exit 1 }' "$T/fct.none" ||
  fail "incast FCT fields"

# flow level on the same files: same FCT line format, within 5 % of 668,091
"$BIN" netsim --quiet --backend flow --fct "$T/fct.flow" "$EX/incast8.cfg" || fail "flow exit $?"
[ "$(wc -l < "$T/fct.flow")" -eq 8 ] || fail "flow: 8 FCT lines"
awk '{ if ($7 > m) m = $7 } END { d = m - 668091; if (d < 0) d = -d; exit !(d <= 0.05 * 668091) }' "$T/fct.flow" ||
  fail "flow-level incast: $(sort -k7n "$T/fct.flow" | tail -1)"
"$BIN" netsim --backend fluid "$EX/single.cfg" 2> /dev/null; [ $? -eq 2 ] || fail "bad backend exit"

# small buffers: PFC fires, its file has ns-3's 'time node type ifindex 1|0'
"$BIN" netsim --json --set BUFFER_SIZE=1 --set HAS_WIN=0 --pfc "$T/pfc" \
  --qlen "$T/qlen" --ports "$T/ports" --set QLEN_MON_END=700000 "$EX/incast8.cfg" > "$T/json" || fail "pfc run exit $?"
awk '$1 == 9 && $2 == 1 { f = ($3 == 0 && $5 == 8288000 && $6 >= 0.98 && $6 <= 1) } END { exit !f }' "$T/ports" ||
  fail "ports table, switch 9 port 1: $(grep '^9 1 ' "$T/ports")"
awk '$1 >= 1 && $1 <= 8 { p += $7 } END { exit !(p > 0) }' "$T/ports" || fail "ports table: host pauses"
grep -q '"drops_buffer": 0' "$T/json" || fail "lossless: $(cat "$T/json")"
# Rates are per CPU second (issue 18), the CPU time beside the wall time.
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
c = j["cpu_s"]
assert c > 0 and j["wall_s"] > 0, j
for k, n in (("events_per_s", "events"), ("packets_per_s", "packets")):
    assert abs(j[k] - j[n] / c) <= 0.01 * j[n] / c + 1, (k, j[k], j[n] / c)
' "$T/json" || fail "netsim --json rates per CPU second: $(cat "$T/json")"
"$BIN" netsim "$EX/single.cfg" | grep -Eq '^  work +[0-9]+ events, [0-9]+ packets in [0-9.]+ s CPU \([0-9.]+ s wall\), [0-9.]+ M events/s and [0-9.]+ M packets/s of CPU$' ||
  fail "netsim's work line: $("$BIN" netsim "$EX/single.cfg" | grep work)"
"$BIN" netsim --backend flow --json "$EX/single.cfg" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["cpu_s"] >= 0 and "events_per_s" in j, j
' || fail "flow-level --json has no cpu_s"
[ -s "$T/pfc" ] || fail "no PFC events"
awk '{ if (NF != 5 || $2 < 1 || $2 > 8 || $3 != 0 || $4 != 1 || ($5 != 0 && $5 != 1)) exit 1 }' "$T/pfc" ||
  fail "PFC lines: $(head -3 "$T/pfc")"
pauses=$(awk '$5 == 1' "$T/pfc" | wc -l)
grep -q "\"pauses\": $pauses," "$T/json" || fail "pause count $pauses vs summary"
head -1 "$T/qlen" | grep -q "^time: " || fail "qlen header"
grep -q "^9 1 " "$T/qlen" || fail "qlen histogram of switch 9 port 1"

# same seed, same bytes (DCQCN draws ECN marks at random)
for k in 1 2; do
  "$BIN" netsim --quiet --cc dcqcn --set HAS_WIN=0 --seed 5 --fct "$T/d$k" "$EX/incast8.cfg" || fail "dcqcn exit $?"
done
cmp -s "$T/d1" "$T/d2" || fail "dcqcn runs with one seed differ"

# a PFC deadlock is reported with the cycle, exit 1, and leaves no output
"$BIN" netsim --fct "$T/dead" "$EX/ring5_deadlock.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 1 ] || fail "deadlock exit $rc"
grep -q "pause cycle 5 -> 6 -> 7 -> 8 -> 9 -> 5" "$T/e" || fail "deadlock message: $(cat "$T/e")"
[ ! -e "$T/dead" ] || fail "deadlocked run left an FCT file"

# bad input: file:line and the key
cp "$EX/single.topo" "$EX/single.flows" "$T/"
printf 'TOPOLOGY_FILE single.topo\nFLOW_FILE single.flows\nRATE_AIX 5Mb/s\n' > "$T/bad.cfg"
"$BIN" netsim "$T/bad.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "unknown key exit $rc"
grep -q "^etsim: $T/bad.cfg:3: unknown key 'RATE_AIX'" "$T/e" || fail "unknown key message: $(cat "$T/e")"
printf 'TOPOLOGY_FILE missing.topo\nFLOW_FILE single.flows\n' > "$T/bad.cfg"
"$BIN" netsim "$T/bad.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "missing topology exit $rc"
grep -q "$T/missing.topo: cannot open" "$T/e" || fail "missing topology message: $(cat "$T/e")"
printf '1\n0 7 3 100 1000 0\n' > "$T/f2"
printf 'TOPOLOGY_FILE single.topo\nFLOW_FILE f2\n' > "$T/bad.cfg"
"$BIN" netsim "$T/bad.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "bad flow exit $rc"
grep -q "^etsim: $T/f2:2: flow 0: node 7 does not exist" "$T/e" || fail "bad flow message: $(cat "$T/e")"
printf '1\n0 2 3 100 1000 0\n' > "$T/f2"
"$BIN" netsim "$T/bad.cfg" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "flow to a switch exit $rc"
grep -q "^etsim: $T/f2:2: flow destination 2 is not a host" "$T/e" || fail "flow to switch: $(cat "$T/e")"
"$BIN" netsim --frob "$EX/single.cfg" 2> /dev/null; [ $? -eq 2 ] || fail "unknown option exit"
# the reference table (examples/netsim/reference.csv): etsim's packet-level
# completion and pause count reproduce exactly and equal ns-3's to the
# nanosecond and the pause frame (rows with ECN marked at random too: etsim
# draws as ns-3 does, seed 1 being RngRun 1), and where ns-3's FCT file is
# kept (ns3/fct/CONFIG.CC.fct) every FCT line equals ns-3's, where its PFC
# file is kept (.pfc) every PFC line, in order; seeded rows over more seeds
# below (reference_seeds.csv)
grep -v '^#' "$EX/reference.csv" | tail -n +2 |
  while IFS=, read -r name cfg cc ns3 ns3_p pkt pkt_p flow gap; do
    "$BIN" netsim --quiet --cc "$cc" --fct "$T/ref" --pfc "$T/refp" "$EX/$cfg" || fail "$cfg $cc exit $?"
    got=$(awk '{ if ($7 > m) m = $7 } END { print m }' "$T/ref")
    got_p=$(awk '$5 == 1' "$T/refp" | wc -l)
    [ "$got" = "$pkt" ] || fail "$name ($cfg, $cc): $got ns, table says $pkt"
    [ "$got_p" = "$pkt_p" ] || fail "$name ($cfg, $cc): $got_p pauses, table says $pkt_p"
    [ "$got" = "$ns3" ] || fail "$name ($cfg, $cc): $got ns, ns-3 $ns3 ns"
    [ "$got_p" = "$ns3_p" ] || fail "$name ($cfg, $cc): $got_p pauses, ns-3 $ns3_p"
    ref=$EX/ns3/fct/${cfg%.cfg}.$cc.fct
    if [ -e "$ref" ]; then
      sort "$ref" > "$T/a"
      sort "$T/ref" > "$T/b"
      cmp -s "$T/a" "$T/b" ||
        fail "$name ($cfg, $cc): FCT lines differ from ns-3's: $(diff "$T/a" "$T/b" | grep -c '^<') of $(wc -l < "$T/a")"
    fi
    ref=$EX/ns3/fct/${cfg%.cfg}.$cc.pfc
    if [ -e "$ref" ]; then
      cmp -s "$ref" "$T/refp" ||
        fail "$name ($cfg, $cc): PFC file differs from ns-3's: $(diff "$ref" "$T/refp" | grep -c '^<') lines"
    fi
  done || exit 1

# HPCC on 128 hosts (tests/net/clos128_a2a_hpcc.cfg: fabric and flows generated as its
# comment says): ns-3 runs HPCC on the ACK that completes a queue pair too,
# and that rate change can bring the NIC's next wake-up forward.  ns-3's own
# files (ns3/README.md's driver on these very files; 16,256 FCT lines, 10,420
# PFC lines) are kept as their SHA-256, with the last completion and pauses.
"$BIN" gen topo clos2:leaves=8,hosts=16,spines=8 -o "$T/clos128.topo" > /dev/null ||
  fail "gen topo clos128"
awk 'BEGIN { print 128 * 127; for (s = 0; s < 128; s++) for (d = 0; d < 128; d++)
       if (s != d) print s, d, 3, 100, 32000, 0 }' > "$T/clos128_a2a_32k.flows"
cp "$SRC/tests/net/clos128_a2a_hpcc.cfg" "$T/"
"$BIN" netsim --quiet --fct "$T/h128.fct" --pfc "$T/h128.pfc" "$T/clos128_a2a_hpcc.cfg" ||
  fail "clos128 HPCC exit $?"
last=$(awk '{ if ($7 > m) m = $7 } END { print m }' "$T/h128.fct")
[ "$last" = 846522 ] || fail "clos128 HPCC: last completion $last ns, ns-3 846522"
[ "$(awk '$5 == 1' "$T/h128.pfc" | wc -l)" = 5210 ] || fail "clos128 HPCC: pauses, ns-3 5210"
[ "$(sha256sum < "$T/h128.fct" | cut -c1-64)" = \
  97ea77b7af2c92bb4631500dc288b55f0afaf13e649f86d2b65b6579a22f4361 ] ||
  fail "clos128 HPCC: FCT file differs from ns-3's"
[ "$(sha256sum < "$T/h128.pfc" | cut -c1-64)" = \
  a4d21ccf7d1c8925238ef2840fde32b7cf5020d0da52142c69a884f7842f1c5c ] ||
  fail "clos128 HPCC: PFC file differs from ns-3's"

# rows with ECN marked at random (gap "seeded") over seeds
# (reference_seeds.csv, ns3/seeds.sh): ns-3 under RngRun=K and etsim with
# --seed K draw the same marks (src/net/pkt_rng.c), so for every seed
# etsim's last completion and pause count equal ns-3's, and the etsim runs
# reproduce; at least 10 seeds a row
tail -n +2 "$EX/reference_seeds.csv" > "$T/seeds"
grep -v '^#' "$EX/reference.csv" | awk -F, '$9 == "seeded" { print $2 "," $3 }' > "$T/seeded"
[ "$(wc -l < "$T/seeded")" -ge 8 ] || fail "fewer than 8 seeded rows"
while IFS=, read -r cfg cc; do
  n=$(awk -F, -v c="$cfg" -v m="$cc" '$2 == c && $3 == m && $4 == "ns3"' "$T/seeds" | wc -l)
  [ "$n" -ge 10 ] || fail "$cfg $cc: $n ns-3 seeds in reference_seeds.csv, fewer than 10"
done < "$T/seeded"
awk -F, '$4 == "ns3"' "$T/seeds" > "$T/seeds.ns3"
while IFS=, read -r name cfg cc sim k last pauses; do
  grep -q "^$cfg,$cc\$" "$T/seeded" || fail "reference_seeds.csv: $cfg $cc is not a seeded row"
  "$BIN" netsim --quiet --seed "$k" --cc "$cc" --fct "$T/sf" --pfc "$T/sp" "$EX/$cfg" || fail "$cfg $cc seed $k exit $?"
  got=$(awk '{ if ($7 > m) m = $7 } END { print m }' "$T/sf")
  got_p=$(awk '$5 == 1' "$T/sp" | wc -l)
  [ "$got $got_p" = "$last $pauses" ] ||
    fail "$name ($cfg, $cc) seed $k: $got ns $got_p pauses, ns-3 $last $pauses"
  e=$(awk -F, -v c="$cfg" -v m="$cc" -v k="$k" '$2 == c && $3 == m && $4 == "etsim" && $5 == k { print $6 " " $7 }' "$T/seeds")
  [ "$e" = "$got $got_p" ] || fail "$name ($cfg, $cc) seed $k: $got ns $got_p pauses, reference_seeds.csv's etsim row says $e"
done < "$T/seeds.ns3"
echo ok
