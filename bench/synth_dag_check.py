#!/usr/bin/env python3
"""Checks on text DAG files (the TPU Tile format of docs/synth.md) behind the
figures of docs/synth.md, "What limits the generated-data surrogate":

  synth_dag_check.py stats FILE...           size vs label, parents per node
  synth_dag_check.py dups TRAIN FILE...      repeated structures (WL hash)
  synth_dag_check.py pred PREDICTIONS        Pearson of `synth surrogate
                                             --predictions`, raw and clipped
  synth_dag_check.py twins TRAIN TEST PRED...  Pearson on TEST's DAGs with a
                                             structural twin in TRAIN, without
                                             one, and all (PRED: --predictions
                                             files scored on TEST alone)

Structures are compared by a 4-round Weisfeiler-Lehman hash over node
categories and both edge directions: equal hashes are a proxy for
isomorphism, not a proof.  Standard library only.
"""
import hashlib
import math
import sys


def read(path):
    """The DAGs of a text file: (nodes, label, categories, edges)."""
    graphs, lines, i = [], open(path).read().split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("g "):
            _, n, e, y = lines[i].split()
            n, e = int(n), int(e)
            x = lines[i + 1].split()
            edges = [tuple(map(int, lines[i + 2 + j].split())) for j in range(e)]
            graphs.append((n, float(y), x, edges))
            i += 2 + e
        else:
            i += 1
    return graphs


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sa = math.sqrt(sum((v - ma) ** 2 for v in a))
    sb = math.sqrt(sum((v - mb) ** 2 for v in b))
    return sum((u - ma) * (v - mb) for u, v in zip(a, b)) / (sa * sb)


def wl_hash(g, rounds=4):
    n, _, x, edges = g
    par, ch = [[] for _ in range(n)], [[] for _ in range(n)]
    for s, d in edges:
        par[d].append(s)
        ch[s].append(d)
    c = list(x)
    for _ in range(rounds):
        c = [hashlib.md5((c[v] + "|" + ",".join(sorted(c[u] for u in par[v])) + "|" +
                          ",".join(sorted(c[u] for u in ch[v]))).encode()).hexdigest()[:12]
             for v in range(n)]
    return hashlib.md5((str(n) + str(len(edges)) + ",".join(sorted(c))).encode()).hexdigest()


def stats(paths):
    for p in paths:
        gs = read(p)
        indeg_nodes = two = over6 = 0
        top = 0
        for n, _, _, edges in gs:
            deg = [0] * n
            for _, d in edges:
                deg[d] += 1
            indeg_nodes += n
            two += sum(1 for v in deg if v == 2)
            over6 += max(deg, default=0) > 6
            top = max(top, max(deg, default=0))
        r = pearson([math.log(g[1]) for g in gs], [math.log(g[0]) for g in gs])
        print(f"{p}: {len(gs)} DAGs, mean {sum(g[0] for g in gs) / len(gs):.1f} nodes, "
              f"Pearson(log label, log nodes) {r:.3f}, nodes with 2 parents "
              f"{100 * two / indeg_nodes:.2f}%, DAGs with a node of > 6 parents {over6}, "
              f"most parents {top}")


def dups(train, paths):
    tr = read(train)
    seen = {}
    for i, g in enumerate(tr):
        seen.setdefault(wl_hash(g), []).append(i)
    print(f"{train}: {len(seen)} distinct structures in {len(tr)} DAGs")
    for p in paths:
        gs = read(p)
        hs = [wl_hash(g) for g in gs]
        hit = [i for i, h in enumerate(hs) if h in seen]
        near = sum(1 for i in hit
                   if any(abs(math.log(tr[j][1] / gs[i][1])) < 0.2 for j in seen[hs[i]]))
        print(f"{p}: {len(hit)} of {len(gs)} ({100 * len(hit) / len(gs):.1f}%) repeat a "
              f"structure of {train} ({near} with a label within 20%); "
              f"{len(set(hs))} distinct")


def pred(path):
    rows = [line.split() for line in open(path) if line.strip()]
    for name in sorted({r[0] for r in rows}):
        y = [float(r[2]) for r in rows if r[0] == name]
        p = [float(r[3]) for r in rows if r[0] == name]
        clip = [min(max(v, 0.0), 30.0) for v in p]
        print(f"{name}: {len(y)} DAGs, Pearson {pearson(y, p):.3f}, "
              f"predictions clipped to [0, 30] {pearson(y, clip):.3f}")


def twins(train, test, preds):
    seen = {wl_hash(g) for g in read(train)}
    has = [wl_hash(g) in seen for g in read(test)]
    for path in preds:
        rows = [line.split() for line in open(path) if line.strip()]
        if len(rows) != len(has):
            sys.exit(f"{path}: {len(rows)} predictions, {test} has {len(has)} DAGs")
        out = []
        for name, keep in (("with a twin", True), ("without", False), ("all", None)):
            sel = [r for r, h in zip(rows, has) if keep is None or h == keep]
            y = [float(r[2]) for r in sel]
            p = [float(r[3]) for r in sel]
            out.append(f"{name} ({len(sel)}) {pearson(y, p):.3f}")
        print(f"{path}: " + ", ".join(out))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("stats", "dups", "pred", "twins"):
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "stats":
        stats(sys.argv[2:])
    elif cmd == "dups":
        dups(sys.argv[2], sys.argv[3:])
    elif cmd == "twins" and len(sys.argv) >= 5:
        twins(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "pred":
        pred(sys.argv[2])
    else:
        sys.exit(__doc__)
