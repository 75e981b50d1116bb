#!/usr/bin/env bash
# End-to-end: the same sweep under `mpirun -np 3 etsim sweep` (Open MPI,
# oversubscribed; --allow-run-as-root when root) gives byte-identical rows to
# the local run — failing points among them — `--np` starts mpirun itself,
# and a partial MPI run finishes locally to the same rows.  Skips (exit 77,
# reported as a skip, a failure under ETSIM_NO_SKIP, which CI sets: there
# Open MPI is installed by scripts/deps.sh and a skip would hide a build
# without etsim-sweep) when mpirun or etsim-sweep is absent.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/sweep
if ! command -v mpirun > /dev/null || [ ! -x "$(dirname "$BIN")/etsim-sweep" ]; then
  skip "mpirun or etsim-sweep is absent"
fi
# One host: shared memory and self only; leak checks off for MPI's own
# allocations under ASan.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root

cat > "$T/mix.yaml" << SPEC
base:
  gen: "llm --preset llama3-8b --layers 2 --microbatches 2"
  network: net.yml
  system: $EX/system.json
axes:
  - grid:
      gen.tp: [1, 2, 3, 4]
      network.bandwidth[1]: [0, 12.5, 50, 200]
  - list:
      gen.zero: [0, 1]
derived:
  gen.dp: "max(1, floor(4 / gen.tp))"
SPEC
printf 'topology: [ Switch, Switch ]\nnpus_count: [ 2, 2 ]\nbandwidth: [ 300, 50 ]\nlatency: [ 500, 2000 ]\n' > "$T/net.yml"
"$BIN" sweep "$T/mix.yaml" -o "$T/local" -j 2 > "$T/out" 2> "$T/err" || fail "local: $(cat "$T/err")"
timeout 300 mpirun $ROOT --oversubscribe -np 3 "$BIN" sweep "$T/mix.yaml" -o "$T/mpi" \
  > "$T/out" 2> "$T/err" || fail "mpirun: $(cat "$T/err")"
grep -q "32 points: 32 run now on 3 ranks, 0 from before, 14 failed" "$T/out" \
  || fail "mpi summary: $(cat "$T/out")"
cmp "$T/local/points.jsonl" "$T/mpi/points.jsonl" || fail "MPI rows differ from the local rows"
cmp "$T/local/points.csv" "$T/mpi/points.csv" || fail "MPI CSV differs"
python3 - "$T/mpi" << 'PY' || fail "mpi rows"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1] + "/points.jsonl")]
assert len(r) == 32 and [x["point"] for x in r] == list(range(32))
bad = [x for x in r if x["status"] != "ok"]
# bandwidth 0 (8 points) and tp 3 (8 points, 2 of them shared) fail, each with its reason
assert len(bad) == 14, len(bad)
assert all("bandwidth" in x["error"] or "does not divide" in x["error"] for x in bad), bad
m = json.load(open(sys.argv[1] + "/sweep.json"))
assert m["how"] == "mpi" and m["workers"] == 3 and m["complete"] and m["cpu_s"] > 0, m
# times.csv lists every point, each once
t = open(sys.argv[1] + "/times.csv").read().split("\n")[1:]
assert sorted(int(l.split(",")[0]) for l in t if l) == list(range(32))
PY
# --np starts mpirun itself
"$BIN" sweep "$T/mix.yaml" -o "$T/np" --np 2 > "$T/out" 2> "$T/err" || fail "--np: $(cat "$T/err")"
grep -q "on 2 ranks" "$T/out" || fail "--np summary: $(cat "$T/out")"
cmp "$T/local/points.jsonl" "$T/np/points.jsonl" || fail "--np rows differ"
# a partial MPI run (--limit) finishes locally to the same rows
timeout 300 mpirun $ROOT --oversubscribe -np 3 "$BIN" sweep "$T/mix.yaml" -o "$T/part" --limit 10 \
  > "$T/out" 2> "$T/err" || fail "partial mpirun: $(cat "$T/err")"
grep -q "10 run now on 3 ranks" "$T/out" || fail "partial: $(cat "$T/out")"
"$BIN" sweep "$T/mix.yaml" -o "$T/part" > "$T/out" 2> "$T/err" || fail "finish locally"
grep -q "22 run now, 10 from before" "$T/out" || fail "resume of the MPI run: $(cat "$T/out")"
cmp "$T/local/points.jsonl" "$T/part/points.jsonl" || fail "resumed rows differ"
echo ok
