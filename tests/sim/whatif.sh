#!/usr/bin/env bash
# End-to-end what-if (docs/sim.md, "What-if"): --npu-speed inline, from a
# file and as a seeded distribution; --compute-scale and --comm-scale do
# what they say (against closed forms and against an equivalent trace);
# --link-degrade equals a network file written with the degraded numbers;
# the summary and JSON name the straggler and its price; with and without
# --exact the per-NPU lines are identical; bad specs exit 2 naming the
# option and the key; per-NPU link factors ("D:N") against the dimension
# degraded and across key spellings; an NPU failure stops the run with
# exit 1 and a report.
. "$(dirname "$0")/../lib.sh"
sim() { "$BIN" sim --system "$T/sys.json" "$@"; }
# data-parallel step: 1000 us of compute, then a 1 MiB all-reduce
cat >"$T/dp.json" <<'EOF2'
{"version":"0.0.4"}
{"id":0,"name":"c","type":"COMP_NODE","duration_micros":1000}
{"id":1,"name":"ar","type":"COMM_COLL_NODE","data_deps":[0],"attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"}]}
EOF2
sed 's/1048576/2097152/; s/:1000}/:2000}/' "$T/dp.json" >"$T/dp2.json"
for f in dp dp2; do "$BIN" convert --from json "$T/$f.json" -o "$T/$f.et" >/dev/null || fail convert; done
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 25 ]\nlatency: [ 500, 1000 ]\n' >"$T/net.yml"
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 12.5 ]\nlatency: [ 500, 3000 ]\n' >"$T/half.yml"
echo '{"preferred-dataset-splits": 2, "endpoint-delay": 10, "local-mem-bw": 100, "all-reduce-implementation": ["ring", "ring"], "all-gather-implementation": ["ring", "ring"], "reduce-scatter-implementation": ["ring", "ring"], "all-to-all-implementation": ["ring", "ring"]}' >"$T/sys.json"

# compute and comm scale 2 equal the trace with twice the duration and size
for be in analytical congestion; do
  sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be --compute-scale 2 --comm-scale 2 --quiet >"$T/a" 2>&1 || fail "scale: $(cat "$T/a")"
  sim --workload "$T/dp2.et" --network "$T/net.yml" --backend $be --quiet >"$T/b" 2>&1 || fail "dp2"
  cmp -s "$T/a" "$T/b" || fail "$be: scale 2 differs from the doubled trace: $(head -2 "$T/a") / $(head -2 "$T/b")"
done
sim --workload "$T/dp.et" --network "$T/net.yml" --quiet >"$T/nominal" 2>&1 || fail nominal
cmp -s "$T/a" "$T/nominal" && fail "scales changed nothing"

# --link-degrade equals the network written degraded, both backends, exact or not
for be in analytical congestion; do
  for ex in "" --exact; do
    sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be $ex --quiet \
      --link-degrade '{"1": {"bw": 0.5, "latency": 3}}' >"$T/a" 2>&1 || fail "degrade: $(cat "$T/a")"
    sim --workload "$T/dp.et" --network "$T/half.yml" --backend $be $ex --quiet >"$T/b" 2>&1 || fail half
    cmp -s "$T/a" "$T/b" || fail "$be $ex: degraded differs from half.yml"
  done
done

