/*
 * diff.c — what differs between two traces or rank sets.
 *
 * Both sides are loaded whole (etsim_et_set_load) and compared rank by
 * rank: nodes are matched by id (added, removed, changed, by type), edges
 * by (node, dependency, kind), totals per node type and per collective,
 * the critical path of each side, and the first node, in file order,
 * where the two differ.  Two nodes are equal when their ids, names, types,
 * times, data and control dependencies (as sets), attributes (in name
 * order) and inputs/outputs are; the ignore flags leave names and string
 * values, metadata, inputs/outputs or named attributes out.  Ranks that
 * share one file pair up once, however many ranks run it.
 */
#include "edit_int.h"
#include "etsim/etcheck.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const etsim_diff_opts_t *o;
  ed_groups_t ga, gb; /* each side's communicator groups, when it has a file */
  int have_ga, have_gb;
  uint64_t *ia, *ib;
  size_t ca, cb;
  etsim_attr_t *aa, *ab;
  size_t caa, cab;
} cmp_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Dependencies of node i of one kind, as sorted ids, into *buf. */
static size_t dep_ids(const etsim_et_trace_t *t, size_t i, int ctrl, uint64_t **buf, size_t *cap) {
  const uint32_t *off = ctrl ? t->ctrl_off : t->data_off;
  const uint32_t *par = ctrl ? t->ctrl_par : t->data_par;
  size_t n = off[i + 1] - off[i];
  if (etsim_grow((void **)buf, cap, n + 1, sizeof **buf)) return SIZE_MAX;
  for (size_t k = 0; k < n; k++) {
    uint32_t p = par[off[i] + k];
    (*buf)[k] = p & ETSIM_ET_DANGLING ? t->dangling[p & ~ETSIM_ET_DANGLING] : t->id[p];
  }
  etsim_qsort(*buf, n, sizeof **buf, cmp_u64);
  return n;
}

static int ignored(const etsim_diff_opts_t *o, const char *name) {
  for (size_t k = 0; k < o->n_attrs; k++)
    if (strcmp(o->attrs[k], name) == 0) return 1;
  return 0;
}

static int cmp_attr_name(const void *a, const void *b) {
  const etsim_attr_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : x->kind - y->kind;
}

/* The node's attributes to compare, sorted by name. */
static size_t attrs_of(const etsim_et_trace_t *t, size_t i, const etsim_diff_opts_t *o,
                       etsim_attr_t **buf, size_t *cap) {
  size_t n = 0;
  for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++) {
    etsim_attr_t a;
    etsim_et_trace_attr(t, k, &a);
    if (ignored(o, a.name)) continue;
    if (etsim_grow((void **)buf, cap, n + 1, sizeof **buf)) return SIZE_MAX;
    (*buf)[n++] = a;
  }
  /* Stable enough: equal names keep their order through the kind. */
  etsim_qsort(*buf, n, sizeof **buf, cmp_attr_name);
  return n;
}

