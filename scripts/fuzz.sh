#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/fuzz_*.c, clang) into build-fuzz,
# give each a seed corpus from examples/ and ../shared (or $ETSIM_SHARED),
# and run each for SECONDS (default 15), $ETSIM_JOBS (default nproc) at a
# time:
#     scripts/fuzz.sh [SECONDS] [TARGET...]
# CI runs all 14 for 15 s each: under 2 minutes of fuzzing on 2 cores, a
# check that no parser regressed; run longer by hand (scripts/fuzz.sh 600)
# to search.  The corpus (build-fuzz/corpus) keeps what earlier runs found.
# A target that finds a crash, a leak, a hang (-timeout) or an allocation
# past -rss_limit_mb makes the script print libFuzzer's report and the
# input (crash-*, leak-*, timeout-*, oom-* in build-fuzz/) and exit 1.  The seeds are made
# with the normal build's etsim (build/etsim), built first if absent.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-15}
shift || true
SH=${ETSIM_SHARED:-../shared}
ALL="fuzz_reader fuzz_pytorch fuzz_kineto fuzz_netsim fuzz_flows fuzz_manifest fuzz_yaml
     fuzz_system fuzz_configs fuzz_shard fuzz_synth fuzz_text fuzz_etjson fuzz_edit"
TARGETS=${*:-$ALL}
JOBS=${ETSIM_JOBS:-$(nproc)}
# A fixed seed (ETSIM_FUZZ_SEED, default 1) so that a CI run from the same
# corpus mutates the same way and a finding can be reproduced; 0 lets
# libFuzzer pick one (for searching by hand).
SEED=${ETSIM_FUZZ_SEED:-1}

[ -x build/etsim ] || { cmake -S . -B build > /dev/null && cmake --build build -j"$JOBS" --target etsim_cli; }
E=$PWD/build/etsim
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DETSIM_FUZZ=ON > /dev/null
# shellcheck disable=SC2086
cmake --build build-fuzz -j"$JOBS" --target $TARGETS > /dev/null

C=build-fuzz/corpus
mkdir -p "$C"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
seed() { # TARGET NAME [PREFIX_BYTE] < data
  mkdir -p "$C/$1"
  if [ $# -ge 3 ]; then { printf "\\x$3"; cat; } > "$C/$1/$2"; else cat > "$C/$1/$2"; fi
}
have() { [ -r "$SH/$1" ]; }

# Traces written by etsim itself, plain and gzipped; their JSON form.
"$E" convert --from json examples/dp_step/dp_step.json -o "$T/dp.et"
seed fuzz_reader dp.et < "$T/dp.et"
gzip -c "$T/dp.et" | seed fuzz_reader dp.et.gz
"$E" jsonize "$T/dp.et" | seed fuzz_etjson dp.json
"$E" gen micro --coll all-reduce,send-recv --size 4KiB --npus 4 --comp-ns 1500 -o "$T/mb" --quiet
"$E" jsonize "$T/mb.c1.et" | seed fuzz_etjson mb.json
seed fuzz_manifest mb.manifest.json < "$T/mb.manifest.json"
printf '{"etsim_trace_set": 1, "npus": 3, "classes": [{"file": "a.0.et", "ranks": "0,2"},
 {"file": "b.0.et", "ranks": "1"}]}' | seed fuzz_manifest two.manifest.json