# per NPU (docs/sim.md, "What-if"): every NPU of dimension 1 degraded is
# the dimension degraded (each link takes its ends' factors); both key
# spellings agree; one NPU's links in dimension 0 slow the run, --exact
# and the default agree, and the reduction line names the degraded NPU
for be in analytical congestion; do
  for ex in "" --exact; do
    sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be $ex --quiet \
      --link-degrade '{"1:0-7": {"bw": 0.5, "latency": 3}}' >"$T/a" 2>&1 || fail "npus: $(cat "$T/a")"
    sim --workload "$T/dp.et" --network "$T/half.yml" --backend $be $ex --quiet >"$T/b" 2>&1 || fail half
    diff <(grep '^sys' "$T/a") <(grep '^sys' "$T/b") >/dev/null || fail "$be $ex: all NPUs degraded differs from half.yml"
    sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be $ex --quiet \
      --link-degrade '{"0:5": 0.5}' >"$T/a" 2>&1 || fail "0:5: $(cat "$T/a")"
    sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be $ex --quiet \
      --link-degrade '{"dim0:npu5": {"bw": 0.5}}' >"$T/b" 2>&1 || fail "dim0:npu5: $(cat "$T/b")"
    cmp -s "$T/a" "$T/b" || fail "$be $ex: 0:5 and dim0:npu5 differ"
    cp "$T/a" "$T/npu5.$be$ex"
  done
  cmp -s "$T/npu5.$be" "$T/npu5.$be--exact" || fail "$be: --exact differs under 0:5"
  cmp -s "$T/npu5.$be" "$T/nominal" && fail "$be: 0:5 changed nothing"
done
sim --workload "$T/dp.et" --network "$T/net.yml" --link-degrade '{"0:5": 0.5}' >"$T/o" 2>&1 || fail "0:5 summary"
grep -q "^reduction     none: .*NPU 4's links in dimension 0 run at bandwidth x1, latency x1, NPU 5's at x0.5, x1 (--link-degrade)" "$T/o" ||
  fail "reduction line: $(grep reduction "$T/o")"
# NPUs 4-7 (dimension 1's second switch group) degraded alike in dimension
# 0 keep dimension 0's shift: classes of 4
sim --workload "$T/dp.et" --network "$T/net.yml" --link-degrade '{"0:4-7": 0.5}' >"$T/o" 2>&1 || fail "0:4-7"
grep -q "^reduction     2 of 8 NPUs simulated, each standing for a class of 4" "$T/o" ||
  fail "reduction 0:4-7: $(grep reduction "$T/o")"

# a straggler from a file: summary, JSON, and --exact agree with the default.
# NPU 5 at 0.5 computes 2000 us; at speed 1 NPUs 0-1 (0.9: 1111.111 us) are
# the critical path, so NPU 5 costs 2000 - 1111.111 = 888.889 us
echo '{"5": 0.5, "0-1": 0.9}' >"$T/speed.json"
sim --workload "$T/dp.et" --network "$T/net.yml" --npu-speed "$T/speed.json" --json "$T/r.json" >"$T/out" 2>"$T/err" || fail "speed: $(cat "$T/err")"
sim --workload "$T/dp.et" --network "$T/net.yml" --npu-speed "$T/speed.json" --exact --quiet >"$T/ex" 2>"$T/err" || fail "exact: $(cat "$T/err")"
diff <(grep '^sys' "$T/out") "$T/ex" >/dev/null || fail "--exact differs"
grep -q '^straggler     NPU 5 (speed 0.5) is the slowest; .* it costs 888.889 us' "$T/out" ||
  fail "summary: $(grep straggler "$T/out")"
python3 - "$T/r.json" <<'PY' || fail "json"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["straggler"]
assert s["npu"] == 5 and s["speed"] == 0.5, s
assert s["cost_ns"] in (888888, 888889) and abs( s["nominal_total_ns"] + s["cost_ns"] - r["total_ns"]) <= 1, (s, r["total_ns"])
assert r["npus"][5]["compute_ns"] == 2000000 and r["npus"][0]["compute_ns"] == 1111111, r["npus"][0]
assert r["npus"][r["last_npu"]]["finish_ns"] == r["total_ns"]
PY

# a seeded distribution: same seed, same bytes; another seed, another run
for s in 7 7 8; do
  sim --workload "$T/dp.et" --network "$T/net.yml" --npu-speed lognormal:sigma=0.1,seed=$s --quiet >"$T/ln.$s.$((n = ${n:-0} + 1))" 2>&1 || fail lognormal
done
cmp -s "$T/ln.7.1" "$T/ln.7.2" || fail "lognormal seed 7 twice differs"
cmp -s "$T/ln.7.1" "$T/ln.8.3" && fail "lognormal seeds 7 and 8 agree"

