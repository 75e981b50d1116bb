#!/usr/bin/env bash
# End-to-end: `etsim edit` and `etsim diff` as a user runs them, on sets the
# generators write (no shared data needed): output forms (manifest, per-rank
# files, gzip, standard output) round-trip to equal sets; operations apply
# in command-line order; the help lists every operation; bad usage exits 2
# naming the problem and leaves nothing behind.
. "$(dirname "$0")/../lib.sh"
run() { "$@" > "$T/out" 2> "$T/err" || fail "$*: $(cat "$T/err")"; }
same() {
  "$BIN" diff -q "$1" "$2" || { "$BIN" diff "$1" "$2" | tail -3; fail "diff $1 $2"; }
}

run "$BIN" gen llm --preset llama3-8b --layers 2 --dp 2 --tp 2 --pp 2 --microbatches 2 -o "$T/s" --quiet
# Output forms.
run "$BIN" edit "$T/s" -o "$T/et" --out-format et
[ -f "$T/et.7.et" ] && [ ! -e "$T/et.manifest.json" ] || fail "--out-format et"
cmp -s "$T/s.comm_group.json" "$T/et.comm_group.json" || fail "groups not carried"
same "$T/s" "$T/et"
run "$BIN" edit "$T/et" -o "$T/m"
[ -f "$T/m.7.et" ] || fail "per-rank input should give per-rank output"
run "$BIN" edit "$T/et" -o "$T/m" --out-format manifest
[ -f "$T/m.manifest.json" ] && [ -f "$T/m.c0.et" ] || fail "--out-format manifest"
same "$T/s" "$T/m"
run "$BIN" edit "$T/s" -o "$T/gz" --gzip
[ -f "$T/gz.c0.et.gz" ] || fail "--gzip"
same "$T/s" "$T/gz"
# One file in, one file out; standard output too.
run "$BIN" edit "$T/s.c0.et" -o "$T/one.et" --scale-time 2
run "$BIN" edit "$T/s.c0.et" -o - --scale-time 2
cmp -s "$T/out" "$T/one.et" || fail "-o - differs from a file"
"$BIN" edit "$T/s" -o - > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "set of 8 rank(s)" "$T/err" || fail "a set to stdout: $(cat "$T/err")"
# Order matters: scaling then profiling is the profile's time; profiling
# then scaling is half of it.
printf 'L0_mb0_fwd_attn,100\n' > "$T/p.csv"
run "$BIN" edit "$T/s.c0.et" -o "$T/a.et" --scale-time 0.5 --profile "$T/p.csv"
run "$BIN" edit "$T/s.c0.et" -o "$T/b.et" --profile "$T/p.csv" --scale-time 0.5
"$BIN" jsonize "$T/a.et" | grep '"L0_mb0_fwd_attn"' | grep -q '"durationMicros":"100"' || fail "scale then profile"
"$BIN" jsonize "$T/b.et" | grep '"L0_mb0_fwd_attn"' | grep -q '"durationMicros":"50"' || fail "profile then scale"
# --json report.
run "$BIN" edit "$T/s" -o "$T/j" --drop 'type=send,recv' --json
python3 - "$T/out" <<'PY' || fail "edit --json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks_out"] == 8 and r["dropped"] == 32 and r["nodes_out"] == r["nodes_in"] - 32, r
PY
"$BIN" diff --json "$T/s" "$T/j" > "$T/d.json"
[ $? -eq 1 ] || fail "diff of different sets exits 1"
python3 - "$T/d.json" <<'PY' || fail "diff --json"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["equal"]
assert r["removed"] == {"COMM_SEND_NODE": 16, "COMM_RECV_NODE": 16}, r["removed"]
assert r["a"]["nodes"] - r["b"]["nodes"] == 32
PY
# Two jobs side by side on disjoint ranks: on a network of two 8-NPU
# islands, each simulates as it does alone on one island.
run "$BIN" edit "$T/s" -o "$T/two" --beside "$T/s"
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 8, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/n16.yml"
printf 'topology: [ FullyConnected ]\nnpus_count: [ 8 ]\nbandwidth: [ 300 ]\nlatency: [ 500 ]\n' > "$T/n8.yml"
sed 's/\["ring", "ring"\]/["ring"]/; s/\["direct", "direct"\]/["direct"]/' \
  "$SRC/examples/dp_step/system.json" > "$T/sys1.json"
