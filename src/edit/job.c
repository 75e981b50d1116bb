/*
 * job.c — one output file: stream its segments through the operation
 * chain twice.
 *
 * The scan pass records the skeleton (job_int.h) and what the selections
 * need to know about each node (their predicates' outcomes as bits, a
 * structural hash for iteration finding, recorded cut dependencies); then
 * graph.c applies the selections, joins and insertions in op order; the
 * write pass runs the same chain again — now applying every content
 * operation — and writes the nodes that survived, with the dependencies
 * graph.c computed for them.  Both passes visit nodes in the same order
 * (a file node, the nodes inserted before it, itself, the nodes inserted
 * after it), so a stream index names the same node in both.
 *
 * Memory is the skeleton plus one node at a time: the reader's view, a
 * working copy per insertion depth, and an arena reset per file node.
 */
#include "job_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- utilities */

void etsim_edit__note(etsim_edit_report_t *rep, const char *fmt, ...) {
  if (!rep) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  char **n = etsim_realloc(rep->notes, (rep->n_notes + 1) * sizeof *n);
  if (!n) return;
  rep->notes = n;
  char *dup = etsim_strdup(line);
  if (dup) rep->notes[rep->n_notes++] = dup;
}

void etsim_edit__jobout_free(ed_jobout_t *o) {
  for (size_t i = 0; i < o->n_seq; i++) etsim_free(o->seq[i].pg);
  etsim_free(o->seq);
  etsim_free(o->p2p);
  memset(o, 0, sizeof *o);
}

static int oom(ed_jrt_t *J) { return etsim_error_set(J->err, ETSIM_ENOMEM, "out of memory"); }

static const char *seg_path(const ed_jrt_t *J, size_t si) {
  return J->p->files[J->j->segs[si].file].path;
}

static int is_bit_op(int kind) {
  return kind == ED_KEEP || kind == ED_DROP || kind == ED_ITER || kind == ED_ITER_ONLY ||
         kind == ED_RANKS;
}

static int is_insert(int kind) { return kind == ED_INSERT_BEFORE || kind == ED_INSERT_AFTER; }

/* Every per-node array of J grown to cap nodes (the stream's scan, and the
 * join points graph.c appends after it); the bit rows' new words zeroed. */
int etsim_edit__grow_node_arrays(ed_jrt_t *J, size_t cap) {
#define GROW(arr)                                          \
  do {                                                     \
    void *np_ = etsim_realloc((arr), cap * sizeof *(arr)); \
    if (!np_) return oom(J);                               \
    (arr) = np_;                                           \
  } while (0)
  GROW(J->id);
  GROW(J->type);
  GROW(J->seg);
  GROW(J->born);
  GROW(J->dead);
  if (J->need_hash) GROW(J->hash);
  if (J->have_inserts) {
    GROW(J->anchor);
    GROW(J->alias);
  }
#undef GROW
  uint32_t *off = etsim_realloc(J->off, (cap + 1) * sizeof *off);
  if (!off) return oom(J);
  if (!J->off) off[0] = 0;
  J->off = off;
  size_t words = cap / 64 + 1;
  for (int b = 0; b < J->e->n_bits; b++) {
    uint64_t *w = etsim_realloc(J->bits[b], words * sizeof *w);
    if (!w) return oom(J);
    memset(w + J->bits_words, 0, (words - J->bits_words) * sizeof *w);
    J->bits[b] = w;
  }
  J->bits_words = words;
  J->cap = cap;
  return 0;
}

/* Room for one more stream node. */
static int grow_nodes(ed_jrt_t *J) {
  if (J->n < J->cap) return 0;
  size_t cap = J->cap ? J->cap + J->cap / 2 : 4096;
  if (cap >= ED_EDGE_CTRL - 1)
    return etsim_error_set(J->err, ETSIM_ERANGE, "%s: more than 2^31 nodes in one output file",
                           seg_path(J, J->cur_seg));
  return etsim_edit__grow_node_arrays(J, cap);
}

static int push_edge(ed_jrt_t *J, uint32_t v) {
  if (J->n_dep == J->cap_dep &&
      etsim_grow((void **)&J->dep, &J->cap_dep, J->n_dep + 1, sizeof *J->dep))
    return oom(J);
  J->dep[J->n_dep++] = v;
  return 0;
}

/* --------------------------------------------------------- segment ids */

/* The id range of a file: from an earlier segment of the same file, or a
 * pass over it (only --concat's traces need one). */
