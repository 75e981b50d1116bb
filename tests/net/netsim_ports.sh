#!/usr/bin/env bash
# `etsim netsim --ports`: utilisation is over the traffic's span, from the
# first flow's start to the last completion (issue 18), at both levels.
# Closed forms on examples/netsim/single.topo (host 0 -> switch 2 -> host 1,
# 100 Gb/s, 1 us links, 1000 B payloads, 36 B of headers a packet, 48 B
# ACKs): one 1 MB flow puts 1,036,000 B on each data port; its FCT is
# 87,091 ns at packet level (ns-3's figure, tests/net/netsim_cli.sh) and
# 82,880 + 2 x 1,000 + 83 + 2 x (1,000 + 4) = 86,971 ns at flow level
# (fluid serialisation, then the last packet's hops and its ACK's way back).
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/netsim

# scenario NAME START_S...: single.cfg with one 1 MB flow 0 -> 1 per start
scenario() {
  local name=$1
  shift
  { echo $#; for s in "$@"; do echo "0 1 3 100 1000000 $s"; done; } > "$T/$name.flows"
  sed -e "s#^TOPOLOGY_FILE .*#TOPOLOGY_FILE $EX/single.topo#" \
    -e "s#^FLOW_FILE .*#FLOW_FILE $name.flows#" "$EX/single.cfg" > "$T/$name.cfg"
}
# check FILE NODE IFINDEX BYTES UTIL: the port's tx_bytes and utilisation
check() {
  awk -v n="$2" -v k="$3" -v b="$4" -v u="$5" '$1 == n && $2 == k {
      found = 1; d = $6 - u; if (d < 0) d = -d; ok = ($5 == b && d <= 1.5e-6) }
    END { exit !(found && ok) }' "$1" ||
    fail "$1: port $2/$3 wants tx_bytes $4, utilisation $5: $(awk -v n="$2" -v k="$3" '$1 == n && $2 == k' "$1")"
}
# util BYTES SPAN_NS: closed-form utilisation of a 100 Gb/s port
util() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.9f", b * 8 / (100e9 * s * 1e-9) }'; }

# One flow at 1 ms: busy 1,036,000 B in 87,091 ns (95 %); measured from
# t = 0 it would be 0.0762.
scenario one 0.001
"$BIN" netsim --quiet --fct "$T/one.fct" --ports "$T/one.pkt" "$T/one.cfg" || fail "one: exit $?"
[ "$(cut -d' ' -f6,7 "$T/one.fct")" = "1000000 87091" ] || fail "one: FCT $(cat "$T/one.fct")"
check "$T/one.pkt" 0 1 1036000 "$(util 1036000 87091)"
check "$T/one.pkt" 2 2 1036000 "$(util 1036000 87091)"
check "$T/one.pkt" 1 1 48000 "$(util 48000 87091)" # 1,000 ACKs
"$BIN" netsim --quiet --backend flow --fct "$T/one.ffct" --ports "$T/one.flow" "$T/one.cfg" ||
  fail "one flow level: exit $?"
[ "$(cut -d' ' -f6,7 "$T/one.ffct")" = "1000000 86971" ] || fail "one flow level: FCT $(cat "$T/one.ffct")"
check "$T/one.flow" 0 1 1036000 "$(util 1036000 86971)"
check "$T/one.flow" 2 2 1036000 "$(util 1036000 86971)"
check "$T/one.flow" 1 1 0 0 # ACKs are not modelled by default

# Two flows at 1 and 2 ms: one span over both, 1 ms + the last FCT.
scenario two 0.001 0.002
"$BIN" netsim --quiet --ports "$T/two.pkt" "$T/two.cfg" || fail "two: exit $?"
check "$T/two.pkt" 0 1 2072000 "$(util 2072000 1087091)"
check "$T/two.pkt" 1 1 96000 "$(util 96000 1087091)"
"$BIN" netsim --quiet --backend flow --set FLOW_ACK_LOAD=1 --ports "$T/two.flow" "$T/two.cfg" ||
  fail "two flow level: exit $?"
check "$T/two.flow" 0 1 2072000 "$(util 2072000 1086971)"
check "$T/two.flow" 2 2 2072000 "$(util 2072000 1086971)"
# with FLOW_ACK_LOAD the ACK route carries 48/1036 of the data: the
# packet level's 2,000 ACKs of 48 B
check "$T/two.flow" 1 1 96000 "$(util 96000 1086971)"
check "$T/two.flow" 2 1 96000 "$(util 96000 1086971)"
# the flow level has no PFC or queues: those columns are 0
awk '{ if (NF != 9 || $7 != 0 || $8 != "0.000" || $9 != 0) exit 1 }' "$T/two.flow" ||
  fail "flow-level ports columns: $(cat "$T/two.flow")"

# the flow level's outputs go out in one batch: --report reads the
# timeline written beside it, and the ports table is there too
"$BIN" netsim --quiet --backend flow --ports "$T/rep.ports" --report "$T/rep.html" "$T/two.cfg" ||
  fail "flow level --report: exit $?"
[ -s "$T/rep.html" ] && [ -s "$T/rep.timeline.json" ] || fail "flow level --report: no page or timeline"
check "$T/rep.ports" 0 1 2072000 "$(util 2072000 1086971)"

# A flow that starts at 0 keeps the old figure (span = last completion).
"$BIN" netsim --quiet --ports "$T/zero.pkt" "$EX/single.cfg" || fail "single: exit $?"
check "$T/zero.pkt" 0 1 1036000 "$(util 1036000 87091)"
finish