static int str_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* 1 when equal; else 0 with `why`. */
static int attr_eq(const etsim_attr_t *a, const etsim_attr_t *b, unsigned flags, char *why,
                   size_t wn) {
  int names = !(flags & ETSIM_DIFF_IGNORE_NAMES);
  if (strcmp(a->name, b->name) != 0) {
    snprintf(why, wn, "attribute %s where the other has %s", a->name, b->name);
    return 0;
  }
  if (a->kind != b->kind) {
    snprintf(why, wn, "attribute %s is %s vs %s", a->name, etsim_attr_kind_name(a->kind),
             etsim_attr_kind_name(b->kind));
    return 0;
  }
  if (names && !str_eq(a->doc, b->doc)) {
    snprintf(why, wn, "attribute %s: doc_string differs", a->name);
    return 0;
  }
  int eq = 1;
  switch (a->kind) {
    case ETSIM_ATTR_STRING:
      eq = !names || str_eq(a->v.s, b->v.s);
      if (!eq) snprintf(why, wn, "attribute %s: \"%.80s\" vs \"%.80s\"", a->name, a->v.s, b->v.s);
      return eq;
    case ETSIM_ATTR_BYTES:
      eq = !names ||
           (a->v.bytes.len == b->v.bytes.len &&
            (!a->v.bytes.len || memcmp(a->v.bytes.data, b->v.bytes.data, a->v.bytes.len) == 0));
      break;
    case ETSIM_ATTR_DOUBLE:
      eq = memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
      if (!eq) snprintf(why, wn, "attribute %s: %g vs %g", a->name, a->v.d, b->v.d);
      return eq;
    case ETSIM_ATTR_FLOAT:
      eq = memcmp(&a->v.f, &b->v.f, sizeof a->v.f) == 0;
      break;
    case ETSIM_ATTR_BOOL:
      eq = (a->v.b != 0) == (b->v.b != 0);
      break;
    default:
      if (etsim_attr_kind_is_list(a->kind)) {
        if (a->v.list.n != b->v.list.n) {
          snprintf(why, wn, "attribute %s: %zu vs %zu values", a->name, a->v.list.n, b->v.list.n);
          return 0;
        }
        if (a->kind == ETSIM_ATTR_STRING_LIST) {
          const char *const *x = a->v.list.v, *const *y = b->v.list.v;
          for (size_t k = 0; names && k < a->v.list.n && eq; k++) eq = str_eq(x[k], y[k]);
        } else if (a->kind == ETSIM_ATTR_BYTES_LIST) {
          const etsim_bytes_t *x = a->v.list.v, *y = b->v.list.v;
          for (size_t k = 0; names && k < a->v.list.n && eq; k++)
            eq = x[k].len == y[k].len && (!x[k].len || memcmp(x[k].data, y[k].data, x[k].len) == 0);
        } else {
          size_t es =
              a->kind == ETSIM_ATTR_BOOL_LIST ? sizeof(int)
              : a->kind == ETSIM_ATTR_DOUBLE_LIST || a->kind == ETSIM_ATTR_INT64_LIST ||
                      a->kind == ETSIM_ATTR_UINT64_LIST || a->kind == ETSIM_ATTR_SINT64_LIST ||
                      a->kind == ETSIM_ATTR_FIXED64_LIST || a->kind == ETSIM_ATTR_SFIXED64_LIST
                  ? 8
                  : 4;
          eq = !a->v.list.n || memcmp(a->v.list.v, b->v.list.v, a->v.list.n * es) == 0;
        }
        break;
      }
      {
        int64_t x = 0, y = 0;
        int okx = etsim_attr_as_int(a, &x) == 0, oky = etsim_attr_as_int(b, &y) == 0;
        eq = okx && oky ? x == y : a->v.u64 == b->v.u64;
        if (!eq) {
          snprintf(why, wn, "attribute %s: %lld vs %lld", a->name, (long long)x, (long long)y);
          return 0;
        }
      }
  }
  if (!eq) snprintf(why, wn, "attribute %s differs", a->name);
  return eq;
}

static int io_eq(const etsim_et_trace_t *ta, size_t i, const etsim_et_trace_t *tb, size_t j) {
  const etsim_et_io_t *x = ta->io && ta->io[i] ? &ta->ios[ta->io[i]] : NULL;
  const etsim_et_io_t *y = tb->io && tb->io[j] ? &tb->ios[tb->io[j]] : NULL;
  if (!x || !y) return !x && !y;
  if (x->flags != y->flags) return 0;
  return str_eq(x->in.values, y->in.values) && str_eq(x->in.shapes, y->in.shapes) &&
         str_eq(x->in.types, y->in.types) && str_eq(x->out.values, y->out.values) &&
         str_eq(x->out.shapes, y->out.shapes) && str_eq(x->out.types, y->out.types);
}

/* Communicators compare by their ranks when both sides have a group file
 * (an edit may renumber the groups); else by name. */
