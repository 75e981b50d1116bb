#!/usr/bin/env bash
# End-to-end: generate an LLM training step (DP x TP x PP with communicator
# groups and pipeline send/recv), validate it, simulate it on a 2-D network,
# and check the reports: every NPU finishes after its compute, every collective and message kind ran, and each communicator has
# its own timeline track.
. "$(dirname "$0")/../lib.sh"

"$BIN" gen llm --preset llama3-8b --layers 4 --dp 2 --tp 2 --pp 2 --microbatches 2 -o "$T/llm" \
  > /dev/null 2> "$T/err" || fail "gen llm: $(cat "$T/err")"
"$BIN" validate "$T/llm" > "$T/v" || fail "validate: $(tail -3 "$T/v")"
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net.yml"
"$BIN" sim --workload "$T/llm" --network "$T/net.yml" --system "$SRC/examples/dp_step/system.json" \
  --comm-group "$T/llm.comm_group.json" --json "$T/r.json" --timeline "$T/t.json" > "$T/out" 2> "$T/err" \
  || fail "sim: $(cat "$T/err")"
[ "$(grep -c '^sys\[' "$T/out")" -eq 8 ] || fail "8 NPU lines"
# the two pipeline stages differ: at most the data- and tensor-parallel
# replicas of a stage are one class (2 classes of 4), and every NPU's line
# is the message-by-message path's
grep -q "^reduction     2 of 8 NPUs simulated, each standing for a class of 4 " "$T/out" \
  || fail "classes: $(grep '^reduction' "$T/out")"
"$BIN" sim --workload "$T/llm" --network "$T/net.yml" --system "$SRC/examples/dp_step/system.json" \
  --comm-group "$T/llm.comm_group.json" --exact > "$T/exact" 2> "$T/err" || fail "sim --exact: $(cat "$T/err")"
cmp -s <(grep '^sys\[' "$T/out") <(grep '^sys\[' "$T/exact") || fail "default and --exact differ"
python3 - "$T/r.json" "$T/t.json" "$T/llm.comm_group.json" <<'PY' || fail "reports"
import json, sys
r = json.load(open(sys.argv[1]))
npus = r["npus"]
assert len(npus) == 8 and all(n["finish_ns"] > n["compute_ns"] > 0 for n in npus)
assert r["total_ns"] == max(n["finish_ns"] for n in npus)
# every collective and message of the trace ran
kinds = {c["type"] for c in r["collectives"]}
assert "ALL_REDUCE" in kinds and "COMM_SEND_NODE" in kinds and "COMM_RECV_NODE" in kinds, kinds
groups = json.load(open(sys.argv[3]))
names = {e["args"]["name"] for e in json.load(open(sys.argv[2]))["traceEvents"] if e["name"] == "thread_name"}
for g in groups:
    assert "communicator " + g in names, (g, sorted(names))
PY
# Without --comm-group the groups the generator wrote next to the workload
# are found, with a note, and give the same lines; 'empty' uses none.
"$BIN" sim --workload "$T/llm" --network "$T/net.yml" --system "$SRC/examples/dp_step/system.json" \
  > "$T/out2" 2> "$T/err" || fail "sim without --comm-group: $(cat "$T/err")"
cmp -s <(grep '^sys\[' "$T/out") <(grep '^sys\[' "$T/out2") || fail "found groups give other lines"
grep -q "^groups        $T/llm.comm_group.json (next to the workload; --comm-group empty uses none)" \
  "$T/out2" || fail "no note of the groups found: $(tail -3 "$T/out2")"
"$BIN" sim --workload "$T/llm" --network "$T/net.yml" --system "$SRC/examples/dp_step/system.json" \
  --comm-group empty > /dev/null 2> "$T/err" && fail "--comm-group empty still found the groups"
grep -q 'communicator group "1" is not defined' "$T/err" || fail "empty: $(cat "$T/err")"
echo ok
