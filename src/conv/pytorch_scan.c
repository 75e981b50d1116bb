/*
 * pytorch_scan.c — pass 1's fast read of a host node (see pytorch_int.h).
 *
 * Why: pass 1 needs a dozen scalars of every node (id, name, caller,
 * rf_id, whether it has an op_schema, ...) but most of a node's bytes are
 * its attrs list and its inputs and outputs, which it only has to check.
 * Cutting the element out of the stream and then parsing it as a tree
 * walked every byte twice and built ~40 values per node; this scanner
 * walks the bytes once, validates them with the same grammar as etsim_conv__pt_value_parse
 * (pytorch_ptv.c) and keeps only the fields asked for.  Anything it does
 * not handle itself — escapes, deep nesting, malformed text, the end of
 * the buffer — makes it decline, and the tree parser takes the element,
 * so both paths accept the same files and give the same errors.
 */
#include "conv/pytorch_int.h"

#include <stdlib.h>
#include <string.h>

/* White space, and the bytes that end the fast loop through a string's
 * body: the quote, the backslash and every control byte (the NUL that
 * ends the buffer among them). */
static const unsigned char ws_tab[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};
#define C8(a) \
  [a] = 1, [a + 1] = 1, [a + 2] = 1, [a + 3] = 1, [a + 4] = 1, [a + 5] = 1, [a + 6] = 1, [a + 7] = 1
static const unsigned char str_stop[256] = {C8(0), C8(8), C8(16), C8(24), ['"'] = 1, ['\\'] = 1};
#undef C8

