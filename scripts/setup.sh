#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# default example: a data-parallel training step (examples/dp_step) converted
# from JSON to Chakra ET, shared by 8 ranks through a manifest, validated, and
# simulated on a 2-D platform (4 NPUs per node fully connected, 2 nodes on a
# switch), writing a Perfetto timeline and a JSON report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
mkdir -p out/example
rm -f out/example/dp_step.[0-9]*.et
build/etsim convert --from json examples/dp_step/dp_step.json -o out/example/dp_step.et
cat > out/example/dp_step.manifest.json <<'JSON'
{"etsim_trace_set": 1, "npus": 8, "classes": [{"file": "dp_step.et", "ranks": "0-7"}]}
JSON
echo "== etsim validate out/example/dp_step"
build/etsim validate out/example/dp_step
echo "== etsim sim out/example/dp_step"
build/etsim sim --workload out/example/dp_step --network examples/dp_step/network.yml \
  --system examples/dp_step/system.json --timeline out/example/dp_step.timeline.json \
  --json out/example/dp_step.result.json
echo "timeline: out/example/dp_step.timeline.json (open it in https://ui.perfetto.dev)"
