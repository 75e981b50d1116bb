/*
 * graph.c — the edit's graph work between the scan and the write pass.
 *
 * Operations are applied to the skeleton in the order given.  A node
 * "exists" at op k once it is a file node or was inserted by an earlier
 * op, and is "alive" while no earlier op dropped it; closures and joins
 * walk every node, alive or not, because a path through a dropped node
 * still orders its ends (that is what bridging keeps).
 *
 *   - keep/drop: the nodes whose predicate bit is set, with their
 *     ancestors and/or descendants (breadth-first over parents/children);
 *   - ids, iter: ranges of output ids and of iterations (iter.c); these are
 *     cuts, and a kept node remembers the dependencies a cut removed;
 *   - ranks: sends and receives to dropped ranks;
 *   - insert: an inserted node whose anchor was dropped earlier goes too;
 *   - concat/repeat: each later part of a join runs after the one before
 *     it: by the cut dependencies it remembers, when they name nodes of the
 *     parts before (so cutting and joining again gives back the original
 *     graph), or else every root of the part waits for every sink of the
 *     previous part (through one zero-time METADATA join node when that
 *     would take more than 4,096 edges).
 *
 * Then the bridges: a dropped node stands for the set of its nearest
 * alive ancestors (over data and control edges together), computed once
 * per dropped node in post-order and kept in one pool; an alive node that
 * depended on a dropped one depends on that set instead, with the kind of
 * its own edge.  Dependencies a node has twice after bridging are written
 * once.
 */
#include "job_int.h"

#include <stdio.h>
#include <string.h>

#define JOIN_EDGE_LIMIT 4096

static int oom(ed_jrt_t *J) { return etsim_error_set(J->err, ETSIM_ENOMEM, "out of memory"); }

static const char *job_path(const ed_jrt_t *J) { return J->p->files[J->j->segs[0].file].path; }

static int alive_at(const ed_jrt_t *J, size_t s, size_t k) {
  return ed_exists(J, s, k) && J->dead[s] == ED_ALIVE;
}

/* ------------------------------------------------------------ adjacency */

/* Extra edges (joins, restored cuts) by the node that depends. */
static int index_extras(ed_jrt_t *J) {
  if (J->xoff && J->x_built == J->n_xe && J->c_built_n == J->n) return 0;
  etsim_free(J->xoff);
  etsim_free(J->xsrc);
  J->xoff = etsim_calloc(J->n + 1, sizeof *J->xoff);
  J->xsrc = etsim_malloc((J->n_xe ? J->n_xe : 1) * sizeof *J->xsrc);
  if (!J->xoff || !J->xsrc) return oom(J);
  for (size_t i = 0; i < J->n_xe; i++) J->xoff[J->xe[i].dst + 1]++;
  for (size_t s = 0; s < J->n; s++) J->xoff[s + 1] += J->xoff[s];
  uint32_t *fill = etsim_malloc((J->n + 1) * sizeof *fill);
  if (!fill) return oom(J);
  memcpy(fill, J->xoff, (J->n + 1) * sizeof *fill);
  for (size_t i = 0; i < J->n_xe; i++)
    J->xsrc[fill[J->xe[i].dst]++] = J->xe[i].src | (J->xe[i].ctrl ? ED_EDGE_CTRL : 0);
  etsim_free(fill);
  J->x_built = J->n_xe;
  return 0;
}

/* Skeleton nodes appended after the scan (join points) have no CSR
 * dependencies: off[] is extended for them. */
static uint32_t csr_end(const ed_jrt_t *J, size_t s) { return s < J->n_scan ? J->off[s + 1] : 0; }
static uint32_t csr_begin(const ed_jrt_t *J, size_t s) { return s < J->n_scan ? J->off[s] : 0; }

