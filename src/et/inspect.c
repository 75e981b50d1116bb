/*
 * inspect.c — summary statistics of one trace.
 *
 * A Kahn pass over the union of resolved data and control edges gives a
 * topological order; longest paths by count and by duration follow in the
 * same pass.  Attribute kinds are counted with a map keyed by
 * (name id, kind).
 */
#include "etsim/etcheck.h"

#include <stdlib.h>
#include <string.h>

static int cmp_use(const void *a, const void *b) {
  const etsim_et_attr_use_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : x->kind - y->kind;
}

static int count_attrs(const etsim_et_trace_t *t, etsim_et_stats_t *st) {
  etsim_u64map_t m;
  etsim_u64map_init(&m);
  size_t cap = 0;
  for (size_t k = 0; k < t->n_attrs; k++) {
    uint64_t key = ((uint64_t)t->attrs[k].name << 8) | (t->attrs[k].kind_doc & 0xff);
    uint32_t idx = (uint32_t)st->n_attr_uses;
    int rc = etsim_u64map_put(&m, key, idx, &idx);
    if (rc < 0) goto oom;
    if (rc == 1) {
      if (etsim_grow((void **)&st->attrs, &cap, st->n_attr_uses + 1, sizeof *st->attrs)) goto oom;
      st->attrs[idx].name = etsim_intern_str(&t->strings, t->attrs[k].name);
      st->attrs[idx].kind = (int)(t->attrs[k].kind_doc & 0xff);
      st->attrs[idx].count = 0;
      st->n_attr_uses++;
    }
    st->attrs[idx].count++;
  }
  etsim_u64map_free(&m);
  if (st->n_attr_uses) etsim_qsort(st->attrs, st->n_attr_uses, sizeof *st->attrs, cmp_use);
  return 0;
oom:
  etsim_u64map_free(&m);
  return ETSIM_ENOMEM;
}

/* In-degree over resolved data parents.  Depth, critical path, sources and
 * sinks follow data edges, the execution order simulators enforce; control
 * edges (the calling op in PyTorch-derived traces) are counted only. */
static uint32_t resolved_parents(const etsim_et_trace_t *t, size_t i) {
  uint32_t n = 0;
  for (uint32_t e = t->data_off[i]; e < t->data_off[i + 1]; e++)
    n += !(t->data_par[e] & ETSIM_ET_DANGLING);
  return n;
}

/* A node's duration in ns: duration_ns when the node has it (etsim's
 * generators and converters write it where whole microseconds would round
 * badly, and etsim sim takes it first), else duration_micros. */
static uint64_t node_ns(const etsim_et_trace_t *t, int64_t k_ns, size_t i) {
  int64_t v;
  if (k_ns >= 0 && etsim_et_trace_attr_int(t, i, (uint32_t)k_ns, &v) == 1 && v > 0)
    return (uint64_t)v;
  return t->dur_us[i] > UINT64_MAX / 1000 ? UINT64_MAX : t->dur_us[i] * 1000;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int longest_paths(const etsim_et_trace_t *t, etsim_et_stats_t *st) {
  int64_t k_ns = etsim_intern_find(&t->strings, "duration_ns");
  size_t n = t->n_nodes;
  uint32_t *indeg = etsim_malloc((n + 1) * sizeof *indeg);
  uint32_t *queue = etsim_malloc((n + 1) * sizeof *queue);
  uint32_t *depth = etsim_calloc(n + 1, sizeof *depth);
  uint64_t *dist = etsim_calloc(n + 1, sizeof *dist);
  uint32_t *from = etsim_malloc((n + 1) * sizeof *from); /* path start */
  if (!indeg || !queue || !depth || !dist || !from) {
    etsim_free(indeg);
    etsim_free(queue);
    etsim_free(depth);
    etsim_free(dist);
    etsim_free(from);
    return ETSIM_ENOMEM;
  }
  memset(from, 0xff, (n + 1) * sizeof *from);
  size_t qh = 0, qt = 0;
  for (size_t i = 0; i < n; i++) {
    indeg[i] = resolved_parents(t, i);
    if (!indeg[i]) {
      queue[qt++] = (uint32_t)i;
      st->sources++;
      depth[i] = 1;
      dist[i] = node_ns(t, k_ns, i);
      from[i] = (uint32_t)i;
    }
    if (t->data_coff[i + 1] == t->data_coff[i]) st->sinks++;
  }
  size_t best = SIZE_MAX;
  while (qh < qt) {
    uint32_t u = queue[qh++];
    if (depth[u] > st->depth) st->depth = depth[u];
    if (best == SIZE_MAX || dist[u] > dist[best]) best = u;
    {
      const uint32_t *off = t->data_coff, *chd = t->data_chd;
      for (uint32_t e = off[u]; e < off[u + 1]; e++) {
        uint32_t v = chd[e];
        if (depth[u] + 1 > depth[v]) depth[v] = depth[u] + 1;
        uint64_t d = add_sat(dist[u], node_ns(t, k_ns, v));
        if (from[v] == UINT32_MAX || d > dist[v]) {
          dist[v] = d;
          from[v] = from[u];
        }
        if (--indeg[v] == 0) queue[qt++] = v;
      }
    }
  }
  st->cyclic = qt < n;
  if (best != SIZE_MAX) {
    st->critical_path_ns = dist[best];
    st->critical_first = t->id[from[best]];
    st->critical_last = t->id[best];
  }
  etsim_free(indeg);
  etsim_free(queue);
  etsim_free(depth);
  etsim_free(dist);
  etsim_free(from);
  return 0;
}

int etsim_et_stats(const etsim_et_trace_t *t, etsim_et_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->n_nodes = t->n_nodes;
  st->data_edges = t->n_data_edges;
  st->ctrl_edges = t->n_ctrl_edges;
  st->dangling_data = t->n_dangling_data;
  st->dangling_ctrl = t->n_dangling_ctrl;
  int64_t k_ns = etsim_intern_find(&t->strings, "duration_ns");
  for (size_t i = 0; i < t->n_nodes; i++) {
    st->by_type[t->type[i]]++;
    if (t->type[i] == ETSIM_ET_COMP_NODE)
      st->compute_ns = add_sat(st->compute_ns, node_ns(t, k_ns, i));
    if (t->type[i] == ETSIM_ET_COMM_COLL_NODE) {
      int64_t ct, sz;
      if (etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) == 1 && ct >= 0 &&
          ct < ETSIM_COLL_TYPE_COUNT) {
        st->by_coll[ct]++;
        if (etsim_et_trace_attr_int(t, i, t->k_comm_size, &sz) == 1 && sz > 0)
          st->coll_bytes[ct] += (uint64_t)sz;
      }
    }
  }
  int rc = count_attrs(t, st);
  if (!rc) rc = longest_paths(t, st);
  if (rc) etsim_et_stats_free(st);
  return rc;
}

void etsim_et_stats_free(etsim_et_stats_t *st) {
  etsim_free(st->attrs);
  st->attrs = NULL;
  st->n_attr_uses = 0;
}