static int pg_eq(const cmp_t *c, const char *x, const char *y) {
  int wx = etsim_edit__pg_world(x), wy = etsim_edit__pg_world(y);
  if (wx || wy) return wx && wy;
  uint32_t ix, iy;
  long gx = -1, gy = -1;
  if (c->have_ga && etsim_edit__pg_id(x, &ix)) gx = etsim_edit__groups_find(&c->ga, ix);
  if (c->have_gb && etsim_edit__pg_id(y, &iy)) gy = etsim_edit__groups_find(&c->gb, iy);
  if (gx < 0 || gy < 0) return strcmp(x, y) == 0;
  size_t nx = c->ga.off[gx + 1] - c->ga.off[gx], ny = c->gb.off[gy + 1] - c->gb.off[gy];
  return nx == ny &&
         memcmp(c->ga.mem + c->ga.off[gx], c->gb.mem + c->gb.off[gy], nx * sizeof(uint32_t)) == 0;
}

/* A set's communicator-group file, if it has one. */
static int load_groups(const char *name, size_t n_ranks, ed_groups_t *g, etsim_error_t *err) {
  char *p;
  int rc = etsim_et_comm_groups_path(name, 1, &p, err);
  if (rc) return rc;
  FILE *fp = fopen(p, "r");
  if (fp) {
    fclose(fp);
    rc = etsim_edit__groups_load(g, p, n_ranks, err);
    if (!rc) rc = 1;
  }
  etsim_free(p);
  return rc;
}

/* Node i of a vs node j of b: 1 equal, 0 different (why filled), <0 ENOMEM.
 * with_id: the ids must agree too (file-order comparison). */
static int node_eq(cmp_t *c, const etsim_et_trace_t *a, size_t i, const etsim_et_trace_t *b,
                   size_t j, int with_id, char *why, size_t wn) {
  unsigned fl = c->o->flags;
  if (with_id && a->id[i] != b->id[j]) {
    snprintf(why, wn, "id %llu vs %llu", (unsigned long long)a->id[i],
             (unsigned long long)b->id[j]);
    return 0;
  }
  if (a->type[i] != b->type[j]) {
    snprintf(why, wn, "type %s vs %s", etsim_et_node_type_name(a->type[i]),
             etsim_et_node_type_name(b->type[j]));
    return 0;
  }
  if (!(fl & ETSIM_DIFF_IGNORE_NAMES) && strcmp(a->name[i], b->name[j]) != 0) {
    snprintf(why, wn, "name \"%.100s\" vs \"%.100s\"", a->name[i], b->name[j]);
    return 0;
  }
  if (a->dur_us[i] != b->dur_us[j]) {
    snprintf(why, wn, "duration_micros %llu vs %llu", (unsigned long long)a->dur_us[i],
             (unsigned long long)b->dur_us[j]);
    return 0;
  }
  if (a->start_us[i] != b->start_us[j]) {
    snprintf(why, wn, "start_time_micros %llu vs %llu", (unsigned long long)a->start_us[i],
             (unsigned long long)b->start_us[j]);
    return 0;
  }
  for (int ctrl = 0; ctrl < 2; ctrl++) {
    size_t na = dep_ids(a, i, ctrl, &c->ia, &c->ca), nb = dep_ids(b, j, ctrl, &c->ib, &c->cb);
    if (na == SIZE_MAX || nb == SIZE_MAX) return ETSIM_ENOMEM;
    if (na != nb || (na && memcmp(c->ia, c->ib, na * sizeof *c->ia) != 0)) {
      size_t k = 0;
      while (k < na && k < nb && c->ia[k] == c->ib[k]) k++;
      if (k < na && (k >= nb || c->ia[k] < c->ib[k]))
        snprintf(why, wn, "%s dependency on %llu only in the first (%zu vs %zu dependencies)",
                 ctrl ? "control" : "data", (unsigned long long)c->ia[k], na, nb);
      else
        snprintf(why, wn, "%s dependency on %llu only in the second (%zu vs %zu dependencies)",
                 ctrl ? "control" : "data", (unsigned long long)c->ib[k], na, nb);
      return 0;
    }
  }
  size_t xa = attrs_of(a, i, c->o, &c->aa, &c->caa), xb = attrs_of(b, j, c->o, &c->ab, &c->cab);
  if (xa == SIZE_MAX || xb == SIZE_MAX) return ETSIM_ENOMEM;
  for (size_t k = 0; k < xa && k < xb; k++) {
    const etsim_attr_t *x = &c->aa[k], *y = &c->ab[k];
    if (strcmp(x->name, "pg_name") == 0 && strcmp(y->name, "pg_name") == 0 &&
        x->kind == ETSIM_ATTR_STRING && y->kind == ETSIM_ATTR_STRING) {
      if (!pg_eq(c, x->v.s, y->v.s)) {
        snprintf(why, wn, "communicator \"%.40s\" vs \"%.40s\" (other ranks)", x->v.s, y->v.s);
        return 0;
      }
      continue;
    }
    if (!attr_eq(x, y, fl, why, wn)) return 0;
  }
  if (xa != xb) {
    const etsim_attr_t *extra = xa > xb ? &c->aa[xb] : &c->ab[xa];
    snprintf(why, wn, "attribute %s only in the %s", extra->name, xa > xb ? "first" : "second");
    return 0;
  }
  if (!(fl & ETSIM_DIFF_IGNORE_IO) && !io_eq(a, i, b, j)) {
    snprintf(why, wn, "inputs/outputs differ");
    return 0;
  }
  return 1;
}

