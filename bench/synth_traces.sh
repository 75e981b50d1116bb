#!/usr/bin/env bash
# synth_traces.sh — synthetic Chakra traces, end to end (docs/synth.md,
# "Synthetic Chakra traces"):
#
#   [COND=time,share|time] [EXTRA_SEEDS="2 3"] bench/synth_traces.sh ETSIM_BIN WORKDIR \
#       [EPOCHS] [SEED] [TRAIN OPTIONS...]
#
# 1. A training set of real traces: rank 0 of 199 workloads of 8 NPUs made
#    by `etsim gen llm` (dp / tp / sp / ZeRO / micro-batches / recompute
#    variants), `gen dlrm`, `gen micro`, and `convert --from text` of
#    ASTRA-sim's text workloads.
# 2. Each simulated on the HGX-H100 platform (8 NPUs, one switch, 400 GB/s)
#    with the trace on every NPU and every communicator group spanning all
#    NPUs (synthetic traces have no groups, so the real ones are simulated
#    the same way).  Its label is its iteration time and its communication
#    share (COND=time,share, the default; cond.txt; models of version 6
#    and later), or the time alone (COND=time; labels.txt).
# 2b. The projection alone: the real traces written back from their own
#    four channels by the synthetic-trace writer (bench_synth_roundtrip,
#    built next to ETSIM_BIN; skipped when absent), simulated the same way:
#    what a perfect generator's traces would keep.
# 3. `synth train` on the set with those labels; `synth sample` one trace
#    per training label (the training set's own (time, share) pairs); each
#    validated and simulated the same way.
# 4. The same for the DAGGEN-style baseline fitted to the set.
# 5. Graph statistics (`synth eval`) and the simulated iteration time and
#    communication share (exposed communication / iteration time) of real,
#    synthetic and baseline traces side by side, and how closely each
#    synthetic trace follows its labels: Pearson of the log time label and
#    the log simulated time, and of the share label and the simulated
#    share.
# 6. At 300-400 nodes: the real traces of at least 300 nodes, and for
#    sampling seeds 1-3 one synthetic trace per label of theirs, each
#    validated, with the sampling CPU time and `synth eval` of the sets.
#
# Needs ETSIM_SHARED (default ../shared next to the source tree).  CPU
# times of training and sampling are printed.
set -euo pipefail
BIN=$(realpath "$1")
W=$2
EPOCHS=${3:-200}
SEED=${4:-1}
COND=${COND:-time,share}
case $COND in time | time,share) ;; *) echo "COND: time or time,share" >&2; exit 2 ;; esac
shift $(($# < 4 ? $# : 4))
SRC=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${ETSIM_SHARED:-$SRC/../shared}
C=$SHARED/configs/astra-sim
SYS=$C/system/HGX-H100-validated.json
NET=$C/network/HGX-H100-validated.yml
mkdir -p "$W/sets" "$W/real"
cd "$W"

# ---------------------------------------------------------------- corpus
if [ ! -s real.done ]; then
  cd sets
  put() { cp "$1" ../real/"$2".et; }
  llm() {
    local p=$1
    shift
    "$BIN" gen llm --vocab 32000 --out-format et -o "$p" --quiet "$@"
    put "$p.0.et" "$p"
  }
  for L in 2 4 8 16 24 32 48 56; do for h in 1024 2048 4096; do for seq in 1024 4096; do
    for z in 0 1 3; do
      llm "llm_L${L}_h${h}_s${seq}_z${z}" --layers $L --hidden $h --heads $((h / 128)) \
        --kv-heads $((h / 128)) --ffn $((4 * h)) --seq $seq --dp 8 --zero $z
    done
  done; done; done
  for L in 4 8 16; do for h in 2048 4096; do for ts in 2,1 4,1 2,2; do
    tp=${ts%,*}
    sp=${ts#*,}
    llm "llm_L${L}_h${h}_tp${tp}_sp${sp}" --layers $L --hidden $h --heads $((h / 128)) \
      --kv-heads $((h / 128)) --ffn $((4 * h)) --seq 2048 --dp $((8 / tp / sp)) --tp $tp --sp $sp
  done; done; done
  for L in 8 16; do for z in 0 3; do for rc in 0 1; do
    extra=()
    [ $rc = 1 ] && extra=(--recompute)
    llm "llm_L${L}_mb2_z${z}_rc$rc" --layers $L --hidden 2048 --heads 16 --kv-heads 16 \
      --ffn 8192 --seq 2048 --dp 8 --zero $z --microbatches 2 "${extra[@]}"
  done; done; done
  for pr in mlperf-dlrm criteo-kaggle mlperf-dlrm-dcnv2; do for b in 2048 8192; do
    "$BIN" gen dlrm --preset $pr --ranks 8 --batch $b --out-format et -o "dlrm_${pr}_b$b" --quiet
    put "dlrm_${pr}_b$b.0.et" "dlrm_${pr}_b$b"
  done; done
  for c in all-reduce all-gather reduce-scatter all-to-all all-reduce,all-gather; do
    for s in 64KiB 1MiB 16MiB; do
      p=micro_$(echo $c | tr , _)_$s
      "$BIN" gen micro --coll $c --size $s --npus 8 --count 4 --comp-ns 200000 --out-format et \
        -o "$p" --quiet
      put "$p.0.et" "$p"
    done
  done
  for t in "$SHARED"/traces/astra-sim/text_workloads/*.txt; do
    p=text_$(basename "$t" .txt)
    "$BIN" convert --from text --npus 8 --out-format et -o "$p" "$t" > /dev/null
    put "$p.0.et" "$p"
  done
  cd ..
  touch real.done
fi

# Every communicator group id a trace may name spans all 8 NPUs.
{
  printf '{'
  for g in $(seq 1 63); do printf '%s"%d": [0, 1, 2, 3, 4, 5, 6, 7]' "$([ $g = 1 ] || echo ', ')" $g; done
  printf '}\n'
} > flat8.json

# sim_one TRACE [--comm-group F]: "nodes iteration_ns comm_share" of NPU 0.
sim_one() {
  local f=$1
  shift
  "$BIN" sim --workload "$f" --system "$SYS" --network "$NET" --json sim.json --quiet "$@" > /dev/null
  # The first NPU's record: its finish time, exposed communication, nodes.
  tr -d ' \n' < sim.json | sed 's/},{/}\n{/g' | awk 'NR == 1' |
    sed -n 's/.*"finish_ns":\([0-9]*\).*"exposed_comm_ns":\([0-9]*\).*"nodes":\([0-9]*\).*/\3 \1 \2/p' |
    awk '{printf "%d %.0f %.4f\n", $1, $2, ($2 > 0 ? $3 / $2 : 0)}'
  # (%.0f: mawk's %d stops at 2^31 - 1, and iteration times pass 2.1 s)
}

if [ ! -s sim_real.txt ]; then
  : > sim_real.txt
  : > labels.txt
  for f in real/*.et; do
    r=$(sim_one "$f" --comm-group flat8.json)
    echo "$(basename "$f") $r" >> sim_real.txt
    echo "$(basename "$f") $(echo "$r" | cut -d' ' -f2)" >> labels.txt
  done
fi

# The conditioning labels: "name time share", or "name time".
if [ "$COND" = time ]; then
  cp labels.txt cond.txt
else
  awk '{print $1, $3, $4}' sim_real.txt > cond.txt
fi

# ------------------------------------------------ the projection alone
RT=$(dirname "$BIN")/bench_synth_roundtrip
if [ -x "$RT" ]; then
  rm -rf rt && mkdir rt
  "$RT" rt real/*.et
  : > sim_rt.txt
  for f in real/*.et; do
    echo "$(basename "$f") $(sim_one "rt/$(basename "$f" .et).0.et")" >> sim_rt.txt
  done
fi

# ------------------------------------------------------------ generators
cpu() { /usr/bin/time -f "%U %S" "$@" 2> cpu.txt > /dev/null || { cat cpu.txt >&2; exit 3; }
  awk 'END{printf "%.1f", $1 + $2}' cpu.txt; }
rm -rf syn base
mkdir -p syn base
t_train=$(cpu "$BIN" synth train --data real --label-file cond.txt -o model.bin --epochs "$EPOCHS" \
  --seed "$SEED" --quiet "$@")
/usr/bin/time -f "%U %S" -o cpu.txt "$BIN" synth sample --model model.bin --label-file cond.txt \
  -o syn/s --seed "$SEED" 2> sample.txt
t_sample=$(awk 'END{printf "%.1f", $1 + $2}' cpu.txt)
"$BIN" synth baseline --data real --label-file cond.txt -o base/s --seed "$SEED" 2> baseline.txt
echo "synthetic: $(grep 'broke an attribute rule' sample.txt); $(grep 'attribute rules' sample.txt)"
echo "baseline:  $(grep 'attribute rules' baseline.txt)"
n=$(wc -l < labels.txt)
for kind in syn base; do
  : > sim_$kind.txt
  bad=0
  for i in $(seq 0 $((n - 1))); do
    "$BIN" validate "$kind/s-$i" > /dev/null || bad=$((bad + 1))
    echo "s-$i $(sim_one "$kind/s-$i.0.et")" >> sim_$kind.txt
  done
  echo "$kind: $n traces, $bad failed etsim validate"
done
echo "conditioned on: $COND; training: $EPOCHS epochs, seed $SEED, $t_train s CPU;" \
  "sampling $n traces: $t_sample s CPU"

# --------------------------------------------------------------- compare
"$BIN" synth eval --real real --generated syn --surrogate none | sed 's/^/synthetic  /'
"$BIN" synth eval --real real --generated base --surrogate none | sed 's/^/baseline   /'
# Columns of sim_*.txt: name nodes iteration_ns comm_share; row i of
# syn/base was conditioned on row i of sim_real.txt (the labels' source).
q() { awk -v p="$2" '{a[NR] = $1} END {printf "%.3f", a[int(p * (NR - 1) + 0.5) + 1]}' "$1"; }
report() {
  # 1-4 the real trace (its time and share are the labels), 5-8 this one.
  paste -d' ' sim_real.txt "sim_$1.txt" > "joined_$1.txt"
  awk '{print log($7) / log(10)}' "joined_$1.txt" | sort -g > "sorted_t_$1"
  awk '{print $8}' "joined_$1.txt" | sort -g > "sorted_c_$1"
  printf '%-9s log10 iteration ns q10/50/90 %s %s %s  comm share q10/50/90 %s %s %s ' "$1" \
    "$(q "sorted_t_$1" .1)" "$(q "sorted_t_$1" .5)" "$(q "sorted_t_$1" .9)" \
    "$(q "sorted_c_$1" .1)" "$(q "sorted_c_$1" .5)" "$(q "sorted_c_$1" .9)"
  # Mean nodes and comm share; Pearson of the time label and the simulated
  # time (logs), and of the share label and the simulated share.
  awk 'function r(x, y,   i, mx, my, a, b, d) {
        for (i = 1; i <= n; i++) { mx += x[i]; my += y[i] }
        mx /= n; my /= n
        for (i = 1; i <= n; i++) { a += (x[i] - mx) * (y[i] - my); b += (x[i] - mx)^2; d += (y[i] - my)^2 }
        return b > 0 && d > 0 ? a / sqrt(b * d) : 0 }
    { n++; l[n] = log($3); t[n] = log($7); ls[n] = $4; s[n] = $8; c += $8; k += $6 }
    END { printf "mean %.3f  nodes %.1f  Pearson(log label, log time) %.3f  Pearson(share label, share) %.3f\n",
        c / n, k / n, r(l, t), r(ls, s) }' "joined_$1.txt"
}
report real
[ -x "$RT" ] && report rt
report syn
report base
# 5b. Other sampling seeds of the same model (EXTRA_SEEDS="2 3"): how much
# of a difference between two models the sampling noise alone makes.
extra=""
for s in ${EXTRA_SEEDS:-}; do
  rm -rf "syn$s" && mkdir "syn$s"
  "$BIN" synth sample --model model.bin --label-file cond.txt -o "syn$s/s" --seed "$s" 2> /dev/null
  : > "sim_syn$s.txt"
  for i in $(seq 0 $((n - 1))); do
    "$BIN" validate "syn$s/s-$i" > /dev/null || echo "syn$s/s-$i failed etsim validate"
    echo "s-$i $(sim_one "syn$s/s-$i.0.et")" >> "sim_syn$s.txt"
  done
  report "syn$s"
  extra="$extra syn$s"
done
for k in $([ -x "$RT" ] && echo rt) syn $extra base; do
  paste sorted_t_real sorted_t_$k | awk -v k=$k '{s += ($1 > $2 ? $1 - $2 : $2 - $1)} END {
    printf "%-9s W1 to real: log10 iteration time %.3f", k, s / NR }'
  paste sorted_c_real sorted_c_$k | awk '{s += ($1 > $2 ? $1 - $2 : $2 - $1)} END {
    printf ", comm share %.4f\n", s / NR }'
done

# ------------------------------------------------- 300 to 400 nodes
awk '$2 >= 300 {print $1}' sim_real.txt > big_names.txt
awk 'NR == FNR {b[$1] = 1; next} ($1 in b)' big_names.txt cond.txt > big_labels.txt
rm -rf big_real && mkdir big_real
while read -r f; do ln -s "../real/$f" "big_real/$f"; done < big_names.txt
nb=$(wc -l < big_labels.txt)
sizes() { awk '{n++; s += $1; if (n == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1}
  END {printf "nodes min %d mean %.1f max %d", lo, s / n, hi}'; }
echo "real traces of >= 300 nodes: $nb, $(awk '$2 >= 300 {print $2}' sim_real.txt | sizes)"
for s in 1 2 3; do
  rm -rf "big$s" && mkdir "big$s"
  /usr/bin/time -f "%U %S" -o cpu.txt "$BIN" synth sample --model model.bin \
    --label-file big_labels.txt -o "big$s/s" --seed "$s" 2> /dev/null
  t=$(awk -v nb="$nb" 'END{printf "%.4f", ($1 + $2) / nb}' cpu.txt)
  bad=0
  : > big_nodes.txt
  for i in $(seq 0 $((nb - 1))); do
    v=$("$BIN" validate "big$s/s-$i") || bad=$((bad + 1))
    echo "$v" | sed -n 's/.*rank(s), \([0-9]*\) node(s).*/\1/p' >> big_nodes.txt
  done
  echo "big seed $s: $nb traces, $bad failed etsim validate, $(sizes < big_nodes.txt)," \
    "sampling $t s CPU per trace"
  # (without the histograms that `etsim report` draws)
  "$BIN" synth eval --real big_real --generated "big$s" --surrogate none --json |
    sed "s/, \"histograms\":.*/}/; s/^/big seed $s: /"
done
