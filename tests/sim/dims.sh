#!/usr/bin/env bash
# Per-dimension accounting with communicator groups: a collective's time
# counts in the dimensions its NPU's messages cross (the first differing
# dimension towards the peer it sends to), in the summary, the JSON
# (coll_busy_ns_by_dim, collectives[].dims) and the CSV (dims column).  On
# a 4 x 4 network: rings of groups {0,4,8,12}... cross dimension 1 only;
# the ring 0 -> 4 -> 5 -> 1 -> 0 sends over dimension 1 from NPUs 0 and 5
# and over dimension 0 from NPUs 4 and 1.  One collective and no compute,
# so the busy time in a dimension is the whole run or nothing.
. "$(dirname "$0")/../lib.sh"
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 4, 4 ]\nbandwidth: [ 100, 50 ]\nlatency: [ 100, 1000 ]\n' > "$T/net.yml"
cat > "$T/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 2, "collective-optimization": "baseline", "local-mem-bw": 1600,
 "all-reduce-implementation": ["ring", "ring"], "all-gather-implementation": ["ring", "ring"],
 "reduce-scatter-implementation": ["ring", "ring"], "all-to-all-implementation": ["ring", "ring"]}
JSON
run() { # $1 = groups JSON, $2 = group of each rank (16 ids)
  echo "$1" > "$T/g.json"
  local gs=($2)
  for r in $(seq 0 15); do
    printf '{"version":"0.0.4"}\n{"name":"ar","type":"COMM_COLL_NODE","attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"},{"name":"pg_name","stringVal":"%s"}]}\n' "${gs[$r]}" > "$T/w.$r.json"
    "$BIN" convert --from json "$T/w.$r.json" -o "$T/w.$r.et" > /dev/null || fail "convert"
  done
  "$BIN" sim --workload "$T/w" --network "$T/net.yml" --system "$T/sys.json" --comm-group "$T/g.json" \
    --json "$T/r.json" --csv "$T/r.csv" "${@:3}" > "$T/out" 2> "$T/err" || fail "sim: $(cat "$T/err")"
}
check() { # $1 = python expression of want(npu) -> list of dims
  python3 - "$T/r.json" "$T/r.csv" "$1" <<'PY' || fail "accounting ($1)"
import csv, json, sys
r = json.load(open(sys.argv[1])); want = eval("lambda n: " + sys.argv[3])
for n in r["npus"]:
    busy = n["coll_busy_ns_by_dim"]
    exp = [n["finish_ns"] if d in want(n["id"]) else 0 for d in range(2)]
    assert busy == exp, (n["id"], busy, exp)
for c in r["collectives"]:
    assert c["dims"] == sorted(want(c["npu"])), (c, want(c["npu"]))
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 16
for row in rows:
    assert row["dims"] == "+".join(str(d) for d in sorted(want(int(row["npu"])))), row
PY
}
G1='{"1": [0, 4, 8, 12], "2": [1, 5, 9, 13], "3": [2, 6, 10, 14], "4": [3, 7, 11, 15]}'
run "$G1" "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4"
check "[1]"
grep -q 'dim 0 0.000 / 0.000, dim 1 [1-9]' "$T/out" || fail "summary: $(grep 'by dimension' "$T/out")"
run "$G1" "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4" --exact
check "[1]"
G2='{"1": [0, 4, 5, 1], "2": [2, 6, 7, 3], "3": [8, 12, 13, 9], "4": [10, 14, 15, 11]}'
run "$G2" "1 1 2 2 1 1 2 2 3 3 4 4 3 3 4 4"
# in each square a -> a+4 -> a+5 -> a+1 -> a: dimension 1 from a and a+5
check "[1] if n % 8 in (0, 2, 5, 7) else [0]"
echo ok
