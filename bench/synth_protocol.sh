#!/usr/bin/env bash
# synth_protocol.sh — LayerDAG's evaluation protocol on TPU Tile, and the
# augmentation claim (docs/synth.md, "Results on TPU Tile"):
#
#   bench/synth_protocol.sh ETSIM_BIN WORKDIR [SEEDS] [EPOCHS] [TRAIN OPTIONS...]
#
# SEEDS (default "1 2 3") are generator training seeds; seed s also seeds
# sampling and the surrogates of that round.  Per seed:
#  1. the generator trains on tr.txt, the 567 graphs of val.txt not in
#     sel.txt (every tenth graph, 63, kept for the surrogates' model
#     selection), for EPOCHS epochs (default 80);
#  2. it samples one DAG per label of tr.txt (gen.txt) and of sel.txt
#     (gen_sel.txt);
#  3. surrogates (the paper's BiMPNN regressor, default configuration),
#     all tested on test.txt:
#       generated  trained on gen.txt, selected on gen_sel.txt (the paper's
#                  protocol: synthetic train and validation sets)
#       real       trained on tr.txt, selected on sel.txt
#       real+gen   trained on tr.txt plus gen.txt, selected on sel.txt
#       pretrain   pre-trained on gen.txt (selected on gen_sel.txt, i.e.
#                  the "generated" surrogate), then fine-tuned on tr.txt
#                  from those weights, selected on sel.txt (not a default
#                  row: name it in ROWS)
#  4. graph statistics of gen.txt and of the DAGGEN-style baseline against
#     test.txt.
# Every line of results.txt is one (seed, what) row; summary.txt holds
# means and sample standard deviations.  CPU seconds are recorded.
# ROWS (environment, default "generated real real+gen") names the
# surrogates to train; the generator, its samples and the statistics are
# always made (to resume a round whose other rows are already measured).
# Further knobs (environment; the defaults are the paper's protocol):
#   PER_LABEL=k    k DAGs per label (sampling seeds s, s+1000, ...): the
#                  generated sets are k times the real ones (default 1,
#                  the paper's size); rows then read "generated" still.
#   SAMPLE_OPTS    extra `synth sample` options (e.g. --max-parents 6).
#                  Classifier-free guidance (docs/synth.md): SAMPLE_OPTS=
#                  "--guidance 2" with the train option --label-drop 0.15
#                  after EPOCHS; "--guidance 4 --guidance-edge 2" guides
#                  the attribute denoiser at 4, the edge denoiser at 2
#                  (docs/synth.md, "Guidance per denoiser").  FiLM label
#                  conditioning: the train option --film (measured worse
#                  on TPU Tile, docs/synth.md); the edge denoiser's label
#                  scale: --label-edge (docs/synth.md, "Edge label scale");
#                  a moving average of the generator's weights: --ema D
#                  (docs/synth.md, "Weight averaging").  Size matching:
#                  "--match-size K" here, each DAG the closest in node
#                  count to its label's graph of K draws (docs/synth.md,
#                  "Size matching").  Node-count conditioning: the train
#                  option --size-cond; the samples then follow tr.txt's
#                  and sel.txt's node counts (docs/synth.md, "Node-count
#                  conditioning"); the stop head alone: --size-cond-stop
#                  (measured worse, docs/synth.md, "Node-count
#                  conditioning of the stop head alone").  The
#                  recommended setting: SAMPLE_OPTS="--guidance 2
#                  --max-parents 1" with the train options --label-drop
#                  0.15 --size-cond; a per-category parent cap instead:
#                  "--parents-from DIR/tr.txt" (docs/synth.md,
#                  "Over-connected samples and parent caps").
#   ENSEMBLE=K     the generated sets come from K generators trained
#                  alike with seeds s, s + 100, ... (all with the TRAIN
#                  OPTIONS): graph i of tr.txt and sel.txt is sampled by
#                  generator i mod K (sampling seed s), in the labels'
#                  order, so the sets keep their size (docs/synth.md,
#                  "An ensemble of generators"; not with PER_LABEL).
#   PRETRAIN_OPTS  extra options of the pretrain row only (e.g. "--lr
#                  3e-4" for the fine-tune, --pretrain-epochs N).
#   AUG_WEIGHTS    weights of the generated DAGs in the real+gen rows
#                  (default "1"); weight w != 1 gives the row "real+gen@w"
#                  (name it so in ROWS).
#   SURR_SEEDS     surrogate seeds (e.g. "1 2 3"): every row of every round
#                  trains one surrogate per listed seed instead of one with
#                  seed s, and its line in results.txt holds their means
#                  ("nsur K"; cpu is their sum); each surrogate's own line
#                  goes to surrogates.txt.  The real row does not depend on
#                  the generator: it is trained once per surrogate seed and
#                  the same means serve every round (CPU 0 after the
#                  first).  Unset: one surrogate, seed s (results
#                  unchanged).  The generated and real rows are thus
#                  averaged alike, and the ratio stays like for like.
#   TPU_DIR        the folder holding val.txt and test.txt (default the
#                  shared TPU Tile; the tests point it at a slice).
# When a round has both a generated and a real row, a line "s ratio pearson
# G/R spearman G/R" follows them.
set -euo pipefail
BIN=$(realpath "$1")
W=$2
SEEDS=${3:-1 2 3}
EPOCHS=${4:-80}
shift $(($# < 4 ? $# : 4))
SRC=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${ETSIM_SHARED:-$SRC/../shared}
D=${TPU_DIR:-$SHARED/datasets/tpu_tile}
D=$(realpath "$D")
mkdir -p "$W"
cd "$W"

# Every tenth graph of val.txt (index 9, 19, ...) selects, the rest trains.
awk '/^#/ {next} /^g / {g++} {print > ((g % 10 == 0) ? "sel.txt" : "tr.txt")}' "$D/val.txt"

cpu() { # cpu OUT CMD...: run, CPU seconds (user + sys) on stdout, CMD's stdout to OUT
  local out=$1
  shift
  /usr/bin/time -f "%U %S" -o cpu.txt "$@" > "$out"
  awk 'END{printf "%.1f", $1 + $2}' cpu.txt
}
sur1() { # sur1 SEED ARGS...: one surrogate; "P S MAE CPU" on stdout
  local s=$1 t
  shift
  # SUR_OPTS (environment) adds surrogate options, e.g. for a quick check.
  t=$(cpu sur.json "$BIN" synth surrogate "$@" --test "$D/test.txt" --seed "$s" --quiet --json \
    ${SUR_OPTS:-})
  sed 's/.*"pearson": \([^,]*\), "spearman": \([^,]*\), "mae": \([^}]*\)}/\1 \2 \3/' sur.json |
    awk -v t="$t" '{print $1, $2, $3, t}'
}
sur() { # sur TAG SEED ARGS...: one row (one surrogate, or one per SURR_SEEDS); to results.txt
  local tag=$1 s=$2 j line
  shift 2
  case " ${ROWS:-generated real real+gen} " in *" $tag "*) ;; *) return 0 ;; esac
  if [ -z "${SURR_SEEDS:-}" ]; then
    sur1 "$s" "$@" | awk -v s="$s" -v tag="$tag" '{printf "%s %s pearson %s spearman %s mae %s cpu %s\n",
      s, tag, $1, $2, $3, $4}' >> results.txt
    return 0
  fi
  : > sur_k.txt
  for j in $SURR_SEEDS; do
    if [ "$tag" = real ] && [ -s "real_sur$j.txt" ]; then # trained in an earlier round: no CPU
      awk '{print $1, $2, $3, 0}' "real_sur$j.txt" >> sur_k.txt
      continue
    fi
    line=$(sur1 "$j" "$@")
    echo "$line" >> sur_k.txt
    echo "$line" | awk -v s="$s" -v tag="$tag" -v j="$j" '{print s, tag, "sur", j, "pearson", $1,
      "spearman", $2, "mae", $3, "cpu", $4}' >> surrogates.txt
    if [ "$tag" = real ]; then echo "$line" > "real_sur$j.txt"; fi
  done
  awk -v s="$s" -v tag="$tag" '{n++; p += $1; r += $2; m += $3; c += $4}
    END {printf "%s %s pearson %.6g spearman %.6g mae %.6g nsur %d cpu %.1f\n",
      s, tag, p / n, r / n, m / n, n, c}' sur_k.txt >> results.txt
}
ratio() { # ratio SEED: generated / real Pearson and Spearman of round SEED, when both rows exist
  awk -v s="$1" '$1 == s && $2 == "generated" {gp = $4; gs = $6} $1 == s && $2 == "real" {rp = $4; rs = $6}
    END {if (gp != "" && rp != "") printf "%s ratio pearson %.6g spearman %.6g\n", s, gp / rp, gs / rs}' \
    results.txt > ratio.txt
  cat ratio.txt >> results.txt
}
stats() { # stats TAG SEED FILE: graph statistics of FILE against test.txt
  "$BIN" synth eval --real "$D/test.txt" --generated "$3" --surrogate none --json |
    sed 's/, "histograms":.*//; s/[{}]//g; s/"attr_tv": \[\([^]]*\)\]/"attr_tv": \1/' | tr ',' '\n' |
    awk -v s="$2" -v tag="$1" -F': ' '{gsub(/[" ]/, "", $1); if ($1 != "n_real" && $1 != "n_generated")
      line = line " " $1 " " $2} END {print s, tag, line}' >> results.txt
}

