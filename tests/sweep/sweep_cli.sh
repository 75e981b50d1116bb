#!/usr/bin/env bash
# End-to-end: `etsim sweep` as a user runs it.
#  - ASTRA-sim's published microbenchmark cycles come out of one zipped
#    sweep that edits the generator's flags and the network YAML together;
#  - netsim points equal `etsim netsim --json` on the same settings;
#  - a failing point (a bad bandwidth, a split the generator refuses, a
#    point past its timeout) is a row with its error, the others run, and
#    the sweep exits 0;
#  - a run killed with SIGKILL is resumed: finished points are not run
#    again, a torn last line is dropped, and the files end byte-identical
#    to an uninterrupted run's;
#  - bad specs give exit 2 and name the file and line;
#  - every flag of `etsim gen llm|micro --help` is a key the spec accepts.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/sweep

# 1. Published points (tests/sim/test_sim.c: ASTRA-sim 2.0, Ring_4chunks).
"$BIN" sweep "$EX/micro.yaml" -o "$T/micro" --progress > "$T/out" 2> "$T/err" || fail "micro: $(cat "$T/err")"
grep -q "8 points: 8 run now, 0 from before, 0 failed" "$T/out" || fail "micro summary: $(cat "$T/out")"
# progress with an ETA on stderr (--progress: stderr is not a terminal here),
# its last line the final count
tr '\r' '\n' < "$T/err" | grep -q "^\[etsim sweep\] 100 % | 8 of 8 points, 0 failed, 0 running | [0-9.]* s" \
  || fail "progress: $(cat -v "$T/err")"
python3 - "$T/micro" <<'PY' || fail "micro rows"
import csv, json, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(d + "/points.jsonl")]
want = {("all-reduce", "1MiB"): 64440, ("all-reduce", "64MiB"): 2326112,
        ("all-to-all", "1MiB"): 391240, ("all-gather", "1MiB"): 323560,
        ("reduce-scatter", "1MiB"): 22240}
assert [r["point"] for r in rows] == list(range(8)), [r["point"] for r in rows]
seen = 0
for r in rows:
    assert r["status"] == "ok" and r["error"] is None, r
    k = (r["axes"]["gen.coll"], r["axes"]["gen.size"])
    assert r["results"]["npus"] == r["axes"]["gen.npus"] == r["axes"]["network.npus_count[0]"]
    if k in want:
        assert r["results"]["iteration_ns"] == want[k], (k, r["results"]["iteration_ns"])
        seen += 1
assert seen == 5, seen
# the CSV holds the same rows and columns
c = list(csv.DictReader(open(d + "/points.csv")))
assert len(c) == 8 and c[0]["iteration_ns"] == "64440" and c[0]["gen.coll"] == "all-reduce", c[0]
m = json.load(open(d + "/sweep.json"))
assert m["complete"] and m["points"] == 8 and m["ok"] == 8 and m["trace_sets"] == 8, m
assert m["columns"]["axes"] == ["gen.coll", "gen.npus", "network.npus_count[0]", "gen.size"], m
PY

# 2. netsim points against etsim netsim itself.
"$BIN" sweep "$EX/netsim_incast.yaml" -o "$T/inc" > "$T/out" 2> "$T/err" || fail "netsim sweep: $(cat "$T/err")"
for cc in none dcqcn hpcc; do
  "$BIN" netsim "$SRC/examples/netsim/incast8_dcqcn.cfg" --cc $cc --set BUFFER_SIZE=4 --json \
    > "$T/ns_$cc.json" || fail "netsim $cc"
done
python3 - "$T/inc/points.jsonl" "$T" <<'PY' || fail "netsim rows differ from etsim netsim"
import json, sys
rows = {(r["axes"]["cc"], r["axes"]["netsim.BUFFER_SIZE"]): r for r in map(json.loads, open(sys.argv[1]))}
assert len(rows) == 12
for cc in ("none", "dcqcn", "hpcc"):
    ref = json.load(open(f"{sys.argv[2]}/ns_{cc}.json"))
    got = rows[(cc, 4)]["results"]
    for k in ("flows", "flows_done", "last_done_ns", "slowdown_median", "slowdown_p99",
              "slowdown_max", "pauses", "paused_us", "ecn_marks", "cnps", "max_buffer_bytes",
              "packets", "events"):
        assert got[k] == ref[k], (cc, k, got[k], ref[k])
PY

# 3. Failing points are rows.
cat > "$T/fail.yaml" <<EOF
base:
  gen: "llm --preset llama3-8b --layers 2 --microbatches 2"
  network: net.yml
  system: $EX/system.json
