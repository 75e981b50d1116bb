/*
 * wire.c — a hand-written protobuf wire decoder and encoder for the Chakra
 * Node, the message that makes up almost all of a trace.
 *
 * Decoding: etsim_et__wire_node() walks one Node message and records where its
 * fields are (spans into the caller's buffer) without allocating; readers
 * then copy what they keep straight into their own storage.  It accepts only
 * what it can decode exactly as protobuf-c 1.4 would: every field known to
 * the schema, at most once (packed repeated numbers in one run), with the
 * wire type the schema gives.  Anything else — unknown fields, repeated
 * scalars, unpacked repeated numbers, odd wire types, over-long tags or
 * length prefixes, a node type outside the enum — makes it answer "not
 * mine" (ET_WIRE_BAIL) and the caller decodes that message with protobuf-c,
 * which keeps the reference semantics and the strict error messages.  So the
 * fast path never changes what a file means; it only skips protobuf-c's
 * per-field allocations on the common shape.  Value quirks of protobuf-c are
 * reproduced on purpose: varints are truncated to the field width, a bool is
 * true when any payload bit of its varint is set.
 *
 * Encoding: etsim_et__wire_encode_node() and _meta() write the canonical
 * encoding byte for byte as protobuf_c_message_pack() does for the same view
 * (fields in number order, proto3 defaults omitted, a set oneof always
 * written, repeated numbers packed), which tests/et/test_wire.c checks
 * against protobuf-c.  It is etsim's one Chakra encoder: the file writer and
 * the in-memory encoder (enc.c) both use it.
 */
#include "et_int.h"

#include <limits.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "wire.c copies fixed-width protobuf values as little-endian memory"
#endif

/* ------------------------------------------------------------- decoding */

/* A varint of at most 10 bytes (protobuf-c's limit), value truncated to 64
 * bits as protobuf-c's parse_uint64 does.  Returns bytes used or 0. */
static inline size_t get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  if (p < end && p[0] < 0x80) {
    *v = p[0];
    return 1;
  }
  uint64_t r = 0;
  for (size_t i = 0; i < 10; i++) {
    if (p + i >= end) return 0;
    uint8_t b = p[i];
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return i + 1;
    }
  }
  return 0;
}

/* protobuf-c's parse_boolean: true when any payload bit is set. */
static inline uint64_t varint_bool(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] & 0x7f) return 1;
  return 0;
}

/* Tag of 1 or 2 bytes (field numbers up to 2047), decoded as protobuf-c's
 * parse_tag_and_wiretype does.  Returns bytes used, 0 to bail. */
static inline size_t get_tag(const uint8_t *p, const uint8_t *end, uint32_t *field, uint32_t *wt) {
  if (p >= end || (p[0] & 0xf8) == 0) return 0;
  *wt = p[0] & 7;
  if (p[0] < 0x80) {
    *field = p[0] >> 3;
    return 1;
  }
  if (p + 1 >= end || p[1] >= 0x80) return 0;
  *field = ((uint32_t)(p[0] & 0x7f) >> 3) | ((uint32_t)p[1] << 4);
  return 2;
}

/* Length prefix of a LEN field: at most 5 bytes, at most INT_MAX, and the
 * data must fit.  Returns bytes used by the prefix, 0 to bail. */
static inline size_t get_len(const uint8_t *p, const uint8_t *end, et_span_t *out) {
  uint64_t v;
  size_t k = get_varint(p, end, &v);
  if (!k || k > 5 || v > INT_MAX || v > (uint64_t)(end - p - k)) return 0;
  out->p = p + k;
  out->n = (size_t)v;
  return k;
}

/* IOInfo: values, shapes, types, each at most once. */
static int wire_io(et_span_t body, et_span_t s[3]) {
  const uint8_t *p = body.p, *end = body.p + body.n;
  unsigned seen = 0;
  while (p < end) {
    uint32_t f, wt;
    size_t k = get_tag(p, end, &f, &wt);
    if (!k || wt != 2 || f < 1 || f > 3 || (seen & (1u << f))) return ET_WIRE_BAIL;
    seen |= 1u << f;
    p += k;
    if (!(k = get_len(p, end, &s[f - 1]))) return ET_WIRE_BAIL;
    p += k + s[f - 1].n;
  }
  return 0;
}

