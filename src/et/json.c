/*
 * json.c — the JSON form of a Chakra trace (see etsim/etjson.h).
 *
 * Writing is done by hand into a growable buffer: the output must be exact
 * (shortest round-tripping numbers, -0.0 kept, 64-bit integers as strings)
 * and fast, and a general JSON library would build a tree per node only to
 * print it.  Reading uses jansson one object at a time: json_loadb with
 * JSON_DISABLE_EOF_CHECK reports how many bytes the object used, so a file
 * of concatenated objects is walked without ever holding more than one
 * object (plus a read-ahead chunk) in memory.
 */
#include "etsim/etjson.h"

#include "et_int.h"

#include <jansson.h>
#include <zlib.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ kind tables */

/* JSON (lowerCamelCase) names of each oneof member, index = kind. */
static const char *const kind_json[ETSIM_ATTR_KIND_MAX + 1] = {
#define KIND_JSON(K, name) [ETSIM_ATTR_##K] = #name "Val", [ETSIM_ATTR_##K##_LIST] = #name "List",
    ETSIM_ET_KINDS(KIND_JSON)
#undef KIND_JSON
};

/* What one element of a kind is, in views. */
typedef enum { EL_D, EL_F, EL_I32, EL_I64, EL_U32, EL_U64, EL_B, EL_S, EL_Y } elem_t;

static elem_t kind_elem(int kind) {
  switch ((kind - 1) & ~1) { /* a list kind is its scalar kind + 1 */
    case 2:
      return EL_D;
    case 4:
      return EL_F;
    case 6:
    case 14:
    case 22:
      return EL_I32; /* int32, sint32, sfixed32 */
    case 8:
    case 16:
    case 24:
      return EL_I64; /* int64, sint64, sfixed64 */
    case 10:
    case 18:
      return EL_U32; /* uint32, fixed32 */
    case 12:
    case 20:
      return EL_U64; /* uint64, fixed64 */
    case 26:
      return EL_B;
    case 28:
      return EL_S;
    default:
      return EL_Y;
  }
}

static size_t elem_size(elem_t e) {
  switch (e) {
    case EL_D:
      return sizeof(double);
    case EL_F:
      return sizeof(float);
    case EL_I32:
      return sizeof(int32_t);
    case EL_I64:
      return sizeof(int64_t);
    case EL_U32:
      return sizeof(uint32_t);
    case EL_U64:
      return sizeof(uint64_t);
    case EL_B:
      return sizeof(int);
    case EL_S:
      return sizeof(const char *);
    default:
      return sizeof(etsim_bytes_t);
  }
}

/* Kind named by a JSON key (camelCase or proto spelling), or 0. */
static int kind_from_key(const char *key) {
  for (int k = ETSIM_ATTR_DOUBLE; k <= ETSIM_ATTR_KIND_MAX; k++)
    if (strcmp(key, kind_json[k]) == 0) return k;
  int k = etsim_attr_kind_parse(key);
  return k > 0 ? k : 0;
}

/* ------------------------------------------------------------------ buffer */

void etsim_etjson_buf_free(etsim_etjson_buf_t *b) {
  etsim_free(b->data);
  memset(b, 0, sizeof *b);
}

static int buf_reserve(etsim_etjson_buf_t *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return 0;
  return etsim_grow((void **)&b->data, &b->cap, b->len + extra + 1, 1);
}

static int buf_put(etsim_etjson_buf_t *b, const char *s, size_t n) {
  if (buf_reserve(b, n)) return ETSIM_ENOMEM;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

static int buf_puts(etsim_etjson_buf_t *b, const char *s) { return buf_put(b, s, strlen(s)); }

static int buf_u64(etsim_etjson_buf_t *b, uint64_t v, int quoted) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, quoted ? "\"%" PRIu64 "\"" : "%" PRIu64, v);
  return buf_put(b, tmp, (size_t)n);
}

static int buf_i64(etsim_etjson_buf_t *b, int64_t v, int quoted) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, quoted ? "\"%" PRId64 "\"" : "%" PRId64, v);
  return buf_put(b, tmp, (size_t)n);
}

/* A number that jansson reads back as a real: ensure '.' or an exponent, so
 * that "-0" and "5" do not come back as integers (losing -0.0's sign). */
static int buf_real_text(etsim_etjson_buf_t *b, char *tmp, int n) {
  if (!strpbrk(tmp, ".eE")) {
    memcpy(tmp + n, ".0", 3);
    n += 2;
  }
  return buf_put(b, tmp, (size_t)n);
}