static int build_children(ed_jrt_t *J) {
  int rc = index_extras(J);
  if (rc) return rc;
  if (J->coff && J->c_built_n == J->n && J->c_built_xe == J->n_xe) return 0;
  etsim_free(J->coff);
  etsim_free(J->chd);
  J->coff = etsim_calloc(J->n + 1, sizeof *J->coff);
  J->chd = etsim_malloc((J->n_dep + J->n_xe + 1) * sizeof *J->chd);
  if (!J->coff || !J->chd) return oom(J);
  for (size_t s = 0; s < J->n; s++) {
    for (uint32_t e = csr_begin(J, s); e < csr_end(J, s); e++)
      if (J->dep[e] != ED_EDGE_GONE) J->coff[ED_IDX(J->dep[e]) + 1]++;
  }
  for (size_t i = 0; i < J->n_xe; i++) J->coff[J->xe[i].src + 1]++;
  for (size_t s = 0; s < J->n; s++) J->coff[s + 1] += J->coff[s];
  uint32_t *fill = etsim_malloc((J->n + 1) * sizeof *fill);
  if (!fill) return oom(J);
  memcpy(fill, J->coff, (J->n + 1) * sizeof *fill);
  for (size_t s = 0; s < J->n; s++)
    for (uint32_t e = csr_begin(J, s); e < csr_end(J, s); e++)
      if (J->dep[e] != ED_EDGE_GONE) J->chd[fill[ED_IDX(J->dep[e])]++] = (uint32_t)s;
  for (size_t i = 0; i < J->n_xe; i++) J->chd[fill[J->xe[i].src]++] = J->xe[i].dst;
  etsim_free(fill);
  J->c_built_n = J->n;
  J->c_built_xe = J->n_xe;
  return 0;
}

/* Breadth-first from the nodes marked 1 in mark[] (queue holds them),
 * over parents (up) or children; every node reached is marked 1.  When
 * part is given, only nodes with part[seg] == want are walked. */
static void walk(ed_jrt_t *J, uint8_t *mark, uint32_t *queue, size_t qt, int up,
                 const int32_t *part, int32_t want) {
  size_t qh = 0;
  while (qh < qt) {
    uint32_t u = queue[qh++];
    if (up) {
      for (uint32_t e = csr_begin(J, u); e < csr_end(J, u); e++) {
        uint32_t t = J->dep[e];
        if (t == ED_EDGE_GONE) continue;
        t = ED_IDX(t);
        if (mark[t] || (part && part[J->seg[t]] != want)) continue;
        mark[t] = 1;
        queue[qt++] = t;
      }
      for (uint32_t e = J->xoff[u]; e < J->xoff[u + 1]; e++) {
        uint32_t t = ED_IDX(J->xsrc[e]);
        if (mark[t] || (part && part[J->seg[t]] != want)) continue;
        mark[t] = 1;
        queue[qt++] = t;
      }
    } else {
      for (uint32_t e = J->coff[u]; e < J->coff[u + 1]; e++) {
        uint32_t t = J->chd[e];
        if (mark[t] || (part && part[J->seg[t]] != want)) continue;
        mark[t] = 1;
        queue[qt++] = t;
      }
    }
  }
}

/* ------------------------------------------------------------ selections */

static void drop(ed_jrt_t *J, size_t s, size_t k) { J->dead[s] = (uint16_t)k; }

static int select_pred(ed_jrt_t *J, size_t k) {
  const ed_op_t *op = &J->e->ops[k];
  size_t n = J->n;
  uint8_t *in = etsim_calloc(n + 1, 1);
  if (!in) return oom(J);
  for (size_t s = 0; s < n; s++) in[s] = alive_at(J, s, k) && ed_bit(J, op->bit, s);
  if (op->pred.closure) {
    int rc = build_children(J);
    uint8_t *mark = etsim_malloc(n + 1);
    uint32_t *queue = etsim_malloc((n + 1) * sizeof *queue);
    if (rc || !mark || !queue) {
      etsim_free(in);
      etsim_free(mark);
      etsim_free(queue);
      return rc ? rc : oom(J);
    }
    for (int up = 1; up >= 0; up--) {
      if (!(op->pred.closure & (up ? ED_CLOSE_ANCESTORS : ED_CLOSE_DESCENDANTS))) continue;
      size_t qt = 0;
      for (size_t s = 0; s < n; s++) {
        mark[s] = in[s] == 1;
        if (mark[s]) queue[qt++] = (uint32_t)s;
      }
      walk(J, mark, queue, qt, up, NULL, 0);
      for (size_t s = 0; s < n; s++)
        if (mark[s] && alive_at(J, s, k) && !in[s]) in[s] = 2; /* closure, not a match */
    }
    etsim_free(mark);
    etsim_free(queue);
  }
  for (size_t s = 0; s < n; s++) {
    if (!alive_at(J, s, k)) continue;
    if ((op->kind == ED_KEEP) != (in[s] != 0)) drop(J, s, k);
  }
  etsim_free(in);
  return 0;
}