# bad specs: exit 2, the option and the key named
expect() { # PATTERN ARGS...
  local pat=$1
  shift
  sim --workload "$T/dp.et" --network "$T/net.yml" "$@" >"$T/o" 2>"$T/e"
  local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc ($(cat "$T/e"))"
  grep -q -- "$pat" "$T/e" || fail "$*: stderr lacks '$pat': $(cat "$T/e")"
}
expect '--npu-speed: key "9": NPU 9 is outside the 8-NPU network' --npu-speed '{"9": 0.5}'
echo '{"5-x": 0.5}' >"$T/speed.json"
expect "--npu-speed $T/speed.json: key \"5-x\" is not an NPU id" --npu-speed "$T/speed.json"
expect '--npu-speed: .*unknown key "sgima"' --npu-speed lognormal:sgima=1
expect '--link-degrade: key "0:9": NPU 9 is outside the 8-NPU network' --link-degrade '{"0:9": 0.5}'
expect '--link-degrade: key "dim2:npu3": the network has dimensions 0 to 1' --link-degrade '{"dim2:npu3": 0.5}'
expect '--link-degrade: key "0:3-1": the range runs backwards' --link-degrade '{"0:3-1": 0.5}'
expect "--link-degrade: key \"dim0:npu4\": NPU 4's links in dimension 0 are given twice" --link-degrade '{"0:2-4": 0.5, "dim0:npu4": 0.7}'
expect '--link-degrade: key "0:3x" is not a dimension number (0 to 1) or NPUs of one' --link-degrade '{"0:3x": 0.5}'
expect '--link-degrade: key "dim0:3" is not a dimension number' --link-degrade '{"dim0:3": 0.5}'
expect '--link-degrade: key "0:3": factors must be in' --link-degrade '{"0:3": {"bw": 0}}'
expect '--link-degrade: key "0:3" is not a cable of the topology file' --link-degrade '{"0:3": 0.5}' --backend flow
expect '--link-degrade: key "2": the network has dimensions 0 to 1' --link-degrade '{"2": 0.5}'
expect '--link-degrade: key "1" is not a cable of the topology file' --link-degrade '{"1": 0.5}' --backend flow
expect '--link-degrade: key "link:0-8" is not a dimension number' --link-degrade '{"link:0-8": 0.5}'
expect '--compute-scale is a factor' --compute-scale 0
expect '--comm-scale is a factor' --comm-scale nan
expect '--fail: .npu:9@1.: NPU 9 is outside the 8-NPU network' --fail npu:9@1
expect "--fail: 'link:0:3@1': link failures need --backend flow or packet" --fail link:0:3@1
expect "--fail: 'npu:1@3xs': unknown time unit 'xs'" --fail npu:1@3xs
expect "--fail npu:2@2us: one NPU failure per run (the first was --fail npu:1@1us)" --fail npu:1@1us --fail npu:2@2us

# an NPU failing mid-run: exit 1, the report names the blocked all-reduce
# and the NPUs; never a hang (timeout as a guard); after the end: exit 0
for be in analytical congestion; do
  timeout 60 "$BIN" sim --system "$T/sys.json" --workload "$T/dp.et" --network "$T/net.yml" \
    --backend $be --fail npu:6@1020us >"$T/o" 2>"$T/e"
  rc=$?
  [ $rc -eq 1 ] || fail "$be --fail: exit $rc ($(cat "$T/e"))"
  grep -q '^etsim: failure: NPU 6 failed at t=1020000 ns; .* 8 of 8 NPUs unable to finish (NPUs 0-7); blocked: ALL_REDUCE node 1 "ar" (communicator world) blocked on NPUs ' "$T/e" ||
    fail "$be --fail report: $(cat "$T/e")"
  [ -s "$T/o" ] && fail "$be --fail printed results"
  sim --workload "$T/dp.et" --network "$T/net.yml" --backend $be --fail npu:6@1s --quiet >"$T/o" 2>"$T/e" ||
    fail "$be --fail after the end: $(cat "$T/e")"
  grep -q 'NPU 6 had finished its trace by then' "$T/e" || fail "no note: $(cat "$T/e")"
done
echo ok
