#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# default example (a data-parallel training step on 4 ranks: convert it from
# JSON to Chakra ET, validate the rank set, print its summary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
mkdir -p out/example
for r in 0 1 2 3; do
  build/etsim convert --from json examples/dp_step/dp_step.json -o out/example/dp_step.$r.et
done
echo "== etsim validate out/example/dp_step"
build/etsim validate out/example/dp_step
echo "== etsim inspect out/example/dp_step"
build/etsim inspect out/example/dp_step
