/*
 * trace.c — a whole Chakra file in memory.
 *
 * Loading streams the file once.  Per node it keeps id, times, type, a name
 * in the arena, an io index and CSR offsets; attributes become 16-byte
 * records with names interned.  Dependencies are first gathered as raw
 * 64-bit ids, then resolved in place to 32-bit node indices (ids absent from
 * the file go to the `dangling` table), and the child lists are built by a
 * counting pass: O(nodes + edges), no per-node allocation.
 */
#include "et_int.h"

#include <string.h>

/* ----------------------------------------------------------- the index */

/* id -> index: u32 slots holding index + 1, keys read from t->id, so a slot
 * costs 4 bytes.  Stored in t->index.vals; t->index.keys stays NULL. */
static int index_build(etsim_et_trace_t *t) {
  size_t i0 = 0;
  while (i0 + 1 < t->n_nodes && t->id[i0 + 1] == t->id[i0] + 1)
    i0++;
  if (t->n_nodes && i0 + 1 == t->n_nodes) {
    t->dense = 1; /* consecutive ids: the index is arithmetic */
    return 0;
  }
  size_t cap = 16;
  while (cap * 7 / 10 < t->n_nodes)
    cap *= 2;
  uint32_t *slots = etsim_calloc(cap, sizeof *slots);
  if (!slots)
    return ETSIM_ENOMEM;
  size_t mask = cap - 1, ndup = 0, dcap = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    size_t h = etsim_hash_u64(t->id[i]) & mask;
    int dup = 0;
    while (slots[h]) {
      if (t->id[slots[h] - 1] == t->id[i]) {
        dup = 1;
        break;
      }
      h = (h + 1) & mask;
    }
    if (dup) {
      if (etsim_grow((void **)&t->dup_idx, &dcap, ndup + 1, sizeof *t->dup_idx)) {
        etsim_free(slots);
        return ETSIM_ENOMEM;
      }
      t->dup_idx[ndup++] = (uint32_t)i;
      continue;
    }
    slots[h] = (uint32_t)i + 1;
  }
  t->n_dup = ndup;
  t->index.vals = slots;
  t->index.cap = cap;
  t->index.count = t->n_nodes - ndup;
  return 0;
}

int etsim_et_trace_find(const etsim_et_trace_t *t, uint64_t id, size_t *idx) {
  if (t->dense) {
    /* Ids are id[0], id[0]+1, ... in file order: no hashing needed. */
    uint64_t k = id - t->id[0];
    if (id < t->id[0] || k >= t->n_nodes)
      return 0;
    *idx = (size_t)k;
    return 1;
  }
  if (!t->index.cap)
    return 0;
  size_t mask = t->index.cap - 1;
  size_t h = etsim_hash_u64(id) & mask;
  const uint32_t *slots = t->index.vals;
  while (slots[h]) {
    if (t->id[slots[h] - 1] == id) {
      *idx = slots[h] - 1;
      return 1;
    }
    h = (h + 1) & mask;
  }
  return 0;
}

/* ------------------------------------------------------------- loading */

#define NAME_CACHE 32

typedef struct {
  size_t n_cap, attr_cap, io_cap;
  uint32_t name_id[NAME_CACHE]; /* interned name of the k-th attribute of the
                                   previous node: nodes of one file tend to
                                   repeat their attribute lists */
  uint64_t *data_raw, *ctrl_raw; /* become data_par / ctrl_par */
  size_t data_cap, ctrl_cap;
} builder_t;

static int grow_nodes(etsim_et_trace_t *t, builder_t *b) {
  size_t need = t->n_nodes + 2; /* room for the CSR end offset */
  if (need <= b->n_cap)
    return 0;
  size_t cap = b->n_cap ? b->n_cap + b->n_cap / 2 : 1024;
  if (cap > ETSIM_ET_DANGLING - 1)
    return ETSIM_ERANGE;
#define G(field)                                                               \
  do {                                                                         \
    void *p = etsim_realloc(t->field, cap * sizeof *t->field);                 \
    if (!p)                                                                    \
      return ETSIM_ENOMEM;                                                     \
    t->field = p;                                                              \
  } while (0)
  G(id);
  G(start_us);
  G(dur_us);
  G(name);
  G(type);
  G(io);
  G(attr_off);
  G(data_off);
  G(ctrl_off);
#undef G
  b->n_cap = cap;
  return 0;
}