/* Wire type each oneof member must have (index: field number 3..32). */
static int kind_wire_type(int kind) {
  if (kind >= ETSIM_ATTR_DOUBLE_LIST && !(kind & 1)) return 2; /* every list is a message */
  switch (kind) {
    case ETSIM_ATTR_DOUBLE:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED64:
      return 1;
    case ETSIM_ATTR_FLOAT:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_SFIXED32:
      return 5;
    case ETSIM_ATTR_STRING:
    case ETSIM_ATTR_BYTES:
      return 2;
    default:
      return 0; /* the varint kinds and bool */
  }
}

/* Check a packed run of varints; returns how many, or -1. */
static long count_varints(et_span_t s) {
  long n = 0;
  unsigned run = 0;
  for (size_t i = 0; i < s.n; i++) {
    if (s.p[i] & 0x80) {
      if (++run >= 10) return -1;
    } else {
      n++;
      run = 0;
    }
  }
  return run ? -1 : n;
}

/* A list message body: field 1 only.  Numeric lists must be one packed run
 * (or nothing); string and bytes lists are a sequence of LEN fields. */
static int wire_list(et_wattr_t *a, et_span_t body) {
  const uint8_t *p = body.p, *end = body.p + body.n;
  a->raw.p = body.p;
  a->raw.n = 0;
  a->count = 0;
  if (a->kind == ETSIM_ATTR_STRING_LIST || a->kind == ETSIM_ATTR_BYTES_LIST) {
    a->raw = body; /* the consumer walks the entries again */
    while (p < end) {
      et_span_t e;
      size_t k;
      if (p[0] != 0x0a || !(k = get_len(p + 1, end, &e))) return ET_WIRE_BAIL;
      p += 1 + k + e.n;
      a->count++;
    }
    return 0;
  }
  if (p == end) return 0;
  size_t k;
  if (p[0] != 0x0a || !(k = get_len(p + 1, end, &a->raw)) || a->raw.p + a->raw.n != end)
    return ET_WIRE_BAIL;
  size_t es = etsim_et__list_elem_size(a->kind);
  switch (a->kind) {
    case ETSIM_ATTR_DOUBLE_LIST:
    case ETSIM_ATTR_FLOAT_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
    case ETSIM_ATTR_FIXED64_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
    case ETSIM_ATTR_SFIXED64_LIST:
      if (a->raw.n % es) return ET_WIRE_BAIL;
      a->count = a->raw.n / es;
      return 0;
    default: {
      long n = count_varints(a->raw);
      if (n < 0) return ET_WIRE_BAIL;
      a->count = (size_t)n;
      return 0;
    }
  }
}

static int wire_attr(et_wattr_t *a, et_span_t body) {
  const uint8_t *p = body.p, *end = body.p + body.n;
  memset(a, 0, sizeof *a);
  unsigned seen = 0;
  while (p < end) {
    uint32_t f, wt;
    size_t k = get_tag(p, end, &f, &wt);
    if (!k || f < 1 || f > 32) return ET_WIRE_BAIL;
    p += k;
    if (f <= 2) {
      if (wt != 2 || (seen & (1u << f))) return ET_WIRE_BAIL;
      seen |= 1u << f;
      et_span_t *s = f == 1 ? &a->name : &a->doc;
      if (!(k = get_len(p, end, s))) return ET_WIRE_BAIL;
      p += k + s->n;
      continue;
    }
    if (a->kind || (int)wt != kind_wire_type((int)f))
      return ET_WIRE_BAIL; /* a second oneof member, or a wire-type quirk */
    a->kind = (int)f;
    switch (wt) {
      case 0:
        if (!(k = get_varint(p, end, &a->u))) return ET_WIRE_BAIL;
        if (f == ETSIM_ATTR_BOOL) a->u = varint_bool(p, k);
        p += k;
        break;
      case 1:
        if (end - p < 8) return ET_WIRE_BAIL;
        memcpy(&a->u, p, 8);
        p += 8;
        break;
      case 5: {
        uint32_t v;
        if (end - p < 4) return ET_WIRE_BAIL;
        memcpy(&v, p, 4);
        a->u = v;
        p += 4;
        break;
      }
      default: {
        et_span_t s;
        if (!(k = get_len(p, end, &s))) return ET_WIRE_BAIL;
        p += k + s.n;
        if (f == ETSIM_ATTR_STRING || f == ETSIM_ATTR_BYTES) a->raw = s;
        else if (wire_list(a, s)) return ET_WIRE_BAIL;
        break;
      }
    }
  }
  return 0;
}

