/*
 * share.c — traces that are equal up to their labels.
 *
 * Per-rank traces of one training job differ in few places: the
 * communicator a collective runs on (pg_name, a global group id in
 * ASTRA-sim's format) and the peers of point-to-point messages
 * (comm_src, comm_dst).  Everything else — nodes, names, times, sizes,
 * dependencies — is often the same for whole classes of ranks (every
 * data-parallel replica of a pipeline stage).  Such a trace is its
 * "shape" plus a short vector of label values: each distinct pg_name
 * string and each distinct peer id gets a slot, numbered in order of first
 * appearance, and the shape records slot numbers where the values were.
 * Two traces with the same shape differ only by a one-to-one renaming of
 * their labels, so a set can keep one trace per shape and, per file, the
 * label values (a few per rank instead of the whole trace).
 *
 * The shape is hashed while the labels are extracted; a hash hit is
 * confirmed by comparing the two traces field by field.
 */
#include "et_int.h"

#include <string.h>

#define NONE UINT32_MAX

/* Whether attribute record k of t is a label: 1 string (pg_name), 2 NPU id
 * (comm_src, comm_dst), 0 neither. */
static int label_kind(const etsim_et_trace_t *t, size_t k) {
  const etsim_et_attrrec_t *a = &t->attrs[k];
  int kind = (int)(a->kind_doc & 0xff);
  if (a->name == t->k_pg_name && kind == ETSIM_ATTR_STRING) return 1;
  if ((a->name == t->k_comm_src || a->name == t->k_comm_dst) && etsim_attr_kind_is_int(kind))
    return 2;
  return 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ etsim_hash_u64(v)) * 0x9e3779b97f4a7c15ull;
}

/* Bytes, 8 at a time (names and strings of every node of every rank file
 * pass through here; a byte-at-a-time hash was a tenth of a load). */