static int file_range(ed_jrt_t *J, size_t si, uint64_t *lo, uint64_t *hi) {
  uint32_t f = J->j->segs[si].file;
  for (size_t k = 0; k < si; k++)
    if (J->j->segs[k].file == f && J->segs[k].have_range) {
      *lo = J->segs[k].id_min;
      *hi = J->segs[k].id_max;
      return 0;
    }
  etsim_et_reader_t *r;
  int rc = etsim_et_reader_open(&r, seg_path(J, si), 0, J->err);
  if (rc) return rc;
  const etsim_et_node_t *v;
  *lo = UINT64_MAX;
  *hi = 0;
  while ((rc = etsim_et_reader_next(r, &v, J->err)) == 1) {
    if (v->id < *lo) *lo = v->id;
    if (v->id > *hi) *hi = v->id;
  }
  etsim_et_reader_close(r);
  return rc < 0 ? rc : 0;
}

static int seg_begin(ed_jrt_t *J, size_t si) {
  J->cur_seg = si;
  J->seg_pos = 0;
  J->dense = 1;
  J->n_fwd = 0;
  etsim_u64map_free(&J->idmap);
  ed_segrt_t *g = &J->segs[si];
  if (J->writing) return 0; /* offsets and positions are the scan's */
  g->first = (uint32_t)J->n;
  g->offset = 0;
  if (si > 0) {
    /* Ids of a later segment move past the ids so far when they overlap. */
    uint64_t out_lo = UINT64_MAX, out_hi = 0;
    int any = 0;
    for (size_t k = 0; k < si; k++)
      if (J->segs[k].have_range) {
        any = 1;
        if (J->segs[k].id_min + J->segs[k].offset < out_lo)
          out_lo = J->segs[k].id_min + J->segs[k].offset;
        if (J->segs[k].id_max + J->segs[k].offset > out_hi)
          out_hi = J->segs[k].id_max + J->segs[k].offset;
      }
    uint64_t lo, hi;
    int rc = file_range(J, si, &lo, &hi);
    if (rc) return rc;
    if (any && lo <= hi && !(hi < out_lo || lo > out_hi)) {
      if (out_hi - lo + 1 > UINT64_MAX - hi)
        return etsim_error_set(J->err, ETSIM_ERANGE, "%s: ids would overflow when appended",
                               seg_path(J, si));
      g->offset = out_hi + 1 - lo;
    }
  }
  return 0;
}

static int seg_lookup(const ed_jrt_t *J, uint64_t raw, uint32_t *s) {
  if (J->dense) {
    if (J->seg_pos == 0 || raw < J->dense_base || raw - J->dense_base >= J->seg_pos) return 0;
    uint64_t i = raw - J->dense_base;
    *s = J->have_inserts ? J->pos_idx[i] : J->segs[J->cur_seg].first + (uint32_t)i;
    return 1;
  }
  return etsim_u64map_get(&J->idmap, raw, s);
}

static int seg_register(ed_jrt_t *J, uint64_t raw, uint32_t s) {
  if (J->seg_pos == 0) J->dense_base = raw;
  if (J->dense && raw == J->dense_base + J->seg_pos) {
    if (J->have_inserts) {
      if (etsim_grow((void **)&J->pos_idx, &J->cap_pos, J->seg_pos + 1, sizeof *J->pos_idx))
        return oom(J);
      J->pos_idx[J->seg_pos] = s;
    }
    J->seg_pos++;
    return 0;
  }
  if (J->dense) {
    /* Ids stopped counting up: index the ones so far in a map. */
    if (etsim_u64map_reserve(&J->idmap, (size_t)J->seg_pos * 2 + 16)) return oom(J);
    for (uint64_t i = 0; i < J->seg_pos; i++) {
      uint32_t si = J->have_inserts ? J->pos_idx[i] : J->segs[J->cur_seg].first + (uint32_t)i;
      if (etsim_u64map_put(&J->idmap, J->dense_base + i, si, NULL) < 0) return oom(J);
    }
    J->dense = 0;
  }
  uint32_t old;
  int rc = etsim_u64map_put(&J->idmap, raw, s, &old);
  if (rc < 0) return oom(J);
  if (rc == 0)
    return etsim_error_set(J->err, ETSIM_EFORMAT,
                           "%s: node %llu: the id appears twice (node index %llu); edit needs "
                           "unique ids",
                           seg_path(J, J->cur_seg), (unsigned long long)raw,
                           (unsigned long long)J->seg_pos);
  J->seg_pos++;
  return 0;
}

/* Follow the after-insert aliases: a data dependency on X means the last
 * node inserted after X. */