/* Copy a view attribute into a compact record; data go to the arena. */
static int attr_store(etsim_et_trace_t *t, etsim_et_attrrec_t *rec,
                      const etsim_attr_t *a, uint32_t *cache) {
  int64_t name;
  if (cache && strcmp(etsim_intern_str(&t->strings, *cache), a->name) == 0)
    name = *cache;
  else
    name = etsim_intern_put(&t->strings, a->name, strlen(a->name));
  if (cache && name >= 0)
    *cache = (uint32_t)name;
  int64_t doc = a->doc && a->doc[0]
                    ? etsim_intern_put(&t->strings, a->doc, strlen(a->doc))
                    : 0;
  if (name < 0 || doc < 0)
    return ETSIM_ENOMEM;
  if (doc >= (1 << 24))
    return ETSIM_ERANGE;
  rec->name = (uint32_t)name;
  rec->kind_doc = (uint32_t)a->kind | ((uint32_t)doc << 8);
  rec->v.u = 0;
  switch (a->kind) {
  case ETSIM_ATTR_NONE: break;
  case ETSIM_ATTR_DOUBLE: rec->v.d = a->v.d; break;
  case ETSIM_ATTR_FLOAT: memcpy(&rec->v.u, &a->v.f, sizeof a->v.f); break;
  case ETSIM_ATTR_INT32:
  case ETSIM_ATTR_SINT32:
  case ETSIM_ATTR_SFIXED32: rec->v.i = a->v.i32; break;
  case ETSIM_ATTR_UINT32:
  case ETSIM_ATTR_FIXED32: rec->v.u = a->v.u32; break;
  case ETSIM_ATTR_INT64:
  case ETSIM_ATTR_SINT64:
  case ETSIM_ATTR_SFIXED64: rec->v.i = a->v.i64; break;
  case ETSIM_ATTR_UINT64:
  case ETSIM_ATTR_FIXED64: rec->v.u = a->v.u64; break;
  case ETSIM_ATTR_BOOL: rec->v.u = a->v.b != 0; break;
  case ETSIM_ATTR_STRING: {
    const char *s = a->v.s ? a->v.s : "";
    if (!(rec->v.p = etsim_arena_strndup(&t->arena, s, strlen(s))))
      return ETSIM_ENOMEM;
    break;
  }
  case ETSIM_ATTR_BYTES: {
    etsim_et_blob_t *bl =
        etsim_arena_alloc(&t->arena, sizeof *bl + a->v.bytes.len + 1);
    if (!bl)
      return ETSIM_ENOMEM;
    bl->n = a->v.bytes.len;
    bl->elem_size = 1;
    if (a->v.bytes.len)
      memcpy(et_blob_data(bl), a->v.bytes.data, a->v.bytes.len);
    rec->v.p = bl;
    break;
  }
  default: {
    size_t es = et_list_elem_size(a->kind);
    if (!es)
      return ETSIM_EFORMAT;
    size_t n = a->v.list.n;
    etsim_et_blob_t *bl = etsim_arena_alloc(&t->arena, sizeof *bl + n * es);
    if (!bl)
      return ETSIM_ENOMEM;
    bl->n = n;
    bl->elem_size = es;
    if (n)
      memcpy(et_blob_data(bl), a->v.list.v, n * es);
    if (a->kind == ETSIM_ATTR_STRING_LIST) {
      const char **dst = et_blob_data(bl);
      for (size_t i = 0; i < n; i++)
        if (!(dst[i] = etsim_arena_strndup(&t->arena, dst[i], strlen(dst[i]))))
          return ETSIM_ENOMEM;
    } else if (a->kind == ETSIM_ATTR_BYTES_LIST) {
      etsim_bytes_t *dst = et_blob_data(bl);
      for (size_t i = 0; i < n; i++) {
        uint8_t *c = etsim_arena_alloc(&t->arena, dst[i].len + 1);
        if (!c)
          return ETSIM_ENOMEM;
        if (dst[i].len)
          memcpy(c, dst[i].data, dst[i].len);
        dst[i].data = c;
      }
    }
    rec->v.p = bl;
    break;
  }
  }
  return 0;
}

