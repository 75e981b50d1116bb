#!/usr/bin/env bash
# End-to-end several jobs on one network (docs/sim.md, "Several jobs"):
# a job alone equals the same job beside another on a disjoint placement,
# line for line (analytical, congestion; flow and packet on a non-blocking
# star, where --jobs-alone must report slowdown 1); the summary, JSON and
# timeline and HTML report name each job; a random placement is the same for the same seed;
# bad --job specs exit 2 naming the argument and the part.
. "$(dirname "$0")/../lib.sh"
sim() { "$BIN" sim --system "$T/sys.json" "$@"; }
# data-parallel step: 1000 us of compute, then a 1 MiB all-reduce
cat >"$T/dp.json" <<'EOF2'
{"version":"0.0.4"}
{"id":0,"name":"c","type":"COMP_NODE","duration_micros":1000}
{"id":1,"name":"ar","type":"COMM_COLL_NODE","data_deps":[0],"attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"}]}
EOF2
sed 's/1048576/4194304/; s/:1000}/:300}/' "$T/dp.json" >"$T/dp4.json"
"$BIN" convert --from json "$T/dp.json" -o "$T/dp.et" >/dev/null || fail convert
"$BIN" convert --from json "$T/dp4.json" -o "$T/dp4.et" >/dev/null || fail convert
for r in 0 1 2 3; do cp "$T/dp.et" "$T/a.$r.et"; cp "$T/dp4.et" "$T/b.$r.et"; done
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 25 ]\nlatency: [ 500, 1000 ]\n' >"$T/net.yml"
printf 'topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 25 ]\nlatency: [ 1000 ]\n' >"$T/sw.yml"
echo '{"preferred-dataset-splits": 2, "endpoint-delay": 10, "local-mem-bw": 100, "all-reduce-implementation": ["ring", "ring"]}' >"$T/sys.json"
echo '{"preferred-dataset-splits": 2, "endpoint-delay": 10, "local-mem-bw": 100, "all-reduce-implementation": ["ring"]}' >"$T/sys1.json"

# alone == beside a job on the other node, per NPU line
for be in analytical congestion; do
  sim --job "$T/a@0-3" --network "$T/net.yml" --backend $be >"$T/alone" 2>"$T/e" || fail "$be alone: $(cat "$T/e")"
  sim --job "$T/a@0-3" --job "$T/b@4-7" --network "$T/net.yml" --backend $be --json "$T/r.json" \
    --timeline "$T/tl.json" >"$T/both" 2>"$T/e" || fail "$be both: $(cat "$T/e")"
  diff <(grep '^sys\[[0-3]\]' "$T/alone") <(grep '^sys\[[0-3]\]' "$T/both") >/dev/null ||
    fail "$be: job a differs beside job b"
  grep -q '^sys\[5\] finished, 0 cycles' "$T/alone" || fail "$be: idle NPU 5 ran: $(grep 'sys\[5\]' "$T/alone")"
  grep -q "^  job 1 b .* 4 NPUs (4-7): iteration" "$T/both" || fail "$be: summary: $(grep -A2 '^jobs' "$T/both")"
  python3 - "$T/r.json" "$T/tl.json" "$be" <<'PY' || fail "$be json/timeline"
import json, sys
r = json.load(open(sys.argv[1]))
j = r["jobs"]
assert [x["name"] for x in j] == ["a", "b"] and j[1]["npus"] == [4, 5, 6, 7], j
for k, x in enumerate(j):
    fin = [r["npus"][g]["finish_ns"] for g in x["npus"]]
    assert x["iteration_ns"] == max(fin), (x, fin)
    assert all(r["npus"][g]["job"] == k and r["npus"][g]["rank"] == i for i, g in enumerate(x["npus"]))
