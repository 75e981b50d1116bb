#!/usr/bin/env bash
# Re-run every row of ../reference.csv on ns-3 and compare with its ns-3
# columns (completion and pauses must be equal: ns-3 is deterministic).
#   NS3_BIN=... check_reference.sh [PATTERN]   (only rows matching PATTERN)
# The small-buffer all-to-all takes about 4 minutes of CPU.
set -uo pipefail
: "${NS3_BIN:?set NS3_BIN to the built rdma_run program}"
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
while IFS=, read -r name cfg cc ns3 ns3_p _ _ _ _; do
  case $name in '#'* | scenario) continue ;; esac
  [ -n "${1:-}" ] && ! grep -q -- "$1" <<< "$name,$cfg,$cc" && continue
  got=$("$here/run.sh" "$here/../$cfg" "$cc" "$T/out") || { echo "FAIL $cfg $cc: run.sh"; bad=1; continue; }
  if [ "$got" = "$ns3 $ns3_p" ]; then
    echo "ok   $cfg $cc: $got"
  else
    echo "FAIL $cfg $cc: ns-3 gives $got, table says $ns3 $ns3_p"
    bad=1
  fi
done < "$here/../reference.csv"
exit $bad