static uint32_t alias_end(const ed_jrt_t *J, uint32_t s) {
  if (!J->have_inserts) return s;
  while (J->alias[s] != UINT32_MAX) s = J->alias[s];
  return s;
}

static int seg_end(ed_jrt_t *J) {
  ed_segrt_t *g = &J->segs[J->cur_seg];
  g->end = (uint32_t)J->n;
  uint64_t gone_d = 0, gone_c = 0;
  for (size_t k = 0; k < J->n_fwd; k++) {
    uint32_t ctrl = J->dep[J->fwd[k].pos] & ED_EDGE_CTRL;
    uint32_t s;
    if (seg_lookup(J, J->fwd[k].raw, &s)) {
      if (!ctrl) s = alias_end(J, s);
      J->dep[J->fwd[k].pos] = s | ctrl;
    } else {
      J->dep[J->fwd[k].pos] = ED_EDGE_GONE;
      if (ctrl) gone_c++;
      else gone_d++;
    }
  }
  if (gone_d + gone_c) {
    J->rep->dangling += gone_d + gone_c;
    etsim_edit__note(J->rep,
                     "%s: %llu data and %llu control dependencies on ids absent from the file "
                     "dropped",
                     seg_path(J, J->cur_seg), (unsigned long long)gone_d,
                     (unsigned long long)gone_c);
  }
  J->n_fwd = 0;
  return 0;
}

/* ------------------------------------------------------------ appending */

/* The structural hash iteration finding compares: what stays the same
 * from one step to the next. */
static uint64_t struct_hash(const ed_node_t *x) {
  uint64_t h = etsim_hash_bytes(x->n.name, strlen(x->n.name)) ^ ((uint64_t)x->n.type << 56);
  int64_t v;
  if (etsim_edit__node_int(x, "comm_type", &v)) h = etsim_hash_u64(h ^ (uint64_t)v);
  if (etsim_edit__node_int(x, "comm_size", &v)) h = etsim_hash_u64(h + (uint64_t)v);
  return h;
}

static int record_prov(ed_jrt_t *J, const etsim_et_node_t *v, uint32_t s) {
  for (size_t i = 0; i < v->n_attrs; i++) {
    const etsim_attr_t *a = &v->attrs[i];
    uint32_t ctrl;
    if (strcmp(a->name, "cut_data_deps") == 0) ctrl = 0;
    else if (strcmp(a->name, "cut_ctrl_deps") == 0) ctrl = 1;
    else continue;
    if (a->kind != ETSIM_ATTR_UINT64_LIST) continue;
    const uint64_t *ids = a->v.list.v;
    for (size_t k = 0; k < a->v.list.n; k++) {
      if (etsim_grow((void **)&J->prov, &J->cap_prov, J->n_prov + 1, sizeof *J->prov))
        return oom(J);
      J->prov[J->n_prov++] = (ed_prov_t){s, ctrl, ids[k]};
    }
  }
  return 0;
}

static int append_scan(ed_jrt_t *J, ed_node_t *x, const etsim_et_node_t *view, uint32_t *out) {
  int rc = grow_nodes(J);
  if (rc) return rc;
  uint32_t s = (uint32_t)J->n;
  J->id[s] = x->born < 0 ? x->n.id : UINT64_MAX;
  J->type[s] = (uint8_t)x->n.type;
  J->seg[s] = (uint16_t)J->cur_seg;
  J->born[s] = x->born < 0 ? ED_ORIG : (uint16_t)x->born;
  J->dead[s] = ED_ALIVE;
  if (J->need_hash) J->hash[s] = x->hash;
  if (J->have_inserts) {
    J->anchor[s] = x->anchor;
    J->alias[s] = UINT32_MAX;
  }
  for (int b = 0; b < J->e->n_bits; b++)
    if ((x->bits >> b) & 1) J->bits[b][s >> 6] |= 1ULL << (s & 63);
  for (size_t i = 0; i < x->n_deps; i++) {
    const ed_dep_t *d = &x->deps[i];
    uint32_t ctrl = d->flags & ED_DEP_CTRL ? ED_EDGE_CTRL : 0;
    if (d->flags & ED_DEP_IDX) {
      if ((rc = push_edge(J, (uint32_t)d->v | ctrl))) return rc;
      continue;
    }
    uint32_t t;
    if (seg_lookup(J, d->v, &t)) {
      if ((rc = push_edge(J, (ctrl ? t : alias_end(J, t)) | ctrl))) return rc;
    } else {
      if (etsim_grow((void **)&J->fwd, &J->cap_fwd, J->n_fwd + 1, sizeof *J->fwd)) return oom(J);
      J->fwd[J->n_fwd++] = (struct ed_fwd){J->n_dep, d->v};
      if ((rc = push_edge(J, ctrl))) return rc;
    }
  }
  J->off[s + 1] = (uint32_t)J->n_dep;
  if (J->n_dep >= ED_EDGE_CTRL)
    return etsim_error_set(J->err, ETSIM_ERANGE, "%s: more than 2^31 dependencies in one job",
                           seg_path(J, J->cur_seg));
  J->n++;
  if (x->born < 0) {
    if ((rc = seg_register(J, x->raw_id, s))) return rc;
    if (view && (rc = record_prov(J, view, s))) return rc;
  }
  *out = s;
  return 0;
}

