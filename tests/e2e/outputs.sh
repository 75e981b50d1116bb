#!/usr/bin/env bash
# End-to-end: what a run writes, and what it must not.  A report lost on a
# full stdout is a failure; an output path equal to an input is refused and
# the input kept; a smaller --out-format et set leaves no ranks of a larger
# earlier one behind; a failed last output of `sim` leaves the earlier
# outputs as they were; temporaries of a killed run are removed (by the
# signal, or by the next run writing the same output); a folder or a missing
# file given as input is named as such.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

"$BIN" gen micro --coll all-reduce --size 1MiB --npus 4 -o ar --quiet || fail "gen"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n' > net.yml
cat > sys.json <<'EOF'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"],
 "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware",
 "local-mem-bw": 1600}
EOF
printf '# d\ng 3 2 1.0\n0 1 2\n0 1\n1 2\ng 3 2 2.0\n2 1 0\n0 1\n0 2\n' > dags.txt
SIM=(sim --workload ar --system sys.json --network net.yml)
"$BIN" "${SIM[@]}" > sim.out || fail "sim exit $?"

# stdout full: exit 2 and a message, for every command that reports there.
for c in "inspect ar" "validate ar" "${SIM[*]}" "netsim --json $SRC/examples/netsim/single.cfg" \
  "shard --model mlperf-dlrm --ranks 8" "replay --dry-run ar" "jsonize ar.c0.et" \
  "synth eval --real dags.txt --generated dags.txt" "diff ar ar" "diff --json ar ar.c0.et" \
  "edit ar.c0.et -o - --scale-time 2" "--help"; do
  # shellcheck disable=SC2086
  "$BIN" $c > /dev/full 2> err; rc=$?
  [ $rc -eq 2 ] || fail "'$c > /dev/full' exit $rc"
  grep -q "write error: No space left on device" err || fail "'$c > /dev/full' message: $(cat err)"
done

