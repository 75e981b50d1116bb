#!/usr/bin/env bash
# End-to-end: `etsim convert --from text` as a user runs it: every shared
# ASTRA-sim 1.0 workload converts and validates; a malformed line exits 2
# with FILE:LINE:COLUMN and writes nothing; --npus is required.
. "$(dirname "$0")/../lib.sh"
DIR=$SH/traces/astra-sim/text_workloads
if [ -d "$DIR" ]; then
  for f in "$DIR"/*.txt; do
    b=$(basename "$f" .txt)
    "$BIN" convert --from text "$f" --npus 8 --passes 2 -o "$T/$b" > "$T/out" || fail "$b: exit $?"
    grep -q "8 rank(s)" "$T/out" || fail "$b: report $(cat "$T/out")"
    if [ "$b" = Transformer_HybridParallel ]; then
      [ -f "$T/$b.comm_group.json" ] || fail "transformer groups file"
      for r in 0 1 2 3 4 5 6 7; do "$BIN" validate -q "$T/$b.c$r.et" || fail "$b rank $r"; done
    else
      "$BIN" validate -q "$T/$b" || fail "$b does not validate"
    fi
  done
  "$BIN" convert --from text "$DIR/Resnet50_DataParallel.txt" --npus 2 --out-format et --time-unit ns -o "$T/rn" --quiet || fail "et format"
  [ -f "$T/rn.1.et" ] && [ ! -f "$T/rn.manifest.json" ] || fail "et format writes per-rank files"
else
  skip_part "$DIR is absent (set ETSIM_SHARED): shared text workloads not converted"
fi
mkdir "$T/bad"
printf 'DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE oops 1\n' > "$T/in.txt"
"$BIN" convert --from text "$T/in.txt" --npus 2 -o "$T/bad/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "malformed exit $rc"
grep -q "^etsim: $T/in.txt:3:40: expected the weight-gradient collective size in bytes (a non-negative integer), found 'oops'" "$T/e" || fail "message: $(cat "$T/e")"
[ -z "$(ls "$T/bad")" ] || fail "nothing written on error"
"$BIN" convert --from text "$T/in.txt" -o "$T/bad/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "npus" "$T/e" || fail "--npus required ($rc)"
"$BIN" convert --from text "$T/missing.txt" --npus 2 -o "$T/bad/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "cannot open" "$T/e" || fail "missing input ($rc)"
echo "convert_text: ok"
finish
