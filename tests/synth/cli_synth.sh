#!/usr/bin/env bash
# cli_synth.sh — `etsim synth` end to end, as a user runs it: train on a
# slice of TPU Tile, sample text DAGs and evaluate them; train on a real
# Chakra trace, sample traces and check them with `etsim validate`; bad
# input gives a one-line error and exit 2.
. "$(dirname "$0")/../lib.sh"

# --- usage and bad input (no shared data needed) ---
"$BIN" synth --help | grep -q "synth train" || fail "synth --help"
"$BIN" synth frobnicate 2>"$T/e"; [ $? -eq 2 ] || fail "unknown subcommand exit"
"$BIN" synth train -o "$T/m.bin" 2>"$T/e"; [ $? -eq 2 ] || fail "train without --data"
printf '# x\ng 3 2 1.0\n0 1 2\n0 1\n1 9\n' > "$T/bad.txt"
"$BIN" synth train --data "$T/bad.txt" -o "$T/m.bin" 2>"$T/e"
[ $? -eq 2 ] || fail "malformed dataset exit"
grep -q "bad.txt:5: edge 1 -> 9" "$T/e" || fail "malformed dataset message: $(cat "$T/e")"
printf '# x\ng 2 2 1.0\n0 1\n0 1\n1 0\n' > "$T/cyc.txt"
"$BIN" synth train --data "$T/cyc.txt" -o "$T/m.bin" 2>"$T/e"
[ $? -eq 2 ] || fail "cyclic dataset exit"
grep -q "cyc.txt:2: graph has a cycle" "$T/e" || fail "cycle message: $(cat "$T/e")"
[ -e "$T/m.bin" ] && fail "a failed run left a model file"

need_shared datasets/tpu_tile/val.txt traces/chakra/feeder_tests_trace.tar.gz
D="$SH/datasets/tpu_tile"
# The first 60 graphs of val and test.
awk '/^g /{n++} n<=60' "$D/val.txt" > "$T/train.txt"
awk '/^g /{n++} n<=60' "$D/test.txt" > "$T/real.txt"
"$BIN" synth train --data "$T/train.txt" -o "$T/m.bin" --epochs 2 --hidden 16 --t-attr 16 --t-edge 8 \
  --seed 5 --quiet || fail "train"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 -o "$T/g.txt" 2>/dev/null || fail "sample"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 -o "$T/g2.txt" 2>/dev/null || fail "sample 2"
cmp -s <(grep -v '^#' "$T/g.txt") <(grep -v '^#' "$T/g2.txt") || fail "same seed, different samples"
[ "$(grep -c '^g ' "$T/g.txt")" -eq 20 ] || fail "sample count"
# Largest in-degree of a text DAG file, and its nodes without a parent.
maxin() { awk '/^g /{g++; e = $3; n = $2; getline; next} e > 0 {d[g, $2]++; if (d[g, $2] > m) m = d[g, $2]; e--}
  END {print m + 0}' "$1"; }
# The 2-epoch model over-connects: some node gets 3 or more parents.
[ "$(maxin "$T/g.txt")" -ge 3 ] || fail "expected an over-connected sample: $(maxin "$T/g.txt")"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --max-parents 2 -o "$T/gp.txt" 2>/dev/null \
  || fail "sample --max-parents"
[ "$(maxin "$T/gp.txt")" -eq 2 ] || fail "--max-parents 2: in-degree $(maxin "$T/gp.txt")"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/gp.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--max-parents: invalid DAGs"
# --parents-from: per category, the in-degree a tenth of the file's nodes
# with a parent reach.  catdeg FILE prints "category in-degree" per node
# with a parent; caps FILE the cap per category from that rule.
catdeg() { awk '/^g /{n = $2; e = $3; getline; for (i = 0; i < n; i++) x[i] = $(i + 1); delete d
  for (k = 0; k < e; k++) {getline; d[$2]++} for (v in d) print x[v], d[v]}' "$1"; }
caps() { catdeg "$1" | awk '{w[$1]++; for (k = 1; k <= $2; k++) a[$1, k]++}
  END {for (c in w) {cap = 1; for (k = 2; (c, k) in a; k++) if (a[c, k] >= 0.1 * w[c]) cap = k; print c, cap}}'; }
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --parents-from "$T/train.txt" -o "$T/gpf.txt" \
  2>/dev/null || fail "sample --parents-from"
over=$(awk 'NR == FNR {cap[$1] = $2; next} ($1 in cap) && $2 > cap[$1]' <(caps "$T/train.txt") \
  <(catdeg "$T/gpf.txt") | wc -l)
[ "$over" -eq 0 ] || fail "--parents-from: $over nodes above their category's cap"
[ "$(caps "$T/train.txt" | awk '$2 > 1' | wc -l)" -ge 1 ] || fail "train.txt: no category capped above 1"
[ "$(maxin "$T/gpf.txt")" -ge 2 ] || fail "--parents-from train.txt: no node kept two parents"
# A file whose nodes all have one parent caps every category at 1.
awk '/^g /{n = $2; e = $3; print "g", n, (n > 1 ? n - 1 : 0), $4; getline; print
  for (k = 0; k < e; k++) getline; for (v = 1; v < n; v++) print v - 1, v}' "$T/train.txt" > "$T/chain.txt"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --parents-from "$T/chain.txt" -o "$T/gpc.txt" \
  2>/dev/null || fail "sample --parents-from chains"
[ "$(maxin "$T/gpc.txt")" -eq 1 ] || fail "--parents-from chains: in-degree $(maxin "$T/gpc.txt")"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/gpc.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--parents-from: invalid DAGs"
"$BIN" synth sample --model "$T/m.bin" -n 1 --parents-from "$T/none.txt" -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] && grep -q "none.txt" "$T/e" || fail "--parents-from a missing file: $(cat "$T/e")"
printf 'g 2 1 1.0\n0 999\n0 1\n' > "$T/bigcat.txt"
"$BIN" synth sample --model "$T/m.bin" -n 1 --parents-from "$T/bigcat.txt" -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] && grep -q "bigcat.txt: DAG 0 node 1: category 999" "$T/e" \
  || fail "--parents-from an unknown category: $(cat "$T/e")"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --edge-temp 1 -o "$T/gt1.txt" 2>/dev/null \
  || fail "sample --edge-temp 1"
