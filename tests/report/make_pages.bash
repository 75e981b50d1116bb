# make_pages.bash — sourced by the report tests: make_pages OUT writes one
# HTML report of each kind into OUT, from the examples run as a user runs
# them (sim on examples/dp_step, netsim on examples/netsim, shard as in
# examples/dlrm_study, replay of the dp_step trace on 2 MPI ranks, synth
# eval of a baseline against hand-made DAGs, a sweep's points.jsonl made
# here in the row format of `etsim sweep`), plus two large inputs: 16,384
# NPUs and 100,000 network messages.  Needs BIN, SRC and python3.
# Prints nothing on success; on failure prints what failed and returns 1.

make_pages() {
  local O=$1 X=$SRC/examples
  mkdir -p "$O/in"
  local I=$O/in
  mp_fail() { echo "make_pages: $*"; return 1; }

  # --- sim: the default example (scripts/setup.sh), --report and from files
  "$BIN" convert --from json "$X/dp_step/dp_step.json" -o "$I/dp_step.et" >/dev/null ||
    { mp_fail "convert dp_step"; return 1; }
  printf '{"etsim_trace_set": 1, "npus": 8, "classes": [{"file": "dp_step.et", "ranks": "0-7"}]}\n' \
    > "$I/dp_step.manifest.json"
  "$BIN" sim --workload "$I/dp_step" --network "$X/dp_step/network.yml" \
    --system "$X/dp_step/system.json" --timeline "$I/dp_step.timeline.json" \
    --json "$I/dp_step.result.json" --report "$O/sim.html" --quiet >/dev/null ||
    { mp_fail "sim --report"; return 1; }
  "$BIN" report "$I/dp_step.result.json" "$I/dp_step.timeline.json" -o "$O/sim_files.html" ||
    { mp_fail "report of sim files"; return 1; }
  # per-link statistics: the link heat map and the busiest links
  "$BIN" sim --workload "$I/dp_step" --network "$X/dp_step/network.yml" \
    --system "$X/dp_step/system.json" --link-stats --report "$O/sim_links.html" --quiet >/dev/null ||
    { mp_fail "sim --link-stats --report"; return 1; }

  # --- netsim: the 8-to-1 incast with PFC under each congestion control
  local cc args=()
  for cc in none dcqcn hpcc timely dctcp; do
    "$BIN" netsim --cc $cc --timeline "$I/incast_$cc.json" --json "$X/netsim/incast8_pfc.cfg" \
      > "$I/incast_$cc.sum.json" || { mp_fail "netsim $cc"; return 1; }
    args+=("$cc=$I/incast_$cc.json" "$cc=$I/incast_$cc.sum.json")
  done
  "$BIN" report --title "8-to-1 incast, 1 MB buffers" "${args[@]}" -o "$O/netsim.html" ||
    { mp_fail "report of netsim files"; return 1; }
  "$BIN" netsim --cc hpcc --report "$O/netsim_clos.html" --quiet "$X/netsim/clos16_ring.cfg" ||
    { mp_fail "netsim --report"; return 1; }

  # --- shard, as examples/dlrm_study plans 16 GPUs (2 hosts)
  printf 'topology: [ Switch, Switch ]\nnpus_count: [ 8, 2 ]\nbandwidth: [ 150, 12.5 ]\nlatency: [ 500, 2000 ]\n' \
    > "$I/net16.yml"
  cat > "$I/sys16.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
 "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 3350,
 "all-reduce-implementation": ["ring", "ring"], "reduce-scatter-implementation": ["ring", "ring"],
 "all-gather-implementation": ["ring", "ring"], "all-to-all-implementation": ["direct", "direct"]}
JSON
  "$BIN" shard --model mlperf-dlrm --ranks 16 --ranks-per-host 8 --network "$I/net16.yml" \
    --system "$I/sys16.json" --backend congestion --finalists 3 --json "$I/cands16.json" \
    -o "$I/plan16.json" --quiet || { mp_fail "shard"; return 1; }
  "$BIN" report "$I/plan16.json" "$I/cands16.json" -o "$O/shard.html" ||
    { mp_fail "report of shard files"; return 1; }

  # --- replay: the dp_step trace on 2 ranks, its compute as recorded
  # durations (busy loops: a CPU cannot run the GPU's GEMMs in 120 us) and
  # its all-reduces given a recorded time, so both kinds can be compared
  python3 - "$X/dp_step/dp_step.json" "$I/dp_busy.json" <<'PY' || { mp_fail "busy trace"; return 1; }