"$BIN" sim --workload "$T/two" --network "$T/n16.yml" --system "$SRC/examples/dp_step/system.json" \
  --comm-group "$T/two.comm_group.json" 2> "$T/err" | grep '^sys\[' > "$T/c16" || fail "sim two: $(cat "$T/err")"
"$BIN" sim --workload "$T/s" --network "$T/n8.yml" --system "$T/sys1.json" \
  --comm-group "$T/s.comm_group.json" 2> "$T/err" | grep '^sys\[' > "$T/c8" || fail "sim one: $(cat "$T/err")"
[ "$(wc -l < "$T/c16")" -eq 16 ] || fail "16 NPUs"
for r in 0 1 2 3 4 5 6 7; do
  want=$(sed -n "s/^sys\[$r\] //p" "$T/c8")
  for q in $r $((r + 8)); do
    got=$(sed -n "s/^sys\[$q\] //p" "$T/c16")
    [ "$got" = "$want" ] || fail "rank $q side by side: '$got', alone: '$want'"
  done
done
# Help and usage.
"$BIN" edit --help > "$T/help" || fail "edit --help"
for op in keep drop ids iter iter-only ranks keep-deps scale-time scale-flops scale-tensor \
  scale-comm profile dp npus remap-ranks concat repeat beside insert-before insert-after \
  anonymize round-sizes round-times strip-attrs; do
  grep -q -- "--$op " "$T/help" || fail "help lacks --$op"
done
"$BIN" --help | grep -q "^  edit " || fail "etsim --help lacks edit"
"$BIN" --help | grep -q "^  diff " || fail "etsim --help lacks diff"
"$BIN" edit "$T/s" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q -- "--output PATH is required" "$T/err" || fail "missing -o: $(cat "$T/err")"
"$BIN" edit "$T/s" -o "$T/x" --scale-time fast > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "scale-time: 'fast' is not F\[@PRED\]" "$T/err" || fail "bad scale: $(cat "$T/err")"
# A bucket past int64 would leave every size as it was: refused, not a no-op.
"$BIN" edit "$T/s" -o "$T/x" --round-sizes 9223372036854775807 > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "round-sizes: '9223372036854775807' is above the largest size" "$T/err" ||
  fail "huge --round-sizes: $(cat "$T/err")"
run "$BIN" edit "$T/s.c0.et" -o "$T/r.et" --round-sizes 4611686018427387904
"$BIN" diff -q "$T/s.c0.et" "$T/r.et" > /dev/null && fail "--round-sizes 2^62 changed nothing"
# A communicator name that is not UTF-8 would make a file Chakra's readers
# refuse (found by fuzz_edit): the argument is refused.
"$BIN" edit "$T/s" -o "$T/x" --insert-after "$(printf 'all-reduce:1MiB:pg=1c\xc6\xce@type=coll')" \
  > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "insert-after: the argument is not valid UTF-8 (byte 21)" "$T/err" ||
  fail "non-UTF-8 --insert-after: $(cat "$T/err")"
[ -e "$T/x.c0.et" ] && fail "a refused edit wrote $T/x.c0.et"
"$BIN" edit "$T/s" -o "$T/x" --frobnicate 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "unknown option should exit 2"
"$BIN" edit "$T/nothing" -o "$T/x" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "nothing" "$T/err" || fail "missing input: $(cat "$T/err")"
printf 'garbage' > "$T/bad.et"
"$BIN" edit "$T/bad.et" -o "$T/x.et" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "bad.et" "$T/err" || fail "corrupt input: $(cat "$T/err")"
ls "$T" | grep -q '^x' && fail "a failed edit left output: $(ls "$T" | grep '^x')"
"$BIN" diff "$T/s" > /dev/null 2>&1
[ $? -eq 2 ] || fail "diff with one argument exits 2"
echo ok
