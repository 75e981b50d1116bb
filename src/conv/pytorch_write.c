/*
 * pytorch_write.c — dependencies and output of the PyTorch converter.
 *
 * Nodes are written in one pass, converted operators in id order, each
 * followed by the GPU kernels it launched.  A node may only depend on a
 * node already written, which makes every output acyclic and closed by
 * construction; an edge that would point forwards is dropped and counted.
 *
 *  - per host thread (attr `tid`), each operator after the previous one;
 *  - across threads, a consumer of a tensor after the op that produced it;
 *  - a `wait` after the collective with its sequence number;
 *  - a host op that synchronises (cuda*Synchronize) after the last kernel
 *    of every stream launched before the call;
 *  - a kernel after its launching op (data and control) and after the
 *    previous kernel on its stream.
 */
#include "conv/pytorch_conv_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { MAX_ATTRS = 24 };
#define PTC_GAP_NS 1000000 /* 1 ms, chakra_trace_link's threshold */

typedef struct deps {
  uint64_t *v;
  size_t n, cap;
} deps_t;

static int dep_add(deps_t *d, uint64_t id) {
  for (size_t i = 0; i < d->n; i++)
    if (d->v[i] == id) return 0;
  if (etsim_grow((void **)&d->v, &d->cap, d->n + 1, sizeof *d->v)) return ETSIM_ENOMEM;
  d->v[d->n++] = id;
  return 0;
}

/* A small id -> value table over etsim_u64map (values live in arrays). */
typedef struct table {
  etsim_u64map_t map;
  uint64_t *a, *b; /* two payload words per entry */
  int64_t *c;
  size_t n, cap;
} table_t;

static int table_set(table_t *t, uint64_t key, uint64_t a, uint64_t b, int64_t c) {
  uint32_t i;
  if (etsim_u64map_get(&t->map, key, &i)) {
    t->a[i] = a;
    t->b[i] = b;
    t->c[i] = c;
    return 0;
  }
  if (t->n + 1 > t->cap) {
    size_t ca = t->cap, cb = t->cap, cc = t->cap;
    if (etsim_grow((void **)&t->a, &ca, t->n + 1, sizeof *t->a) ||
        etsim_grow((void **)&t->b, &cb, t->n + 1, sizeof *t->b) ||
        etsim_grow((void **)&t->c, &cc, t->n + 1, sizeof *t->c))
      return ETSIM_ENOMEM;
    t->cap = ca < cb ? (ca < cc ? ca : cc) : (cb < cc ? cb : cc);
  }
  if (etsim_u64map_put(&t->map, key, (uint32_t)t->n, NULL) < 0) return ETSIM_ENOMEM;
  t->a[t->n] = a;
  t->b[t->n] = b;
  t->c[t->n] = c;
  t->n++;
  return 0;
}

static int table_get(const table_t *t, uint64_t key, size_t *i) {
  uint32_t v;
  if (!etsim_u64map_get(&t->map, key, &v)) return 0;
  *i = v;
  return 1;
}

static void table_free(table_t *t) {
  etsim_u64map_free(&t->map);
  etsim_free(t->a);
  etsim_free(t->b);
  etsim_free(t->c);
}

typedef struct attrs {
  etsim_attr_t a[MAX_ATTRS];
  size_t n;
} attrs_t;

