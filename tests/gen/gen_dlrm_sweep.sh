#!/usr/bin/env bash
# Issue 24's sweep: every sharding type, for every preset, at rank counts
# from 2 to 4,096, gives a plan that `gen dlrm` turns into a trace set that
# `etsim validate` passes and `etsim sim` finishes.
#
#  - 2..16 every count, then 24, 32, 48, 64: plan, generate, validate and
#    simulate every preset with every type;
#  - 96 to 1,024 and 4,096: plan, generate and validate every preset with
#    every type; simulate criteo-kaggle with every type (4,096: TW and TWRW,
#    about 17 s each; the rest of that matrix takes hours to simulate and
#    exercises nothing the smaller counts do not).
# Hosts: 8 ranks each when the count allows, else 2, else one host; the
# host-wise types (twrw, twcw) run wherever there are two hosts or more.
# The dlrm-1t preset is planned with 10^5 GB of memory per rank so that
# every type fits at every count (it has 4 TB of tables).
#
# In the sanitizer build (ETSIM_SANITIZED, set by CMake with
# -DETSIM_SANITIZE=ON) the whole sweep takes hours (about 6 minutes in
# Release), so it runs a reduced set, and says so: 2, 3, 4, 8, 9, 16, 24
# and 64 ranks in full (every preset, type, simulated), 256 and 1,024
# planned, generated and validated for every preset and type and
# simulated for criteo-kaggle; not 5-7, 10-15, 32, 48, 96, 128, 512 or
# 4,096.  ETSIM_SWEEP_FULL=1 runs the whole sweep there too.
. "$(dirname "$0")/../lib.sh"
n_ok=0
counts="2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 24 32 48 64 96 128 256 512 1024 4096"
coverage="full"
if [ -n "${ETSIM_SANITIZED:-}" ] && [ -z "${ETSIM_SWEEP_FULL:-}" ]; then
  counts="2 3 4 8 9 16 24 64 256 1024"
  coverage="REDUCED (sanitizer build): rank counts $counts only; ETSIM_SWEEP_FULL=1 for all"
fi
echo "gen_dlrm_sweep: coverage $coverage"
run() { # P H PRESET TYPE SIM
  local P=$1 H=$2 M=$3 ty=$4 sim=$5
  "$BIN" gen dlrm --preset "$M" --ranks "$P" --ranks-per-host "$H" --types "$ty" --hbm-gb 100000 \
    -o "$T/d" --quiet 2> "$T/e" || fail "$M on $P ranks ($H per host) as $ty: gen: $(cat "$T/e")"
  "$BIN" validate -q "$T/d" > "$T/v" 2>&1 || fail "$M $P $ty: validate: $(head -5 "$T/v")"
  if [ "$sim" = 1 ]; then
    local dims=1
    if [ "$H" = "$P" ]; then
      printf 'topology: [ Switch ]\nnpus_count: [ %d ]\nbandwidth: [ 100 ]\nlatency: [ 500 ]\n' "$P" > "$T/n.yml"
    else
      dims=2
      printf 'topology: [ Switch, Switch ]\nnpus_count: [ %d, %d ]\nbandwidth: [ 150, 25 ]\nlatency: [ 500, 2000 ]\n' \
        "$H" $((P / H)) > "$T/n.yml"
    fi
    local impl='["ring"]' a2a='["direct"]'
    [ $dims = 2 ] && impl='["ring", "ring"]' a2a='["direct", "direct"]'
    cat > "$T/s.json" <<JSON
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 1, "collective-optimization": "baseline", "local-mem-bw": 3350,
 "all-reduce-implementation": $impl, "reduce-scatter-implementation": $impl,
 "all-gather-implementation": $impl, "all-to-all-implementation": $a2a}
JSON
    local cg=()
    [ "$H" != "$P" ] && cg=(--comm-group "$T/d.comm_group.json")
    "$BIN" sim --workload "$T/d" --network "$T/n.yml" --system "$T/s.json" "${cg[@]}" --quiet \
      > "$T/o" 2> "$T/e" || fail "$M $P $ty: sim: $(head -5 "$T/e")"
    grep -q "finished" "$T/o" || fail "$M $P $ty: sim printed no finish times"
  fi
  n_ok=$((n_ok + 1))
}
hosts_for() { # P -> ranks per host
  local P=$1
  if [ $((P % 8)) = 0 ] && [ "$P" -gt 8 ]; then echo 8
  elif [ $((P % 2)) = 0 ] && [ "$P" -gt 2 ]; then echo 2
  else echo "$P"; fi
}
presets="mlperf-dlrm mlperf-dlrm-dcnv2 criteo-kaggle synthetic-large dlrm-1t"
for P in $counts; do
  H=$(hosts_for $P)
  types="tw rw cw dp"
  [ "$H" != "$P" ] && types="$types twrw twcw"
  for M in $presets; do
    for ty in $types; do
      sim=0
      if [ "$P" -le 64 ]; then sim=1
      elif [ "$M" = criteo-kaggle ] && { [ "$P" -le 1024 ] || [ "$ty" = tw ] || [ "$ty" = twrw ]; }; then sim=1; fi
      run "$P" "$H" "$M" "$ty" $sim
    done
  done
done
echo "gen_dlrm_sweep: ok ($n_ok plans generated and validated; coverage $coverage)"