static int meta_eq(const etsim_et_meta_t *a, const etsim_et_meta_t *b, unsigned flags) {
  if (!str_eq(a->version, b->version) || a->n_attrs != b->n_attrs) return 0;
  char why[64];
  for (size_t k = 0; k < a->n_attrs; k++)
    if (!attr_eq(&a->attrs[k], &b->attrs[k], flags, why, sizeof why)) return 0;
  return 1;
}

/* Totals of one side (each rank counted), with each distinct trace's
 * stats computed once. */
static int side_totals(const etsim_et_set_t *s, etsim_diff_side_t *d) {
  memset(d, 0, sizeof *d);
  d->ranks = s->n_ranks;
  int have_cp = 0;
  for (size_t k = 0; k < s->n_traces; k++) {
    const etsim_et_trace_t *t = s->traces[k];
    size_t mult = 0, first = 0;
    for (size_t r = 0; r < s->n_ranks; r++)
      if (s->ranks[r] == t && !mult++) first = r;
    if (!mult) continue;
    etsim_et_stats_t st;
    if (etsim_et_stats(t, &st)) return ETSIM_ENOMEM;
    d->nodes += mult * st.n_nodes;
    d->data_edges += mult * st.data_edges;
    d->ctrl_edges += mult * st.ctrl_edges;
    for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++) {
      d->coll_count[c] += mult * st.by_coll[c];
      d->coll_bytes[c] += mult * st.coll_bytes[c];
    }
    if (st.cyclic) {
      d->cyclic = 1;
    } else if (!have_cp || st.critical_path_ns > d->critical_path_ns) {
      have_cp = 1;
      d->critical_path_ns = st.critical_path_ns;
      d->critical_rank = first;
    }
    etsim_et_stats_free(&st);
    uint32_t k_ops = t->k_num_ops, k_sz = t->k_comm_size;
    for (size_t i = 0; i < t->n_nodes; i++) {
      int ty = t->type[i];
      d->by_type[ty] += mult;
      d->dur_us_by_type[ty] += mult * t->dur_us[i];
      int64_t v;
      if (etsim_et_trace_attr_int(t, i, k_ops, &v) == 1 && v > 0) d->num_ops += mult * (uint64_t)v;
      if (ty == ETSIM_ET_COMM_SEND_NODE && etsim_et_trace_attr_int(t, i, k_sz, &v) == 1 && v > 0)
        d->p2p_bytes += mult * (uint64_t)v;
    }
  }
  return 0;
}

/* Compare one pair of traces (mult ranks run it); the first difference is
 * noted for rank `rank` unless one was found before. */