/* ------------------------------------------------------------- writing */

/* Record what the cross-rank check compares; 0 or ETSIM_ENOMEM (a lost
 * record would read as a mismatch between ranks). */
static int account(ed_jrt_t *J, const etsim_et_node_t *o) {
  ed_jobout_t *out = J->out;
  out->nodes++;
  int t = o->type;
  if (t != ETSIM_ET_COMM_COLL_NODE && t != ETSIM_ET_COMM_SEND_NODE && t != ETSIM_ET_COMM_RECV_NODE)
    return 0;
  int64_t v, ct = -1, sz = -1;
  const etsim_attr_t *a;
  if ((a = etsim_et_node_attr(o, "comm_type")) && !etsim_attr_as_int(a, &v)) ct = v;
  if ((a = etsim_et_node_attr(o, "comm_size")) && !etsim_attr_as_int(a, &v)) sz = v;
  if (t == ETSIM_ET_COMM_COLL_NODE) {
    a = etsim_et_node_attr(o, "pg_name");
    const char *pg = a && a->kind == ETSIM_ATTR_STRING ? a->v.s : "";
    if (etsim_edit__pg_world(pg)) pg = "";
    size_t k = 0;
    while (k < out->n_seq && strcmp(out->seq[k].pg, pg) != 0) k++;
    if (k == out->n_seq) {
      if (etsim_grow((void **)&out->seq, &out->cap_seq, k + 1, sizeof *out->seq)) return oom(J);
      char *d = etsim_strdup(pg);
      if (!d) return oom(J);
      out->seq[k] = (ed_pgseq_t){d, 0, 0};
      out->n_seq++;
    }
    out->seq[k].count++;
    out->seq[k].hash = etsim_hash_u64(out->seq[k].hash * 31 + (uint64_t)ct) ^ (uint64_t)sz;
    return 0;
  }
  ed_p2p_t p = {t == ETSIM_ET_COMM_SEND_NODE, INT64_MIN, INT64_MIN, 0, sz, o->id};
  if ((a = etsim_et_node_attr(o, "comm_src")) && !etsim_attr_as_int(a, &v)) p.src = v;
  else if (!p.send) p.src = -1;
  if ((a = etsim_et_node_attr(o, "comm_dst")) && !etsim_attr_as_int(a, &v)) p.dst = v;
  else if (p.send) p.dst = -1;
  if ((a = etsim_et_node_attr(o, "comm_tag")) && !etsim_attr_as_int(a, &v)) p.tag = v;
  if (etsim_grow((void **)&out->p2p, &out->cap_p2p, out->n_p2p + 1, sizeof *out->p2p))
    return oom(J);
  out->p2p[out->n_p2p++] = p;
  return 0;
}