int etsim_et__wire_node(const uint8_t *p, size_t n, et_wnode_t *w) {
  const uint8_t *end = p + n;
  unsigned seen = 0;
  w->id = w->start_us = w->dur_us = 0;
  w->type = 0;
  w->name.p = p;
  w->name.n = 0;
  w->deps[0] = w->deps[1] = w->name;
  w->io_flags = 0;
  for (int i = 0; i < 6; i++) w->io[i] = w->name;
  w->n_attrs = 0;
  while (p < end) {
    uint32_t f, wt;
    size_t k = get_tag(p, end, &f, &wt);
    if (!k || f < 1 || f > 10) return ET_WIRE_BAIL;
    p += k;
    if (f != 10) {
      if (seen & (1u << f)) return ET_WIRE_BAIL; /* repeated field: protobuf-c semantics apply */
      seen |= 1u << f;
    }
    switch (f) {
      case 1:
      case 3:
      case 6:
      case 7: {
        uint64_t v;
        if (wt != 0 || !(k = get_varint(p, end, &v))) return ET_WIRE_BAIL;
        p += k;
        if (f == 1) w->id = v;
        else if (f == 6) w->start_us = v;
        else if (f == 7) w->dur_us = v;
        else {
          int32_t t = (int32_t)(uint32_t)v;
          if (t < 0 || t >= ETSIM_ET_NODE_TYPE_COUNT)
            return ET_WIRE_BAIL; /* the slow path names the bad type */
          w->type = t;
        }
        break;
      }
      default: {
        et_span_t s;
        if (wt != 2 || !(k = get_len(p, end, &s))) return ET_WIRE_BAIL;
        p += k + s.n;
        if (f == 2) {
          w->name = s;
        } else if (f == 4 || f == 5) {
          w->deps[f == 4 ? 1 : 0] = s; /* deps[0] data, deps[1] ctrl */
        } else if (f == 8 || f == 9) {
          w->io_flags |= f == 8 ? 1u : 2u;
          if (wire_io(s, &w->io[f == 8 ? 0 : 3])) return ET_WIRE_BAIL;
        } else {
          if (w->n_attrs == w->attrs_cap) {
            size_t cap = w->attrs_cap;
            if (etsim_grow((void **)&w->attrs, &cap, w->n_attrs + 1, sizeof *w->attrs))
              return ETSIM_ENOMEM;
            w->attrs_cap = cap;
          }
          if (wire_attr(&w->attrs[w->n_attrs], s)) return ET_WIRE_BAIL;
          w->n_attrs++;
        }
        break;
      }
    }
  }
  return 0;
}

long etsim_et__wire_deps(et_span_t s, uint64_t *dst) {
  const uint8_t *p = s.p, *end = s.p + s.n;
  long n = 0;
  /* Fast loop while at least 10 bytes remain: no end checks per byte. */
  while (end - p >= 10) {
    uint64_t v = p[0];
    if (v < 0x80) {
      dst[n++] = v;
      p++;
      continue;
    }
    v &= 0x7f;
    size_t i = 1;
    for (;; i++) {
      if (i == 10) return -1;
      uint8_t b = p[i];
      v |= (uint64_t)(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) break;
    }
    dst[n++] = v;
    p += i + 1;
  }
  while (p < end) {
    uint64_t v;
    size_t k = get_varint(p, end, &v);
    if (!k) return -1;
    dst[n++] = v;
    p += k;
  }
  return n;
}

/* ---------------------------------------------- scalars and list elements */

static inline int32_t unzigzag32(uint32_t v) { return (int32_t)((v >> 1) ^ (0u - (v & 1))); }
static inline int64_t unzigzag64(uint64_t v) { return (int64_t)((v >> 1) ^ (0ull - (v & 1))); }