uint64_t etsim_et__hash_mem(const void *p, size_t n) {
  const unsigned char *c = p;
  uint64_t h = 0x243f6a8885a308d3ull ^ n;
  for (; n >= 8; n -= 8, c += 8) {
    uint64_t w;
    memcpy(&w, c, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  memcpy(&w, c, n);
  return etsim_hash_u64(h ^ w);
}

static uint64_t mix_str(uint64_t h, const char *s) {
  return mix(h, s ? etsim_et__hash_mem(s, strlen(s)) : 0x51ed27ull);
}

/* Hash of an attribute's value (not for labels). */
static uint64_t value_hash(const etsim_et_attrrec_t *a) {
  int kind = (int)(a->kind_doc & 0xff);
  if (kind == ETSIM_ATTR_STRING) return mix_str(1, a->v.p);
  if (kind == ETSIM_ATTR_BYTES || etsim_attr_kind_is_list(kind)) {
    const etsim_et_blob_t *b = a->v.p;
    uint64_t h = mix(2, b->n);
    if (kind == ETSIM_ATTR_STRING_LIST) {
      const char *const *s = et_blob_data(b);
      for (uint64_t i = 0; i < b->n; i++) h = mix_str(h, s[i]);
    } else if (kind == ETSIM_ATTR_BYTES_LIST) {
      const etsim_bytes_t *s = et_blob_data(b);
      for (uint64_t i = 0; i < b->n; i++) h = mix(h, etsim_et__hash_mem(s[i].data, s[i].len));
    } else {
      h = mix(h, etsim_et__hash_mem(et_blob_data(b), b->n * b->elem_size));
    }
    return h;
  }
  return mix(3, a->v.u);
}

void etsim_et__labels_free(et_labels_t *l) {
  etsim_free(l->attr_slot);
  etsim_free(l->vals);
  memset(l, 0, sizeof *l);
}

int etsim_et__labels_extract(const etsim_et_trace_t *t, etsim_intern_t *strs, et_labels_t *out) {
  memset(out, 0, sizeof *out);
  etsim_u64map_t by_str, by_int;
  etsim_u64map_init(&by_str);
  etsim_u64map_init(&by_int);
  size_t cap = 0;
  int rc = ETSIM_ENOMEM;
  const char *last_s = NULL;
  uint64_t last_id = 0;
  out->attr_slot = etsim_malloc((t->n_attrs ? t->n_attrs : 1) * sizeof *out->attr_slot);
  if (!out->attr_slot) goto done;
  uint64_t h = mix(mix(0x7ace, t->n_nodes), t->n_dangling);
  h = mix_str(h, t->meta.version);
  for (size_t m = 0; m < t->meta.n_attrs; m++) h = mix_str(h, t->meta.attrs[m].name);
  for (size_t i = 0; i < t->n_nodes; i++) {
    h = mix(mix(mix(mix(h, t->id[i]), t->type[i]), t->start_us[i]), t->dur_us[i]);
    h = mix_str(h, t->name[i]);
    if (t->io && t->io[i]) {
      const etsim_et_io_t *io = &t->ios[t->io[i]];
      h = mix(h, io->flags);
      h = mix_str(mix_str(mix_str(h, io->in.values), io->in.shapes), io->in.types);
      h = mix_str(mix_str(mix_str(h, io->out.values), io->out.shapes), io->out.types);
    }
    h = mix(h, t->attr_off[i + 1] - t->attr_off[i]);
    for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++) {
      const etsim_et_attrrec_t *a = &t->attrs[k];
      h = mix_str(h, etsim_intern_str(&t->strings, a->name));
      h = mix_str(mix(h, a->kind_doc & 0xff), etsim_intern_str(&t->strings, a->kind_doc >> 8));
      int lk = label_kind(t, k);
      if (!lk) {
        out->attr_slot[k] = NONE;
        h = mix(h, value_hash(a));
        continue;
      }
      /* A label: its slot (new values get the next one), hashed in place of
       * the value, so traces that differ only by renaming hash alike. */
      uint64_t key;
      etsim_u64map_t *map = lk == 1 ? &by_str : &by_int;
      if (lk == 1) {
        /* a trace names few communicators, each many times: the last one
         * saves the interning */
        if (!last_s || strcmp(last_s, a->v.p) != 0) {
          int64_t id = etsim_intern_put(strs, a->v.p, strlen(a->v.p));
          if (id < 0) goto done;
          last_s = a->v.p;
          last_id = (uint64_t)id;
        }
        key = last_id;
      } else {
        key = a->v.u;
      }
      uint32_t slot = out->n;
      int put = etsim_u64map_put(map, key, slot, &slot);
      if (put < 0) goto done;
      if (put == 1) {
        if (out->n == cap && etsim_grow((void **)&out->vals, &cap, out->n + 1, sizeof *out->vals))
          goto done;
        out->vals[out->n].i = lk == 1 ? 0 : a->v.i;
        out->vals[out->n].s = lk == 1 ? etsim_intern_str(strs, (uint32_t)key) : NULL;
        out->n++;
      }
      out->attr_slot[k] = slot;
      h = mix(mix(h, 0x1abe1 + (uint64_t)lk), slot);
    }
    for (uint32_t e = t->data_off[i]; e < t->data_off[i + 1]; e++) h = mix(h, t->data_par[e]);
    h = mix(h, 0xc791);
    for (uint32_t e = t->ctrl_off[i]; e < t->ctrl_off[i + 1]; e++) h = mix(h, t->ctrl_par[e]);
  }
  for (size_t d = 0; d < t->n_dangling; d++) h = mix(h, t->dangling[d]);
  out->shape_hash = h;
  rc = 0;
done:
  etsim_u64map_free(&by_str);
  etsim_u64map_free(&by_int);
  if (rc) etsim_et__labels_free(out);
  return rc;
}

static int str_eq(const char *a, const char *b) {
  return (a ? a : "")[0] == (b ? b : "")[0] && strcmp(a ? a : "", b ? b : "") == 0;
}

static int value_eq(const etsim_et_attrrec_t *x, const etsim_et_attrrec_t *y) {
  int kind = (int)(x->kind_doc & 0xff);
  if (kind == ETSIM_ATTR_STRING) return str_eq(x->v.p, y->v.p);
  if (kind == ETSIM_ATTR_BYTES || etsim_attr_kind_is_list(kind)) {
    const etsim_et_blob_t *a = x->v.p, *b = y->v.p;
    if (a->n != b->n || a->elem_size != b->elem_size) return 0;
    if (kind == ETSIM_ATTR_STRING_LIST) {
      const char *const *s = et_blob_data(a), *const *t = et_blob_data(b);
      for (uint64_t i = 0; i < a->n; i++)
        if (!str_eq(s[i], t[i])) return 0;
      return 1;
    }
    if (kind == ETSIM_ATTR_BYTES_LIST) {
      const etsim_bytes_t *s = et_blob_data(a), *t = et_blob_data(b);
      for (uint64_t i = 0; i < a->n; i++)
        if (s[i].len != t[i].len || (s[i].len && memcmp(s[i].data, t[i].data, s[i].len))) return 0;
      return 1;
    }
    return a->n == 0 || memcmp(et_blob_data(a), et_blob_data(b), a->n * a->elem_size) == 0;
  }
  return x->v.u == y->v.u;
}

static int io_eq(const etsim_ioinfo_t *a, const etsim_ioinfo_t *b) {
  return str_eq(a->values, b->values) && str_eq(a->shapes, b->shapes) && str_eq(a->types, b->types);
}

/* Two attribute views (GlobalMetadata's, which are few). */
static int view_eq(const etsim_attr_t *x, const etsim_attr_t *y) {
  if (!str_eq(x->name, y->name) || !str_eq(x->doc, y->doc) || x->kind != y->kind) return 0;
  if (x->kind == ETSIM_ATTR_STRING) return str_eq(x->v.s, y->v.s);
  if (x->kind == ETSIM_ATTR_BYTES)
    return x->v.bytes.len == y->v.bytes.len &&
           (!x->v.bytes.len || memcmp(x->v.bytes.data, y->v.bytes.data, x->v.bytes.len) == 0);
  if (!etsim_attr_kind_is_list(x->kind)) return memcmp(&x->v, &y->v, sizeof x->v) == 0;
  size_t n = x->v.list.n;
  if (n != y->v.list.n) return 0;
  if (x->kind == ETSIM_ATTR_STRING_LIST) {
    const char *const *s = x->v.list.v, *const *t = y->v.list.v;
    for (size_t i = 0; i < n; i++)
      if (!str_eq(s[i], t[i])) return 0;
    return 1;
  }
  if (x->kind == ETSIM_ATTR_BYTES_LIST) {
    const etsim_bytes_t *s = x->v.list.v, *t = y->v.list.v;
    for (size_t i = 0; i < n; i++)
      if (s[i].len != t[i].len || (s[i].len && memcmp(s[i].data, t[i].data, s[i].len))) return 0;
    return 1;
  }
  return !n || memcmp(x->v.list.v, y->v.list.v, n * etsim_et__list_elem_size(x->kind)) == 0;
}

int etsim_et__same_shape(const etsim_et_trace_t *a, const et_labels_t *la,
                         const etsim_et_trace_t *b, const et_labels_t *lb) {
  if (a->n_nodes != b->n_nodes || a->n_attrs != b->n_attrs || a->n_data_edges != b->n_data_edges ||
      a->n_ctrl_edges != b->n_ctrl_edges || a->n_dangling != b->n_dangling || la->n != lb->n ||
      !str_eq(a->meta.version, b->meta.version) || a->meta.n_attrs != b->meta.n_attrs)
    return 0;
  for (size_t m = 0; m < a->meta.n_attrs; m++)
    if (!view_eq(&a->meta.attrs[m], &b->meta.attrs[m])) return 0;
  for (size_t d = 0; d < a->n_dangling; d++)
    if (a->dangling[d] != b->dangling[d]) return 0;
  for (size_t i = 0; i < a->n_nodes; i++) {
    if (a->id[i] != b->id[i] || a->type[i] != b->type[i] || a->start_us[i] != b->start_us[i] ||
        a->dur_us[i] != b->dur_us[i] || a->attr_off[i + 1] != b->attr_off[i + 1] ||
        a->data_off[i + 1] != b->data_off[i + 1] || a->ctrl_off[i + 1] != b->ctrl_off[i + 1] ||
        !str_eq(a->name[i], b->name[i]))
      return 0;
    uint32_t ia = a->io ? a->io[i] : 0, ib = b->io ? b->io[i] : 0;
    if ((ia != 0) != (ib != 0)) return 0;
    if (ia && (a->ios[ia].flags != b->ios[ib].flags || !io_eq(&a->ios[ia].in, &b->ios[ib].in) ||
               !io_eq(&a->ios[ia].out, &b->ios[ib].out)))
      return 0;
    for (uint32_t k = a->attr_off[i]; k < a->attr_off[i + 1]; k++) {
      const etsim_et_attrrec_t *x = &a->attrs[k], *y = &b->attrs[k];
      if ((x->kind_doc & 0xff) != (y->kind_doc & 0xff) ||
          !str_eq(etsim_intern_str(&a->strings, x->name), etsim_intern_str(&b->strings, y->name)) ||
          !str_eq(etsim_intern_str(&a->strings, x->kind_doc >> 8),
                  etsim_intern_str(&b->strings, y->kind_doc >> 8)))
        return 0;
      if (la->attr_slot[k] != lb->attr_slot[k]) return 0;
      if (la->attr_slot[k] == NONE && !value_eq(x, y)) return 0;
    }
  }
  if (a->n_data_edges && memcmp(a->data_par, b->data_par, a->n_data_edges * sizeof *a->data_par))
    return 0;
  if (a->n_ctrl_edges && memcmp(a->ctrl_par, b->ctrl_par, a->n_ctrl_edges * sizeof *a->ctrl_par))
    return 0;
  return 1;
}