/* Write alive stream node s from x (content already changed). */
static int emit(ed_jrt_t *J, const ed_node_t *x, uint32_t s) {
  size_t nd, nc;
  int rc = etsim_edit__graph_deps(J, s, &nd, &nc);
  if (rc) return rc == ETSIM_ENOMEM ? oom(J) : rc;
  etsim_et_node_t o = x->n;
  o.id = etsim_edit__graph_out_id(J, s);
  o.data_deps = J->odeps;
  o.n_data_deps = nd;
  o.ctrl_deps = J->odeps ? J->odeps + nd : NULL; /* no dependencies yet: no buffer */
  o.n_ctrl_deps = nc;
  /* Attributes: recorded cuts that a join consumed go; new cuts merge in. */
  uint8_t used = J->prov_used && s < J->n_scan ? J->prov_used[s] : 0;
  if (!used && !J->n_ocut[0] && !J->n_ocut[1]) {
    if ((rc = etsim_et_writer_node(J->w, &o, J->err))) return rc;
    if (x->changed) J->rep->changed++;
    return account(J, &o);
  }
  size_t na = x->n.n_attrs + 2;
  if (etsim_grow((void **)&J->oattrs, &J->cap_oattrs, na, sizeof *J->oattrs)) return oom(J);
  size_t k = 0;
  int have[2] = {0, 0};
  for (size_t i = 0; i < x->n.n_attrs; i++) {
    const etsim_attr_t *a = &x->attrs[i];
    int kind = strcmp(a->name, "cut_data_deps") == 0   ? 0
               : strcmp(a->name, "cut_ctrl_deps") == 0 ? 1
                                                       : -1;
    if (kind >= 0 && (used >> kind) & 1) continue;
    J->oattrs[k] = *a;
    if (kind >= 0 && a->kind == ETSIM_ATTR_UINT64_LIST && J->n_ocut[kind]) {
      /* Merge the cuts recorded before with this edit's. */
      size_t m = a->v.list.n + J->n_ocut[kind];
      uint64_t *l = etsim_arena_alloc(&J->arena, m * sizeof *l);
      if (!l) return oom(J);
      if (a->v.list.n) memcpy(l, a->v.list.v, a->v.list.n * sizeof *l);
      memcpy(l + a->v.list.n, J->ocut[kind], J->n_ocut[kind] * sizeof *l);
      J->oattrs[k].v.list.n = m;
      J->oattrs[k].v.list.v = l;
      have[kind] = 1;
    }
    k++;
  }
  for (int kind = 0; kind < 2; kind++)
    if (J->n_ocut[kind] && !have[kind]) {
      etsim_attr_t a = {.name = kind ? "cut_ctrl_deps" : "cut_data_deps",
                        .doc = "",
                        .kind = ETSIM_ATTR_UINT64_LIST};
      a.v.list.n = J->n_ocut[kind];
      a.v.list.v = J->ocut[kind];
      J->oattrs[k++] = a;
    }
  o.attrs = J->oattrs;
  o.n_attrs = k;
  if ((rc = etsim_et_writer_node(J->w, &o, J->err))) return rc;
  if (x->changed) J->rep->changed++;
  return account(J, &o);
}

/* Synthetic nodes (concat join points) due before stream index s. */
static int emit_synthetic(ed_jrt_t *J, uint32_t s) {
  while (J->next_syn < J->n_syn && J->syn[J->next_syn].before <= s) {
    uint32_t k = J->syn[J->next_syn++].s;
    if (!ed_alive(J, k)) continue;
    ed_node_t x = {0};
    x.n.type = ETSIM_ET_METADATA_NODE;
    x.n.name = "etsim_join";
    int rc = emit(J, &x, k);
    if (rc) return rc;
    J->rep->inserted++;
  }
  return 0;
}

/* The one-pass form: dependencies straight from the file (the writer
 * checks them; a trace it refuses goes the two-pass way). */
static int emit_direct(ed_jrt_t *J, const ed_node_t *x) {
  if (etsim_grow((void **)&J->odeps, &J->cap_odeps, x->n_deps + 1, sizeof *J->odeps)) return oom(J);
  size_t nd = 0, k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < x->n_deps; i++)
      if (((x->deps[i].flags & ED_DEP_CTRL) != 0) == pass) {
        J->odeps[k++] = x->deps[i].v;
        if (!pass) nd++;
      }
  etsim_et_node_t o = x->n;
  o.data_deps = J->odeps;
  o.n_data_deps = nd;
  o.ctrl_deps = J->odeps + nd;
  o.n_ctrl_deps = k - nd;
  int rc = etsim_et_writer_node(J->w, &o, J->err);
  if (rc) return rc;
  if (x->changed) J->rep->changed++;
  return account(J, &o);
}

static int append_write(ed_jrt_t *J, ed_node_t *x, uint32_t *out) {
  uint32_t s = (uint32_t)J->stream++;
  if (J->direct) {
    *out = s;
    return emit_direct(J, x);
  }
  int rc = emit_synthetic(J, s);
  if (rc) return rc;
  if (s >= J->n_scan)
    return etsim_error_set(J->err, ETSIM_EINTERNAL,
                           "%s: the write pass saw more nodes than the scan",
                           seg_path(J, J->cur_seg));
  *out = s;
  if (!ed_alive(J, s)) return 0;
  if (x->born >= 0) J->rep->inserted++;
  return emit(J, x, s);
}

/* ----------------------------------------------------------- the chain */