/* The file node an inserted node hangs from. */
static uint32_t file_anchor(const ed_jrt_t *J, uint32_t s) {
  while (s != UINT32_MAX && J->born[s] != ED_ORIG) s = J->have_inserts ? J->anchor[s] : UINT32_MAX;
  return s;
}

static int select_ids(ed_jrt_t *J, size_t k) {
  const ed_op_t *op = &J->e->ops[k];
  for (size_t s = 0; s < J->n; s++) {
    if (!alive_at(J, s, k)) continue;
    uint32_t a = J->born[s] == ED_ORIG ? (uint32_t)s : file_anchor(J, (uint32_t)s);
    if (a == UINT32_MAX) continue; /* a join point */
    if (J->id[a] < op->lo || J->id[a] > op->hi) drop(J, s, k);
  }
  return 0;
}

static int select_iter(ed_jrt_t *J, size_t k) {
  const ed_op_t *op = &J->e->ops[k];
  size_t n = J->n, m = 0;
  uint32_t *pos = etsim_malloc((n + 1) * sizeof *pos);
  uint64_t *h = etsim_malloc((n + 1) * sizeof *h);
  uint8_t *mk = etsim_malloc(n + 1);
  int32_t *it = etsim_malloc((n + 1) * sizeof *it);
  int rc = 0;
  if (!pos || !h || !mk || !it) {
    rc = oom(J);
    goto done;
  }
  for (size_t s = 0; s < n; s++) {
    if (!alive_at(J, s, k) || s >= J->n_scan) continue;
    pos[m] = (uint32_t)s;
    h[m] = J->hash[s];
    mk[m] = (uint8_t)ed_bit(J, op->bit, s);
    m++;
  }
  size_t n_iter = 0;
  const char *how = "";
  if ((rc = etsim_edit__iterations(h, mk, m, it, &n_iter, &how))) {
    rc = oom(J);
    goto done;
  }
  if (op->lo >= n_iter) {
    rc = etsim_error_set(
        J->err, ETSIM_EINVAL, "%s: --%s %s: the trace has %zu iteration(s) (numbered from 0; %s)",
        job_path(J), op->kind == ED_ITER ? "iter" : "iter-only", op->arg, n_iter, how);
    goto done;
  }
  uint64_t hi = op->hi < n_iter ? op->hi : n_iter - 1;
  size_t outside = 0;
  for (size_t i = 0; i < m; i++) {
    if (it[i] < 0) {
      outside++;
      if (op->kind == ED_ITER_ONLY) drop(J, pos[i], k);
    } else if ((uint64_t)it[i] < op->lo || (uint64_t)it[i] > hi) {
      drop(J, pos[i], k);
    }
  }
  etsim_edit__note(J->rep, "%s: %zu iteration(s), %s (%zu node(s) outside them); kept %llu-%llu",
                   job_path(J), n_iter, how, outside, (unsigned long long)op->lo,
                   (unsigned long long)hi);
done:
  etsim_free(pos);
  etsim_free(h);
  etsim_free(mk);
  etsim_free(it);
  return rc;
}

/* --------------------------------------------------------------- joins */

static int add_xe(ed_jrt_t *J, uint32_t dst, uint32_t src, uint32_t ctrl) {
  if (etsim_grow((void **)&J->xe, &J->cap_xe, J->n_xe + 1, sizeof *J->xe)) return oom(J);
  J->xe[J->n_xe++] = (ed_xedge_t){dst, src, ctrl};
  return 0;
}

