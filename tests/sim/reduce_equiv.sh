#!/usr/bin/env bash
# The reductions give the message-by-message path's picoseconds: generated
# LLM steps (data, tensor and pipeline parallel, 1F1B and GPipe, ZeRO 0-3,
# sequence and expert parallel) and DLRM steps are simulated by default and
# with --exact on networks whose dimensions do and do not line up with the
# parallel groups; every NPU's line must agree, the summary must name the
# reduction (or say why none applied), and the LLM sets must be reduced.
. "$(dirname "$0")/../lib.sh"
sys() { # $1 = file, $2 = active chunks, $3 = (unused), $4 = list of rings, $5 = all-to-all list
  cat > "$1" <<JSON
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": $2,
 "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 1600,
 "all-reduce-implementation": $4, "all-gather-implementation": $4,
 "reduce-scatter-implementation": $4, "all-to-all-implementation": $5}
JSON
}
net() { # $1 = file, $2 = kinds, $3 = sizes, $4 = bandwidths, $5 = latencies
  printf 'topology: [ %s ]\nnpus_count: [ %s ]\nbandwidth: [ %s ]\nlatency: [ %s ]\n' "$2" "$3" "$4" "$5" > "$1"
}
R3='["ring", "ring", "ring"]'; R2='["ring", "ring"]'; R1='["ring"]'
sys "$T/s1.json" 1 - "$R3" "$R3"
sys "$T/s2.json" 2 - "$R3" '["direct", "direct", "direct"]'
sys "$T/s1_2d.json" 1 - "$R2" "$R2"
sys "$T/s2_2d.json" 2 - "$R2" '["direct", "direct"]'
sys "$T/s2_1d.json" 2 - "$R1" '["direct"]' 
reduced=0; runs=0
check() { # $1 = name, $2 = prefix, $3 = network, $4 = system, $5 = want a reduction (1/0),
  # $6 = (optional) text the reduction line must contain
  local cg=()
  [ -f "$2.comm_group.json" ] && cg=(--comm-group "$2.comm_group.json")
  "$BIN" sim --workload "$2" --network "$3" --system "$4" "${cg[@]}" > "$T/d.out" 2> "$T/d.err" \
    || fail "$1: default run: $(tail -2 "$T/d.err")"
  "$BIN" sim --workload "$2" --network "$3" --system "$4" "${cg[@]}" --exact > "$T/e.out" 2> "$T/e.err" \
    || fail "$1: --exact run: $(tail -2 "$T/e.err")"
  cmp -s <(grep '^sys\[' "$T/d.out") <(grep '^sys\[' "$T/e.out") \
    || fail "$1: default and --exact differ: $(diff <(grep '^sys\[' "$T/d.out") <(grep '^sys\[' "$T/e.out") | head -4)"
  grep -q '^reduction     none: every NPU simulated (--exact)' "$T/e.out" || fail "$1: --exact summary"
  grep -q '^reduction     ' "$T/d.out" || fail "$1: no reduction line"
  if [ -n "${6:-}" ]; then
    grep '^reduction     ' "$T/d.out" | grep -qF "$6" \
      || fail "$1: the reduction line lacks '$6': $(grep '^reduction' "$T/d.out")"
  fi
  runs=$((runs + 1))
  [ -n "${VERBOSE:-}" ] && echo "$1: $(grep "^reduction" "$T/d.out")"
  if grep -q '^reduction     [0-9]' "$T/d.out"; then
    reduced=$((reduced + 1))
    # the network's message count and bytes are those of every NPU
    cmp -s <(grep '^network bytes' "$T/d.out") <(grep '^network bytes' "$T/e.out") \
      || fail "$1: network bytes differ: $(grep '^network bytes' "$T/d.out" "$T/e.out")"
  elif [ "$5" = 1 ]; then
    fail "$1: expected a reduction: $(grep '^reduction' "$T/d.out")"
  fi
}
L=(--preset llama3-8b --layers 4 --seq 1024 --quiet)
# dp x tp x pp = 32 on 4 x 4 x 2 and on 8 x 4 (groups across dimensions)
net "$T/n442.yml" "Ring, FullyConnected, Switch" "4, 4, 2" "200, 100, 50" "50, 500, 2000"
net "$T/n84.yml" "Ring, Switch" "8, 4" "200, 50" "50, 2000"
"$BIN" gen llm "${L[@]}" --dp 4 --tp 4 --pp 2 --microbatches 4 --out-format et -o "$T/a" || fail "gen a"
check "dp4 tp4 pp2 1f1b on 4x4x2" "$T/a" "$T/n442.yml" "$T/s1.json" 1
check "dp4 tp4 pp2 1f1b on 8x4, 2 chunks" "$T/a" "$T/n84.yml" "$T/s2_2d.json" 1
"$BIN" gen llm "${L[@]}" --dp 8 --tp 2 --pp 2 --schedule gpipe --zero 1 -o "$T/b" || fail "gen b"
check "dp8 tp2 pp2 gpipe zero1 (manifest) on 4x4x2" "$T/b" "$T/n442.yml" "$T/s1.json" 1
"$BIN" gen llm "${L[@]}" --dp 4 --tp 2 --pp 4 --zero 3 --recompute --out-format et -o "$T/c" || fail "gen c"
check "dp4 tp2 pp4 zero3 recompute on 8x4" "$T/c" "$T/n84.yml" "$T/s1_2d.json" 1
"$BIN" gen llm --preset mixtral-8x7b --layers 2 --seq 1024 --quiet --dp 2 --ep 4 --tp 2 --sp 2 \
  --out-format et -o "$T/m" || fail "gen m"
