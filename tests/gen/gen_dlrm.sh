#!/usr/bin/env bash
# End-to-end: the DLRM study of docs/shard.md as a user runs it — plan the
# MLPerf DLRM on 8, 64 and 128 GPUs (8 per host), generate each plan's
# traces, validate; bad input (a table larger than memory, a plan naming
# absent ranks, zero-dimension tables, unknown presets) exits 2.
. "$(dirname "$0")/../lib.sh"
for n in 8 64 128; do
  "$BIN" shard --model mlperf-dlrm --ranks $n --ranks-per-host 8 -o "$T/plan$n.json" > "$T/s$n" || fail "shard $n exit $?"
  grep -q "communication)" "$T/s$n" || fail "breakdown printed"
  grep -q "\"ranks\": $n," "$T/plan$n.json" || fail "plan file $n"
  "$BIN" gen dlrm --preset mlperf-dlrm --plan "$T/plan$n.json" -o "$T/d$n" --quiet || fail "gen dlrm $n exit $?"
  for f in "$T"/d$n.c*.et; do "$BIN" validate -q "$f" || fail "$f does not validate"; done
done
"$BIN" validate "$T/d8" > "$T/v" || fail "one-host set validates: $(tail -2 "$T/v")"
"$BIN" gen dlrm --preset criteo-kaggle --ranks 4 -o "$T/k" --quiet || fail "auto plan"
"$BIN" validate -q "$T/k" || fail "kaggle set validates"
# Bad input.
"$BIN" shard --model mlperf-dlrm --ranks 8 --hbm-gb 1 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "does not fit" "$T/e" || fail "too-large table ($rc): $(cat "$T/e")"
sed 's/"rank": 7,/"rank": 70,/' "$T/plan8.json" > "$T/bad.json"
"$BIN" gen dlrm --preset mlperf-dlrm --plan "$T/bad.json" -o "$T/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "rank 70 is not among the plan's 8 ranks" "$T/e" || fail "absent rank ($rc): $(cat "$T/e")"
printf '{"tables": [{"rows": 10, "dim": 0}], "bottom_mlp": [4, 8], "top_mlp": [1]}' > "$T/zero.json"
"$BIN" shard --model "$T/zero.json" --ranks 2 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "tables\[0\]" "$T/e" || fail "zero dim ($rc): $(cat "$T/e")"
"$BIN" shard --model dlrm-huge --ranks 2 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown DLRM preset" "$T/e" || fail "unknown preset ($rc)"
ls "$T" | grep -q "^x\." && fail "failed gen left files"
echo "gen_dlrm: ok"
