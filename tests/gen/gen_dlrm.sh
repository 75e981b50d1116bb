#!/usr/bin/env bash
# End-to-end: the DLRM path as a user runs it.
#  - plan MLPerf DLRM on 8, 64 and 128 GPUs (8 per host), generate each
#    plan's traces, validate;
#  - issue 24's breakages stay fixed: row-wise and TWRW plans of tables
#    smaller than the rank count go through gen dlrm (mlperf-dlrm on 8, 16,
#    64 ranks, criteo-kaggle), synthetic-large plans and generates;
#  - the techniques are options of shard and gen dlrm and reach the trace;
#  - the planner agrees with the simulator: with --network/--system its
#    estimates are within 2 % of the simulated iterations and its chosen
#    plan simulates no slower than any single-type plan;
#  - bad input (pooling 1e308, 2^63 rows, negative or non-numeric offsets,
#    overlapping shards, absent ranks, a table larger than memory, zero
#    dimensions, unknown presets) exits 2 naming the file and key.
. "$(dirname "$0")/../lib.sh"
for n in 8 64 128; do
  "$BIN" shard --model mlperf-dlrm --ranks $n --ranks-per-host 8 -o "$T/plan$n.json" > "$T/s$n" || fail "shard $n exit $?"
  grep -q "communication)" "$T/s$n" || fail "breakdown printed"
  grep -q "estimated iteration" "$T/s$n" || fail "estimate printed"
  grep -q "\"ranks\": $n," "$T/plan$n.json" || fail "plan file $n"
  "$BIN" gen dlrm --preset mlperf-dlrm --plan "$T/plan$n.json" -o "$T/d$n" --quiet || fail "gen dlrm $n exit $?"
  "$BIN" validate -q "$T/d$n" || fail "d$n does not validate"
done
"$BIN" validate "$T/d8" > "$T/v" || fail "one-host set validates: $(tail -2 "$T/v")"
# Row-wise and host-row-wise plans with tables of fewer rows than ranks.
for spec in "mlperf-dlrm 8 8 rw" "mlperf-dlrm 16 8 rw" "mlperf-dlrm 64 8 rw" "mlperf-dlrm 16 8 twrw" \
  "mlperf-dlrm 64 8 twrw" "criteo-kaggle 8 8 rw" "criteo-kaggle 32 4 twrw" "synthetic-large 16 8 tw,dp,twrw"; do
  set -- $spec
  "$BIN" shard --model $1 --ranks $2 --ranks-per-host $3 --types $4 --hbm-gb 1000 -o "$T/p.json" --quiet ||
    fail "shard $spec exit $?"
  "$BIN" gen dlrm --preset $1 --plan "$T/p.json" -o "$T/r" --quiet 2> "$T/e" || fail "gen $spec: $(cat "$T/e")"
  "$BIN" validate -q "$T/r" || fail "$spec does not validate"
done
"$BIN" gen dlrm --preset criteo-kaggle --ranks 4 -o "$T/k" --quiet || fail "auto plan"
"$BIN" validate -q "$T/k" || fail "kaggle set validates"
# Techniques: FP8 all-to-all and BF16 all-reduce, three pipelined iterations,
# HBM over DDR; the trace has the kernels and the plan records the options.
"$BIN" shard --model criteo-kaggle --ranks 8 --ranks-per-host 4 --a2a-precision fp8 --ar-precision bf16 \
  --pipeline --iterations 3 --hbm-gb 0.2 --ddr-gb 1 --zipf 1.1 -o "$T/t.json" > "$T/ts" || fail "shard techniques"
grep -q '"a2a_precision": "fp8", "ar_precision": "bf16", "pipeline": true, "iterations": 3' "$T/t.json" ||
  fail "step options recorded"
grep -q '"ddr_gb": 1,' "$T/t.json" && grep -q "GB in DDR" "$T/ts" || fail "memory levels recorded"
"$BIN" gen dlrm --preset criteo-kaggle --plan "$T/t.json" -o "$T/tq" --out-format et --quiet || fail "gen techniques"
"$BIN" validate -q "$T/tq" || fail "technique set validates"
"$BIN" jsonize "$T/tq.0.et" > "$T/tq.json" || fail "jsonize"
for n in emb_output_quantize emb_grad_dequantize 'emb_output_alltoall#2' emb_fetch emb_writeback; do
  grep -q "\"name\":\"$n\"" "$T/tq.json" || fail "node $n in the trace"
done
"$BIN" gen dlrm --preset criteo-kaggle --plan "$T/t.json" --ddr-gb 2 -o "$T/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "give them to 'etsim shard'" "$T/e" || fail "placement flags with a plan file ($rc)"
# The planner agrees with the simulator (congestion-aware network, 2 hosts).
printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, 2 ]\nbandwidth: [ 150, 12.5 ]\nlatency: [ 500, 2000 ]\n' > "$T/net.yml"
cat > "$T/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
 "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 3350,
 "all-reduce-implementation": ["ring", "ring"], "reduce-scatter-implementation": ["ring", "ring"],
 "all-gather-implementation": ["ring", "ring"], "all-to-all-implementation": ["direct", "direct"]}