static int buf_double(etsim_etjson_buf_t *b, double d) {
  if (isnan(d)) return buf_puts(b, "\"NaN\"");
  if (isinf(d)) return buf_puts(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  char tmp[40];
  int n = 0;
  for (int p = 1; p <= 17; p++) {
    n = snprintf(tmp, sizeof tmp - 3, "%.*g", p, d);
    double back = strtod(tmp, NULL);
    if (memcmp(&back, &d, sizeof d) == 0) break;
  }
  return buf_real_text(b, tmp, n);
}

static int buf_float(etsim_etjson_buf_t *b, float f) {
  if (isnan(f)) return buf_puts(b, "\"NaN\"");
  if (isinf(f)) return buf_puts(b, f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  char tmp[40];
  int n = 0;
  /* Read back the way the reader does (strtod, then to float). */
  for (int p = 1; p <= 17; p++) {
    n = snprintf(tmp, sizeof tmp - 3, "%.*g", p, (double)f);
    float back = (float)strtod(tmp, NULL);
    if (memcmp(&back, &f, sizeof f) == 0) break;
  }
  return buf_real_text(b, tmp, n);
}

/* Length of the valid UTF-8 sequence at s (max n bytes), or 0 if invalid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF, as
 * jansson does on input. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) ||
      cp > 0x10FFFF)
    return 0;
  return len;
}

/* JSON string literal; ETSIM_EFORMAT when s is not valid UTF-8. */
static int buf_str(etsim_etjson_buf_t *b, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  size_t n = strlen((const char *)s);
  if (buf_reserve(b, n + 2)) return ETSIM_ENOMEM;
  b->data[b->len++] = '"';
  size_t run = 0; /* start of the pending unescaped run */
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    const char *esc = NULL;
    char u[8];
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c < 0x20) {
      switch (c) {
        case '\n':
          esc = "\\n";
          break;
        case '\t':
          esc = "\\t";
          break;
        case '\r':
          esc = "\\r";
          break;
        case '\b':
          esc = "\\b";
          break;
        case '\f':
          esc = "\\f";
          break;
        default:
          snprintf(u, sizeof u, "\\u%04x", c);
          esc = u;
      }
    } else if (c >= 0x80) {
      size_t l = utf8_seq(s + i, n - i);
      if (l) {
        i += l;
        continue;
      }
      if (!b->lossy) return ETSIM_EFORMAT;
      b->replaced++;
      esc = "\\ufffd";
    } else {
      i++;
      continue;
    }
    if (buf_put(b, (const char *)s + run, i - run) || buf_puts(b, esc)) return ETSIM_ENOMEM;
    run = ++i;
  }
  if (buf_put(b, (const char *)s + run, n - run) || buf_put(b, "\"", 1)) return ETSIM_ENOMEM;
  return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int buf_bytes(etsim_etjson_buf_t *b, const etsim_bytes_t *y) {
  size_t n = y->len;
  if (buf_reserve(b, (n + 2) / 3 * 4 + 2)) return ETSIM_ENOMEM;
  char *o = b->data + b->len;
  *o++ = '"';
  const uint8_t *p = y->data;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    *o++ = b64[v >> 18];
    *o++ = b64[(v >> 12) & 63];
    *o++ = b64[(v >> 6) & 63];
    *o++ = b64[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    *o++ = b64[v >> 18];
    *o++ = b64[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    *o++ = b64[v >> 18];
    *o++ = b64[(v >> 12) & 63];
    *o++ = b64[(v >> 6) & 63];
    *o++ = '=';
  }
  *o++ = '"';
  b->len = (size_t)(o - b->data);
  b->data[b->len] = 0;
  return 0;
}

/* One element of kind-class e at p. */
static int buf_elem(etsim_etjson_buf_t *b, elem_t e, const void *p) {
  switch (e) {
    case EL_D:
      return buf_double(b, *(const double *)p);
    case EL_F:
      return buf_float(b, *(const float *)p);
    case EL_I32:
      return buf_i64(b, *(const int32_t *)p, 0);
    case EL_I64:
      return buf_i64(b, *(const int64_t *)p, 1);
    case EL_U32:
      return buf_u64(b, *(const uint32_t *)p, 0);
    case EL_U64:
      return buf_u64(b, *(const uint64_t *)p, 1);
    case EL_B:
      return buf_puts(b, *(const int *)p ? "true" : "false");
    case EL_S:
      return buf_str(b, *(const char *const *)p);
    default:
      return buf_bytes(b, (const etsim_bytes_t *)p);
  }
}

/* Describe a format failure: rc is ENOMEM or EFORMAT (a string). */
static int fmt_fail(etsim_error_t *err, int rc, const char *where, const char *what,
                    const char *key) {
  if (rc == ETSIM_ENOMEM)
    return etsim_error_set(err, rc, "%s%sout of memory", where ? where : "", where ? ": " : "");
  return etsim_error_set(err, rc, "%s%s%s: key '%s': string is not valid UTF-8", where ? where : "",
                         where ? ": " : "", what, key);
}

static int format_attrs(etsim_etjson_buf_t *b, size_t n, const etsim_attr_t *a, const char *where,
                        const char *what, etsim_error_t *err) {
  int rc;
  char key[96];
  if ((rc = buf_puts(b, "\"attr\":["))) return fmt_fail(err, rc, where, what, "attr");
  for (size_t i = 0; i < n; i++) {
    const etsim_attr_t *x = &a[i];
    int first = 1;
    if (x->kind < 0 || x->kind > ETSIM_ATTR_KIND_MAX ||
        (x->kind > 0 && x->kind < ETSIM_ATTR_DOUBLE))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s%s%s: attr[%zu] '%s': bad kind %d",
                             where ? where : "", where ? ": " : "", what, i, x->name ? x->name : "",
                             x->kind);
    if ((rc = buf_puts(b, i ? ",{" : "{"))) return fmt_fail(err, rc, where, what, "attr");
    if (x->name && x->name[0]) {
      snprintf(key, sizeof key, "attr[%zu].name", i);
      if ((rc = buf_puts(b, "\"name\":")) || (rc = buf_str(b, x->name)))
        return fmt_fail(err, rc, where, what, key);
      first = 0;
    }
    if (x->doc && x->doc[0]) {
      snprintf(key, sizeof key, "attr[%zu].docString", i);
      if ((rc = buf_puts(b, first ? "\"docString\":" : ",\"docString\":")) ||
          (rc = buf_str(b, x->doc)))
        return fmt_fail(err, rc, where, what, key);
      first = 0;
    }
    if (x->kind != ETSIM_ATTR_NONE) {
      snprintf(key, sizeof key, "attr[%zu].%s", i, kind_json[x->kind]);
      elem_t e = kind_elem(x->kind);
      if ((rc = buf_puts(b, first ? "\"" : ",\"")) || (rc = buf_puts(b, kind_json[x->kind])) ||
          (rc = buf_puts(b, "\":")))
        return fmt_fail(err, rc, where, what, key);
      if (!etsim_attr_kind_is_list(x->kind)) {
        const void *p = &x->v;
        if (e == EL_D) p = &x->v.d;
        else if (e == EL_F) p = &x->v.f;
        else if (e == EL_I32) p = &x->v.i32;
        else if (e == EL_I64) p = &x->v.i64;
        else if (e == EL_U32) p = &x->v.u32;
        else if (e == EL_U64) p = &x->v.u64;
        else if (e == EL_B) p = &x->v.b;
        else if (e == EL_S) p = &x->v.s;
        else p = &x->v.bytes;
        if ((rc = buf_elem(b, e, p))) return fmt_fail(err, rc, where, what, key);
      } else if (x->v.list.n == 0) {
        /* MessageToJson leaves the empty repeated field out. */
        if ((rc = buf_puts(b, "{}"))) return fmt_fail(err, rc, where, what, key);
      } else {
        size_t es = elem_size(e);
        const char *p = x->v.list.v;
        if ((rc = buf_puts(b, "{\"values\":["))) return fmt_fail(err, rc, where, what, key);
        for (size_t j = 0; j < x->v.list.n; j++)
          if ((j && (rc = buf_put(b, ",", 1))) || (rc = buf_elem(b, e, p + j * es)))
            return fmt_fail(err, rc, where, what, key);
        if ((rc = buf_puts(b, "]}"))) return fmt_fail(err, rc, where, what, key);
      }
    }
    if ((rc = buf_put(b, "}", 1))) return fmt_fail(err, rc, where, what, "attr");
  }
  if ((rc = buf_put(b, "]", 1))) return fmt_fail(err, rc, where, what, "attr");
  return 0;
}

int etsim_etjson_format_meta(etsim_etjson_buf_t *b, const etsim_et_meta_t *m, const char *where,
                             etsim_error_t *err) {
  int rc;
  const char *what = "metadata";
  if ((rc = buf_put(b, "{", 1))) return fmt_fail(err, rc, where, what, "");
  int first = 1;
  if (m && m->version && m->version[0]) {
    if ((rc = buf_puts(b, "\"version\":")) || (rc = buf_str(b, m->version)))
      return fmt_fail(err, rc, where, what, "version");
    first = 0;
  }
  if (m && m->n_attrs) {
    if (!first && (rc = buf_put(b, ",", 1))) return fmt_fail(err, rc, where, what, "attr");
    if ((rc = format_attrs(b, m->n_attrs, m->attrs, where, what, err))) return rc;
  }
  if ((rc = buf_puts(b, "}\n"))) return fmt_fail(err, rc, where, what, "");
  return 0;
}

static int format_io(etsim_etjson_buf_t *b, const char *name, const etsim_ioinfo_t *io) {
  int rc, first = 1;
  if ((rc = buf_puts(b, name)) || (rc = buf_put(b, "{", 1))) return rc;
  static const char *const keys[3] = {"values", "shapes", "types"};
  const char *vals[3] = {io->values, io->shapes, io->types};
  for (int k = 0; k < 3; k++) {
    if (!vals[k] || !vals[k][0]) continue;
    if ((rc = buf_puts(b, first ? "\"" : ",\"")) || (rc = buf_puts(b, keys[k])) ||
        (rc = buf_puts(b, "\":")) || (rc = buf_str(b, vals[k])))
      return rc;
    first = 0;
  }
  return buf_put(b, "}", 1);
}

static int format_deps(etsim_etjson_buf_t *b, const char *name, size_t n, const uint64_t *d) {
  int rc;
  if ((rc = buf_puts(b, name))) return rc;
  for (size_t i = 0; i < n; i++)
    if ((rc = buf_put(b, i ? "," : "[", 1)) || (rc = buf_u64(b, d[i], 1))) return rc;
  return buf_put(b, "]", 1);
}

int etsim_etjson_format_node(etsim_etjson_buf_t *b, const etsim_et_node_t *n, const char *where,
                             etsim_error_t *err) {
  char what[64];
  snprintf(what, sizeof what, "node id %" PRIu64, n->id);
  if (n->type < 0 || n->type >= ETSIM_ET_NODE_TYPE_COUNT)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s%s%s: key 'type': bad node type %d",
                           where ? where : "", where ? ": " : "", what, n->type);
  int rc;
  /* Each optional member is written with a leading comma; the first one's
   * comma is dropped by writing into the buffer after "{" and patching. */
  size_t start = b->len;
  if ((rc = buf_put(b, "{", 1))) return fmt_fail(err, rc, where, what, "");
  const char *key = "";
  if (n->id) {
    key = "id";
    if ((rc = buf_puts(b, ",\"id\":")) || (rc = buf_u64(b, n->id, 1))) goto fail;
  }
  if (n->name && n->name[0]) {
    key = "name";
    if ((rc = buf_puts(b, ",\"name\":")) || (rc = buf_str(b, n->name))) goto fail;
  }
  if (n->type) {
    key = "type";
    if ((rc = buf_puts(b, ",\"type\":\"")) ||
        (rc = buf_puts(b, etsim_et_node_type_name(n->type))) || (rc = buf_put(b, "\"", 1)))
      goto fail;
  }
  key = "ctrlDeps";
  if (n->n_ctrl_deps && (rc = format_deps(b, ",\"ctrlDeps\":", n->n_ctrl_deps, n->ctrl_deps)))
    goto fail;
  key = "dataDeps";
  if (n->n_data_deps && (rc = format_deps(b, ",\"dataDeps\":", n->n_data_deps, n->data_deps)))
    goto fail;
  if (n->start_time_micros) {
    key = "startTimeMicros";
    if ((rc = buf_puts(b, ",\"startTimeMicros\":")) || (rc = buf_u64(b, n->start_time_micros, 1)))
      goto fail;
  }
  if (n->duration_micros) {
    key = "durationMicros";
    if ((rc = buf_puts(b, ",\"durationMicros\":")) || (rc = buf_u64(b, n->duration_micros, 1)))
      goto fail;
  }
  key = "inputs";
  if (n->inputs && (rc = format_io(b, ",\"inputs\":", n->inputs))) goto fail;
  key = "outputs";
  if (n->outputs && (rc = format_io(b, ",\"outputs\":", n->outputs))) goto fail;
  if (n->n_attrs) {
    if ((rc = buf_put(b, ",", 1))) return fmt_fail(err, rc, where, what, "attr");
    if ((rc = format_attrs(b, n->n_attrs, n->attrs, where, what, err))) return rc;
  }
  if ((rc = buf_puts(b, "}\n"))) goto fail;
  if (b->data[start + 1] == ',') { /* drop the first member's comma */
    memmove(b->data + start + 1, b->data + start + 2, b->len - start - 2);
    b->len--;
    b->data[b->len] = 0;
  }
  return 0;
fail:
  return fmt_fail(err, rc, where, what, key);
}

