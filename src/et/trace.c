/*
 * trace.c — a whole Chakra file in memory.
 *
 * Loading streams the file once.  Node messages are decoded by the wire
 * decoder (wire.c) straight into the flat arrays — id, times, type, a name
 * in a packed string pool, an io index, CSR offsets — and attributes become
 * 16-byte records with names interned (a per-position cache skips the hash
 * for the attribute lists nodes of one file tend to repeat).  Messages the
 * fast path leaves alone go through protobuf-c and the same arrays.
 *
 * Dependencies are resolved while loading: the id -> index map grows with
 * the nodes (arithmetic while ids count up from the first one, a hash table
 * of u32 slots once they do not), so an edge to an earlier node becomes its
 * 32-bit index at once and only forward references wait, with their raw id,
 * until the end.  Ids absent from the file go to the `dangling` table, data
 * edges first, in file order.  Child lists come from a counting pass.  The
 * arrays are sized from an estimate of the node count (file size over the
 * average message size of the first block) and ask for transparent huge
 * pages, which keeps page faults out of the profile.  O(nodes + edges), no
 * per-node allocation.
 */
#include "et_int.h"

#include <string.h>

/* ----------------------------------------------------------- the index */

/* id -> index: u32 slots holding index + 1, keys read from t->id, so a slot
 * costs 4 bytes.  Stored in t->index.vals; t->index.keys stays NULL. */