JSON
"$BIN" shard --model mlperf-dlrm --ranks 16 --ranks-per-host 8 --network "$T/net.yml" --system "$T/sys.json" \
  --backend congestion --json "$T/cands.json" --calib-out "$T/cal.json" -o "$T/best.json" --quiet 2> "$T/e" ||
  fail "shard on a platform: $(cat "$T/e")"
python3 - "$T/cands.json" <<'PY' || fail "planner against simulator"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["candidates"]
chosen = c[r["chosen"]]
singles = [x for x in c if x["label"] in ("tw", "rw", "cw", "dp", "twrw", "twcw")]
assert len(singles) >= 3, singles
for x in c:
    err = abs(x["estimate_us"] - x["simulated_us"]) / x["simulated_us"]
    assert err < 0.02, (x["label"], x["estimate_us"], x["simulated_us"])
for x in singles:
    assert chosen["simulated_us"] <= x["simulated_us"] * (1 + 1e-9), (chosen, x)
PY
grep -q '"coll": "all-to-all", "scope": "world"' "$T/cal.json" || fail "calibration written"
"$BIN" shard --model mlperf-dlrm --ranks 16 --ranks-per-host 8 --calib "$T/cal.json" -o "$T/best2.json" --quiet ||
  fail "shard with a saved calibration"
"$BIN" shard --model mlperf-dlrm --ranks 32 --ranks-per-host 8 --calib "$T/cal.json" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "measured for 16 ranks" "$T/e" || fail "calibration of another size ($rc)"
# gen dlrm --plan auto refuses it the same way (the planner priced with closed forms, silently).
"$BIN" gen dlrm --preset mlperf-dlrm --ranks 32 --ranks-per-host 8 --calib "$T/cal.json" -o "$T/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "cal.json: measured for 16 ranks (8 per host), not 32 (8)" "$T/e" ||
  fail "gen dlrm: calibration of another size ($rc)"
"$BIN" gen dlrm --preset mlperf-dlrm --ranks 16 --ranks-per-host 8 --calib "$T/cal.json" -o "$T/c16" --quiet ||
  fail "gen dlrm with a saved calibration"
# Bad input.
"$BIN" shard --model mlperf-dlrm --ranks 8 --hbm-gb 1 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "does not fit" "$T/e" || fail "too-large table ($rc): $(cat "$T/e")"
sed 's/"rank": 7,/"rank": 70,/' "$T/plan8.json" > "$T/bad.json"
"$BIN" gen dlrm --preset mlperf-dlrm --plan "$T/bad.json" -o "$T/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "bad.json: tables\[.*\].shards\[.*\].rank: must be an integer in 0..7" "$T/e" ||
  fail "absent rank ($rc): $(cat "$T/e")"
"$BIN" shard --model mlperf-dlrm --ranks 8 --types rw -o "$T/rw8.json" --quiet || fail "rw plan"
for edit in 's/"rows": \[0, 5000000\]/"rows": [-5, 5000000]/' 's/"rows": \[0, 5000000\]/"rows": ["0", 5000000]/' \
  's/"rows": \[5000000, 5000000\]/"rows": [4999999, 5000000]/'; do
  sed "$edit" "$T/rw8.json" > "$T/bad.json"
  cmp -s "$T/bad.json" "$T/rw8.json" && fail "edit $edit changed nothing"
  "$BIN" gen dlrm --preset mlperf-dlrm --plan "$T/bad.json" -o "$T/x" 2> "$T/e"; rc=$?
  [ $rc -eq 2 ] && grep -q "bad.json: tables\[0\].shards" "$T/e" || fail "bad offsets $edit ($rc): $(cat "$T/e")"
done
M='"bottom_mlp": [4, 8], "top_mlp": [1]'
for t in '{"rows": 10, "dim": 0}|tables\[0\].dim' '{"rows": 10, "dim": 8, "pooling": 1e308}|tables\[0\].pooling' \
  '{"rows": 9223372036854775807, "dim": 8}|tables\[0\].rows' '{"rows": 10, "dim": 8, "pooling": "x"}|tables\[0\].pooling'; do
  printf '{"tables": [%s], %s}' "${t%%|*}" "$M" > "$T/m.json"
  "$BIN" shard --model "$T/m.json" --ranks 2 2> "$T/e"; rc=$?
  [ $rc -eq 2 ] && grep -q "m.json: ${t##*|}" "$T/e" || fail "model $t ($rc): $(cat "$T/e")"
done
"$BIN" shard --model dlrm-huge --ranks 2 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown DLRM preset" "$T/e" || fail "unknown preset ($rc)"
"$BIN" shard --model mlperf-dlrm --ranks 8 --pipeline --iterations 1 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "pipeline needs --iterations 2" "$T/e" || fail "pipeline of one iteration ($rc)"
ls "$T" | grep -q "^x\." && fail "failed gen left files"
echo "gen_dlrm: ok"