/* ----------------------------------------------------------------- jsonize */

int etsim_etjson_jsonize(const char *in_path, const char *out_path, unsigned read_flags,
                         uint64_t *out_nodes, etsim_error_t *err) {
  etsim_et_reader_t *r = NULL;
  etsim_outfile_t of = {0};
  etsim_etjson_buf_t b = {0};
  b.lossy = 1; /* a name that is not UTF-8 must not make a trace unreadable */
  uint64_t count = 0;
  int rc = etsim_et_reader_open(&r, in_path, read_flags, err);
  if (rc) return rc;
  if ((rc = etsim_outfile_open(&of, out_path, err))) goto done;
  FILE *fp = of.fp;
  if ((rc = etsim_etjson_format_meta(&b, etsim_et_reader_meta(r), in_path, err))) goto done;
  const etsim_et_node_t *n;
  while ((rc = etsim_et_reader_next(r, &n, err)) == 1) {
    if ((rc = etsim_etjson_format_node(&b, n, in_path, err))) goto done;
    count++;
    if (b.len >= (1u << 16)) {
      if (fwrite(b.data, 1, b.len, fp) != b.len) {
        rc = etsim_error_set(err, ETSIM_EIO, "%s: write failed: %s", out_path, strerror(errno));
        goto done;
      }
      b.len = 0;
    }
  }
  if (rc < 0) goto done;
  if (b.len && fwrite(b.data, 1, b.len, fp) != b.len) {
    rc = etsim_error_set(err, ETSIM_EIO, "%s: write failed: %s", out_path, strerror(errno));
    goto done;
  }
  rc = etsim_outfile_commit(&of, err);
  of.fp = NULL;
  if (!rc && b.replaced)
    etsim_warn(
        "%s: %llu byte(s) of strings were not UTF-8 and are written as U+FFFD (the JSON "
        "converts back to other bytes)",
        in_path, (unsigned long long)b.replaced);
done:
  if (rc && of.fp) etsim_outfile_abort(&of);
  etsim_etjson_buf_free(&b);
  etsim_et_reader_close(r);
  if (!rc && out_nodes) *out_nodes = count;
  return rc;
}