/* A node appended to the skeleton after the scan (a join point). */
static int add_synthetic(ed_jrt_t *J, size_t k, uint16_t seg, uint32_t before, uint32_t *out) {
  /* one step at a time (rare: one node per join) */
  int rc = J->n == J->cap ? etsim_edit__grow_node_arrays(J, J->cap + 16) : 0;
  if (rc) return rc;
  uint32_t s = (uint32_t)J->n++;
  J->id[s] = UINT64_MAX;
  J->type[s] = ETSIM_ET_METADATA_NODE;
  J->seg[s] = seg;
  J->born[s] = (uint16_t)k;
  J->dead[s] = ED_ALIVE;
  if (J->hash) J->hash[s] = 0;
  if (J->have_inserts) {
    J->anchor[s] = UINT32_MAX;
    J->alias[s] = UINT32_MAX;
  }
  if (etsim_grow((void **)&J->syn, &J->cap_syn, J->n_syn + 1, sizeof *J->syn)) return oom(J);
  J->syn[J->n_syn++] = (ed_syn_t){s, before};
  *out = s;
  return 0;
}

/* The sinks (up = 0: no alive descendant in the part) or roots of part
 * `want`, alive at op k, into list. */
static int ends(ed_jrt_t *J, size_t k, const int32_t *part, int32_t want, int up, uint32_t **list,
                size_t *n_list) {
  int rc = build_children(J);
  if (rc) return rc;
  size_t n = J->n;
  uint8_t *mark = etsim_calloc(n + 1, 1);
  uint32_t *queue = etsim_malloc((n + 1) * sizeof *queue);
  if (!mark || !queue) {
    etsim_free(mark);
    etsim_free(queue);
    return oom(J);
  }
  /* Start from the neighbours of every alive node of the part: they have
   * an alive node before (roots) or after (sinks) them. */
  size_t qt = 0;
  for (size_t s = 0; s < n; s++) {
    if (part[J->seg[s]] != want || !alive_at(J, s, k)) continue;
    if (up) {
      for (uint32_t e = J->coff[s]; e < J->coff[s + 1]; e++) {
        uint32_t t = J->chd[e];
        if (t != s && part[J->seg[t]] == want && !mark[t]) {
          mark[t] = 1;
          queue[qt++] = t;
        }
      }
    } else {
      for (uint32_t e = csr_begin(J, s); e < csr_end(J, s); e++) {
        uint32_t t = J->dep[e];
        if (t == ED_EDGE_GONE) continue;
        t = ED_IDX(t);
        if (t != s && part[J->seg[t]] == want && !mark[t]) {
          mark[t] = 1;
          queue[qt++] = t;
        }
      }
      for (uint32_t e = J->xoff[s]; e < J->xoff[s + 1]; e++) {
        uint32_t t = ED_IDX(J->xsrc[e]);
        if (t != s && part[J->seg[t]] == want && !mark[t]) {
          mark[t] = 1;
          queue[qt++] = t;
        }
      }
    }
  }
  walk(J, mark, queue, qt, !up, part, want);
  size_t cnt = 0, cap = 0;
  uint32_t *l = NULL;
  for (size_t s = 0; s < n; s++) {
    if (part[J->seg[s]] != want || !alive_at(J, s, k) || mark[s]) continue;
    if (etsim_grow((void **)&l, &cap, cnt + 1, sizeof *l)) {
      etsim_free(l);
      etsim_free(mark);
      etsim_free(queue);
      return oom(J);
    }
    l[cnt++] = (uint32_t)s;
  }
  etsim_free(mark);
  etsim_free(queue);
  *list = l;
  *n_list = cnt;
  return 0;
}