check "mixtral dp2 ep4 tp2 sp2 on 4x4x2, direct all-to-all" "$T/m" "$T/n442.yml" "$T/s2.json" 0
"$BIN" gen llm "${L[@]}" --dp 32 -o "$T/dp" || fail "gen dp"
check "pure dp32 on 4x4x2" "$T/dp" "$T/n442.yml" "$T/s1.json" 1
# DLRM: ranks differ by their embedding shards, so any reduction must be
# proven per rank; the two paths must agree either way.
"$BIN" gen dlrm --preset criteo-kaggle --ranks 8 --out-format et -o "$T/k" --quiet || fail "gen dlrm"
net "$T/n8.yml" "Switch" "8" "50" "2000"
check "dlrm criteo-kaggle 8 ranks on Switch(8)" "$T/k" "$T/n8.yml" "$T/s2_1d.json" 0
net "$T/n32.yml" "Ring, Switch" "4, 8" "200, 50" "50, 2000"
"$BIN" gen dlrm --preset criteo-kaggle --ranks 32 --ranks-per-host 4 --out-format et -o "$T/k32" --quiet || fail "gen dlrm 32"
check "dlrm criteo-kaggle 32 ranks on 4x8" "$T/k32" "$T/n32.yml" "$T/s1_2d.json" 0
# In-network reduction: a switch waits for its whole group, so a class run
# must stand every member in; both switches reducing, and only the
# scale-out one (ring in the node), with per-link counters.
net "$T/nsw.yml" "Switch, Switch" "8, 4" "400, 50" "250, 2000"
"$BIN" gen micro --coll all-reduce,all-gather,reduce-scatter --size 16MiB --npus 32 -o "$T/in" --quiet \
  || fail "gen micro in-network"