/* The next attribute of t, named and typed, its value for the caller. */
static etsim_attr_t *at_new(attrs_t *t, const char *name, int kind) {
  assert(t->n < MAX_ATTRS);
  etsim_attr_t *a = &t->a[t->n++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->doc = "";
  a->kind = kind;
  return a;
}
static void at_i64(attrs_t *t, const char *name, int64_t v) {
  at_new(t, name, ETSIM_ATTR_INT64)->v.i64 = v;
}
static void at_i32(attrs_t *t, const char *name, int32_t v) {
  at_new(t, name, ETSIM_ATTR_INT32)->v.i32 = v;
}
static void at_bool(attrs_t *t, const char *name, int v) {
  at_new(t, name, ETSIM_ATTR_BOOL)->v.b = v != 0;
}
static void at_str(attrs_t *t, const char *name, const char *v) {
  at_new(t, name, ETSIM_ATTR_STRING)->v.s = v;
}
/* A string as protobuf's string fields need it, valid UTF-8: PyTorch
 * copies operator and tensor names byte for byte, and an invalid one made
 * Chakra's readers (and etsim jsonize) refuse the file.  Each byte that
 * starts no valid sequence becomes U+FFFD, in a copy in the arena; valid
 * strings are returned as they are.  NULL when out of memory. */
static const char *utf8_clean(ptc_t *c, const char *s) {
  size_t n = strlen(s), ok = etsim_utf8_valid(s, n);
  if (ok == n) return s;
  c->bad_utf8++;
  char *out = etsim_arena_alloc(&c->arena, 3 * n + 1), *o = out;
  if (!out) return NULL;
  while (n) {
    memcpy(o, s, ok);
    o += ok, s += ok, n -= ok;
    if (!n) break;
    memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD for the one bad byte */
    o += 3, s++, n--;
    ok = etsim_utf8_valid(s, n);
  }
  *o = '\0';
  return out;
}

/* Write a node with every string made valid UTF-8 (name, string
 * attributes, input and output descriptions). */
static int write_node(ptc_t *c, etsim_et_writer_t *w, etsim_et_node_t *nv, etsim_error_t *err) {
  int bad = !(nv->name = utf8_clean(c, nv->name));
  etsim_ioinfo_t *io[2] = {(etsim_ioinfo_t *)nv->inputs, (etsim_ioinfo_t *)nv->outputs};
  for (int k = 0; k < 2 && !bad; k++)
    if (io[k])
      bad = !(io[k]->values = utf8_clean(c, io[k]->values)) ||
            !(io[k]->shapes = utf8_clean(c, io[k]->shapes)) ||
            !(io[k]->types = utf8_clean(c, io[k]->types));
  etsim_attr_t *a = (etsim_attr_t *)nv->attrs;
  for (size_t k = 0; k < nv->n_attrs && !bad; k++)
    if (a[k].kind == ETSIM_ATTR_STRING) bad = !(a[k].v.s = utf8_clean(c, a[k].v.s));
  if (bad) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", c->host_path);
  return etsim_et_writer_node(w, nv, err);
}

/* Integer microseconds for a duration in ns: nearest, but never 0 for a
 * non-zero duration (the exact value travels in duration_ns). */
static uint64_t dur_us(int64_t ns) {
  if (ns <= 0) return 0;
  uint64_t us = ((uint64_t)ns + 500) / 1000;
  return us ? us : 1;
}

/* The communication attributes of a comm node. */
static void comm_attrs(const ptc_t *c, attrs_t *t, const ptc_ext_t *e) {
  if (e->kind == PTC_COLL) at_i64(t, "comm_type", e->coll);
  at_i64(t, "comm_size", (int64_t)e->comm_bytes);
  if (e->pg_name && e->pg_name[0]) at_str(t, "pg_name", e->pg_name);
  if (e->kind == PTC_SEND || e->kind == PTC_RECV) {
    int64_t peer = ptc_global_rank(e->grs, e->grstride, e->rank_arg);
    int32_t self = (int32_t)c->rank;
    at_i32(t, "comm_src", e->kind == PTC_SEND ? self : (int32_t)peer);
    at_i32(t, "comm_dst", e->kind == PTC_SEND ? (int32_t)peer : self);
    at_i32(t, "comm_tag", 0);
  }
}

static void host_attrs(attrs_t *t, const ptc_node_t *h, const ptc_ext_t *e, int is_cpu) {
  at_i64(t, "rf_id", h->rf_id);
  at_i64(t, "fw_parent", e->fw_parent);
  at_i64(t, "seq_id", e->seq_id);
  at_i64(t, "scope", e->scope);
  at_i64(t, "tid", e->tid);
  at_i64(t, "fw_tid", e->fw_tid);
  at_str(t, "op_schema", e->op_schema);
  at_bool(t, "is_cpu_op", is_cpu);
}

/* Whether a process group goes to the communicator-group file: ASTRA-sim
 * reserves id 0 (and "") for all ranks and reads positive integer ids. */
static int group_listed(const ptc_pg_t *pg) {
  const char *p = pg->name;
  if (!*p || (p[0] == '0' && !p[1])) return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

static int write_groups(const ptc_t *c, const char *path, etsim_outfile_t *of, etsim_error_t *err) {
  ptr_buf_t b = {0};
  int rc = etsim_conv__pt_repr_puts(&b, "{");
  size_t listed = 0;
  for (size_t i = 0; i < c->n_pgs && !rc; i++) {
    const ptc_pg_t *pg = &c->pgs[i];
    if (!group_listed(pg)) continue;
    rc = etsim_conv__pt_repr_puts(&b, listed++ ? ",\n  " : "\n  ") ||
         etsim_conv__pt_repr_json_str(&b, pg->name) || etsim_conv__pt_repr_puts(&b, ": [");
    size_t n = pg->n_ranks ? pg->n_ranks : (size_t)(pg->group_size > 0 ? pg->group_size : 0);
    for (size_t r = 0; r < n && !rc; r++) {
      char num[32];
      snprintf(num, sizeof num, "%s%" PRId64, r ? ", " : "",
               pg->n_ranks ? pg->ranks[r] : (int64_t)r);
      rc = etsim_conv__pt_repr_puts(&b, num);
    }
    if (!rc) rc = etsim_conv__pt_repr_puts(&b, "]");
  }
  if (!rc) rc = etsim_conv__pt_repr_puts(&b, "\n}\n");
  if (rc) {
    etsim_conv__pt_repr_free(&b);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  if ((rc = etsim_outfile_open(of, path, err))) {
    etsim_conv__pt_repr_free(&b);
    return rc;
  }
  if (fwrite(b.data, 1, b.len, of->fp) != b.len) {
    etsim_conv__pt_repr_free(&b);
    etsim_outfile_abort(of);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  etsim_conv__pt_repr_free(&b);
  return 0;
}

/* What the steps of etsim_conv__pt_write share: the output, the summary,
 * the dependency list being built, and the tables that find a node's
 * dependencies (last op per thread, tensor producers, collectives by
 * sequence number, last kernel per stream); ki and si walk the kernels and
 * the stream syncs in op order. */
typedef struct pw {
  ptc_t *c;
  etsim_et_writer_t *w;
  etsim_convpt_summary_t *s;
  deps_t dd;
  table_t last_tid, prod, seqs, lastk;
  size_t ki, si;
  uint64_t next_kid; /* ids for kernels without their own */
  int warned_unknown;
  uint64_t n_comm;
} pw_t;

/* dep_add and table_set fail only for memory, and say nothing. */
static int nomem(etsim_error_t *err) { return etsim_error_set(err, ETSIM_ENOMEM, "out of memory"); }

/* The trace's metadata: schema, pid, time, start and finish. */
static int write_meta(const ptc_t *c, etsim_et_writer_t *w, etsim_error_t *err) {
  etsim_attr_t meta_attrs[5];
  memset(meta_attrs, 0, sizeof meta_attrs);
  const char *mnames[5] = {"schema", "pid", "time", "start_ts", "finish_ts"};
  for (int i = 0; i < 5; i++) {
    meta_attrs[i].name = mnames[i];
    meta_attrs[i].doc = "";
  }
  meta_attrs[0].kind = ETSIM_ATTR_STRING;
  meta_attrs[0].v.s = c->schema;
  meta_attrs[1].kind = ETSIM_ATTR_UINT64;
  meta_attrs[1].v.u64 = c->pid;
  meta_attrs[2].kind = ETSIM_ATTR_STRING;
  meta_attrs[2].v.s = c->time;
  meta_attrs[3].kind = ETSIM_ATTR_UINT64;
  meta_attrs[3].v.u64 = c->start_ts;
  meta_attrs[4].kind = ETSIM_ATTR_UINT64;
  meta_attrs[4].v.u64 = c->finish_ts;
  etsim_et_meta_t meta = {"", 5, meta_attrs};
  return etsim_et_writer_meta(w, &meta, err);
}

/* The node type of op `pos`; *comm_here when the host node itself carries
 * the communication (no kernel of the op does). */
static int op_type(pw_t *o, size_t pos, const ptc_node_t *h, const ptc_ext_t *e, int *comm_here) {
  const ptc_t *c = o->c;
  int comm = (h->flags & PTC_F_COMM) != 0;
  int type = ETSIM_ET_COMP_NODE;
  *comm_here = 0;
  if (h->flags & PTC_F_PGINIT) {
    type = ETSIM_ET_METADATA_NODE;
  } else if (comm && (e->kind == PTC_COLL || e->kind == PTC_SEND || e->kind == PTC_RECV)) {
    o->n_comm++;
    if (!(c->op_comm_kernel && c->op_comm_kernel[pos])) {
      *comm_here = 1;
      type = e->kind == PTC_COLL   ? ETSIM_ET_COMM_COLL_NODE
             : e->kind == PTC_SEND ? ETSIM_ET_COMM_SEND_NODE
                                   : ETSIM_ET_COMM_RECV_NODE;
    }
  } else if (comm && e->kind == PTC_UNKNOWN) {
    o->s->unknown_comm++;
    if (!o->warned_unknown++)
      etsim_warn("%s: node %" PRIu64
                 ": communication record '%s' of "
                 "unknown kind kept as a compute node (all such cases are "
                 "counted in the summary)",
                 c->host_path, h->id, e->coll_name);
  }
  return type;
}

/* The data dependencies of op `pos` (started at ts, or -1) into o->dd: the
 * thread's previous op, across threads, tensors, waits and stream syncs.
 * 0 or ETSIM_ENOMEM. */
static int op_deps(pw_t *o, size_t pos, const ptc_node_t *h, const ptc_ext_t *e, int64_t ts,
                   etsim_error_t *err) {
  ptc_t *c = o->c;
  etsim_convpt_summary_t *s = o->s;
  deps_t *dd = &o->dd;
  table_t *last_tid = &o->last_tid, *prod = &o->prod, *seqs = &o->seqs, *lastk = &o->lastk;
  int comm = (h->flags & PTC_F_COMM) != 0;
  size_t i;
  int have_prev = table_get(last_tid, (uint64_t)e->tid, &i);
  if (have_prev && dep_add(dd, last_tid->a[i])) return nomem(err);
  /* Across threads: as a thread's first op, or after a gap of more
   * than 1 ms on its thread, an op follows the op that finished last
   * on another thread before it started (chakra_trace_link's
   * inter_thread_dep, same threshold). */
  if (ts >= 0 &&
      (!have_prev || (last_tid->b[i] != UINT64_MAX && ts - (int64_t)last_tid->b[i] > PTC_GAP_NS))) {
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < last_tid->n; k++)
      if (last_tid->c[k] != e->tid && last_tid->b[k] != UINT64_MAX &&
          (int64_t)last_tid->b[k] <= ts && (best == SIZE_MAX || last_tid->b[k] > last_tid->b[best]))
        best = k;
    if (best != SIZE_MAX) {
      size_t before = dd->n;
      if (dep_add(dd, last_tid->a[best])) return nomem(err);
      s->inter_thread_edges += dd->n - before;
    }
  }
  /* An ET+ file names it directly. */
  uint32_t ti;
  if (e->itd >= 0 && ptc_find(c, (uint64_t)e->itd, &ti)) {
    uint32_t top = ptc_top_op(c, ti);
    if (top != UINT32_MAX && c->op_pos[top] < pos) {
      size_t before = dd->n;
      if (dep_add(dd, c->nodes[top].id)) return nomem(err);
      s->inter_thread_edges += dd->n - before;
    }
  }
  for (uint32_t k = 0; k < e->tin_n; k++) {
    uint64_t key = c->tkeys[e->tin_off + k];
    if (table_get(prod, key, &i) && prod->c[i] != e->tid) {
      size_t before = dd->n;
      if (dep_add(dd, prod->a[i])) return nomem(err);
      s->tensor_edges += dd->n - before;
    }
  }
  if (comm && e->kind == PTC_WAIT) {
    if (e->seq >= 0 && table_get(seqs, (uint64_t)e->seq, &i)) {
      if (dep_add(dd, seqs->a[i])) return nomem(err);
      s->wait_edges++;
    } else {
      s->unmatched_waits++;
    }
  }
  for (; o->si < c->n_syncs && c->syncs[o->si].pos < pos; o->si++)
    ;
  for (; o->si < c->n_syncs && c->syncs[o->si].pos == pos; o->si++) {
    for (size_t k = 0; k < lastk->n; k++)
      if ((int64_t)lastk->b[k] < c->syncs[o->si].ts_ns) {
        size_t before = dd->n;
        if (dep_add(dd, lastk->a[k])) return nomem(err);
        s->sync_edges += dd->n - before;
      }
  }
  return 0;
}

/* The GPU kernels of op `pos` (host node h), each after its op and the
 * stream's previous kernel.  0, ETSIM_ENOMEM or the writer's error. */
static int write_kernels(pw_t *o, size_t pos, const ptc_node_t *h, const ptc_ext_t *e,
                         etsim_error_t *err) {
  ptc_t *c = o->c;
  etsim_convpt_summary_t *s = o->s;
  deps_t *dd = &o->dd;
  int rc;
  for (; o->ki < c->n_kern && c->kern[o->ki].pos < pos; o->ki++)
    ;
  for (; o->ki < c->n_kern && c->kern[o->ki].pos == pos; o->ki++) {
    const ptc_kernel_t *kk = &c->kern[o->ki];
    const ptk_ev_t *v = &c->evs[kk->ev];
    uint64_t kid = v->node_id ? v->node_id : o->next_kid++;
    int ktype = ETSIM_ET_COMP_NODE;
    if (kk->comm)
      ktype = e->kind == PTC_COLL   ? ETSIM_ET_COMM_COLL_NODE
              : e->kind == PTC_SEND ? ETSIM_ET_COMM_SEND_NODE
                                    : ETSIM_ET_COMM_RECV_NODE;
    dd->n = 0;
    if (dep_add(dd, h->id)) return nomem(err);
    size_t i;
    if (table_get(&o->lastk, (uint64_t)v->stream, &i)) {
      if (o->lastk.c[i] <= v->ts_ns) {
        if (dep_add(dd, o->lastk.a[i])) return nomem(err);
      } else {
        s->dropped_edges++;
      }
    }
    attrs_t at;
    at.n = 0;
    at_i64(&at, "rf_id", h->rf_id);
    at_i64(&at, "tid", e->tid);
    at_bool(&at, "is_cpu_op", 0);
    at_i64(&at, "stream", v->stream);
    at_i64(&at, "correlation", v->corr);
    at_i64(&at, "duration_ns", v->dur_ns);
    if (kk->comm) comm_attrs(c, &at, e);
    etsim_et_node_t kv;
    memset(&kv, 0, sizeof kv);
    kv.id = kid;
    kv.name = etsim_intern_str(&c->names, v->name);
    kv.type = ktype;
    kv.start_time_micros = v->ts_ns > 0 ? (uint64_t)v->ts_ns / 1000 : 0;
    kv.duration_micros = dur_us(v->dur_ns);
    kv.n_data_deps = dd->n;
    kv.data_deps = dd->v;
    kv.n_ctrl_deps = 1;
    kv.ctrl_deps = &h->id;
    kv.n_attrs = at.n;
    kv.attrs = at.a;
    if ((rc = write_node(c, o->w, &kv, err))) return rc;
    s->kernels++;
    s->by_type[ktype]++;
    s->data_edges += dd->n;
    s->ctrl_edges++;
    if (kk->comm) {
      if (e->kind == PTC_COLL) s->by_coll[e->coll]++;
      s->comm_bytes += e->comm_bytes;
      if (e->seq >= 0 && table_set(&o->seqs, (uint64_t)e->seq, kid, 0, 0)) return nomem(err);
    }
    if (table_set(&o->lastk, (uint64_t)v->stream, kid, (uint64_t)kk->launch_ts_ns, v->ts_ns))
      return nomem(err);
  }
  return 0;
}

/* Op `pos` (a host node) and then its kernels.  0, ETSIM_ENOMEM or the
 * writer's error. */
static int write_op(pw_t *o, size_t pos, etsim_error_t *err) {
  ptc_t *c = o->c;
  etsim_convpt_summary_t *s = o->s;
  deps_t *dd = &o->dd;
  const ptc_node_t *h = &c->nodes[c->ops[pos]];
  const ptc_ext_t *e = &c->exts[h->ext];
  int comm_here, rc;
  int type = op_type(o, pos, h, e, &comm_here);
  int64_t ts = -1, dur = -1;
  if (c->op_ts && c->op_ts[pos] >= 0) {
    ts = c->op_ts[pos];
    dur = c->op_dur[pos];
  } else if (h->flags & PTC_F_TIMED) {
    ts = e->ts_ns;
    dur = e->dur_ns;
  }
  dd->n = 0;
  if (type != ETSIM_ET_METADATA_NODE && (rc = op_deps(o, pos, h, e, ts, err))) return rc;
  attrs_t at;
  at.n = 0;
  host_attrs(&at, h, e, !comm_here);
  if (comm_here) comm_attrs(c, &at, e);
  if (type != ETSIM_ET_METADATA_NODE) {
    s->host_ops++;
    if (c->op_ts) {
      if (c->op_ts[pos] >= 0) s->linked_ops++;
      else s->unlinked_ops++;
    }
  }
  if (dur >= 0) at_i64(&at, "duration_ns", dur);
  etsim_ioinfo_t in = {e->in_values, e->in_shapes, e->in_types};
  etsim_ioinfo_t out = {e->out_values, e->out_shapes, e->out_types};
  etsim_et_node_t nv;
  memset(&nv, 0, sizeof nv);
  nv.id = h->id;
  nv.name = etsim_intern_str(&c->names, h->name);
  nv.type = type;
  nv.start_time_micros = ts > 0 ? (uint64_t)ts / 1000 : 0;
  nv.duration_micros = dur > 0 ? dur_us(dur) : 0;
  nv.n_data_deps = dd->n;
  nv.data_deps = dd->v;
  nv.inputs = &in;
  nv.outputs = &out;
  nv.n_attrs = at.n;
  nv.attrs = at.a;
  if ((rc = write_node(c, o->w, &nv, err))) return rc;
  s->by_type[type]++;
  s->data_edges += dd->n;
  if (comm_here) {
    if (e->kind == PTC_COLL) s->by_coll[e->coll]++;
    s->comm_bytes += e->comm_bytes;
    if (e->seq >= 0 && table_set(&o->seqs, (uint64_t)e->seq, h->id, 0, 0)) return nomem(err);
  }
  if (type != ETSIM_ET_METADATA_NODE) {
    uint64_t end = ts >= 0 ? (uint64_t)(ts + (dur > 0 ? dur : 0)) : UINT64_MAX;
    if (table_set(&o->last_tid, (uint64_t)e->tid, h->id, end, e->tid)) return nomem(err);
    for (uint32_t k = 0; k < e->tout_n; k++)
      if (table_set(&o->prod, c->tkeys[e->tout_off + k], h->id, 0, e->tid)) return nomem(err);
  }
  return write_kernels(o, pos, h, e, err);
}

/* What the conversion left out or guessed, as warnings (n_comm: the
 * communication ops seen). */
static void warn_summary(const ptc_t *c, const etsim_convpt_summary_t *s, uint64_t n_comm) {
  if (n_comm && c->n_pgs == 0)
    etsim_warn(
        "%s: communication without a '## process_group:init ##' "
        "record: no communicator groups written; pg_name comes from "
        "the records alone",
        c->host_path);
  if (s->orphans)
    etsim_warn("%s: %" PRIu64
               " node(s) name a caller that is not in the trace; "
               "they are treated as top level",
               c->host_path, s->orphans);
  if (s->unmatched_waits)
    etsim_warn("%s: %" PRIu64 " wait(s) for a collective not in the trace", c->host_path,
               s->unmatched_waits);
  if (c->op_ts) { /* a Kineto trace was joined */
    if (s->unlinked_ops)
      etsim_warn("%s: %" PRIu64 " of %" PRIu64
                 " operators have no Kineto "
                 "event (kept without timing)",
                 c->host_path, s->unlinked_ops, s->host_ops);
    if (s->profiler_steps == 0)
      etsim_warn(
          "no ProfilerStep annotation in the Kineto trace: the whole "
          "trace is converted as one span");
  }
  if (s->unlaunched_kernels)
    etsim_warn("%" PRIu64
               " GPU event(s) whose launch or operator is not "
               "in the traces were left out",
               s->unlaunched_kernels);
  if (s->unknown_kernels)
    etsim_warn("%" PRIu64
               " NCCL-named kernel(s) under no known "
               "communication op kept as compute",
               s->unknown_kernels);
  if (s->dropped_edges)
    etsim_warn("%" PRIu64
               " stream-order edge(s) that would point forwards "
               "were left out",
               s->dropped_edges);
}

int etsim_conv__pt_write(ptc_t *c, const char *path, const char *groups_path, unsigned write_flags,
                         etsim_convpt_summary_t *s, etsim_error_t *err) {
  etsim_outfile_t gof;
  int have_gof = 0;
  pw_t o = {.c = c, .s = s, .next_kid = c->max_id + 1};
  etsim_u64map_init(&o.last_tid.map);
  etsim_u64map_init(&o.prod.map);
  etsim_u64map_init(&o.seqs.map);
  etsim_u64map_init(&o.lastk.map);
  int rc = etsim_et_writer_open(&o.w, path, write_flags, err);
  if (rc) goto fail;
  if ((rc = write_meta(c, o.w, err))) goto fail;
  for (size_t pos = 0; pos < c->n_ops; pos++)
    if ((rc = write_op(&o, pos, err))) goto fail;
  if (o.n_comm && c->n_pgs == 0) s->missing_pg_init = 1;
  warn_summary(c, s, o.n_comm);
  s->profiler_steps += c->host_profiler_steps;
  size_t n_listed = 0, n_named = 0;
  for (size_t i = 0; i < c->n_pgs; i++) {
    n_listed += group_listed(&c->pgs[i]);
    n_named += c->pgs[i].name[0] && strcmp(c->pgs[i].name, "0") != 0 && !group_listed(&c->pgs[i]);
  }
  if (n_named)
    etsim_warn(
        "%s: %zu process group(s) with a non-numeric pg_name left out of "
        "the communicator-group file (ASTRA-sim reads integer ids)",
        c->host_path, n_named);
  if (groups_path && groups_path[0] && n_listed) {
    if ((rc = write_groups(c, groups_path, &gof, err))) goto fail;
    have_gof = 1;
  }
  if (c->bad_utf8)
    etsim_warn(
        "%s: %llu string(s) were not valid UTF-8 (names copied byte for byte); each bad "
        "byte became U+FFFD",
        c->host_path, (unsigned long long)c->bad_utf8);
  s->nodes_written = etsim_et_writer_nodes(o.w);
  rc = etsim_et_writer_commit(o.w, err);
  o.w = NULL;
  if (rc) goto fail;
  if (have_gof) {
    have_gof = 0;
    if ((rc = etsim_outfile_commit(&gof, err))) {
      remove(path);
      goto fail;
    }
    snprintf(s->groups_path, sizeof s->groups_path, "%s", groups_path);
  }
  goto done;
fail:
  if (o.w) etsim_et_writer_abort(o.w);
  if (have_gof) etsim_outfile_abort(&gof);
done:
  etsim_free(o.dd.v);
  table_free(&o.last_tid);
  table_free(&o.prod);
  table_free(&o.seqs);
  table_free(&o.lastk);
  return rc;
}