int etsim_et_trace_find(const etsim_et_trace_t *t, uint64_t id, size_t *idx) {
  if (t->dense) {
    /* Ids are id[0], id[0]+1, ... in file order: no hashing needed. */
    uint64_t k = id - t->id[0];
    if (id < t->id[0] || k >= t->n_nodes) return 0;
    *idx = (size_t)k;
    return 1;
  }
  if (!t->index.cap) return 0;
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
#define POOL_BLOCK (256u * 1024)

typedef struct {
  size_t n_cap, attr_cap, io_cap, data_cap, ctrl_cap, dcap, dup_cap;
  /* Interned name of the k-th attribute of the previous node. */
  uint32_t name_id[NAME_CACHE];
  uint32_t name_len[NAME_CACHE];
  int dense;           /* ids so far are id[0], id[0]+1, ...: no hash table yet */
  size_t est;          /* estimated node count */
  uint64_t file_bytes; /* size of the input when known (in memory), else 0 */
  char *pool;          /* packed NUL-terminated strings; [pool, pool+pool_left) free */
  size_t pool_left;
  /* Edges to ids not loaded yet: position in *_par and the raw id. */
  uint32_t *fwd_pos[2];
  uint64_t *fwd_id[2];
  size_t fwd_n[2], fwd_cap[2];
  uint64_t *deps; /* scratch for one node's decoded deps */
  size_t deps_cap;
  et_wnode_t wn;
} builder_t;

/* etsim_grow for the big arrays: at least `need`, growing from `hint`. */
static int grow_big(void **p, size_t *cap, size_t need, size_t hint, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap + *cap / 2 : hint;
  if (c < need) c = need;
  if (c < 16) c = 16;
  void *q = etsim_realloc(*p, c * elem);
  if (!q && c > need + need / 2) {
    /* A projection too generous for this machine: grow by half instead. */
    c = need + need / 2;
    q = etsim_realloc(*p, c * elem);
  }
  if (!q) return ETSIM_ENOMEM;
  *p = q;
  *cap = c;
  etsim_advise_huge(q, c * elem);
  return 0;
}

static int grow_nodes(etsim_et_trace_t *t, builder_t *b) {
  size_t need = t->n_nodes + 2; /* room for the CSR end offset */
  if (need <= b->n_cap) return 0;
  /* First size from the estimate, at most 64 M nodes (big blocks grow by
   * mremap, without copying). */
  size_t cap = b->n_cap ? b->n_cap + b->n_cap / 2 : (b->est < (1u << 26) ? b->est : (1u << 26)) + 2;
  /* A whole small file in memory gives an exact count: its arrays need no
   * slack (16 K rank files of one node each add up). */
  if (cap < (b->file_bytes ? 16u : 1024u)) cap = b->file_bytes ? 16u : 1024u;
  if (cap > ETSIM_ET_DANGLING - 1) cap = ETSIM_ET_DANGLING - 1;
  if (need > cap) return ETSIM_ERANGE;
#define G(field)                                               \
  do {                                                         \
    void *p = etsim_realloc(t->field, cap * sizeof *t->field); \
    if (!p) return ETSIM_ENOMEM;                               \
    t->field = p;                                              \
    etsim_advise_huge(p, cap * sizeof *t->field);              \
  } while (0)
    /* Arrays that are mostly zero (start times, io, control offsets in traces
     * without control deps) start calloc'd and only non-zero entries are
     * written, so their pages are never touched: fresh pages are what a load
     * mostly pays for. */
#define Z(field)                                                                               \
  do {                                                                                         \
    void *p;                                                                                   \
    if (!t->field) {                                                                           \
      p = etsim_calloc(cap, sizeof *t->field);                                                 \
    } else if ((p = etsim_realloc(t->field, cap * sizeof *t->field)) != NULL) {                \
      memset((char *)p + b->n_cap * sizeof *t->field, 0, (cap - b->n_cap) * sizeof *t->field); \
    }                                                                                          \
    if (!p) return ETSIM_ENOMEM;                                                               \
    t->field = p;                                                                              \
  } while (0)
  G(id);
  Z(start_us);
  G(dur_us);
  G(name);
  G(type);
  Z(io);
  G(attr_off);
  G(data_off);
  Z(ctrl_off);
#undef G
#undef Z
  b->n_cap = cap;
  return 0;
}

/* Hash slot insert of node i (its id already in t->id); 1 inserted, 0 when
 * the id is already there. */
static int slot_put(uint32_t *slots, size_t mask, const uint64_t *ids, size_t i) {
  size_t h = etsim_hash_u64(ids[i]) & mask;
  while (slots[h]) {
    if (ids[slots[h] - 1] == ids[i]) return 0;
    h = (h + 1) & mask;
  }
  slots[h] = (uint32_t)i + 1;
  return 1;
}

static int index_rehash(etsim_et_trace_t *t, size_t want) {
  size_t cap = 16;
  while (cap * 7 / 10 < want) cap *= 2;
  uint32_t *slots = etsim_calloc(cap, sizeof *slots);
  if (!slots) return ETSIM_ENOMEM;
  size_t mask = cap - 1;
  const uint32_t *old = t->index.vals;
  for (size_t k = 0; k < t->index.cap; k++)
    if (old[k]) slot_put(slots, mask, t->id, old[k] - 1);
  etsim_free(t->index.vals);
  t->index.vals = slots;
  t->index.cap = cap;
  return 0;
}

/* Register node i (t->id[i] set, t->n_nodes not yet counting it). */
static int index_add(etsim_et_trace_t *t, builder_t *b, size_t i) {
  if (b->dense) {
    uint64_t id0 = t->id[0];
    if (i == 0 || (t->id[i] == id0 + i && id0 + i > id0)) return 0;
    /* The run of counting ids ends here: hash what came before. */
    b->dense = 0;
    size_t want = b->est > 2 * i ? b->est : 2 * i;
    int rc = index_rehash(t, want);
    if (rc) return rc;
    for (size_t k = 0; k < i; k++) slot_put(t->index.vals, t->index.cap - 1, t->id, k);
    t->index.count = i;
  }
  if ((t->index.count + 1) > t->index.cap * 7 / 10) {
    int rc = index_rehash(t, 2 * (t->index.count + 1));
    if (rc) return rc;
  }
  if (slot_put(t->index.vals, t->index.cap - 1, t->id, i)) {
    t->index.count++;
    return 0;
  }
  if (etsim_grow((void **)&t->dup_idx, &b->dup_cap, t->n_dup + 1, sizeof *t->dup_idx))
    return ETSIM_ENOMEM;
  t->dup_idx[t->n_dup++] = (uint32_t)i;
  return 0;
}

/* Index of a loaded node with `id`: 1 and *idx, or 0. */
static inline int index_get(const etsim_et_trace_t *t, const builder_t *b, uint64_t id,
                            uint32_t *idx) {
  if (b->dense) {
    uint64_t k = id - t->id[0];
    if (!t->n_nodes || id < t->id[0] || k >= t->n_nodes) return 0;
    *idx = (uint32_t)k;
    return 1;
  }
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

/* Room to ask for when an array of per-node items outgrows its capacity:
 * `need` extrapolated from the nodes loaded so far to the estimated node
 * count, so that one growth step usually suffices (realloc of a big block
 * below glibc's mmap threshold copies it). */
static size_t project(const etsim_et_trace_t *t, const builder_t *b, size_t need) {
  if (t->n_nodes < 64 || b->est <= t->n_nodes) return need;
  double per_node = (double)need / (double)t->n_nodes;
  size_t p = (size_t)(per_node * (double)b->est * 1.1) + 16;
  return p > need ? p : need;
}

/* Append node `i`'s dependency list d (0 data, 1 ctrl). */
static int deps_add(etsim_et_trace_t *t, builder_t *b, int d, const uint64_t *ids, size_t n) {
  size_t *ne = d ? &t->n_ctrl_edges : &t->n_data_edges;
  uint32_t **par = d ? &t->ctrl_par : &t->data_par;
  size_t *cap = d ? &b->ctrl_cap : &b->data_cap;
  if (!n) return 0;
  if (*ne + n >= ETSIM_ET_DANGLING) return ETSIM_ERANGE;
  if (*ne + n + 1 > *cap && grow_big((void **)par, cap, project(t, b, *ne + n + 1),
                                     (d ? 1 : 3) * (b->est + 16), sizeof **par))
    return ETSIM_ENOMEM;
  uint32_t *dst = *par + *ne;
  for (size_t e = 0; e < n; e++) {
    uint32_t idx;
    if (index_get(t, b, ids[e], &idx)) {
      dst[e] = idx;
      continue;
    }
    size_t k = b->fwd_n[d];
    if (k == b->fwd_cap[d]) {
      size_t c1 = b->fwd_cap[d], c2 = b->fwd_cap[d];
      if (etsim_grow((void **)&b->fwd_pos[d], &c1, k + 1, sizeof(uint32_t)) ||
          etsim_grow((void **)&b->fwd_id[d], &c2, k + 1, sizeof(uint64_t)))
        return ETSIM_ENOMEM;
      b->fwd_cap[d] = c1 < c2 ? c1 : c2;
    }
    b->fwd_pos[d][k] = (uint32_t)(*ne + e);
    b->fwd_id[d][k] = ids[e];
    b->fwd_n[d]++;
    dst[e] = 0;
  }
  *ne += n;
  return 0;
}

/* Start node i = t->n_nodes: arrays, index, scalars, CSR offsets. */
static int node_begin(etsim_et_trace_t *t, builder_t *b, uint64_t id, uint64_t start, uint64_t dur,
                      int type, size_t n_attrs) {
  int rc = grow_nodes(t, b);
  if (rc) return rc;
  size_t i = t->n_nodes;
  if (t->n_attrs + n_attrs >= UINT32_MAX) return ETSIM_ERANGE;
  t->id[i] = id;
  if (start) t->start_us[i] = start; /* calloc'd: zeros need no write */
  t->dur_us[i] = dur;
  t->type[i] = (uint8_t)type;
  t->attr_off[i] = (uint32_t)t->n_attrs;
  t->data_off[i] = (uint32_t)t->n_data_edges;
  if (t->n_ctrl_edges) t->ctrl_off[i] = (uint32_t)t->n_ctrl_edges;
  if ((rc = index_add(t, b, i))) return rc;
  t->n_nodes++; /* counted now, so a node may depend on itself */
  if (t->n_attrs + n_attrs > b->attr_cap &&
      grow_big((void **)&t->attrs, &b->attr_cap, project(t, b, t->n_attrs + n_attrs),
               2 * (b->est + 16), sizeof *t->attrs))
    return ETSIM_ENOMEM;
  return 0;
}

/* A string in the packed pool, cut at its first NUL (as C strings read it);
 * "" costs nothing. */
static const char *pool_str(etsim_et_trace_t *t, builder_t *b, const void *p, size_t n) {
  if (!n) return "";
  if (n + 1 > b->pool_left) {
    if (n + 1 > POOL_BLOCK / 4 || (b->file_bytes && n + 1 > b->file_bytes)) {
      const void *z = memchr(p, 0, n);
      if (z) n = (size_t)((const char *)z - (const char *)p);
      return etsim_arena_strndup(&t->arena, p, n);
    }
    /* Big traces get big pool blocks (about 1/8 of the estimated name
     * bytes each, huge-page backed); small ones 256 KiB. */
    size_t blk = POOL_BLOCK;
    while (blk < (32u << 20) && blk < b->est * 2) blk *= 2;
    /* Names of a small file fit in the file's own size. */
    if (b->file_bytes && b->file_bytes + 64 < blk) blk = (size_t)b->file_bytes + 64;
    if (!(b->pool = etsim_arena_alloc(&t->arena, blk))) return NULL;
    etsim_advise_huge(b->pool, blk);
    b->pool_left = blk;
  }
  /* Names are short: a byte loop that copies and finds a NUL at once beats
   * memchr + memcpy calls; long strings take the library calls. */
  char *c = b->pool;
  const char *src = p;
  size_t k = 0;
  if (n > 24) {
    const void *z = memchr(src, 0, n);
    k = z ? (size_t)((const char *)z - src) : n;
    memcpy(c, src, k);
  } else if (n >= 8) {
    /* Two overlapping 8-byte words cover 8..16 bytes; 17..24 take three. */
    uint64_t w0, w1, w2 = 0x0101010101010101ull;
    memcpy(&w0, src, 8);
    memcpy(&w1, src + n - 8, 8);
    if (n > 16) memcpy(&w2, src + 8, 8);
#define HASZERO(v) (((v)-0x0101010101010101ull) & ~(v)&0x8080808080808080ull)
    if (!HASZERO(w0) && !HASZERO(w1) && !HASZERO(w2)) {
      memcpy(c, &w0, 8);
      if (n > 16) memcpy(c + 8, &w2, 8);
      memcpy(c + n - 8, &w1, 8);
      k = n;
    } else {
      while (k < n && src[k]) {
        c[k] = src[k];
        k++;
      }
    }
#undef HASZERO
  } else {
    while (k < n && src[k]) {
      c[k] = src[k];
      k++;
    }
  }
  if (!k) return "";
  c[k] = 0;
  b->pool += k + 1;
  b->pool_left -= k + 1;
  return c;
}

static void rec_scalar(etsim_et_attrrec_t *rec, const etsim_attr_t *a) {
  rec->v.u = 0;
  switch (a->kind) {
    case ETSIM_ATTR_DOUBLE:
      rec->v.d = a->v.d;
      break;
    case ETSIM_ATTR_FLOAT:
      memcpy(&rec->v.u, &a->v.f, sizeof a->v.f);
      break;
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SFIXED32:
      rec->v.i = a->v.i32;
      break;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      rec->v.u = a->v.u32;
      break;
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_SINT64:
    case ETSIM_ATTR_SFIXED64:
      rec->v.i = a->v.i64;
      break;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      rec->v.u = a->v.u64;
      break;
    case ETSIM_ATTR_BOOL:
      rec->v.u = a->v.b != 0;
      break;
    default:
      break;
  }
}

/* Copy a view attribute into a compact record; data go to the arena. */
static int attr_store(etsim_et_trace_t *t, etsim_et_attrrec_t *rec, const etsim_attr_t *a,
                      uint32_t *cache) {
  int64_t name;
  if (cache && strcmp(etsim_intern_str(&t->strings, *cache), a->name) == 0) name = *cache;
  else name = etsim_intern_put(&t->strings, a->name, strlen(a->name));
  if (cache && name >= 0) *cache = (uint32_t)name;
  int64_t doc = a->doc && a->doc[0] ? etsim_intern_put(&t->strings, a->doc, strlen(a->doc)) : 0;
  if (name < 0 || doc < 0) return ETSIM_ENOMEM;
  if (doc >= (1 << 24)) return ETSIM_ERANGE;
  rec->name = (uint32_t)name;
  rec->kind_doc = (uint32_t)a->kind | ((uint32_t)doc << 8);
  rec_scalar(rec, a);
  switch (a->kind) {
    case ETSIM_ATTR_STRING: {
      const char *s = a->v.s ? a->v.s : "";
      if (!(rec->v.p = etsim_arena_strndup(&t->arena, s, strlen(s)))) return ETSIM_ENOMEM;
      break;
    }
    case ETSIM_ATTR_BYTES: {
      etsim_et_blob_t *bl = etsim_arena_alloc(&t->arena, sizeof *bl + a->v.bytes.len + 1);
      if (!bl) return ETSIM_ENOMEM;
      bl->n = a->v.bytes.len;
      bl->elem_size = 1;
      if (a->v.bytes.len) memcpy(et_blob_data(bl), a->v.bytes.data, a->v.bytes.len);
      rec->v.p = bl;
      break;
    }
    default: {
      if (!etsim_attr_kind_is_list(a->kind)) break;
      size_t es = etsim_et__list_elem_size(a->kind);
      if (!es) return ETSIM_EFORMAT;
      size_t n = a->v.list.n;
      etsim_et_blob_t *bl = etsim_arena_alloc(&t->arena, sizeof *bl + n * es);
      if (!bl) return ETSIM_ENOMEM;
      bl->n = n;
      bl->elem_size = es;
      if (n) memcpy(et_blob_data(bl), a->v.list.v, n * es);
      if (a->kind == ETSIM_ATTR_STRING_LIST) {
        const char **dst = et_blob_data(bl);
        for (size_t i = 0; i < n; i++)
          if (!(dst[i] = etsim_arena_strndup(&t->arena, dst[i], strlen(dst[i]))))
            return ETSIM_ENOMEM;
      } else if (a->kind == ETSIM_ATTR_BYTES_LIST) {
        etsim_bytes_t *dst = et_blob_data(bl);
        for (size_t i = 0; i < n; i++) {
          uint8_t *c = etsim_arena_alloc(&t->arena, dst[i].len + 1);
          if (!c) return ETSIM_ENOMEM;
          if (dst[i].len) memcpy(c, dst[i].data, dst[i].len);
          dst[i].data = c;
        }
      }
      rec->v.p = bl;
      break;
    }
  }
  return 0;
}

/* A wire attribute into a compact record; k is its position in the node. */
static int wattr_store(etsim_et_trace_t *t, builder_t *b, etsim_et_attrrec_t *rec,
                       const et_wattr_t *a, size_t k) {
  /* Interned names hold no NUL, so a byte-equal cached name is the name
   * even before looking for one. */
  int64_t name;
  size_t nl = a->name.n;
  if (k < NAME_CACHE && b->name_len[k] == nl &&
      (nl == 0 || memcmp(etsim_intern_str(&t->strings, b->name_id[k]), a->name.p, nl) == 0)) {
    name = b->name_id[k];
  } else {
    const void *z = nl ? memchr(a->name.p, 0, nl) : NULL;
    if (z) nl = (size_t)((const uint8_t *)z - a->name.p);
    name = etsim_intern_put(&t->strings, (const char *)a->name.p, nl);
    if (name >= 0 && k < NAME_CACHE && nl == a->name.n) {
      b->name_id[k] = (uint32_t)name;
      b->name_len[k] = (uint32_t)nl;
    }
  }
  const void *z;
  int64_t doc = 0;
  if (a->doc.n) {
    size_t dl = a->doc.n;
    if ((z = memchr(a->doc.p, 0, dl))) dl = (size_t)((const uint8_t *)z - a->doc.p);
    if (dl) doc = etsim_intern_put(&t->strings, (const char *)a->doc.p, dl);
  }
  if (name < 0 || doc < 0) return ETSIM_ENOMEM;
  if (doc >= (1 << 24)) return ETSIM_ERANGE;
  rec->name = (uint32_t)name;
  rec->kind_doc = (uint32_t)a->kind | ((uint32_t)doc << 8);
  rec->v.u = 0;
  switch (a->kind) {
    case ETSIM_ATTR_NONE:
      break;
    case ETSIM_ATTR_STRING:
      if (!(rec->v.p = pool_str(t, b, a->raw.p, a->raw.n))) return ETSIM_ENOMEM;
      break;
    case ETSIM_ATTR_BYTES: {
      etsim_et_blob_t *bl = etsim_arena_alloc(&t->arena, sizeof *bl + a->raw.n + 1);
      if (!bl) return ETSIM_ENOMEM;
      bl->n = a->raw.n;
      bl->elem_size = 1;
      if (a->raw.n) memcpy(et_blob_data(bl), a->raw.p, a->raw.n);
      rec->v.p = bl;
      break;
    }
    default: {
      if (!etsim_attr_kind_is_list(a->kind)) {
        etsim_attr_t v;
        v.kind = a->kind;
        etsim_et__wire_scalar(a, &v);
        rec_scalar(rec, &v);
        break;
      }
      size_t es = etsim_et__list_elem_size(a->kind), n = a->count;
      etsim_et_blob_t *bl = etsim_arena_alloc(&t->arena, sizeof *bl + n * es);
      if (!bl) return ETSIM_ENOMEM;
      bl->n = n;
      bl->elem_size = es;
      if (a->kind == ETSIM_ATTR_STRING_LIST || a->kind == ETSIM_ATTR_BYTES_LIST) {
        et_span_t cur = a->raw, e;
        for (size_t j = 0; j < n && etsim_et__wire_list_entry(&cur, &e); j++) {
          if (a->kind == ETSIM_ATTR_STRING_LIST) {
            const char *c = pool_str(t, b, e.p, e.n);
            if (!c) return ETSIM_ENOMEM;
            ((const char **)et_blob_data(bl))[j] = c;
          } else {
            uint8_t *c = etsim_arena_alloc(&t->arena, e.n + 1);
            if (!c) return ETSIM_ENOMEM;
            if (e.n) memcpy(c, e.p, e.n);
            ((etsim_bytes_t *)et_blob_data(bl))[j].len = e.n;
            ((etsim_bytes_t *)et_blob_data(bl))[j].data = c;
          }
        }
      } else if (n) {
        etsim_et__wire_list_values(a, et_blob_data(bl));
      }
      rec->v.p = bl;
      break;
    }
  }
  return 0;
}

static const char *arena_str(etsim_arena_t *a, const char *s) {
  if (!s || !*s) return "";
  return etsim_arena_strndup(a, s, strlen(s));
}

/* An io entry for node i from three strings each for inputs and outputs. */
static int io_add(etsim_et_trace_t *t, builder_t *b, size_t i, unsigned flags,
                  const char *const s[6]) {
  if (!flags) return 0;
  if (etsim_grow((void **)&t->ios, &b->io_cap, t->n_ios + 1, sizeof *t->ios)) return ETSIM_ENOMEM;
  etsim_et_io_t *io = &t->ios[t->n_ios];
  io->flags = flags;
  io->in.values = s[0];
  io->in.shapes = s[1];
  io->in.types = s[2];
  io->out.values = s[3];
  io->out.shapes = s[4];
  io->out.types = s[5];
  for (int k = 0; k < 6; k++)
    if (!s[k]) return ETSIM_ENOMEM;
  t->io[i] = (uint32_t)t->n_ios++;
  return 0;
}

/* Add a node decoded by protobuf-c (the slow path). */
static int add_view(etsim_et_trace_t *t, builder_t *b, const etsim_et_node_t *n) {
  int rc = node_begin(t, b, n->id, n->start_time_micros, n->duration_micros, n->type, n->n_attrs);
  if (rc) return rc;
  size_t i = t->n_nodes - 1;
  if (!(t->name[i] = arena_str(&t->arena, n->name))) return ETSIM_ENOMEM;
  if (n->inputs || n->outputs) {
    const char *s[6] = {"", "", "", "", "", ""};
    if (n->inputs) {
      s[0] = arena_str(&t->arena, n->inputs->values);
      s[1] = arena_str(&t->arena, n->inputs->shapes);
      s[2] = arena_str(&t->arena, n->inputs->types);
    }
    if (n->outputs) {
      s[3] = arena_str(&t->arena, n->outputs->values);
      s[4] = arena_str(&t->arena, n->outputs->shapes);
      s[5] = arena_str(&t->arena, n->outputs->types);
    }
    if ((rc = io_add(t, b, i, (n->inputs ? 1u : 0u) | (n->outputs ? 2u : 0u), s))) return rc;
  }
  for (size_t k = 0; k < n->n_attrs; k++)
    if ((rc = attr_store(t, &t->attrs[t->n_attrs + k], &n->attrs[k],
                         k < NAME_CACHE ? &b->name_id[k] : NULL)))
      return rc;
  for (size_t k = 0; k < n->n_attrs && k < NAME_CACHE; k++)
    b->name_len[k] = (uint32_t)strlen(etsim_intern_str(&t->strings, b->name_id[k]));
  t->n_attrs += n->n_attrs;
  if ((rc = deps_add(t, b, 0, n->data_deps, n->n_data_deps)) ||
      (rc = deps_add(t, b, 1, n->ctrl_deps, n->n_ctrl_deps)))
    return rc;
  return 0;
}

/* Add the node in b->wn (the fast path).  ET_WIRE_BAIL, before anything is
 * stored, when its packed deps do not decode. */
static int add_wire(etsim_et_trace_t *t, builder_t *b) {
  const et_wnode_t *w = &b->wn;
  size_t need = w->deps[0].n + w->deps[1].n;
  if (etsim_grow((void **)&b->deps, &b->deps_cap, need + 1, sizeof *b->deps)) return ETSIM_ENOMEM;
  long nd = etsim_et__wire_deps(w->deps[0], b->deps);
  long nc = nd < 0 ? -1 : etsim_et__wire_deps(w->deps[1], b->deps + nd);
  if (nd < 0 || nc < 0) return ET_WIRE_BAIL;
  int rc = node_begin(t, b, w->id, w->start_us, w->dur_us, w->type, w->n_attrs);
  if (rc) return rc;
  size_t i = t->n_nodes - 1;
  if (!(t->name[i] = pool_str(t, b, w->name.p, w->name.n))) return ETSIM_ENOMEM;
  if (w->io_flags) {
    const char *s[6];
    for (int k = 0; k < 6; k++) s[k] = pool_str(t, b, w->io[k].p, w->io[k].n);
    if ((rc = io_add(t, b, i, w->io_flags, s))) return rc;
  }
  for (size_t k = 0; k < w->n_attrs; k++)
    if ((rc = wattr_store(t, b, &t->attrs[t->n_attrs + k], &w->attrs[k], k))) return rc;
  t->n_attrs += w->n_attrs;
  if ((rc = deps_add(t, b, 0, b->deps, (size_t)nd)) ||
      (rc = deps_add(t, b, 1, b->deps + nd, (size_t)nc)))
    return rc;
  return 0;
}

/* Resolve the forward references of list d once every node is in. */
static int resolve_forward(etsim_et_trace_t *t, builder_t *b, int d, etsim_u64map_t *dmap) {
  uint32_t *par = d ? t->ctrl_par : t->data_par;
  size_t *n_dangling = d ? &t->n_dangling_ctrl : &t->n_dangling_data;
  for (size_t k = 0; k < b->fwd_n[d]; k++) {
    uint64_t id = b->fwd_id[d][k];
    uint32_t idx;
    if (index_get(t, b, id, &idx)) {
      par[b->fwd_pos[d][k]] = idx;
      continue;
    }
    uint32_t slot = (uint32_t)t->n_dangling;
    int rc = etsim_u64map_put(dmap, id, slot, &slot);
    if (rc < 0) return rc;
    if (rc == 1) {
      if (etsim_grow((void **)&t->dangling, &b->dcap, t->n_dangling + 1, sizeof *t->dangling))
        return ETSIM_ENOMEM;
      t->dangling[t->n_dangling++] = id;
    }
    par[b->fwd_pos[d][k]] = ETSIM_ET_DANGLING | slot;
    (*n_dangling)++;
  }
  return 0;
}

/* Children lists from parent lists, by counting.  coff gets one spare
 * slot so the fill pass can use it as its cursor array: counts go to
 * coff[p + 2], the prefix sum makes coff[p + 1] the start of p's list, and
 * filling advances it to the end of p's list, which is the start of p + 1's.
 * With no edges at all the calloc'd offsets stay untouched (all zero). */
static int build_children(size_t nn, const uint32_t *off, const uint32_t *par, uint32_t **out_off,
                          uint32_t **out_chd) {
  uint32_t *coff = etsim_calloc(nn + 2, sizeof *coff);
  if (!coff) return ETSIM_ENOMEM;
  size_t ne = off[nn];
  size_t nres = 0;
  for (size_t e = 0; e < ne; e++)
    if (!(par[e] & ETSIM_ET_DANGLING)) {
      coff[par[e] + 2]++;
      nres++;
    }
  uint32_t *chd = etsim_malloc((nres ? nres : 1) * sizeof *chd);
  if (!chd) {
    etsim_free(coff);
    return ETSIM_ENOMEM;
  }
  if (nres) {
    etsim_advise_huge(chd, nres * sizeof *chd);
    for (size_t i = 2; i < nn + 2; i++) coff[i] += coff[i - 1];
    for (size_t i = 0; i < nn; i++)
      for (uint32_t e = off[i]; e < off[i + 1]; e++)
        if (!(par[e] & ETSIM_ET_DANGLING)) chd[coff[par[e] + 1]++] = (uint32_t)i;
  }
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
    etsim_et_attrrec_t *recs = etsim_arena_alloc(&t->arena, m->n_attrs * sizeof *recs);
    attrs = etsim_arena_alloc(&t->arena, m->n_attrs * sizeof *attrs);
    if (!recs || !attrs) return ETSIM_ENOMEM;
    for (size_t i = 0; i < m->n_attrs; i++) {
      int rc = attr_store(t, &recs[i], &m->attrs[i], NULL);
      if (rc) return rc;
    }
    etsim_et_attrrec_t *saved = t->attrs;
    t->attrs = recs;
    for (size_t i = 0; i < m->n_attrs; i++) etsim_et_trace_attr(t, i, &attrs[i]);
    t->attrs = saved;
  }
  t->meta.attrs = attrs;
  return t->meta.version ? 0 : ETSIM_ENOMEM;
}

static void builder_free(builder_t *b) {
  for (int d = 0; d < 2; d++) {
    etsim_free(b->fwd_pos[d]);
    etsim_free(b->fwd_id[d]);
  }
  etsim_free(b->deps);
  etsim_free(b->wn.attrs);
}

/* Load from an open reader, which this closes. */
static int load_reader(etsim_et_trace_t **out, etsim_et_reader_t *r, uint64_t file_bytes,
                       etsim_error_t *err) {
  int rc;
  etsim_et_trace_t *t = etsim_calloc(1, sizeof *t);
  builder_t b;
  memset(&b, 0, sizeof b);
  b.dense = 1;
  b.est = etsim_et__reader_estimate_nodes(r);
  b.file_bytes = file_bytes;
  if (!t || !(t->path = etsim_strdup(etsim_et_reader_path(r)))) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", etsim_et_reader_path(r));
    etsim_free(t);
    etsim_et_reader_close(r);
    return rc;
  }
  const char *path = t->path; /* the reader's copy goes with it */
  /* Strings and lists take at most the file's bytes: a small file gets a
   * small first block (one per rank file adds up over 16 K ranks). */
  etsim_arena_init(&t->arena, file_bytes && file_bytes < (1u << 20)
                                  ? (size_t)(file_bytes < 1024 ? 1024 : file_bytes)
                                  : (1u << 20));
  etsim_u64map_init(&t->index);
  if ((rc = etsim_intern_init(&t->strings)) || (rc = copy_meta(t, etsim_et_reader_meta(r))) ||
      (rc = grow_nodes(t, &b)))
    goto oom;
  /* ios[0] is the "no io" entry. */
  if (etsim_grow((void **)&t->ios, &b.io_cap, 1, sizeof *t->ios)) goto oom;
  memset(&t->ios[0], 0, sizeof t->ios[0]);
  t->n_ios = 1;

  const uint8_t *data;
  uint32_t len;
  uint64_t off;
  while ((rc = etsim_et__reader_raw(r, &data, &len, &off, err)) == 1) {
    rc = etsim_et__wire_node(data, len, &b.wn);
    if (rc == 0) rc = add_wire(t, &b);
    if (rc == ET_WIRE_BAIL) {
      const etsim_et_node_t *n;
      if ((rc = etsim_et__reader_slow(r, data, len, off, &n, err)) != 0) goto fail;
      rc = add_view(t, &b, n);
    }
    if (rc) {
      if (rc != ETSIM_ERANGE) goto oom;
      etsim_error_set(err, rc,
                      "%s: node %zu: trace too large for 32-bit "
                      "indices",
                      path, t->n_nodes);
      goto fail;
    }
    etsim_et__reader_count_node(r);
  }
  if (rc < 0) goto fail;
  etsim_et_reader_close(r);
  r = NULL;
  t->attr_off[t->n_nodes] = (uint32_t)t->n_attrs;
  t->data_off[t->n_nodes] = (uint32_t)t->n_data_edges;
  if (t->n_ctrl_edges) t->ctrl_off[t->n_nodes] = (uint32_t)t->n_ctrl_edges;
  t->dense = b.dense && t->n_nodes > 0;
  if (b.dense) {
    t->index.count = 0;
  }
  /* Empty edge lists still get an array, as before. */
  if ((!t->data_par && grow_big((void **)&t->data_par, &b.data_cap, 1, 1, sizeof *t->data_par)) ||
      (!t->ctrl_par && grow_big((void **)&t->ctrl_par, &b.ctrl_cap, 1, 1, sizeof *t->ctrl_par)))
    goto oom;

  etsim_u64map_t dmap;
  etsim_u64map_init(&dmap);
  rc = resolve_forward(t, &b, 0, &dmap);
  if (!rc) rc = resolve_forward(t, &b, 1, &dmap);
  etsim_u64map_free(&dmap);
  if (rc) goto oom;
  if ((rc = build_children(t->n_nodes, t->data_off, t->data_par, &t->data_coff, &t->data_chd)) ||
      (rc = build_children(t->n_nodes, t->ctrl_off, t->ctrl_par, &t->ctrl_coff, &t->ctrl_chd)))
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
  builder_free(&b);
  *out = t;
  return 0;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
fail: /* rc holds the failing call's code; err its message */
  etsim_et_reader_close(r);
  builder_free(&b);
  etsim_et_trace_free(t);
  return rc;
}

