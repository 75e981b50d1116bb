#!/usr/bin/env bash
# Host-based ring, direct and in-network all-reduce on 1,024 to 16,384 NPUs.
#
#   examples/innet_study/run.sh [OUT_DIR] [ETSIM]     (default: a temporary
#   folder, build/etsim; CONGESTION_MAX=N limits the congestion-backend runs
#   to N NPUs, default 4096)
#
# Platform: nodes of 8 NPUs on a switch (NVLink class: 400 GB/s, 250 ns),
# nodes on one scale-out switch dimension (InfiniBand class: 50 GB/s per
# NPU, 2 us), so N NPUs are Switch(8) x Switch(N/8).  One all-reduce per
# NPU (gen micro), 8 chunks with 2 in flight per dimension, hierarchical
# (localBWAware: reduce-scatter in the node, all-reduce across nodes,
# all-gather in the node), local memory 3,350 GB/s for the host reductions.
# Algorithms per dimension:
#   ring      ring, ring                     (host-based)
#   direct    direct, direct                 (host-based)
#   innet     both switches reduce, at link rate (NVLink SHARP + IB SHARP)
#   sharp     ring in the node, the scale-out switch reduces (IB SHARP)
#   innet2    both switches reduce at half their link rate
# Each is run on the analytical backend (ASTRA-sim's congestion-unaware
# model; one NPU stands for a class of all) for 64 MiB and 1 GiB, with --link-stats,
# and on the congestion backend (links as FIFO servers, every NPU) for
# 1 GiB up to CONGESTION_MAX NPUs.  Prints a table per backend: the
# all-reduce time in ms, and for the analytical runs the busiest link's
# busy fraction (over 100 %: a load the model lets through that no link
# can carry).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-$(mktemp -d)}
E=$(realpath "${2:-build/etsim}")
CMAX=${CONGESTION_MAX:-4096}
mkdir -p "$OUT"
cd "$OUT"

sys() { # NAME ALGO0 ALGO1 INNET0 INNET1 RBW0 RBW1
  printf '{"preferred-dataset-splits": 8, "active-chunks-per-dimension": 2, "endpoint-delay": 10,
 "local-mem-bw": 3350, "collective-optimization": "localBWAware",
 "all-reduce-implementation": ["%s", "%s"],
 "in-network-collectives": [%s, %s], "in-network-reduction-bw": [%s, %s]}\n' \
    "$2" "$3" "$4" "$5" "$6" "$7" > "$1.json"
}
sys ring ring ring false false 0 0
sys direct direct direct false false 0 0
sys innet ring ring true true 400 50
sys sharp ring ring false true 0 50
sys innet2 ring ring true true 200 25
ALGS="ring direct innet sharp innet2"

# run NAME NPUS SIZE BACKEND: prints "ms busiest_fraction cpu_s"
run() {
  local w=ar_$2_$3
  [ -e "$w.manifest.json" ] || "$E" gen micro --coll all-reduce --size "$3" --npus "$2" -o "$w" --quiet
  printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, %d ]\nbandwidth: [ 400, 50 ]\nlatency: [ 250, 2000 ]\n' \
    $(($2 / 8)) > net_$2.yml
  local extra=()
  [ "$4" = analytical ] && extra=(--link-stats)
  /usr/bin/time -f '%U %S' -o time.txt "$E" sim --workload "$w" --system "$1.json" --network "net_$2.yml" \
    --backend "$4" --json r.json "${extra[@]}" > out.txt 2> err.txt
  python3 - r.json time.txt <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
links = r.get("links", [])
busy = max((l["busy_fraction"] for l in links), default=0)
print("%.3f %.0f %.2f" % (r["total_ns"] / 1e6, 100 * busy, u + s))
PY
}

for size in 64MiB 1GiB; do
  echo "## analytical backend, all-reduce of $size: ms (busiest link's busy %)"
  echo
  printf '| NPUs |'; for a in $ALGS; do printf ' %s |' "$a"; done; echo
  printf '|---|'; for a in $ALGS; do printf -- '---|'; done; echo
  for n in 1024 2048 4096 8192 16384; do
    printf '| %s |' "$n"
    for a in $ALGS; do
      read -r ms busy cpu < <(run $a $n $size analytical)
      printf ' %s (%s %%) |' "$ms" "$busy"
    done
    echo
  done
  echo
done
echo "## congestion backend, all-reduce of 1GiB: ms (CPU s of the run)"
echo
printf '| NPUs |'; for a in $ALGS; do printf ' %s |' "$a"; done; echo
printf '|---|'; for a in $ALGS; do printf -- '---|'; done; echo
for n in 1024 2048 4096 8192 16384; do
  [ "$n" -le "$CMAX" ] || break
  printf '| %s |' "$n"
  for a in $ALGS; do
    read -r ms busy cpu < <(run $a $n 1GiB congestion)
    printf ' %s (%s s) |' "$ms" "$cpu"
  done
  echo
done
