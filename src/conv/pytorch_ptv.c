/*
 * pytorch_ptv.c — a small strict JSON parser for one trace element.
 *
 * Why not jansson here: it builds a hash table per object and mallocs every
 * value, which made it 46% of the converter's time and capped it near
 * 40 MB/s.  Trace elements are small objects read once: this parser keeps
 * members as arrays in an arena that is reset per element, decodes strings
 * in place (a string with escapes is decoded into the arena instead, so the
 * buffer never gains bytes such as a decoded newline that would upset line
 * counting), and recognises integers without strtoll.  It accepts exactly
 * RFC 8259 JSON: no comments, no trailing commas, no NaN, no control
 * characters in strings, valid \u escapes and surrogate pairs.
 */
#include "conv/pytorch_int.h"

#include <stdlib.h>
#include <string.h>

enum { PTV_MAX_DEPTH = 256 };

typedef struct pst {
  ptv_parser_t *p;
  char *s, *end;
  const char *what; /* error text */
  char *at;         /* error position */
} pst_t;

void etsim_conv__pt_value_parser_init(ptv_parser_t *p) {
  memset(p, 0, sizeof *p);
  etsim_arena_init(&p->arena, 1 << 16);
}

void etsim_conv__pt_value_parser_free(ptv_parser_t *p) {
  etsim_free(p->stack);
  etsim_arena_free(&p->arena);
  memset(p, 0, sizeof *p);
}

const ptv_t *etsim_conv__pt_value_get(const ptv_t *obj, const char *key) {
  if (!ptv_is_obj(obj)) return NULL;
  for (uint32_t i = 0; i < obj->n; i++) {
    const char *k = obj->u.items[2 * i].u.s;
    if (k[0] == key[0] && strcmp(k, key) == 0) return &obj->u.items[2 * i + 1];
  }
  return NULL;
}

int64_t etsim_conv__pt_value_int(const ptv_t *v, int64_t dflt) {
  if (!v) return dflt;
  switch (v->t) {
    case PTV_INT:
      return v->u.i;
    case PTV_REAL:
      return v->u.d >= -9.2e18 && v->u.d <= 9.2e18 ? (int64_t)v->u.d : dflt;
    case PTV_TRUE:
      return 1;
    case PTV_FALSE:
      return 0;
    default:
      return dflt;
  }
}

static int bad(pst_t *st, char *at, const char *what) {
  st->at = at;
  st->what = what;
  return ETSIM_EFORMAT;
}

static void ws(pst_t *st) {
  char *s = st->s;
  while (s < st->end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')) s++;
  st->s = s;
}

static int push(pst_t *st, const ptv_t *v) {
  ptv_parser_t *p = st->p;
  if (p->n + 1 > p->cap && etsim_grow((void **)&p->stack, &p->cap, p->n + 1, sizeof *p->stack))
    return ETSIM_ENOMEM;
  p->stack[p->n++] = *v;
  return 0;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

static char *utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xc0 | (cp >> 6));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xe0 | (cp >> 12));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *o++ = (char)(0xf0 | (cp >> 18));
    *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  }
  return o;
}

/* st->s is just past the opening quote. */
static int string(pst_t *st, ptv_t *out) {
  char *b = st->s, *s = b, *end = st->end;
  int esc = 0;
  for (;;) {
    while (s < end && *s != '"' && *s != '\\' && (unsigned char)*s >= 0x20) s++;
    if (s >= end) return bad(st, b - 1, "unterminated string");
    if ((unsigned char)*s < 0x20) return bad(st, s, "control character in a string");
    if (*s == '"') break;
    esc = 1;
    if (s + 1 >= end) return bad(st, s, "unterminated string");
    s += 2;
  }
  out->t = PTV_STR;
  if (!esc) {
    *s = '\0';
    out->u.s = b;
    out->n = (uint32_t)(s - b);
    st->s = s + 1;
    return 0;
  }
  char *dst = etsim_arena_alloc(&st->p->arena, (size_t)(s - b) + 1);
  if (!dst) return ETSIM_ENOMEM;
  char *o = dst;
  for (char *q = b; q < s;) {
    if (*q != '\\') {
      *o++ = *q++;
      continue;
    }
    char c = q[1];
    q += 2;
    switch (c) {
      case '"':
        *o++ = '"';
        break;
      case '\\':
        *o++ = '\\';
        break;
      case '/':
        *o++ = '/';
        break;
      case 'b':
        *o++ = '\b';
        break;
      case 'f':
        *o++ = '\f';
        break;
      case 'n':
        *o++ = '\n';
        break;
      case 'r':
        *o++ = '\r';
        break;
      case 't':
        *o++ = '\t';
        break;
      case 'u': {
        unsigned cp, lo;
        if (s - q < 4 || hex4(q, &cp)) return bad(st, q - 2, "invalid \\u escape");
        q += 4;
        if (cp >= 0xd800 && cp < 0xdc00) {
          if (s - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) || lo < 0xdc00 ||
              lo >= 0xe000)
            return bad(st, q - 6, "invalid UTF-16 surrogate pair");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          q += 6;
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return bad(st, q - 6, "invalid UTF-16 surrogate pair");
        }
        if (cp == 0) return bad(st, q - 6, "\\u0000 in a string");
        o = utf8(o, cp);
        break;
      }
      default:
        return bad(st, q - 2, "invalid escape in a string");
    }
  }
  *o = '\0';
  out->u.s = dst;
  out->n = (uint32_t)(o - dst);
  st->s = s + 1;
  return 0;
}