# An output equal to an input is refused and the input is left as it was.
cp ar.c0.et keep.et
expect_kept() { # name file cmd...
  local name=$1 f=$2
  shift 2
  "$@" > /dev/null 2> err; local rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc"
  grep -q "is also an input of this run; refusing to replace it" err || fail "$name: $(cat err)"
  ls ./*.tmp.* > /dev/null 2>&1 && fail "$name: a temporary was left"
  cmp -s "$f" "saved.$name" || fail "$name: the input changed"
}
cp ar.c0.et saved.jsonize
expect_kept jsonize ar.c0.et "$BIN" jsonize ar.c0.et -o ar.c0.et
"$BIN" jsonize ar.c0.et -o c0.json || fail "jsonize"
cp c0.json saved.convert
expect_kept convert c0.json "$BIN" convert --from json c0.json -o c0.json
cp sys.json saved.sim
expect_kept sim sys.json "$BIN" "${SIM[@]}" --json sys.json
# sim reads rank files whole and shares identical ones: each is still an
# input; so is a what-if spec file.
cp ar.c0.et saved.sim-rank
expect_kept sim-rank ar.c0.et "$BIN" "${SIM[@]}" --json ar.c0.et
echo '{"1": 0.5}' > speed.json
cp speed.json saved.sim-speed
expect_kept sim-speed speed.json "$BIN" "${SIM[@]}" --npu-speed speed.json --json speed.json
"$BIN" "${SIM[@]}" --json res.json > /dev/null || fail "sim --json"
cp res.json saved.report
expect_kept report res.json "$BIN" report res.json -o res.json
cp dags.txt saved.synth
expect_kept synth dags.txt "$BIN" synth baseline --data dags.txt -n 2 -o dags.txt
# edit writes "<out>.part.<pid>" and renames: the rename must not land on
# an input (the trace itself, a rank of a per-rank set, a profile).
cp ar.c0.et saved.edit
expect_kept edit ar.c0.et "$BIN" edit ar.c0.et -o ar.c0.et --scale-time 2
"$BIN" gen micro --coll all-reduce --size 4096 --npus 2 --out-format et -o pr --quiet || fail "gen pr"
cp pr.1.et saved.edit-set
expect_kept edit-set pr.1.et "$BIN" edit pr -o pr --scale-time 2
echo "all_reduce_4npus_1MB,5" > prof.csv
cp prof.csv saved.edit-profile
expect_kept edit-profile prof.csv "$BIN" edit ar.c0.et -o prof.csv --profile prof.csv
ls ./*.part.* > /dev/null 2>&1 && fail "a refused edit left its .part files"

# A smaller per-rank set replaces a larger one whole.
"$BIN" gen micro --coll all-gather --size 4096 --npus 8 --out-format et -o small --quiet || fail "gen 8"
"$BIN" gen micro --coll all-gather --size 4096 --npus 4 --out-format et -o small --quiet || fail "gen 4"
[ -e small.4.et ] && fail "ranks 4-7 of the larger set are left"
"$BIN" validate small > v || fail "validate small: $(cat v)"
grep -q "small: 4 rank(s)" v || fail "smaller set: $(cat v)"

# sim with several outputs: a failed last write leaves the earlier ones.
echo old > r.json
echo old > r.csv
"$BIN" "${SIM[@]}" --json r.json --csv r.csv --timeline nodir/t.json > /dev/null 2> err && fail "timeline into a missing folder"
grep -q "nodir/t.json: cannot create" err || fail "timeline message: $(cat err)"
[ "$(cat r.json)" = old ] && [ "$(cat r.csv)" = old ] || fail "a failed sim replaced some outputs"
ls ./*.tmp.* > /dev/null 2>&1 && fail "a failed sim left temporaries"
"$BIN" "${SIM[@]}" --json r.json --csv r.csv --timeline t.json > /dev/null || fail "sim outputs"
grep -q '"npus"' r.json && [ -s t.json ] && [ "$(cat r.csv)" != old ] || fail "outputs written"

# Temporaries: a run killed by a signal removes its own; what a run killed
# with SIGKILL left (its pid gone) goes when the same output is written.
mkfifo fifo
# More nodes (4 MB) than the reader's buffers hold, then a pause with the
# output half-written.
python3 -c '
import sys, time
sys.stdout.write("{}\n" + "".join("{\"id\":\"%d\",\"name\":\"n\",\"type\":\"COMP_NODE\"}\n" % i
                                 for i in range(1, 100000)))
sys.stdout.flush()
time.sleep(30)' > fifo &
feeder=$!
"$BIN" convert --from json fifo -o slow.et 2> /dev/null &
conv=$!
for _ in $(seq 50); do ls slow.et.tmp.* > /dev/null 2>&1 && break; sleep 0.1; done
ls slow.et.tmp.* > /dev/null 2>&1 || fail "convert did not open its temporary"
kill -TERM $conv
wait $conv 2> /dev/null
kill $feeder 2> /dev/null
wait $feeder 2> /dev/null
ls slow.et.tmp.* > /dev/null 2>&1 && fail "SIGTERM left $(ls slow.et.tmp.*)"
sh -c 'exit 0' &
dead=$!
wait $dead
touch "c0.json.tmp.$dead" "other.json.tmp.$dead"
"$BIN" jsonize ar.c0.et -o c0.json || fail "jsonize over a stale temporary"
[ -e "c0.json.tmp.$dead" ] && fail "a dead run's temporary of c0.json is left"
[ -e "other.json.tmp.$dead" ] || fail "another output's temporary was removed"

# Inputs that are folders or missing are named as such.
mkdir adir
"$BIN" "${SIM[@]/sys.json/adir}" > /dev/null 2> err; rc=$?
[ $rc -eq 2 ] && grep -q "^etsim: adir: is a folder, not a file" err || fail "folder as system: $rc $(cat err)"
"$BIN" "${SIM[@]}" --npu-speed adir > /dev/null 2> err; rc=$?
[ $rc -eq 2 ] && grep -q "^etsim: --npu-speed: adir: is a folder, not a file$" err ||
  fail "folder as --npu-speed: $rc $(cat err)"
"$BIN" inspect adir > /dev/null 2> err; rc=$?
[ $rc -eq 2 ] && grep -q "adir: is a folder" err || fail "folder as trace: $rc $(cat err)"
"$BIN" gen dlrm --preset criteo-kaggle --plan missing.json -o d 2> err; rc=$?
[ $rc -eq 2 ] && grep -q "^etsim: missing.json: cannot open: No such file or directory$" err ||
  fail "missing plan: $rc $(cat err)"
printf '' > empty.json
"$BIN" gen dlrm --preset criteo-kaggle --plan empty.json -o d 2> err
grep -q -- "-1" err && fail "empty plan: $(cat err)"

# A prefix whose files start past rank 0 (one PyTorch rank converted) is
# named in the message; a gap in the ranks is warned about.
"$BIN" gen micro --coll all-reduce --size 4096 --npus 4 --out-format et -o gap --quiet || fail "gen gap"
mkdir one && mv gap.1.et one/r.1.et
"$BIN" validate one/r > v 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "one/r: no one/r.0.et or one/r.manifest.json, but one/r.1.et: a rank set starts at rank 0" v ||
  fail "set starting at rank 1: $rc $(cat v)"
"$BIN" validate gap > v 2>&1 || fail "gap: $(cat v)"
grep -q "warning: gap: gap.2.et is left out: rank 1 has no file, so the set is ranks 0 to 0" v ||
  fail "gap warning: $(cat v)"
echo "outputs: ok"
