#!/usr/bin/env bash
# The summary's honest lines: duration_ns (etsim's finer time) is used and
# said so, --duration-micros reads what ASTRA-sim reads; events/s is per
# CPU second; the JSON names the reduction; nothing but errors goes to
# stderr when it is not a terminal (progress lines are for terminals).
. "$(dirname "$0")/../lib.sh"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$T/net.yml"
cat > "$T/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "collective-optimization": "baseline", "local-mem-bw": 1600,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
 "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}
JSON
# two kernels: 30.054 us written as duration_micros 30 and duration_ns 30054
cat > "$T/w.json" <<'JSON'
{"version":"0.0.4"}
{"id":"0","name":"k0","type":"COMP_NODE","durationMicros":"30","attr":[{"name":"is_cpu_op","boolVal":false},{"name":"duration_ns","int64Val":"30054"}]}
{"id":"1","name":"k1","type":"COMP_NODE","durationMicros":"30","dataDeps":["0"],"attr":[{"name":"is_cpu_op","boolVal":false},{"name":"duration_ns","int64Val":"30054"}]}
JSON
"$BIN" convert --from json "$T/w.json" -o "$T/w.et" > /dev/null || fail convert
"$BIN" sim --workload "$T/w.et" --network "$T/net.yml" --system "$T/sys.json" --json "$T/r.json" \
  > "$T/out" 2> "$T/err" || fail "sim: $(cat "$T/err")"
grep -q '^sys\[3\] finished, 60108 cycles' "$T/out" || fail "duration_ns: $(grep 'sys\[3\]' "$T/out")"
grep -q '^durations     duration_ns timed 8 compute node runs instead of duration_micros, +0.108 us per NPU' "$T/out" \
  || fail "durations line: $(grep durations "$T/out")"
grep -Eq '^simulation    [0-9.]+ s CPU \([0-9.]+ s wall\), [0-9]+ events, [0-9.]+ M events/s of CPU' "$T/out" \
  || fail "simulation line: $(grep '^simulation' "$T/out")"
grep -q '^reduction     1 of 4 NPUs simulated' "$T/out" || fail "reduction: $(grep '^reduction' "$T/out")"
[ -s "$T/err" ] && fail "stderr not empty when not a terminal: $(cat "$T/err")"
python3 - "$T/r.json" <<'PY' || fail "json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["npus_simulated"] == 1 and r["reduction"].startswith("dimension 0"), r["reduction"]
assert r["cpu_s"] >= 0 and r["reduction_why"] == ""
PY
"$BIN" sim --workload "$T/w.et" --network "$T/net.yml" --system "$T/sys.json" --duration-micros \
  > "$T/out" 2> "$T/err" || fail "sim --duration-micros"
grep -q '^sys\[3\] finished, 60000 cycles' "$T/out" || fail "--duration-micros: $(grep 'sys\[3\]' "$T/out")"
grep -q '^durations' "$T/out" && fail "--duration-micros still reports duration_ns"
"$BIN" sim --workload "$T/w.et" --network "$T/net.yml" --system "$T/sys.json" --exact --quiet \
  > "$T/out" 2> "$T/err" || fail "sim --quiet"
[ "$(wc -l < "$T/out")" -eq 4 ] || fail "--quiet prints only the NPU lines"
[ -s "$T/err" ] && fail "--quiet stderr: $(cat "$T/err")"
echo ok