cmp -s <(grep -v '^#' "$T/g.txt") <(grep -v '^#' "$T/gt1.txt") || fail "--edge-temp 1 is not the default"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --edge-temp 0.05 -o "$T/gt.txt" 2>/dev/null \
  || fail "sample --edge-temp 0.05"
e1=$(awk '/^g /{s += $3} END {print s}' "$T/g.txt")
e2=$(awk '/^g /{s += $3} END {print s}' "$T/gt.txt")
[ "$e2" -lt "$e1" ] || fail "--edge-temp 0.05: $e2 edges, $e1 at 1"
"$BIN" synth sample --model "$T/m.bin" -n 1 --edge-temp 0 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "--edge-temp 0 exit"
# --attr-temp: 1 is the default; 0.05 draws each node's categories near
# the attribute denoiser's most probable ones, so a sample holds fewer
# distinct categories (summed over the samples).
ncat() { awk '/^g /{getline; delete c; for (i = 1; i <= NF; i++) c[$i] = 1; for (k in c) s++} END {print s}' "$1"; }
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --attr-temp 1 -o "$T/ga1.txt" 2>/dev/null \
  || fail "sample --attr-temp 1"
cmp -s <(grep -v '^#' "$T/g.txt") <(grep -v '^#' "$T/ga1.txt") || fail "--attr-temp 1 is not the default"
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --attr-temp 0.05 -o "$T/ga.txt" 2>/dev/null \
  || fail "sample --attr-temp 0.05"
[ "$(ncat "$T/ga.txt")" -lt "$(ncat "$T/g.txt")" ] \
  || fail "--attr-temp 0.05: $(ncat "$T/ga.txt") distinct categories, $(ncat "$T/g.txt") at 1"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/ga.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--attr-temp 0.05: invalid DAGs"
"$BIN" synth sample --model "$T/m.bin" -n 1 --attr-temp 0 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] && grep -q "attr-temp" "$T/e" || fail "--attr-temp 0: $(cat "$T/e")"
# Classifier-free guidance: w = 0 is the default byte for byte; a model
# trained with label dropout samples other, valid DAGs with w = 2.
"$BIN" synth sample --model "$T/m.bin" -n 20 --seed 2 --guidance 0 -o "$T/gw0.txt" 2>/dev/null \
  || fail "sample --guidance 0"
cmp -s <(grep -v '^#' "$T/g.txt") <(grep -v '^#' "$T/gw0.txt") || fail "--guidance 0 is not the default"
# train_ld OUT [OPTION...]: the small label-dropout model md.bin, with OPTIONs
train_ld() {
  local o=$1
  shift
  "$BIN" synth train --data "$T/train.txt" -o "$o" --epochs 2 --hidden 16 --t-attr 16 \
    --t-edge 8 --seed 5 --label-drop 0.2 "$@" --quiet
}
train_ld "$T/md.bin" || fail "train --label-drop"
cmp -s "$T/m.bin" "$T/md.bin" && fail "--label-drop 0.2 trained the same model"
"$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
  -o "$T/gw2.txt" 2>/dev/null || fail "sample --guidance 2"
