#!/usr/bin/env bash
# Two LLM training jobs on one two-tier Clos: iteration-time slowdown per
# placement policy, at flow and packet level (docs/sim.md, "Several jobs").
#
#   examples/jobs_study/run.sh [OUT_DIR] [ETSIM]     (default: a temporary
#   folder, build/etsim; LEVELS="flow packet" by default)
#
# Fabric: 16 hosts, 4 leaves of 4 hosts at 100 Gb/s, 2 spines at 100 Gb/s
# (etsim gen topo clos2:leaves=4,hosts=4,spines=2): 2:1 oversubscribed at
# the leaves.  Jobs (etsim gen llm, a 2-layer 512-wide decoder, vocabulary
# 4096, sequence 1024): "dp8" is data-parallel on 8 NPUs (one all-reduce of
# the gradients), "tp2" is DP 4 x TP 2 on 8 NPUs.  For each placement policy
# both jobs are placed with it (dp8 first; "pairs" is a list: two NPUs of
# each job under every leaf) and run together, then each alone
# on the same NPUs (--jobs-alone); the table gives both iterations and the
# slowdown.  Prints one row per (level, policy, job).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-$(mktemp -d)}
E=$(realpath "${2:-build/etsim}")
LEVELS=${LEVELS:-flow packet}
mkdir -p "$OUT"
cd "$OUT"

M=(--preset llama3-8b --layers 2 --hidden 512 --heads 8 --kv-heads 8 --ffn 2048 --vocab 4096 --seq 1024)
"$E" gen llm "${M[@]}" --dp 8 -o dp8 >/dev/null
"$E" gen llm "${M[@]}" --dp 4 --tp 2 -o tp2 >/dev/null
"$E" gen topo clos2:leaves=4,hosts=4,spines=2 -o clos16.topo >/dev/null
# the system layer's view: 16 NPUs (the flow and packet levels take the
# links from clos16.topo)
printf 'topology: [ Switch ]\nnpus_count: [ 16 ]\nbandwidth: [ 11.64 ]\nlatency: [ 1000 ]\n' >net.yml
cat >sys.json <<'EOF2'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "collective-optimization": "baseline", "local-mem-bw": 1600,
 "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
 "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}
EOF2

printf '%-7s %-14s %-5s %-34s %12s %12s %9s %7s\n' level policy job npus alone_us shared_us slowdown cpu_s
for level in $LEVELS; do
  # policy label, then each job's placement ("pairs": two NPUs of each
  # job under every leaf, lists)
  for row in "contiguous contiguous contiguous" "strided:2 strided:2 strided:2" \
    "pairs 0,1,4,5,8,9,12,13 2,3,6,7,10,11,14,15" "random:seed=1 random:seed=1 random:seed=1" \
    "random:seed=2 random:seed=2 random:seed=2" "random:seed=3 random:seed=3 random:seed=3"; do
    read -r pol pa pb <<<"$row"
    /usr/bin/time -f '%U %S' -o time.txt "$E" sim --job "dp8@$pa" --job "tp2@$pb" \
      --system sys.json --network net.yml --backend "$level" --net-topology clos16.topo \
      --jobs-alone --json r.json --quiet >/dev/null 2>err.txt || { cat err.txt; exit 1; }
    python3 - r.json time.txt "$level" "$pol" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = open(sys.argv[2]).read().split()[-2:]
for j in r["jobs"]:
    ids = ",".join(map(str, j["npus"]))
    print("%-7s %-14s %-5s %-34s %12.1f %12.1f %8.3fx %7.2f" % (sys.argv[3], sys.argv[4], j["name"],
          ids, j["alone_ps"] / 1e6, j["iteration_ps"] / 1e6, j["slowdown"], float(u) + float(s)))
PY
  done
done