/* ------------------------------------------------------------------ reader */

struct etsim_etjson_reader {
  char *path;
  gzFile gz;
  int eof;
  char *buf;
  size_t len, pos, cap; /* valid bytes, first unconsumed byte, capacity */
  uint64_t base_offset; /* file offset of buf[0] */
  uint64_t line;        /* line number at buf[pos] */
  uint64_t obj_line;    /* line where the current object starts */
  size_t obj_no;        /* 1-based number of the current object */
  json_t *cur;          /* current node object (strings are borrowed) */
  json_t *meta_json;
  etsim_arena_t arena, meta_arena;
  etsim_et_meta_t meta;
  etsim_et_node_t node;
  etsim_ioinfo_t in, out;
  /* error context */
  int have_id;
  uint64_t id;
};

enum { CHUNK = 1 << 20 };
/* One object (a node) larger than this is refused rather than buffered:
 * the reader would otherwise hold whatever a file claims. */
#define MAX_OBJECT_BYTES ((size_t)64 << 20)

/* Error naming file, line, object, node id and key. */
static int rerr(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int rerr(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const char *fmt,
                ...) {
  char msg[512], ctx[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->obj_no == 1) snprintf(ctx, sizeof ctx, "object 1 (GlobalMetadata)");
  else if (r->have_id)
    snprintf(ctx, sizeof ctx, "object %zu (node id %" PRIu64 ")", r->obj_no, r->id);
  else snprintf(ctx, sizeof ctx, "object %zu (node %zu)", r->obj_no, r->obj_no - 1);
  if (key)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%" PRIu64 ": %s: key '%s': %s", r->path,
                           r->obj_line, ctx, key, msg);
  return etsim_error_set(err, ETSIM_EFORMAT, "%s:%" PRIu64 ": %s: %s", r->path, r->obj_line, ctx,
                         msg);
}