for v in "true, true|400, 50" "false, true|0, 50"; do
  printf '{"preferred-dataset-splits": 8, "active-chunks-per-dimension": 2, "endpoint-delay": 10,
 "local-mem-bw": 3350, "collective-optimization": "localBWAware",
 "all-reduce-implementation": ["ring", "ring"], "all-gather-implementation": ["ring", "ring"],
 "reduce-scatter-implementation": ["ring", "ring"], "all-to-all-implementation": ["ring", "ring"],
 "in-network-collectives": [%s], "in-network-reduction-bw": [%s]}\n' "${v%|*}" "${v#*|}" > "$T/sin.json"
  check "in-network [${v%|*}] on 8x4" "$T/in" "$T/nsw.yml" "$T/sin.json" 1
  for m in d e; do
    flag=(); [ $m = e ] && flag=(--exact)
    "$BIN" sim --workload "$T/in" --network "$T/nsw.yml" --system "$T/sin.json" --link-stats \
      "${flag[@]}" --json "$T/$m.json" > /dev/null 2>&1 || fail "in-network --link-stats $m"
  done
  python3 - "$T/d.json" "$T/e.json" <<'PY' || fail "in-network [${v%|*}]: link counters differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["npus_simulated"] == 1 and b["npus_simulated"] == 32, (a["npus_simulated"], b["npus_simulated"])
assert a["links"] == b["links"] and a["npus"] == b["npus"]
PY
done
# group-phases hierarchical changes only communicators smaller than the
# world: a grid communicator runs one ring per dimension it spans.  World
# collectives keep their classes; a shift is kept where it rotates each
# grid's rings onto its image's (E6, src/sim/reduce.c).  On 8x4 the
# data-parallel groups (0, 4, 8, 12) span both dimensions: the classes are
# their per-dimension rotations, not the file order's shift.
sed 's/"scheduling-policy"/"group-phases": "hierarchical", "scheduling-policy"/' "$T/s1_2d.json" > "$T/sh.json"
sed 's/"scheduling-policy"/"group-phases": "hierarchical", "scheduling-policy"/' "$T/s2.json" > "$T/sh3.json"
sed 's/"scheduling-policy"/"group-phases": "hierarchical", "scheduling-policy"/' "$T/s2_2d.json" > "$T/sh2.json"
"$BIN" gen micro --coll all-reduce,all-to-all,all-gather --size 4MiB --npus 32 -o "$T/hw" --quiet \
  || fail "gen micro hierarchical"
check "world collectives, group-phases hierarchical, on 8x4" "$T/hw" "$T/n84.yml" "$T/sh.json" 1
check "dp4 tp4 pp2 1f1b, group-phases hierarchical, on 8x4 (2-D grids)" "$T/a" "$T/n84.yml" \
  "$T/sh.json" 1 "communicators 9-16 along dimension 0 (2 NPUs) x communicators 9-16 along dimension 1"
# GPT-3 shapes (the sweep's model) at 16 NPUs: 1F1B, GPipe with ZeRO-1,
# ZeRO-3; on 2x4x2 every group lies in one dimension, on 4x4 the
# data-parallel groups (0, 2, 4, 6) are 2x2 grids over both.
G=(--preset gpt3-175b --layers 4 --seq 512 --quiet --dp 4 --tp 2 --pp 2)
net "$T/n242.yml" "Ring, FullyConnected, Switch" "2, 4, 2" "200, 100, 50" "50, 500, 2000"
net "$T/n44.yml" "Ring, Switch" "4, 4" "200, 50" "50, 2000"
"$BIN" gen llm "${G[@]}" --microbatches 4 --out-format et -o "$T/g1" || fail "gen g1"
"$BIN" gen llm "${G[@]}" --microbatches 4 --schedule gpipe --zero 1 -o "$T/g2" || fail "gen g2"
"$BIN" gen llm "${G[@]}" --microbatches 2 --zero 3 --out-format et -o "$T/g3" || fail "gen g3"
for w in g1 g2 g3; do
  check "gpt3 $w dp4 tp2 pp2, hierarchical, on 2x4x2" "$T/$w" "$T/n242.yml" "$T/sh3.json" 1 \
    "2 of 16 NPUs simulated"
  check "gpt3 $w dp4 tp2 pp2, hierarchical, on 4x4 (2-D grids)" "$T/$w" "$T/n44.yml" "$T/sh2.json" 1 \
    "communicators 9-12 along dimension 0 (2 NPUs) x communicators 9-12 along dimension 1 (2 NPUs)"
