#!/usr/bin/env bash
# Run one examples/netsim scenario on the ns-3 RDMA simulator (the
# astra-network-ns3 fork, built outside this repository with the driver
# rdma_run.cc in this folder; see docs/netsim.md "Against ns-3").
#
#   NS3_BIN=/path/to/ns3-dev-rdma_run-optimized run.sh CONFIG CC OUTDIR
#
# CC is none|dcqcn|hpcc|timely|dctcp (CC_MODE 12|1|3|7|8).  ns-3 starts
# from its own defaults, which differ from etsim's (common.h leaves RATE_AI
# empty, MULTI_RATE 1, MI_THRESH 5, GLOBAL_T 1, no ECN maps), so the
# generated config first sets every key to etsim's default (the ASTRA-sim
# sample config.txt) and then appends the scenario's own lines, comments
# removed (ns-3 reads words, so a comment's words would be read as keys).
# Writes OUTDIR/fct.txt, OUTDIR/pfc.txt and OUTDIR/ns3.cfg, and prints
# "last_fct_ns pauses".
set -euo pipefail
: "${NS3_BIN:?set NS3_BIN to the built rdma_run program}"
[ $# -eq 3 ] || { echo "usage: $0 CONFIG CC OUTDIR" >&2; exit 2; }
cfg=$1 cc=$2 out=$3
case $cc in
  none) mode=12 ;; dcqcn) mode=1 ;; hpcc) mode=3 ;; timely) mode=7 ;; dctcp) mode=8 ;;
  *) echo "$0: unknown CC '$cc'" >&2; exit 2 ;;
esac
[ -r "$cfg" ] || { echo "$0: cannot read $cfg" >&2; exit 2; }
dir=$(cd "$(dirname "$cfg")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
{
  cat <<'BASE'
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1
PACKET_PAYLOAD_SIZE 1000
SIMULATOR_STOP_TIME 100
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
DCTCP_RATE_AI 1000Mb/s
ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0
HAS_WIN 1
GLOBAL_T 0
VAR_WIN 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.05
PINT_PROB 1.0
NIC_TOTAL_PAUSE_TIME 0
RATE_BOUND 1
ACK_HIGH_PRIO 0
LINK_DOWN 0 0 0
ENABLE_TRACE 0
KMAX_MAP 6 25000000000 400 40000000000 800 100000000000 1600 200000000000 2400 400000000000 3200 2400000000000 3200
KMIN_MAP 6 25000000000 100 40000000000 200 100000000000 400 200000000000 600 400000000000 800 2400000000000 800
PMAX_MAP 6 25000000000 0.2 40000000000 0.2 100000000000 0.2 200000000000 0.2 400000000000 0.2 2400000000000 0.2
BUFFER_SIZE 32
QLEN_MON_START 1000000000000000
BASE
  # the scenario's lines, then the files and the CC mode
  sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$cfg" |
    grep -v -E '^[[:space:]]*(TOPOLOGY_FILE|FLOW_FILE|CC_MODE|FCT_OUTPUT_FILE|PFC_OUTPUT_FILE|QLEN_MON_FILE|TRACE_FILE|TRACE_OUTPUT_FILE)[[:space:]]'
  topo=$(awk '$1 == "TOPOLOGY_FILE" { print $2 }' "$cfg")
  flows=$(awk '$1 == "FLOW_FILE" { print $2 }' "$cfg")
  echo "TOPOLOGY_FILE $dir/$topo"
  echo "FLOW_FILE $dir/$flows"
  echo "TRACE_FILE $out/trace.txt"
  echo "TRACE_OUTPUT_FILE $out/mix.tr"
  echo "FCT_OUTPUT_FILE $out/fct.txt"
  echo "PFC_OUTPUT_FILE $out/pfc.txt"
  echo "QLEN_MON_FILE $out/qlen.txt"
  echo "CC_MODE $mode"
} > "$out/ns3.cfg"
echo 0 > "$out/trace.txt"
"$NS3_BIN" "$out/ns3.cfg" > "$out/stdout.txt"
last=$(awk '{ if ($7 > m) m = $7 } END { print m + 0 }' "$out/fct.txt")
pauses=$(awk '$5 == 1' "$out/pfc.txt" | wc -l)
echo "$last $pauses"