/* Join part p after the parts before it (of one instance). */
static int join_parts(ed_jrt_t *J, size_t k, int32_t *part, int32_t p, uint32_t first_seg) {
  size_t n = J->n;
  int rc = 0;
  /* Cut dependencies recorded by an earlier --ids/--iter, naming nodes of
   * the parts before: restore them. */
  etsim_u64map_t before;
  etsim_u64map_init(&before);
  uint64_t restored = 0;
  if (J->n_prov) {
    for (size_t s = 0; s < n; s++) {
      int32_t q = part[J->seg[s]];
      if (q < 0 || q >= p || !alive_at(J, s, k) || J->id[s] == UINT64_MAX) continue;
      if (etsim_u64map_put(&before, J->id[s], (uint32_t)s, NULL) < 0) {
        etsim_u64map_free(&before);
        return oom(J);
      }
    }
    if (!J->prov_used && !(J->prov_used = etsim_calloc(J->n_scan + 1, 1))) {
      etsim_u64map_free(&before);
      return oom(J);
    }
    for (size_t i = 0; i < J->n_prov; i++) {
      const ed_prov_t *pv = &J->prov[i];
      uint32_t t;
      if (part[J->seg[pv->s]] != p || !alive_at(J, pv->s, k) ||
          !etsim_u64map_get(&before, pv->id, &t))
        continue;
      if ((rc = add_xe(J, pv->s, t, pv->ctrl))) break;
      J->prov_used[pv->s] |= (uint8_t)(1u << pv->ctrl);
      restored++;
    }
  }
  etsim_u64map_free(&before);
  if (rc) return rc;
  if (restored) {
    J->rep->restored += restored;
    return 0;
  }
  uint32_t *sinks = NULL, *roots = NULL;
  size_t ns = 0, nr = 0;
  if ((rc = ends(J, k, part, p - 1, 0, &sinks, &ns)) || (rc = ends(J, k, part, p, 1, &roots, &nr)))
    goto done;
  if (ns && nr) {
    if (ns * nr <= JOIN_EDGE_LIMIT || ns * nr <= ns + nr) {
      for (size_t a = 0; a < nr && !rc; a++)
        for (size_t b = 0; b < ns && !rc; b++) rc = add_xe(J, roots[a], sinks[b], 0);
      J->rep->join_edges += ns * nr;
    } else {
      uint32_t j = 0;
      if ((rc = add_synthetic(J, k, (uint16_t)first_seg, J->segs[first_seg].first, &j))) goto done;
      for (size_t b = 0; b < ns && !rc; b++) rc = add_xe(J, j, sinks[b], 0);
      for (size_t a = 0; a < nr && !rc; a++) rc = add_xe(J, roots[a], j, 0);
      J->rep->join_edges += ns + nr;
    }
  }
done:
  etsim_free(sinks);
  etsim_free(roots);
  return rc;
}

static int join(ed_jrt_t *J, size_t k) {
  const ed_op_t *op = &J->e->ops[k];
  size_t ns = J->j->n_segs;
  int32_t *part = etsim_malloc((ns + 1) * sizeof *part);
  uint8_t *done = etsim_calloc(ns + 1, 1);
  if (!part || !done) {
    etsim_free(part);
    etsim_free(done);
    return oom(J);
  }
  int rc = 0;
  /* Instances: segments that agree on the copy index of every later
   * --repeat are one copy of what this op joined. */
  for (size_t a = 0; a < ns && !rc; a++) {
    const ed_seg_t *sa = &J->j->segs[a];
    int exists = sa->created_by == UINT32_MAX || sa->created_by <= k;
    if (done[a] || !exists) continue;
    int32_t maxp = 0;
    for (size_t b = 0; b < ns; b++) {
      const ed_seg_t *sb = &J->j->segs[b];
      part[b] = -1;
      if (!(sb->created_by == UINT32_MAX || sb->created_by <= k)) continue;
      int same = 1;
      for (size_t r = k + 1; r < J->hi && same; r++)
        if (J->e->ops[r].kind == ED_REPEAT && sa->copy[r] != sb->copy[r]) same = 0;
      if (!same) continue;
      done[b] = 1;
      part[b] = op->kind == ED_REPEAT ? (int32_t)sb->copy[k] : sb->created_by == k ? 1 : 0;
      if (part[b] > maxp) maxp = part[b];
    }
    for (int32_t p = 1; p <= maxp && !rc; p++) {
      uint32_t first = UINT32_MAX;
      for (size_t b = 0; b < ns && first == UINT32_MAX; b++)
        if (part[b] == p) first = (uint32_t)b;
      if (first != UINT32_MAX) rc = join_parts(J, k, part, p, first);
    }
  }
  etsim_free(part);
  etsim_free(done);
  return rc;
}

/* ------------------------------------------------------------- resolve */

static int cmp_syn(const void *a, const void *b) {
  const ed_syn_t *x = a, *y = b;
  if (x->before != y->before) return x->before < y->before ? -1 : 1;
  return x->s < y->s ? -1 : x->s > y->s;
}