static const char *arena_str(etsim_arena_t *a, const char *s) {
  if (!s || !*s)
    return "";
  return etsim_arena_strndup(a, s, strlen(s));
}

static int add_io(etsim_et_trace_t *t, builder_t *b, const etsim_et_node_t *n,
                  uint32_t *out) {
  *out = 0;
  if (!n->inputs && !n->outputs)
    return 0;
  if (etsim_grow((void **)&t->ios, &b->io_cap, t->n_ios + 1, sizeof *t->ios))
    return ETSIM_ENOMEM;
  etsim_et_io_t *io = &t->ios[t->n_ios];
  memset(io, 0, sizeof *io);
  io->in.values = io->in.shapes = io->in.types = "";
  io->out = io->in;
  if (n->inputs) {
    io->flags |= 1;
    io->in.values = arena_str(&t->arena, n->inputs->values);
    io->in.shapes = arena_str(&t->arena, n->inputs->shapes);
    io->in.types = arena_str(&t->arena, n->inputs->types);
  }
  if (n->outputs) {
    io->flags |= 2;
    io->out.values = arena_str(&t->arena, n->outputs->values);
    io->out.shapes = arena_str(&t->arena, n->outputs->shapes);
    io->out.types = arena_str(&t->arena, n->outputs->types);
  }
  if (!io->in.values || !io->in.shapes || !io->in.types || !io->out.values ||
      !io->out.shapes || !io->out.types)
    return ETSIM_ENOMEM;
  *out = (uint32_t)t->n_ios++;
  return 0;
}

static int add_node(etsim_et_trace_t *t, builder_t *b, const etsim_et_node_t *n) {
  int rc = grow_nodes(t, b);
  if (rc)
    return rc;
  size_t i = t->n_nodes;
  t->id[i] = n->id;
  t->start_us[i] = n->start_time_micros;
  t->dur_us[i] = n->duration_micros;
  t->type[i] = (uint8_t)n->type;
  if (!(t->name[i] = arena_str(&t->arena, n->name)))
    return ETSIM_ENOMEM;
  if ((rc = add_io(t, b, n, &t->io[i])))
    return rc;
  if (t->n_attrs + n->n_attrs >= UINT32_MAX ||
      t->n_data_edges + n->n_data_deps >= ETSIM_ET_DANGLING ||
      t->n_ctrl_edges + n->n_ctrl_deps >= ETSIM_ET_DANGLING)
    return ETSIM_ERANGE;
  t->attr_off[i] = (uint32_t)t->n_attrs;
  t->data_off[i] = (uint32_t)t->n_data_edges;
  t->ctrl_off[i] = (uint32_t)t->n_ctrl_edges;
  if (etsim_grow((void **)&t->attrs, &b->attr_cap, t->n_attrs + n->n_attrs,
                 sizeof *t->attrs) ||
      etsim_grow((void **)&b->data_raw, &b->data_cap,
                 t->n_data_edges + n->n_data_deps, sizeof *b->data_raw) ||
      etsim_grow((void **)&b->ctrl_raw, &b->ctrl_cap,
                 t->n_ctrl_edges + n->n_ctrl_deps, sizeof *b->ctrl_raw))
    return ETSIM_ENOMEM;
  for (size_t k = 0; k < n->n_attrs; k++)
    if ((rc = attr_store(t, &t->attrs[t->n_attrs + k], &n->attrs[k],
                         k < NAME_CACHE ? &b->name_id[k] : NULL)))
      return rc;
  t->n_attrs += n->n_attrs;
  if (n->n_data_deps)
    memcpy(b->data_raw + t->n_data_edges, n->data_deps,
           n->n_data_deps * sizeof *n->data_deps);
  if (n->n_ctrl_deps)
    memcpy(b->ctrl_raw + t->n_ctrl_edges, n->ctrl_deps,
           n->n_ctrl_deps * sizeof *n->ctrl_deps);
  t->n_data_edges += n->n_data_deps;
  t->n_ctrl_edges += n->n_ctrl_deps;
  t->n_nodes++;
  return 0;
}

