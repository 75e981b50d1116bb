#!/usr/bin/env bash
# The rows of ../reference.csv marked "seeded" (ECN marks drawn at random,
# Pmax < 1 between Kmin and Kmax) over seeds 1..SEEDS of both simulators:
# ns-3 with NS_GLOBAL_VALUE=RngRun=K (its ECN marking draws from a fresh
# UniformRandomVariable, whose stream RngRun picks), etsim with --seed K,
# which draws the same values (src/net/pkt_rng.c).
# Writes ../reference_seeds.csv: scenario,config,cc,sim,seed,last_ns,pauses.
#
#   NS3_BIN=... ETSIM=path/to/etsim [SEEDS=10] seeds.sh [PATTERN]
#
# With PATTERN only the matching rows are run, and their lines replace
# those already in the file.  tests/net/netsim_cli.sh re-runs etsim's
# seeds and requires each to equal ns-3's.
set -euo pipefail
: "${NS3_BIN:?set NS3_BIN to the built rdma_run program}"
: "${ETSIM:?set ETSIM to the etsim binary}"
SEEDS=${SEEDS:-10}
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/..
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
out=$ex/reference_seeds.csv
last() { awk '{ if ($7 > m) m = $7 } END { print m + 0 }' "$1"; }
: > "$T/new"
while IFS=, read -r name cfg cc _ _ _ _ _ gap; do
  case $name in '#'* | scenario) continue ;; esac
  [ "$gap" = seeded ] || continue
  [ -n "${1:-}" ] && ! grep -q -- "$1" <<< "$name,$cfg,$cc" && continue
  for k in $(seq 1 "$SEEDS"); do
    r=$(NS_GLOBAL_VALUE=RngRun=$k "$here/run.sh" "$ex/$cfg" "$cc" "$T/ns3")
    echo "$name,$cfg,$cc,ns3,$k,${r% *},${r#* }" | tee -a "$T/new"
    "$ETSIM" netsim --quiet --seed "$k" --cc "$cc" --fct "$T/f" --pfc "$T/p" "$ex/$cfg"
    echo "$name,$cfg,$cc,etsim,$k,$(last "$T/f"),$(awk '$5 == 1' "$T/p" | wc -l)" | tee -a "$T/new"
  done
done < "$ex/reference.csv"
{
  echo "scenario,config,cc,sim,seed,last_ns,pauses"
  if [ -n "${1:-}" ] && [ -e "$out" ]; then
    # keep the rows not re-run
    tail -n +2 "$out" | while IFS= read -r l; do
      IFS=, read -r n c m _ <<< "$l"
      grep -q -- "^$n,$c,$m," "$T/new" || echo "$l"
    done
  fi
  cat "$T/new"
} > "$T/all"
cp "$T/all" "$out"