int etsim_edit__graph_resolve(ed_jrt_t *J) {
  int rc = 0;
  for (size_t k = J->lo; k < J->hi && !rc; k++) {
    switch (J->e->ops[k].kind) {
      case ED_KEEP:
      case ED_DROP:
        rc = select_pred(J, k);
        break;
      case ED_IDS:
        rc = select_ids(J, k);
        break;
      case ED_ITER:
      case ED_ITER_ONLY:
        rc = select_iter(J, k);
        break;
      case ED_RANKS:
        for (size_t s = 0; s < J->n; s++)
          if (alive_at(J, s, k) && ed_bit(J, J->e->ops[k].bit, s)) drop(J, s, k);
        break;
      case ED_KEEP_DEPS: {
        /* The other kind goes, from the file's nodes and the inserted ones;
         * the dependencies joins add are data dependencies. */
        uint32_t drop_ctrl = J->e->ops[k].mode == 0;
        for (size_t e = 0; e < J->n_dep; e++)
          if (J->dep[e] != ED_EDGE_GONE && ((J->dep[e] & ED_EDGE_CTRL) != 0) == drop_ctrl)
            J->dep[e] = ED_EDGE_GONE;
        size_t m = 0;
        for (size_t i = 0; i < J->n_xe; i++)
          if ((J->xe[i].ctrl != 0) != drop_ctrl) J->xe[m++] = J->xe[i];
        J->n_xe = m;
        J->c_built_n = 0;
        J->x_built = SIZE_MAX;
        break;
      }
      case ED_INSERT_BEFORE:
      case ED_INSERT_AFTER:
        for (size_t s = 0; s < J->n; s++)
          if (J->born[s] == k && J->anchor[s] != UINT32_MAX && J->dead[J->anchor[s]] != ED_ALIVE)
            drop(J, s, k);
        break;
      case ED_CONCAT:
      case ED_REPEAT:
        if ((rc = index_extras(J))) break;
        rc = join(J, k);
        break;
      default:
        break;
    }
  }
  if (rc) return rc;
  if ((rc = index_extras(J))) return rc;
  if (J->n_syn) etsim_qsort(J->syn, J->n_syn, sizeof *J->syn, cmp_syn);
  /* Fresh ids for inserted nodes and join points, past every file id. */
  uint64_t max = 0;
  int any = 0;
  for (size_t s = 0; s < J->n; s++)
    if (J->born[s] == ED_ORIG && (!any || J->id[s] > max)) {
      max = J->id[s];
      any = 1;
    }
  J->fresh = any ? max + 1 : 0;
  if (any && max == UINT64_MAX)
    for (size_t s = 0; s < J->n; s++)
      if (J->born[s] != ED_ORIG)
        return etsim_error_set(J->err, ETSIM_ERANGE, "%s: no id is left for inserted nodes",
                               job_path(J));
  for (size_t s = 0; s < J->n_scan; s++)
    if (J->born[s] != ED_ORIG) J->id[s] = J->fresh++;
  for (size_t i = 0; i < J->n_syn; i++) J->id[J->syn[i].s] = J->fresh++;
  for (size_t s = 0; s < J->n; s++)
    if (J->dead[s] != ED_ALIVE && J->born[s] == ED_ORIG) J->rep->dropped++;
  if (J->e->opts.renumber) {
    J->renum = etsim_malloc((J->n + 1) * sizeof *J->renum);
    if (!J->renum) return oom(J);
    uint32_t next = 0;
    size_t si = 0;
    for (size_t s = 0; s <= J->n_scan; s++) {
      while (si < J->n_syn && (s == J->n_scan || J->syn[si].before <= s)) {
        if (ed_alive(J, J->syn[si].s)) J->renum[J->syn[si].s] = next++;
        si++;
      }
      if (s < J->n_scan && ed_alive(J, s)) J->renum[s] = next++;
    }
  }
  return 0;
}

uint64_t etsim_edit__graph_out_id(const ed_jrt_t *J, uint32_t s) {
  return J->renum ? J->renum[s] : J->id[s];
}

/* ------------------------------------------------------------- bridges */