axes:
  - list:
      - {gen.tp: 2, "network.bandwidth[1]": 50}
      - {gen.tp: 2, "network.bandwidth[1]": 0}
      - {gen.tp: 3, "network.bandwidth[1]": 50}
      - {gen.tp: 1, "network.bandwidth[1]": 25}
derived:
  gen.dp: "max(1, floor(4 / gen.tp))"
EOF
printf 'topology: [ Switch, Switch ]\nnpus_count: [ 2, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net.yml"
"$BIN" sweep "$T/fail.yaml" -o "$T/fail" > "$T/out" 2> "$T/err" || fail "a failing point made the sweep fail: $(cat "$T/err")"
grep -q "4 points: 4 run now, 0 from before, 2 failed" "$T/out" || fail "fail summary: $(cat "$T/out")"
python3 - "$T/fail/points.jsonl" <<'PY' || fail "failed rows"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["status"] for x in r] == ["ok", "failed", "failed", "ok"], [x["status"] for x in r]
assert "net.yml" in r[1]["error"] and "bandwidth" in r[1]["error"], r[1]["error"]
assert "does not divide" in r[2]["error"] and r[2]["error"].startswith("gen llm:"), r[2]["error"]
assert all(v is None for v in r[1]["results"].values()), r[1]
assert set(r[1]["results"]) == set(r[0]["results"])  # one shape for every row
assert r[0]["results"]["iteration_ns"] > r[0]["results"]["compute_ns"] > 0, r[0]
# a slower scale-out link costs the tp=1 point its dp all-reduce time over dimension 1
assert r[3]["results"]["exposed_dim1_ns"] > 0, r[3]
PY

# 3b. Memory keys: the remote-memory JSON edited per point prices the
# offload in closed form: bytes over capacity = peak - 1 GiB, moved out and
# back, each way remote-mem-latency + bytes / remote-mem-bw.
printf '{"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-latency": 1000, "remote-mem-bw": 50}\n' > "$T/mem.json"
cat > "$T/mem.yaml" << EOF
base:
  gen: "llm --preset llama3-8b --layers 2 --microbatches 2 --dp 2 --tp 2 --tensors"
  network: net.yml
  system: $EX/system.json
  memory: mem.json
  sim: {hbm-gb: 1, offload: true}
axes:
  - list:
      memory.remote-mem-bw: [25, 50, 100]
EOF
"$BIN" sweep "$T/mem.yaml" -o "$T/mem" > "$T/out" 2> "$T/err" || fail "memory sweep: $(cat "$T/err")"
python3 - "$T/mem/points.jsonl" << 'PY' || fail "memory rows"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 3 and all(x["status"] == "ok" for x in r), r
for x in r:
    bw, res = x["axes"]["memory.remote-mem-bw"], x["results"]
    assert res["offload_bytes"] == res["peak_mem_bytes"] - 2**30 > 0, res
    want = 2 * (1000 + res["offload_bytes"] / bw)
    assert abs(res["offload_ns"] - want) < 1e-3, (bw, res["offload_ns"], want)
    # with offload on, the price is part of the iteration
    assert res["iteration_ns"] > res["offload_ns"], res
PY

# A point past its timeout: killed, recorded, and the executor replaced.
printf 'topology: [ Ring ]\nnpus_count: [ 512 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$T/r512.yml"
cat > "$T/slow.yaml" <<EOF
base:
  gen: "micro --coll all-to-all --npus 512 --size 64MiB"
  network: r512.yml
  system: $EX/ring_4chunks.json
  sim: {exact: true}
axes:
  - list:
      - {gen.npus: 512, "network.npus_count[0]": 512}
      - {gen.npus: 4, "network.npus_count[0]": 4}
      - {gen.npus: 8, "network.npus_count[0]": 8}
options: {timeout: 1}
EOF
"$BIN" sweep "$T/slow.yaml" -o "$T/slow" -j 1 > "$T/out" 2> "$T/err" || fail "timeout sweep: $(cat "$T/err")"
python3 - "$T/slow/points.jsonl" <<'PY' || fail "timeout rows"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert r[0]["status"] == "failed" and "timeout of 1 s" in r[0]["error"], r[0]
assert r[1]["status"] == "ok" and r[2]["status"] == "ok", r
PY

# 4. Resume after a killed run.
cat > "$T/many.yaml" <<EOF
base:
  gen: "micro --coll all-to-all --npus 64 --size 64MiB"
  network: r64.yml
  system: $EX/ring_4chunks.json
  sim: {exact: true}
axes:
  - grid:
      gen.size: [16MiB, 32MiB, 64MiB]
      network.bandwidth[0]: [25, 50, 100, 200]
      network.latency[0]: [100, 500]
