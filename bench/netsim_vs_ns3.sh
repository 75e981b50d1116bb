#!/usr/bin/env bash
# etsim netsim against the ns-3 RDMA simulator, on the same files in the
# same measurement: CPU seconds (user + sys) and max RSS of each, and the
# ratio.  The scenario is the one issue 18 measured: every ordered host
# pair sends 256,000 bytes at t = 0 (all-to-all), PFC only (CC_MODE 12), no
# window and 2 MB switch buffers (so PFC acts), 100 Gb/s and 1 us links,
# on two-tier Clos fabrics 2:1 oversubscribed:
#   16 hosts   clos2:leaves=4,hosts=4,spines=2   (examples/netsim/clos16.topo)
#   64 hosts   clos2:leaves=8,hosts=8,spines=4
#   128 hosts  clos2:leaves=8,hosts=16,spines=8
# and, etsim only unless NS3_1024=1 (ns-3 would take hours), a k = 16
# fat-tree of 1,024 hosts ("1024": fattree:k=16, the same all-to-all).
# "ring1024" is the 1,024-host scale point ns-3 can run beside etsim: the
# same fat-tree, every host i sends 1,000,000 bytes to host i + 1 (mod
# 1,024) at t = 0 (one step of a ring all-reduce), same config.
#
#   NS3_BIN=/path/to/ns3-dev-rdma_run-optimized bench/netsim_vs_ns3.sh [OUT_DIR]
#   ETSIM=build/etsim SIZES="16 64 128 1024" REPS=3 NS3_REPS=1 ...
#
# STOP_S=0.0005 ends every run at that simulated time (SIMULATOR_STOP_TIME,
# seconds), for a fixed window of a case too long to run whole (1024);
# unfinished flows are then expected and the table's CPU time is the
# window's.
#
# CC_MODE (default 12, PFC only), HAS_WIN (default 0) and PAIR_BYTES
# (default 256000, the all-to-all's bytes a pair) change the scenario, e.g.
# CC_MODE=3 HAS_WIN=1 for HPCC with its window, CC_MODE=1 for DCQCN (ECN
# marked at random, drawn as ns-3 draws them).
#
# Without NS3_BIN only etsim runs.  The config is complete (every key,
# as examples/netsim/ns3/run.sh writes it), so both simulators read the very
# same file; each run is checked to finish every flow, and the last
# completion and pause count of both are printed (they are equal: etsim
# reproduces ns-3 exactly on these).  Runs alternate between the two
# simulators; the table takes each one's median CPU time.  Time is CPU time
# from /usr/bin/time -v, since on a shared machine wall time measures the
# neighbours.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$(mktemp -d)}
ETSIM=$(realpath "${ETSIM:-$here/build/etsim}")
SIZES=${SIZES:-"16 64 128"}
REPS=${REPS:-3}
NS3_REPS=${NS3_REPS:-1}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$OUT"

spec() {
  case $1 in
    16) echo clos2:leaves=4,hosts=4,spines=2 ;;
    64) echo clos2:leaves=8,hosts=8,spines=4 ;;
    128) echo clos2:leaves=8,hosts=16,spines=8 ;;
    1024 | ring1024) echo fattree:k=16 ;;
    *) echo "unknown size $1" >&2; exit 2 ;;
  esac
}

# the key block of examples/netsim/ns3/run.sh (etsim's defaults, which
# ns-3's common.h does not share), then the scenario
base() {
  sed -n '/^ENABLE_QCN 1$/,/^QLEN_MON_START/p' "$here/examples/netsim/ns3/run.sh" |
    sed "s/^SIMULATOR_STOP_TIME .*/SIMULATOR_STOP_TIME ${STOP_S:-100}/"
  printf 'HAS_WIN %s\nBUFFER_SIZE 2\nCC_MODE %s\n' "${HAS_WIN:-0}" "${CC_MODE:-12}"
}

