#!/usr/bin/env bash
# A ring all-reduce on 1,024 NPUs at packet level, as a user runs it
# (issue 18: "a 1,024-host fat-tree (k = 16) ... ring all-reduce at packet
# level in minutes and < 2 GB"): `etsim gen micro` writes the all-reduce,
# `etsim sim --backend packet` runs it with ASTRA-sim's Ring_4chunks
# system file (ring algorithm, 4 chunks) over `fattree:k=16` (1,024 hosts
# on 320 switches, 100 Gb/s, 1 us links, PFC only), NPU i on host i.
# Prints the simulated time, the network's counters, CPU seconds (user +
# sys) and the largest resident size of each run.
#
#   bench/sim_ar1024_packet.sh [OUT_DIR]   (ETSIM=build/etsim SIZES="1MiB 64MiB" SIM_OPTS=)
#
# SIM_OPTS adds options to each `etsim sim`, e.g. "--ring-window 1" (ring
# pieces may not pass each other; docs/sim.md).
#
# The 1 MiB all-reduce is 8,380,416 messages of 256 B (2 x 1,023 steps of
# 4 chunks on each NPU), latency bound; 64 MiB is as many messages of
# 16 KiB.  ns-3 has no collectives of its own (ASTRA-sim drives it), so this
# prints etsim's figures alone; bench/netsim_vs_ns3.sh compares with ns-3.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ETSIM=$(realpath "${ETSIM:-$here/build/etsim}")
SIZES=${SIZES:-"1MiB 64MiB"}
SIM_OPTS=${SIM_OPTS:-}
SHARED=${ETSIM_SHARED:-$here/../shared}
SYS=$SHARED/configs/astra-sim/system/Ring_4chunks.json
NETYML=$SHARED/configs/astra-sim/network/analytical-backend-Switch.yml
for f in "$SYS" "$NETYML"; do
  [ -f "$f" ] || { echo "sim_ar1024_packet: $f not found (set ETSIM_SHARED)" >&2; exit 2; }
done
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
# ASTRA-sim's one-switch network file, for 1,024 NPUs at 100 Gb/s (12.5 GB/s):
# the packet backend takes its NPU count from here and its links from
# --net-topology.
sed 's/\[ *16 *\]/[ 1024 ]/; s/\[ *50.0 *\]/[ 12.5 ]/' "$NETYML" > "$OUT/switch1024.yml"
printf '%-6s %14s %12s %14s %10s %10s\n' size iteration_us net_events data_packets cpu_s max_rss_mb
for s in $SIZES; do
  d=$OUT/ar_$s
  mkdir -p "$d"
  "$ETSIM" gen micro --coll all-reduce --size "$s" --npus 1024 -o "$d/ar" -q
  /usr/bin/time -f "%U %S %M" -o "$d/time.txt" "$ETSIM" sim --workload "$d/ar" --system "$SYS" \
    --network "$OUT/switch1024.yml" --backend packet --net-topology fattree:k=16 --json "$d/sum.json" $SIM_OPTS \
    > "$d/stdout.txt"
  read -r u sy rss < "$d/time.txt"
  python3 - "$d/sum.json" "$s" "$u" "$sy" "$rss" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
net = j["network"]
cpu = float(sys.argv[3]) + float(sys.argv[4])
print("%-6s %14.3f %12d %14d %10.2f %10.0f" % (sys.argv[2], j["total_ns"] / 1e3, net["events"],
      net["data_packets"], cpu, int(sys.argv[5]) / 1024))
EOF
  grep '^network bytes' "$d/stdout.txt"
done
echo "runs in $OUT (stdout.txt: etsim's summary)"