/* Read at least `want` more bytes (or to EOF) after the unconsumed data. */
static int fill(etsim_etjson_reader_t *r, size_t want, etsim_error_t *err) {
  if (r->pos) {
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->base_offset += r->pos;
    r->len -= r->pos;
    r->pos = 0;
  }
  if (etsim_grow((void **)&r->buf, &r->cap, r->len + want, 1))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  size_t got = 0;
  while (got < want && !r->eof) {
    size_t ask = r->cap - r->len;
    if (ask > want - got) ask = want - got;
    if (ask > (1u << 30)) ask = 1u << 30;
    int n = gzread(r->gz, r->buf + r->len, (unsigned)ask);
    if (n < 0) {
      int zerr;
      const char *m = gzerror(r->gz, &zerr);
      return etsim_error_set(err, ETSIM_EIO, "%s: byte %" PRIu64 ": read failed: %s", r->path,
                             r->base_offset + r->len, zerr == Z_ERRNO ? strerror(errno) : m);
    }
    if (n == 0) r->eof = 1;
    r->len += (size_t)n;
    got += (size_t)n;
  }
  return 0;
}

/* Next top-level object: 1 and *out (owned), 0 at end of input, or < 0. */
static int next_object(etsim_etjson_reader_t *r, json_t **out, etsim_error_t *err) {
  int rc;
  size_t want = CHUNK;
  for (;;) {
    while (r->pos < r->len) {
      char c = r->buf[r->pos];
      if (c == '\n') r->line++;
      else if (c != ' ' && c != '\t' && c != '\r') break;
      r->pos++;
    }
    if (r->pos == r->len) {
      if (r->eof) return 0;
      if ((rc = fill(r, CHUNK, err))) return rc;
      continue;
    }
    size_t avail = r->len - r->pos;
    json_error_t e;
    json_t *j =
        json_loadb(r->buf + r->pos, avail, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &e);
    if (!j) {
      /* An object cut by the end of the buffer: read more and retry; the
       * request doubles each time so a big object costs linear time. */
      if (!r->eof && ((size_t)e.position >= avail ||
                      json_error_code(&e) == json_error_premature_end_of_input)) {
        if (avail > MAX_OBJECT_BYTES)
          return etsim_error_set(err, ETSIM_EFORMAT,
                                 "%s:%" PRIu64 ": object %zu is larger than %zu MiB (no node is)",
                                 r->path, r->line, r->obj_no + 1, MAX_OBJECT_BYTES >> 20);
        if (want > MAX_OBJECT_BYTES + CHUNK - avail) want = MAX_OBJECT_BYTES + CHUNK - avail;
        if ((rc = fill(r, want, err))) return rc;
        want *= 2;
        continue;
      }
      r->obj_no++;
      r->obj_line = r->line;
      r->have_id = 0;
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%" PRIu64 ": object %zu: malformed JSON: %s (byte %" PRIu64 ")",
                             r->path, r->line + (uint64_t)(e.line > 0 ? e.line - 1 : 0), r->obj_no,
                             e.text, r->base_offset + r->pos + (uint64_t)e.position);
    }
    r->obj_no++;
    r->obj_line = r->line;
    r->have_id = 0;
    size_t used = (size_t)e.position;
    if (used > MAX_OBJECT_BYTES) {
      json_decref(j);
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%" PRIu64 ": object %zu is larger than %zu MiB (no node is)",
                             r->path, r->line, r->obj_no, MAX_OBJECT_BYTES >> 20);
    }
    for (size_t i = 0; i < used; i++) r->line += r->buf[r->pos + i] == '\n';
    r->pos += used;
    if (!json_is_object(j)) {
      json_decref(j);
      return rerr(r, err, NULL, "expected a JSON object");
    }
    *out = j;
    return 1;
  }
}

static const char *type_word(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT:
      return "an object";
    case JSON_ARRAY:
      return "an array";
    case JSON_STRING:
      return "a string";
    case JSON_INTEGER:
      return "an integer";
    case JSON_REAL:
      return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
      return "a boolean";
    default:
      return "null";
  }
}