"$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 -o "$T/gw.txt" \
  2>/dev/null || fail "sample, label-drop model"
cmp -s <(grep -v '^#' "$T/gw.txt") <(grep -v '^#' "$T/gw2.txt") && fail "--guidance 2 changed nothing"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/gw2.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--guidance 2: invalid DAGs"
"$BIN" synth sample --model "$T/m.bin" -n 1 --guidance 21 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "--guidance 21 exit"
# --guidance-edge: the edge denoiser's own weight; equal to --guidance it
# samples as without it, 0 under --guidance 2 gives other, valid DAGs.
"$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
  --guidance-edge 2 -o "$T/ge2.txt" 2>/dev/null || fail "sample --guidance-edge 2"
cmp -s <(grep -v '^#' "$T/gw2.txt") <(grep -v '^#' "$T/ge2.txt") \
  || fail "--guidance-edge 2 differs from --guidance 2 alone"
"$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
  --guidance-edge 0 -o "$T/ge0.txt" 2>/dev/null || fail "sample --guidance-edge 0"
cmp -s <(grep -v '^#' "$T/gw2.txt") <(grep -v '^#' "$T/ge0.txt") && fail "--guidance-edge 0 changed nothing"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/ge0.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--guidance-edge 0: invalid DAGs"
"$BIN" synth sample --model "$T/m.bin" -n 1 --guidance-edge 21 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "--guidance-edge 21 exit"
# Size matching (--match-size K): 0 and 1 sample as without it; with 8
# draws a DAG the node counts come closer to those of --labels-from's
# graphs; without --labels-from it is refused.
for k in 0 1; do
  "$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
    --match-size $k -o "$T/gm$k.txt" 2>/dev/null || fail "sample --match-size $k"
  cmp -s <(grep -v '^#' "$T/gw2.txt") <(grep -v '^#' "$T/gm$k.txt") \
    || fail "--match-size $k is not the default"
done
"$BIN" synth sample --model "$T/md.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
  --match-size 8 -o "$T/gm8.txt" 2>/dev/null || fail "sample --match-size 8"
sizegap() { # total |node count - train.txt's| over the DAGs of $1
  paste <(awk '/^g /{print $2}' "$T/train.txt") <(awk '/^g /{print $2}' "$1") \
    | awk '{d += $1 > $2 ? $1 - $2 : $2 - $1} END {print d + 0}'
}
[ "$(grep -c '^g ' "$T/gm8.txt")" -eq 60 ] || fail "--match-size 8: sample count"
g0=$(sizegap "$T/gw2.txt") g8=$(sizegap "$T/gm8.txt")
[ "$g8" -lt "$g0" ] || fail "--match-size 8: size gap $g8, $g0 without"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/gm8.txt" --surrogate none --json \
  | grep -q '"validity": 1,' || fail "--match-size 8: invalid DAGs"
