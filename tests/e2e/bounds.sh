#!/usr/bin/env bash
# End-to-end: small inputs that claim a huge cost are refused (exit 2, a
# message naming the file and the place) within seconds and without the
# memory they claim, or are bounded by what the file holds.  Each case was
# minutes or gigabytes before (issue 16); docs/limits.md lists the limits.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

# refused NAME PATTERN CMD...: exit 2 within 30 s, PATTERN on stderr.
refused() {
  local name=$1 pat=$2
  shift 2
  timeout 30 "$@" > out 2> err
  local rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, expected 2 ($(head -c 300 err))"
  grep -q -- "$pat" err || fail "$name: stderr lacks '$pat': $(head -c 300 err)"
}

# --- Chakra traces: zero bytes are empty messages, each was a node.
head -c 1000000 /dev/zero | gzip > z1.et.gz
refused "1 MB .et.gz of zeros" "z1.et.gz: offset 1: node 0: empty message" "$BIN" inspect z1.et.gz
head -c 20000000 /dev/zero > z20.et
refused "20 MB of zeros" "z20.et: offset 1: node 0: empty message" "$BIN" validate z20.et
# A length prefix past the limit, and past the end of a plain file.
python3 - <<'PY'
import gzip
def varint(v):
    out = b""
    while True:
        b, v = v & 0x7f, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
meta = b"\x0a\x050.0.4"
n = 70 << 20  # a 70 MiB name
with gzip.open("bigstr.et.gz", "wb", compresslevel=1) as f:
    f.write(varint(len(meta)) + meta + varint(n + 8) + b"\x08\x01\x12" + varint(n))
    for _ in range(n >> 20):
        f.write(b"a" * (1 << 20))
with open("short.et", "wb") as f:
    f.write(varint(len(meta)) + meta + varint(50 << 20) + b"\x08\x01")
# One 3-byte node repeated: 1000:1 in gzip, 100 M nodes from 300 KB.
with gzip.open("rep.et.gz", "wb") as f:
    f.write(varint(len(meta)) + meta)
    for _ in range(70):
        f.write(b"\x02\x08\x01" * (1 << 20))
PY
refused "70 MiB node in a gz trace" "bigstr.et.gz: offset 8: message length 73400328 is beyond any valid node" \
  "$BIN" inspect bigstr.et.gz
refused "length past the end" "short.et: offset 8: message of 52428800 bytes runs past the end of the file (2 bytes left)" \
  "$BIN" inspect short.et
refused "gzip of one repeated node" "rep.et.gz: offset [0-9]*: the gzip stream expands more than 256:1" \
  "$BIN" inspect rep.et.gz

# --- JSON forms: one object or value past 64 MiB is refused, not buffered.
python3 - <<'PY'
import gzip
with gzip.open("bigname.json.gz", "wt", compresslevel=1) as f:
    f.write('{"schema": "1.1.0", "pid": 1, "nodes": [{"id": 1, "name": "')
    for _ in range(70):
        f.write("a" * (1 << 20))
    f.write('", "ctrl_deps": 0}]}')
with gzip.open("bigobj.json.gz", "wt", compresslevel=1) as f:
    f.write('{}\n{"id":"1","name":"')
    for _ in range(70):
        f.write("a" * (1 << 20))
    f.write('"}\n')
PY
refused "70 MiB string in a PyTorch trace" "bigname.json.gz:1:[0-9]*: one JSON value runs over 64 MiB" \
  "$BIN" convert --from pytorch bigname.json.gz -o pt
refused "70 MiB object in an ET JSON" "bigobj.json.gz:2: object 2 is larger than 64 MiB" \
  "$BIN" convert --from json bigobj.json.gz -o j.et
ls pt* j.et* > /dev/null 2>&1 && fail "a refused conversion left files"

# --- PyTorch process groups: a group without a rank list stands for ranks
# 0 .. group_size-1, which the groups file spells out.
pgtrace() { # FILE GROUP_SIZE
  python3 - "$1" "$2" <<'PY'
import json, sys
io0 = {"values": [], "shapes": [], "types": []}
groups = [{"pg_name": "0", "ranks": [], "group_size": 2},
          {"pg_name": "3", "ranks": [], "group_size": int(sys.argv[2])}]
nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1,
          "inputs": io0, "outputs": io0, "attrs": []},
         {"id": 2, "name": "## process_group:init ##", "ctrl_deps": 1,
          "inputs": {"values": [json.dumps(groups)], "shapes": [[]], "types": ["String"]},
          "outputs": io0, "attrs": []}]
json.dump({"schema": "1.0.3-chakra.0.0.4", "pid": 7, "nodes": nodes}, open(sys.argv[1], "w"))
PY
}
pgtrace pg8.json 8
"$BIN" convert --from pytorch pg8.json -o pg8 --quiet 2> err || fail "group_size 8: $(cat err)"
grep -q '"3": \[0, 1, 2, 3, 4, 5, 6, 7\]' pg8.comm_group.json ||
  fail "group_size 8 spelled out: $(cat pg8.comm_group*.json)"