static int pair(cmp_t *c, const etsim_et_trace_t *a, const etsim_et_trace_t *b, size_t mult,
                size_t rank, etsim_diff_report_t *rep) {
  char why[400];
  int rc;
  int meta_same =
      (c->o->flags & ETSIM_DIFF_IGNORE_METADATA) || meta_eq(&a->meta, &b->meta, c->o->flags);
  if (!meta_same) {
    rep->metadata_differs = 1;
    rep->equal = 0;
    if (!rep->have_first) {
      rep->have_first = 1;
      rep->first_rank = rank;
      rep->first_index = UINT64_MAX;
      snprintf(rep->first, sizeof rep->first, "rank %zu: GlobalMetadata differs", rank);
    }
  }
  /* By id. */
  for (size_t i = 0; i < a->n_nodes; i++) {
    size_t j;
    if (!etsim_et_trace_find(b, a->id[i], &j)) {
      rep->removed[a->type[i]] += mult;
      rep->edges_removed[0] += mult * (a->data_off[i + 1] - a->data_off[i]);
      rep->edges_removed[1] += mult * (a->ctrl_off[i + 1] - a->ctrl_off[i]);
      continue;
    }
    if ((rc = node_eq(c, a, i, b, j, 0, why, sizeof why)) < 0) return rc;
    if (!rc) rep->changed[a->type[i]] += mult;
    if (a->type[i] == ETSIM_ET_COMM_COLL_NODE && b->type[j] == ETSIM_ET_COMM_COLL_NODE) {
      int64_t x = -1, y = -1;
      etsim_et_trace_attr_int(a, i, a->k_comm_size, &x);
      etsim_et_trace_attr_int(b, j, b->k_comm_size, &y);
      if (x != y) rep->coll_resized += mult;
    }
    for (int ctrl = 0; ctrl < 2; ctrl++) {
      size_t na = dep_ids(a, i, ctrl, &c->ia, &c->ca), nb = dep_ids(b, j, ctrl, &c->ib, &c->cb);
      if (na == SIZE_MAX || nb == SIZE_MAX) return ETSIM_ENOMEM;
      size_t p = 0, q = 0;
      while (p < na || q < nb) {
        if (q >= nb || (p < na && c->ia[p] < c->ib[q])) {
          rep->edges_removed[ctrl] += mult;
          p++;
        } else if (p >= na || c->ib[q] < c->ia[p]) {
          rep->edges_added[ctrl] += mult;
          q++;
        } else {
          p++;
          q++;
        }
      }
    }
  }
  for (size_t j = 0; j < b->n_nodes; j++) {
    size_t i;
    if (etsim_et_trace_find(a, b->id[j], &i)) continue;
    rep->added[b->type[j]] += mult;
    rep->edges_added[0] += mult * (b->data_off[j + 1] - b->data_off[j]);
    rep->edges_added[1] += mult * (b->ctrl_off[j + 1] - b->ctrl_off[j]);
  }
  /* In file order: the first node that differs. */
  size_t n = a->n_nodes > b->n_nodes ? a->n_nodes : b->n_nodes;
  for (size_t i = 0; i < n; i++) {
    if (i >= a->n_nodes || i >= b->n_nodes) {
      const etsim_et_trace_t *t = i >= a->n_nodes ? b : a;
      snprintf(why, sizeof why,
               "node %llu (%s \"%.80s\") only in the %s; the %s ends after %zu "
               "node(s)",
               (unsigned long long)t->id[i], etsim_et_node_type_name(t->type[i]), t->name[i],
               t == a ? "first" : "second", t == a ? "second" : "first",
               t == a ? b->n_nodes : a->n_nodes);
    } else {
      if ((rc = node_eq(c, a, i, b, i, 1, why, sizeof why)) < 0) return rc;
      if (rc) continue;
      char tmp[sizeof why];
      int h = snprintf(tmp, sizeof tmp, "node %llu (%s \"%.60s\"): ", (unsigned long long)a->id[i],
                       etsim_et_node_type_name(a->type[i]), a->name[i]);
      if (h > 0 && (size_t)h < sizeof tmp) {
        size_t room = sizeof tmp - (size_t)h;
        memcpy(tmp + h, why, room - 1);
        tmp[sizeof tmp - 1] = 0;
      }
      memcpy(why, tmp, sizeof why);
    }
    rep->equal = 0;
    if (!rep->have_first || (rep->first_rank == rank && rep->first_index == UINT64_MAX)) {
      rep->have_first = 1;
      rep->first_rank = rank;
      rep->first_index = i;
      snprintf(rep->first, sizeof rep->first, "%s", why);
    }
    break;
  }
  return 0;
}