"$BIN" synth sample --model "$T/md.bin" -n 3 --match-size 4 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "--match-size without --labels-from exit"
"$BIN" synth train --data "$T/train.txt" -o "$T/x.bin" --label-drop 1.5 2>"$T/e"
[ $? -eq 2 ] || fail "--label-drop 1.5 exit"
# option_model FLAG NAME VERSION: md.bin's model with FLAG is a version
# VERSION file whose guided samples are valid and differ from md.bin's.
ver() { od -An -tu4 -j8 -N4 "$1" | tr -d ' '; }
option_model() {
  train_ld "$T/$2.bin" $1 || fail "train $1" # $1 may hold several options
  [ "$(ver "$T/$2.bin")" = "$3" ] || fail "$1 model: version $(ver "$T/$2.bin")"
  "$BIN" synth sample --model "$T/$2.bin" --labels-from "$T/train.txt" --seed 2 --guidance 2 \
    -o "$T/g$2.txt" 2>/dev/null || fail "sample, $1 model"
  cmp -s <(grep -v '^#' "$T/g$2.txt") <(grep -v '^#' "$T/gw2.txt") && fail "$1 changed nothing"
  "$BIN" synth eval --real "$T/real.txt" --generated "$T/g$2.txt" --surrogate none --json \
    | grep -q '"validity": 1,' || fail "$1: invalid DAGs"
}
# FiLM (--film): a version-8 model (a model without it stays version 7).
[ "$(ver "$T/md.bin")" = 7 ] || fail "model without --film: version $(ver "$T/md.bin")"
option_model --film mf 8
# Attention within the new layer (--attn): a version-13 model, same checks.
option_model --attn mat 13
# Weight averaging (--ema D): 0 is the default byte for byte; 0.9 keeps
# another model, still version 7; 1 is refused.
train_ld "$T/ma0.bin" --ema 0 || fail "train --ema 0"
cmp -s "$T/md.bin" "$T/ma0.bin" || fail "--ema 0 is not the default"
train_ld "$T/ma.bin" --ema 0.9 || fail "train --ema 0.9"
cmp -s "$T/md.bin" "$T/ma.bin" && fail "--ema 0.9 kept the same model"
[ "$(ver "$T/ma.bin")" = 7 ] || fail "--ema model: version $(ver "$T/ma.bin")"
"$BIN" synth train --data "$T/train.txt" -o "$T/x.bin" --ema 1 2>"$T/e"
[ $? -eq 2 ] || fail "--ema 1 exit"
# The edge label scale (--label-edge): a version-9 model, same checks.
option_model --label-edge me 9
# Node-count conditioning (--size-cond): a version-10 model, same checks.
# Sampled with --labels-from, DAG i is conditioned on that file's graph i's
# node count: the same labels from a label file (no node counts, so the
# training mean) give other DAGs, where for md.bin they give the same.
option_model --size-cond ms 10
awk '/^g /{i++; print "g" i, $4}' "$T/train.txt" > "$T/lab.txt"
for mm in md ms; do
  "$BIN" synth sample --model "$T/$mm.bin" --label-file "$T/lab.txt" --seed 2 --guidance 2 \
    -o "$T/gl$mm.txt" 2>/dev/null || fail "sample --label-file, $mm.bin"
done
cmp -s <(grep -v '^#' "$T/gw2.txt") <(grep -v '^#' "$T/glmd.txt") \
  || fail "--label-file differs from --labels-from for a model without --size-cond"
cmp -s <(grep -v '^#' "$T/gms.txt") <(grep -v '^#' "$T/glms.txt") \
  && fail "--size-cond: --labels-from's node counts changed nothing"
# The stop head's conditioning alone (--size-cond-stop): a version-11
# model, other DAGs than --size-cond's, and --labels-from's node counts
# again change them; with --size-cond it is a usage error.
option_model --size-cond-stop mss 11
cmp -s <(grep -v '^#' "$T/gmss.txt") <(grep -v '^#' "$T/gms.txt") \
  && fail "--size-cond-stop sampled as --size-cond"
"$BIN" synth sample --model "$T/mss.bin" --label-file "$T/lab.txt" --seed 2 --guidance 2 \
  -o "$T/glmss.txt" 2>/dev/null || fail "sample --label-file, mss.bin"
cmp -s <(grep -v '^#' "$T/gmss.txt") <(grep -v '^#' "$T/glmss.txt") \
  && fail "--size-cond-stop: --labels-from's node counts changed nothing"
"$BIN" synth train --data "$T/train.txt" -o "$T/x.bin" --size-cond --size-cond-stop 2>"$T/e"
[ $? -eq 2 ] || fail "--size-cond --size-cond-stop exit"
grep -q "exclude each other" "$T/e" || fail "--size-cond --size-cond-stop message: $(cat "$T/e")"
# Successor messages (--succ): a version-12 model, same checks; with
# --size-cond too, still version 12, and its DAGs differ from --size-cond's.
option_model --succ msu 12
option_model "--succ --size-cond" msus 12
cmp -s <(grep -v '^#' "$T/gmsus.txt") <(grep -v '^#' "$T/gms.txt") \
  && fail "--succ --size-cond sampled as --size-cond"
# Both --succ and --attn: version 13 (the flag word holds 256 and 512),
# its DAGs differ from either option's alone.
option_model "--succ --attn" msa 13
[ "$(od -An -tu4 -j36 -N4 "$T/msa.bin" | tr -d ' ')" = $((1 + 256 + 512)) ] \
  || fail "--succ --attn flag word $(od -An -tu4 -j36 -N4 "$T/msa.bin")"
for o in msu mat; do
  cmp -s <(grep -v '^#' "$T/gmsa.txt") <(grep -v '^#' "$T/g$o.txt") \
    && fail "--succ --attn sampled as $o.bin"