/* Turn raw ids into indices in place (a u32 written at i never overtakes
 * the u64 still to be read at i), then shrink the array. */
static int resolve(etsim_et_trace_t *t, uint64_t *raw, size_t n,
                   etsim_u64map_t *dmap, size_t *dcap, size_t *n_dangling_edges,
                   uint32_t **out) {
  uint32_t *dst = (uint32_t *)raw;
  for (size_t e = 0; e < n; e++) {
    uint64_t id = raw[e];
    size_t idx;
    uint32_t v;
    if (etsim_et_trace_find(t, id, &idx)) {
      v = (uint32_t)idx;
    } else {
      uint32_t k = (uint32_t)t->n_dangling;
      int rc = etsim_u64map_put(dmap, id, k, &k);
      if (rc < 0)
        return rc;
      if (rc == 1) {
        if (etsim_grow((void **)&t->dangling, dcap, t->n_dangling + 1,
                       sizeof *t->dangling))
          return ETSIM_ENOMEM;
        t->dangling[t->n_dangling++] = id;
      }
      v = ETSIM_ET_DANGLING | k;
      (*n_dangling_edges)++;
    }
    dst[e] = v;
  }
  uint32_t *shrunk = n ? etsim_realloc(raw, n * sizeof *dst) : NULL;
  if (n && !shrunk)
    shrunk = dst; /* keep the larger block */
  if (!n)
    etsim_free(raw);
  *out = shrunk;
  return 0;
}

/* Children lists from parent lists, by counting. */
static int build_children(size_t nn, const uint32_t *off, const uint32_t *par,
                          uint32_t **out_off, uint32_t **out_chd) {
  uint32_t *coff = etsim_calloc(nn + 1, sizeof *coff);
  if (!coff)
    return ETSIM_ENOMEM;
  size_t ne = off[nn];
  for (size_t e = 0; e < ne; e++)
    if (!(par[e] & ETSIM_ET_DANGLING))
      coff[par[e] + 1]++;
  for (size_t i = 0; i < nn; i++)
    coff[i + 1] += coff[i];
  uint32_t *chd = etsim_malloc((coff[nn] ? coff[nn] : 1) * sizeof *chd);
  uint32_t *fill = etsim_malloc((nn + 1) * sizeof *fill);
  if (!chd || !fill) {
    etsim_free(coff);
    etsim_free(chd);
    etsim_free(fill);
    return ETSIM_ENOMEM;
  }
  memcpy(fill, coff, (nn + 1) * sizeof *fill);
  for (size_t i = 0; i < nn; i++)
    for (uint32_t e = off[i]; e < off[i + 1]; e++)
      if (!(par[e] & ETSIM_ET_DANGLING))
        chd[fill[par[e]]++] = (uint32_t)i;
  etsim_free(fill);
  *out_off = coff;
  *out_chd = chd;
  return 0;
}

static uint32_t known(const etsim_et_trace_t *t, const char *s) {
  int64_t id = etsim_intern_find(&t->strings, s);
  return id < 0 ? UINT32_MAX : (uint32_t)id;
}

static int copy_meta(etsim_et_trace_t *t, const etsim_et_meta_t *m) {
  t->meta.version = arena_str(&t->arena, m->version);
  t->meta.n_attrs = m->n_attrs;
  etsim_attr_t *attrs = NULL;
  if (m->n_attrs) {
    /* Store as records, then expose views pointing at the copies. */
    etsim_et_attrrec_t *recs =
        etsim_arena_alloc(&t->arena, m->n_attrs * sizeof *recs);
    attrs = etsim_arena_alloc(&t->arena, m->n_attrs * sizeof *attrs);
    if (!recs || !attrs)
      return ETSIM_ENOMEM;
    for (size_t i = 0; i < m->n_attrs; i++) {
      int rc = attr_store(t, &recs[i], &m->attrs[i], NULL);
      if (rc)
        return rc;
    }
    etsim_et_attrrec_t *saved = t->attrs;
    t->attrs = recs;
    for (size_t i = 0; i < m->n_attrs; i++)
      etsim_et_trace_attr(t, i, &attrs[i]);
    t->attrs = saved;
  }
  t->meta.attrs = attrs;
  return t->meta.version ? 0 : ETSIM_ENOMEM;
}

