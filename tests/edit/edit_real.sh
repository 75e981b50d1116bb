#!/usr/bin/env bash
# End-to-end on real traces ($ETSIM_SHARED): chakra.0.et from Chakra's own
# tests, PARAM's 2-GPU ResNet converted with `etsim convert --from pytorch`,
# and LLM sets from `etsim gen llm`.
#  - select-then-compose round trips give the original back (diff: equal);
#  - anonymizing (names, string attributes, attributes simulation does not
#    read) keeps every NPU's simulated cycles;
#  - a data-parallel retarget from 8 to 64 replicas gives the generator's
#    own 64-replica set byte for byte and the same cycles; with ZeRO-1 the
#    one difference is the optimizer's duration, which the 8-replica file
#    holds in whole microseconds, and the cycles differ by exactly that;
#  - every output validates; bad input exits 2 and writes nothing.
. "$(dirname "$0")/../lib.sh"
need_shared traces/chakra/feeder_tests_trace.tar.gz traces/param/resnet_2gpu_et.json.gz
SYS=$SRC/examples/dp_step/system.json
NET8=$SRC/examples/dp_step/network.yml
run() { "$@" > "$T/out" 2> "$T/err" || fail "$*: $(cat "$T/err")"; }
valid() { "$BIN" validate -q "$1" || { "$BIN" validate "$1" | tail -5; fail "validate $1"; }; }
same() { # same A B: diff says equal (exit 0)
  "$BIN" diff "$1" "$2" > "$T/diff" || { tail -4 "$T/diff"; fail "diff $1 $2"; }
  tail -1 "$T/diff" | grep -qx equal || fail "diff $1 $2 printed $(tail -1 "$T/diff")"
}
cycles() { # cycles OUT WORKLOAD [sim options]: every NPU's finish line
  local out=$1
  shift
  "$BIN" sim --workload "$@" --system "$SYS" --quiet > "$T/sim" 2> "$T/simerr" ||
    fail "sim $*: $(cat "$T/simerr")"
  grep '^sys\[' "$T/sim" > "$out"
  [ -s "$out" ] || fail "sim $*: no NPU lines"
}

# ------------------------------------------------------------ chakra.0.et
tar xzf "$SH/traces/chakra/feeder_tests_trace.tar.gz" -C "$T" || fail tar
C=$T/tests/data/chakra.0.et
# chakra.0.et names 1,277 absent control parents: the edit drops them.
# Its control dependencies also hold cycles (3322 -> 3322, 1954 nodes
# behind them), which sim and validate refuse and an edit keeps: the
# result's one problem is that cycle (the data-edge form below is clean).
"$BIN" validate -q "$C" && fail "chakra.0.et was expected to have problems"
run "$BIN" edit "$C" -o "$T/clean.et"
grep -q "1277 control dependencies on ids absent from the file dropped" "$T/out" || fail "dangling note"
only_ctrl_cycle() {
  "$BIN" validate "$1" > "$T/val"
  [ $? -eq 1 ] || fail "validate $1: expected exit 1: $(tail -3 "$T/val")"
  [ "$(grep -c '^problem:' "$T/val")" = 1 ] && grep -q '^problem: .*control dependency cycle' "$T/val" ||
    fail "validate $1: $(grep '^problem' "$T/val")"
}
only_ctrl_cycle "$T/clean.et"
# Cut by id range, composed back: the same trace.
run "$BIN" edit "$C" -o "$T/c_a.et" --ids 0-3000
run "$BIN" edit "$C" -o "$T/c_b.et" --ids 3001-
valid "$T/c_a.et"
only_ctrl_cycle "$T/c_b.et"
run "$BIN" edit "$T/c_a.et" -o "$T/c_ab.et" --concat "$T/c_b.et"
grep -Eq '[1-9][0-9]* restored\)' "$T/out" || fail "no cut dependency restored: $(cat "$T/out")"
same "$T/clean.et" "$T/c_ab.et"
# One iteration (no ProfilerStep markers, no repetition).
"$BIN" edit "$C" -o "$T/x.et" --iter 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "--iter 1 on one iteration should exit 2"
grep -q "has 1 iteration(s)" "$T/err" || fail "iter message: $(cat "$T/err")"
[ -e "$T/x.et" ] && fail "a failed edit left its output"
# Simulatable form (feeder v1's view, no host-side launchers), then
# anonymized: the same cycles on every NPU.
run "$BIN" edit "$C" -o "$T/c_sim.et" --drop 'type=coll;cpu=1' --keep-deps data
run "$BIN" edit "$T/c_sim.et" -o "$T/c_anon.et" --anonymize hash --salt s3cret --strip-attrs sim
valid "$T/c_anon.et"
"$BIN" jsonize "$T/c_anon.et" | grep -q 'aten::' && fail "a name survived anonymization"
cycles "$T/cy1" "$T/c_sim.et" --network "$NET8"
cycles "$T/cy2" "$T/c_anon.et" --network "$NET8"
cmp -s "$T/cy1" "$T/cy2" || fail "anonymized chakra.0.et simulates differently: $(diff "$T/cy1" "$T/cy2" | head -4)"
# Eight NPUs from one file: a one-class manifest that simulates like the
# file broadcast to the platform.
run "$BIN" edit "$T/c_sim.et" -o "$T/c8" --npus 8
grep -q '"ranks": "0-7"' "$T/c8.manifest.json" || fail "--npus 8: $(cat "$T/c8.manifest.json")"
cycles "$T/cy3" "$T/c8" --network "$NET8"
cmp -s "$T/cy1" "$T/cy3" || fail "--npus 8 simulates differently"