/* The node inserted by op k next to x, into n. */
static int make_insert(ed_jrt_t *J, const ed_op_t *op, size_t k, ed_node_t *n) {
  n->n = (etsim_et_node_t){0};
  n->n.name = op->ins_name;
  n->n.type = op->ins_type;
  n->n.id = UINT64_MAX;
  n->n.attrs = n->attrs;
  n->n_deps = 0;
  n->born = (int)k;
  n->anchor = UINT32_MAX;
  n->bits = 0;
  n->hash = 0;
  n->changed = 0;
  n->arena = &J->arena;
  int rc = etsim_edit__node_set_int(n, "is_cpu_op", ETSIM_ATTR_BOOL, 0);
  if (!rc && op->ins_type == ETSIM_ET_COMP_NODE) rc = etsim_edit__node_set_ns(n, op->ins_value);
  if (!rc && op->ins_type == ETSIM_ET_COMM_COLL_NODE) {
    rc = etsim_edit__node_set_int(n, "comm_type", ETSIM_ATTR_INT64, op->ins_coll);
    if (!rc)
      rc = etsim_edit__node_set_int(n, "comm_size", ETSIM_ATTR_INT64, (int64_t)op->ins_value);
    if (!rc && op->ins_pg) rc = etsim_edit__node_set_str(n, "pg_name", op->ins_pg);
  }
  n->hash = 0;
  return rc ? oom(J) : 0;
}

static int dep_push(ed_jrt_t *J, ed_node_t *x, uint64_t v, unsigned flags) {
  if (etsim_grow((void **)&x->deps, &x->cap_deps, x->n_deps + 1, sizeof *x->deps)) return oom(J);
  x->deps[x->n_deps++] = (ed_dep_t){v, flags};
  return 0;
}

static int visit(ed_jrt_t *J, size_t depth, size_t k0, const etsim_et_node_t *view, uint32_t *out);

/* Node pool[depth] runs through ops [k0, hi); then it is appended, and
 * the nodes inserted after it run from the op after theirs. */
static int visit(ed_jrt_t *J, size_t depth, size_t k0, const etsim_et_node_t *view, uint32_t *out) {
  etsim_edit_t *e = J->e;
  ed_node_t *x = &J->pool[depth];
  const ed_seg_t *sg = &J->j->segs[J->cur_seg];
  if (J->writing && !J->direct && !J->have_inserts && J->stream < J->n_scan &&
      !ed_alive(J, J->stream)) {
    /* Without insertions a node's stream index is known before its ops
     * run: a dropped node needs none of them. */
    *out = (uint32_t)J->stream;
    return append_write(J, x, out);
  }
  size_t pend[64], n_pend = 0;
  uint32_t before[64];
  size_t n_before = 0;
  int first_iter = 1;
  int rc = 0;
  for (size_t k = k0; k < J->hi; k++) {
    ed_op_t *op = &e->ops[k];
    int kind = op->kind;
    if (is_bit_op(kind) && !J->writing) {
      if (kind == ED_KEEP || kind == ED_DROP) {
        if (etsim_edit__pred_match(&op->pred, x)) x->bits |= 1ULL << op->bit;
      } else if (kind == ED_ITER || kind == ED_ITER_ONLY) {
        if (first_iter && J->need_hash) x->hash = struct_hash(x);
        first_iter = 0;
        if (e->have_marker && regexec(&e->marker, x->n.name, 0, NULL, 0) == 0)
          x->bits |= 1ULL << op->bit;
      } else if (kind == ED_RANKS) {
        /* A send or receive whose peer is not kept goes. */
        const ed_rankop_t *ro = &J->p->rank[k];
        const char *peer = x->n.type == ETSIM_ET_COMM_SEND_NODE   ? "comm_dst"
                           : x->n.type == ETSIM_ET_COMM_RECV_NODE ? "comm_src"
                                                                  : NULL;
        int64_t q;
        if (peer && etsim_edit__node_int(x, peer, &q) && q >= 0 && (size_t)q < ro->n_before &&
            ro->peer[q] < 0)
          x->bits |= 1ULL << op->bit;
      }
    }
    if (etsim_edit__kind_is_content(kind) || etsim_edit__kind_is_rank(kind)) {
      if (J->writing || J->scan_content[k]) {
        int is_b = sg->created_by == k;
        if ((rc = etsim_edit__content(e, J->p, J->j, k, is_b, x, J->err))) return rc;
      }
    } else if (is_insert(kind) && etsim_edit__pred_match(&op->pred, x)) {
      if (kind == ED_INSERT_AFTER) {
        if (n_pend == 64)
          return etsim_error_set(J->err, ETSIM_ERANGE, "more than 64 insertions after one node");
        pend[n_pend++] = k;
        continue;
      }
      /* Before: the new node takes x's dependencies, x waits for it. */
      ed_node_t *n = &J->pool[depth + 1];
      if ((rc = make_insert(J, op, k, n))) return rc;
      for (size_t i = 0; i < x->n_deps; i++)
        if ((rc = dep_push(J, n, x->deps[i].v, x->deps[i].flags))) return rc;
      uint32_t sn;
      if ((rc = visit(J, depth + 1, k + 1, NULL, &sn))) return rc;
      if (n_before < 64) before[n_before++] = sn;
      size_t m = 0;
      for (size_t i = 0; i < x->n_deps; i++)
        if (x->deps[i].flags & ED_DEP_CTRL) x->deps[m++] = x->deps[i];
      x->n_deps = m;
      if ((rc = dep_push(J, x, sn, ED_DEP_IDX))) return rc;
    }
  }
  uint32_t s;
  rc = J->writing ? append_write(J, x, &s) : append_scan(J, x, view, &s);
  if (rc) return rc;
  if (!J->writing && J->have_inserts)
    for (size_t i = 0; i < n_before; i++) J->anchor[before[i]] = s;
  for (size_t i = 0; i < n_pend; i++) {
    size_t k = pend[i];
    ed_node_t *n = &J->pool[depth + 1];
    if ((rc = make_insert(J, &e->ops[k], k, n))) return rc;
    uint32_t end = J->writing ? s : alias_end(J, s);
    n->anchor = s;
    if ((rc = dep_push(J, n, end, ED_DEP_IDX))) return rc;
    uint32_t sn;
    if ((rc = visit(J, depth + 1, k + 1, NULL, &sn))) return rc;
    if (!J->writing) J->alias[end] = sn;
  }
  *out = s;
  return 0;
}

