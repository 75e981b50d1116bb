#!/usr/bin/env bash
# End-to-end: `etsim convert --from pytorch` as a user runs it — host only
# and with a Kineto trace, the output validated, bad input refused with
# exit 2 and nothing written.
. "$(dirname "$0")/../lib.sh"

"$BIN" convert --help > "$T/help" || fail "convert --help exit $?"
grep -q "pytorch .*PyTorch execution trace" "$T/help" || fail "--help lists pytorch"
grep -q "pytorch.*not available" "$T/help" && fail "pytorch still marked unavailable"

# Bad input: exit 2, the file and line:column named, no output.
printf '{"schema": "1.1.0",\n "nodes": [\n {"id": 1,, }]}' > "$T/bad.json"
"$BIN" convert --from pytorch "$T/bad.json" -o "$T/bad" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "malformed JSON exit $rc"
grep -q "^etsim: $T/bad.json:3:[0-9]*: malformed JSON" "$T/e" || fail "error names line: $(cat "$T/e")"
ls "$T"/bad.*.et > /dev/null 2>&1 && fail "a failed conversion left a file"
"$BIN" convert --from pytorch "$T/bad.json" --frob -o "$T/bad" 2> /dev/null; rc=$?
[ $rc -eq 2 ] || fail "unknown option exit $rc"

need_shared traces/param/resnet_2gpu_et.json.gz configs/astra-sim/system/Ring_4chunks.json

# Host only: communication is kept (Chakra's converter emits none here).
"$BIN" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" -o "$T/resnet" > "$T/out" || fail "resnet exit $?"
grep -q "COMM_COLL_NODE 21" "$T/out" || fail "resnet summary: $(cat "$T/out")"
grep -q "ALL_REDUCE 15, BROADCAST 6" "$T/out" || fail "resnet collectives: $(cat "$T/out")"
"$BIN" validate "$T/resnet.1.et" > "$T/v" || fail "validate resnet: $(cat "$T/v")"
[ -e "$T/resnet.comm_group.json" ] && fail "a group file for the world group only"
# --rank names the file; --gzip compresses; --groups '' writes none.
"$BIN" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" --rank 3 --gzip --groups '' --quiet -o "$T/r3" > "$T/q" || fail "rank 3 exit $?"
[ -s "$T/q" ] && fail "--quiet printed"
[ -r "$T/r3.3.et.gz" ] || fail "--rank 3 --gzip output name"
[ -e "$T/r3.comm_group.json" ] && fail "--groups '' still wrote groups"
"$BIN" validate "$T/r3.3.et.gz" > /dev/null || fail "validate gz"

# '-o -' writes the trace to stdout (the summary goes to stderr).
"$BIN" convert --from pytorch "$SH/traces/param/pt2_et.json" -o - > "$T/stdout.et" 2> "$T/se" || fail "stdout exit $?"
grep -q "by type: COMP_NODE 4" "$T/se" || fail "summary on stderr: $(cat "$T/se")"
"$BIN" validate "$T/stdout.et" > /dev/null || fail "validate the stdout trace"
"$BIN" convert --from pytorch "$SH/traces/param/pt2_et.json" -o "$T/pt2.et" --quiet || fail "pt2 exit $?"
cmp -s "$T/stdout.et" "$T/pt2.et" || fail "stdout trace differs from the file"

# With Kineto (values after the flag, as a user types them).
"$BIN" convert --from pytorch "$SH/traces/hta/benchmark_simple_add_et.json.gz" --kineto "$SH/traces/hta/benchmark_simple_add_trace.json.gz" -o "$T/hta" > "$T/k" 2> "$T/kw" || fail "kineto exit $?"
grep -q "10/10 operators timed, 4 kernels" "$T/k" || fail "kineto summary: $(cat "$T/k")"
grep -q "warning: no ProfilerStep" "$T/kw" || fail "ProfilerStep warning: $(cat "$T/kw")"
"$BIN" validate "$T/hta.0.et" > /dev/null || fail "validate hta"
"$BIN" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" --kineto "$T/bad.json" -o "$T/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "bad kineto exit $rc"
grep -q "$T/bad.json:3:" "$T/e" || fail "bad kineto named: $(cat "$T/e")"
[ -e "$T/x.1.et" ] && fail "bad kineto left a file"
# A valid Kineto trace without cuda*Synchronize converts (an empty array
# was once sorted through a NULL pointer); a timestamp of 1e300 us is
# refused with its position, not cast to an integer.
HTA=$SH/traces/hta
python3 - "$HTA/benchmark_simple_add_trace.json.gz" "$T" <<'PY' || fail "kineto variants"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
d["traceEvents"] = [e for e in d["traceEvents"] if "Synchronize" not in e.get("name", "")]
json.dump(d, open(sys.argv[2] + "/nosync.json", "w"))
k = next(e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel")
k["ts"] = 1e300
json.dump(d, open(sys.argv[2] + "/bigts.json", "w"))
PY
"$BIN" convert --from pytorch "$HTA/benchmark_simple_add_et.json.gz" --kineto "$T/nosync.json" \
  -o "$T/nosync.et" --quiet 2> "$T/e" || fail "Kineto without synchronize: exit $? $(cat "$T/e")"
"$BIN" convert --from pytorch "$HTA/benchmark_simple_add_et.json.gz" --kineto "$T/bigts.json" \
  -o "$T/bigts.et" --quiet 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "ts 1e300 exit $rc"
grep -q "bigts.json:1:[0-9]*: traceEvents\[[0-9]*\]: 'ts' or 'dur' is outside" "$T/e" || fail "ts 1e300: $(cat "$T/e")"
[ -e "$T/bigts.et" ] && fail "ts 1e300 left a file"
# The converted pair of ranks runs through `etsim sim`: both NPUs finish,
# the 15 all-reduces go over the network.
{
  "$BIN" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" --rank 0 --quiet -o "$T/resnet" || fail "rank 0 exit $?"
  printf 'topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n' > "$T/net2.yml"
  "$BIN" sim --workload "$T/resnet" --system "$SH/configs/astra-sim/system/Ring_4chunks.json" --network "$T/net2.yml" > "$T/sim" 2>&1 || fail "sim exit $?: $(cat "$T/sim")"
  grep -q "^sys\[0\] finished" "$T/sim" && grep -q "^sys\[1\] finished" "$T/sim" || fail "sim output: $(cat "$T/sim")"
  grep -q "all-reduce  *15 " "$T/sim" || fail "sim all-reduces: $(cat "$T/sim")"
}
echo ok
