#!/usr/bin/env bash
# Outputs of the example set, for checking that a refactoring changes no
# result: run it before and after, then compare the two folders.
#
#   scripts/golden.sh OUT_DIR [ETSIM_BINARY]      (default build/etsim)
#   diff -r before/ after/
#
# Every command the README shows is run on the shipped examples (and on
# ../shared when present); wall-clock figures are dropped (the value of a
# timing key in JSON, a timing line in text), everything else is kept byte
# for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/golden.sh OUT_DIR [ETSIM]}
E=$(realpath "${2:-build/etsim}")
SH=${ETSIM_SHARED:-../shared}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# scrub: stdin to stdout with what varies from run to run blanked.  JSON
# (sim's report and netsim --json are one line each) keeps every key, the
# timing ones with the value '-', so the rest of the line is still compared;
# text lines that report times are left out whole.
scrub() {
  sed -E 's/"(wall_s|cpu_s|events_per_s|packets_per_s)": *[^,}]*/"\1": -/g' \
    | { grep -Ev ' s wall|events/s|CPU s|elapsed' || true; } | sed "s#$W#W#g"
}
# run NAME CMD...: stdout and stderr of CMD, scrubbed, into NAME.out, its
# exit status into NAME.rc.
run() {
  local name=$1
  shift
  set +e
  "$@" >"$W/o" 2>"$W/e"
  echo $? >"$OUT/$name.rc"
  set -e
  cat "$W/o" "$W/e" | scrub >"$OUT/$name.out"
}
# keep NAME FILE...: copies (scrubbed) files the last command wrote.
keep() {
  local name=$1
  shift
  for f in "$@"; do
    if [ -e "$f" ]; then scrub <"$f" >"$OUT/$name.$(basename "$f")"; fi
  done
}

X=examples/dp_step
run conv_dp "$E" convert --from json $X/dp_step.json -o "$W/dp.et"
run inspect_dp "$E" inspect "$W/dp.et"
run inspect_dp_json "$E" inspect --json "$W/dp.et"
run jsonize_dp "$E" jsonize "$W/dp.et" -o "$W/dp.jsonl"
keep jsonize_dp "$W/dp.jsonl"
run validate_dp "$E" validate "$W/dp.et"
printf 'topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 25 ]\nlatency: [ 1000 ]\n' >"$W/sw8.yml"
sed -e 's/\["ring", "ring"\]/["ring"]/' -e 's/\["direct", "direct"\]/["direct"]/' $X/system.json >"$W/sys1.json"
for b in analytical congestion flow packet; do
  net=$X/network.yml sys=$X/system.json
  case $b in flow | packet) net=$W/sw8.yml sys=$W/sys1.json ;; esac
  run sim_dp_$b "$E" sim --workload "$W/dp.et" --network "$net" --system "$sys" \
    --backend $b --exact --json "$W/dp_$b.json" --csv "$W/dp_$b.csv" --timeline "$W/dp_$b.tl.json"
  keep sim_dp_$b "$W/dp_$b.json" "$W/dp_$b.csv" "$W/dp_$b.tl.json"
done

for c in all-reduce all-to-all all-gather,reduce-scatter send-recv; do
  n=${c//,/_}
  run micro_$n "$E" gen micro --coll $c --size 1MiB --npus 8 --out-format et -o "$W/m_$n"
  run micro_${n}_sim "$E" sim --workload "$W/m_$n" --network $X/network.yml --system $X/system.json \
    --json "$W/m_$n.json"
  keep micro_${n}_sim "$W/m_$n.json"
done

run llm "$E" gen llm --preset gpt3-175b --layers 4 --dp 2 --tp 2 --pp 2 --microbatches 4 -o "$W/llm"
run llm_validate "$E" validate "$W/llm"
run llm_inspect "$E" inspect --json "$W/llm"
printf 'topology: [ FullyConnected, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 150, 25 ]\nlatency: [ 500, 2000 ]\n' >"$W/n2.yml"
for b in analytical congestion; do
  run llm_sim_$b "$E" sim --workload "$W/llm" --comm-group "$W/llm.comm_group.json" --network "$W/n2.yml" \
    --system $X/system.json --backend $b --json "$W/llm_$b.json"
  keep llm_sim_$b "$W/llm_$b.json"
done

run shard "$E" shard --model mlperf-dlrm --ranks 16 --ranks-per-host 8 -o "$W/plan.json"
keep shard "$W/plan.json"
run dlrm "$E" gen dlrm --preset mlperf-dlrm --ranks 16 --ranks-per-host 8 --plan "$W/plan.json" -o "$W/dlrm"
run dlrm_validate "$E" validate "$W/dlrm"
run replay_dry "$E" replay --dry-run "$W/llm"

for cfg in examples/netsim/*.cfg; do
  n=$(basename "$cfg" .cfg)
  for cc in none dcqcn hpcc timely dctcp; do
    run netsim_${n}_$cc "$E" netsim "$cfg" --cc $cc --fct "$W/fct" --pfc "$W/pfc" --qlen "$W/qlen" \
      --ports "$W/ports" --json
    keep netsim_${n}_$cc "$W/fct" "$W/pfc" "$W/qlen" "$W/ports"
    rm -f "$W/fct" "$W/pfc" "$W/qlen" "$W/ports"
  done
  run netsim_${n}_flow "$E" netsim "$cfg" --backend flow --fct "$W/fct" --json
  keep netsim_${n}_flow "$W/fct"
done
run gen_topo "$E" gen topo clos2:hosts=16,leaves=4,spines=2 -o "$W/c.topo"
keep gen_topo "$W/c.topo"

if [ -d "$SH/traces" ]; then
  run text_rn "$E" convert --from text "$SH/traces/astra-sim/text_workloads/Resnet50_DataParallel.txt" \
    --npus 8 -o "$W/rn"
  run text_rn_inspect "$E" inspect --json "$W/rn"
  run pt_resnet "$E" convert --from pytorch "$SH/traces/param/resnet_2gpu_et.json.gz" -o "$W/res.et" --quiet
  run pt_resnet_inspect "$E" inspect --json "$W/res.et"
  run pt2 "$E" convert --from pytorch "$SH/traces/param/pt2_et.json" -o "$W/pt2.et" --quiet
  run pt2_jsonize "$E" jsonize "$W/pt2.et" -o "$W/pt2.jsonl"
  keep pt2_jsonize "$W/pt2.jsonl"
fi
if [ -d "$SH/datasets/tpu_tile" ]; then
  run synth_baseline "$E" synth baseline --data "$SH/datasets/tpu_tile/val.txt" -n 20 --seed 3 -o "$W/b.txt"
  keep synth_baseline "$W/b.txt"
fi
echo "golden: $(ls "$OUT" | wc -l) files in $OUT"
