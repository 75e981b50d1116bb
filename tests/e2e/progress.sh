#!/usr/bin/env bash
# progress.sh — the progress line of long commands (issue 23): one stderr
# line rewritten in place ("\r[etsim WHAT] ...\033[K"), erased before any
# other text and at the end, shown only when stderr is a terminal.  Here it
# is forced on with ETSIM_PROGRESS=1 and ETSIM_PROGRESS_EVERY=0 (a line at
# every update, so what is drawn does not depend on the machine's speed),
# and checked for netsim (packet, with a timeline, and flow level), synth
# train and convert: the lines' wording and order, 100 % last, and
# the same outputs as without it.  Without the variable and with stderr
# piped, with ETSIM_PROGRESS=0, or with --quiet, stderr has nothing extra.
. "$(dirname "$0")/../lib.sh"
EX=$SRC/examples/netsim
export ETSIM_PROGRESS_EVERY=0
unset ETSIM_PROGRESS

# check FILE WHAT BODY_REGEX [LAST_BODY_REGEX]: every progress line in FILE
# is "[etsim WHAT] " + a body matching BODY_REGEX + erase-to-end-of-line;
# shares done never go down; the last line's body matches LAST_BODY_REGEX;
# text other than progress never continues a drawn line; the stream ends
# with the line erased (or with text printed after erasing it).
check() {
  python3 - "$@" 2>&1 <<'PY'
import re, sys
path, what, body = sys.argv[1], sys.argv[2], sys.argv[3]
last_re = sys.argv[4] if len(sys.argv) > 4 else None
data = open(path, encoding="utf-8", newline="").read()  # keep the \r
recs = data.split("\r")
head, lines, prev, drawn = "[etsim %s] " % what, [], -1.0, False
for i, r in enumerate(recs[1:], 1):
    if r.startswith(head):
        if not r.endswith("\x1b[K"):
            sys.exit("line %d does not end by erasing the rest: %r" % (i, r))
        b = r[len(head):-3]
        if not re.fullmatch(body, b):
            sys.exit("line %d: %r does not match %r" % (i, b, body))
        m = re.match(r" *(\d+) % \| ", b)
        if m:
            if float(m.group(1)) < prev:
                sys.exit("line %d: share done went down: %r" % (i, b))
            prev = float(m.group(1))
        lines.append(b)
        drawn = True
    elif r.startswith("\x1b[K"):
        drawn = False  # erased; anything after it starts a clean line
    else:
        sys.exit("text glued to a progress line: %r" % r)
if not lines:
    sys.exit("no progress line in %s" % path)
if drawn:
    sys.exit("the last progress line was left on the screen")
if "\x1b[K" in recs[0]:
    sys.exit("erase before any line was drawn: %r" % recs[0])
if last_re and not re.fullmatch(last_re, lines[-1]):
    sys.exit("last line %r does not match %r" % (lines[-1], last_re))
print(len(lines))
PY
}
ELAPSED='[0-9]+\.[0-9] s(, about [0-9].* left)?'

# --- netsim: the 8-to-1 incast, packet level, with and without a timeline
NB="[ 0-9]{3} % \| [0-9]+\.[0-9]{3} (us|ms) simulated, [0-8] of 8 flows done \| $ELAPSED"
NLAST="100 % \| [0-9.]+ (us|ms) simulated, 8 of 8 flows done \| [0-9]+\.[0-9] s"
for tl in "" "--timeline"; do
  args=(--fct "$T/fct" --pfc "$T/pfc")
  [ -n "$tl" ] && args+=(--timeline "$T/tl.json")
  "$BIN" netsim "${args[@]}" "$EX/incast8_dcqcn.cfg" > "$T/out0" 2> "$T/err0" ||
    fail "netsim $tl exit $?"
  [ -s "$T/err0" ] && fail "netsim $tl: stderr piped, yet: $(cat -v "$T/err0")"
  mv "$T/fct" "$T/fct0"; mv "$T/pfc" "$T/pfc0"; [ -n "$tl" ] && mv "$T/tl.json" "$T/tl0.json"
  ETSIM_PROGRESS=1 "$BIN" netsim "${args[@]}" "$EX/incast8_dcqcn.cfg" > "$T/out1" 2> "$T/err1" ||
    fail "netsim $tl with progress: exit $?"
  n=$(check "$T/err1" netsim "$NB" "$NLAST") || fail "netsim $tl: $n"
  [ "$n" -ge 3 ] || fail "netsim $tl: only $n lines"
  # run in steps of simulated time, the network gives the same results
  cmp -s "$T/fct0" "$T/fct" || fail "netsim $tl: FCT differs with progress"
  cmp -s "$T/pfc0" "$T/pfc" || fail "netsim $tl: PFC differs with progress"
  [ -n "$tl" ] && { cmp -s "$T/tl0.json" "$T/tl.json" || fail "netsim: timeline differs with progress"; }
  diff <(grep -v ' work ' "$T/out0") <(grep -v ' work ' "$T/out1") > /dev/null ||
    fail "netsim $tl: summary differs with progress"
