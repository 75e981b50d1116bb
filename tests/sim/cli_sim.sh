#!/usr/bin/env bash
# End-to-end: `etsim sim` as an ASTRA-sim user runs it — ASTRA-sim's flag
# spellings and output lines on ASTRA-sim's own microbenchmark traces and
# configs, the reports, and bad input refused with exit 2.
. "$(dirname "$0")/../lib.sh"

M=$SH/traces/astra-sim/microbenchmarks
C=$SH/configs/astra-sim
need_shared traces/astra-sim/microbenchmarks configs/astra-sim

# ASTRA-sim's own command line, program name changed.  The 4-NPU 1 MiB
# all-reduce with Ring_4chunks.json: 4 chunks x (2*3*1720 + 3*120 + 7*10).
"$BIN" sim --workload-configuration=$M/all_reduce/4npus_1MB/all_reduce \
  --system-configuration=$C/system/Ring_4chunks.json \
  --network-configuration=$C/network/Ring_4npus.yml \
  --remote-memory-configuration=$C/remote_memory/no_memory_expansion.json \
  --comm-group-configuration=empty > "$T/out" 2> "$T/err" || fail "sim exit $? ($(cat "$T/err"))"
for r in 0 1 2 3; do
  grep -qx "sys\[$r\] finished, 43000 cycles, exposed communication 43000 cycles." "$T/out" \
    || fail "line for sys[$r]: $(cat "$T/out")"
done
grep -q "== etsim summary ==" "$T/out" || fail "summary"

# Reports: JSON with per-NPU records, CSV with one row per node, timeline.
"$BIN" sim --workload $M/all_gather/4npus_1MB/all_gather --system $C/system/Ring_4chunks.json \
  --network $C/network/Ring_4npus.yml --quiet --json "$T/r.json" --csv "$T/r.csv" \
  --timeline "$T/t.json" > "$T/out" || fail "sim with reports exit $?"
[ "$(wc -l < "$T/out")" -eq 4 ] || fail "--quiet prints only the 4 NPU lines"
python3 - "$T/r.json" "$T/r.csv" "$T/t.json" <<'PY' || fail "reports"
import csv, json, sys
r = json.load(open(sys.argv[1]))
assert len(r["npus"]) == 4, r
f = r["npus"][0]["finish_ns"]
assert all(n["finish_ns"] == f and n["exposed_comm_ns"] == f for n in r["npus"])
assert r["total_ns"] == f and r["events"] > 0
assert r["collectives"][0]["type"] == "ALL_GATHER" and r["collectives"][0]["bytes"] == 1 << 20
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 4 and {int(x["npu"]) for x in rows} == {0, 1, 2, 3}
assert all(int(x["end_ns"]) == f for x in rows)
t = json.load(open(sys.argv[3]))
xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
assert len(xs) == 4 and abs(xs[0]["dur"] - f / 1000) < 1e-6
PY

# The README's example: 8 ranks sharing one trace through a manifest on a
# 2-D platform; one NPU stands for a class of all 8; the timeline has dependency arrows.
"$BIN" convert --from json "$SRC/examples/dp_step/dp_step.json" -o "$T/dp.et" || fail "convert"
echo '{"etsim_trace_set": 1, "npus": 8, "classes": [{"file": "dp.et", "ranks": "0-7"}]}' > "$T/dp.manifest.json"
"$BIN" sim --workload "$T/dp" --network "$SRC/examples/dp_step/network.yml" \
  --system "$SRC/examples/dp_step/system.json" --timeline "$T/dp.tl.json" > "$T/dp.out" || fail "example sim"
"$BIN" sim --workload "$T/dp" --network "$SRC/examples/dp_step/network.yml" \
  --system "$SRC/examples/dp_step/system.json" --exact --quiet > "$T/dp.exact" || fail "example --exact"
grep -q "^reduction     1 of 8 NPUs simulated, each standing for a class of 8 equivalent NPUs" "$T/dp.out" \
  || fail "symmetry note: $(grep '^reduction' "$T/dp.out")"
[ "$(grep '^sys' "$T/dp.out")" = "$(cat "$T/dp.exact")" ] || fail "representative and exact differ"
python3 - "$T/dp.tl.json" <<'PY' || fail "timeline arrows"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
s = {e["id"]: e for e in ev if e["ph"] == "s"}
f = [e for e in ev if e["ph"] == "f"]
assert s and len(s) == len(f), (len(s), len(f))
assert all(s[e["id"]]["ts"] <= e["ts"] and s[e["id"]]["pid"] == e["pid"] for e in f)
assert {e["pid"] for e in ev if e["ph"] == "X"} == set(range(8))
PY

