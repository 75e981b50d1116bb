#!/usr/bin/env bash
# The RoCE congestion-control study (issue 9): a data-parallel step
# (all-reduce heavy) and an MoE step (all-to-all heavy) on a 128-NPU
# two-tier Clos with 2:1 oversubscription (8 leaves x 16 hosts at 100 Gb/s,
# 8 spines at 100 Gb/s), run at flow level and at packet level with PFC
# only, DCQCN, DCTCP, TIMELY and HPCC; prints iteration time, exposed
# communication, PFC pauses, ECN marks and the most messages in flight on
# one NPU pair (ring pieces that bunched, see docs/netsim.md) side by side.
#
#   examples/roce_study/run.sh [OUT_DIR] [LEVELS] [SIM_OPTIONS]
#     LEVELS: "flow packet" (default) or "flow" (seconds instead of minutes)
#     SIM_OPTIONS: more etsim sim options, e.g. "--ring-window 1" (ring
#     collectives with credits, so their pieces cannot bunch on a link)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=build/etsim
OUT=${1:-out/roce_study}
LEVELS=${2:-flow packet}
read -r -a EXTRA <<< "${3:-}"
mkdir -p "$OUT"
# The Clos in etsim netsim's topology format: hosts 0-127, leaves 128-135,
# spines 136-143 (8 x 16 host links up, 8 x 8 spine links: 2:1).
$E gen topo clos2:leaves=8,hosts=16,spines=8,rate=100Gbps,delay=1us -o "$OUT/clos128.topo" > /dev/null
# The simulator's own view of the platform (used for routing-free collective
# algorithms): one switch of 128 NPUs at the host link rate.
printf 'topology: [ Switch ]\nnpus_count: [ 128 ]\nbandwidth: [ 11.64 ]\nlatency: [ 1000 ]\n' > "$OUT/net.yml"
cat > "$OUT/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "collective-optimization": "baseline", "local-mem-bw": 3350,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
 "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}
JSON
small=(--layers 2 --hidden 1024 --heads 8 --kv-heads 8 --ffn 4096 --vocab 32000 --seq 1024)
$E gen llm --preset llama3-8b "${small[@]}" --dp 128 -o "$OUT/dp" --quiet
$E gen llm --preset mixtral-8x7b "${small[@]}" --ep 8 --dp 16 -o "$OUT/moe" --quiet
printf '%-4s %-7s %-7s %12s %12s %10s %10s %9s %8s\n' step level cc iter_us exposed_us pauses ecn_marks in_flight wall_s
for w in dp moe; do
  for level in $LEVELS; do
    ccs=(none); [ $level = packet ] && ccs=(none dcqcn dctcp timely hpcc)
    for cc in "${ccs[@]}"; do
      R=$OUT/$w.$level.$cc.json
      $E sim --workload "$OUT/$w" --network "$OUT/net.yml" --system "$OUT/sys.json" \
        --comm-group "$OUT/$w.comm_group.json" --backend $level --net-topology "$OUT/clos128.topo" \
        --cc $cc --json "$R" --quiet "${EXTRA[@]}" > /dev/null 2> "$R.err"
      python3 - "$R" $w $level $cc <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = len(r["npus"]); net = r.get("network", {})
ex = sum(x["exposed_comm_no_compute_ns"] for x in r["npus"]) / n / 1000
print(f"{sys.argv[2]:<4} {sys.argv[3]:<7} {sys.argv[4]:<7} {r['total_ns']/1000:12.1f} {ex:12.1f} "
      f"{net.get('pfc_pauses', 0):10d} {net.get('ecn_marks', 0):10d} {net.get('max_inflight_pair', 0):9d} "
      f"{r['wall_s']:8.2f}")
PY
    done
  done
done