done
# The bidirectional encoder per layer step (--bidir): a version-14 model
# (the flag word holds 1024), same checks, DAGs other than --succ's; with
# --succ it is a usage error.
option_model --bidir mbd 14
[ "$(od -An -tu4 -j36 -N4 "$T/mbd.bin" | tr -d ' ')" = $((1 + 1024)) ] \
  || fail "--bidir flag word $(od -An -tu4 -j36 -N4 "$T/mbd.bin")"
cmp -s <(grep -v '^#' "$T/gmbd.txt") <(grep -v '^#' "$T/gmsu.txt") && fail "--bidir sampled as --succ"
"$BIN" synth train --data "$T/train.txt" -o "$T/x.bin" --succ --bidir 2>"$T/e"
[ $? -eq 2 ] || fail "--succ --bidir exit"
grep -q "exclude each other" "$T/e" || fail "--succ --bidir message: $(cat "$T/e")"
# A label file cycled to -n DAGs carries no node counts either: the same
# DAGs as the label written out that many times (the training mean).
head -n 1 "$T/lab.txt" > "$T/lab1s.txt"
awk '{for (i = 1; i <= 3; i++) print $1 "_" i, $2}' "$T/lab1s.txt" > "$T/lab3s.txt"
"$BIN" synth sample --model "$T/ms.bin" --label-file "$T/lab1s.txt" -n 3 --seed 2 \
  -o "$T/gc1.txt" 2>/dev/null || fail "sample a cycled --label-file, ms.bin"
"$BIN" synth sample --model "$T/ms.bin" --label-file "$T/lab3s.txt" --seed 2 \
  -o "$T/gc3.txt" 2>/dev/null || fail "sample --label-file of three lines, ms.bin"
cmp -s <(grep -v '^#' "$T/gc1.txt") <(grep -v '^#' "$T/gc3.txt") \
  || fail "--size-cond: a cycled --label-file conditioned on other node counts"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/g.txt" --real-train "$T/train.txt" \
  --sur-epochs 20 --sur-hidden 16 --sur-mp-layers 2 --json > "$T/ev.json" || fail "eval"
grep -q '"validity": 1,' "$T/ev.json" || fail "validity not 1: $(cat "$T/ev.json")"
grep -q '"surrogate_real": {"pearson"' "$T/ev.json" || fail "no real surrogate row"
# The generated file is itself valid training data.
"$BIN" synth train --data "$T/g.txt" -o "$T/m2.bin" --epochs 1 --hidden 8 --quiet \
  || fail "train on generated"
"$BIN" synth baseline --data "$T/train.txt" -n 20 -o "$T/b.txt" 2>/dev/null || fail "baseline"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/b.txt" --surrogate ridge | grep -q "validity            1.0000" \
  || fail "baseline validity"
"$BIN" synth baseline --data "$T/train.txt" --method empirical -n 20 -o "$T/b2.txt" 2>/dev/null \
  || fail "empirical baseline"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/b2.txt" --surrogate none --json | grep -q '"validity": 1,' \
  || fail "empirical baseline validity"
"$BIN" synth baseline --data "$T/train.txt" --method nope -n 2 -o "$T/b3.txt" 2>/dev/null
[ $? -eq 2 ] || fail "bad --method exit"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/b.txt" --surrogate nope 2>"$T/e"
[ $? -eq 2 ] || fail "bad --surrogate exit"
# The BiMPNN surrogate on its own: real training graphs, then the same with
# generated ones added; selection on held-out real graphs either way.
"$BIN" synth surrogate --train "$T/train.txt" --test "$T/real.txt" --epochs 30 --hidden 16 \
  --mp-layers 2 --seed 3 --quiet --json > "$T/s1.json" || fail "surrogate"
grep -q '"n_train": 54, "n_aug": 0, "n_test": 60' "$T/s1.json" || fail "surrogate counts: $(cat "$T/s1.json")"
"$BIN" synth surrogate --train "$T/train.txt" --aug "$T/g.txt" --aug-weight 0.5 --test "$T/real.txt" \
  --epochs 30 --hidden 16 --mp-layers 2 --seed 3 --quiet --json > "$T/s2.json" || fail "surrogate --aug"
grep -q '"n_train": 54, "n_aug": 20, "n_test": 60' "$T/s2.json" || fail "aug counts: $(cat "$T/s2.json")"
"$BIN" synth surrogate --train "$T/train.txt" --test "$T/real.txt" --epochs 30 --hidden 16 \
  --mp-layers 2 --seed 3 --quiet --json > "$T/s3.json" || fail "surrogate again"
