#!/usr/bin/env bash
# Rewrite the etsim columns of reference.csv (packet-level last completion
# and pause count, flow-level last completion) from the etsim binary given,
# leaving the ns-3 columns, the gap column and the comments as they are.
#   update_reference.sh path/to/etsim
set -euo pipefail
BIN=${1:?usage: $0 path/to/etsim}
cd "$(dirname "$0")"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
last() { awk '{ if ($7 > m) m = $7 } END { print m + 0 }' "$1"; }
while IFS= read -r line; do
  case $line in
    '#'* | scenario,*) echo "$line"; continue ;;
  esac
  IFS=, read -r name cfg cc ns3 ns3_p _ _ _ gap <<< "$line"
  "$BIN" netsim --quiet --cc "$cc" --fct "$T/f" --pfc "$T/p" "$cfg"
  pkt=$(last "$T/f")
  pkt_p=$(awk '$5 == 1' "$T/p" | wc -l)
  "$BIN" netsim --quiet --backend flow --cc "$cc" --fct "$T/f" "$cfg"
  echo "$name,$cfg,$cc,$ns3,$ns3_p,$pkt,$pkt_p,$(last "$T/f"),$gap"
done < reference.csv > "$T/new"
cp "$T/new" reference.csv