pgtrace pg1e8.json 100000000
refused "group_size 1e8" "pg1e8.json:1:[0-9]*: node 2: process group '3': group_size 100000000 without a rank list" \
  "$BIN" convert --from pytorch pg1e8.json -o pg1e8
ls pg1e8* | grep -qv '^pg1e8.json$' && fail "group_size 1e8 left files: $(ls pg1e8*)"

# --- Network YAML: libyaml's loader is quadratic in the nesting depth;
# more NPUs than a rank set may have ranks is refused before any per-NPU
# state; endless or binary input is refused at once.
python3 -c 'n = 100000; open("deep1.yml", "w").write("topology: " + "[" * n + "]" * n + "\n")'
python3 -c 'open("deep2.yml", "w").write("- " * 100000 + "1\n")'
refused "YAML nested 100k deep" "deep1.yml:1:[0-9]*: nested more than 16 levels deep" \
  "$BIN" sim --workload x --system y --network deep1.yml
refused "YAML sequences nested 100k deep" "deep2.yml:1:[0-9]*: nested more than 16 levels deep" \
  "$BIN" sim --workload x --system y --network deep2.yml
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 4096, 4097 ]\nbandwidth: [ 50, 50 ]\nlatency: [ 1, 1 ]\n' > huge.yml
refused "npus_count past 2^24" "huge.yml: npus_count: more than 16777216 NPUs" \
  "$BIN" sim --workload x --system y --network huge.yml
refused "network /dev/zero" "/dev/zero: offset 0: a NUL byte: not a text file" \
  "$BIN" sim --workload x --system y --network /dev/zero
printf 'FLOW_FILE /dev/zero\nTOPOLOGY_FILE %s\n' "$SRC/examples/netsim/clos16.topo" > zf.cfg
refused "netsim FLOW_FILE /dev/zero" "/dev/zero: offset 0: a NUL byte: not a text file" "$BIN" netsim zf.cfg
# fuzz_flows: a 60-byte flow file claiming 8e7 flows asked for 3.2 GB.
printf '80000000\n0 1 3 100 1000 0\n' > many.flows
printf 'FLOW_FILE many.flows\nTOPOLOGY_FILE %s\n' "$SRC/examples/netsim/clos16.topo" > mf.cfg
printf '1\n0 1 3 100 1000 3333333333333333333333\n' > late.flows
printf 'FLOW_FILE late.flows\nTOPOLOGY_FILE %s\n' "$SRC/examples/netsim/clos16.topo" > lf.cfg
refused "flow start past the horizon" "late.flows:2: bad start time '3333333333333333333333'" "$BIN" netsim lf.cfg
refused "flow count past the file" "many.flows:1: 80000000 flows claimed in a file of 26 bytes" \
  "$BIN" netsim mf.cfg
refused "text workload /dev/zero" "/dev/zero: offset 0: a NUL byte" \
  "$BIN" convert --from text /dev/zero --npus 2 -o tw

# --- System JSON: the system layer's cost grows with the square of the
# splits (10^6 ran over 300 s).
"$BIN" gen micro --coll all-reduce --size 1MiB --npus 4 -o ar --quiet || fail "gen"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > ring4.yml
for s in 4096 1000000; do
  printf '{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
   "preferred-dataset-splits": %d, "all-reduce-implementation": ["ring"],
   "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
   "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware",
   "local-mem-bw": 1600}' $s > "splits$s.json"
done
timeout 60 "$BIN" sim --workload ar --network ring4.yml --system splits4096.json --quiet > /dev/null ||
  fail "4096 splits: exit $?"
refused "preferred-dataset-splits 1e6" 'splits1000000.json: key "preferred-dataset-splits": 1000000 is more than 4096' \
  "$BIN" sim --workload ar --network ring4.yml --system splits1000000.json
# --- A manifest whose 200,000 classes name one file: the file is loaded
# once (each class loaded it again: 65 s and 9.8 GB; now about 1.4 s and
# 110 MB in Release).  Bounded at 30 s and 2 GB of resident memory (the
# sanitizer build's shadow memory included).
"$BIN" gen micro --coll all-reduce --size 4KiB --npus 2 -o one --quiet || fail "gen one"
python3 -c '
import json
n = 200000
print(json.dumps({"etsim_trace_set": 1, "npus": n,
                  "classes": [{"file": "one.c0.et", "ranks": str(i)} for i in range(n)]}))' > many.manifest.json
rss=$(python3 -c '
import resource, subprocess, sys
r = subprocess.run(["timeout", "30", sys.argv[1], "validate", "many"],
                   stdout=open("out", "w"), stderr=open("err", "w"))
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$BIN")
[ "${rss% *}" = 0 ] || fail "200,000 classes naming one file: exit ${rss% *} ($(head -c 300 err))"
[ "${rss#* }" -lt 2000000 ] || fail "200,000 classes naming one file: ${rss#* } KB resident"
grep -q "many: 200000 rank(s), 1 node(s): 0 problem(s)" out || fail "200,000 classes: $(tail -1 out)"
echo "bounds: ok"