static int number(pst_t *st, ptv_t *out) {
  char *b = st->s, *s = b, *end = st->end;
  int neg = 0, real = 0;
  if (s < end && *s == '-') {
    neg = 1;
    s++;
  }
  if (s >= end || *s < '0' || *s > '9') return bad(st, b, "invalid number");
  uint64_t v = 0;
  int overflow = 0;
  if (*s == '0') {
    s++;
  } else {
    while (s < end && *s >= '0' && *s <= '9') {
      unsigned d = (unsigned)(*s - '0');
      if (v > (UINT64_MAX - d) / 10) overflow = 1;
      else v = v * 10 + d;
      s++;
    }
  }
  if (s < end && *s == '.') {
    real = 1;
    s++;
    if (s >= end || *s < '0' || *s > '9') return bad(st, b, "invalid number");
    while (s < end && *s >= '0' && *s <= '9') s++;
  }
  if (s < end && (*s == 'e' || *s == 'E')) {
    real = 1;
    s++;
    if (s < end && (*s == '+' || *s == '-')) s++;
    if (s >= end || *s < '0' || *s > '9') return bad(st, b, "invalid number");
    while (s < end && *s >= '0' && *s <= '9') s++;
  }
  ptv_set_number(out, b, neg, v, real, overflow);
  st->s = s;
  return 0;
}

static int value(pst_t *st, ptv_t *out, int depth);

static int composite(pst_t *st, ptv_t *out, int depth, int obj) {
  ptv_parser_t *p = st->p;
  size_t base = p->n;
  char *open = st->s - 1;
  char close = obj ? '}' : ']';
  int rc;
  if (depth > PTV_MAX_DEPTH) return bad(st, open, "nesting too deep");
  ws(st);
  if (st->s < st->end && *st->s == close) {
    st->s++;
  } else {
    for (;;) {
      ptv_t v;
      ws(st);
      if (obj) {
        if (st->s >= st->end || *st->s != '"')
          return bad(st, st->s, "expected a string as object key");
        st->s++;
        if ((rc = string(st, &v)) || (rc = push(st, &v))) return rc;
        ws(st);
        if (st->s >= st->end || *st->s != ':')
          return bad(st, st->s, "expected ':' after an object key");
        st->s++;
        ws(st);
      }
      if ((rc = value(st, &v, depth + 1)) || (rc = push(st, &v))) return rc;
      ws(st);
      if (st->s < st->end && *st->s == ',') {
        st->s++;
        continue;
      }
      if (st->s < st->end && *st->s == close) {
        st->s++;
        break;
      }
      return bad(st, st->s, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  size_t n = p->n - base;
  out->t = obj ? PTV_OBJ : PTV_ARR;
  out->n = (uint32_t)(obj ? n / 2 : n);
  out->u.items = NULL;
  if (n) {
    out->u.items = etsim_arena_alloc(&p->arena, n * sizeof(ptv_t));
    if (!out->u.items) return ETSIM_ENOMEM;
    memcpy(out->u.items, p->stack + base, n * sizeof(ptv_t));
  }
  p->n = base;
  return 0;
}

static int literal(pst_t *st, const char *word, int type, ptv_t *out) {
  size_t n = strlen(word);
  if ((size_t)(st->end - st->s) < n || memcmp(st->s, word, n) != 0)
    return bad(st, st->s, "invalid literal");
  st->s += n;
  out->t = (uint32_t)type;
  out->n = 0;
  return 0;
}

static int value(pst_t *st, ptv_t *out, int depth) {
  if (st->s >= st->end) return bad(st, st->s, "unexpected end of value");
  memset(out, 0, sizeof *out);
  char c = *st->s;
  switch (c) {
    case '{':
      st->s++;
      return composite(st, out, depth, 1);
    case '[':
      st->s++;
      return composite(st, out, depth, 0);
    case '"':
      st->s++;
      return string(st, out);
    case 't':
      return literal(st, "true", PTV_TRUE, out);
    case 'f':
      return literal(st, "false", PTV_FALSE, out);
    case 'n':
      return literal(st, "null", PTV_NULL, out);
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return number(st, out);
      return bad(st, st->s, "unexpected character");
  }
}

int etsim_conv__pt_value_parse(ptv_parser_t *p, char *s, size_t len, ptv_t *out, size_t *err_pos,
                               const char **err_what) {
  etsim_arena_reset(&p->arena);
  p->n = 0;
  pst_t st = {p, s, s + len, NULL, NULL};
  ws(&st);
  int rc = value(&st, out, 0);
  if (!rc) {
    ws(&st);
    if (st.s != st.end) rc = bad(&st, st.s, "unexpected data after the value");
  }
  if (rc == ETSIM_EFORMAT) {
    *err_pos = (size_t)(st.at - s);
    *err_what = st.what;
  }
  return rc;
}