static int bridge_push(ed_jrt_t *J, uint32_t v) {
  if (J->n_br == J->cap_br) {
    size_t limit = 16 * (J->n_dep + J->n) + (1u << 20);
    if (J->n_br >= limit)
      return etsim_error_set(J->err, ETSIM_ERANGE,
                             "%s: bridging the dropped nodes would take more than %zu "
                             "dependencies; drop fewer nodes or keep their ancestors",
                             job_path(J), limit);
    if (etsim_grow((void **)&J->br_pool, &J->cap_br, J->n_br + 1, sizeof *J->br_pool))
      return oom(J);
  }
  J->br_pool[J->n_br++] = v;
  return 0;
}

/* Compute the bridge set of dead node u (and of the dead nodes it needs),
 * in post-order so that each set is built from finished ones. */
static int bridge(ed_jrt_t *J, uint32_t u) {
  size_t n = J->n;
  if (!J->br_state) {
    J->br_state = etsim_calloc(n + 1, 1);
    J->br_off = etsim_malloc((n + 1) * sizeof *J->br_off);
    J->br_len = etsim_malloc((n + 1) * sizeof *J->br_len);
    J->br_stamp = etsim_calloc(n + 1, sizeof *J->br_stamp);
    if (!J->br_state || !J->br_off || !J->br_len || !J->br_stamp) return oom(J);
  }
  if (J->br_state[u] == 2) return 0;
  /* Explicit stack of (node, next edge); edges: CSR then extras. */
  struct fr {
    uint32_t s, e;
  } *st = NULL;
  size_t sp = 0, cap = 0;
  if (etsim_grow((void **)&st, &cap, 1, sizeof *st)) return oom(J);
  st[sp++] = (struct fr){u, 0};
  J->br_state[u] = 1;
  int rc = 0;
  while (sp && !rc) {
    struct fr *f = &st[sp - 1];
    uint32_t s = f->s;
    uint32_t nc = csr_end(J, s) - csr_begin(J, s), nx = J->xoff[s + 1] - J->xoff[s];
    int pushed = 0;
    while (f->e < nc + nx) {
      uint32_t t = f->e < nc ? J->dep[csr_begin(J, s) + f->e] : J->xsrc[J->xoff[s] + f->e - nc];
      f->e++;
      if (t == ED_EDGE_GONE) continue;
      t = ED_IDX(t);
      if (J->dead[t] == ED_ALIVE || J->br_state[t]) continue;
      J->br_state[t] = 1;
      if (etsim_grow((void **)&st, &cap, sp + 1, sizeof *st)) {
        rc = oom(J);
        break;
      }
      st[sp++] = (struct fr){t, 0};
      pushed = 1;
      break;
    }
    if (pushed || rc) continue;
    /* All parents of s are done (or on the stack: a cycle, skipped). */
    uint32_t start = (uint32_t)J->n_br;
    for (uint32_t e = 0; e < nc + nx && !rc; e++) {
      uint32_t t = e < nc ? J->dep[csr_begin(J, s) + e] : J->xsrc[J->xoff[s] + e - nc];
      if (t == ED_EDGE_GONE) continue;
      t = ED_IDX(t);
      if (J->dead[t] == ED_ALIVE) {
        rc = bridge_push(J, t);
      } else if (J->br_state[t] == 2) {
        for (uint32_t i = 0; i < J->br_len[t] && !rc; i++)
          rc = bridge_push(J, J->br_pool[J->br_off[t] + i]);
      }
    }
    if (rc) break;
    /* Each member once, in the order found. */
    uint32_t w = start;
    for (uint32_t i = start; i < J->n_br; i++) {
      uint32_t v = J->br_pool[i];
      if (J->br_stamp[v] == s + 1) continue;
      J->br_stamp[v] = s + 1;
      J->br_pool[w++] = v;
    }
    J->n_br = w;
    J->br_off[s] = start;
    J->br_len[s] = w - start;
    J->br_state[s] = 2;
    sp--;
  }
  etsim_free(st);
  return rc;
}

static int out_push(ed_jrt_t *J, size_t *n, uint64_t v) {
  if (etsim_grow((void **)&J->odeps, &J->cap_odeps, *n + 1, sizeof *J->odeps)) return ETSIM_ENOMEM;
  J->odeps[(*n)++] = v;
  return 0;
}