void etsim_et__wire_scalar(const et_wattr_t *a, etsim_attr_t *out) {
  switch (a->kind) {
    case ETSIM_ATTR_DOUBLE:
      memcpy(&out->v.d, &a->u, sizeof out->v.d);
      break;
    case ETSIM_ATTR_FLOAT: {
      uint32_t b = (uint32_t)a->u;
      memcpy(&out->v.f, &b, sizeof b);
      break;
    }
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SFIXED32:
      out->v.i32 = (int32_t)(uint32_t)a->u;
      break;
    case ETSIM_ATTR_SINT32:
      out->v.i32 = unzigzag32((uint32_t)a->u);
      break;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      out->v.u32 = (uint32_t)a->u;
      break;
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_SFIXED64:
      out->v.i64 = (int64_t)a->u;
      break;
    case ETSIM_ATTR_SINT64:
      out->v.i64 = unzigzag64(a->u);
      break;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      out->v.u64 = a->u;
      break;
    case ETSIM_ATTR_BOOL:
      out->v.b = a->u != 0;
      break;
    default:
      break;
  }
}

void etsim_et__wire_list_values(const et_wattr_t *a, void *dst) {
  const uint8_t *p = a->raw.p, *end = a->raw.p + a->raw.n;
  size_t i = 0;
  switch (a->kind) {
    case ETSIM_ATTR_DOUBLE_LIST:
    case ETSIM_ATTR_FLOAT_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
    case ETSIM_ATTR_FIXED64_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
    case ETSIM_ATTR_SFIXED64_LIST:
      if (a->raw.n) memcpy(dst, a->raw.p, a->raw.n);
      return;
    default:
      break;
  }
  while (p < end && i < a->count) {
    uint64_t v = 0;
    size_t k = get_varint(p, end, &v);
    if (!k) return; /* validated by etsim_et__wire_node; not reached */
    switch (a->kind) {
      case ETSIM_ATTR_INT32_LIST:
        ((int32_t *)dst)[i] = (int32_t)(uint32_t)v;
        break;
      case ETSIM_ATTR_SINT32_LIST:
        ((int32_t *)dst)[i] = unzigzag32((uint32_t)v);
        break;
      case ETSIM_ATTR_UINT32_LIST:
        ((uint32_t *)dst)[i] = (uint32_t)v;
        break;
      case ETSIM_ATTR_INT64_LIST:
      case ETSIM_ATTR_UINT64_LIST:
        ((uint64_t *)dst)[i] = v;
        break;
      case ETSIM_ATTR_SINT64_LIST:
        ((int64_t *)dst)[i] = unzigzag64(v);
        break;
      case ETSIM_ATTR_BOOL_LIST:
        ((int *)dst)[i] = (int)varint_bool(p, k);
        break;
      default:
        return;
    }
    p += k;
    i++;
  }
}

int etsim_et__wire_list_entry(et_span_t *cursor, et_span_t *out) {
  if (!cursor->n) return 0;
  const uint8_t *end = cursor->p + cursor->n;
  size_t k = get_len(cursor->p + 1, end, out);
  if (cursor->p[0] != 0x0a || !k) return 0; /* validated by etsim_et__wire_node; not reached */
  const uint8_t *next = out->p + out->n;
  cursor->n = (size_t)(end - next);
  cursor->p = next;
  return 1;
}

/* ------------------------------------------------------ node views */

static char *scratch_str(etsim_arena_t *a, et_span_t s) {
  char *c = etsim_arena_alloc(a, s.n + 1);
  if (!c) return NULL;
  if (s.n) memcpy(c, s.p, s.n);
  c[s.n] = 0;
  return c;
}