int etsim_et_trace_load(etsim_et_trace_t **out, const char *path,
                        unsigned read_flags, etsim_error_t *err) {
  etsim_et_reader_t *r;
  int rc = etsim_et_reader_open(&r, path, read_flags, err);
  if (rc)
    return rc;
  etsim_et_trace_t *t = etsim_calloc(1, sizeof *t);
  builder_t b;
  memset(&b, 0, sizeof b);
  if (!t) {
    etsim_et_reader_close(r);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  etsim_arena_init(&t->arena, 1u << 20);
  etsim_u64map_init(&t->index);
  if ((rc = etsim_intern_init(&t->strings)) ||
      !(t->path = etsim_strdup(path)) ||
      (rc = copy_meta(t, etsim_et_reader_meta(r))) || (rc = grow_nodes(t, &b)))
    goto oom;
  /* ios[0] is the "no io" entry. */
  if (etsim_grow((void **)&t->ios, &b.io_cap, 1, sizeof *t->ios))
    goto oom;
  memset(&t->ios[0], 0, sizeof t->ios[0]);
  t->n_ios = 1;

  const etsim_et_node_t *n;
  while ((rc = etsim_et_reader_next(r, &n, err)) == 1) {
    if (et_reader_last_len(r) == 0)
      t->n_empty++;
    if ((rc = add_node(t, &b, n))) {
      if (rc != ETSIM_ERANGE)
        goto oom;
      etsim_error_set(err, rc, "%s: node %zu: trace too large for 32-bit "
                      "indices", path, t->n_nodes);
      goto fail;
    }
  }
  if (rc < 0)
    goto fail;
  etsim_et_reader_close(r);
  r = NULL;
  t->attr_off[t->n_nodes] = (uint32_t)t->n_attrs;
  t->data_off[t->n_nodes] = (uint32_t)t->n_data_edges;
  t->ctrl_off[t->n_nodes] = (uint32_t)t->n_ctrl_edges;

  if ((rc = index_build(t)))
    goto oom;
  etsim_u64map_t dmap;
  etsim_u64map_init(&dmap);
  size_t dcap = 0;
  rc = resolve(t, b.data_raw, t->n_data_edges, &dmap, &dcap,
               &t->n_dangling_data, &t->data_par);
  b.data_raw = NULL;
  if (!rc)
    rc = resolve(t, b.ctrl_raw, t->n_ctrl_edges, &dmap, &dcap,
                 &t->n_dangling_ctrl, &t->ctrl_par);
  b.ctrl_raw = NULL;
  etsim_u64map_free(&dmap);
  if (rc)
    goto oom;
  if ((rc = build_children(t->n_nodes, t->data_off, t->data_par, &t->data_coff,
                           &t->data_chd)) ||
      (rc = build_children(t->n_nodes, t->ctrl_off, t->ctrl_par, &t->ctrl_coff,
                           &t->ctrl_chd)))
    goto oom;
  t->k_comm_type = known(t, "comm_type");
  t->k_comm_size = known(t, "comm_size");
  t->k_comm_src = known(t, "comm_src");
  t->k_comm_dst = known(t, "comm_dst");
  t->k_comm_tag = known(t, "comm_tag");
  t->k_comm_priority = known(t, "comm_priority");
  t->k_is_cpu_op = known(t, "is_cpu_op");
  t->k_tensor_size = known(t, "tensor_size");
  t->k_pg_name = known(t, "pg_name");
  t->k_involved_dim = known(t, "involved_dim");
  t->k_num_ops = known(t, "num_ops");
  *out = t;
  return 0;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
fail: /* rc holds the failing call's code; err its message */
  etsim_et_reader_close(r);
  etsim_free(b.data_raw);
  etsim_free(b.ctrl_raw);
  etsim_et_trace_free(t);
  return rc;
}

void etsim_et_trace_free(etsim_et_trace_t *t) {
  if (!t)
    return;
  etsim_free(t->path);
  etsim_free(t->id);
  etsim_free(t->start_us);
  etsim_free(t->dur_us);
  etsim_free(t->name);
  etsim_free(t->type);
  etsim_free(t->io);
  etsim_free(t->attr_off);
  etsim_free(t->attrs);
  etsim_free(t->data_off);
  etsim_free(t->data_par);
  etsim_free(t->data_coff);
  etsim_free(t->data_chd);
  etsim_free(t->ctrl_off);
  etsim_free(t->ctrl_par);
  etsim_free(t->ctrl_coff);
  etsim_free(t->ctrl_chd);
  etsim_free(t->dangling);
  etsim_free(t->dup_idx);
  etsim_free(t->ios);
  etsim_free(t->index.vals);
  etsim_intern_free(&t->strings);
  etsim_arena_free(&t->arena);
  etsim_free(t);
}

/* ----------------------------------------------------------- attributes */

void etsim_et_trace_attr(const etsim_et_trace_t *t, size_t k,
                         etsim_attr_t *out) {
  const etsim_et_attrrec_t *r = &t->attrs[k];
  memset(out, 0, sizeof *out);
  out->name = etsim_intern_str(&t->strings, r->name);
  out->doc = etsim_intern_str(&t->strings, r->kind_doc >> 8);
  out->kind = (int)(r->kind_doc & 0xff);
  switch (out->kind) {
  case ETSIM_ATTR_NONE: break;
  case ETSIM_ATTR_DOUBLE: out->v.d = r->v.d; break;
  case ETSIM_ATTR_FLOAT: memcpy(&out->v.f, &r->v.u, sizeof out->v.f); break;
  case ETSIM_ATTR_INT32:
  case ETSIM_ATTR_SINT32:
  case ETSIM_ATTR_SFIXED32: out->v.i32 = (int32_t)r->v.i; break;
  case ETSIM_ATTR_UINT32:
  case ETSIM_ATTR_FIXED32: out->v.u32 = (uint32_t)r->v.u; break;
  case ETSIM_ATTR_INT64:
  case ETSIM_ATTR_SINT64:
  case ETSIM_ATTR_SFIXED64: out->v.i64 = r->v.i; break;
  case ETSIM_ATTR_UINT64:
  case ETSIM_ATTR_FIXED64: out->v.u64 = r->v.u; break;
  case ETSIM_ATTR_BOOL: out->v.b = (int)r->v.u; break;
  case ETSIM_ATTR_STRING: out->v.s = r->v.p; break;
  case ETSIM_ATTR_BYTES: {
    const etsim_et_blob_t *b = r->v.p;
    out->v.bytes.len = b->n;
    out->v.bytes.data = et_blob_data(b);
    break;
  }
  default: {
    const etsim_et_blob_t *b = r->v.p;
    out->v.list.n = b->n;
    out->v.list.v = et_blob_data(b);
    break;
  }
  }
}

int64_t etsim_et_trace_attr_find(const etsim_et_trace_t *t, size_t i,
                                 uint32_t name_id) {
  for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++)
    if (t->attrs[k].name == name_id)
      return k;
  return -1;
}