static int cut_push(ed_jrt_t *J, int kind, uint64_t id) {
  if (etsim_grow((void **)&J->ocut[kind], &J->cap_ocut[kind], J->n_ocut[kind] + 1,
                 sizeof(uint64_t)))
    return ETSIM_ENOMEM;
  J->ocut[kind][J->n_ocut[kind]++] = id;
  return 0;
}

int etsim_edit__graph_deps(ed_jrt_t *J, uint32_t s, size_t *n_data, size_t *n_ctrl) {
  J->n_ocut[0] = J->n_ocut[1] = 0;
  uint32_t b = csr_begin(J, s), en = csr_end(J, s);
  uint32_t xb = J->xoff[s], xn = J->xoff[s + 1];
  /* The common case: every dependency alive, none added: as in the file. */
  int simple = xb == xn;
  for (uint32_t e = b; e < en && simple; e++)
    simple = J->dep[e] != ED_EDGE_GONE && J->dead[ED_IDX(J->dep[e])] == ED_ALIVE;
  size_t nd = 0, total = 0;
  if (simple) {
    for (int pass = 0; pass < 2; pass++)
      for (uint32_t e = b; e < en; e++) {
        uint32_t ctrl = J->dep[e] & ED_EDGE_CTRL;
        if ((ctrl != 0) != pass) continue;
        if (out_push(J, &total, etsim_edit__graph_out_id(J, ED_IDX(J->dep[e]))))
          return ETSIM_ENOMEM;
        if (!pass) nd++;
      }
    *n_data = nd;
    *n_ctrl = total - nd;
    return 0;
  }
  if (!J->stamp[0]) {
    J->stamp[0] = etsim_calloc(J->n + 1, sizeof *J->stamp[0]);
    J->stamp[1] = etsim_calloc(J->n + 1, sizeof *J->stamp[1]);
    if (!J->stamp[0] || !J->stamp[1]) return ETSIM_ENOMEM;
  }
  for (int pass = 0; pass < 2; pass++) {
    uint32_t *stamp = J->stamp[pass];
    for (uint32_t e = b; e < en + (xn - xb); e++) {
      int extra = e >= en;
      uint32_t d = extra ? J->xsrc[xb + e - en] : J->dep[e];
      if (d == ED_EDGE_GONE || ((d & ED_EDGE_CTRL) != 0) != pass) continue;
      uint32_t t = ED_IDX(d);
      if (J->dead[t] == ED_ALIVE) {
        if (stamp[t] == s + 1) continue;
        stamp[t] = s + 1;
        if (out_push(J, &total, etsim_edit__graph_out_id(J, t))) return ETSIM_ENOMEM;
        continue;
      }
      /* Cuts are recorded by id; renumbered ids would name other nodes. */
      if (!extra && !J->renum && J->e->ops[J->dead[t]].cut && J->id[t] != UINT64_MAX &&
          cut_push(J, pass, J->id[t]))
        return ETSIM_ENOMEM;
      int rc = bridge(J, t);
      if (rc) return rc;
      for (uint32_t i = 0; i < J->br_len[t]; i++) {
        uint32_t w = J->br_pool[J->br_off[t] + i];
        if (stamp[w] == s + 1) continue;
        stamp[w] = s + 1;
        if (out_push(J, &total, etsim_edit__graph_out_id(J, w))) return ETSIM_ENOMEM;
        J->rep->bridged++;
      }
    }
    if (!pass) nd = total;
  }
  *n_data = nd;
  *n_ctrl = total - nd;
  return 0;
}

void etsim_edit__graph_free(ed_jrt_t *J) {
  etsim_free(J->prov_used);
  etsim_free(J->xe);
  etsim_free(J->xoff);
  etsim_free(J->xsrc);
  etsim_free(J->coff);
  etsim_free(J->chd);
  etsim_free(J->syn);
  etsim_free(J->renum);
  etsim_free(J->br_off);
  etsim_free(J->br_len);
  etsim_free(J->br_pool);
  etsim_free(J->br_state);
  etsim_free(J->br_stamp);
  etsim_free(J->stamp[0]);
  etsim_free(J->stamp[1]);
}