int etsim_et_trace_load(etsim_et_trace_t **out, const char *path, unsigned read_flags,
                        etsim_error_t *err) {
  etsim_et_reader_t *r;
  int rc = etsim_et_reader_open(&r, path, read_flags, err);
  if (rc) return rc;
  /* A plain file's size bounds its strings and nodes as a file in memory
   * does: without it each trace took a 1 MiB arena block and a 256 KiB
   * name pool (58 KB resident per 1.7 KB rank file, 237 MB for 4,096). */
  return load_reader(out, r, etsim_et__reader_file_bytes(r), err);
}

int etsim_et__trace_load_mem(etsim_et_trace_t **out, const char *path, const uint8_t *data,
                             size_t len, unsigned read_flags, etsim_error_t *err) {
  etsim_et_reader_t *r;
  int rc = etsim_et__reader_open_mem(&r, path, data, len, read_flags, err);
  if (rc) return rc;
  return load_reader(out, r, len, err);
}

void etsim_et_trace_free(etsim_et_trace_t *t) {
  if (!t) return;
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

void etsim_et_trace_attr(const etsim_et_trace_t *t, size_t k, etsim_attr_t *out) {
  const etsim_et_attrrec_t *r = &t->attrs[k];
  memset(out, 0, sizeof *out);
  out->name = etsim_intern_str(&t->strings, r->name);
  out->doc = etsim_intern_str(&t->strings, r->kind_doc >> 8);
  out->kind = (int)(r->kind_doc & 0xff);
  switch (out->kind) {
    case ETSIM_ATTR_NONE:
      break;
    case ETSIM_ATTR_DOUBLE:
      out->v.d = r->v.d;
      break;
    case ETSIM_ATTR_FLOAT:
      memcpy(&out->v.f, &r->v.u, sizeof out->v.f);
      break;
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SFIXED32:
      out->v.i32 = (int32_t)r->v.i;
      break;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      out->v.u32 = (uint32_t)r->v.u;
      break;
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_SINT64:
    case ETSIM_ATTR_SFIXED64:
      out->v.i64 = r->v.i;
      break;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      out->v.u64 = r->v.u;
      break;
    case ETSIM_ATTR_BOOL:
      out->v.b = (int)r->v.u;
      break;
    case ETSIM_ATTR_STRING:
      out->v.s = r->v.p;
      break;
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

int64_t etsim_et_trace_attr_find(const etsim_et_trace_t *t, size_t i, uint32_t name_id) {
  for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++)
    if (t->attrs[k].name == name_id) return k;
  return -1;
}

int etsim_et_trace_attr_int(const etsim_et_trace_t *t, size_t i, uint32_t name_id, int64_t *out) {
  if (name_id == UINT32_MAX) return 0;
  int64_t k = etsim_et_trace_attr_find(t, i, name_id);
  if (k < 0) return 0;
  etsim_attr_t a;
  etsim_et_trace_attr(t, (size_t)k, &a);
  int rc = etsim_attr_as_int(&a, out);
  return rc ? rc : 1;
}

int etsim_et_trace_attr_int_by_name(const etsim_et_trace_t *t, size_t i, const char *name,
                                    int64_t *out) {
  int64_t id = etsim_intern_find(&t->strings, name);
  return id < 0 ? 0 : etsim_et_trace_attr_int(t, i, (uint32_t)id, out);
}

const char *etsim_et_trace_attr_str(const etsim_et_trace_t *t, size_t i, uint32_t name_id) {
  if (name_id == UINT32_MAX) return NULL;
  int64_t k = etsim_et_trace_attr_find(t, i, name_id);
  if (k < 0 || (t->attrs[k].kind_doc & 0xff) != ETSIM_ATTR_STRING) return NULL;
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

int etsim_et_trace_view(const etsim_et_trace_t *t, size_t i, etsim_et_viewbuf_t *b,
                        const etsim_et_node_t **out) {
  size_t nd = t->data_off[i + 1] - t->data_off[i];
  size_t nc = t->ctrl_off[i + 1] - t->ctrl_off[i];
  size_t na = t->attr_off[i + 1] - t->attr_off[i];
  if (etsim_grow((void **)&b->deps, &b->deps_cap, nd + nc, sizeof *b->deps) ||
      etsim_grow((void **)&b->attrs, &b->attrs_cap, na, sizeof *b->attrs))
    return ETSIM_ENOMEM;
  for (size_t e = 0; e < nd; e++) b->deps[e] = dep_id(t, t->data_par[t->data_off[i] + e]);
  for (size_t e = 0; e < nc; e++) b->deps[nd + e] = dep_id(t, t->ctrl_par[t->ctrl_off[i] + e]);
  for (size_t k = 0; k < na; k++) etsim_et_trace_attr(t, t->attr_off[i] + k, &b->attrs[k]);
  etsim_et_node_t *v = &b->node;
  v->id = t->id[i];
  v->name = t->name[i];
  v->type = t->type[i];
  v->start_time_micros = t->start_us[i];
  v->duration_micros = t->dur_us[i];
  v->n_data_deps = nd;
  v->data_deps = b->deps;
  v->n_ctrl_deps = nc;
  v->ctrl_deps = b->deps ? b->deps + nd : NULL;
  const etsim_et_io_t *io = &t->ios[t->io[i]];
  v->inputs = io->flags & 1 ? &io->in : NULL;
  v->outputs = io->flags & 2 ? &io->out : NULL;
  v->n_attrs = na;
  v->attrs = b->attrs;
  *out = v;
  return 0;
}

int etsim_et_trace_write(const etsim_et_trace_t *t, const char *path, unsigned write_flags,
                         etsim_error_t *err) {
  etsim_et_writer_t *w;
  int rc = etsim_et_writer_open(&w, path, write_flags | ETSIM_ET_WRITE_VERBATIM, err);
  if (rc) return rc;
  etsim_et_viewbuf_t b;
  memset(&b, 0, sizeof b);
  rc = etsim_et_writer_meta(w, &t->meta, err);
  for (size_t i = 0; !rc && i < t->n_nodes; i++) {
    const etsim_et_node_t *v;
    if ((rc = etsim_et_trace_view(t, i, &b, &v)))
      etsim_error_set(err, rc, "%s: out of memory", path);
    else rc = etsim_et_writer_node(w, v, err);
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
  size_t per_node = sizeof *t->id + sizeof *t->start_us + sizeof *t->dur_us + sizeof *t->name +
                    sizeof *t->type + sizeof *t->io + 5 * sizeof(uint32_t);
  return n * per_node + t->index.cap * sizeof(uint32_t) + t->n_attrs * sizeof *t->attrs +
         (t->n_data_edges + t->n_ctrl_edges) * 2 * sizeof(uint32_t) + t->n_ios * sizeof *t->ios +
         etsim_arena_reserved(&t->arena) + etsim_arena_reserved(&t->strings.arena);
}