# ---------------------------------------------------- ResNet, PyTorch ET
R=$T/resnet.et
run "$BIN" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" -o "$R" --quiet
run "$BIN" edit "$R" -o "$T/r0.et" --iter 0
grep -q "3 iteration(s), by repeating structure (1 node(s) outside them)" "$T/out" ||
  fail "resnet iterations: $(cat "$T/out")"
run "$BIN" edit "$R" -o "$T/r12.et" --iter-only 1-2
run "$BIN" edit "$T/r0.et" -o "$T/r012.et" --concat "$T/r12.et"
valid "$T/r012.et"
same "$R" "$T/r012.et"
# The process-group definition survives --strip-attrs; cycles are kept.
run "$BIN" edit "$R" -o "$T/r_anon.et" --anonymize hash --strip-attrs sim
"$BIN" jsonize "$T/r_anon.et" | grep -q '"pg_name\\": \\"0\\"' || fail "process groups stripped"
cycles "$T/cr1" "$R" --network "$NET8"
cycles "$T/cr2" "$T/r_anon.et" --network "$NET8"
cmp -s "$T/cr1" "$T/cr2" || fail "anonymized ResNet simulates differently"
"$BIN" diff "$R" "$T/r_anon.et" > /dev/null && fail "diff should see the anonymization"
"$BIN" diff --ignore-names --ignore-io --ignore-metadata --ignore-attr rf_id --ignore-attr fw_parent \
  --ignore-attr seq_id --ignore-attr scope --ignore-attr tid --ignore-attr fw_tid \
  --ignore-attr op_schema "$R" "$T/r_anon.et" > "$T/diff" || fail "anonymized ResNet differs beyond names: $(tail -3 "$T/diff")"

# ------------------------------------------------------------- LLM sets
run "$BIN" gen llm --preset llama3-8b --layers 2 --dp 8 --pp 2 --microbatches 2 -o "$T/l8" --quiet
run "$BIN" gen llm --preset llama3-8b --layers 2 --dp 64 --pp 2 --microbatches 2 -o "$T/l64" --quiet
# Cut by ids on every rank, composed back.
run "$BIN" edit "$T/l8" -o "$T/la" --ids 0-9
run "$BIN" edit "$T/l8" -o "$T/lb" --ids 10-
valid "$T/la"
valid "$T/lb"
run "$BIN" edit "$T/la" -o "$T/lab" --concat "$T/lb"
same "$T/l8" "$T/lab"
# Two steps, then the first again.
run "$BIN" edit "$T/l8" -o "$T/l2" --repeat 2
valid "$T/l2"
run "$BIN" edit "$T/l2" -o "$T/l2_0" --iter 0
same "$T/l8" "$T/l2_0"
# 8 -> 64 replicas: the generator's own 64-replica set, byte for byte.
run "$BIN" edit "$T/l8" -o "$T/e64" --dp 64
grep -q "16 rank(s) read as 8 data-parallel replica(s) of 2 (1 inside x 2 outside); now 64" "$T/out" ||
  fail "retarget note: $(cat "$T/out")"
same "$T/l64" "$T/e64"
cmp -s "$T/l64.comm_group.json" "$T/e64.comm_group.json" || fail "groups differ"
for f in "$T"/l64.c*.et; do
  cmp -s "$f" "$T/e64.${f##*/l64.}" || fail "${f##*/} differs from the retargeted file"