# The flow and packet RoCE backends behind the same interface: on a
# one-switch network with no contention they can only add header bytes and
# per-packet store-and-forward to the analytical time, a few percent.
for b in analytical flow packet; do
  "$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce.0.et --system $C/system/Ring_4chunks.json \
    --network $C/network/analytical-backend-Switch.yml --backend $b --quiet > "$T/$b.out" 2> "$T/err" \
    || fail "backend $b: $(cat "$T/err")"
  [ "$(wc -l < "$T/$b.out")" -eq 16 ] || fail "backend $b: 16 NPU lines"
done
python3 - "$T" <<'PY' || fail "flow/packet against analytical"
import re, sys
t = lambda b: [int(re.search(r"finished, (\d+) cycles", l).group(1)) for l in open(f"{sys.argv[1]}/{b}.out")]
a, f, p = t("analytical"), t("flow"), t("packet")
assert len(set(a)) == 1
for x in (f, p):
    assert all(a[0] <= v <= a[0] * 1.05 for v in x), (a[0], x[:3])
PY
# Per-message FCT lines as ns-3 writes them (and the JSON report): a ring all-reduce of 1 MB on 16
# NPUs in 4 chunks is 16 x 2 x 15 x 4 = 1,920 messages of 1 MB / 64; the
# last ACK comes after the last delivery, so no FCT ends after the run
# by more than one message's ACK return.
for b in flow packet; do
  "$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce.0.et --system $C/system/Ring_4chunks.json \
    --network $C/network/analytical-backend-Switch.yml --backend $b --quiet --net-fct "$T/fct.$b" \
    --json "$T/fj.$b" > "$T/fo.$b" 2> "$T/err" || fail "--net-fct $b: $(cat "$T/err")"
  # a symmetric ring on one switch stays in lock step: one message per pair
  python3 -c "import json,sys; n = json.load(open(sys.argv[1]))['network']; \
assert n['max_inflight_pair'] == 1, n" "$T/fj.$b" || fail "in flight per pair, $b"
  awk -v end="$(sed -n 's/.*finished, \([0-9]*\) cycles.*/\1/p' "$T/fo.$b" | sort -n | tail -1)" '
    NF != 8 || $5 != 16384 || $7 <= 0 { bad = 1 }
    { n++; if ($6 + $7 > last) last = $6 + $7 }
    END { exit !(n == 1920 && !bad && last >= end - 1 && last <= end + 5000) }' "$T/fct.$b" \
    || fail "--net-fct $b: $(wc -l < "$T/fct.$b") lines, $(tail -1 "$T/fct.$b"), $(cat "$T/fo.$b" | head -1)"
done
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce.0.et --system $C/system/Ring_4chunks.json \
  --network $C/network/analytical-backend-Switch.yml --backend packet --quiet --net-fct "$T/fct.bad" \
  --net-config "$T/nothing.cfg" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "missing --net-config exit $rc"
ls "$T" | grep -q "^fct.bad" && fail "a failed run left an FCT file"
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce.0.et --system $C/system/Ring_4chunks.json \
  --network $C/network/analytical-backend-Switch.yml --net-fct "$T/fct.an" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "need --backend flow or packet" "$T/err" || fail "--net-fct on analytical: $rc $(cat "$T/err")"

"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce --system $C/system/Ring_4chunks.json \
  --network $C/network/Ring_4npus.yml --backend packet 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "packet on a ring without a topology exit $rc"
grep -q "needs --net-topology" "$T/err" || fail "packet topology message: $(cat "$T/err")"

# A netsim topology file stands for the network: its first 8 hosts are the NPUs.
for cc in none hpcc; do
  "$BIN" sim --workload $M/all_to_all/4npus_1MB/all_to_all.0.et --system $C/system/Ring_4chunks.json \
    --network $C/network/Ring_8npus.yml --backend packet --net-topology "$SRC/examples/netsim/incast8.topo" \
    --cc $cc --quiet > "$T/cc.$cc" 2> "$T/err" || fail "packet --cc $cc: $(cat "$T/err")"
  [ "$(grep -c '^sys\[' "$T/cc.$cc")" -eq 8 ] || fail "packet --cc $cc lines"