# Network, system and the small JSON files.
for f in examples/dp_step/network.yml "$SH"/configs/astra-sim/network/*.yml; do
  [ -r "$f" ] && seed fuzz_yaml "$(basename "$f")" < "$f"
done
for f in examples/dp_step/system.json "$SH"/configs/astra-sim/system/*.json; do
  [ -r "$f" ] && seed fuzz_system "$(basename "$f")" < "$f"
done
for f in "$SH"/configs/astra-sim/remote_memory/*.json; do
  [ -r "$f" ] && seed fuzz_configs "mem-$(basename "$f")" 00 < "$f"
done
printf '{"1": [0, 2], "2": [1, 3, 5]}' | seed fuzz_configs groups.json 01
printf '{"0": [0, 1], "tp": [2, 3]}' | seed fuzz_configs rgroups.json 02
# sim's what-if specs: --npu-speed (file, lognormal), --link-degrade, --fail
printf '{"17": 0.7, "32-47": 0.9}' | seed fuzz_configs speed.json 03
printf 'lognormal:sigma=0.05,mu=0,seed=7' | seed fuzz_configs speed-ln 03
printf '{"1": {"bw": 0.5, "latency": 2}, "0": 0.9}' | seed fuzz_configs degrade.json 04
printf 'npu:5@1.5ms' | seed fuzz_configs fail 05
# Sharding: a preset written out as a plan, the model format by hand.
"$E" shard --model criteo-kaggle --ranks 4 -o "$T/plan.json" --quiet
seed fuzz_shard plan.json 01 < "$T/plan.json"
printf '{"name": "m", "batch": 64, "tables": [{"name": "t0", "rows": 1000, "dim": 16,
 "pooling": 2}, {"name": "t1", "rows": 50, "dim": 8}]}' | seed fuzz_shard model.json 00
"$E" shard --model criteo-kaggle --ranks 8 --network examples/dp_step/network.yml \
  --system examples/dp_step/system.json --calib-out "$T/calib.json" -o "$T/plan8.json" --quiet
seed fuzz_shard calib.json 02 < "$T/calib.json"
# edit: operation arguments (byte 2 is the operation's index in the help's
# order: keep 0, drop 1, ids 2, iter 3, ranks 5, scale-time 7, remap-ranks
# 14, insert-after 19, round-sizes 21, strip-attrs 23), a profile, a rank
# map, communicator groups.
edit_arg() { printf '%s' "$3" | seed fuzz_edit "$1" "00\\x$2"; }
edit_arg keep 00 'type=comp;name=^attn'
edit_arg drop 01 'descendants:coll=all-reduce'
edit_arg ids 02 '3-40'
edit_arg iter 03 '0'
edit_arg ranks 05 '0,2'
edit_arg scale 07 '0.5@type=comp;cpu=0'
edit_arg remap 0e '3,2,1,0'
edit_arg insert 13 'all-reduce:1MiB:pg=1@type=coll'
edit_arg insert_deadlock 13 'all-reduce:1MiB@type=coll'
edit_arg round 15 'pow2'
edit_arg strip 17 'sim,comm_type'
printf 'name,time (us)\nattn_fwd,12.5\n"mlp,fwd",3\n' | seed fuzz_edit profile.csv 01
printf '1\n0\n3\n2\n' | seed fuzz_edit remap.txt 02
printf '{"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}' | seed fuzz_edit groups.json 03
# Packet network: configuration + topology, flows.
for f in examples/netsim/*.topo; do
  { printf 'CC_MODE 3\nBUFFER_SIZE 1\n--\n'; cat "$f"; } | seed fuzz_netsim "$(basename "$f")"
done
for f in examples/netsim/*.flows; do seed fuzz_flows "$(basename "$f")" < "$f"; done
# LayerDAG: a slice of TPU Tile, and a model trained on it.
if have datasets/tpu_tile/val.txt; then
  awk '/^g /{n++} n<=12' "$SH/datasets/tpu_tile/val.txt" > "$T/dags.txt"
else
  printf 'g 3 2 1.0\n0 1 2\n0 1\n1 2\ng 4 3 2.0\n1 0 2 1\n0 1\n0 2\n2 3\n' > "$T/dags.txt"
fi
seed fuzz_synth dags.txt 00 < "$T/dags.txt"
"$E" synth train --data "$T/dags.txt" -o "$T/m.bin" --epochs 1 --hidden 8 --quiet
seed fuzz_synth model.bin 01 < "$T/m.bin"
# Converters: PyTorch host traces and Kineto; ASTRA-sim text workloads.
have traces/param/pt2_et.json && seed fuzz_pytorch pt2_et.json < "$SH/traces/param/pt2_et.json"
if have traces/hta/benchmark_simple_add_trace.json.gz; then
  gzip -dc "$SH/traces/hta/benchmark_simple_add_trace.json.gz" | seed fuzz_kineto simple_add.json
fi
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1,
 "ts": 1000, "dur": 20, "args": {"External id": 3, "Record function id": 3}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1005, "dur": 9,
 "args": {"correlation": 11, "stream": 7, "External id": 3}},
 {"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 1005, "cat": "ac2g", "name": "ac2g"}]}' |
  seed fuzz_kineto tiny.json
for f in "$SH"/traces/astra-sim/text_workloads/*.txt; do
  [ -r "$f" ] && head -c 8192 "$f" | seed fuzz_text "$(basename "$f")"
done
printf 'DATA\n2\nl0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 1\nl1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 2048 1\n' |
  seed fuzz_text data.txt

# Run the targets $JOBS at a time (each is one process); report each as
# it ends, and fail when any found something.
run_one() { # TARGET
  local t=$1 rc=0
  mkdir -p "$C/$t"
  (cd build-fuzz && TMPDIR="$T" exec "./$t" -max_total_time="$SECS" -seed="$SEED" -rss_limit_mb=2048 -timeout=10 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$t-" "corpus/$t") > "$T/$t.log" 2>&1 || rc=$?
  {
    echo "== $t: $SECS s from $(ls "$C/$t" | wc -l) input(s) in its corpus"
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$T/$t.log" || true
    if [ $rc -ne 0 ]; then
      grep -E -A25 "^==[0-9]+==(ERROR|WARNING)|^SUMMARY|deadly signal|Test unit written|ERROR: libFuzzer|^fuzz" "$T/$t.log" | head -60
      echo "fuzz: $t failed (exit $rc); the input is build-fuzz/$t-*"
    fi
  } > "$T/$t.report"
  return $rc
}
start=$SECONDS
failed=
pids=()
names=()
reap() { # wait for the oldest job
  local rc=0
  wait "${pids[0]}" || rc=$?
  cat "$T/${names[0]}.report"
  [ $rc -eq 0 ] || failed="$failed ${names[0]}"
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
}
for t in $TARGETS; do
  [ ${#pids[@]} -lt "$JOBS" ] || reap
  run_one "$t" &
  pids+=($!)
  names+=("$t")
done
while [ ${#pids[@]} -gt 0 ]; do reap; done
n=$(echo $TARGETS | wc -w)
if [ -n "$failed" ]; then
  echo "fuzz: FAILED:$failed (of $n targets, $((SECONDS - start)) s)"
  exit 1
fi
echo "fuzz: $n targets, $SECS s each, $JOBS at a time: no finding ($((SECONDS - start)) s)"
