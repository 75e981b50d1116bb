#!/usr/bin/env bash
# protocol.sh — bench/synth_protocol.sh on a slice of TPU Tile (40
# graphs of val, 30 of test; one epoch, tiny surrogates): with SURR_SEEDS
# every row is the mean of one surrogate per listed seed, each of them the
# surrogate `synth surrogate --seed J` trains alone; the real row is
# trained once per seed and serves every round; the ratio line is
# generated / real; without SURR_SEEDS a row is the one surrogate of seed
# s, as before.
. "$(dirname "$0")/../lib.sh"
need_shared datasets/tpu_tile/val.txt datasets/tpu_tile/test.txt
D="$SH/datasets/tpu_tile"
mkdir -p "$T/d"
awk '/^g /{n++} n<=40' "$D/val.txt" > "$T/d/val.txt"
awk '/^g /{n++} n<=30' "$D/test.txt" > "$T/d/test.txt"
SO="--epochs 3 --hidden 8 --mp-layers 1"
run() { # run DIR SEEDS [env...]: the script on the slice
  local w=$1 seeds=$2
  shift 2
  env TPU_DIR="$T/d" ROWS="generated real" SUR_OPTS="$SO" "$@" "$SRC/bench/synth_protocol.sh" \
    "$BIN" "$w" "$seeds" 1 --hidden 16 --t-attr 16 --t-edge 8 > "$T/log" 2>&1 \
    || fail "synth_protocol.sh $w: $(tail -3 "$T/log")"
}
field() { # field FILE 'FIRST FIELDS' NAME: the value after NAME on the line starting so
  awk -v k="$2" -v f="$3" 'index($0, k " ") == 1 {for (i = 1; i < NF; i++) if ($i == f) print $(i + 1)}' "$1"
}
direct() { # direct TRAIN VAL SEED: Pearson of one surrogate run by hand
  # shellcheck disable=SC2086
  "$BIN" synth surrogate --train "$1" --val "$2" --test "$T/d/test.txt" --seed "$3" --quiet --json $SO |
    sed 's/.*"pearson": \([^,]*\),.*/\1/'
}
near() { awk -v a="$1" -v b="$2" 'BEGIN {d = a - b; exit !(d < 5e-6 && d > -5e-6)}'; }

run "$T/k" "1 2" SURR_SEEDS="1 2"
W="$T/k"
[ "$(wc -l < "$W/surrogates.txt")" -eq 6 ] || fail "6 surrogates expected: $(cat "$W/surrogates.txt")"
[ "$(grep -c ' real sur ' "$W/surrogates.txt")" -eq 2 ] || fail "real row trained more than once a seed"
g11=$(field "$W/surrogates.txt" "1 generated sur 1" pearson)
g12=$(field "$W/surrogates.txt" "1 generated sur 2" pearson)
g22=$(field "$W/surrogates.txt" "2 generated sur 2" pearson)
r2=$(field "$W/surrogates.txt" "1 real sur 2" pearson)
[ "$g11" != "$g12" ] || fail "surrogate seeds 1 and 2 give one Pearson ($g11): the test cannot tell"
near "$g22" "$(direct "$W/gen2.txt" "$W/gen_sel2.txt" 2)" || fail "generated, seed 2: $g22 is not a --seed 2 surrogate"
near "$r2" "$(direct "$W/tr.txt" "$W/sel.txt" 2)" || fail "real, seed 2: $r2 is not a --seed 2 surrogate"
gm=$(field "$W/results.txt" "1 generated" pearson)
near "$gm" "$(awk -v a="$g11" -v b="$g12" 'BEGIN {print (a + b) / 2}')" || fail "mean $gm of $g11, $g12"
[ "$(field "$W/results.txt" "1 generated" nsur)" = 2 ] || fail "nsur"
r1=$(field "$W/results.txt" "1 real" pearson)
[ "$r1" = "$(field "$W/results.txt" "2 real" pearson)" ] || fail "real rows of rounds 1 and 2 differ"
near "$r1" "$(awk -v a="$(field "$W/surrogates.txt" "1 real sur 1" pearson)" -v b="$r2" \
  'BEGIN {print (a + b) / 2}')" || fail "real mean $r1"
near "$(field "$W/results.txt" "1 ratio" pearson)" "$(awk -v a="$gm" -v b="$r1" 'BEGIN {print a / b}')" \
  || fail "ratio line"
grep -q "^ratio  *pearson" "$W/summary.txt" || fail "no ratio in the summary"

# Without SURR_SEEDS: one surrogate with the round's seed, nothing averaged.
run "$T/one" "2"
cmp -s "$W/gen2.txt" "$T/one/gen2.txt" || fail "round 2 sampled differently"
[ "$(field "$T/one/results.txt" "2 generated" pearson)" = "$g22" ] || fail "single-seed row"
[ -z "$(field "$T/one/results.txt" "2 generated" nsur)" ] || fail "nsur without SURR_SEEDS"
[ ! -s "$T/one/surrogates.txt" ] || fail "surrogates.txt without SURR_SEEDS"
# ENSEMBLE=2: graph i of tr.txt and sel.txt sampled by generator i mod 2
# (seeds 2 and 102), in the labels' order, the sets the size of the real ones.
run "$T/e" "2" ENSEMBLE=2
E="$T/e"
[ -s "$E/gen2_e1.bin" ] && grep -q "^2 generator_e1 " "$E/results.txt" || fail "no second generator"
labels() { awk '/^g / {printf "%.12g\n", $4}' "$1"; }
for part in tr sel; do
  out=$E/gen2.txt
  [ $part = sel ] && out=$E/gen_sel2.txt
  cmp -s <(labels "$E/$part.txt") <(labels "$out") || fail "$part: labels not in order"
  grep -q "graphs=$(grep -c '^g ' "$E/$part.txt")\b" "$out" || fail "$part: header count"
  for k in 0 1; do # each generator's graphs, sampled by hand on its share of the labels
    m=$E/gen2.bin
    [ $k = 1 ] && m=$E/gen2_e1.bin
    awk -v k=$k '/^g / {g++} (g - 1) % 2 == k' "$E/$part.txt" > "$T/in$k.txt"
    "$BIN" synth sample --model "$m" --labels-from "$T/in$k.txt" -o "$T/out$k.txt" --seed 2 2> /dev/null
    cmp -s <(grep -v '^#' "$T/out$k.txt") <(awk -v k=$k '/^#/ {next} /^g / {g++} (g - 1) % 2 == k' "$out") \
      || fail "$part: generator $k's graphs"
  done
done
cmp -s "$E/gen2.bin" "$T/one/gen2.bin" || fail "the first generator is not the seed's own"
cmp -s "$E/gen2.bin" "$E/gen2_e1.bin" && fail "the two generators are one"
cmp -s "$E/gen2.txt" "$T/one/gen2.txt" && fail "ENSEMBLE=2 sampled as one generator"
echo "ok"
