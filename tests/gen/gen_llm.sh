#!/usr/bin/env bash
# End-to-end: `etsim gen llm` as a user runs it: a Llama 3 8B set with
# DP x TP x PP writes traces, a manifest and the communicator groups, and
# every set validates (etsim validate compares each rank's collectives with
# rank 0's communicator by name, so the CLI check is run on sets with one
# group per kind; tests/gen/test_llm.c checks mixed sets group by group);
# impossible splits and unknown presets exit 2 with a
# message naming the flag and leave nothing behind.
. "$(dirname "$0")/../lib.sh"
"$BIN" gen llm --help | grep -q -- "--schedule" || fail "help"
"$BIN" gen llm --preset llama3-8b --dp 2 --tp 2 --pp 2 --microbatches 4 --zero 1 --recompute -o "$T/l" > "$T/out" || fail "gen exit $?"
grep -q "8 rank(s) in 8 file(s) + manifest" "$T/out" || fail "report: $(cat "$T/out")"
[ -f "$T/l.manifest.json" ] && [ -f "$T/l.comm_group.json" ] || fail "manifest and groups"
for par in "--pp 4 --microbatches 6" "--tp 4" "--sp 4" "--pp 2 --tp 2 --schedule gpipe --zero 3"; do
  "$BIN" gen llm --preset llama3-8b $par -o "$T/v" --quiet || fail "gen $par"
  case "$par" in
    *"--tp 2"*) ;; # two TP groups: checked group by group in test_llm.c
    *) "$BIN" validate "$T/v" > "$T/vo" || fail "$par does not validate: $(tail -3 "$T/vo")" ;;
  esac
done
"$BIN" inspect "$T/l.c0.et" | grep -q "REDUCE_SCATTER" || fail "ZeRO 1 reduce-scatters"
"$BIN" gen llm --preset llama3-8b --dp 4 -o "$T/dp" --quiet || fail "dp"
"$BIN" validate -q "$T/dp" || fail "pure DP set validates"
[ "$(ls "$T" | grep -c '^dp\.c[0-9]')" = 1 ] || fail "pure DP ranks share one file"
mkdir "$T/bad"
while IFS='|' read -r args msg; do
  "$BIN" gen llm $args -o "$T/bad/x" 2> "$T/e"; rc=$?
  [ $rc -eq 2 ] || fail "'$args' exit $rc"
  grep -q -- "$msg" "$T/e" || fail "'$args': $(cat "$T/e")"
done <<'CASES'
--preset llama3-8b --tp 3|--tp 3 does not divide the 32 attention heads
--preset gpt3-175b --pp 97|--pp 97 is more than the 96 layers
--preset llama3-8b --dp 2 --npus 3|--npus 3 is not dp x tp x pp x sp x ep
--preset gpt5|unknown model preset 'gpt5'
--preset llama3-8b --schedule zigzag|--schedule: 'zigzag' is not 1f1b or gpipe
--layers 2 --hidden 64|give --preset NAME
--preset gpt3-175b --hidden 4000000000 --heads 1 --kv-heads 1|beyond the 2^62 that 64-bit counts hold
--preset gpt3-175b --layers 4000000000|4000000000 layers is more than 100000
--preset gpt3-175b --hidden 0x3000|--hidden: '0x3000' is not a non-negative decimal integer
CASES
[ -z "$(ls "$T/bad")" ] || fail "failed runs left files"
echo "gen_llm: ok"
