#!/usr/bin/env bash
# End-to-end: strings that are not UTF-8.  PyTorch copies operator names
# byte for byte; such a name copied into a .et made Chakra's readers and
# etsim's own jsonize refuse the file.  The converter writes U+FFFD for
# each bad byte (and says so), validate names a trace that still has one,
# and jsonize reads it anyway, writing U+FFFD with a warning.  A text
# workload with such a name is refused at its line and column.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

python3 - << 'PY'
import json
io0 = {"values": [], "shapes": [], "types": []}
nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1,
          "inputs": io0, "outputs": io0, "attrs": []},
         {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1,
          "inputs": io0, "outputs": io0, "attrs": []},
         {"id": 3, "name": "NAMEX", "ctrl_deps": 2, "ts": 1000, "inclusive_dur": 20,
          "exclusive_dur": 15, "inputs": io0, "outputs": io0,
          "attrs": [{"name": "rf_id", "type": "uint64", "value": 3},
                    {"name": "op_schema", "type": "string", "value": "SCHEMAX"}]}]
s = json.dumps({"schema": "1.0.3-chakra.0.0.4", "pid": 7, "time": "t", "start_ts": 100,
                "finish_ts": 200, "nodes": nodes}).encode()
open("pt.json", "wb").write(s.replace(b"NAMEX", b"aten::\xff\xfemm").replace(b"SCHEMAX", b"x\xc3(y"))
PY
"$BIN" convert --from pytorch pt.json -o pt --quiet 2> err || fail "convert: $(cat err)"
grep -q "pt.json: 2 string(s) were not valid UTF-8 (names copied byte for byte); each bad byte became U+FFFD" err ||
  fail "converter warning: $(cat err)"
"$BIN" validate pt.0.et > v || fail "converted trace does not validate: $(cat v)"
"$BIN" jsonize pt.0.et > pt.jsonl 2> err || fail "jsonize: $(cat err)"
[ -s err ] && fail "jsonize warned on a clean trace: $(cat err)"
python3 - << 'PY' || fail "names in the JSON"
import json
n = [json.loads(l) for l in open("pt.jsonl")][1]
assert n["name"] == "aten::\ufffd\ufffdmm", n["name"]
schema = [a for a in n["attr"] if a["name"] == "op_schema"][0]["stringVal"]
assert schema == "x\ufffd(y", schema
PY

# A .et holding a bad name (as the converter wrote before): validate says
# so, jsonize writes it with U+FFFD and a warning, exit 0.
printf '{"version":"0.0.4"}\n{"id":"1","name":"ok","type":"COMP_NODE"}\n' > u.json
"$BIN" convert --from json u.json -o u.et || fail "convert u"
python3 -c "d = open('u.et', 'rb').read(); i = d.index(b'ok'); open('bad.et', 'wb').write(d[:i] + b'\xff\xfe' + d[i + 2:])"
"$BIN" validate bad.et > v; rc=$?
[ $rc -eq 1 ] && grep -q "bad.et: node 1: its name is not valid UTF-8" v || fail "validate: $rc $(cat v)"
"$BIN" jsonize bad.et > bad.jsonl 2> err || fail "jsonize of a bad name: $(cat err)"
grep -q '"name":"\\ufffd\\ufffd"' bad.jsonl || fail "jsonize output: $(cat bad.jsonl)"
grep -q "bad.et: 2 byte(s) of strings were not UTF-8 and are written as U+FFFD" err || fail "jsonize warning: $(cat err)"

# An ASTRA-sim text workload is text: a name that is not UTF-8 is refused
# at its line and column (it would become a protobuf string).
printf 'DATA\n1\nconv\xb9 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 1\n' > w.txt
"$BIN" convert --from text w.txt --npus 2 -o w 2> err; rc=$?
[ $rc -eq 2 ] && grep -q "w.txt:3:5: byte 0xb9 is not UTF-8 text" err || fail "text workload: $rc $(cat err)"
ls w.* > /dev/null 2>&1 && [ "$(ls w.*)" != w.txt ] && fail "a refused text workload left files"
echo "utf8: ok"