EOF
printf 'topology: [ Ring ]\nnpus_count: [ 64 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > "$T/r64.yml"
setsid "$BIN" sweep "$T/many.yaml" -o "$T/killed" -j 2 > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 2000); do
  n=$(cat "$T/killed/points.jsonl" 2> /dev/null | wc -l)
  [ "$n" -ge 3 ] && break
  sleep 0.01
done
kill -9 -- -"$pid" 2> /dev/null
wait "$pid" 2> /dev/null
# its executors die too (their session is killed); give them time to go
for _ in $(seq 1 500); do
  pgrep -s "$pid" > /dev/null || break
  sleep 0.01
done
before=$(grep -c '"status": "ok"' "$T/killed/points.jsonl")
[ "$before" -ge 3 ] && [ "$before" -lt 24 ] || fail "the killed run kept $before rows (want 3..23)"
printf '{"point": 23, "id": "0123' >> "$T/killed/points.jsonl" # a torn last line
"$BIN" sweep "$T/many.yaml" -o "$T/killed" > "$T/out" 2> "$T/err" || fail "resume: $(cat "$T/err")"
grep -q "24 points: $((24 - before)) run now, $before from before, 0 failed" "$T/out" \
  || fail "resume summary ($before before): $(cat "$T/out")"
grep -q "unreadable line" "$T/err" || fail "the torn line is not reported: $(cat "$T/err")"
tail -n +2 "$T/killed/times.csv" | cut -d, -f1 | sort -n | uniq -d | grep -q . \
  && fail "a point ran twice: $(cat "$T/killed/times.csv")"
"$BIN" sweep "$T/many.yaml" -o "$T/whole" -j 1 > /dev/null 2>&1 || fail "uninterrupted run"
cmp "$T/killed/points.jsonl" "$T/whole/points.jsonl" || fail "resumed rows differ from an uninterrupted run"
cmp "$T/killed/points.csv" "$T/whole/points.csv" || fail "resumed CSV differs"
[ -d "$T/killed/.work" ] && fail "executors left their scratch folders"
# a rerun of a finished sweep runs nothing
"$BIN" sweep "$T/many.yaml" -o "$T/killed" > "$T/out" 2>&1 || fail "rerun"
grep -q "0 run now, 24 from before" "$T/out" || fail "rerun ran points: $(cat "$T/out")"
# another base run in the same folder is refused
sed 's/latency\[0\]: \[100, 500\]/latency[0]: [100]/; s/ring_4chunks/system/' "$T/many.yaml" > "$T/other.yaml"
"$BIN" sweep "$T/other.yaml" -o "$T/killed" > /dev/null 2> "$T/err" && fail "a different base was resumed"
grep -q "different base run" "$T/err" || fail "base mismatch message: $(cat "$T/err")"

# 5. Bad specs: exit 2, file and line named.  BASE is the base run of the
# specs below (4 lines, so the line numbers in the messages count from it).
BASE="base:
  gen: \"micro --coll all-reduce --npus 8 --size 1MiB\"
  network: $EX/ring8.yml
  system: $EX/ring_4chunks.json"
bad() { # bad NAME EXPECTED-TEXT  (spec on stdin)
  cat > "$T/$1.yaml"
  "$BIN" sweep "$T/$1.yaml" -o "$T/bad" > /dev/null 2> "$T/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$1: exit $rc ($(cat "$T/err"))"
  grep -q -- "$2" "$T/err" || fail "$1: '$2' not in: $(cat "$T/err")"
}
bad domain "domain.yaml:7: axis key 'bandwidth'" <<EOF
$BASE
axes:
  - grid:
      bandwidth: [1, 2]
EOF
bad zip "zip.yaml:8: axes\[0\]: 'gen.npus' has 1 values where the first list has 2" <<EOF
$BASE
axes:
  - zip:
      gen.size: [1MiB, 2MiB]
      gen.npus: [8]
EOF
bad flag "gen.layers: 'etsim gen micro' has no flag --layers" <<EOF
$BASE
axes:
  - list: {gen.layers: [1, 2]}
EOF
bad index "not a list with an item 3" <<EOF
$BASE
axes:
  - list: {"network.bandwidth[3]": [1, 2]}
EOF
bad expr "unknown name 'gen.pp'" <<EOF
$BASE
axes:
  - list: {gen.count: [1, 2]}
derived:
  gen.npus: "8 / gen.pp"
