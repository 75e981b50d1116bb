/*
 * enc.c — a direct Chakra encoder for generators: node views to bytes in a
 * growable buffer, with no protobuf-c message building in between.
 *
 * Generators and the text converter write millions of small nodes; building
 * protobuf-c structs and packing them through the descriptor tables costs
 * over a microsecond a node, ten times the target.  This encoder writes the
 * same canonical bytes the et writer produces (fields in number order,
 * proto3 defaults omitted, repeated numbers packed, a set oneof always
 * written), which tests/gen/test_enc.c checks against the et writer for
 * every attribute kind.
 */
#include "etsim/gen.h"

#include <string.h>

/* ----------------------------------------------------------- buffer */

void etsim_gen_buf_free(etsim_gen_buf_t *b) {
  etsim_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

static int reserve(etsim_gen_buf_t *b, size_t more) {
  if (b->n + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more) cap += cap / 2;
  uint8_t *p = etsim_realloc(b->p, cap);
  if (!p) return ETSIM_ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

/* ----------------------------------------------------- wire helpers */

static inline size_t vsize(uint64_t v) {
  /* 1 + floor(log2(v) / 7), with v | 1 so that 0 takes one byte. */
  return 1 + (size_t)(63 - __builtin_clzll(v | 1)) / 7;
}

static inline uint8_t *vput(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static inline uint8_t *tput(uint8_t *p, unsigned field, unsigned wire) {
  return vput(p, ((uint64_t)field << 3) | wire);
}

static inline size_t tsize(unsigned field) { return vsize((uint64_t)field << 3); }

static inline uint8_t *le_put(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) *p++ = (uint8_t)(v >> (8 * i));
  return p;
}

static inline uint64_t zz32(int32_t v) {
  return (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}
static inline uint64_t zz64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

enum { W_VARINT = 0, W_I64 = 1, W_LEN = 2, W_I32 = 5 };

/* Wire type and, for varints, the value of one list element or scalar. */
static int kind_wire(int scalar_kind) {
  switch (scalar_kind) {
    case ETSIM_ATTR_DOUBLE:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED64:
      return W_I64;
    case ETSIM_ATTR_FLOAT:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_SFIXED32:
      return W_I32;
    case ETSIM_ATTR_STRING:
    case ETSIM_ATTR_BYTES:
      return W_LEN;
    default:
      return W_VARINT;
  }
}

/* Varint value of element i of a list of scalar kind `k` (list layout as in
 * etsim_attr_t), or of a scalar attribute when list is NULL. */
static uint64_t varint_of(int k, const etsim_attr_t *a, const void *list, size_t i) {
  switch (k) {
    case ETSIM_ATTR_INT32:
      return (uint64_t)(int64_t)(list ? ((const int32_t *)list)[i] : a->v.i32);
    case ETSIM_ATTR_INT64:
      return (uint64_t)(list ? ((const int64_t *)list)[i] : a->v.i64);
    case ETSIM_ATTR_UINT32:
      return list ? ((const uint32_t *)list)[i] : a->v.u32;
    case ETSIM_ATTR_UINT64:
      return list ? ((const uint64_t *)list)[i] : a->v.u64;
    case ETSIM_ATTR_SINT32:
      return zz32(list ? ((const int32_t *)list)[i] : a->v.i32);
    case ETSIM_ATTR_SINT64:
      return zz64(list ? ((const int64_t *)list)[i] : a->v.i64);
    case ETSIM_ATTR_BOOL:
      return (list ? ((const int *)list)[i] : a->v.b) != 0;
    default:
      return 0;
  }
}

/* Fixed-width bits of element i (or the scalar). */
static uint64_t fixed_of(int k, const etsim_attr_t *a, const void *list, size_t i) {
  uint64_t u = 0;
  switch (k) {
    case ETSIM_ATTR_DOUBLE: {
      double d = list ? ((const double *)list)[i] : a->v.d;
      memcpy(&u, &d, 8);
      return u;
    }
    case ETSIM_ATTR_FLOAT: {
      float f = list ? ((const float *)list)[i] : a->v.f;
      uint32_t w;
      memcpy(&w, &f, 4);
      return w;
    }
    case ETSIM_ATTR_FIXED32:
      return list ? ((const uint32_t *)list)[i] : a->v.u32;
    case ETSIM_ATTR_SFIXED32:
      return (uint32_t)(list ? ((const int32_t *)list)[i] : a->v.i32);
    case ETSIM_ATTR_FIXED64:
      return list ? ((const uint64_t *)list)[i] : a->v.u64;
    case ETSIM_ATTR_SFIXED64:
      return (uint64_t)(list ? ((const int64_t *)list)[i] : a->v.i64);
    default:
      return 0;
  }
}

/* Size of the packed payload of a numeric list. */
static size_t packed_size(int k, const etsim_attr_t *a) {
  const void *l = a->v.list.v;
  size_t n = a->v.list.n;
  int w = kind_wire(k);
  if (w == W_I64) return 8 * n;
  if (w == W_I32) return 4 * n;
  size_t s = 0;
  for (size_t i = 0; i < n; i++) s += vsize(varint_of(k, a, l, i));
  return s;
}

static const char *str_elem(int list_kind, const void *l, size_t i, size_t *len) {
  if (list_kind == ETSIM_ATTR_STRING_LIST) {
    const char *s = ((const char *const *)l)[i];
    s = s ? s : "";
    *len = strlen(s);
    return s;
  }
  const etsim_bytes_t *b = &((const etsim_bytes_t *)l)[i];
  *len = b->len;
  return (const char *)b->data;
}

/* Size of the list message (the content inside the oneof's LEN field). */
static size_t list_msg_size(const etsim_attr_t *a) {
  int k = a->kind - 1; /* scalar kind of the elements */
  if (k == ETSIM_ATTR_STRING || k == ETSIM_ATTR_BYTES) {
    size_t s = 0;
    for (size_t i = 0; i < a->v.list.n; i++) {
      size_t len;
      str_elem(a->kind, a->v.list.v, i, &len);
      s += 1 + vsize(len) + len;
    }
    return s;
  }
  if (!a->v.list.n) return 0;
  size_t ps = packed_size(k, a);
  return 1 + vsize(ps) + ps;
}

static size_t str_field_size(unsigned field, const char *s) {
  size_t n = s ? strlen(s) : 0;
  return n ? tsize(field) + vsize(n) + n : 0;
}

/* Lengths of an attribute's strings, measured once for both passes. */
typedef struct {
  size_t name, doc, val, total;
} alen_t;

static size_t slen_field(unsigned field, size_t n) { return n ? tsize(field) + vsize(n) + n : 0; }

/* Bytes of one AttributeProto's content, or 0 with *bad for a bad kind;
 * fills *L when given. */
static size_t attr_size_l(const etsim_attr_t *a, int *bad, alen_t *L) {
  size_t nl = a->name ? strlen(a->name) : 0, dl = a->doc && a->doc[0] ? strlen(a->doc) : 0;
  if (L) {
    L->name = nl;
    L->doc = dl;
    L->val = 0;
  }
  size_t s = slen_field(1, nl) + slen_field(2, dl);
  int k = a->kind;
  /* The kinds generators write, without the generic dispatch. */
  switch (k) {
    case ETSIM_ATTR_INT64:
      return s + 1 + vsize((uint64_t)a->v.i64);
    case ETSIM_ATTR_UINT64:
      return s + 1 + vsize(a->v.u64);
    case ETSIM_ATTR_INT32:
      return s + 1 + vsize((uint64_t)(int64_t)a->v.i32);
    case ETSIM_ATTR_BOOL:
      return s + 3;
    default:
      break;
  }
  if (k == ETSIM_ATTR_NONE) return s;
  if (k < ETSIM_ATTR_DOUBLE || k > ETSIM_ATTR_KIND_MAX) {
    *bad = 1;
    return 0;
  }
  s += tsize((unsigned)k);
  if (k % 2 == 0) { /* list */
    size_t m = list_msg_size(a);
    return s + vsize(m) + m;
  }
  switch (kind_wire(k)) {
    case W_I64:
      return s + 8;
    case W_I32:
      return s + 4;
    case W_LEN: {
      size_t n = k == ETSIM_ATTR_STRING ? (a->v.s ? strlen(a->v.s) : 0) : a->v.bytes.len;
      if (L) L->val = n;
      return s + vsize(n) + n;
    }
    default:
      return s + vsize(varint_of(k, a, NULL, 0));
  }
}

static size_t attr_size(const etsim_attr_t *a, int *bad) { return attr_size_l(a, bad, NULL); }

static uint8_t *put_lfield(uint8_t *p, unsigned field, const char *s, size_t n) {
  if (!n) return p;
  p = tput(p, field, W_LEN);
  p = vput(p, n);
  memcpy(p, s, n);
  return p + n;
}

static uint8_t *put_str_field(uint8_t *p, unsigned field, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (!n) return p;
  p = tput(p, field, W_LEN);
  p = vput(p, n);
  memcpy(p, s, n);
  return p + n;
}

static uint8_t *put_attr(uint8_t *p, const etsim_attr_t *a, const alen_t *L) {
  alen_t tmp;
  if (!L) {
    int bad = 0;
    attr_size_l(a, &bad, &tmp);
    L = &tmp;
  }
  p = put_lfield(p, 1, a->name, L->name);
  p = put_lfield(p, 2, a->doc, L->doc);
  int k = a->kind;
  switch (k) {
    case ETSIM_ATTR_INT64:
      *p++ = 0x48;
      return vput(p, (uint64_t)a->v.i64);
    case ETSIM_ATTR_UINT64:
      *p++ = 0x68;
      return vput(p, a->v.u64);
    case ETSIM_ATTR_INT32:
      *p++ = 0x38;
      return vput(p, (uint64_t)(int64_t)a->v.i32);
    case ETSIM_ATTR_BOOL:
      *p++ = 0xd8;
      *p++ = 0x01;
      *p++ = a->v.b != 0;
      return p;
    default:
      break;
  }
  if (k == ETSIM_ATTR_NONE) return p;
  if (k % 2 == 0) {
    int ek = k - 1;
    p = tput(p, (unsigned)k, W_LEN);
    p = vput(p, list_msg_size(a));
    const void *l = a->v.list.v;
    size_t n = a->v.list.n;
    if (ek == ETSIM_ATTR_STRING || ek == ETSIM_ATTR_BYTES) {
      for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = str_elem(k, l, i, &len);
        *p++ = 0x0a;
        p = vput(p, len);
        if (len) memcpy(p, s, len);
        p += len;
      }
      return p;
    }
    if (!n) return p;
    *p++ = 0x0a;
    p = vput(p, packed_size(ek, a));
    int w = kind_wire(ek);
    for (size_t i = 0; i < n; i++) {
      if (w == W_VARINT) p = vput(p, varint_of(ek, a, l, i));
      else p = le_put(p, fixed_of(ek, a, l, i), w == W_I64 ? 8 : 4);
    }
    return p;
  }
  int w = kind_wire(k);
  p = tput(p, (unsigned)k, (unsigned)w);
  switch (w) {
    case W_I64:
      return le_put(p, fixed_of(k, a, NULL, 0), 8);
    case W_I32:
      return le_put(p, fixed_of(k, a, NULL, 0), 4);
    case W_LEN: {
      const void *d = k == ETSIM_ATTR_STRING ? (const void *)a->v.s : (const void *)a->v.bytes.data;
      size_t n = L->val;
      p = vput(p, n);
      if (n) memcpy(p, d, n);
      return p + n;
    }
    default:
      return vput(p, varint_of(k, a, NULL, 0));
  }
}

static size_t io_size(const etsim_ioinfo_t *io) {
  return str_field_size(1, io->values) + str_field_size(2, io->shapes) +
         str_field_size(3, io->types);
}

static uint8_t *put_io(uint8_t *p, unsigned field, const etsim_ioinfo_t *io) {
  p = tput(p, field, W_LEN);
  p = vput(p, io_size(io));
  p = put_str_field(p, 1, io->values);
  p = put_str_field(p, 2, io->shapes);
  return put_str_field(p, 3, io->types);
}

static size_t deps_size(const uint64_t *d, size_t n) {
  size_t s = 0;
  for (size_t i = 0; i < n; i++) s += vsize(d[i]);
  return s;
}

/* ------------------------------------------------------------ public */

int etsim_gen_enc_node(etsim_gen_buf_t *b, const etsim_et_node_t *n, etsim_error_t *err) {
  int bad = 0;
  alen_t lens[32];
  size_t name_len = n->name ? strlen(n->name) : 0;
  size_t cd = deps_size(n->ctrl_deps, n->n_ctrl_deps);
  size_t dd = deps_size(n->data_deps, n->n_data_deps);
  size_t s = 0;
  if (n->id) s += 1 + vsize(n->id);
  s += slen_field(2, name_len);
  if (n->type) s += 1 + vsize((uint64_t)n->type);
  if (n->n_ctrl_deps) s += 1 + vsize(cd) + cd;
  if (n->n_data_deps) s += 1 + vsize(dd) + dd;
  if (n->start_time_micros) s += 1 + vsize(n->start_time_micros);
  if (n->duration_micros) s += 1 + vsize(n->duration_micros);
  if (n->inputs) {
    size_t m = io_size(n->inputs);
    s += 1 + vsize(m) + m;
  }
  if (n->outputs) {
    size_t m = io_size(n->outputs);
    s += 1 + vsize(m) + m;
  }
  for (size_t i = 0; i < n->n_attrs; i++) {
    size_t m = attr_size_l(&n->attrs[i], &bad, i < 32 ? &lens[i] : NULL);
    if (i < 32) lens[i].total = m;
    if (bad)
      return etsim_error_set(err, ETSIM_EINVAL, "node id %llu: attribute '%s' has bad kind %d",
                             (unsigned long long)n->id, n->attrs[i].name, n->attrs[i].kind);
    s += 1 + vsize(m) + m;
  }
  if (s == 0)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "node id 0 would be an empty message, which "
                           "Chakra's Python readers take for end of file");
  if (s > UINT32_MAX)
    return etsim_error_set(err, ETSIM_ERANGE, "node id %llu: too large", (unsigned long long)n->id);
  if (reserve(b, s + 5)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint8_t *p = vput(b->p + b->n, s);
  if (n->id) {
    *p++ = 0x08;
    p = vput(p, n->id);
  }
  p = put_lfield(p, 2, n->name, name_len);
  if (n->type) {
    *p++ = 0x18;
    p = vput(p, (uint64_t)n->type);
  }
  if (n->n_ctrl_deps) {
    *p++ = 0x22;
    p = vput(p, cd);
    for (size_t i = 0; i < n->n_ctrl_deps; i++) p = vput(p, n->ctrl_deps[i]);
  }
  if (n->n_data_deps) {
    *p++ = 0x2a;
    p = vput(p, dd);
    for (size_t i = 0; i < n->n_data_deps; i++) p = vput(p, n->data_deps[i]);
  }
  if (n->start_time_micros) {
    *p++ = 0x30;
    p = vput(p, n->start_time_micros);
  }
  if (n->duration_micros) {
    *p++ = 0x38;
    p = vput(p, n->duration_micros);
  }
  if (n->inputs) p = put_io(p, 8, n->inputs);
  if (n->outputs) p = put_io(p, 9, n->outputs);
  for (size_t i = 0; i < n->n_attrs; i++) {
    *p++ = 0x52;
    if (i < 32) {
      p = vput(p, lens[i].total);
      p = put_attr(p, &n->attrs[i], &lens[i]);
    } else {
      p = vput(p, attr_size(&n->attrs[i], &bad));
      p = put_attr(p, &n->attrs[i], NULL);
    }
  }
  b->n = (size_t)(p - b->p);
  return 0;
}

int etsim_gen_enc_meta(etsim_gen_buf_t *b, const etsim_et_meta_t *m, etsim_error_t *err) {
  int bad = 0;
  size_t s = str_field_size(1, m ? m->version : NULL);
  size_t na = m ? m->n_attrs : 0;
  for (size_t i = 0; i < na; i++) {
    size_t a = attr_size(&m->attrs[i], &bad);
    if (bad)
      return etsim_error_set(err, ETSIM_EINVAL, "metadata attribute '%s' has bad kind %d",
                             m->attrs[i].name, m->attrs[i].kind);
    s += 1 + vsize(a) + a;
  }
  if (reserve(b, s + 5)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint8_t *p = vput(b->p + b->n, s);
  p = put_str_field(p, 1, m ? m->version : NULL);
  for (size_t i = 0; i < na; i++) {
    *p++ = 0x12;
    p = vput(p, attr_size(&m->attrs[i], &bad));
    p = put_attr(p, &m->attrs[i], NULL);
  }
  b->n = (size_t)(p - b->p);
  return 0;
}