/* -------------------------------------------------------------- passes */

static int pass(ed_jrt_t *J, int writing) {
  J->writing = writing;
  J->stream = 0;
  J->next_syn = 0;
  int rc = 0;
  for (size_t si = 0; si < J->j->n_segs; si++) {
    const ed_seg_t *sg = &J->j->segs[si];
    if ((rc = seg_begin(J, si))) return rc;
    etsim_et_reader_t *r;
    if ((rc = etsim_et_reader_open(&r, seg_path(J, si), 0, J->err))) return rc;
    if (writing && si == 0) {
      etsim_et_meta_t meta;
      etsim_attr_t *ma = NULL;
      if (etsim_edit__meta(J->e, J->lo, J->hi, etsim_et_reader_meta(r), &meta, &ma, &J->arena))
        rc = oom(J);
      else rc = etsim_et_writer_meta(J->w, &meta, J->err);
      etsim_free(ma);
      etsim_arena_reset(&J->arena);
    }
    const etsim_et_node_t *v;
    size_t k0 = sg->entry > J->lo ? sg->entry : J->lo;
    uint64_t lo = UINT64_MAX, hi = 0;
    while (!rc && (rc = etsim_et_reader_next(r, &v, J->err)) == 1) {
      ed_node_t *x = &J->pool[0];
      x->arena = &J->arena;
      if (etsim_edit__node_from_view(x, v)) {
        rc = oom(J);
        break;
      }
      x->raw_id = v->id;
      x->n.id = v->id + J->segs[si].offset;
      if (v->id < lo) lo = v->id;
      if (v->id > hi) hi = v->id;
      uint32_t s;
      rc = visit(J, 0, k0, v, &s);
      etsim_arena_reset(&J->arena);
    }
    etsim_et_reader_close(r);
    if (rc < 0) return rc;
    rc = 0;
    if (J->direct) J->rep->nodes_in += J->stream;
    if (!writing) {
      J->segs[si].id_min = lo;
      J->segs[si].id_max = hi;
      J->segs[si].have_range = lo <= hi;
      J->rep->nodes_in += J->seg_pos;
      if ((rc = seg_end(J))) return rc;
    }
  }
  if (writing && !J->direct) rc = emit_synthetic(J, UINT32_MAX);
  return rc;
}

static void jrt_free(ed_jrt_t *J) {
  etsim_edit__graph_free(J);
  etsim_free(J->id);
  etsim_free(J->type);
  etsim_free(J->seg);
  etsim_free(J->born);
  etsim_free(J->dead);
  etsim_free(J->off);
  etsim_free(J->dep);
  etsim_free(J->hash);
  for (int b = 0; J->bits && b < J->e->n_bits; b++) etsim_free(J->bits[b]);
  etsim_free(J->bits);
  etsim_free(J->alias);
  etsim_free(J->anchor);
  etsim_free(J->scan_content);
  etsim_free(J->pos_idx);
  etsim_u64map_free(&J->idmap);
  etsim_free(J->fwd);
  etsim_free(J->segs);
  etsim_free(J->prov);
  for (size_t d = 0; J->pool && d < J->n_pool; d++) etsim_edit__node_free(&J->pool[d]);
  etsim_free(J->pool);
  etsim_arena_free(&J->arena);
  etsim_free(J->odeps);
  etsim_free(J->ocut[0]);
  etsim_free(J->ocut[1]);
  etsim_free(J->oattrs);
}