EOF
bad yaml "yaml.yaml:3" <<EOF
base:
  gen: [unclosed
  network: x
EOF

# 5b. Random axes: seeded (the same seed draws the same points, another seed
# others), within their ranges (log-uniform reals, integers, choices), and
# combined with the other groups as a product; derived keys see the draws.
rnd() { # rnd SEED
  cat > "$T/rnd$1.yaml" << EOF
$BASE
axes:
  - list: {gen.coll: [all-reduce, all-gather]}
  - random:
      n: 40
      seed: $1
      keys:
        network.bandwidth[0]: {min: 10, max: 400, log: true}
        network.latency[0]: {min: 100, max: 1000, int: true}
        gen.size: [1MiB, 4MiB, 16MiB]
derived:
  gen.count: "1 + (network.latency[0] > 500)"
EOF
  "$BIN" sweep "$T/rnd$1.yaml" --list > "$T/rnd$1.csv" 2> "$T/err" || fail "random $1: $(cat "$T/err")"
}
rnd 7
cp "$T/rnd7.csv" "$T/rnd7a.csv"
rnd 7
rnd 8
cmp -s "$T/rnd7.csv" "$T/rnd7a.csv" || fail "the same seed drew other points"
cmp -s "$T/rnd7.csv" "$T/rnd8.csv" && fail "another seed drew the same points"
python3 - "$T/rnd7.csv" << 'PY' || fail "random draws"
import csv, math, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert len(r) == 80, len(r)
assert [x["gen.coll"] for x in r] == ["all-reduce"] * 40 + ["all-gather"] * 40, r[0]
bw = [float(x["network.bandwidth[0]"]) for x in r[:40]]
lat = [x["network.latency[0]"] for x in r[:40]]
assert all(10 <= b <= 400 for b in bw) and all(l.isdigit() and 100 <= int(l) <= 1000 for l in lat)
# log-uniform: about half the draws below the geometric mean sqrt(10 * 400) = 63.2
below = sum(b < math.sqrt(10 * 400) for b in bw)
assert 10 <= below <= 30, below
assert {x["gen.size"] for x in r} == {"1MiB", "4MiB", "16MiB"}
# the random group is the inner one: both collectives see the same draws
assert [x["network.bandwidth[0]"] for x in r[:40]] == [x["network.bandwidth[0]"] for x in r[40:]]
assert all(int(x["gen.count"]) == 1 + (int(x["network.latency[0]"]) > 500) for x in r)
assert len({x["id"] for x in r}) == 80  # every point its own id
PY

# 5c. The spec shown in docs/sweep.md is valid and expands as it says.
python3 - "$SRC/docs/sweep.md" "$T/doc.yaml" << 'PY' || fail "no yaml block in docs/sweep.md"
import sys
s = open(sys.argv[1]).read()
a = s.index("```yaml\n") + 8
open(sys.argv[2], "w").write(s[a:s.index("```\n", a)])
PY
cp "$EX/h100_1024.yml" "$EX/system.json" "$T/"
"$BIN" sweep "$T/doc.yaml" --list > "$T/doc.csv" 2> "$T/err" || fail "docs spec: $(cat "$T/err")"
grep -q "168 points over 14 trace set(s)" "$T/err" || fail "docs spec: $(cat "$T/err")"
grep -q "expands to 168 points" "$SRC/docs/sweep.md" || fail "docs/sweep.md gives another count"

# 6. Every generator flag its help lists is accepted as an axis key: the
# spec expands (value 1, or true for a switch).  The help must list the
# flags every generator has, so an empty or moved help cannot pass.
flag_spec() { # flag_spec KIND FLAG VALUE
  printf 'base:\n  gen: "%s"\n  network: %s\n  system: %s\naxes:\n  - list: {gen.%s: [%s]}\n' \
    "$1 --npus 8" "$EX/ring8.yml" "$EX/ring_4chunks.json" "$2" "$3" > "$T/flag.yaml"
  "$BIN" sweep "$T/flag.yaml" --list < /dev/null > /dev/null 2> "$T/err"
}
for kind in llm micro; do
  "$BIN" gen $kind --help | grep -o -- '--[a-z][a-z-]*' | sort -u > "$T/flags"
  for must in --npus --quiet --output; do
    grep -qx -- "$must" "$T/flags" || fail "gen $kind --help does not list $must: $(cat "$T/flags")"
  done
  while read -r flag; do
    case $flag in --output | --comm-group | --help) continue ;; esac
    f=${flag#--}
    flag_spec $kind "$f" 1 || { grep -q "a switch: true or false" "$T/err" && flag_spec $kind "$f" true; } ||
      fail "gen $kind $flag is in the help but not a sweep key: $(cat "$T/err")"
    grep -q "1 points over 1 trace set" "$T/err" || fail "gen $kind $flag: $(cat "$T/err")"
  done < "$T/flags"
done
echo ok
