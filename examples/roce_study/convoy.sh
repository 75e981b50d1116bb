#!/usr/bin/env bash
# Why the packet level is slower than the flow level for ring all-reduce on
# a multi-switch Clos (issue 9), in four measurements:
#
#   examples/roce_study/convoy.sh [OUT_DIR]
#
# 1. A 16 MiB ring all-reduce on 32 NPUs over two leaves of the study's Clos,
#    at flow and packet level: iteration time and the most messages in
#    flight at once between one NPU pair.
# 2. The same schedule for both: every message the packet-level run sent,
#    at the time it sent it, replayed by etsim netsim at both levels (flow
#    with FLOW_ACK_LOAD 1): per-message completion times compared.
# 3. Sensitivity: the packet level with 1001-byte instead of 1000-byte
#    payloads (0.1 % more per packet).
# 4. The flow level with ACK load (FLOW_ACK_LOAD 1).
# 5. Both levels with --ring-window 1: no piece may pass another, and the
#    levels agree again.
# About 15 s on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=${ETSIM_BIN:-build/etsim}
OUT=${1:-out/convoy}
mkdir -p "$OUT"
# Two leaves of 16 hosts, each leaf with 8 uplinks to 8 spines, 100 Gb/s
# and 1 us everywhere (the first 32 hosts of the study's 128-NPU Clos).
awk 'BEGIN { L = 2; H = 16; S = 8; printf "%d %d %d\n", L * H + L + S, L + S, L * H + L * S
  for (i = 0; i < L + S; i++) printf "%d ", L * H + i; printf "\n"
  for (h = 0; h < L * H; h++) printf "%d %d 100Gbps 0.001ms 0\n", h, L * H + int(h / H)
  for (l = 0; l < L; l++) for (s = 0; s < S; s++) printf "%d %d 100Gbps 0.001ms 0\n", L * H + l, L * H + L + s }' \
  > "$OUT/clos32.topo"
printf 'topology: [ Switch ]\nnpus_count: [ 32 ]\nbandwidth: [ 11.64 ]\nlatency: [ 1000 ]\n' > "$OUT/n32.yml"
cat > "$OUT/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "collective-optimization": "baseline", "local-mem-bw": 3350,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
 "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}
JSON
printf 'FLOW_ACK_LOAD 1\n' > "$OUT/ackload.cfg"
printf 'PACKET_PAYLOAD_SIZE 1001\n' > "$OUT/p1001.cfg"
$E gen micro --coll all-reduce --size 16MiB --npus 32 -o "$OUT/ar16" --quiet
sim() { # LEVEL NAME [ARGS...]: prints "NAME cycles in_flight"
  local level=$1 name=$2; shift 2
  $E sim --workload "$OUT/ar16" --network "$OUT/n32.yml" --system "$OUT/sys.json" --backend "$level" \
    --net-topology "$OUT/clos32.topo" --json "$OUT/$name.json" "$@" > "$OUT/$name.out"
  python3 -c "import json,sys; r = json.load(open(sys.argv[1]))
print(f\"{sys.argv[2]:<28} {r['total_ns']:>10} ns   up to {r['network']['max_inflight_pair']:>3} messages on one pair\")" \
    "$OUT/$name.json" "$name"
}
echo "== 1. the simulation at both levels"
sim flow flow
sim packet packet --net-fct "$OUT/packet.fct"

echo "== 2. the packet level's schedule replayed at both levels"
# FCT lines: sip dip sport dport size start_ns fct_ns standalone_ns, host i
# at 0x0b000001 + 256 i; flow lines: src dst pg dport size start_s.
python3 - "$OUT/packet.fct" > "$OUT/replay.flows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
print(len(rows))
for w in rows:
    print((int(w[0], 16) - 0x0b000001) // 256, (int(w[1], 16) - 0x0b000001) // 256, 3, 100, w[4],
          f"{int(w[5]) / 1e9:.9f}")
PY
printf 'TOPOLOGY_FILE clos32.topo\nFLOW_FILE replay.flows\nCC_MODE 0\nFLOW_ACK_LOAD 1\n' > "$OUT/replay.cfg"
for b in packet flow; do $E netsim --backend $b --fct "$OUT/replay.$b.fct" --quiet "$OUT/replay.cfg"; done
python3 - "$OUT" <<'PY'
import statistics, sys
def rd(fn):
    d = {}
    for l in open(fn):
        w = l.split()
        d.setdefault((w[0], w[1], int(w[5])), []).append(int(w[6]))
    return d
p, f = rd(f"{sys.argv[1]}/replay.packet.fct"), rd(f"{sys.argv[1]}/replay.flow.fct")
rel = sorted((a - b) / b for k in p for a, b in zip(sorted(p[k]), sorted(f[k])))
q = lambda x: rel[min(len(rel) - 1, int(x * len(rel)))]
print(f"{len(rel)} messages: packet FCT / flow FCT - 1: median {100 * statistics.median(rel):+.2f} %, "
      f"p10 {100 * q(0.1):+.2f} %, p90 {100 * q(0.9):+.2f} %")
PY

echo "== 3. sensitivity of the packet level"
sim packet "packet, 1001-byte payload" --net-config "$OUT/p1001.cfg"

echo "== 4. the flow level with ACK load"
sim flow "flow, FLOW_ACK_LOAD 1" --net-config "$OUT/ackload.cfg"

echo "== 5. ring pieces with credits (--ring-window 1: a piece goes when the last one arrived)"
sim flow "flow, --ring-window 1" --ring-window 1
sim packet "packet, --ring-window 1" --ring-window 1