measure() { # SIM CASE REP DIR CMD...: one run; appends to results.csv
  local sim=$1 c=$2 r=$3 d=$4
  shift 4
  mkdir -p "$d"
  # with STOP_S the flows are unfinished at the end: exit status 1
  (cd "$d" && /usr/bin/time -v -o time.txt "$@" > stdout.txt) || [ -n "${STOP_S:-}" ]
  local u s m
  u=$(awk -F': ' '/User time/ {print $2}' "$d/time.txt")
  s=$(awk -F': ' '/System time/ {print $2}' "$d/time.txt")
  m=$(awk -F': ' '/Maximum resident/ {print $2}' "$d/time.txt")
  local last pauses flows
  last=$(awk '{ if ($7 > m) m = $7 } END { print m + 0 }' "$d/fct.txt")
  pauses=$(awk '$5 == 1' "$d/pfc.txt" | wc -l)
  flows=$(wc -l < "$d/fct.txt")
  local cpu # awk, not bc: a fresh Debian has no bc
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  echo "$sim,$c,$r,$u,$s,$cpu,$m,$last,$pauses,$flows" >> results.csv
  echo "$sim $c rep $r: cpu $cpu s, max RSS $((m / 1024)) MB, last $last ns, $pauses pauses, $flows flows" >&2
}

echo "sim,case,rep,user_s,sys_s,cpu_s,maxrss_kb,last_ns,pauses,flows" > results.csv
for n in $SIZES; do
  c=a2a$n
  case $n in ring*) c=$n ;; esac
  "$ETSIM" gen topo "$(spec "$n")" -o "$c.topo" > /dev/null
  hosts=$(awk 'NR == 1 { print $1 - $2 }' "$c.topo")
  case $n in
    ring*) awk -v n="$hosts" 'BEGIN { print n; for (s = 0; s < n; s++)
             print s, (s + 1) % n, 3, 100, 1000000, 0 }' > "$c.flows" ;;
    *) awk -v n="$hosts" -v b="${PAIR_BYTES:-256000}" 'BEGIN { print n * (n - 1); for (s = 0; s < n; s++)
         for (d = 0; d < n; d++) if (s != d) print s, d, 3, 100, b, 0 }' > "$c.flows" ;;
  esac
  echo 0 > trace.txt
  {
    base
    echo "TOPOLOGY_FILE $OUT/$c.topo"
    echo "FLOW_FILE $OUT/$c.flows"
    echo "TRACE_FILE $OUT/trace.txt"
    echo "TRACE_OUTPUT_FILE mix.tr"
    echo "FCT_OUTPUT_FILE fct.txt"
    echo "PFC_OUTPUT_FILE pfc.txt"
    echo "QLEN_MON_FILE qlen.txt"
  } > "$c.cfg"
  ns3=0
  [ -n "${NS3_BIN:-}" ] && { [ "$n" != 1024 ] || [ "${NS3_1024:-0}" = 1 ]; } && ns3=1
  for r in $(seq 1 "$REPS"); do
    if [ $ns3 = 1 ] && [ "$r" -le "$NS3_REPS" ]; then
      measure ns3 "$c" "$r" "$OUT/runs/ns3/$c/r$r" "$NS3_BIN" "$OUT/$c.cfg"
    fi
    measure etsim "$c" "$r" "$OUT/runs/etsim/$c/r$r" \
      "$ETSIM" netsim --json --fct fct.txt --pfc pfc.txt --qlen qlen.txt "$OUT/$c.cfg"
  done
done

python3 - <<'EOF' | tee table.md
import csv, statistics as st
rows = list(csv.DictReader(open("results.csv")))
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
print("| case | flows | ns-3 CPU s | etsim CPU s (median) | ratio | ns-3 / etsim max RSS MB | last completion ns, ns-3 / etsim | pauses ns-3 / etsim |")
print("|---|---|---|---|---|---|---|---|")
for c in cases:
    a = [r for r in rows if r["case"] == c and r["sim"] == "ns3"]
    b = [r for r in rows if r["case"] == c and r["sim"] == "etsim"]
    cb = st.median(float(r["cpu_s"]) for r in b)
    mb = max(int(r["maxrss_kb"]) for r in b) / 1024
    if a:
        ca = st.median(float(r["cpu_s"]) for r in a)
        ma = max(int(r["maxrss_kb"]) for r in a) / 1024
        print(f"| {c} | {b[0]['flows']} | {ca:.2f} | {cb:.3f} ({', '.join(r['cpu_s'] for r in b)}) | "
              f"**{ca / cb:.1f}x** | {ma:.0f} / {mb:.0f} | {int(a[0]['last_ns']):,} / {int(b[0]['last_ns']):,} | "
              f"{a[0]['pauses']} / {b[0]['pauses']} |")
    else:
        print(f"| {c} | {b[0]['flows']} | - | {cb:.3f} ({', '.join(r['cpu_s'] for r in b)}) | - | - / {mb:.0f} | "
              f"- / {int(b[0]['last_ns']):,} | - / {b[0]['pauses']} |")
EOF
echo "results in $OUT (results.csv, table.md)" >&2
