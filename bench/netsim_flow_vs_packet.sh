#!/usr/bin/env bash
# The flow level against the packet level on the study fabrics of
# examples/netsim (issue 18): for each scenario, the last completion, the
# mean and p99 flow completion time (FCT) and the CPU seconds of
# `etsim netsim` at each level, the flow level also with FLOW_ACK_LOAD 1
# (ACKs load their links), and the flow level's error against the packet
# level.  Prints the markdown table that docs/netsim.md shows.
#
#   bench/netsim_flow_vs_packet.sh                 (ETSIM=build/etsim REPS=5)
#
# The FCT numbers come from the FCT file (column 7, ns; completion = start +
# FCT); p99 is the nearest rank (the 238th of 240 flows; the largest of 8 or
# 16).  CPU is user + sys from getrusage, the median of REPS runs of each
# level, less the median of REPS runs of `etsim --help` with the same
# binary: starting a process costs about 0.045 s of CPU on the machine
# these were measured on (as much as a whole flow-level run), so the
# figure is what reading the files, building the routes and running cost.
# Rows marked "seeded" draw ECN marks at random (Pmax < 1), at packet
# level as ns-3 does: seed 1 (ns-3's RngRun 1) is shown, and
# examples/netsim/reference_seeds.csv has both simulators over seeds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ETSIM=$(realpath "${ETSIM:-$here/build/etsim}")
REPS=${REPS:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$here/examples/netsim"

# label | config | CC | note
rows=(
  "8-to-1 incast, 1 MB each|incast8.cfg|none|"
  "8-to-1 incast, 1 MB buffer, no window|incast8_pfc.cfg|none|"
  "8-to-1 incast|incast8.cfg|dctcp|"
  "8-to-1 incast, run.py DCQCN|incast8_dcqcn.cfg|dcqcn|seeded"
  "8-to-1 incast, run.py HPCC|incast8_hpcc.cfg|hpcc|"
  "ring, 16 hosts, 4 MB each|clos16_ring.cfg|none|"
  "ring, 16 hosts, run.py HPCC|clos16_ring_hpcc.cfg|hpcc|"
  "ring across leaves, 1 MB each|clos16_ringx.cfg|none|"
  "ring across leaves, run.py DCQCN|clos16_ringx_dcqcn.cfg|dcqcn|"
  "ring across leaves, run.py DCTCP|clos16_ringx_dctcp.cfg|dctcp|"
  "ring across leaves|clos16_ringx.cfg|hpcc|"
  "all-to-all, 16 hosts, 4 MB per pair|clos16_a2a.cfg|none|"
  "all-to-all, 4 MB, 2 MB buffers, no window|clos16_a2a_pfc.cfg|none|"
  "all-to-all, 256 KB per pair|clos16_a2a_cc.cfg|none|"
  "all-to-all, 256 KB, 2 MB buffers, no window|clos16_a2a_small.cfg|none|"
  "all-to-all, 256 KB, run.py DCQCN, step marking|clos16_a2a_dcqcn.cfg|dcqcn|"
  "all-to-all, 256 KB, run.py DCQCN|clos16_a2a_runpy.cfg|dcqcn|seeded"
  "all-to-all, 256 KB, run.py DCTCP|clos16_a2a_dctcp.cfg|dctcp|"
  "all-to-all, 256 KB|clos16_a2a_cc.cfg|hpcc|"
)

# cpu CMD...: run CMD (stdout to /dev/null), print its user + sys seconds;
# fails when CMD fails
cpu() {
  python3 - "$@" <<'EOF'
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
if r.returncode:
    sys.exit("exit %d: %s" % (r.returncode, " ".join(sys.argv[1:])))
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (u.ru_utime + u.ru_stime))
EOF
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# less: $1 - $2 seconds, 2 decimals; "< 0.01" below (start-up varies by a few ms)
less() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0.01) printf "< 0.01"; else printf "%.2f", d }'; }
# stats FCT_FILE: last completion, mean FCT, p99 FCT (ns)
stats() {
  awk '{ e = $6 + $7; if (e > last) last = e; s += $7; print $7 > "/dev/stderr" }
    END { printf "%d %.0f ", last, s / NR }' "$1" 2> "$T/fcts"
  sort -n "$T/fcts" | awk '{ v[NR] = $1 } END { k = int((99 * NR + 99) / 100); print v[k] }'
}
num() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
err() { awk -v f="$1" -v p="$2" 'BEGIN { printf "%+.1f %%", 100 * (f - p) / p }'; }
declare -A last mean p99 cpus

for ((r = 0; r < REPS; r++)); do cpu "$ETSIM" --help; done > "$T/cpu.base"
base=$(median < "$T/cpu.base")
echo "| scenario | CC | last completion (ns): packet · flow · flow + ACKs | mean FCT (ns): the same | p99 FCT (ns): the same | CPU s: packet · flow · flow + ACKs |"
echo "|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
  IFS='|' read -r label cfg cc note <<< "$row"
  # levels: packet, flow, flow with FLOW_ACK_LOAD 1 ("ack")
  for lvl in packet flow ack; do
    set -- --backend $lvl
    [ $lvl = ack ] && set -- --backend flow --set FLOW_ACK_LOAD=1
    : > "$T/cpu.$lvl"
    for ((r = 0; r < REPS; r++)); do
      cpu "$ETSIM" netsim --quiet "$@" --cc "$cc" --seed 1 --fct "$T/fct.$lvl" "$cfg" >> "$T/cpu.$lvl"
    done
    read -r last[$lvl] mean[$lvl] p99[$lvl] <<< "$(stats "$T/fct.$lvl")"
    c=$(median < "$T/cpu.$lvl")
    cpus[$lvl]=$(less "$c" "$base")
    [ "$(wc -l < "$T/fct.$lvl")" = "$(wc -l < "$T/fct.packet")" ] || {
      echo "$cfg $cc: the levels finished different flows" >&2
      exit 1
    }
  done
  name=$cc
  [ "$cc" = none ] && name="none (PFC)"
  [ -n "$note" ] && name="$name, $note"
  # cell: packet · flow (error) · flow + ACKs (error)
  cell() {
    local -n v=$1
    echo "$(num "${v[packet]}") · $(num "${v[flow]}") ($(err "${v[flow]}" "${v[packet]}")) ·" \
      "$(num "${v[ack]}") ($(err "${v[ack]}" "${v[packet]}"))"
  }
  echo "| $label (\`$cfg\`) | $name | $(cell last) | $(cell mean) | $(cell p99) |" \
    "${cpus[packet]} · ${cpus[flow]} · ${cpus[ack]} |"
done
echo
echo "CPU: median of $REPS runs less $base s, the median CPU of \`etsim --help\` (process start-up); under 0.01 s is below what this measures."