: > results.txt
: > surrogates.txt
rm -f real_sur*.txt
ensemble() { # ensemble SEED TRAIN_OPTS...: ENSEMBLE=K generators make gen and gen_sel
  local s=$1 k part out m outs
  shift
  for ((k = 1; k < ENSEMBLE; k++)); do
    t=$(cpu /dev/null "$BIN" synth train --data tr.txt -o "gen${s}_e$k.bin" --epochs "$EPOCHS" \
      --seed $((s + 100 * k)) --quiet "$@")
    echo "$s generator_e$k epochs $EPOCHS cpu $t" >> results.txt
  done
  for part in tr sel; do
    out=gen$s.txt
    [ $part = sel ] && out=gen_sel$s.txt
    # graph i of the part is sampled by generator i mod K (same sampling seed s)
    awk -v K="$ENSEMBLE" '/^#/ {next} /^g / {g++} {print > ("ens_in" ((g - 1) % K) ".txt")}' $part.txt
    outs=()
    for ((k = 0; k < ENSEMBLE; k++)); do
      outs+=("ens_out$k.txt")
      m=gen$s.bin
      ((k > 0)) && m=gen${s}_e$k.bin
      "$BIN" synth sample --model "$m" --labels-from "ens_in$k.txt" -o "ens_out$k.txt" \
        --seed "$s" ${SAMPLE_OPTS:-} 2> /dev/null
    done
    # back in the part's order: graph i is graph i div K of output i mod K
    awk -v K="$ENSEMBLE" 'FNR == 1 {f = nfile++; j = 0}
      /^#/ {if (f == 0) hdr = hdr $0 "\n"; next}
      /^g / {j++; n[f] = j}
      {b[f, j] = b[f, j] $0 "\n"}
      END {for (f = 0; f < K; f++) total += n[f]; sub(/graphs=[0-9]+/, "graphs=" total, hdr)
        printf "%s", hdr; for (i = 0; ; i++) {f = i % K; j = int(i / K) + 1;
        if (j > n[f]) break; printf "%s", b[f, j]}}' "${outs[@]}" > "$out"
  done
}
for s in $SEEDS; do
  t=$(cpu /dev/null "$BIN" synth train --data tr.txt -o "gen$s.bin" --epochs "$EPOCHS" --seed "$s" \
    --quiet "$@")
  echo "$s generator epochs $EPOCHS cpu $t" >> results.txt
  : > "gen$s.txt"
  : > "gen_sel$s.txt"
  if ((${ENSEMBLE:-1} > 1)); then ensemble "$s" "$@"; fi
  for ((k = 0; k < ${PER_LABEL:-1}; k++)); do
    ((${ENSEMBLE:-1} > 1)) && break
    for part in tr sel; do
      out=gen$s.txt
      [ $part = sel ] && out=gen_sel$s.txt
      "$BIN" synth sample --model "gen$s.bin" --labels-from $part.txt -o part.txt \
        --seed $((s + 1000 * k)) ${SAMPLE_OPTS:-} 2> /dev/null
      if ((k == 0)); then cat part.txt; else grep -v '^#' part.txt; fi >> "$out" # one header
    done
  done
  "$BIN" synth baseline --data tr.txt --labels-from tr.txt -o "base$s.txt" --seed "$s" 2> /dev/null
  stats layerdag "$s" "gen$s.txt"
  stats daggen "$s" "base$s.txt"
  sur generated "$s" --train "gen$s.txt" --val "gen_sel$s.txt"
  sur real "$s" --train tr.txt --val sel.txt
  ratio "$s"
  sur pretrain "$s" --pretrain "gen$s.txt" --pretrain-val "gen_sel$s.txt" --train tr.txt \
    --val sel.txt ${PRETRAIN_OPTS:-}
  for w in ${AUG_WEIGHTS:-1}; do
    tag=real+gen
    [ "$w" = 1 ] || tag=real+gen@$w
    sur $tag "$s" --train tr.txt --aug "gen$s.txt" --aug-weight "$w" --val sel.txt
  done
done
# Means and sample standard deviations of every numeric field per row kind.
awk '{ k = $2; kinds[k] = 1
       for (i = 3; i < NF; i += 2) if ($(i + 1) ~ /^-?[0-9.eE+-]+$/) {
         key = k SUBSEP $i; n[key]++; s[key] += $(i + 1); q[key] += $(i + 1) * $(i + 1)
         if (!(key in seen)) { seen[key] = 1; order[++m] = key } } }
     END { for (j = 1; j <= m; j++) { split(order[j], a, SUBSEP); key = order[j]
             mu = s[key] / n[key]; v = n[key] > 1 ? (q[key] - n[key] * mu * mu) / (n[key] - 1) : 0
             printf "%-10s %-16s %10.4g +- %.2g  (n %d)\n", a[1], a[2], mu, (v > 0 ? sqrt(v) : 0),
               n[key] } }' \
  results.txt > summary.txt
cat summary.txt