int etsim_diff(const char *pa, const char *pb, const etsim_diff_opts_t *opts,
               etsim_diff_report_t *rep, etsim_error_t *err) {
  etsim_diff_opts_t none = {0};
  if (!opts) opts = &none;
  memset(rep, 0, sizeof *rep);
  rep->equal = 1;
  etsim_et_set_t *a = NULL, *b = NULL;
  int rc = etsim_et_set_load(&a, pa, 0, err);
  if (!rc) rc = etsim_et_set_load(&b, pb, 0, err);
  if (rc) {
    etsim_et_set_free(a);
    return rc;
  }
  cmp_t c = {0};
  c.o = opts;
  if ((rc = load_groups(pa, a->n_ranks, &c.ga, err)) < 0 ||
      (rc = load_groups(pb, b->n_ranks, &c.gb, err)) < 0)
    goto done;
  c.have_ga = c.ga.n > 0;
  c.have_gb = c.gb.n > 0;
  rc = 0;
  if (side_totals(a, &rep->a) || side_totals(b, &rep->b)) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  if (a->n_ranks != b->n_ranks) {
    rep->equal = 0;
    rep->have_first = 1;
    rep->first_rank = 0;
    rep->first_index = UINT64_MAX;
    snprintf(rep->first, sizeof rep->first, "%zu rank(s) vs %zu", a->n_ranks, b->n_ranks);
  }
  size_t n = a->n_ranks < b->n_ranks ? a->n_ranks : b->n_ranks;
  /* Pairs of (a trace, b trace), each compared once. */
  etsim_u64map_t seen;
  etsim_u64map_init(&seen);
  for (size_t r = 0; r < n && !rc; r++) {
    uint64_t key = ((uint64_t)a->rank_trace[r] << 32) | b->rank_trace[r];
    int fresh = etsim_u64map_put(&seen, key, 0, NULL);
    if (fresh < 0) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    if (!fresh) continue;
    size_t mult = 0;
    for (size_t q = r; q < n; q++)
      mult += a->rank_trace[q] == a->rank_trace[r] && b->rank_trace[q] == b->rank_trace[r];
    if (pair(&c, a->ranks[r], b->ranks[r], mult, r, rep) < 0)
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  etsim_u64map_free(&seen);
  if (a->n_ranks != b->n_ranks && rep->first_index != UINT64_MAX) {
    /* The rank counts come first; the first node that differs after. */
    char tmp[sizeof rep->first];
    int h = snprintf(tmp, sizeof tmp, "%zu rank(s) vs %zu; rank %zu, node index %llu: ", a->n_ranks,
                     b->n_ranks, rep->first_rank, (unsigned long long)rep->first_index);
    if (h > 0 && (size_t)h < sizeof tmp) {
      memcpy(tmp + h, rep->first, sizeof tmp - (size_t)h - 1);
      tmp[sizeof tmp - 1] = 0;
    }
    memcpy(rep->first, tmp, sizeof tmp);
    rep->first_rank = 0;
    rep->first_index = UINT64_MAX;
  }
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++)
    if (rep->added[t] || rep->removed[t] || rep->changed[t]) rep->equal = 0;
done:
  etsim_edit__groups_free(&c.ga);
  etsim_edit__groups_free(&c.gb);
  etsim_free(c.ia);
  etsim_free(c.ib);
  etsim_free(c.aa);
  etsim_free(c.ab);
  etsim_et_set_free(a);
  etsim_et_set_free(b);
  return rc;
}