/* Strict decimal integer text. */
static int parse_u64_text(const char *s, uint64_t *out) {
  if (*s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int parse_i64_text(const char *s, int64_t *out) {
  const char *d = *s == '-' ? s + 1 : s;
  if (*d < '0' || *d > '9') return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int get_u64(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const json_t *v,
                   uint64_t *out) {
  if (json_is_string(v)) {
    if (parse_u64_text(json_string_value(v), out) == 0) return 0;
    return rerr(r, err, key, "'%s' is not an unsigned 64-bit integer", json_string_value(v));
  }
  if (json_is_integer(v) && json_integer_value(v) >= 0) {
    *out = (uint64_t)json_integer_value(v);
    return 0;
  }
  return rerr(r, err, key, "expected an unsigned integer (string or number), got %s",
              json_is_integer(v) ? "a negative integer" : type_word(v));
}

static int get_i64(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const json_t *v,
                   int64_t *out) {
  if (json_is_string(v)) {
    if (parse_i64_text(json_string_value(v), out) == 0) return 0;
    return rerr(r, err, key, "'%s' is not a 64-bit integer", json_string_value(v));
  }
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 0;
  }
  return rerr(r, err, key, "expected an integer (string or number), got %s", type_word(v));
}

static int get_int_range(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key,
                         const json_t *v, int64_t lo, int64_t hi, int64_t *out) {
  int64_t x;
  int rc = get_i64(r, err, key, v, &x);
  if (rc) return rc;
  if (x < lo || x > hi)
    return rerr(r, err, key, "%" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", x, lo, hi);
  *out = x;
  return 0;
}

static int get_double(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key,
                      const json_t *v, double *out) {
  if (json_is_real(v)) {
    *out = json_real_value(v);
    return 0;
  }
  if (json_is_integer(v)) {
    *out = (double)json_integer_value(v);
    return 0;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "NaN") == 0) {
      *out = NAN;
      return 0;
    }
    if (strcmp(s, "Infinity") == 0) {
      *out = INFINITY;
      return 0;
    }
    if (strcmp(s, "-Infinity") == 0) {
      *out = -INFINITY;
      return 0;
    }
    return rerr(r, err, key,
                "'%s' is not a number (strings allowed: NaN, "
                "Infinity, -Infinity)",
                s);
  }
  return rerr(r, err, key, "expected a number, got %s", type_word(v));
}

static int get_string(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key,
                      const json_t *v, const char **out) {
  if (!json_is_string(v)) return rerr(r, err, key, "expected a string, got %s", type_word(v));
  *out = json_string_value(v);
  return 0;
}

static int b64_val(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

/* Standard or URL-safe base64, padding optional (as protobuf accepts). */
static int get_bytes(etsim_etjson_reader_t *r, etsim_error_t *err, etsim_arena_t *arena,
                     const char *key, const json_t *v, etsim_bytes_t *out) {
  const char *s = "";
  int rc = get_string(r, err, key, v, &s);
  if (rc) return rc;
  size_t n = strlen(s);
  while (n && s[n - 1] == '=') n--;
  if (n % 4 == 1 || strlen(s) - n > 2) return rerr(r, err, key, "not valid base64");
  uint8_t *o = etsim_arena_alloc(arena, n * 3 / 4 + 1);
  if (!o) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  size_t k = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int d = b64_val((unsigned char)s[i]);
    if (d < 0) return rerr(r, err, key, "not valid base64 (character %zu)", i + 1);
    acc = acc << 6 | (uint32_t)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[k++] = (uint8_t)(acc >> bits);
    }
  }
  out->data = o;
  out->len = k;
  return 0;
}

/* Parse one element of class e from v into p. */
static int get_elem(etsim_etjson_reader_t *r, etsim_error_t *err, etsim_arena_t *arena,
                    const char *key, elem_t e, const json_t *v, void *p) {
  int rc;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  switch (e) {
    case EL_D:
      return get_double(r, err, key, v, (double *)p);
    case EL_F:
      if ((rc = get_double(r, err, key, v, &d))) return rc;
      if (isfinite(d) && (d > 3.4028234663852886e38 || d < -3.4028234663852886e38))
        return rerr(r, err, key, "%g is out of range for a float", d);
      *(float *)p = (float)d;
      return 0;
    case EL_I32:
      if ((rc = get_int_range(r, err, key, v, INT32_MIN, INT32_MAX, &i))) return rc;
      *(int32_t *)p = (int32_t)i;
      return 0;
    case EL_I64:
      return get_i64(r, err, key, v, (int64_t *)p);
    case EL_U32:
      if ((rc = get_int_range(r, err, key, v, 0, UINT32_MAX, &i))) return rc;
      *(uint32_t *)p = (uint32_t)i;
      return 0;
    case EL_U64:
      if ((rc = get_u64(r, err, key, v, &u))) return rc;
      *(uint64_t *)p = u;
      return 0;
    case EL_B:
      if (!json_is_boolean(v))
        return rerr(r, err, key, "expected true or false, got %s", type_word(v));
      *(int *)p = json_is_true(v);
      return 0;
    case EL_S:
      return get_string(r, err, key, v, (const char **)p);
    default:
      return get_bytes(r, err, arena, key, v, (etsim_bytes_t *)p);
  }
}

