#!/usr/bin/env bash
# Two etsim binaries on one netsim config, alternated run by run, their
# user CPU seconds side by side: for a change to the packet engine whose
# gain is smaller than the machine's drift between two separate runs.
# This compares etsim with etsim; the ratio to ns-3 is
# bench/netsim_vs_ns3.sh's.  Keep the other core idle.
#
#   bench/netsim_ab.sh CFG PAIRS BIN_A BIN_B
#   e.g. bench/netsim_ab.sh OUT/a2a128.cfg 8 main/build/etsim cand/build/etsim
#
# CFG: an ns-3 style config (OUT of `bench/netsim_vs_ns3.sh OUT` holds
# a2a128.cfg); its relative output paths are written in the current
# folder.  Prints one line per pair and, at the end, each binary's mean,
# and in how many pairs B took less time than A.
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,15s/^# \{0,1\}//p' "$0" >&2; exit 2; }
cfg=$1 pairs=$2 a=$3 b=$4
for x in "$cfg" "$a" "$b"; do [ -e "$x" ] || { echo "netsim_ab: $x: no such file" >&2; exit 2; }; done
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "netsim_ab: PAIRS must be a positive integer: $pairs" >&2; exit 2; }
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT
cpu() { # user CPU seconds of one quiet run; exit 1 is a window that ends
  # with flows unfinished (SIMULATOR_STOP_TIME), any other failure stops it
  local rc=0
  /usr/bin/time -f "%U" -o "$tf" "$1" netsim --quiet "$cfg" > /dev/null || rc=$?
  ((rc <= 1)) || { echo "netsim_ab: $1 netsim --quiet $cfg failed (exit $rc)" >&2; exit 1; }
  tail -1 "$tf"
}
for ((i = 1; i <= pairs; i++)); do
  ta=$(cpu "$a")
  tb=$(cpu "$b")
  echo "pair $i: A $ta s, B $tb s"
done | awk '{print; sa += $4; sb += $7; n++; if ($7 < $4) w++}
  END {if (!n) exit 1
    r = sa > 0 ? sprintf("%.3f", sb / sa) : "n/a: A took no measurable time"
    printf "mean: A %.3f s, B %.3f s (B/A %s); B faster in %d of %d pairs\n", sa / n, sb / n, r, w, n}'