assert r["jobs_share_links"] == (sys.argv[3] != "analytical")
assert r["total_ns"] == max(x["iteration_ns"] for x in j)
t = json.load(open(sys.argv[2]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in t if e.get("name") == "process_name"}
assert names[0] == "job 0 a: rank 0 (NPU 0)" and names[7] == "job 1 b: rank 3 (NPU 7)", names
PY
done
# a job with NPUs idle: JSON marks them
sim --job "$T/a@1,3,5,7" --network "$T/net.yml" --json "$T/r.json" >/dev/null 2>"$T/e" || fail "idle: $(cat "$T/e")"
python3 -c "
import json, sys
r = json.load(open('$T/r.json'))
assert r['npus'][0]['job'] is None and r['npus'][3]['rank'] == 1, r['npus'][:4]
" || fail "idle NPUs in JSON"

# flow and packet on a star: disjoint hosts never share a link, alone == shared
for be in flow packet; do
  "$BIN" sim --system "$T/sys1.json" --job "$T/a@strided:2" --job "$T/b@strided:2" --network "$T/sw.yml" \
    --backend $be --jobs-alone --report "$T/rep.html" >"$T/o" 2>"$T/e" || fail "$be: $(cat "$T/e")"
  grep -q '<td class="l">1 b</td><td>4</td><td>[0-9.,]*</td><td>[0-9.,]*</td><td>1.0000x</td>' "$T/rep.html" ||
    fail "$be: no jobs table in the HTML report"
  [ "$(grep -c 'slowdown 1.0000x' "$T/o")" = 2 ] || fail "$be: $(grep -A2 '^jobs' "$T/o")"
  grep -q '^  job 0 a .*(0,2,4,6)' "$T/o" || fail "$be strided: $(grep -A2 '^jobs' "$T/o")"
done

# the same seed, the same placement and run; another seed, another placement
sim --job "$T/a@random:seed=5" --job "$T/b@random:seed=5" --network "$T/net.yml" --backend congestion --quiet >"$T/s1" 2>&1 || fail seed
sim --job "$T/a@random:seed=5" --job "$T/b@random:seed=5" --network "$T/net.yml" --backend congestion --quiet >"$T/s2" 2>&1 || fail seed
cmp -s "$T/s1" "$T/s2" || fail "random:seed=5 differs between runs"
sim --job "$T/a@random:seed=5" --network "$T/net.yml" >"$T/p5" 2>&1 || fail seed5
sim --job "$T/a@random:seed=6" --network "$T/net.yml" >"$T/p6" 2>&1 || fail seed6
[ "$(grep '^  job 0' "$T/p5")" != "$(grep '^  job 0' "$T/p6")" ] || fail "seeds 5 and 6 place job a alike"

# bad specs: exit 2, the --job argument and the part named
expect() { # PATTERN ARGS...
  local pat=$1
  shift
  sim --network "$T/net.yml" "$@" >"$T/o" 2>"$T/e"
  local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc ($(cat "$T/e"))"
  grep -q -- "$pat" "$T/e" || fail "$*: stderr lacks '$pat': $(cat "$T/e")"
}
echo '{"1": [0, 4]}' >"$T/g.json"
expect "--job '$T/b@0-3': placement '0-3': NPU 0 is already another job's" --job "$T/a@0-3" --job "$T/b@0-3"
expect "--job '$T/a@5-8': placement part '5-8': NPU 8 is outside the 8-NPU network" --job "$T/a@5-8"
expect "--job '$T/a@0-2': the placement '0-2' names 3 NPUs but the job has 4 ranks" --job "$T/a@0-2"
expect "--job '$T/a@packed': unknown placement 'packed'" --job "$T/a@packed"
expect "--job '$T/a@strided:x': strided: the stride" --job "$T/a@strided:x"
expect "--job '$T/a@random:seed=-1': random: .* is not random:seed=N" --job "$T/a@random:seed=-1"
expect "--job '$T/b@contiguous': contiguous: no run of 4 free NPUs" --job "$T/a@2-5" --job "$T/b@contiguous"
expect "--job '$T/a:@0-3': expected PREFIX\[:GROUPS.json\]\[@PLACEMENT\]" --job "$T/a:@0-3"
expect "--job '$T/a:$T/g.json': .*rank 4 is outside the 4-NPU network (group members are the job's ranks)" --job "$T/a:$T/g.json"
expect "--job '$T/nope@0-3': " --job "$T/nope@0-3"
expect "--job replaces --workload and --comm-group" --job "$T/a" --workload "$T/dp.et"
expect "--jobs-alone needs --job" --workload "$T/dp.et" --jobs-alone
finish
