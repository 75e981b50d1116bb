#!/usr/bin/env bash
# End-to-end: values a file may legally hold but no platform has (sizes near
# 2^63, durations of millennia, bandwidths of 1e-300 GB/s, infinite
# latencies, manifests for 2^62 ranks) are refused with exit 2 and a message
# naming the file and node or key, never a wrapped negative time, a crash
# or undefined behaviour (the sanitizer build runs this script too).
. "$(dirname "$0")/../lib.sh"

# expect_refused NAME PATTERN CMD...: exit 2, PATTERN in stderr, no
# negative cycle count on stdout.
expect_refused() {
  local name=$1 pat=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, expected 2 ($(head -c 400 "$T/err"))"
  grep -q -- "$pat" "$T/err" || fail "$name: stderr lacks '$pat': $(head -c 400 "$T/err")"
  if grep -q -- ' -[0-9]* cycles' "$T/out"; then fail "$name: negative cycles"; fi
}

# et NAME NODE_JSON...: a one-rank trace from JSON lines.
et() {
  local f=$T/$1.json
  shift
  echo '{"version": "0.0.4"}' >"$f"
  for n in "$@"; do echo "$n" >>"$f"; done
  "$BIN" convert --from json "$f" -o "${f%.json}.et" || fail "convert $f"
}
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' >"$T/net.yml"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1e-300 ]\nlatency: [ 500 ]\n' >"$T/slow.yml"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1e-6 ]\nlatency: [ 500 ]\n' >"$T/slow6.yml"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ .inf ]\n' >"$T/inf.yml"
cat >"$T/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"],
 "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["direct"], "collective-optimization": "baseline"}
JSON
sed 's/"endpoint-delay": 10/"endpoint-delay": 1e18/' "$T/sys.json" >"$T/sys_delay.json"
sim() { "$BIN" sim --workload "$1" --network "$2" --system "${3:-$T/sys.json}" "${@:4}"; }

AR='"type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "SIZE"}]'
et big '{"id": "1", "name": "ar", '"${AR/SIZE/9223372036854775807}"'}'
expect_refused "comm_size 2^63-1" "horizon" sim "$T/big.et" "$T/net.yml"
et tib '{"id": "1", "name": "ar", '"${AR/SIZE/1099511627776}"'}'
expect_refused "1 TiB at 1e-6 GB/s" "horizon" sim "$T/tib.et" "$T/slow6.yml"
expect_refused "bandwidth 1e-300" "horizon" sim "$T/tib.et" "$T/slow.yml"
expect_refused "bandwidth 1e-300, --backend congestion" "horizon" \
  sim "$T/tib.et" "$T/slow.yml" "$T/sys.json" --backend congestion
expect_refused "latency inf" "latency\[0\]" sim "$T/tib.et" "$T/inf.yml"
expect_refused "endpoint-delay 1e18" "endpoint-delay" sim "$T/tib.et" "$T/net.yml" "$T/sys_delay.json"
expect_refused "--injection-scale nan" "injection-scale" \
  sim "$T/tib.et" "$T/net.yml" "$T/sys.json" --injection-scale nan
expect_refused "--injection-scale 1e300" "injection-scale" \
  sim "$T/tib.et" "$T/net.yml" "$T/sys.json" --injection-scale 1e300

COMP='"type": "COMP_NODE", "attr": [{"name": "is_cpu_op", "boolVal": false}]'
et long '{"id": "7", "name": "c", "durationMicros": "9300000000000000", '"$COMP"'}'
expect_refused "duration_micros 9.3e15" "node 7: duration_micros" sim "$T/long.et" "$T/net.yml"
et max '{"id": "7", "name": "c", "startTimeMicros": "18446744073709551615", "durationMicros": "18446744073709551615", '"$COMP"'}'
expect_refused "duration_micros 2^64-1" "node 7: duration_micros" sim "$T/max.et" "$T/net.yml"
et dns '{"id": "7", "name": "c", "type": "COMP_NODE", "attr": [{"name": "is_cpu_op", "boolVal": false}, {"name": "duration_ns", "int64Val": "9223372036854775807"}]}'
expect_refused "duration_ns 2^63-1" "node 7: duration_ns" sim "$T/dns.et" "$T/net.yml"
# A send past the horizon: the system layer's message names the rank's
# file and node (p.0.et node 1).
for r in 0 1; do echo '{"version": "0.0.4"}' >"$T/p.$r.json"; done
P2P='"attr": [{"name": "comm_PEER", "int64Val": "RANK"}, {"name": "comm_size", "int64Val": "4611686018427387904"}, {"name": "comm_tag", "int64Val": "7"}]'
P0=${P2P/PEER/dst}
P1=${P2P/PEER/src}
echo '{"id": "1", "name": "s", "type": "COMM_SEND_NODE", '"${P0/RANK/1}"'}' >>"$T/p.0.json"
echo '{"id": "1", "name": "r", "type": "COMM_RECV_NODE", '"${P1/RANK/0}"'}' >>"$T/p.1.json"
for r in 0 1; do "$BIN" convert --from json "$T/p.$r.json" -o "$T/p.$r.et" || fail "convert p.$r"; done
printf 'topology: [ Switch ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' >"$T/n2.yml"
expect_refused "send of 2^62 bytes" "p.0.et: node 1: system layer: at 0.000 us a send of 4611686018427387904 bytes from NPU 0 to NPU 1 (tag 7) would end beyond the simulated clock's horizon" \
  sim "$T/p" "$T/n2.yml"

# Just inside the horizon is fine: 4e12 us (46 days) of compute.
et ok '{"id": "7", "name": "c", "durationMicros": "4000000000000", '"$COMP"'}'
sim "$T/ok.et" "$T/net.yml" >"$T/out" 2>"$T/err" || fail "46 days of compute: $(cat "$T/err")"
grep -q 'sys\[0\] finished, 4000000000000000 cycles' "$T/out" || fail "46 days: $(head -3 "$T/out")"

# A manifest for 2^62 ranks is refused before anything is allocated.
cp "$T/ok.et" "$T/m.et"
echo '{"etsim_trace_set": 1, "npus": 4611686018427387904, "classes": [{"file": "m.et", "ranks": "0"}]}' \
  >"$T/huge.manifest.json"
expect_refused "manifest npus 2^62" "huge.manifest.json: \"npus\"" "$BIN" validate "$T/huge"
expect_refused "manifest npus 2^62 (sim)" "huge.manifest.json: \"npus\"" sim "$T/huge" "$T/net.yml"

# CLI integers are decimal: 010 is ten, 0x10 is refused.
expect_refused "--num-queues-per-dim 0x10" "not a .*decimal" \
  sim "$T/ok.et" "$T/net.yml" "$T/sys.json" --num-queues-per-dim 0x10
echo "hostile: ok"