done
cmp -s "$T/cc.none" "$T/cc.hpcc" && fail "HPCC's INT headers must change the time"
# The summary names the fabric that ran, not the YAML's ring.
"$BIN" sim --workload $M/all_to_all/4npus_1MB/all_to_all.0.et --system $C/system/Ring_4chunks.json \
  --network $C/network/Ring_8npus.yml --backend packet --net-topology "$SRC/examples/netsim/incast8.topo" \
  > "$T/sum" 2> "$T/err" || fail "packet summary: $(cat "$T/err")"
grep -q "^network       packet network $SRC/examples/netsim/incast8.topo: 9 hosts (the first 8 are the NPUs), 1 switches, 9 links$" "$T/sum" ||
  fail "network line: $(grep '^network ' "$T/sum")"

# Process groups from a PyTorch METADATA node (as ASTRA-sim reads them) give
# the same result as the same group in a communicator-group file.
md='{"id":"1","name":"## process_group:init ##","type":"METADATA_NODE","inputs":{"values":"['"'"'[{\"pg_name\": \"0\", \"ranks\": []}, {\"pg_name\": \"1\", \"ranks\": [0, 2]}]'"'"']","shapes":"[[]]","types":"['"'"'String'"'"']"}}'
ar='{"id":"2","name":"ar","type":"COMM_COLL_NODE","dataDeps":["1"],"attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"},{"name":"pg_name","stringVal":"1"}]}'
cp='{"id":"2","name":"c","type":"COMP_NODE","dataDeps":["1"],"durationMicros":"3"}'
for r in 0 1 2 3; do
  { echo '{"version":"0.0.4"}'; echo "$md"; if [ $r = 0 ] || [ $r = 2 ]; then echo "$ar"; else echo "$cp"; fi; } > "$T/pg.$r.json"
  "$BIN" convert --from json "$T/pg.$r.json" -o "$T/pg.$r.et" || fail "convert pg.$r"
done
"$BIN" sim --workload "$T/pg" --system $C/system/Ring_4chunks.json --network $C/network/Ring_4npus.yml \
  --quiet > "$T/pg.md" 2> "$T/err" || fail "sim with METADATA groups: $(cat "$T/err")"
echo '{"1": [0, 2]}' > "$T/pg.cg.json"
"$BIN" sim --workload "$T/pg" --system $C/system/Ring_4chunks.json --network $C/network/Ring_4npus.yml \
  --comm-group "$T/pg.cg.json" --quiet > "$T/pg.cg" 2> "$T/err" || fail "sim with group file: $(cat "$T/err")"
cmp -s "$T/pg.md" "$T/pg.cg" || fail "METADATA groups differ from the group file: $(paste "$T/pg.md" "$T/pg.cg")"
grep -q "^sys\[1\] finished, 3000 cycles" "$T/pg.md" || fail "rank 1 only computes 3 us: $(cat "$T/pg.md")"

# Bad input, exit 2 with a clear message.
"$BIN" sim --workload $T/nothing --system $C/system/Ring_4chunks.json \
  --network $C/network/Ring_4npus.yml 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "missing workload exit $rc"
grep -q "nothing" "$T/err" || fail "missing workload message: $(cat "$T/err")"
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce --system $C/system/Ring_4chunks.json \
  --network $C/network/Ring_8npus.yml 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "rank count mismatch exit $rc"
grep -q "4 ranks but the network has 8 NPUs" "$T/err" || fail "mismatch message: $(cat "$T/err")"
echo '{"preferred-dataset-splits": 4, "all-to-all-implementation": ["ringo"]}' > "$T/sys.json"
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce --system $T/sys.json \
  --network $C/network/Ring_4npus.yml 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown algorithm exit $rc"
grep -q 'sys.json: key "all-to-all-implementation"\[0\]: unknown algorithm "ringo"' "$T/err" \
  || fail "unknown algorithm message: $(cat "$T/err")"
echo '{"preferred-dataset-splits": 4, "frobnicate": 1}' > "$T/sys.json"
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce --system $T/sys.json \
  --network $C/network/Ring_4npus.yml > /dev/null 2> "$T/err" || fail "unknown key is only a warning"
grep -q 'unknown key "frobnicate"' "$T/err" || fail "unknown key warning: $(cat "$T/err")"
"$BIN" sim --workload $M/all_reduce/4npus_1MB/all_reduce 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "missing flags exit $rc"
echo "ok"