int etsim_et_trace_attr_int(const etsim_et_trace_t *t, size_t i,
                            uint32_t name_id, int64_t *out) {
  if (name_id == UINT32_MAX)
    return 0;
  int64_t k = etsim_et_trace_attr_find(t, i, name_id);
  if (k < 0)
    return 0;
  etsim_attr_t a;
  etsim_et_trace_attr(t, (size_t)k, &a);
  int rc = etsim_attr_as_int(&a, out);
  return rc ? rc : 1;
}

int etsim_et_trace_attr_int_by_name(const etsim_et_trace_t *t, size_t i,
                                    const char *name, int64_t *out) {
  int64_t id = etsim_intern_find(&t->strings, name);
  return id < 0 ? 0 : etsim_et_trace_attr_int(t, i, (uint32_t)id, out);
}

const char *etsim_et_trace_attr_str(const etsim_et_trace_t *t, size_t i,
                                    uint32_t name_id) {
  if (name_id == UINT32_MAX)
    return NULL;
  int64_t k = etsim_et_trace_attr_find(t, i, name_id);
  if (k < 0 || (t->attrs[k].kind_doc & 0xff) != ETSIM_ATTR_STRING)
    return NULL;
  return t->attrs[k].v.p;
}

/* ---------------------------------------------------------------- views */