static const char *skip_ws(const char *p) {
  while (ws_tab[(unsigned char)*p]) p++;
  return p;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* p is just past the opening quote.  Past the closing quote, or NULL for a
 * backslash, a control byte or the end of the buffer. */
static const char *scan_str(const char *p, ptv_t *out) {
  const char *b = p;
  for (;;) {
    /* Four bytes per round: most strings are short names. */
    if (str_stop[(unsigned char)p[0]]) break;
    if (str_stop[(unsigned char)p[1]]) {
      p += 1;
      break;
    }
    if (str_stop[(unsigned char)p[2]]) {
      p += 2;
      break;
    }
    if (str_stop[(unsigned char)p[3]]) {
      p += 3;
      break;
    }
    p += 4;
  }
  if (*p != '"') return NULL;
  if (out) {
    out->t = PTV_STR;
    out->n = (uint32_t)(p - b);
    out->u.s = b;
  }
  return p + 1;
}

/* A number by RFC 8259's grammar, valued as etsim_conv__pt_value_parse values it: an
 * integer when it has no fraction or exponent and fits int64, else the
 * double strtod reads. */
static const char *scan_num(const char *p, ptv_t *out) {
  const char *b = p;
  int neg = 0, real = 0, overflow = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  if (!is_digit(*p)) return NULL;
  uint64_t v = 0;
  if (*p == '0') {
    p++;
  } else if (!out) {
    while (is_digit(*p)) /* only checked: no value wanted */
      p++;
  } else {
    /* Up to 19 digits cannot overflow 64 bits; past that, check. */
    const char *lim = p + 19;
    while (p < lim && is_digit(*p)) v = v * 10 + (unsigned)(*p++ - '0');
    while (is_digit(*p)) {
      unsigned d = (unsigned)(*p - '0');
      if (v > (UINT64_MAX - d) / 10) overflow = 1;
      else v = v * 10 + d;
      p++;
    }
  }
  if (*p == '.') {
    real = 1;
    p++;
    if (!is_digit(*p)) return NULL;
    while (is_digit(*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    real = 1;
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!is_digit(*p)) return NULL;
    while (is_digit(*p)) p++;
  }
  if (!out) return p;
  out->n = 0;
  ptv_set_number(out, b, neg, v, real, overflow);
  return p;
}

static const char *scan_lit(const char *p, const char *word) {
  for (; *word; word++, p++)
    if (*p != *word) return NULL;
  return p;
}

static const char *skip_value(const char *p, int depth);

/* p just past '{' or '['; past the closing bracket, or NULL. */
static const char *skip_composite(const char *p, int obj, int depth) {
  char close = obj ? '}' : ']';
  if (depth > PTS_MAX_DEPTH) return NULL;
  p = skip_ws(p);
  if (*p == close) return p + 1;
  for (;;) {
    if (obj) {
      if (*p != '"' || !(p = scan_str(p + 1, NULL))) return NULL;
      p = skip_ws(p);
      if (*p != ':') return NULL;
      p = skip_ws(p + 1);
    }
    /* Short non-negative integers (most of the numbers: tensor ids,
     * shapes) are checked here; the rest by skip_value. */
    if (*p >= '1' && *p <= '9') {
      const char *q = p + 1;
      while (is_digit(*q)) q++;
      if (*q == '.' || *q == 'e' || *q == 'E') {
        if (!(p = skip_value(p, depth + 1))) return NULL;
      } else {
        p = q;
      }
    } else if (!(p = skip_value(p, depth + 1))) {
      return NULL;
    }
    p = skip_ws(p);
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    return *p == close ? p + 1 : NULL;
  }
}

static const char *skip_value(const char *p, int depth) {
  switch (*p) {
    case '{':
      return skip_composite(p + 1, 1, depth);
    case '[':
      return skip_composite(p + 1, 0, depth);
    case '"':
      return scan_str(p + 1, NULL);
    case 't':
      return scan_lit(p, "true");
    case 'f':
      return scan_lit(p, "false");
    case 'n':
      return scan_lit(p, "null");
    default:
      return *p == '-' || is_digit(*p) ? scan_num(p, NULL) : NULL;
  }
}

/* Any value: a scalar in full into *out, a composite checked and typed. */
static const char *scan_field(const char *p, ptv_t *out, int depth) {
  memset(out, 0, sizeof *out);
  switch (*p) {
    case '{':
      out->t = PTV_OBJ;
      return skip_composite(p + 1, 1, depth);
    case '[':
      out->t = PTV_ARR;
      return skip_composite(p + 1, 0, depth);
    case '"':
      return scan_str(p + 1, out);
    case 't':
      out->t = PTV_TRUE;
      return scan_lit(p, "true");
    case 'f':
      out->t = PTV_FALSE;
      return scan_lit(p, "false");
    case 'n':
      out->t = PTV_NULL;
      return scan_lit(p, "null");
    default:
      return *p == '-' || is_digit(*p) ? scan_num(p, out) : NULL;
  }
}

/* n bytes equal, by words (n is a constant at every use, so this folds to
 * a few loads; glibc's memcmp call was 2.5% of the time). */
static inline int eq_n(const char *a, const char *b, size_t n) {
  if (n >= 8) {
    uint64_t x, y;
    for (size_t i = 0; i + 8 <= n; i += 8) {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
      if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  if (n >= 4) {
    uint32_t x, y, z, w;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    memcpy(&z, a + n - 4, 4);
    memcpy(&w, b + n - 4, 4);
    return x == y && z == w;
  }
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}
#define KEY_IS(k, lit) ((k)->n == sizeof lit - 1 && eq_n((k)->u.s, lit, sizeof lit - 1))

/*
 * The members of an object, p just past '{'.  For each member, `member`
 * is called with the key and p at the value; it returns past the value or
 * NULL.  Past the closing brace, or NULL.
 */
typedef const char *(*member_fn)(void *ctx, const ptv_t *key, const char *p, int depth);

static const char *scan_members(const char *p, member_fn member, void *ctx, int depth) {
  if (depth > PTS_MAX_DEPTH) return NULL;
  p = skip_ws(p);
  if (*p == '}') return p + 1;
  for (;;) {
    ptv_t key;
    if (*p != '"' || !(p = scan_str(p + 1, &key))) return NULL;
    p = skip_ws(p);
    if (*p != ':') return NULL;
    p = skip_ws(p + 1);
    if (!(p = member(ctx, &key, p, depth + 1))) return NULL;
    p = skip_ws(p);
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    return *p == '}' ? p + 1 : NULL;
  }
}

/* Keep the first occurrence of a field. */
static const char *take(pts_node_t *n, uint32_t bit, ptv_t *field, const char *p, int depth) {
  if (n->have & bit) return skip_value(p, depth);
  n->have |= bit;
  return scan_field(p, field, depth);
}

typedef struct io_ctx {
  pts_node_t *n;
  uint32_t values_bit, types_bit;
  ptv_t *values, *types;
  const char **at; /* io_at[k] */
  size_t *len;
} io_ctx_t;

/* Note where the first value of a key starts and ends. */
static const char *span(const char *p, const char *e, const char **at, size_t *len) {
  if (e && !*at) {
    *at = p;
    *len = (size_t)(e - p);
  }
  return e;
}

static const char *io_member(void *ctx, const ptv_t *key, const char *p, int depth) {
  io_ctx_t *io = ctx;
  if (KEY_IS(key, "values"))
    return span(p, take(io->n, io->values_bit, io->values, p, depth), &io->at[0], &io->len[0]);
  if (KEY_IS(key, "shapes")) return span(p, skip_value(p, depth), &io->at[1], &io->len[1]);
  if (KEY_IS(key, "types"))
    return span(p, take(io->n, io->types_bit, io->types, p, depth), &io->at[2], &io->len[2]);
  return skip_value(p, depth);
}

/* "inputs" / "outputs": typed, and inside an object its values / types. */
static const char *scan_io(pts_node_t *n, uint32_t bit, ptv_t *field, io_ctx_t *io, const char *p,
                           int depth, const char **at, size_t *len) {
  if (n->have & bit) return skip_value(p, depth);
  n->have |= bit;
  const char *e;
  if (*p != '{') {
    e = scan_field(p, field, depth);
  } else {
    memset(field, 0, sizeof *field);
    field->t = PTV_OBJ;
    e = scan_members(p + 1, io_member, io, depth);
  }
  if (e) {
    *at = p;
    *len = (size_t)(e - p);
  }
  return e;
}

typedef struct attr_ctx {
  int have_name, have_value;
  ptv_t name, value;
} attr_ctx_t;

static const char *attr_member(void *ctx, const ptv_t *key, const char *p, int depth) {
  attr_ctx_t *a = ctx;
  if (KEY_IS(key, "name")) {
    if (a->have_name) return skip_value(p, depth);
    a->have_name = 1;
    return scan_field(p, &a->name, depth);
  }
  if (KEY_IS(key, "value")) {
    if (a->have_value) return skip_value(p, depth);
    a->have_value = 1;
    return scan_field(p, &a->value, depth);
  }
  return skip_value(p, depth);
}

/* "attrs": a list of {"name", "type", "value"} objects. */
static const char *scan_attrs(pts_node_t *n, const char *p, int depth) {
  if (n->have & PTS_ATTRS) return skip_value(p, depth);
  n->have |= PTS_ATTRS;
  if (*p != '[') return scan_field(p, &n->attrs, depth);
  memset(&n->attrs, 0, sizeof n->attrs);
  n->attrs.t = PTV_ARR;
  p = skip_ws(p + 1);
  if (*p == ']') return p + 1;
  depth++;
  for (;;) {
    if (*p == '{') {
      attr_ctx_t a;
      a.have_name = a.have_value = 0;
      if (!(p = scan_members(p + 1, attr_member, &a, depth))) return NULL;
      /* As attr_note: the first attribute of a name that has a value. */
      if (a.have_name && a.have_value && a.name.t == PTV_STR) {
        const ptv_t *k = &a.name;
        uint32_t bit = 0;
        ptv_t *field = NULL;
        switch (k->n) {
          case 3:
            if (KEY_IS(k, "tid")) bit = PTS_TID, field = &n->tid;
            break;
          case 5:
            if (KEY_IS(k, "rf_id")) bit = PTS_RF_ID, field = &n->rf_id;
            else if (KEY_IS(k, "scope")) bit = PTS_SCOPE, field = &n->scope;
            break;
          case 6:
            if (KEY_IS(k, "seq_id")) bit = PTS_SEQ_ID, field = &n->seq_id;
            else if (KEY_IS(k, "fw_tid")) bit = PTS_FW_TID, field = &n->fw_tid;
            break;
          case 9:
            if (KEY_IS(k, "op_schema")) bit = PTS_OP_SCHEMA, field = &n->op_schema;
            else if (KEY_IS(k, "fw_parent")) bit = PTS_FW_PARENT, field = &n->fw_parent;
            break;
          case 14:
            if (KEY_IS(k, "kernel_backend")) bit = PTS_KERNEL_BACKEND, field = &n->kernel_backend;
            break;
          default:
            break;
        }
        if (field && !(n->have & bit)) {
          n->have |= bit;
          *field = a.value;
        }
      }
    } else if (!(p = skip_value(p, depth))) {
      return NULL;
    }
    p = skip_ws(p);
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    return *p == ']' ? p + 1 : NULL;
  }
}

typedef struct node_ctx {
  pts_node_t *n;
  io_ctx_t in, out;
} node_ctx_t;

static const char *node_member(void *ctx, const ptv_t *key, const char *p, int depth) {
  node_ctx_t *x = ctx;
  pts_node_t *n = x->n;
  switch (key->n) {
    case 2:
      if (KEY_IS(key, "id")) return take(n, PTS_ID, &n->id, p, depth);
      if (KEY_IS(key, "ts")) return take(n, PTS_TS, &n->ts, p, depth);
      break;
    case 3:
      if (KEY_IS(key, "cat")) return take(n, PTS_CAT, &n->cat, p, depth);
      break;
    case 4:
      if (KEY_IS(key, "name")) return take(n, PTS_NAME, &n->name, p, depth);
      break;
    case 5:
      if (KEY_IS(key, "attrs")) return scan_attrs(n, p, depth);
      break;
    case 6:
      if (KEY_IS(key, "inputs"))
        return scan_io(n, PTS_INPUTS, &n->inputs, &x->in, p, depth, &n->inputs_at, &n->inputs_len);
      if (KEY_IS(key, "parent")) return take(n, PTS_PARENT, &n->parent, p, depth);
      break;
    case 7:
      if (KEY_IS(key, "outputs"))
        return scan_io(n, PTS_OUTPUTS, &n->outputs, &x->out, p, depth, &n->outputs_at,
                       &n->outputs_len);
      break;
    case 9:
      if (KEY_IS(key, "ctrl_deps")) return take(n, PTS_CTRL_DEPS, &n->ctrl_deps, p, depth);
      break;
    case 13:
      if (KEY_IS(key, "inclusive_dur")) return take(n, PTS_DUR, &n->dur, p, depth);
      break;
    case 16:
      if (KEY_IS(key, "inter_thread_dep")) return take(n, PTS_ITD, &n->itd, p, depth);
      break;
    default:
      break;
  }
  return skip_value(p, depth);
}

int etsim_conv__pt_scan_host_node(const char *s, pts_node_t *out, size_t *used) {
  if (*s != '{') return PTJ_SLOW;
  out->have = 0;
  memset(out->io_at, 0, sizeof out->io_at);
  node_ctx_t x;
  x.n = out;
  x.in = (io_ctx_t){out,           PTS_IN_VALUES, PTS_IN_TYPES, &out->in_values, &out->in_types,
                    out->io_at[0], out->io_len[0]};
  x.out =
      (io_ctx_t){out,           PTS_OUT_VALUES, PTS_OUT_TYPES, &out->out_values, &out->out_types,
                 out->io_at[1], out->io_len[1]};
  const char *e = scan_members(s + 1, node_member, &x, 0);
  if (!e) return PTJ_SLOW;
  *used = (size_t)(e - s);
  return 0;
}

/* --------------------------------------------------- repr from text */

/* Append n bytes; the common case without growing is inline. */
static inline int put(ptr_buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) return etsim_conv__pt_repr_putn(b, s, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  return 0;
}

static int repr_at(ptr_buf_t *b, const char **pp, int depth) {
  const char *p = *pp;
  ptv_t v;
  int rc;
  /* An integer of up to 18 digits prints as its text (no leading zeros in
   * JSON), except -0, which is 0. */
  if (is_digit(*p) || (*p == '-' && is_digit(p[1]))) {
    const char *q = p + (*p == '-');
    const char *d = q;
    while (is_digit(*q)) q++;
    if (*q != '.' && *q != 'e' && *q != 'E' && q - d <= 18 && (*d != '0' || q - d == 1) &&
        !(*p == '-' && *d == '0')) {
      if (put(b, p, (size_t)(q - p))) return ETSIM_ENOMEM;
      *pp = q;
      return 0;
    }
  }
  switch (*p) {
    case '[':
    case '{': {
      int obj = *p == '{';
      char close = obj ? '}' : ']';
      if (depth > PTS_MAX_DEPTH) return PTJ_SLOW;
      if (put(b, p, 1)) return ETSIM_ENOMEM;
      p = skip_ws(p + 1);
      if (*p == close) {
        p++;
      } else {
        for (int first = 1;; first = 0) {
          if (!first && put(b, ", ", 2)) return ETSIM_ENOMEM;
          if (obj) {
            if (*p != '"' || !(p = scan_str(p + 1, &v))) return PTJ_SLOW;
            if (etsim_conv__pt_repr(b, &v) || etsim_conv__pt_repr_putn(b, ": ", 2))
              return ETSIM_ENOMEM;
            p = skip_ws(p);
            if (*p != ':') return PTJ_SLOW;
            p = skip_ws(p + 1);
          }
          if ((rc = repr_at(b, &p, depth + 1))) return rc;
          p = skip_ws(p);
          if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
          }
          if (*p != close) return PTJ_SLOW;
          p++;
          break;
        }
      }
      if (put(b, &close, 1)) return ETSIM_ENOMEM;
      *pp = p;
      return 0;
    }
    case '"':
      if (!(p = scan_str(p + 1, &v))) return PTJ_SLOW;
      /* No quote and no DEL (the scanner let no escape or control byte
       * through): Python prints it between single quotes as it is. */
      if (!memchr(v.u.s, '\'', v.n) && !memchr(v.u.s, 0x7f, v.n)) {
        if (put(b, "'", 1) || put(b, v.u.s, v.n) || put(b, "'", 1)) return ETSIM_ENOMEM;
        *pp = p;
        return 0;
      }
      break;
    default:
      memset(&v, 0, sizeof v);
      if (*p == 't' || *p == 'f' || *p == 'n') {
        const char *e = scan_field(p, &v, depth);
        if (!e) return PTJ_SLOW;
        p = e;
      } else if (!(p = scan_num(p, &v))) {
        return PTJ_SLOW;
      }
      break;
  }
  /* A scalar: printed exactly as the tree path prints its value. */
  if (etsim_conv__pt_repr(b, &v)) return ETSIM_ENOMEM;
  *pp = p;
  return 0;
}

int etsim_conv__pt_scan_repr(ptr_buf_t *b, const char *text, size_t len) {
  const char *p = text;
  int rc = repr_at(b, &p, 0);
  if (b->data) b->data[b->len] = '\0'; /* put() leaves the terminator to here */
  if (rc) return rc;
  /* The value must fill the span: the caller got it from etsim_conv__pt_scan_host_node,
   * so this only fails if the text was not what the scanner saw. */
  return p == text + len ? 0 : PTJ_SLOW;
}

/* ------------------------------------------------ tensors from text */

/* Whether the n bytes at s contain "Tensor". */
static int has_tensor(const char *s, size_t n) {
  for (size_t i = 0; i + 6 <= n; i++)
    if (s[i] == 'T' && memcmp(s + i, "Tensor", 6) == 0) return 1;
  return 0;
}

/* walk_tensors on text: p at a value; past it, or NULL (declined), with
 * *rc set when fn stopped the walk. */
static const char *walk(const char *p, int depth, pts_tensor_fn fn, void *ctx, int *rc) {
  if (depth > 8 || *p != '[') return skip_value(p, depth + 1);
  if (depth + 1 > PTS_MAX_DEPTH) return NULL;
  /* First look: a tensor tuple (5 or 6 items, the first 5 integers)? */
  const char *q = skip_ws(p + 1);
  int64_t t[5];
  int n = 0, ints = 1;
  if (*q == ']') return q + 1;
  const char *end;
  for (;;) {
    if (n < 5 && (*q == '-' || is_digit(*q))) {
      ptv_t v;
      if (!(q = scan_num(q, &v))) return NULL;
      if (v.t == PTV_INT) t[n] = v.u.i;
      else ints = 0;
    } else {
      if (n < 5) ints = 0;
      if (!(q = skip_value(q, depth + 1))) return NULL;
    }
    n++;
    q = skip_ws(q);
    if (*q == ',') {
      q = skip_ws(q + 1);
      continue;
    }
    if (*q != ']') return NULL;
    end = q + 1;
    break;
  }
  if ((n == 5 || n == 6) && ints) {
    *rc = fn(ctx, t);
    return *rc ? NULL : end;
  }
  /* A list of something else: its items, one level down. */
  q = skip_ws(p + 1);
  for (;;) {
    if (!(q = walk(q, depth + 1, fn, ctx, rc))) return NULL;
    q = skip_ws(q);
    if (*q != ',') break;
    q = skip_ws(q + 1);
  }
  return end;
}

enum { MAX_TYPES = 512 };

int etsim_conv__pt_scan_tensors(const char *values, size_t values_len, const char *types,
                                size_t types_len, pts_tensor_fn fn, void *ctx) {
  (void)values_len;
  if (!values || !types || *types != '[' || *values != '[')
    return 0; /* no list of types: no item is a Tensor */
  /* Which items are typed Tensor. */
  unsigned char is_t[MAX_TYPES];
  size_t nt = 0;
  const char *p = skip_ws(types + 1);
  if (*p != ']') {
    for (;;) {
      if (nt == MAX_TYPES) return PTJ_SLOW;
      ptv_t v;
      const char *e = scan_field(p, &v, 1);
      if (!e) return PTJ_SLOW;
      is_t[nt++] = v.t == PTV_STR && has_tensor(v.u.s, v.n);
      p = skip_ws(e);
      if (*p != ',') break;
      p = skip_ws(p + 1);
    }
  }
  if (p != types + types_len - 1 || *p != ']') return PTJ_SLOW;
  /* The values, item by item. */
  p = skip_ws(values + 1);
  if (*p == ']') return 0;
  for (size_t i = 0;; i++) {
    int rc = 0;
    const char *e = i < nt && is_t[i] ? walk(p, 0, fn, ctx, &rc) : skip_value(p, 1);
    if (rc) return rc;
    if (!e) return PTJ_SLOW;
    p = skip_ws(e);
    if (*p != ',') break;
    p = skip_ws(p + 1);
  }
  return *p == ']' ? 0 : PTJ_SLOW;
}
