#!/usr/bin/env bash
# The DLRM sharding study (issues 5 and 24): plan MLPerf DLRM's embedding
# tables on 8, 64 and 128 GPUs (8 per host, as on ZionEX) and show, for
# every plan the planner considered worth simulating, its estimate against
# the simulated iteration.
#
#   examples/dlrm_study/run.sh [OUT_DIR]      (default out/dlrm_study)
#
# Platform: NVLink-class 150 GB/s inside a host, 12.5 GB/s (100 Gb/s) per GPU
# between hosts, ASTRA-sim's system layer on etsim's congestion-aware network
# (all-to-all messages share links; the congestion-unaware backend lets
# every message of an all-to-all run at full link speed at once).
#
# `etsim shard --network --system` first simulates each collective at sizes
# from 4 KiB to 4 GiB on this platform to calibrate its estimate, then
# simulates its finalists — the best plans by estimate and every sharding
# type alone — and keeps the fastest.  See README.md here.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=build/etsim
OUT=${1:-out/dlrm_study}
mkdir -p "$OUT"
printf '%-5s %-28s %-22s %12s %13s %7s %8s\n' gpus plan types estimate_us simulated_us error a2a_%
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
  $E shard --model mlperf-dlrm --ranks $n --ranks-per-host 8 --network "$OUT/net$n.yml" \
    --system "$OUT/sys$n.json" --backend congestion --finalists 4 --json "$OUT/cands$n.json" \
    -o "$OUT/plan$n.json" --quiet
  python3 - "$OUT/cands$n.json" $n <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for i, c in enumerate(r["candidates"]):
    err = 100 * (c["estimate_us"] - c["simulated_us"]) / c["simulated_us"]
    a2a = 100 * c["sim_exposed_us"]["all-to-all"] / c["simulated_us"]
    mark = "  <- chosen" if i == r["chosen"] else ""
    print(f"{sys.argv[2]:<5} {c['label'][:28]:<28} {c['types'][:22]:<22} {c['estimate_us']:12.1f} "
          f"{c['simulated_us']:13.1f} {err:+6.1f}% {a2a:7.0f}%{mark}")
PY
done
echo "(a2a_% = exposed all-to-all time over the simulated iteration; plans and candidates are in $OUT)"