static int get_attr(etsim_etjson_reader_t *r, etsim_error_t *err, etsim_arena_t *arena, size_t idx,
                    const json_t *o, etsim_attr_t *a) {
  char key[128];
  int rc;
  memset(a, 0, sizeof *a);
  a->name = "";
  a->doc = "";
  snprintf(key, sizeof key, "attr[%zu]", idx);
  if (!json_is_object(o)) return rerr(r, err, key, "expected an object, got %s", type_word(o));
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    snprintf(key, sizeof key, "attr[%zu].%s", idx, k);
    if (strcmp(k, "name") == 0) {
      if ((rc = get_string(r, err, key, v, &a->name))) return rc;
      continue;
    }
    if (strcmp(k, "docString") == 0 || strcmp(k, "doc_string") == 0) {
      if ((rc = get_string(r, err, key, v, &a->doc))) return rc;
      continue;
    }
    int kind = kind_from_key(k);
    if (!kind) return rerr(r, err, key, "unknown key");
    if (a->kind)
      return rerr(r, err, key,
                  "attribute already has a value (%s); the "
                  "value is a oneof",
                  kind_json[a->kind]);
    a->kind = kind;
    elem_t e = kind_elem(kind);
    if (!etsim_attr_kind_is_list(kind)) {
      void *p;
      switch (e) {
        case EL_D:
          p = &a->v.d;
          break;
        case EL_F:
          p = &a->v.f;
          break;
        case EL_I32:
          p = &a->v.i32;
          break;
        case EL_I64:
          p = &a->v.i64;
          break;
        case EL_U32:
          p = &a->v.u32;
          break;
        case EL_U64:
          p = &a->v.u64;
          break;
        case EL_B:
          p = &a->v.b;
          break;
        case EL_S:
          p = &a->v.s;
          break;
        default:
          p = &a->v.bytes;
          break;
      }
      if ((rc = get_elem(r, err, arena, key, e, v, p))) return rc;
      continue;
    }
    if (!json_is_object(v))
      return rerr(r, err, key, "expected an object {\"values\": [...]}, got %s", type_word(v));
    const char *lk;
    json_t *vals = NULL, *lv;
    json_object_foreach(v, lk, lv) {
      if (strcmp(lk, "values") != 0) {
        snprintf(key, sizeof key, "attr[%zu].%s.%s", idx, k, lk);
        return rerr(r, err, key, "unknown key");
      }
      vals = lv;
    }
    snprintf(key, sizeof key, "attr[%zu].%s.values", idx, k);
    if (vals && !json_is_array(vals))
      return rerr(r, err, key, "expected an array, got %s", type_word(vals));
    size_t n = vals ? json_array_size(vals) : 0, es = elem_size(e);
    char *arr = NULL;
    if (n) {
      if (!(arr = etsim_arena_alloc(arena, n * es)))
        return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
      for (size_t j = 0; j < n; j++) {
        snprintf(key, sizeof key, "attr[%zu].%s.values[%zu]", idx, k, j);
        if ((rc = get_elem(r, err, arena, key, e, json_array_get(vals, j), arr + j * es)))
          return rc;
      }
    }
    a->v.list.n = n;
    a->v.list.v = arr;
  }
  return 0;
}

static int get_attrs(etsim_etjson_reader_t *r, etsim_error_t *err, etsim_arena_t *arena,
                     const json_t *v, size_t *n_out, const etsim_attr_t **out) {
  if (!json_is_array(v)) return rerr(r, err, "attr", "expected an array, got %s", type_word(v));
  size_t n = json_array_size(v);
  etsim_attr_t *a = NULL;
  if (n && !(a = etsim_arena_alloc(arena, n * sizeof *a)))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  for (size_t i = 0; i < n; i++) {
    int rc = get_attr(r, err, arena, i, json_array_get(v, i), &a[i]);
    if (rc) return rc;
  }
  *n_out = n;
  *out = a;
  return 0;
}

static int get_deps(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const json_t *v,
                    size_t *n_out, const uint64_t **out) {
  if (!json_is_array(v)) return rerr(r, err, key, "expected an array, got %s", type_word(v));
  size_t n = json_array_size(v);
  uint64_t *d = NULL;
  if (n && !(d = etsim_arena_alloc(&r->arena, n * sizeof *d)))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  char k[64];
  for (size_t i = 0; i < n; i++) {
    snprintf(k, sizeof k, "%s[%zu]", key, i);
    int rc = get_u64(r, err, k, json_array_get(v, i), &d[i]);
    if (rc) return rc;
  }
  *n_out = n;
  *out = d;
  return 0;
}

static int get_io(etsim_etjson_reader_t *r, etsim_error_t *err, const char *key, const json_t *v,
                  etsim_ioinfo_t *io) {
  io->values = io->shapes = io->types = "";
  if (!json_is_object(v)) return rerr(r, err, key, "expected an object, got %s", type_word(v));
  const char *k;
  json_t *x;
  char kk[64];
  json_object_foreach((json_t *)v, k, x) {
    snprintf(kk, sizeof kk, "%s.%s", key, k);
    const char **slot = strcmp(k, "values") == 0   ? &io->values
                        : strcmp(k, "shapes") == 0 ? &io->shapes
                        : strcmp(k, "types") == 0  ? &io->types
                                                   : NULL;
    if (!slot) return rerr(r, err, kk, "unknown key (IOInfo has values, shapes, types)");
    int rc = get_string(r, err, kk, x, slot);
    if (rc) return rc;
  }
  return 0;
}

static int parse_meta(etsim_etjson_reader_t *r, json_t *o, etsim_error_t *err) {
  r->meta.version = "";
  const char *k;
  json_t *v;
  int rc;
  json_object_foreach(o, k, v) {
    if (strcmp(k, "version") == 0) rc = get_string(r, err, k, v, &r->meta.version);
    else if (strcmp(k, "attr") == 0)
      rc = get_attrs(r, err, &r->meta_arena, v, &r->meta.n_attrs, &r->meta.attrs);
    else
      rc = rerr(r, err, k,
                "unknown key (the first object is the "
                "GlobalMetadata: version, attr)");
    if (rc) return rc;
  }
  return 0;
}