int etsim_et__wire_view(const et_wnode_t *w, etsim_arena_t *a, etsim_et_node_t *v,
                        etsim_ioinfo_t io[2], etsim_attr_t **attrs, size_t *attrs_cap) {
  memset(v, 0, sizeof *v);
  v->id = w->id;
  v->type = w->type;
  v->start_time_micros = w->start_us;
  v->duration_micros = w->dur_us;
  if (!(v->name = scratch_str(a, w->name))) return ETSIM_ENOMEM;
  for (int d = 0; d < 2; d++) {
    uint64_t *dst = NULL;
    long n = 0;
    if (w->deps[d].n) {
      if (!(dst = etsim_arena_alloc(a, w->deps[d].n * sizeof *dst))) return ETSIM_ENOMEM;
      if ((n = etsim_et__wire_deps(w->deps[d], dst)) < 0) return ET_WIRE_BAIL;
    }
    if (d == 0) {
      v->n_data_deps = (size_t)n;
      v->data_deps = dst;
    } else {
      v->n_ctrl_deps = (size_t)n;
      v->ctrl_deps = dst;
    }
  }
  for (int k = 0; k < 2; k++) {
    if (!(w->io_flags & (1u << k))) continue;
    const et_span_t *s = &w->io[3 * k];
    if (!(io[k].values = scratch_str(a, s[0])) || !(io[k].shapes = scratch_str(a, s[1])) ||
        !(io[k].types = scratch_str(a, s[2])))
      return ETSIM_ENOMEM;
    if (k == 0) v->inputs = &io[0];
    else v->outputs = &io[1];
  }
  if (etsim_grow((void **)attrs, attrs_cap, w->n_attrs, sizeof **attrs)) return ETSIM_ENOMEM;
  for (size_t i = 0; i < w->n_attrs; i++) {
    const et_wattr_t *wa = &w->attrs[i];
    etsim_attr_t *o = &(*attrs)[i];
    memset(o, 0, sizeof *o);
    o->kind = wa->kind;
    if (!(o->name = scratch_str(a, wa->name)) || !(o->doc = scratch_str(a, wa->doc)))
      return ETSIM_ENOMEM;
    switch (wa->kind) {
      case ETSIM_ATTR_NONE:
        break;
      case ETSIM_ATTR_STRING:
        if (!(o->v.s = scratch_str(a, wa->raw))) return ETSIM_ENOMEM;
        break;
      case ETSIM_ATTR_BYTES:
        o->v.bytes.len = wa->raw.n;
        if (wa->raw.n && !(o->v.bytes.data = (const uint8_t *)scratch_str(a, wa->raw)))
          return ETSIM_ENOMEM;
        break;
      case ETSIM_ATTR_STRING_LIST:
      case ETSIM_ATTR_BYTES_LIST: {
        int str = wa->kind == ETSIM_ATTR_STRING_LIST;
        size_t es = str ? sizeof(char *) : sizeof(etsim_bytes_t);
        void *arr = wa->count ? etsim_arena_alloc(a, wa->count * es) : NULL;
        if (wa->count && !arr) return ETSIM_ENOMEM;
        et_span_t cur = wa->raw, e;
        for (size_t j = 0; j < wa->count && etsim_et__wire_list_entry(&cur, &e); j++) {
          char *c = (str || e.n) ? scratch_str(a, e) : NULL;
          if ((str || e.n) && !c) return ETSIM_ENOMEM;
          if (str) {
            ((const char **)arr)[j] = c;
          } else {
            ((etsim_bytes_t *)arr)[j].len = e.n;
            ((etsim_bytes_t *)arr)[j].data = (const uint8_t *)c;
          }
        }
        o->v.list.n = wa->count;
        o->v.list.v = arr;
        break;
      }
      default:
        if (etsim_attr_kind_is_list(wa->kind)) {
          size_t es = etsim_et__list_elem_size(wa->kind);
          void *arr = wa->count ? etsim_arena_alloc(a, wa->count * es) : NULL;
          if (wa->count && !arr) return ETSIM_ENOMEM;
          if (wa->count) etsim_et__wire_list_values(wa, arr);
          o->v.list.n = wa->count;
          o->v.list.v = arr;
        } else {
          etsim_et__wire_scalar(wa, o);
        }
        break;
    }
  }
  v->n_attrs = w->n_attrs;
  v->attrs = *attrs;
  return 0;
}

/* ------------------------------------------------------------- encoding */

static inline size_t varint_size(uint64_t v) {
  /* 1 + floor(bits / 7): 1 byte for 0..127, 10 bytes for >= 2^63. */
  int bits = 64 - __builtin_clzll(v | 1);
  return (size_t)(bits + 6) / 7;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* int32 and enum values: negatives as 10-byte sign-extended varints. */
static inline uint64_t int32_wire(int32_t v) { return (uint64_t)(int64_t)v; }
static inline uint32_t zigzag32(int32_t v) { return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31); }
static inline uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline size_t tag_size(uint32_t field) { return field < 16 ? 1 : 2; }
static inline uint8_t *put_tag(uint8_t *p, uint32_t field, uint32_t wt) {
  return put_varint(p, (uint64_t)(field << 3 | wt));
}

static size_t str_len(const char *s) { return s ? strlen(s) : 0; }

