#!/usr/bin/env bash
# End-to-end: messages a new user met that said the wrong thing (issue 16):
# each names what is wrong and, where there is a choice, the choices.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

# says CMD... -- PATTERN: exit 2 and PATTERN on stderr.
says() {
  local args=() pat
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  pat=$2
  "${args[@]}" > out 2> err; local rc=$?
  [ $rc -eq 2 ] || fail "${args[*]}: exit $rc ($(cat err))"
  grep -q -- "$pat" err || fail "${args[*]}: '$(cat err)' lacks '$pat'"
}

says "$BIN" netsim --cc foo "$SRC/examples/netsim/single.cfg" -- \
  '--cc: unknown congestion control "foo" (expected none, dcqcn, hpcc, timely or dctcp)'
says "$BIN" shard --model mlperf-dlrm --ranks 0 -- "--ranks: '0' is outside 1 to 1048576"
"$BIN" gen micro --coll all-reduce --size 1KiB --npus 4 -o m --quiet || fail "gen"
sed -i 's/"ranks": "0-3"/"ranks": "-1,0-3"/' m.manifest.json
says "$BIN" validate m -- "classes\[0\].ranks: '-1,0-3' is not a list of ranks"
grep -q 18446744073709551615 err && fail "rank -1 shown unsigned"
# No literal %% where a % is meant.
"$BIN" netsim --help | grep -q "paused % over time" || fail "netsim --help: $("$BIN" netsim --help | grep paused)"
"$BIN" sim --help | grep -q "%%" && fail "sim --help has %%"
printf 'g 3 2 1.0\n0 1 2\n0 1\n1 2\ng 3 2 2.0\n2 1 0\n0 1\n0 2\n' > d.txt
"$BIN" synth train --data d.txt -o m.bin --epochs 1 --hidden 8 2> err > /dev/null || fail "train: $(cat err)"
grep -q "validating on a seeded 10% of them" err || fail "synth train message: $(cat err)"
# sim --help lists every backend; a trace on standard input is read.
"$BIN" sim --help | grep -q "analytical|congestion|flow|packet" || fail "sim --help backends"
"$BIN" gen micro --coll all-reduce --size 1KiB --npus 2 -o s --quiet || fail "gen s"
"$BIN" inspect - < s.c0.et | grep -q "^  nodes            1$" || fail "inspect -"
echo "messages: ok"