import json, sys
out = []
for line in open(sys.argv[1]):
    n = json.loads(line)
    if "attr" in n and "type" in n:
        n["attr"] = [a for a in n["attr"] if a["name"] not in ("num_ops", "tensor_size")]
        if n["type"] == "COMM_COLL_NODE":
            n["durationMicros"] = "20000"
    out.append(json.dumps(n))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
  "$BIN" convert --from json "$I/dp_busy.json" -o "$I/dp_busy.et" >/dev/null ||
    { mp_fail "convert dp_busy"; return 1; }
  printf '{"etsim_trace_set": 1, "npus": 2, "classes": [{"file": "dp_busy.et", "ranks": "0-1"}]}\n' \
    > "$I/dp2.manifest.json"
  # (Open MPI's own allocations outlive the run: under AddressSanitizer
  # the ranks check no leaks, as tests/replay/test_mpi.c runs them)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    "$BIN" replay --np 2 --iterations 2 --json --csv "$I/replay.csv" "$I/dp2" > "$I/replay.json" ||
    { mp_fail "replay"; return 1; }
  "$BIN" replay --dry-run --json "$I/dp2" > "$I/replay_dry.json" || { mp_fail "replay --dry-run"; return 1; }
  "$BIN" report "$I/replay.json" "$I/replay.csv" "$I/replay_dry.json" -o "$O/replay.html" ||
    { mp_fail "report of replay files"; return 1; }

  # --- synth: a baseline's samples against 40 hand-made layered DAGs
  python3 - "$I/real.txt" <<'PY' || { mp_fail "DAG data"; return 1; }
import random, sys
r = random.Random(3)
out = ["# layered random DAGs for the report test"]
for g in range(40):
    layers = [r.randint(1, 4) for _ in range(r.randint(2, 7))]
    nodes, edges, first = [], [], 0
    for li, w in enumerate(layers):
        ids = list(range(first, first + w))
        if li:
            prev = list(range(first - layers[li - 1], first))
            for v in ids:
                for u in r.sample(prev, r.randint(1, len(prev))):
                    edges.append((u, v))
        nodes += ids
        first += w
    out.append("g %d %d %.3f" % (len(nodes), len(edges), r.uniform(1, 9)))
    out.append(" ".join(str(r.randrange(5)) for _ in nodes))
    out += ["%d %d" % e for e in edges]
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
  "$BIN" synth baseline --data "$I/real.txt" -n 40 --seed 2 -o "$I/gen.txt" 2>/dev/null ||
    { mp_fail "synth baseline"; return 1; }
  "$BIN" synth eval --real "$I/real.txt" --generated "$I/gen.txt" --json > "$I/eval.json" ||
    { mp_fail "synth eval"; return 1; }
  "$BIN" report "$I/eval.json" -o "$O/synth.html" || { mp_fail "report of synth eval"; return 1; }

  # --- sweep: points as `etsim sweep` (issue 22) writes them: points.jsonl
  # rows {"point", "id", "status", "error", "axes": {...}, "results": {...}}
  # (a failed point has every result null), and points.csv, flat, with
  # sweep.json beside it naming the axes and the results
  mkdir -p "$I/sweep"
  python3 - "$I/sweep" <<'PY' || { mp_fail "points"; return 1; }