done
# A reducing scale-out switch under grid phases: the classes must not make
# a switch wait for other classes (refused here), and every NPU agrees.
sed 's/"in-network-collectives"/"group-phases": "hierarchical", "in-network-collectives"/' "$T/sin.json" > "$T/shi.json"
check "dp4 tp4 pp2, hierarchical, reducing switches on 8x4" "$T/a" "$T/nsw.yml" "$T/shi.json" 0
# Refused: on Ring(8), communicator 1 = (1, 2, 3, 4) is a grid (one ring
# along the dimension) and its image under the shift of communicators 3-6
# (x -> x + 4), communicator 2 = (5, 6, 7, 0), is not (a flat ring): with
# flat phases that shift holds, with hierarchical ones the two run
# different phases and nothing is reduced.
net "$T/r8.yml" "Ring" "8" "100" "500"
echo '{"1": [1, 2, 3, 4], "2": [5, 6, 7, 0], "3": [1, 5], "4": [2, 6], "5": [3, 7], "6": [4, 0]}' \
  > "$T/rf.comm_group.json"
cg=(2 1 1 1 1 2 2 2) pg=(6 3 4 5 6 3 4 5)
for r in $(seq 0 7); do
  printf '{"version":"0.0.4"}\n{"id":"1","name":"ar","type":"COMM_COLL_NODE","attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"},{"name":"pg_name","stringVal":"%s"}]}\n{"id":"2","name":"ar2","type":"COMM_COLL_NODE","dataDeps":["1"],"attr":[{"name":"comm_type","int64Val":"0"},{"name":"comm_size","int64Val":"1048576"},{"name":"pg_name","stringVal":"%s"}]}\n' \
    "${cg[$r]}" "${pg[$r]}" > "$T/rf.$r.json"
  "$BIN" convert --from json "$T/rf.$r.json" -o "$T/rf.$r.et" > /dev/null || fail "convert rf.$r"
done
check "grid onto a flat ring, flat phases, on Ring(8)" "$T/rf" "$T/r8.yml" "$T/s2_1d.json" 1 \
  "communicators 3-6 (2 NPUs each)"
sed 's/"scheduling-policy"/"group-phases": "hierarchical", "scheduling-policy"/' "$T/s2_1d.json" > "$T/sh1.json"
check "grid onto a flat ring, hierarchical phases, on Ring(8)" "$T/rf" "$T/r8.yml" "$T/sh1.json" 0 \
  "communicator 1 runs per dimension (a grid) but its image 2 runs one flat ring (group-phases: hierarchical)"
grep -q '^reduction     none' "$T/d.out" || fail "grid onto a flat ring: reduced under hierarchical phases"
# The barrier has no root: run through the network, its ring and direct
# forms (all-gathers of a token per dimension) keep their classes, on
# plain and on reducing switches.
"$BIN" gen micro --coll barrier,all-reduce,barrier --size 1MiB --npus 32 --count 2 --comp-ns 100 \
  -o "$T/bar" --quiet || fail "gen micro barrier"
for a in ring direct; do
  sed 's/"scheduling-policy"/"rooted-collectives": "network", "barrier-implementation": ["'$a'", "'$a'"], "scheduling-policy"/' \
    "$T/s1_2d.json" > "$T/sb.json"
  check "barriers ($a) through the network on 8x4" "$T/bar" "$T/n84.yml" "$T/sb.json" 1
  sed 's/"in-network-collectives"/"rooted-collectives": "network", "barrier-implementation": ["'$a'", "'$a'"], "in-network-collectives"/' \
    "$T/sin.json" > "$T/sbi.json"
  check "barriers ($a) through the network, reducing switches on 8x4" "$T/bar" "$T/nsw.yml" "$T/sbi.json" 1
done
[ $reduced -ge 15 ] || fail "only $reduced of $runs sets were reduced"
echo "ok: $runs sets, $reduced reduced, every NPU equal to --exact"
