#!/usr/bin/env bash
# report_cli.sh — `etsim report`, `sim --report` and `netsim --report` as a
# user runs them: usage errors and bad input give exit 2 and leave no page,
# pages link their timelines relative to where the page is, labels, the
# same bytes on a rerun, nothing on the page that would reach the network,
# and `synth eval --json`'s histograms counted by hand.
. "$(dirname "$0")/../lib.sh"
X=$SRC/examples

# --- usage
"$BIN" report --help | grep -q "sim --json F" || fail "report --help"
"$BIN" report "$T/x.json" 2>"$T/e"; [ $? -eq 2 ] || fail "no -o: exit"
grep -q -- "--output F is required" "$T/e" || fail "no -o: $(cat "$T/e")"
"$BIN" report -o "$T/r.html" 2>"$T/e"; [ $? -eq 2 ] || fail "no input: exit"
"$BIN" report --bogus -o "$T/r.html" x 2>"$T/e"; [ $? -eq 2 ] || fail "unknown option: exit"

# --- bad input: exit 2, the file named, no page left behind
echo '{"foo": 1}' > "$T/foo.json"
"$BIN" report "$T/foo.json" -o "$T/r.html" 2>"$T/e"; [ $? -eq 2 ] || fail "unknown JSON: exit"
grep -q "^etsim: $T/foo.json: not a result etsim report knows" "$T/e" || fail "msg: $(cat "$T/e")"
"$BIN" report "$T/none.json" -o "$T/r.html" 2>"$T/e"; [ $? -eq 2 ] || fail "missing file: exit"
grep -q "none.json" "$T/e" || fail "missing file message: $(cat "$T/e")"
ls "$T" | grep -q 'r.html' && fail "a failed report left a page"

# --- sim --report: the page of the run, linking its timeline from another folder
mkdir -p "$T/run" "$T/pages"
"$BIN" convert --from json "$X/dp_step/dp_step.json" -o "$T/run/dp.et" >/dev/null || fail convert
printf '{"etsim_trace_set": 1, "npus": 8, "classes": [{"file": "dp.et", "ranks": "0-7"}]}\n' \
  > "$T/run/dp.manifest.json"
"$BIN" sim --workload "$T/run/dp" --network "$X/dp_step/network.yml" \
  --system "$X/dp_step/system.json" --timeline "$T/run/tl.json" --json "$T/run/r.json" \
  --report "$T/pages/sim.html" > "$T/out" || fail "sim --report exit $?"
grep -q "sys\[0\] finished, 1284181 cycles" "$T/out" || fail "sim output"
H=$T/pages/sim.html
grep -q '<a href="../run/tl.json">' "$H" || fail "timeline link relative to the page"
grep -q '<dt>iteration</dt><dd>1284 µs</dd>' "$H" || fail "iteration on the page"
grep -q 'data-chart="sim-finish"' "$H" || fail "finish chart"
grep -q '<dt>bytes moved per NPU (mean)</dt><dd>48 MiB</dd>' "$H" || fail "bytes per NPU"
# from the files, with a label: the same figures
"$BIN" report "dp step=$T/run/r.json" "$T/run/tl.json" -o "$T/pages/f.html" || fail "report files"
grep -q 'Simulation: dp step' "$T/pages/f.html" || fail "label"
grep -q '<dt>iteration</dt><dd>1284 µs</dd>' "$T/pages/f.html" || fail "iteration from file"
# the same inputs give the same bytes
"$BIN" report "dp step=$T/run/r.json" "$T/run/tl.json" -o "$T/pages/g.html" || fail "rerun"
cmp -s "$T/pages/f.html" "$T/pages/g.html" || fail "two runs differ"

# --- netsim --report: writes its timeline beside the page unless given one
"$BIN" netsim --cc dcqcn --report "$T/pages/n.html" --quiet "$X/netsim/incast8_pfc.cfg" ||
  fail "netsim --report exit $?"
[ -s "$T/pages/n.timeline.json" ] || fail "netsim --report wrote no timeline"
grep -q '<h3>dcqcn</h3>' "$T/pages/n.html" || fail "netsim page names the CC"
grep -q '<a href="n.timeline.json">' "$T/pages/n.html" || fail "netsim link"
grep -q 'data-chart="net-pause"' "$T/pages/n.html" || fail "PFC pauses drawn"
"$BIN" netsim --report "$T/pages/m.html" --timeline "$T/run/m.json" --quiet \
  "$X/netsim/incast8.cfg" || fail "netsim --report --timeline"
[ -e "$T/pages/m.timeline.json" ] && fail "a second timeline written"
grep -q '<a href="../run/m.json">' "$T/pages/m.html" || fail "netsim given timeline link"
"$BIN" netsim --backend flow --report "$T/pages/fl.html" --quiet "$X/netsim/incast8.cfg" ||
  fail "flow --report"
grep -q "No port counters" "$T/pages/fl.html" || fail "flow level: no counters note"
grep -q 'data-chart="net-fct-cdf"' "$T/pages/fl.html" || fail "flow level: FCT"

# --- nothing reaches the network: no script, no stylesheet or image from
# elsewhere; the only outside link is Perfetto's site, to be followed by hand
for h in "$T"/pages/*.html; do
  grep -q '<script' "$h" && fail "$h has a script"
  if grep -Eo '(src|href)="(https?:)?//[^"]*' "$h" | grep -v '^href="https://ui.perfetto.dev$' |
    grep -q .; then fail "$h links outside: $(grep -Eo '(src|href)="(https?:)?//[^"]*' "$h")"; fi
done

# --- synth eval --json: histograms of two hand-made DAGs.  A: 0->1->2
# (3 layers, 3 nodes, 2 edges, layers of 1, 1, 1; in 0,1,1; out 1,1,0;
# categories 0,1,2); B: two nodes, no edge (1 layer of 2; categories 1,1).
printf '# two DAGs\ng 3 2 1.0\n0 1 2\n0 1\n1 2\ng 2 0 2.0\n1 1\n' > "$T/d.txt"
"$BIN" synth eval --real "$T/d.txt" --generated "$T/d.txt" --json > "$T/ev.json" ||
  fail "synth eval"
python3 - "$T/ev.json" <<'PY' || fail "synth histograms"
import json, sys
h = json.load(open(sys.argv[1]))["histograms"]
want = {"layers": [0, 1, 0, 1], "nodes": [0, 0, 1, 1], "edges": [1, 0, 1],
        "layer_size": [0, 3, 1], "in_degree": [3, 2], "out_degree": [3, 2], "category": [1, 3, 1]}
for k, v in want.items():
    assert h[k]["real"] == v, (k, h[k])
    assert h[k]["generated"] == v, (k, h[k])
    assert h[k]["width"] == 1 and h[k]["lo"] == list(range(len(v))), (k, h[k])
PY
"$BIN" report "$T/ev.json" -o "$T/pages/s.html" || fail "report of synth eval"
grep -q '<title>3: real 50</title>' "$T/pages/s.html" || fail "layers share: 1 of 2 DAGs has 3"
echo "report_cli: ok"