done
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 8, 16 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net128.yml"
cycles "$T/cl1" "$T/l64" --network "$T/net128.yml" --comm-group "$T/l64.comm_group.json"
cycles "$T/cl2" "$T/e64" --network "$T/net128.yml" --comm-group "$T/e64.comm_group.json"
cmp -s "$T/cl1" "$T/cl2" || fail "retargeted set simulates differently"
run "$BIN" edit "$T/l8" -o "$T/n128" --npus 128
same "$T/e64" "$T/n128"
# Mixture of experts (expert-parallel groups inside each replica, dense
# and expert gradients over replicas): the generator's 8-replica set.
run "$BIN" gen llm --preset mixtral-8x7b --layers 1 --dp 2 --ep 2 -o "$T/moe2" --quiet
run "$BIN" gen llm --preset mixtral-8x7b --layers 1 --dp 8 --ep 2 -o "$T/moe8" --quiet
run "$BIN" edit "$T/moe2" -o "$T/emoe8" --dp 8
same "$T/moe8" "$T/emoe8"
# Anonymized LLM set: same cycles.
run "$BIN" edit "$T/l8" -o "$T/lan" --anonymize hash --strip-attrs sim
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 8, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net16.yml"
cycles "$T/ca1" "$T/l8" --network "$T/net16.yml" --comm-group "$T/l8.comm_group.json"
cycles "$T/ca2" "$T/lan" --network "$T/net16.yml" --comm-group "$T/lan.comm_group.json"
cmp -s "$T/ca1" "$T/ca2" || fail "anonymized LLM set simulates differently"

# ZeRO-1: all-gathers and the optimizer shard scale with the degree; the
# one node that differs on each of the 64 ranks is the optimizer.
run "$BIN" gen llm --preset llama3-8b --layers 4 --dp 8 --zero 1 -o "$T/z8" --quiet
run "$BIN" gen llm --preset llama3-8b --layers 4 --dp 64 --zero 1 -o "$T/z64" --quiet
run "$BIN" edit "$T/z8" -o "$T/ez64" --dp 64 --dp-sharded '^optimizer$'
"$BIN" diff "$T/z64" "$T/ez64" > "$T/diff" && fail "ZeRO-1: expected the optimizer to differ"
grep -q "0 added, 0 removed, 64 changed" "$T/diff" || fail "ZeRO-1 diff: $(cat "$T/diff")"
grep -q 'node 26 (COMP_NODE "optimizer"): attribute duration_ns' "$T/diff" || fail "ZeRO-1 first difference: $(tail -2 "$T/diff")"
# The 8-replica file holds the optimizer as whole microseconds (the exact
# time was within 0.1 %, so no duration_ns): 1/8 of it is off from the
# generator's own shard by the difference the simulator then shows.
ns_of() { "$BIN" jsonize "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o.get("name") == "optimizer":
        a = {x["name"]: x for x in o.get("attr", [])}
        print(int(a["duration_ns"]["int64Val"]) if "duration_ns" in a else int(o["durationMicros"]) * 1000)'; }
want=$(ns_of "$T/z64.c0.et")
got=$(ns_of "$T/ez64.c0.et")
[ "$got" -eq $(( $(ns_of "$T/z8.c0.et") / 8 )) ] || fail "optimizer not scaled by 1/8"
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 8, 8 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net64.yml"
cycles "$T/cz1" "$T/z64" --network "$T/net64.yml" --comm-group "$T/z64.comm_group.json"
cycles "$T/cz2" "$T/ez64" --network "$T/net64.yml" --comm-group "$T/ez64.comm_group.json"
c1=$(sed -n 's/^sys\[0\] finished, \([0-9]*\) cycles.*/\1/p' "$T/cz1")
c2=$(sed -n 's/^sys\[0\] finished, \([0-9]*\) cycles.*/\1/p' "$T/cz2")
[ $((c1 - c2)) -eq $((want - got)) ] ||
  fail "ZeRO-1 cycles $c1 vs $c2: expected the optimizer's $((want - got)) ns difference"

# --------------------------------------------------------------- errors
"$BIN" edit "$T/l8" -o "$T/bad" --keep 'colour=red' > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "bad predicate should exit 2"
grep -q "is not a predicate" "$T/err" || fail "bad predicate message"
# An all-to-all over the replicas (a microbenchmark's) cannot be re-derived.
run "$BIN" gen micro --coll all-to-all --size 1MiB --npus 4 -o "$T/a2a"
"$BIN" edit "$T/a2a" -o "$T/bad" --dp 8 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "retargeting an all-to-all should exit 2"
grep -q "ALL_TO_ALL runs over the data-parallel replicas" "$T/err" || fail "a2a message: $(cat "$T/err")"
[ -e "$T/bad.manifest.json" ] && fail "a refused retarget left output"
"$BIN" diff "$T/l8" "$T/nonexistent" > /dev/null 2>&1
[ $? -eq 2 ] || fail "diff of a missing set should exit 2"
"$BIN" diff "$T/l8" "$T/e64" > /dev/null
[ $? -eq 1 ] || fail "diff of different sets should exit 1"
ls "$T" | grep -q '\.part\.\|etsim-edit' && fail "temporary files left: $(ls "$T" | grep 'part\|etsim-edit')"
echo ok