/* Element varint of a numeric list kind (varint kinds only). */
static inline uint64_t list_varint(int kind, const void *v, size_t i) {
  switch (kind) {
    case ETSIM_ATTR_INT32_LIST:
      return int32_wire(((const int32_t *)v)[i]);
    case ETSIM_ATTR_SINT32_LIST:
      return zigzag32(((const int32_t *)v)[i]);
    case ETSIM_ATTR_UINT32_LIST:
      return ((const uint32_t *)v)[i];
    case ETSIM_ATTR_SINT64_LIST:
      return zigzag64(((const int64_t *)v)[i]);
    case ETSIM_ATTR_BOOL_LIST:
      return ((const int *)v)[i] != 0;
    default:
      return ((const uint64_t *)v)[i]; /* INT64, UINT64 */
  }
}

static int list_is_fixed(int kind) {
  switch (kind) {
    case ETSIM_ATTR_DOUBLE_LIST:
    case ETSIM_ATTR_FLOAT_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
    case ETSIM_ATTR_FIXED64_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
    case ETSIM_ATTR_SFIXED64_LIST:
      return 1;
    default:
      return 0;
  }
}

/* Size of a list message's body. */
static size_t list_body_size(const etsim_attr_t *a) {
  size_t n = a->v.list.n, s = 0;
  if (a->kind == ETSIM_ATTR_STRING_LIST) {
    for (size_t i = 0; i < n; i++) {
      size_t l = str_len(((const char *const *)a->v.list.v)[i]);
      s += 1 + varint_size(l) + l;
    }
    return s;
  }
  if (a->kind == ETSIM_ATTR_BYTES_LIST) {
    for (size_t i = 0; i < n; i++) {
      size_t l = ((const etsim_bytes_t *)a->v.list.v)[i].len;
      s += 1 + varint_size(l) + l;
    }
    return s;
  }
  if (!n) return 0;
  size_t payload = 0;
  if (list_is_fixed(a->kind)) payload = n * etsim_et__list_elem_size(a->kind);
  else
    for (size_t i = 0; i < n; i++) payload += varint_size(list_varint(a->kind, a->v.list.v, i));
  return 1 + varint_size(payload) + payload;
}

static uint8_t *put_list_body(uint8_t *p, const etsim_attr_t *a) {
  size_t n = a->v.list.n;
  if (a->kind == ETSIM_ATTR_STRING_LIST) {
    for (size_t i = 0; i < n; i++) {
      const char *s = ((const char *const *)a->v.list.v)[i];
      size_t l = str_len(s);
      *p++ = 0x0a;
      p = put_varint(p, l);
      if (l) memcpy(p, s, l);
      p += l;
    }
    return p;
  }
  if (a->kind == ETSIM_ATTR_BYTES_LIST) {
    for (size_t i = 0; i < n; i++) {
      const etsim_bytes_t *b = &((const etsim_bytes_t *)a->v.list.v)[i];
      *p++ = 0x0a;
      p = put_varint(p, b->len);
      if (b->len) memcpy(p, b->data, b->len);
      p += b->len;
    }
    return p;
  }
  if (!n) return p;
  *p++ = 0x0a;
  if (list_is_fixed(a->kind)) {
    size_t bytes = n * etsim_et__list_elem_size(a->kind);
    p = put_varint(p, bytes);
    memcpy(p, a->v.list.v, bytes);
    return p + bytes;
  }
  size_t payload = 0;
  for (size_t i = 0; i < n; i++) payload += varint_size(list_varint(a->kind, a->v.list.v, i));
  p = put_varint(p, payload);
  for (size_t i = 0; i < n; i++) p = put_varint(p, list_varint(a->kind, a->v.list.v, i));
  return p;
}

/* Size of the oneof member, tag included; 0 for NONE. */
static size_t value_size(const etsim_attr_t *a) {
  size_t t = tag_size((uint32_t)a->kind);
  switch (a->kind) {
    case ETSIM_ATTR_NONE:
      return 0;
    case ETSIM_ATTR_DOUBLE:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED64:
      return t + 8;
    case ETSIM_ATTR_FLOAT:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_SFIXED32:
      return t + 4;
    case ETSIM_ATTR_INT32:
      return t + varint_size(int32_wire(a->v.i32));
    case ETSIM_ATTR_SINT32:
      return t + varint_size(zigzag32(a->v.i32));
    case ETSIM_ATTR_UINT32:
      return t + varint_size(a->v.u32);
    case ETSIM_ATTR_INT64:
      return t + varint_size((uint64_t)a->v.i64);
    case ETSIM_ATTR_UINT64:
      return t + varint_size(a->v.u64);
    case ETSIM_ATTR_SINT64:
      return t + varint_size(zigzag64(a->v.i64));
    case ETSIM_ATTR_BOOL:
      return t + 1;
    case ETSIM_ATTR_STRING: {
      size_t l = str_len(a->v.s);
      return t + varint_size(l) + l;
    }
    case ETSIM_ATTR_BYTES:
      return t + varint_size(a->v.bytes.len) + a->v.bytes.len;
    default: {
      size_t b = list_body_size(a);
      return t + varint_size(b) + b;
    }
  }
}