int etsim_edit__job_run(etsim_edit_t *e, const ed_plan_t *p, size_t lo, size_t hi, size_t ji,
                        const char *path, ed_jobout_t *out, etsim_edit_report_t *rep,
                        etsim_error_t *err) {
  ed_jrt_t J = {0};
  J.e = e;
  J.p = p;
  J.j = &p->jobs[ji];
  J.lo = lo;
  J.hi = hi;
  J.err = err;
  J.rep = rep;
  J.out = out;
  etsim_arena_init(&J.arena, 16 * 1024);
  int rc = 0;
  size_t n_ins = 0;
  for (size_t k = lo; k < hi; k++) {
    int kind = e->ops[k].kind;
    if (is_insert(kind)) n_ins++;
    if (kind == ED_ITER || kind == ED_ITER_ONLY) J.need_hash = 1;
  }
  J.have_inserts = n_ins > 0;
  J.n_pool = n_ins + 2;
  J.pool = etsim_calloc(J.n_pool, sizeof *J.pool);
  J.segs = etsim_calloc(J.j->n_segs ? J.j->n_segs : 1, sizeof *J.segs);
  J.bits = etsim_calloc((size_t)e->n_bits + 1, sizeof *J.bits);
  J.scan_content = etsim_calloc(hi + 1, 1);
  if (!J.pool || !J.segs || !J.bits || !J.scan_content) {
    rc = oom(&J);
    goto done;
  }
  /* Content operations run in the scan only when a later predicate would
   * see what they change. */
  int later_pred = 0;
  for (size_t k = hi; k-- > lo;) {
    J.scan_content[k] = (uint8_t)later_pred;
    int kind = e->ops[k].kind;
    if (is_bit_op(kind) || is_insert(kind)) later_pred = 1;
  }
  /* Content operations alone need no skeleton: one pass, unless the
   * writer finds the file's ids or dependencies wanting (duplicates,
   * absent ids), which the two passes handle. */
  int direct = J.j->n_segs == 1 && !e->opts.renumber && strcmp(path, "-") != 0;
  for (size_t k = lo; k < hi && direct; k++) {
    int kind = e->ops[k].kind;
    direct = etsim_edit__kind_is_content(kind) || kind == ED_REMAP || kind == ED_DP ||
             kind == ED_NPUS || kind == ED_BESIDE;
  }
  if (direct) {
    etsim_edit_report_t saved = *rep;
    J.direct = 1;
    if ((rc = etsim_et_writer_open(&J.w, path, e->opts.gzip ? ETSIM_ET_WRITE_GZIP : 0, err)))
      goto done;
    rc = pass(&J, 1);
    if (!rc) {
      out->bytes = etsim_et_writer_bytes(J.w);
      rc = etsim_et_writer_commit(J.w, err);
    } else {
      etsim_et_writer_abort(J.w);
    }
    J.w = NULL;
    if (rc != ETSIM_EINVAL) goto done;
    /* Back to the start, the two-pass way. */
    saved.notes = rep->notes;
    saved.n_notes = rep->n_notes;
    *rep = saved;
    etsim_edit__jobout_free(out);
    J.direct = 0;
    rc = 0;
  }
  if ((rc = pass(&J, 0))) goto done;
  J.n_scan = J.n;
  if ((rc = etsim_edit__graph_resolve(&J))) goto done;
  /* The skeleton makes the ids unique and every dependency name a written
   * node, so the writer need not check again (its check hashes every id
   * once a selection leaves gaps in them). */
  if ((rc = etsim_et_writer_open(
           &J.w, path, ETSIM_ET_WRITE_VERBATIM | (e->opts.gzip ? ETSIM_ET_WRITE_GZIP : 0), err)))
    goto done;
  if ((rc = pass(&J, 1))) goto done;
  out->bytes = etsim_et_writer_bytes(J.w);
  rc = etsim_et_writer_commit(J.w, err);
  J.w = NULL;
done:
  if (J.w) etsim_et_writer_abort(J.w);
  jrt_free(&J);
  return rc;
}