cmp -s "$T/s1.json" "$T/s3.json" || fail "surrogate not deterministic"
# --predictions: one line per test DAG with its own label, and the Pearson
# of those lines is the one printed.
"$BIN" synth surrogate --train "$T/train.txt" --test "$T/real.txt" --epochs 30 --hidden 16 \
  --mp-layers 2 --seed 3 --quiet --json --predictions "$T/pred.txt" > "$T/s4.json" \
  || fail "surrogate --predictions"
cmp -s "$T/s1.json" "$T/s4.json" || fail "--predictions changed the scores"
[ "$(wc -l < "$T/pred.txt")" -eq 60 ] || fail "predictions: $(wc -l < "$T/pred.txt") lines"
cmp -s <(awk '{print $3 + 0}' "$T/pred.txt") <(awk '/^g /{print $4 + 0}' "$T/real.txt") \
  || fail "predictions: labels differ from real.txt's"
p=$(awk '{n++; x += $3; y += $4; xx += $3 * $3; yy += $4 * $4; xy += $3 * $4}
  END {printf "%.4f", (xy - x * y / n) / sqrt((xx - x * x / n) * (yy - y * y / n))}' "$T/pred.txt")
[ "$p" = "$(sed 's/.*"pearson": \([^,]*\),.*/\1/' "$T/s4.json" | awk '{printf "%.4f", $1}')" ] \
  || fail "predictions: Pearson $p, printed $(cat "$T/s4.json")"
# Pre-training then fine-tuning: with zero fine-tune epochs the regressor is
# the one trained on the pre-training graphs alone (same predictions to the
# last digit); a real fine-tune moves it.
"$BIN" synth surrogate --train "$T/g.txt" --val "$T/real.txt" --test "$T/real.txt" --epochs 30 \
  --hidden 16 --mp-layers 2 --seed 3 --quiet --predictions "$T/pg.txt" > /dev/null \
  || fail "surrogate on generated"
pt() { "$BIN" synth surrogate --pretrain "$T/g.txt" --pretrain-val "$T/real.txt" --pretrain-epochs 30 \
  --train "$T/train.txt" --val "$T/real.txt" --test "$T/real.txt" --hidden 16 --mp-layers 2 \
  --seed 3 --quiet "$@"; }
pt --epochs 0 --predictions "$T/pt0.txt" --save "$T/pre.sur" > /dev/null \
  || fail "surrogate --pretrain --epochs 0"
cmp -s "$T/pg.txt" "$T/pt0.txt" || fail "--epochs 0 after --pretrain is not the pre-trained model"
pt --epochs 30 --predictions "$T/pt30.txt" > /dev/null || fail "surrogate --pretrain"
cmp -s "$T/pt0.txt" "$T/pt30.txt" && fail "the fine-tune changed nothing"
# The saved weights: --init with zero epochs predicts as the saved
# regressor, and fine-tuning them is the one-command fine-tune.
it() { "$BIN" synth surrogate --init "$T/pre.sur" --train "$T/train.txt" --val "$T/real.txt" \
  --test "$T/real.txt" --seed 3 --quiet "$@"; }
it --epochs 0 --predictions "$T/in0.txt" > /dev/null || fail "surrogate --init --epochs 0"
cmp -s "$T/pt0.txt" "$T/in0.txt" || fail "--init: not the saved regressor's predictions"
it --epochs 30 --predictions "$T/in30.txt" > /dev/null || fail "surrogate --init"
cmp -s "$T/pt30.txt" "$T/in30.txt" || fail "--init then fine-tune differs from --pretrain"
"$BIN" synth surrogate --init "$T/g.txt" --train "$T/train.txt" --test "$T/real.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "--init of a non-surrogate exit"
grep -q "g.txt: not an etsim surrogate" "$T/e" || fail "--init message: $(cat "$T/e")"
"$BIN" synth surrogate --train "$T/train.txt" --test "$T/real.txt" --epochs 0 2>"$T/e"
[ $? -eq 2 ] || fail "--epochs 0 without --pretrain exit"
grep -q "needs --pretrain or --init" "$T/e" || fail "--epochs 0 message: $(cat "$T/e")"
"$BIN" synth eval --real "$T/real.txt" --generated "$T/real.txt" --sur-epochs 0 2>"$T/e"
[ $? -eq 2 ] || fail "eval --sur-epochs 0 exit (no pre-training there)"
grep -q "sur-epochs" "$T/e" || fail "eval --sur-epochs 0 message: $(cat "$T/e")"
"$BIN" synth surrogate --train "$T/train.txt" --test "$T/real.txt" --pretrain "$T/bad.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "bad --pretrain data exit"
grep -q "bad.txt:5" "$T/e" || fail "bad --pretrain data message: $(cat "$T/e")"
"$BIN" synth surrogate --train "$T/bad.txt" --test "$T/real.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "surrogate bad data exit"
grep -q "bad.txt:5" "$T/e" || fail "surrogate bad data message: $(cat "$T/e")"
# Labels from a file: one DAG per label.
awk '/^g /{n++} n<=7' "$T/real.txt" > "$T/seven.txt"
"$BIN" synth sample --model "$T/m.bin" --labels-from "$T/seven.txt" -o "$T/l.txt" 2>/dev/null \
  || fail "sample --labels-from"
[ "$(grep -c '^g ' "$T/l.txt")" -eq 7 ] || fail "one DAG per label"

# Damaged model files.
head -c 100 "$T/m.bin" > "$T/trunc.bin"
"$BIN" synth sample --model "$T/trunc.bin" -n 1 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "truncated model exit"
grep -q "truncated" "$T/e" || fail "truncated model message: $(cat "$T/e")"
printf 'ETSYNTH\0\x0f\0\0\0' > "$T/v15.bin"
"$BIN" synth sample --model "$T/v15.bin" -n 1 -o "$T/x.txt" 2>"$T/e"
[ $? -eq 2 ] || fail "version exit"
grep -q "version 15, this etsim reads versions 5 to 14" "$T/e" || fail "version message: $(cat "$T/e")"

# --- Chakra traces in, Chakra traces out ---
TGZ="$SH/traces/chakra/feeder_tests_trace.tar.gz"
tar xzf "$TGZ" -C "$T" || fail "tar"
"$BIN" synth train --data "$T/tests/data/chakra.0.et" --max-nodes 60 --label 46.1 \
  -o "$T/mt.bin" --epochs 1 --hidden 16 --t-attr 8 --t-edge 4 --quiet || fail "train on trace"
"$BIN" synth sample --model "$T/mt.bin" -n 3 --seed 1 -o "$T/syn" 2>/dev/null || fail "sample traces"
for i in 0 1 2; do
  "$BIN" validate "$T/syn-$i" > "$T/v.txt" || fail "validate syn-$i: $(cat "$T/v.txt")"
done
"$BIN" synth eval --real "$T/tests/data/chakra.0.et" --generated "$T/syn-0.0.et" --surrogate none --json \
  > "$T/evt.json" || fail "eval traces"
grep -q '"validity": 1,' "$T/evt.json" || fail "trace validity: $(cat "$T/evt.json")"
grep -q '"attr_validity": 1,' "$T/evt.json" || fail "trace attribute validity: $(cat "$T/evt.json")"
# Several generated workloads, each with its own label: synthetic traces
# validate, simulate on every NPU of an 8-NPU platform, and carry none of
# the training traces' node names.
mkdir -p "$T/w"
"$BIN" gen llm --layers 2 --hidden 1024 --heads 8 --kv-heads 8 --ffn 4096 --vocab 32000 --seq 1024 \
  --dp 8 --out-format et -o "$T/w/a" --quiet || fail "gen llm a"
"$BIN" gen llm --layers 4 --hidden 2048 --heads 16 --kv-heads 16 --ffn 8192 --vocab 32000 \
  --seq 2048 --dp 8 --zero 3 --out-format et -o "$T/w/b" --quiet || fail "gen llm b"
"$BIN" gen micro --coll all-reduce,all-gather --size 1MiB --npus 8 --count 3 --comp-ns 100000 \
  --out-format et -o "$T/w/c" --quiet || fail "gen micro"
mkdir -p "$T/tr"
for s in a b c; do cp "$T/w/$s.0.et" "$T/tr/$s.et"; done
printf '# name label\na.et 1350006\nb.et 4.2e6\nc.et 2.1e6\n' > "$T/lab.txt"
"$BIN" synth train --data "$T/tr" --label-file "$T/lab.txt" -o "$T/mw.bin" --epochs 3 --hidden 16 \
  --t-attr 8 --t-edge 4 --quiet || fail "train with --label-file"
"$BIN" synth sample --model "$T/mw.bin" --label-file "$T/lab.txt" -o "$T/sw" --seed 2 2>"$T/e" \
  || fail "sample --label-file"
# Sampled attributes obey the trace rules (offending channels redrawn).
grep -q "attribute rules hold in 3 of 3 DAG(s)" "$T/e" || fail "attribute rules: $(cat "$T/e")"
"$BIN" synth sample --model "$T/mw.bin" --label-file "$T/lab.txt" -o "$T/sw_np" --seed 2 \
  --no-project 2>"$T/e" || fail "sample --no-project"
grep -q "broke an attribute rule\$" "$T/e" || fail "no-project report: $(cat "$T/e")"
C="$SH/configs/astra-sim"
for i in 0 1 2; do
  "$BIN" validate "$T/sw-$i" > "$T/v.txt" || fail "validate sw-$i: $(cat "$T/v.txt")"
  if [ -r "$C/network/HGX-H100-validated.yml" ]; then
    "$BIN" sim --workload "$T/sw-$i.0.et" --system "$C/system/HGX-H100-validated.json" \
      --network "$C/network/HGX-H100-validated.yml" --quiet > "$T/sim.txt" 2>&1 \
      || fail "sim sw-$i: $(cat "$T/sim.txt")"
    [ "$(grep -c 'finished' "$T/sim.txt")" -eq 8 ] || fail "sim sw-$i: not 8 NPUs"
  fi
done
names() { for f in "$@"; do "$BIN" jsonize "$f" | sed -n 's/^{\("id":"[0-9]*",\)\{0,1\}"name":"\([^"]*\)".*/\2/p'; done | sort -u; }
names "$T"/tr/*.et > "$T/n_real.txt"
names "$T"/sw-*.0.et > "$T/n_syn.txt"
[ -s "$T/n_real.txt" ] && [ -s "$T/n_syn.txt" ] || fail "no node names read"
[ -z "$(comm -12 "$T/n_real.txt" "$T/n_syn.txt")" ] || fail "synthetic traces reuse names: $(comm -12 "$T/n_real.txt" "$T/n_syn.txt" | head -3)"
# A trace without a line in the label file is an error naming both.
printf 'a.et 1\n' > "$T/lab1.txt"
"$BIN" synth train --data "$T/tr" --label-file "$T/lab1.txt" -o "$T/mx.bin" --epochs 1 2>"$T/e"
[ $? -eq 2 ] || fail "missing label exit"
grep -q "no label for b.et in .*lab1.txt" "$T/e" || fail "missing label message: $(cat "$T/e")"
# Two label components ('NAME VALUE VALUE2': time and communication
# share): the model conditions on both, sampling takes both from the file
# (or --label2), a one-component model refuses them, and every line must
# give as many values.
printf '# name time share\na.et 1350006 0.05\nb.et 4.2e6 0.4\nc.et 2.1e6 0.2\n' > "$T/lab2.txt"
"$BIN" synth train --data "$T/tr" --label-file "$T/lab2.txt" -o "$T/m2.bin" --epochs 2 --hidden 16 \
  --t-attr 8 --t-edge 4 --quiet || fail "train with two label components"
"$BIN" synth sample --model "$T/m2.bin" --label-file "$T/lab2.txt" -o "$T/s2" --seed 2 2>"$T/e" \
  || fail "sample with two label components: $(cat "$T/e")"
for i in 0 1 2; do "$BIN" validate "$T/s2-$i" > /dev/null || fail "validate s2-$i"; done
"$BIN" synth sample --model "$T/m2.bin" -n 2 --label 2e6 --label2 0.3 -o "$T/s2l" 2>"$T/e" \
  || fail "sample --label2: $(cat "$T/e")"
"$BIN" synth sample --model "$T/mw.bin" --label-file "$T/lab2.txt" -o "$T/nope" 2>"$T/e"
[ $? -eq 2 ] || fail "one-component model, two values: exit"
grep -q "mw.bin conditions on one label component, .*lab2.txt gives 2" "$T/e" \
  || fail "one-component model message: $(cat "$T/e")"
printf 'a.et 1 0.1\nb.et 2\nc.et 3 0.3\n' > "$T/lab3.txt"
"$BIN" synth train --data "$T/tr" --label-file "$T/lab3.txt" -o "$T/mx.bin" --epochs 1 2>"$T/e"
[ $? -eq 2 ] || fail "uneven label file exit"
grep -q "lab3.txt:2: 1 value(s), the lines before have 2" "$T/e" \
  || fail "uneven label file message: $(cat "$T/e")"
printf 'a.et 1 0.1 7\n' > "$T/lab4.txt"
"$BIN" synth train --data "$T/tr" --label-file "$T/lab4.txt" -o "$T/mx.bin" --epochs 1 2>"$T/e"
[ $? -eq 2 ] || fail "three values exit"
grep -q "lab4.txt:1: expected 'NAME VALUE \[VALUE2\]'" "$T/e" || fail "three values: $(cat "$T/e")"
# A text model cannot write traces.
"$BIN" synth sample --model "$T/m.bin" -n 1 -o "$T/nope" 2>"$T/e"
[ $? -eq 2 ] || fail "text model to trace exit"
echo "ok"