static size_t attr_body_size(const etsim_attr_t *a) {
  size_t nl = str_len(a->name), dl = str_len(a->doc);
  return (nl ? 1 + varint_size(nl) + nl : 0) + (dl ? 1 + varint_size(dl) + dl : 0) + value_size(a);
}

static uint8_t *put_str_field(uint8_t *p, uint32_t field, const char *s, size_t l) {
  p = put_tag(p, field, 2);
  p = put_varint(p, l);
  memcpy(p, s, l);
  return p + l;
}

static uint8_t *put_attr_body(uint8_t *p, const etsim_attr_t *a) {
  size_t nl = str_len(a->name), dl = str_len(a->doc);
  if (nl) p = put_str_field(p, 1, a->name, nl);
  if (dl) p = put_str_field(p, 2, a->doc, dl);
  uint32_t f = (uint32_t)a->kind;
  switch (a->kind) {
    case ETSIM_ATTR_NONE:
      break;
    case ETSIM_ATTR_DOUBLE:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED64:
      p = put_tag(p, f, 1);
      memcpy(p, &a->v, 8);
      p += 8;
      break;
    case ETSIM_ATTR_FLOAT:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_SFIXED32:
      p = put_tag(p, f, 5);
      memcpy(p, &a->v, 4);
      p += 4;
      break;
    case ETSIM_ATTR_INT32:
      p = put_varint(put_tag(p, f, 0), int32_wire(a->v.i32));
      break;
    case ETSIM_ATTR_SINT32:
      p = put_varint(put_tag(p, f, 0), zigzag32(a->v.i32));
      break;
    case ETSIM_ATTR_UINT32:
      p = put_varint(put_tag(p, f, 0), a->v.u32);
      break;
    case ETSIM_ATTR_INT64:
      p = put_varint(put_tag(p, f, 0), (uint64_t)a->v.i64);
      break;
    case ETSIM_ATTR_UINT64:
      p = put_varint(put_tag(p, f, 0), a->v.u64);
      break;
    case ETSIM_ATTR_SINT64:
      p = put_varint(put_tag(p, f, 0), zigzag64(a->v.i64));
      break;
    case ETSIM_ATTR_BOOL:
      p = put_tag(p, f, 0);
      *p++ = a->v.b != 0;
      break;
    case ETSIM_ATTR_STRING:
      p = put_str_field(p, f, a->v.s ? a->v.s : "", str_len(a->v.s));
      break;
    case ETSIM_ATTR_BYTES:
      p = put_tag(p, f, 2);
      p = put_varint(p, a->v.bytes.len);
      if (a->v.bytes.len) memcpy(p, a->v.bytes.data, a->v.bytes.len);
      p += a->v.bytes.len;
      break;
    default:
      p = put_tag(p, f, 2);
      p = put_varint(p, list_body_size(a));
      p = put_list_body(p, a);
      break;
  }
  return p;
}

static size_t io_body_size(const etsim_ioinfo_t *io) {
  size_t s = 0, l;
  if ((l = str_len(io->values))) s += 1 + varint_size(l) + l;
  if ((l = str_len(io->shapes))) s += 1 + varint_size(l) + l;
  if ((l = str_len(io->types))) s += 1 + varint_size(l) + l;
  return s;
}

static uint8_t *put_io(uint8_t *p, uint32_t field, const etsim_ioinfo_t *io) {
  size_t l;
  p = put_tag(p, field, 2);
  p = put_varint(p, io_body_size(io));
  if ((l = str_len(io->values))) p = put_str_field(p, 1, io->values, l);
  if ((l = str_len(io->shapes))) p = put_str_field(p, 2, io->shapes, l);
  if ((l = str_len(io->types))) p = put_str_field(p, 3, io->types, l);
  return p;
}

static size_t deps_payload(const uint64_t *d, size_t n) {
  size_t s = 0;
  for (size_t i = 0; i < n; i++) s += varint_size(d[i]);
  return s;
}

