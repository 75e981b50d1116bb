#!/usr/bin/env bash
# End-to-end: `etsim gen micro` reproduces ASTRA-sim's microbenchmark files
# (examples/workload/microbenchmarks/*/4npus_1MB) byte for byte with
# --out-format et; in the default manifest form all ranks share one file
# that equals rank 0's reference and differs from rank r's only in the node
# id (ASTRA-sim's script numbers nodes across files); send/recv rings and
# mixes validate; bad usage exits 2 and writes nothing.
. "$(dirname "$0")/../lib.sh"
REF=$SH/traces/astra-sim/microbenchmarks

if [ -d "$REF" ]; then
  for c in all_reduce all_gather reduce_scatter all_to_all; do
    flag=${c//_/-}
    "$BIN" gen micro --coll "$flag" --size 1MiB --npus 4 --out-format et -o "$T/$c" --quiet || fail "gen $c exit $?"
    for r in 0 1 2 3; do
      cmp "$T/$c.$r.et" "$REF/$c/4npus_1MB/$c.$r.et" || fail "$c rank $r differs from ASTRA-sim's file"
    done
    "$BIN" gen micro --coll "$flag" --size 1048576 --npus 4 -o "$T/m_$c" --quiet || fail "gen manifest $c"
    [ "$(ls "$T" | grep -c "^m_$c\.c[0-9]*\.et$")" = 1 ] || fail "$c: identical ranks should share one file"
    grep -q '"ranks": "0-3"' "$T/m_$c.manifest.json" || fail "$c manifest ranks"
    cmp "$T/m_$c.c0.et" "$REF/$c/4npus_1MB/$c.0.et" || fail "$c shared file differs from rank 0"
    for r in 1 2 3; do
      "$BIN" jsonize "$REF/$c/4npus_1MB/$c.$r.et" | sed 's/"id":"[0-9]*",//' > "$T/ref.json"
      "$BIN" jsonize "$T/m_$c.c0.et" > "$T/got.json"
      cmp -s "$T/ref.json" "$T/got.json" || fail "$c rank $r: not equal up to the node id"
      grep -q "\"id\":\"$r\"" <("$BIN" jsonize "$REF/$c/4npus_1MB/$c.$r.et") || fail "reference id is the rank"
    done
  done
else
  skip_part "$REF is absent (set ETSIM_SHARED): no comparison with ASTRA-sim's files"
fi

# A mix with compute, repeated; a send/recv ring; all validate as a set.
"$BIN" gen micro --coll all-reduce,send-recv,broadcast --size 64KiB --npus 8 --count 3 --comp-ns 2500 -o "$T/mix" --quiet || fail "mix exit $?"
"$BIN" validate "$T/mix" > "$T/v" || fail "mix does not validate: $(cat "$T/v")"
grep -q "8 rank(s), " "$T/v" || fail "mix rank count: $(cat "$T/v")"
"$BIN" inspect "$T/mix.c0.et" > "$T/i"
# per rank: 3 x (3 comps + AR + BCAST + send + recv) = 21 nodes
grep -q "nodes            21" "$T/i" || fail "mix node count: $(cat "$T/i")"
grep -q "ALL_REDUCE       3 collectives, 196608 bytes" "$T/i" || fail "mix AR bytes"
grep -q "duration_ns" "$T/i" || fail "2500 ns keeps its exact time"
# inspect reads duration_ns as sim does: 9 comps of 2500 ns in one chain
# (duration_micros alone would say 3 us each, 27 us).
grep -q "critical path    22.500 us" "$T/i" || fail "9 comps of 2.5 us in one chain: $(grep critical "$T/i")"
grep -q "compute time     22.500 us" "$T/i" || fail "compute time: $(grep compute "$T/i")"
# the ring makes every rank distinct
[ "$(ls "$T" | grep -c '^mix\.c[0-9]*\.et$')" = 8 ] || fail "ring ranks are distinct"
"$BIN" jsonize "$T/mix.c3.et" | grep -q '"name":"comm_dst","int32Val":4' || fail "rank 3 sends to 4"

# --dims becomes an involved_dim bool list on every collective.
"$BIN" gen micro --coll reduce-scatter --size 4096 --npus 4 --dims 1,0 -o "$T/dims" --quiet || fail "dims"
"$BIN" jsonize "$T/dims.c0.et" | grep -q '"name":"involved_dim","boolList":{"values":\[true,false\]}' || fail "involved_dim: $("$BIN" jsonize "$T/dims.c0.et")"

# Bad usage: exit 2, nothing written.
for args in "--coll all-reduce --size 1MiB" "--coll frob --size 1 --npus 2" \
            "--coll all-reduce --size 1XB --npus 2" "--coll all-reduce --size 1 --npus 0" \
            "--coll all-reduce --size 1 --npus 2 --out-format xml" \
            "--coll all-reduce --size 1 --npus 2 --dims 1,2"; do
  "$BIN" gen micro $args -o "$T/bad" 2> "$T/e"; rc=$?
  [ $rc -eq 2 ] || fail "'$args' exit $rc"
  grep -q "^etsim: " "$T/e" || fail "'$args' message: $(cat "$T/e")"
done
ls "$T" | grep -q "^bad" && fail "a failed gen left files behind"
"$BIN" gen micro --coll all-reduce --size 1 --npus 2 -o "$T/nodir/x" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] || fail "unwritable prefix exit $rc"
echo "gen_micro: ok"
finish