done
# flow level
"$BIN" netsim --backend flow --fct "$T/ffct0" "$EX/incast8.cfg" > /dev/null 2> "$T/err0" || fail "flow exit"
[ -s "$T/err0" ] && fail "netsim flow: stderr piped, yet: $(cat -v "$T/err0")"
ETSIM_PROGRESS=1 "$BIN" netsim --backend flow --fct "$T/ffct1" "$EX/incast8.cfg" > /dev/null \
  2> "$T/err1" || fail "flow with progress exit"
check "$T/err1" netsim "$NB" "$NLAST" > /dev/null || fail "netsim flow: $(check "$T/err1" netsim "$NB")"
cmp -s "$T/ffct0" "$T/ffct1" || fail "netsim flow: FCT differs with progress"
# silenced: --quiet, ETSIM_PROGRESS=0
ETSIM_PROGRESS=1 "$BIN" netsim --quiet "$EX/incast8.cfg" 2> "$T/err" > /dev/null || fail "quiet exit"
[ -s "$T/err" ] && fail "netsim --quiet drew: $(cat -v "$T/err")"
ETSIM_PROGRESS=0 "$BIN" netsim "$EX/incast8.cfg" 2> "$T/err" > /dev/null || fail "=0 exit"
[ -s "$T/err" ] && fail "ETSIM_PROGRESS=0 drew: $(cat -v "$T/err")"

# --- synth train: one line per epoch, between the epoch reports
printf '# two small DAGs\ng 3 2 1.0\n0 1 2\n0 1\n1 2\ng 4 3 2.0\n0 1 2 1\n0 1\n0 2\n2 3\n' > "$T/d.txt"
targs=(--data "$T/d.txt" --epochs 3 --hidden 8 --t-attr 4 --t-edge 4 --seed 3)
"$BIN" synth train "${targs[@]}" -o "$T/m0.bin" 2> "$T/err0" || fail "train exit"
grep -q $'\r' "$T/err0" && fail "synth train: stderr piped, yet a progress line"
ETSIM_PROGRESS=1 "$BIN" synth train "${targs[@]}" -o "$T/m1.bin" 2> "$T/err1" ||
  fail "train with progress exit"
n=$(check "$T/err1" "synth train" "[ 0-9]{3} % \| epoch [1-3] of 3 \| $ELAPSED" \
  "100 % \| epoch 3 of 3 \| [0-9]+\.[0-9] s") || fail "synth train: $n"
[ "$n" -eq 3 ] || fail "synth train: $n lines for 3 epochs"
# the epoch reports themselves are unchanged, each on a line of its own
diff <(grep -o 'epoch .*loss [0-9.]*' "$T/err0") \
  <(tr '\r' '\n' < "$T/err1" | sed 's/^\x1b\[K//' | grep '^epoch' | grep -o 'epoch .*loss [0-9.]*') \
  > /dev/null || fail "synth train: epoch reports differ with progress"
cmp -s "$T/m0.bin" "$T/m1.bin" || fail "synth train: the model differs with progress"
ETSIM_PROGRESS=1 "$BIN" synth train "${targs[@]}" --quiet -o "$T/m2.bin" 2> "$T/err" || fail "quiet train"
[ -s "$T/err" ] && fail "synth train --quiet wrote: $(cat -v "$T/err")"

# --- convert: a 40,000-node JSON trace; the line counts the bytes read
python3 - "$T/big.json" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"version": "1.0.0"}) + "\n")
    for i in range(1, 40001):
        n = {"id": str(i), "name": "op%d" % i, "type": "COMP_NODE", "durationMicros": "5"}
        if i > 1:
            n["dataDeps"] = [str(i - 1)]
        f.write(json.dumps(n) + "\n")
PY
"$BIN" convert --from json "$T/big.json" -o "$T/big0.et" 2> "$T/err0" || fail "convert exit"
[ -s "$T/err0" ] && fail "convert: stderr piped, yet: $(cat -v "$T/err0")"
ETSIM_PROGRESS=1 "$BIN" convert --from json "$T/big.json" -o "$T/big1.et" 2> "$T/err1" ||
  fail "convert with progress exit"
# a 4 MB parse takes well over the 1 ms between redraws, so lines are drawn
n=$(check "$T/err1" convert \
  "$T/big\.json: [0-9.]+ (B|KiB|MiB) read, [0-9.]+ (B|KiB|MiB) written \| [0-9]+\.[0-9] s") ||
  fail "convert: $n"
cmp -s "$T/big0.et" "$T/big1.et" || fail "convert: output differs with progress"
ETSIM_PROGRESS=1 "$BIN" convert --from json --quiet "$T/big.json" -o "$T/big2.et" 2> "$T/err" ||
  fail "convert --quiet exit"
[ -s "$T/err" ] && fail "convert --quiet drew: $(cat -v "$T/err")"

echo "progress: netsim, synth train and convert draw, erase and stay silent as they should"
