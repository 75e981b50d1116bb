#!/usr/bin/env bash
# End-to-end: memory capacity, per-link statistics and in-network reduction
# the way a user runs them.  A 2-stage Llama-3-8B slice with --tensors: the
# simulated peak per NPU equals `gen llm --memory`'s total for its stage;
# --hbm-gb below it flags every NPU and prices the offload; --link-csv has
# a row per (NPU, dimension); in-network reduction on a Ring is refused.
. "$(dirname "$0")/../lib.sh"
G=(--preset llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --microbatches 3)
"$BIN" gen llm "${G[@]}" --memory > "$T/model" || fail "gen llm --memory"
"$BIN" gen llm "${G[@]}" --tensors -o "$T/llm" --quiet || fail "gen llm --tensors"
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net.yml"
echo '{"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 2, "num-npus-per-node": 4,
  "remote-mem-latency": 1000, "remote-mem-bw": 50}' > "$T/mem.json"
"$BIN" sim --workload "$T/llm" --comm-group "$T/llm.comm_group.json" --network "$T/net.yml" \
  --system "$SRC/examples/dp_step/system.json" --hbm-gb 10 --memory "$T/mem.json" --json "$T/r.json" \
  --timeline "$T/t.json" --link-csv "$T/l.csv" > "$T/out" 2> "$T/err" || fail "sim: $(cat "$T/err")"
grep -q "8 of 8 NPUs over 10.0 GiB" "$T/out" || fail "capacity line: $(grep memory "$T/out")"
grep -q "^offload .*not added (--offload adds it)" "$T/out" || fail "offload line: $(cat "$T/out")"
grep -q "^hottest links NPU" "$T/out" || fail "hottest links: $(cat "$T/out")"
python3 - "$T/model" "$T/r.json" "$T/t.json" "$T/l.csv" <<'PY' || fail "reports"
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0].isdigit()]
total = {int(r[0]): float(r[-1]) for r in rows}            # GiB per stage
r = json.load(open(sys.argv[2]))
for n in r["npus"]:
    stage = n["id"] // 4
    got = n["peak_mem_bytes"] / 2**30
    assert abs(got - total[stage]) < 0.005, (n["id"], got, total[stage])
    assert n["offload_bytes"] == n["peak_mem_bytes"] - 10 * 2**30
    assert n["offload_ns"] > 0
assert len(r["links"]) > 0 and all(0 < l["bytes"] for l in r["links"])
mem = [e for e in json.load(open(sys.argv[3]))["traceEvents"] if e["ph"] == "C"]
assert mem and abs(max(e["args"]["GiB"] for e in mem) - max(total.values())) < 0.005
rows = open(sys.argv[4]).read().splitlines()
assert rows[0] == "link,bytes,busy_ns,busy_fraction" and len(rows) == 1 + 8 * 2, len(rows)
PY
# --offload adds the price
"$BIN" sim --workload "$T/llm" --comm-group "$T/llm.comm_group.json" --network "$T/net.yml" \
  --system "$SRC/examples/dp_step/system.json" --hbm-gb 10 --memory "$T/mem.json" --offload \
  > "$T/out2" 2> "$T/err" || fail "sim --offload: $(cat "$T/err")"
grep -q "added to the iterations above" "$T/out2" || fail "offload applied: $(grep offload "$T/out2")"
a=$(grep '^sys\[0\]' "$T/out" | awk '{print $3}' | tr -d ,)
b=$(grep '^sys\[0\]' "$T/out2" | awk '{print $3}' | tr -d ,)
[ "$b" -gt "$a" ] || fail "offload did not lengthen NPU 0: $a -> $b"
"$BIN" sim --workload "$T/llm" --network "$T/net.yml" --system "$SRC/examples/dp_step/system.json" \
  --offload > /dev/null 2> "$T/err" && fail "--offload without --hbm-gb accepted"
grep -q -- "--offload needs --hbm-gb" "$T/err" || fail "offload usage: $(cat "$T/err")"
# in-network reduction needs a switch
"$BIN" gen micro --coll all-reduce --size 1MiB --npus 8 -o "$T/ar" --quiet
printf 'topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$T/ring.yml"
echo '{"preferred-dataset-splits": 1, "in-network-collectives": [true]}' > "$T/in.json"
"$BIN" sim --workload "$T/ar" --network "$T/ring.yml" --system "$T/in.json" > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "in-network on a Ring: exit status"
grep -q "dimension 0 is a Ring" "$T/err" || fail "in-network on a Ring: $(cat "$T/err")"
echo ok
