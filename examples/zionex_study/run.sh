#!/usr/bin/env bash
# The ZionEX study (issue 24): a trillion-parameter-class DLRM (dlrm-1t,
# 1.02e12 FP32 weights in 400 tables) trained on 16 to 128 ZionEX-like
# nodes, with each technique of Mudigere et al. (ISCA 2022) switched on in
# turn, planned by `etsim shard` and simulated by `etsim sim`.
#
#   examples/zionex_study/run.sh [OUT_DIR] [NODES...]   (default out/zionex_study, 16 32 64 128)
#
# Platform (README.md gives the sources and the assumptions):
#   node:      8 GPUs (A100-class: 156 TFLOPS dense, 1,555 GB/s HBM, 40 GB)
#              on an NVSwitch-class scale-up fabric, 300 GB/s per GPU;
#   ZionEX:    a dedicated RoCE scale-out network, one 200 Gb/s NIC per GPU
#              (25 GB/s per GPU), 3 us per hop;
#   Zion-like: the same nodes whose scale-out traffic shares the front-end
#              network, 4 x 100 Gb/s NICs per node (6.25 GB/s per GPU),
#              10 us per hop.
# Workload: batch 512 per GPU (weak scaling), SGD; ASTRA-sim's system layer
# (ring all-reduce, direct all-to-all, bandwidth-aware dimension order) on
# etsim's congestion-aware network.
#
# Configurations, each planned afresh (the planner prices the technique):
#   zion       Zion-like network, FP32 communication
#   base       ZionEX, FP32 communication, HBM only, one iteration at a time
#   fp16       + FP16 pooled all-to-all, BF16 all-reduce
#   fp8        + FP8 all-to-all and all-reduce with (de)quantize kernels
#   pipe       + the next batch's embedding stage overlapped (3 iterations)
#   hbm24      24 GB of HBM per GPU for the embeddings, nothing below it
#   tiers      the same 24 GB of HBM caching rows over 64 GB DDR (25 GB/s,
#              5 us) and 512 GB SSD (3 GB/s, 100 us); Zipf 1.05 access skew
#   all        FP8 communication + pipelining
# The planner is calibrated once per platform and size (`--calib-out`), and
# every configuration simulates its finalists and keeps the fastest.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=build/etsim
OUT=${1:-out/zionex_study}
shift || true
NODES=${*:-16 32 64 128}
mkdir -p "$OUT"
cat > "$OUT/sys.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
 "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 1555,
 "all-reduce-implementation": ["ring", "ring"], "reduce-scatter-implementation": ["ring", "ring"],
 "all-gather-implementation": ["ring", "ring"], "all-to-all-implementation": ["direct", "direct"]}
JSON
GPU=(--peak-tflops 156 --mem-gbps 1555)
for N in $NODES; do
  P=$((N * 8))
  printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, %d ]\nbandwidth: [ 300, 25 ]\nlatency: [ 500, 3000 ]\n' \
    $N > "$OUT/zionex$N.yml"
  printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, %d ]\nbandwidth: [ 300, 6.25 ]\nlatency: [ 500, 10000 ]\n' \
    $N > "$OUT/zion$N.yml"
  for cfg in zion base fp16 fp8 pipe hbm24 tiers all; do
    net=zionex; opts=(--hbm-gb 40)
    case $cfg in
      zion) net=zion ;;
      fp16) opts+=(--a2a-precision fp16 --ar-precision bf16) ;;
      fp8) opts+=(--precision fp8) ;;
      pipe) opts+=(--pipeline --iterations 3) ;;
      hbm24) opts=(--hbm-gb 24) ;;
      tiers) opts=(--hbm-gb 24 --ddr-gb 64 --ssd-gb 512 --zipf 1.05) ;;
      all) opts+=(--precision fp8 --pipeline --iterations 3) ;;
    esac
    cal=(--calib-out "$OUT/cal_${net}$N.json")
    [ -s "$OUT/cal_${net}$N.json" ] && cal=(--calib "$OUT/cal_${net}$N.json")
    t0=$(date +%s)
    $E shard --model dlrm-1t --ranks $P --ranks-per-host 8 "${GPU[@]}" "${opts[@]}" \
      --network "$OUT/$net$N.yml" --system "$OUT/sys.json" --backend congestion --finalists 2 \
      "${cal[@]}" --json "$OUT/${cfg}_$N.json" -o "$OUT/plan_${cfg}_$N.json" --quiet \
      2> "$OUT/${cfg}_$N.err" || { rm -f "$OUT/${cfg}_$N.json"; continue; }
    echo "$cfg $N $(($(date +%s) - t0))" >> "$OUT/wall_s.txt"
  done
done
python3 - "$OUT" $NODES <<'PY'
import json, os, sys
out, nodes = sys.argv[1], [int(x) for x in sys.argv[2:]]
cfgs = ["zion", "base", "fp16", "fp8", "pipe", "hbm24", "tiers", "all"]
def load(cfg, n):
    p = f"{out}/{cfg}_{n}.json"
    if not os.path.exists(p): return None
    r = json.load(open(p)); return r, r["candidates"][r["chosen"]]
print(f"{'nodes':>5} {'config':<6} {'plan':<22} {'iter_ms':>8} {'est_ms':>7} {'Msamples/s':>10} "
      f"{'vs_base':>7} {'a2a_%':>6} {'ar_%':>5}")
for n in nodes:
    base = load("base", n)
    for cfg in cfgs:
        got = load(cfg, n)
        if not got:
            err = open(f"{out}/{cfg}_{n}.err").read().strip().splitlines()
            why = "does not fit" if err and "does not fit" in err[-1] else "failed"
            print(f"{n:>5} {cfg:<6} ({why}: {cfg}_{n}.err)"); continue
        r, c = got
        it = c["simulated_us"] / 1e3
        tput = n * 8 * 512 / it / 1e3
        sp = base[1]["simulated_us"] / c["simulated_us"] if base else float("nan")
        a2a = 100 * c["sim_exposed_us"]["all-to-all"] / c["simulated_us"]
        ar = 100 * c["sim_exposed_us"]["all-reduce"] / c["simulated_us"]
        print(f"{n:>5} {cfg:<6} {c['types'][:22]:<22} {it:8.2f} {c['estimate_us']/1e3:7.2f} "
              f"{tput:10.2f} {sp:6.2f}x {a2a:5.0f}% {ar:4.0f}%")
PY
echo "(iter_ms: simulated iteration of the chosen plan; est_ms: the planner's estimate; a2a_%, ar_%:"
echo " exposed all-to-all and all-reduce time over the iteration, averaged over GPUs; outputs in $OUT)"
