#!/usr/bin/env bash
# End-to-end: what `etsim sim` refuses, `etsim validate` reports as a
# problem (exit 1) first: a collective of size 0 or below, comm_type 99, a
# node that is its own control dependency, a receive posted before the send
# it needs (a cross-rank deadlock), collectives of two communicators in
# opposite orders; a clean set passes both.  `gen micro --size 0` is refused.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

printf 'topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > net.yml
cat > sys.json << 'EOF'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"],
 "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware",
 "local-mem-bw": 1600}
EOF

# rank NAME R NODE...: write NAME.R.et from one JSON node per argument.
rank() {
  local name=$1 r=$2
  shift 2
  { echo '{"version":"0.0.4"}'; printf '%s\n' "$@"; } > "$name.$r.json"
  "$BIN" convert --from json "$name.$r.json" -o "$name.$r.et" 2> err || fail "$name.$r: $(cat err)"
}
A='"attr":[{"name":"is_cpu_op","boolVal":false}'
deps() { [ -z "$1" ] || printf '"dataDeps":["%s"],' "$1"; }
coll() { # id type size [dep] [pg]
  local pg=
  [ -z "${5:-}" ] || pg=",{\"name\":\"pg_name\",\"stringVal\":\"$5\"}"
  echo "{\"id\":\"$1\",\"name\":\"c$1\",\"type\":\"COMM_COLL_NODE\",$(deps "${4:-}")$A,{\"name\":\"comm_type\",\"int64Val\":\"$2\"},{\"name\":\"comm_size\",\"int64Val\":\"$3\"}$pg]}"
}
p2p() { # id SEND|RECV src dst [dep]
  echo "{\"id\":\"$1\",\"name\":\"p$1\",\"type\":\"COMM_$2_NODE\",$(deps "${5:-}")$A,{\"name\":\"comm_src\",\"int32Val\":$3},{\"name\":\"comm_dst\",\"int32Val\":$4},{\"name\":\"comm_tag\",\"int32Val\":7},{\"name\":\"comm_size\",\"int64Val\":\"4096\"}]}"
}

# both_refuse NAME PATTERN: validate exits 1 naming PATTERN, sim exits 2.
both_refuse() {
  "$BIN" validate "$1" > v 2>&1; local rc=$?
  [ $rc -eq 1 ] || fail "$1: validate exit $rc ($(cat v))"
  grep -q -- "$2" v || fail "$1: validate lacks '$2': $(cat v)"
  "$BIN" sim --workload "$1" --network net.yml --system sys.json > s 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "$1: sim exit $rc ($(cat s))"
}

# A clean pair passes both.
rank ok 0 "$(coll 1 0 65536)" "$(p2p 2 SEND 0 1 1)"
rank ok 1 "$(coll 1 0 65536)" "$(p2p 2 RECV 0 1 1)"
"$BIN" validate ok > v || fail "clean set: $(cat v)"
"$BIN" sim --workload ok --network net.yml --system sys.json > s 2>&1 || fail "clean set sim: $(cat s)"

for sz in 0 -5; do
  rank size$sz 0 "$(coll 1 0 $sz)"
  rank size$sz 1 "$(coll 1 0 $sz)"
  both_refuse size$sz "node 1: comm_size $sz"
done
rank type99 0 "$(coll 1 99 1024)"
rank type99 1 "$(coll 1 99 1024)"
both_refuse type99 "node 1: comm_type 99 is not a collective"
# A node that is its own control dependency.
self='{"id":"1","name":"loop","type":"COMP_NODE","ctrlDeps":["1"],"durationMicros":"5"}'
rank self 0 "$self"
rank self 1 "$self"
both_refuse self "control dependency cycle .*one cycle of 1: 1 -> 1"
# Each rank receives before it sends: neither send is ever issued.
rank rbs 0 "$(p2p 1 RECV 1 0)" "$(p2p 2 SEND 0 1 1)"
rank rbs 1 "$(p2p 1 RECV 0 1)" "$(p2p 2 SEND 1 0 1)"
both_refuse rbs "deadlock: 2 of 2 rank(s) can never finish: rank 0 node 1 (COMM_RECV_NODE) waits for a send from rank 1"
# Two communicators of ranks {0, 1} and {2, 3}... crossed: ranks 0 and 1
# wait in communicator 1 for ranks that wait in communicator 2 first.
printf 'topology: [ Ring ]\nnpus_count: [ 3 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > net3.yml
rank cross 0 "$(coll 1 0 4096 "" 1)" "$(coll 2 0 4096 1 2)"
rank cross 1 "$(coll 1 0 4096 "" 2)" "$(coll 2 0 4096 1 1)"
rank cross 2 "$(coll 1 0 4096 "" 3)"
printf '{"1": [0, 1], "2": [0, 1], "3": [2]}' > cg.json
"$BIN" validate cross > v 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "waits for the other ranks of communicator '1'" v || fail "crossed communicators: $rc $(cat v)"
"$BIN" sim --workload cross --network net3.yml --system sys.json --comm-group cg.json > s 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "deadlock" s || fail "crossed communicators sim: $rc $(cat s)"

# gen micro writes no collective of 0 bytes.
"$BIN" gen micro --coll all-reduce --size 0 --npus 2 -o z 2> err; rc=$?
[ $rc -eq 2 ] && grep -q -- "--size" err || fail "gen micro --size 0: $rc $(cat err)"
ls z.* > /dev/null 2>&1 && fail "gen micro --size 0 wrote files"

# The real PyTorch-derived chakra.0.et: validate calls its 14 host-side
# collectives without comm_size launchers, and so does sim (no time, a
# warning); node 3322 is its own control parent, a deadlock with control
# edges in both; on data edges it runs.
TGZ=$SH/traces/chakra/feeder_tests_trace.tar.gz
if [ -r "$TGZ" ]; then
  tar xzf "$TGZ" -C "$T" || fail "tar"
  C0=$T/tests/data/chakra.0.et
  printf 'topology: [ Ring ]\nnpus_count: [ 1 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > net1.yml
  "$BIN" validate "$C0" > v 2>&1
  grep -q "problem: .*control dependency cycle .*3322 -> 3322); etsim sim --deps data" v ||
    fail "chakra.0.et validate: $(cat v)"
  "$BIN" sim --workload "$C0" --network net1.yml --system sys.json > s 2>&1; rc=$?
  [ $rc -eq 2 ] && grep -q "deadlock .*(--deps data runs on data dependencies alone)" s ||
    fail "chakra.0.et sim with control edges: $rc $(cat s)"
  "$BIN" sim --workload "$C0" --network net1.yml --system sys.json --deps data > s 2> e ||
    fail "chakra.0.et --deps data: $(cat e)"
  grep -q "node 432: host-side (is_cpu_op) collective without comm_size taken as a launcher" e ||
    fail "launcher warning: $(cat e)"
  # One NPU runs its host and GPU ops in parallel lanes: it ends no sooner
  # than the data edges' critical path and no later than every duration
  # one after another (inspect's 46,140 us and 343,769 us).
  cyc=$(sed -n 's/^sys\[0\] finished, \([0-9]*\) cycles.*/\1/p' s)
  [ -n "$cyc" ] && [ "$cyc" -ge 46140000 ] && [ "$cyc" -le 343769000 ] ||
    fail "chakra.0.et result outside [critical path, sum of durations]: $(head -1 s)"
else
  skip_part "$TGZ is absent (set ETSIM_SHARED): chakra.0.et not simulated"
fi
echo "validate_agrees: ok"
finish
