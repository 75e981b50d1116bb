#!/usr/bin/env bash
# End-to-end: the etsim binary as a user runs it — help, exit codes, the
# default example converted, validated and inspected, bad input refused.
. "$(dirname "$0")/../lib.sh"

"$BIN" --help > "$T/help" || fail "--help exit $?"
grep -q "usage: etsim <command>" "$T/help" || fail "--help text"
for c in inspect validate jsonize convert; do
  grep -q "^  $c " "$T/help" || fail "--help lists $c"
  "$BIN" $c --help > /dev/null || fail "$c --help exit $?"
done
"$BIN" frobnicate 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown command exit $rc"
grep -q "unknown command 'frobnicate'" "$T/err" || fail "unknown command message"

# The default example, as scripts/setup.sh runs it.
for r in 0 1 2 3; do
  "$BIN" convert --from json "$SRC/examples/dp_step/dp_step.json" -o "$T/dp.$r.et" || fail "convert exit $?"
done
"$BIN" validate "$T/dp" > "$T/v" 2>&1 || fail "validate of the example exit $? ($(cat "$T/v"))"
"$BIN" inspect "$T/dp" > "$T/i" || fail "inspect exit $?"
grep -q "COMP_NODE" "$T/i" || fail "inspect shows node types"
grep -q "ALL_REDUCE" "$T/i" || fail "inspect shows collectives"

# Bad input: random bytes give exit 2 and a message with the file and offset.
head -c 2048 /dev/urandom > "$T/junk.et"
printf '\x05' | dd of="$T/junk.et" bs=1 count=1 conv=notrunc 2>/dev/null
"$BIN" validate "$T/junk.et" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "validate of random bytes exit $rc"
grep -q "^etsim: $T/junk.et: offset [0-9]*" "$T/e" || fail "error names file and offset: $(cat "$T/e")"
"$BIN" inspect "$T/missing" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "inspect of a missing set exit $rc"
grep -q "$T/missing" "$T/e" || fail "missing set named"

# A failed conversion leaves no output file behind.
echo '{"version": "1"} {"id": "x"' > "$T/bad.json"
"$BIN" convert --from json "$T/bad.json" -o "$T/bad.et" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "convert of bad JSON exit $rc"
ls "$T" | grep -q "^bad.et" && fail "half-written output left behind"
# A truncated gzip trace: the error names the file and offset, not zlib's
# "<fd:N>" (which would also make equal errors differ between readers).
gzip -c "$T/dp.0.et" | head -c 200 > "$T/cut.et.gz"
"$BIN" inspect "$T/cut.et.gz" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "truncated gzip exit $rc"
grep -q "cut.et.gz: offset .*gzip stream error: unexpected end of file" "$T/err" || fail "gzip message: $(cat "$T/err")"
grep -q "<fd:" "$T/err" && fail "zlib's descriptor leaks into the message: $(cat "$T/err")"
# A rank set's totals: every distinct file counted once per rank that runs
# it (the microbenchmark shares one file among 8 ranks; the LLM set has a
# file per rank), checked against the per-file blocks of the same output.
"$BIN" gen micro --coll all-reduce --size 1MiB --npus 8 -o "$T/m8" > /dev/null || fail "gen micro exit $?"
"$BIN" gen llm --preset gpt3-175b --layers 2 --dp 2 --tp 2 --pp 2 -o "$T/l8" --quiet || fail "gen llm exit $?"
for set in m8 l8; do
  "$BIN" inspect --json "$T/$set" > "$T/$set.json" || fail "inspect $set exit $?"
  python3 - "$T/$set.json" "$T/$set.manifest.json" <<'PY' || fail "inspect totals of $set: $(cat "$T/$set.json" | head -c 300)"
import json, os, sys
d = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
files = [os.path.basename(t["file"]) for t in d["traces"]]
# how many ranks run each file, from the manifest's "0-3,5" rank lists
runs = {}
for c in m["classes"]:
    n = 0
    for part in c["ranks"].split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    runs[os.path.basename(c["file"])] = runs.get(os.path.basename(c["file"]), 0) + n
tot = d["total"]
assert tot["ranks"] == 8, tot
nodes = sum(t["nodes"] * runs[os.path.basename(t["file"])] for t in d["traces"])
assert tot["nodes"] == nodes, (tot["nodes"], nodes)
bytes_ = sum(t["collectives"]["ALL_REDUCE"]["bytes"] * runs[os.path.basename(t["file"])]
             for t in d["traces"])
assert tot["collectives"]["ALL_REDUCE"]["bytes"] == bytes_
assert tot["compute_us_max"] == max(t["compute_us"] for t in d["traces"])
PY
done
"$BIN" inspect "$T/m8" | grep -q "^all 8 ranks" || fail "text total line"
echo "cli_basics: ok"