void etsim_et_viewbuf_free(etsim_et_viewbuf_t *b) {
  etsim_free(b->deps);
  etsim_free(b->attrs);
  memset(b, 0, sizeof *b);
}

static uint64_t dep_id(const etsim_et_trace_t *t, uint32_t v) {
  return v & ETSIM_ET_DANGLING ? t->dangling[v & ~ETSIM_ET_DANGLING] : t->id[v];
}

int etsim_et_trace_view(const etsim_et_trace_t *t, size_t i,
                        etsim_et_viewbuf_t *b, const etsim_et_node_t **out) {
  size_t nd = t->data_off[i + 1] - t->data_off[i];
  size_t nc = t->ctrl_off[i + 1] - t->ctrl_off[i];
  size_t na = t->attr_off[i + 1] - t->attr_off[i];
  if (etsim_grow((void **)&b->deps, &b->deps_cap, nd + nc, sizeof *b->deps) ||
      etsim_grow((void **)&b->attrs, &b->attrs_cap, na, sizeof *b->attrs))
    return ETSIM_ENOMEM;
  for (size_t e = 0; e < nd; e++)
    b->deps[e] = dep_id(t, t->data_par[t->data_off[i] + e]);
  for (size_t e = 0; e < nc; e++)
    b->deps[nd + e] = dep_id(t, t->ctrl_par[t->ctrl_off[i] + e]);
  for (size_t k = 0; k < na; k++)
    etsim_et_trace_attr(t, t->attr_off[i] + k, &b->attrs[k]);
  etsim_et_node_t *v = &b->node;
  v->id = t->id[i];
  v->name = t->name[i];
  v->type = t->type[i];
  v->start_time_micros = t->start_us[i];
  v->duration_micros = t->dur_us[i];
  v->n_data_deps = nd;
  v->data_deps = b->deps;
  v->n_ctrl_deps = nc;
  v->ctrl_deps = b->deps + nd;
  const etsim_et_io_t *io = &t->ios[t->io[i]];
  v->inputs = io->flags & 1 ? &io->in : NULL;
  v->outputs = io->flags & 2 ? &io->out : NULL;
  v->n_attrs = na;
  v->attrs = b->attrs;
  *out = v;
  return 0;
}

int etsim_et_trace_write(const etsim_et_trace_t *t, const char *path,
                         unsigned write_flags, etsim_error_t *err) {
  etsim_et_writer_t *w;
  int rc = etsim_et_writer_open(&w, path, write_flags | ETSIM_ET_WRITE_VERBATIM,
                                err);
  if (rc)
    return rc;
  etsim_et_viewbuf_t b;
  memset(&b, 0, sizeof b);
  rc = etsim_et_writer_meta(w, &t->meta, err);
  for (size_t i = 0; !rc && i < t->n_nodes; i++) {
    const etsim_et_node_t *v;
    if ((rc = etsim_et_trace_view(t, i, &b, &v)))
      etsim_error_set(err, rc, "%s: out of memory", path);
    else
      rc = etsim_et_writer_node(w, v, err);
  }
  etsim_et_viewbuf_free(&b);
  if (rc) {
    etsim_et_writer_abort(w);
    return rc;
  }
  return etsim_et_writer_commit(w, err);
}

size_t etsim_et_trace_memory(const etsim_et_trace_t *t) {
  size_t n = t->n_nodes + 1;
  size_t per_node = sizeof *t->id + sizeof *t->start_us + sizeof *t->dur_us +
                    sizeof *t->name + sizeof *t->type + sizeof *t->io +
                    5 * sizeof(uint32_t);
  return n * per_node + t->index.cap * sizeof(uint32_t) +
         t->n_attrs * sizeof *t->attrs +
         (t->n_data_edges + t->n_ctrl_edges) * 2 * sizeof(uint32_t) +
         t->n_ios * sizeof *t->ios + etsim_arena_reserved(&t->arena) +
         etsim_arena_reserved(&t->strings.arena);
}
