#!/usr/bin/env bash
# The DLRM sharding study (issue 5): plan MLPerf DLRM's embedding tables on
# 8, 64 and 128 GPUs (8 per host, as on ZionEX), simulate one training
# iteration per plan, and print where the time goes.  Two plans per size:
# the planner's search over sharding types, and table-wise only (every
# table whole on one GPU, the simplest plan), to show how the plan changes
# the all-to-all.
#
#   examples/dlrm_study/run.sh [OUT_DIR]      (default out/dlrm_study)
#
# Platform: NVLink-class 150 GB/s inside a host, 12.5 GB/s (100 Gb/s) per GPU
# between hosts, ASTRA-sim's analytical network; see README.md here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=build/etsim
OUT=${1:-out/dlrm_study}
mkdir -p "$OUT"
printf '%-6s %-10s %12s %12s %12s %12s %12s\n' gpus plan iter_us compute_us a2a_exp_us ar_exp_us other_exp_us
for n in 8 64 128; do
  hosts=$((n / 8))
  if [ $hosts -eq 1 ]; then
    printf 'topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 150 ]\nlatency: [ 500 ]\n' > "$OUT/net$n.yml"
    impl='["ring"]'; a2a='["direct"]'
  else
    printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, %d ]\nbandwidth: [ 150, 12.5 ]\nlatency: [ 500, 2000 ]\n' \
      $hosts > "$OUT/net$n.yml"
    impl='["ring", "ring"]'; a2a='["direct", "direct"]'
  fi
  cat > "$OUT/sys$n.json" <<JSON
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
 "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 3350,
 "all-reduce-implementation": $impl, "reduce-scatter-implementation": $impl,
 "all-gather-implementation": $impl, "all-to-all-implementation": $a2a}
JSON
  for plan in search tw; do
    types=(); [ $plan = tw ] && types=(--types tw)
    P=$OUT/plan_${n}_$plan.json W=$OUT/dlrm_${n}_$plan
    $E shard --model mlperf-dlrm --ranks $n --ranks-per-host 8 "${types[@]}" -o "$P" --quiet
    $E gen dlrm --preset mlperf-dlrm --ranks $n --ranks-per-host 8 --plan "$P" -o "$W" --quiet
    cg=(); [ -s "$W.comm_group.json" ] && grep -q '\[' "$W.comm_group.json" && cg=(--comm-group "$W.comm_group.json")
    $E sim --workload "$W" --network "$OUT/net$n.yml" --system "$OUT/sys$n.json" "${cg[@]}" \
      --json "$W.result.json" --quiet > /dev/null 2> "$W.sim.err"
    python3 - "$W.result.json" $n $plan <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = len(r["npus"])
slow = max(r["npus"], key=lambda x: x["finish_ns"])
ex = {t["type"]: t["exposed_ns_sum"] / n / 1000 for t in r["by_type"]}
a2a, ar = ex.get("all-to-all", 0), ex.get("all-reduce", 0)
other = sum(ex.values()) - a2a - ar
print(f"{sys.argv[2]:<6} {sys.argv[3]:<10} {r['total_ns']/1000:12.1f} {slow['compute_ns']/1000:12.1f} "
      f"{a2a:12.1f} {ar:12.1f} {other:12.1f}")
PY
  done
done
echo "(exposed = communication time with no compute running, averaged over GPUs; plans, traces and"
echo " JSON results are in $OUT)"