static int parse_node(etsim_etjson_reader_t *r, json_t *o, etsim_error_t *err) {
  etsim_et_node_t *n = &r->node;
  memset(n, 0, sizeof *n);
  n->name = "";
  int rc;
  /* The id first, so every later message can name the node. */
  json_t *idv = json_object_get(o, "id");
  if (idv) {
    if ((rc = get_u64(r, err, "id", idv, &n->id))) return rc;
  }
  r->have_id = 1;
  r->id = n->id;
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    if (strcmp(k, "id") == 0) continue;
    if (strcmp(k, "name") == 0) {
      rc = get_string(r, err, k, v, &n->name);
    } else if (strcmp(k, "type") == 0) {
      int t = -1;
      if (json_is_string(v)) {
        t = etsim_et_node_type_parse(json_string_value(v));
        if (t < 0) return rerr(r, err, k, "unknown node type '%s'", json_string_value(v));
      } else if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x >= ETSIM_ET_NODE_TYPE_COUNT)
          return rerr(r, err, k, "unknown node type %lld", (long long)x);
        t = (int)x;
      } else {
        return rerr(r, err, k, "expected a node type name, got %s", type_word(v));
      }
      n->type = t;
      rc = 0;
    } else if (strcmp(k, "ctrlDeps") == 0 || strcmp(k, "ctrl_deps") == 0) {
      rc = get_deps(r, err, k, v, &n->n_ctrl_deps, &n->ctrl_deps);
    } else if (strcmp(k, "dataDeps") == 0 || strcmp(k, "data_deps") == 0) {
      rc = get_deps(r, err, k, v, &n->n_data_deps, &n->data_deps);
    } else if (strcmp(k, "startTimeMicros") == 0 || strcmp(k, "start_time_micros") == 0) {
      rc = get_u64(r, err, k, v, &n->start_time_micros);
    } else if (strcmp(k, "durationMicros") == 0 || strcmp(k, "duration_micros") == 0) {
      rc = get_u64(r, err, k, v, &n->duration_micros);
    } else if (strcmp(k, "inputs") == 0) {
      rc = get_io(r, err, k, v, &r->in);
      n->inputs = &r->in;
    } else if (strcmp(k, "outputs") == 0) {
      rc = get_io(r, err, k, v, &r->out);
      n->outputs = &r->out;
    } else if (strcmp(k, "attr") == 0) {
      rc = get_attrs(r, err, &r->arena, v, &n->n_attrs, &n->attrs);
    } else {
      rc = rerr(r, err, k, "unknown key");
    }
    if (rc) return rc;
  }
  return 0;
}

int etsim_etjson_reader_open(etsim_etjson_reader_t **out, const char *path, etsim_error_t *err) {
  etsim_etjson_reader_t *r = etsim_calloc(1, sizeof *r);
  if (!r || !(r->path = etsim_strdup(path))) {
    etsim_free(r);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  etsim_arena_init(&r->arena, 1 << 16);
  etsim_arena_init(&r->meta_arena, 1 << 12);
  r->line = 1;
  int rc;
  if ((rc = etsim_input_check(path, err)) != 0) goto fail;
  r->gz = strcmp(path, "-") == 0 ? gzdopen(0, "rb") : gzopen(path, "rb");
  if (!r->gz) {
    rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", path,
                         errno ? strerror(errno) : "out of memory");
    goto fail;
  }
  if ((rc = next_object(r, &r->meta_json, err)) < 0) goto fail;
  if (rc == 0) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: no JSON object (expected the GlobalMetadata "
                         "object first)",
                         path);
    goto fail;
  }
  if ((rc = parse_meta(r, r->meta_json, err))) goto fail;
  *out = r;
  return 0;
fail:
  etsim_etjson_reader_close(r);
  return rc;
}

const etsim_et_meta_t *etsim_etjson_reader_meta(const etsim_etjson_reader_t *r) { return &r->meta; }

int etsim_etjson_reader_next(etsim_etjson_reader_t *r, const etsim_et_node_t **out,
                             etsim_error_t *err) {
  if (r->cur) {
    json_decref(r->cur);
    r->cur = NULL;
  }
  etsim_arena_reset(&r->arena);
  int rc = next_object(r, &r->cur, err);
  if (rc <= 0) return rc;
  if ((rc = parse_node(r, r->cur, err))) return rc;
  *out = &r->node;
  return 1;
}

void etsim_etjson_reader_close(etsim_etjson_reader_t *r) {
  if (!r) return;
  if (r->gz) gzclose(r->gz);
  json_decref(r->cur);
  json_decref(r->meta_json);
  etsim_arena_free(&r->arena);
  etsim_arena_free(&r->meta_arena);
  etsim_free(r->buf);
  etsim_free(r->path);
  etsim_free(r);
}

/* ----------------------------------------------------------------- convert */

int etsim_etjson_convert(const char *in_path, const char *out_path, unsigned write_flags,
                         uint64_t *out_nodes, etsim_error_t *err) {
  etsim_etjson_reader_t *r;
  etsim_et_writer_t *w;
  int rc = etsim_etjson_reader_open(&r, in_path, err);
  if (rc) return rc;
  if ((rc = etsim_et_writer_open(&w, out_path, write_flags | ETSIM_ET_WRITE_VERBATIM, err))) {
    etsim_etjson_reader_close(r);
    return rc;
  }
  uint64_t count = 0;
  const etsim_et_node_t *n = NULL;
  if ((rc = etsim_et_writer_meta(w, etsim_etjson_reader_meta(r), err))) goto fail;
  while ((rc = etsim_etjson_reader_next(r, &n, err)) == 1) {
    if ((rc = etsim_et_writer_node(w, n, err))) {
      etsim_error_prefix(err, "%s: object %" PRIu64, in_path, count + 2);
      goto fail;
    }
    count++;
  }
  if (rc < 0) goto fail;
  etsim_etjson_reader_close(r);
  if ((rc = etsim_et_writer_commit(w, err))) return rc;
  if (out_nodes) *out_nodes = count;
  return 0;
fail:
  etsim_et_writer_abort(w);
  etsim_etjson_reader_close(r);
  return rc;
}