int etsim_et__wire_attr_ok(const etsim_attr_t *a) {
  return a->kind == ETSIM_ATTR_NONE ||
         (a->kind >= ETSIM_ATTR_DOUBLE && a->kind <= ETSIM_ATTR_KIND_MAX);
}

size_t etsim_et__wire_node_size(const etsim_et_node_t *n) {
  size_t s = 0, l;
  if (n->id) s += 1 + varint_size(n->id);
  if ((l = str_len(n->name))) s += 1 + varint_size(l) + l;
  if (n->type) s += 1 + varint_size(int32_wire(n->type));
  if (n->n_ctrl_deps) {
    l = deps_payload(n->ctrl_deps, n->n_ctrl_deps);
    s += 1 + varint_size(l) + l;
  }
  if (n->n_data_deps) {
    l = deps_payload(n->data_deps, n->n_data_deps);
    s += 1 + varint_size(l) + l;
  }
  if (n->start_time_micros) s += 1 + varint_size(n->start_time_micros);
  if (n->duration_micros) s += 1 + varint_size(n->duration_micros);
  if (n->inputs) {
    l = io_body_size(n->inputs);
    s += 1 + varint_size(l) + l;
  }
  if (n->outputs) {
    l = io_body_size(n->outputs);
    s += 1 + varint_size(l) + l;
  }
  for (size_t i = 0; i < n->n_attrs; i++) {
    l = attr_body_size(&n->attrs[i]);
    s += 1 + varint_size(l) + l;
  }
  return s;
}

size_t etsim_et__wire_encode_node(const etsim_et_node_t *n, uint8_t *out) {
  uint8_t *p = out;
  size_t l;
  if (n->id) {
    *p++ = 0x08;
    p = put_varint(p, n->id);
  }
  if ((l = str_len(n->name))) p = put_str_field(p, 2, n->name, l);
  if (n->type) {
    *p++ = 0x18;
    p = put_varint(p, int32_wire(n->type));
  }
  if (n->n_ctrl_deps) {
    *p++ = 0x22;
    p = put_varint(p, deps_payload(n->ctrl_deps, n->n_ctrl_deps));
    for (size_t i = 0; i < n->n_ctrl_deps; i++) p = put_varint(p, n->ctrl_deps[i]);
  }
  if (n->n_data_deps) {
    *p++ = 0x2a;
    p = put_varint(p, deps_payload(n->data_deps, n->n_data_deps));
    for (size_t i = 0; i < n->n_data_deps; i++) p = put_varint(p, n->data_deps[i]);
  }
  if (n->start_time_micros) {
    *p++ = 0x30;
    p = put_varint(p, n->start_time_micros);
  }
  if (n->duration_micros) {
    *p++ = 0x38;
    p = put_varint(p, n->duration_micros);
  }
  if (n->inputs) p = put_io(p, 8, n->inputs);
  if (n->outputs) p = put_io(p, 9, n->outputs);
  for (size_t i = 0; i < n->n_attrs; i++) {
    *p++ = 0x52;
    p = put_varint(p, attr_body_size(&n->attrs[i]));
    p = put_attr_body(p, &n->attrs[i]);
  }
  return (size_t)(p - out);
}

/* GlobalMetadata: version (1), then the attributes (2). */
size_t etsim_et__wire_meta_size(const etsim_et_meta_t *m) {
  size_t s = 0, l;
  if (!m) return 0;
  if ((l = str_len(m->version))) s += 1 + varint_size(l) + l;
  for (size_t i = 0; i < m->n_attrs; i++) {
    l = attr_body_size(&m->attrs[i]);
    s += 1 + varint_size(l) + l;
  }
  return s;
}

size_t etsim_et__wire_encode_meta(const etsim_et_meta_t *m, uint8_t *out) {
  uint8_t *p = out;
  size_t l;
  if (!m) return 0;
  if ((l = str_len(m->version))) p = put_str_field(p, 1, m->version, l);
  for (size_t i = 0; i < m->n_attrs; i++) {
    *p++ = 0x12;
    p = put_varint(p, attr_body_size(&m->attrs[i]));
    p = put_attr_body(p, &m->attrs[i]);
  }
  return (size_t)(p - out);
}

size_t etsim_et__wire_put_varint(uint8_t *out, uint64_t v) {
  return (size_t)(put_varint(out, v) - out);
}
