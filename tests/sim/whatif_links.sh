#!/usr/bin/env bash
# What-if on cables of a flow/packet topology file (docs/sim.md, "What-if"):
# --link-degrade {"link:A-B": ...} and --fail link:A-B@0 against closed
# forms.  With the default config a 1 MB message is 1000 packets of 1036
# wire bytes: s = 82.88 ns each at 100 Gb/s, and a message over h links of
# delay d is delivered at 1000 s_bottleneck + (h - 1) s + h d (docs/netsim.md;
# the simulator's cycles are whole ns, rounded down).
. "$(dirname "$0")/../lib.sh"
A='"attr":[{"name":"is_cpu_op","boolVal":false}'
p2p() { # id SEND|RECV src dst
  echo "{\"id\":\"$1\",\"name\":\"p$1\",\"type\":\"COMM_$2_NODE\",$A,{\"name\":\"comm_src\",\"int32Val\":$3},{\"name\":\"comm_dst\",\"int32Val\":$4},{\"name\":\"comm_tag\",\"int32Val\":7},{\"name\":\"comm_size\",\"int64Val\":\"1000000\"}]}"
}
# trace PREFIX N SRC DST [SRC DST]...: N ranks, one 1 MB message per pair
trace() {
  local p=$1 n=$2 r
  shift 2
  for ((r = 0; r < n; r++)); do echo '{"version":"0.0.4"}' >"$T/$p.$r.json"; done
  while [ $# -gt 0 ]; do
    p2p 1 SEND "$1" "$2" >>"$T/$p.$1.json"
    p2p 1 RECV "$1" "$2" >>"$T/$p.$2.json"
    shift 2
  done
  for ((r = 0; r < n; r++)); do
    "$BIN" convert --from json "$T/$p.$r.json" -o "$T/$p.$r.et" >/dev/null 2>&1 || fail "convert $p.$r"
  done
}
echo '{"preferred-dataset-splits": 1, "endpoint-delay": 0, "local-mem-bw": 100, "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}' >"$T/sys.json"
for n in 2 8; do
  printf 'topology: [ Switch ]\nnpus_count: [ %s ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' $n >"$T/net$n.yml"
done
# two hosts on one switch (node 2), 100 Gb/s, 1 us
printf '3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n' >"$T/star.topo"
# two-tier Clos: hosts 0-3 on leaf 8, 4-7 on leaf 9, spines 10 and 11
{
  printf '12 4 12\n8 9 10 11\n'
  for h in 0 1 2 3; do echo "$h 8 100Gbps 0.001ms 0"; done
  for h in 4 5 6 7; do echo "$h 9 100Gbps 0.001ms 0"; done
  for l in 8 9; do for s in 10 11; do echo "$l $s 100Gbps 0.001ms 0"; done; done
} >"$T/clos.topo"
trace one 2 0 1
trace two 8 0 4 1 5
trace three 8 0 4 1 5 2 6
# two islands: hosts 0-1 on switch 4, hosts 2-3 on switch 5, no cable between
printf '6 2 4\n4 5\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n2 5 100Gbps 0.001ms 0\n3 5 100Gbps 0.001ms 0\n' >"$T/islands.topo"
printf 'topology: [ Switch ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' >"$T/net4.yml"
trace near 4 0 1
trace far 4 0 2

# sim NPUS TOPO PREFIX ARGS...: the finish times of every NPU, one line
sim() {
  local n=$1 topo=$2 p=$3
  shift 3
  "$BIN" sim --system "$T/sys.json" --network "$T/net$n.yml" --net-topology "$T/$topo" \
    --workload "$T/$p" --quiet "$@" >"$T/o" 2>"$T/e"
}
# finish NPU: the cycles NPU finished at in the last run
finish() { sed -n "s/^sys\[$1\] finished, \([0-9]*\) cycles.*/\1/p" "$T/o"; }

for be in flow packet; do
  # one message over the star: 1000 s + s + 2 d = 84962.88 ns; the
  # sender's cable at half bandwidth: 1000 (2 s) + s + 2 d = 167842.88;
  # its latency x3 as well: + 2 x 1 us = 169842.88
  sim 2 star.topo one --backend $be || fail "$be nominal: $(cat "$T/e")"
  [ "$(finish 1)" = 84962 ] || fail "$be nominal: $(finish 1)"
  sim 2 star.topo one --backend $be --link-degrade '{"link:0-2": 0.5}' || fail "$be half: $(cat "$T/e")"
  [ "$(finish 1)" = 167842 ] || fail "$be half bandwidth: $(finish 1), want 167842"
  # the cable is the same whichever way it is named
  sim 2 star.topo one --backend $be --link-degrade '{"link:2-0": {"bw": 0.5, "latency": 3}}' ||
    fail "$be half+lat: $(cat "$T/e")"
  [ "$(finish 1)" = 169842 ] || fail "$be half bandwidth, latency x3: $(finish 1), want 169842"
  # the receiver's cable degraded instead: the packet level queues at the
  # switch, 2001 s + 2 d = 167842.88; the flow level charges the last hop's
  # store-and-forward at that hop's rate, 1000 (2 s) + 2 s + 2 d = 167925.76
  want=167842
  [ $be = flow ] && want=167925
  sim 2 star.topo one --backend $be --link-degrade '{"link:1-2": 0.5}' || fail "$be rx half"
  [ "$(finish 1)" = $want ] || fail "$be receiver's cable at half: $(finish 1), want $want"

  # Clos: 0->4 and 1->5 take different spines (ECMP), each alone on its
  # links: 1000 s + 3 s + 4 d = 87128.64 ns.  With either uplink of leaf 8
  # down both take the other and share it, 50 Gb/s each:
  # 1000 (2 s) + 3 s + 4 d = 170008.64 ns (at packet level the two take
  # turns on the uplink, so one of them is done a packet, s, earlier:
  # 169925.76)
  want="170008 170008"
  [ $be = packet ] && want="169925 170008"
  sim 8 clos.topo two --backend $be || fail "$be clos: $(cat "$T/e")"
  [ "$(finish 0)" = 87128 ] && [ "$(finish 5)" = 87128 ] ||
    fail "$be clos nominal: $(finish 0) $(finish 5), want 87128"
  for l in 8-10 8-11 10-9 11-9; do
    timeout 60 "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
      --workload "$T/two" --quiet --backend $be --fail link:$l@0 >"$T/o" 2>"$T/e" ||
      fail "$be --fail link:$l@0: exit $? $(cat "$T/e")"
    got=$(printf '%s\n' "$(finish 4)" "$(finish 5)" | sort -n | tr '\n' ' ')
    [ "$got" = "$want " ] || fail "$be --fail link:$l@0: $got, want $want"
  done
  # both uplinks of leaf 8 at half bandwidth: each flow alone on its
  # spine at 50 Gb/s; packet level 2003 s + 4 d = 170008.64, flow level
  # (store-and-forward at each hop's rate) 1000 (2 s) + 2 s + 2 s + 4 d =
  # 170091.52
  want=170008
  [ $be = flow ] && want=170091
  sim 8 clos.topo two --backend $be --link-degrade '{"link:8-10": 0.5, "link:8-11": 0.5}' ||
    fail "$be clos degrade: $(cat "$T/e")"
  [ "$(finish 4)" = $want ] && [ "$(finish 5)" = $want ] ||
    fail "$be clos both uplinks at half: $(finish 4) $(finish 5), want $want"

  # A cable that fails mid-run (T = 40 us) under one of the two flows
  # (leaf 8's uplink to spine 10 or to spine 11, whichever the hash gave
  # it): from T both share the other uplink.  Flow level: each has
  # 1000 s - T of its own time left at T, at half rate both end at
  # T + 2 (1000 s - T) = 2000 s - T, then 3 s + 4 d: 130008.64 ns, both.
  # Packet level: by T each flow has begun k = floor((T - d) / s) = 470
  # packets on its uplink (a packet in serialisation is on the wire and
  # arrives); the surviving uplink then sends the rest of both, 1060
  # packets, back to back after the one it is on, so the last ends at
  # (k + 1 + 2 (1000 - k)) s + d and arrives at (2003 - k) s + 4 d =
  # 131055.04 ns, the other flow's last one a packet earlier (130972.16).
  want="130008 130008"
  [ $be = packet ] && want="130972 131055"
  for l in 8-10 11-8; do
    sim 8 clos.topo two --backend $be --fail link:$l@40us || fail "$be --fail link:$l@40us: $(cat "$T/e")"
    got=$(printf '%s\n' "$(finish 4)" "$(finish 5)" | sort -n | tr '\n' ' ')
    [ "$got" = "$want " ] || fail "$be --fail link:$l@40us: $got, want $want"
  done
  # Three flows, 0->4 alone on one uplink of leaf 8, 1->5 and 2->6 sharing
  # the other (a queue builds there); either uplink fails at 40 us and
  # everything goes by the one left (the queued packets move to it).
  # Flow level: at T the two have 1000 s - T/2 = 62.88 us of full rate
  # left, the one 1000 s - T = 42.88 us; all three at a third until the
  # one ends (T + 3 x 42.88 = 168.64 us, +3 s + 4 d = 172888.64), then two
  # at a half: 168.64 + 2 x 20 = 208.64 us, + 3 s + 4 d = 212888.64.
  # Packet level: by T each uplink has begun k = 470 packets; the one
  # left then sends the other 3000 - 2k back to back after the one it is
  # on: the last leaves at (k + 1 + 3000 - 2k) s + d and arrives 2 s + 3 d
  # later, (3003 - k) s + 4 d = 213935.04.
  sim 8 clos.topo three --backend $be || fail "$be three: $(cat "$T/e")"
  [ "$(finish 6)" = 170008 ] || fail "$be three nominal: $(finish 6)"
  for l in 8-10 8-11; do
    "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
      --workload "$T/three" --backend $be --fail link:$l@40us >"$T/o" 2>"$T/e" || fail "$be three $l: $(cat "$T/e")"
    got=$(printf '%s\n' "$(finish 4)" "$(finish 5)" "$(finish 6)" | sort -n | tail -1)
    want=213935
    [ $be = flow ] && want=212888
    [ "$got" = $want ] || fail "$be three, link:$l@40us: last $got, want $want"
    if [ $be = flow ]; then
      [ "$(finish 4)" = 172888 ] || fail "flow three, link:$l@40us: NPU 4 $(finish 4), want 172888"
    else # nothing lost on the way: no packet sent twice, none dropped
      grep -q ' 12000 data packets, 0 PFC pauses .* 0 drops' "$T/o" || fail "packet three: $(grep RoCE "$T/o")"
    fi
  done
  # the summary prices it against the run without the failure
  "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
    --workload "$T/two" --backend $be --fail link:8-10@40us >"$T/o" 2>"$T/e" || fail "$be summary"
  line="failure       iteration 130.009 us; without the failure(s) 87.129 us: slowdown 1.4921x (+42.880 us)"
  [ $be = packet ] && line="failure       iteration 131.055 us; without the failure(s) 87.129 us: slowdown 1.5042x (+43.926 us)"
  grep -qxF "$line" "$T/o" || fail "$be failure line: $(grep failure "$T/o")"
  # deterministic: the same again, to the line
  grep '^sys' "$T/o" >"$T/o1"
  sim 8 clos.topo two --backend $be --fail link:8-10@40us
  grep '^sys' "$T/o" | cmp -s - "$T/o1" || fail "$be: a second run differs"
  # after the messages are done it changes nothing (slowdown 1)
  "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
    --workload "$T/two" --backend $be --fail link:8-10@200us >"$T/o" 2>"$T/e" || fail "$be late"
  [ "$(finish 4)" = 87128 ] && [ "$(finish 5)" = 87128 ] || fail "$be late failure changed times"
  grep -q "slowdown 1.0000x (+0.000 us)$" "$T/o" || fail "$be late failure: $(grep failure "$T/o")"

  # A cut between NPUs that never talk does not stop the run: NPU 3's
  # only cable, from the start or mid-run
  for t in 0 10us; do
    sim 8 clos.topo two --backend $be --fail link:3-8@$t || fail "$be link:3-8@$t: $(cat "$T/e")"
    [ "$(finish 4)" = 87128 ] && [ "$(finish 5)" = 87128 ] || fail "$be link:3-8@$t changed times"
  done

  # NPU 0's only cable down at 40 us: its message is held; the run ends
  # (never a hang) with exit 1, no results, and a report naming what
  # failed, the message, the blocked send/receive node and both NPUs
  for spec in link:0-8@40us link:8-0@0; do
    timeout 60 "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
      --workload "$T/two" --backend $be --fail $spec >"$T/o" 2>"$T/e"
    rc=$?
    [ $rc -eq 1 ] || fail "$be cut $spec: exit $rc ($(cat "$T/e"))"
    t=40000
    [ $spec = link:8-0@0 ] && t=0
    grep -q "^etsim: failure: link:${spec:5:3} down at t=$t ns: no route left for NPU 0 -> NPU 4 (1000000 bytes); the run stopped at t=[0-9]* ns with 2 of 8 NPUs unable to finish (NPUs 0,4); blocked: send node 1 \"p1\" (communicator world) blocked on NPUs 0,4$" "$T/e" ||
      fail "$be cut report $spec: $(cat "$T/e")"
    [ -s "$T/o" ] && fail "$be cut $spec printed results"
  done
  # both uplinks of leaf 8, one after the other (several --fail)
  timeout 60 "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
    --workload "$T/two" --backend $be --fail link:8-10@40us --fail link:8-11@50us >"$T/o" 2>"$T/e"
  [ $? -eq 1 ] || fail "$be both uplinks: $(cat "$T/e")"
  grep -q "^etsim: failure: link:8-10 down at t=40000 ns, link:8-11 down at t=50000 ns: no route left for NPU 0 -> NPU 4 (1000000 bytes) and more; .* (NPUs 0-1,4-5); blocked: send node 1 \"p1\" (communicator world) blocked on NPUs 0-1,4-5$" "$T/e" ||
    fail "$be both uplinks report: $(cat "$T/e")"
  # an NPU failing on flow/packet: from T it handles nothing and its
  # cables carry nothing; NPU 0 waits on it: the same report form
  timeout 60 "$BIN" sim --system "$T/sys.json" --network "$T/net8.yml" --net-topology "$T/clos.topo" \
    --workload "$T/two" --backend $be --fail npu:4@20us >"$T/o" 2>"$T/e"
  [ $? -eq 1 ] || fail "$be npu:4: $(cat "$T/e")"
  grep -q "^etsim: failure: NPU 4 failed at t=20000 ns; the run stopped at t=[0-9]* ns with 2 of 8 NPUs unable to finish (NPUs 0,4); blocked: send node 1 \"p1\" (communicator world) blocked on NPUs 0,4$" "$T/e" ||
    fail "$be npu:4 report: $(cat "$T/e")"
  # an NPU with nothing to do (NPU 3 has no node) fails harmlessly
  sim 8 clos.topo two --backend $be --fail npu:3@20us || fail "$be npu:3: $(cat "$T/e")"
  [ "$(finish 5)" = 87128 ] || fail "$be npu:3 changed times"
done

# A fabric cut apart from the start, with no --fail: traffic within an
# island runs (as on the star, 84962 ns); traffic across is held and
# reported, exit 1
for be in flow packet; do
  sim 4 islands.topo near --backend $be || fail "$be islands near: $(cat "$T/e")"
  [ "$(finish 1)" = 84962 ] || fail "$be islands near: $(finish 1), want 84962"
  timeout 60 "$BIN" sim --system "$T/sys.json" --network "$T/net4.yml" --net-topology "$T/islands.topo" \
    --workload "$T/far" --backend $be >"$T/o" 2>"$T/e"
  [ $? -eq 1 ] || fail "$be islands far: $(cat "$T/e")"
  grep -q '^etsim: failure: a topology cut apart: no route left for NPU 0 -> NPU 2 (1000000 bytes); the run stopped at t=0 ns with 2 of 4 NPUs unable to finish (NPUs 0,2); blocked: send node 1 "p1" (communicator world) blocked on NPUs 0,2$' "$T/e" ||
    fail "$be islands report: $(cat "$T/e")"
done

# bad specs: exit 2, the option and the key named
expect() { # PATTERN ARGS...
  local pat=$1
  shift
  sim 2 star.topo one "$@"
  local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc ($(cat "$T/e"))"
  grep -q -- "$pat" "$T/e" || fail "$*: stderr lacks '$pat': $(cat "$T/e")"
}
expect "--link-degrade: key \"link:0-1\": $T/star.topo has no cable between nodes 0 and 1" \
  --backend flow --link-degrade '{"link:0-1": 0.5}'
expect "--link-degrade: key \"link:0-9\": $T/star.topo has no cable between nodes 0 and 9" \
  --backend packet --link-degrade '{"link:0-9": 0.5}'
expect '--link-degrade: key "1" is not a cable of the topology file' --backend flow --link-degrade '{"1": 0.5}'
expect '--link-degrade: key "link:2-0": the cable is given twice' --backend flow \
  --link-degrade '{"link:0-2": 0.5, "link:2-0": 2}'
expect '--link-degrade: key "link:0-2": factors must be in' --backend packet --link-degrade '{"link:0-2": {"bw": 0}}'
expect '--link-degrade: key "link:0-2": unknown key "lat"' --backend packet --link-degrade '{"link:0-2": {"lat": 2}}'
expect "--fail: 'link:0-1': $T/star.topo has no cable between nodes 0 and 1" --backend flow --fail link:0-1@0
expect "--fail: 'link:0-9': $T/star.topo has no cable between nodes 0 and 9" --backend packet --fail link:0-9@1us
expect "--fail: 'link:0-2@-1us': the time must be a number >= 0" --backend packet --fail link:0-2@-1us
expect "--fail: 'link:0-2@1xs': unknown time unit 'xs'" --backend flow --fail link:0-2@1xs
expect "--fail: 'link:0-2' is not link:A-B@T" --backend flow --fail link:0-2
expect "--fail: 'npu:2@1us': NPU 2 is outside the 2-NPU network" --backend flow --fail npu:2@1us
expect "--fail npu:1@1us: one NPU failure per run" --backend packet --fail npu:0@1us --fail npu:1@1us
echo ok
