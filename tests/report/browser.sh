#!/usr/bin/env bash
# browser.sh — every kind of HTML report, made from the examples, opened in
# headless Chromium (Debian's, installed by scripts/deps.sh) the way a
# reader opens it: no console error, no request leaving the page, every
# expected chart in the DOM with marks drawn, and a full-page screenshot
# that is not blank.  Screenshots go to $ETSIM_REPORT_SHOTS (default
# report-shots/ in the build folder) for a person to look at.
. "$(dirname "$0")/../lib.sh"
CHROMIUM=${CHROMIUM:-chromium}

command -v "$CHROMIUM" >/dev/null ||
  fail "$CHROMIUM is not installed: scripts/deps.sh installs Debian's chromium"
# shellcheck source=tests/report/make_pages.bash
source "$SRC/tests/report/make_pages.bash"
make_pages "$T" || fail "making the pages"

# Large inputs stay small pages: 16,384 NPUs and 100,000 messages.
[ "$(stat -c %s "$T/large_sim.html")" -lt 200000 ] || fail "16,384-NPU page over 200 KB"
[ "$(stat -c %s "$T/large_net.html")" -lt 300000 ] || fail "100,000-message page over 300 KB"
grep -q "16384 NPUs in 128 groups of 128" "$T/large_sim.html" || fail "large sim: no grouping note"
grep -q "100000 completed messages" "$T/large_net.html" || fail "large net: message count"

SIM=sim-breakdown,sim-dims,sim-finish,sim-util,sim-timeline
SHOTS=${ETSIM_REPORT_SHOTS:-$PWD/report-shots}
python3 "$SRC/tests/report/browser_check.py" --chromium "$CHROMIUM" --shots "$SHOTS" \
  "$T/sim.html=$SIM" "$T/sim_files.html=$SIM" \
  "$T/sim_links.html=sim-link-heat,sim-links,sim-util" \
  "$T/netsim.html=net-fct-cdf,net-fct-abs,net-throughput,net-heat,net-queue,net-pause,net-rate" \
  "$T/netsim_clos.html=net-fct-cdf,net-throughput,net-heat,net-queue" \
  "$T/sweep.html=sweep-line,sweep-pareto" \
  "$T/sweep_csv.html=sweep-line,sweep-pareto" \
  "$T/shard.html=shard-cost,shard-hbm,shard-candidates" \
  "$T/replay.html=replay-categories,replay-nodes,replay-dry" \
  "$T/synth.html=synth-layers,synth-nodes,synth-edges,synth-layer_size,synth-in_degree,synth-out_degree,synth-category" \
  "$T/large_sim.html=sim-finish,sim-util,sim-timeline" \
  "$T/large_net.html=net-fct-cdf,net-throughput,net-heat" || fail "browser check"
echo "browser: every report kind loads cleanly; screenshots in $SHOTS"
