#!/usr/bin/env bash
# End-to-end: `gen micro` writes rooted collectives with their root, and
# `sim` runs them through the network when the system file asks for it
# (else replays them, as ASTRA-sim does for BROADCAST, with a warning that
# says how to switch).  Numbers: a chain broadcast of 1 MiB from NPU 3 on a
# Ring(8) of 50 GB/s and 500 ns, one chunk, endpoint delay 10: the last NPU
# (2) ends at 7 (T + 10) + 10 with T = floor(500 + 2^20 / 53.687) = 20031.
. "$(dirname "$0")/../lib.sh"
printf 'topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$T/net.yml"
"$BIN" gen micro --coll broadcast --size 1MiB --npus 8 --root 3 -o "$T/b" --quiet || fail "gen micro"
"$BIN" jsonize "$T/b" -o "$T/b.jsonl" 2> /dev/null || "$BIN" jsonize "$T/b.c0.et" -o "$T/b.jsonl" || fail jsonize
grep -q '"comm_root"' "$T/b.jsonl" || fail "no comm_root attribute in $(cat "$T/b.jsonl")"
"$BIN" gen micro --coll broadcast --size 1MiB --npus 8 --root 8 -o "$T/x" --quiet 2> "$T/err" && fail "root 8 of 8 accepted"
grep -q "root 8 is not one of the 8 ranks" "$T/err" || fail "root error: $(cat "$T/err")"
echo '{"preferred-dataset-splits": 1, "endpoint-delay": 10, "rooted-collectives": "network"}' > "$T/net.json"
"$BIN" sim --workload "$T/b" --system "$T/net.json" --network "$T/net.yml" > "$T/out" 2> "$T/err" \
  || fail "sim: $(cat "$T/err")"
grep -q '^sys\[2\] finished, 140297 cycles' "$T/out" || fail "chain broadcast: $(grep '^sys\[2\]' "$T/out")"
grep -q '^sys\[3\] finished, 20041 cycles' "$T/out" || fail "root: $(grep '^sys\[3\]' "$T/out")"
grep -Eq '^  broadcast +1 ' "$T/out" || fail "summary line: $(cat "$T/out")"
echo '{"preferred-dataset-splits": 1, "endpoint-delay": 10}' > "$T/replay.json"
"$BIN" sim --workload "$T/b" --system "$T/replay.json" --network "$T/net.yml" > "$T/out" 2> "$T/err" \
  || fail "sim replay: $(cat "$T/err")"
grep -q '^sys\[2\] finished, 1 cycles' "$T/out" || fail "replay: $(head -3 "$T/out")"
grep -q '"rooted-collectives": "network" in the system file runs it' "$T/err" || fail "warning: $(cat "$T/err")"
echo ok