import csv, json, os, sys
d, rows = sys.argv[1], []
names = ["iteration_us", "exposed_comm_us", "comm_bytes", "cost_per_hour"]
for backend in ("analytical", "congestion"):
    for tp in (1, 2, 4, 8):
        for bw in (25, 50, 100, 200, 400):
            comm = 64e3 / bw * 8 / tp + (30 * 8 / tp if backend == "congestion" else 0)
            res = {"iteration_us": round(1000 / tp + 40 * tp + 0.6 * comm, 3),
                   "exposed_comm_us": round(0.6 * comm, 3), "comm_bytes": 2 ** 26 // tp,
                   "cost_per_hour": 10 + 0.05 * bw}
            err = None
            if (backend, tp, bw) == ("congestion", 8, 25):
                res, err = {k: None for k in names}, "sim: deadlock at t=0 ns"
            rows.append({"point": len(rows), "id": "%016x" % (len(rows) * 2654435761),
                         "status": "failed" if err else "ok", "error": err,
                         "axes": {"backend": backend, "tp": tp, "scaleout_gbps": bw},
                         "results": res})
with open(os.path.join(d, "points.jsonl"), "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in rows))
with open(os.path.join(d, "points.csv"), "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["point", "id", "status", "error", "backend", "tp", "scaleout_gbps"] + names)
    for r in rows:
        w.writerow([r["point"], r["id"], r["status"], r["error"] or ""] +
                   list(r["axes"].values()) + ["" if r["results"][k] is None else r["results"][k]
                                               for k in names])
with open(os.path.join(d, "sweep.json"), "w") as f:
    json.dump({"points": len(rows), "columns": {"axes": ["backend", "tp", "scaleout_gbps"],
                                                "results": names}}, f)
PY
  "$BIN" report "$I/sweep/points.jsonl" --pareto iteration_us,cost_per_hour -o "$O/sweep.html" ||
    { mp_fail "report of sweep points"; return 1; }
  "$BIN" report "$I/sweep/points.csv" -o "$O/sweep_csv.html" ||
    { mp_fail "report of sweep points.csv"; return 1; }
  grep -q "as sweep.json beside the points names them" "$O/sweep_csv.html" ||
    { mp_fail "points.csv: sweep.json not read"; return 1; }
  grep -q ">scaleout (Gb/s)<" "$O/sweep.html" || { mp_fail "sweep: no unit on the x axis"; return 1; }

  # --- large: 16,384 NPUs (one trace for all), and 100,000 messages
  "$BIN" gen micro --coll all-reduce --size 64MiB --npus 1 -o "$I/ar" >/dev/null ||
    { mp_fail "gen micro"; return 1; }
  printf 'topology: [ Ring, FullyConnected, Switch ]\nnpus_count: [ 8, 8, 256 ]\nbandwidth: [ 200, 100, 50 ]\nlatency: [ 50, 500, 2000 ]\n' \
    > "$I/net16k.yml"
  cat > "$I/sys3.json" <<'JSON'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "collective-optimization": "baseline", "local-mem-bw": 1600,
 "all-reduce-implementation": ["ring", "direct", "ring"],
 "all-gather-implementation": ["ring", "direct", "ring"],
 "reduce-scatter-implementation": ["ring", "direct", "ring"],
 "all-to-all-implementation": ["ring", "direct", "ring"]}
JSON
  "$BIN" sim --workload "$I/ar.c0.et" --network "$I/net16k.yml" --system "$I/sys3.json" \
    --json "$I/big.json" --report "$O/large_sim.html" --quiet >/dev/null ||
    { mp_fail "sim of 16,384 NPUs"; return 1; }
  "$BIN" gen topo star:hosts=64 -o "$I/star64.topo" >/dev/null || { mp_fail "gen topo"; return 1; }
  python3 - "$I/many.flows" <<'PY' || { mp_fail "flows"; return 1; }
import random, sys
r = random.Random(7)
n = 100000
lines = [str(n)]
for i in range(n):
    s = r.randrange(64)
    d = r.randrange(63)
    d += d >= s
    lines.append("%d %d 3 100 %d %.9f" % (s, d, r.choice((1000, 2000, 4000)), i * 1e-7))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
  printf 'TOPOLOGY_FILE star64.topo\nFLOW_FILE many.flows\nCC_MODE 1\n' > "$I/many.cfg"
  "$BIN" netsim --timeline "$I/many.json" --quiet "$I/many.cfg" ||
    { mp_fail "netsim of 100,000 flows"; return 1; }
  "$BIN" report "dcqcn, 100k flows=$I/many.json" -o "$O/large_net.html" ||
    { mp_fail "report of 100,000 messages"; return 1; }
  return 0
}
