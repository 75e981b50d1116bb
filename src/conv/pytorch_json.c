/*
 * pytorch_json.c — stream a "{ ..., "KEY": [ big array ], ... }" JSON file
 * one element at a time (see pytorch_int.h), and Python repr() of values.
 *
 * Why not one json_load of the whole file: a million-node host trace is
 * hundreds of MB of text and several GB as a jansson tree.  Cutting each
 * element out of the byte stream first costs one extra pass over bytes
 * already in cache and keeps peak memory at one element plus the buffer.
 */
#include "conv/pytorch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

typedef struct rd {
  const char *path;
  gzFile gz; /* gzip input, or NULL */
  int fd;    /* plain input: read() straight into buf, no extra copy */
  char *buf;
  size_t len, cap; /* buf[0..len) holds stream bytes [base, base + len) */
  uint64_t base;
  int eof;
  /* Line tracking: the line and column of stream offset t_off. */
  uint64_t t_off, t_line, t_col;
  ptv_parser_t parser;
} rd_t;

enum { RD_CHUNK = 1 << 18 };
/* The most unconsumed bytes held at once (one value being delimited): a
 * node or event takes kilobytes, and without a bound a file claiming a
 * 1 GiB string was buffered whole (2.1 GB, then zlib's 'request does not
 * fit in an int'). */
#define RD_MAX_HELD ((size_t)64 << 20)

static void rd_loc(rd_t *r, uint64_t off, ptj_loc_t *loc);

/* Discard buf[0..keep) and read more.  Returns bytes added, 0 at end of
 * file, or a negative code. */
static int rd_fill(rd_t *r, size_t keep, etsim_error_t *err) {
  if (r->eof) return 0;
  if (keep > 0) {
    memmove(r->buf, r->buf + keep, r->len - keep);
    r->len -= keep;
    r->base += keep;
  }
  if (r->len > RD_MAX_HELD) {
    ptj_loc_t l;
    rd_loc(r, r->base, &l);
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%llu:%llu: one JSON value runs over %zu MiB (no node or event is "
                           "that large)",
                           r->path, (unsigned long long)l.line, (unsigned long long)l.col,
                           RD_MAX_HELD >> 20);
  }
  if (r->cap - r->len < RD_CHUNK) {
    size_t ncap = r->cap ? r->cap : RD_CHUNK * 2;
    while (ncap - r->len < RD_CHUNK) ncap *= 2;
    if (ncap > RD_MAX_HELD + RD_CHUNK) ncap = RD_MAX_HELD + RD_CHUNK;
    char *nb = etsim_realloc(r->buf, ncap + 1); /* + the NUL after len */
    if (!nb) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
    r->buf = nb;
    r->cap = ncap;
  }
  long n;
  if (r->gz) {
    n = gzread(r->gz, r->buf + r->len, (unsigned)(r->cap - r->len));
    if (n < 0) {
      int zerr;
      const char *m = gzerror(r->gz, &zerr);
      return etsim_error_set(err, ETSIM_EIO, "%s: offset %llu: read error: %s", r->path,
                             (unsigned long long)(r->base + r->len),
                             zerr == Z_ERRNO ? strerror(errno) : m);
    }
  } else {
    do n = (long)read(r->fd, r->buf + r->len, r->cap - r->len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
      return etsim_error_set(err, ETSIM_EIO, "%s: offset %llu: read error: %s", r->path,
                             (unsigned long long)(r->base + r->len), strerror(errno));
  }
  if (n == 0) {
    r->eof = 1;
    r->buf[r->len] = '\0';
    return 0;
  }
  r->len += (size_t)n;
  r->buf[r->len] = '\0';
  return (int)n;
}

/* Line and column of stream offset `off`, which must be >= t_off and still
 * in the buffer (callers only move forwards). */
static void rd_loc(rd_t *r, uint64_t off, ptj_loc_t *loc) {
  if (off < r->t_off || off < r->base) off = r->t_off > r->base ? r->t_off : r->base;
  if (off > r->base + r->len) off = r->base + r->len;
  const char *p = r->buf + (r->t_off - r->base);
  const char *end = r->buf + (off - r->base);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
      r->t_col += (uint64_t)(end - p);
      break;
    }
    r->t_line++;
    r->t_col = 1;
    p = nl + 1;
  }
  r->t_off = off;
  loc->line = r->t_line;
  loc->col = r->t_col;
  loc->offset = off;
}

/* Drop the `keep` bytes before buf[keep] (they are consumed) and read more
 * after what is left.  Line counting first catches up to the cut, since
 * rd_loc can only count what is still in the buffer.  Returns rd_fill's
 * result: bytes read, 0 at end of file, or < 0. */
static int rd_slide(rd_t *r, size_t keep, etsim_error_t *err) {
  if (r->t_off < r->base + keep) {
    ptj_loc_t l;
    rd_loc(r, r->base + keep, &l);
  }
  return rd_fill(r, keep, err);
}

static int fail_at(rd_t *r, uint64_t off, int code, const char *what, etsim_error_t *err) {
  ptj_loc_t l;
  rd_loc(r, off, &l);
  return etsim_error_set(err, code, "%s:%llu:%llu: %s", r->path, (unsigned long long)l.line,
                         (unsigned long long)l.col, what);
}

/* Skip white space from *i; refills as needed (keeping buf[keep..]).
 * Returns 1 with buf[*i] the next byte, 0 at end of file, or < 0. */
static int rd_ws(rd_t *r, size_t *i, etsim_error_t *err) {
  for (;;) {
    while (*i < r->len) {
      char c = r->buf[*i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return 1;
      (*i)++;
    }
    /* Everything before *i is consumed; keep nothing of it. */
    size_t keep = *i;
    int n = rd_slide(r, keep, err);
    *i -= keep;
    if (n < 0) return n;
    if (n == 0) return 0;
  }
}

/* Find the end of the value starting at buf[*start].  On return *start may
 * have moved (the buffer was compacted) and *end is one past the value. */
/* Byte classes for delimiting values: the bytes that end a string's body
 * and the structural bytes outside strings. */
enum { C_STR = 1, C_STRUCT = 2 };
static const unsigned char cls[256] = {
    ['"'] = C_STR | C_STRUCT, ['\\'] = C_STR,   ['{'] = C_STRUCT,
    ['}'] = C_STRUCT,         ['['] = C_STRUCT, [']'] = C_STRUCT,
};

static int rd_value_end(rd_t *r, size_t *start, size_t *end, etsim_error_t *err) {
  size_t i = *start;
  int depth = 0, in_str = 0, esc = 0;
  char c0 = r->buf[i];
  int scalar = !(c0 == '{' || c0 == '[' || c0 == '"');
  for (;;) {
    const char *b = r->buf;
    size_t n = r->len;
    if (scalar) {
      while (i < n) {
        char c = b[i];
        if (c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' || c == '\r' || c == '\t') {
          *end = i;
          return 0;
        }
        i++;
      }
    } else {
      while (i < n) {
        char c = b[i];
        if (in_str) {
          if (esc) {
            esc = 0;
            i++;
            continue;
          }
          /* Fast path through the body of a string. */
          const unsigned char *q = (const unsigned char *)b + i;
          const unsigned char *lim = (const unsigned char *)b + n;
          while (q < lim && !(cls[*q] & C_STR)) q++;
          i = (size_t)((const char *)q - b);
          if (i >= n) break;
          if (*q == '\\') {
            esc = 1;
          } else {
            in_str = 0;
            if (depth == 0) { /* a bare string value ends here */
              *end = i + 1;
              return 0;
            }
          }
          i++;
          continue;
        }
        if (!(cls[(unsigned char)c] & C_STRUCT)) {
          /* Skip numbers, literals, separators and white space at once. */
          i++;
          while (i < n && !(cls[(unsigned char)b[i]] & C_STRUCT)) i++;
          continue;
        }
        if (c == '"') {
          in_str = 1;
        } else if (c == '{' || c == '[') {
          depth++;
        } else if (c == '}' || c == ']') {
          depth--;
          if (depth <= 0) {
            *end = i + 1;
            return 0;
          }
        }
        i++;
      }
    }
    /* Ran out of buffer inside the value: keep it from *start and read. */
    size_t keep = *start;
    int got = rd_slide(r, keep, err);
    if (got < 0) return got;
    *start -= keep;
    i -= keep;
    if (got == 0) {
      if (scalar) {
        *end = i;
        return 0;
      }
      return fail_at(r, r->base + *start, ETSIM_EFORMAT,
                     "truncated JSON: the value starting here never ends", err);
    }
  }
}

/* Parse buf[start..end); errors are placed in the stream.  The value is
 * valid until the next parse. */
static int rd_parse(rd_t *r, size_t start, size_t end, ptv_t *out, etsim_error_t *err) {
  size_t pos = 0;
  const char *what = NULL;
  /* The byte after the value is a delimiter; make it a NUL for strtod. */
  char saved = r->buf[end];
  r->buf[end] = '\0';
  int rc = etsim_conv__pt_value_parse(&r->parser, r->buf + start, end - start, out, &pos, &what);
  r->buf[end] = saved;
  if (rc == ETSIM_ENOMEM) return etsim_error_set(err, rc, "%s: out of memory", r->path);
  if (rc) {
    char m[300];
    snprintf(m, sizeof m, "malformed JSON: %s", what);
    return fail_at(r, r->base + start + pos, ETSIM_EFORMAT, m, err);
  }
  return 0;
}

/* The value at [start, end) parsed, and where it stands in the file. */
static int rd_parse_at(rd_t *r, size_t start, size_t end, ptv_t *out, ptj_loc_t *loc,
                       etsim_error_t *err) {
  rd_loc(r, r->base + start, loc);
  loc->length = end - start;
  return rd_parse(r, start, end, out, err);
}

/* Read a member key at buf[*i] (a JSON string) into key (truncated). */
static int rd_key(rd_t *r, size_t *i, char *key, size_t keycap, etsim_error_t *err) {
  size_t s = *i, e;
  int rc = rd_value_end(r, &s, &e, err);
  if (rc) return rc;
  ptv_t v;
  if ((rc = rd_parse(r, s, e, &v, err))) return rc;
  if (!ptv_is_str(&v))
    return fail_at(r, r->base + s, ETSIM_EFORMAT, "malformed JSON: expected a string as object key",
                   err);
  snprintf(key, keycap, "%s", v.u.s);
  *i = e;
  return 0;
}

static int expect(rd_t *r, size_t *i, const char *chars, const char *what, etsim_error_t *err) {
  int rc = rd_ws(r, i, err);
  if (rc < 0) return rc;
  if (rc == 0) {
    char m[160];
    snprintf(m, sizeof m, "truncated JSON: expected %s, found end of file", what);
    return fail_at(r, r->base + *i, ETSIM_EFORMAT, m, err);
  }
  if (!strchr(chars, r->buf[*i])) {
    char m[160];
    snprintf(m, sizeof m, "malformed JSON: expected %s, found '%c'", what, r->buf[*i]);
    return fail_at(r, r->base + *i, ETSIM_EFORMAT, m, err);
  }
  return 1;
}

/* Before the fast path looks at an element at buf[*i]: keep at least
 * FAST_AHEAD bytes after it in the buffer (or all that is left of the
 * file), so that only elements longer than that fall to the slow path for
 * want of bytes. */
enum { FAST_AHEAD = 1 << 16 };

static int rd_ahead(rd_t *r, size_t *i, etsim_error_t *err) {
  while (!r->eof && r->len - *i < FAST_AHEAD) {
    size_t keep = *i;
    int n = rd_slide(r, keep, err);
    *i -= keep;
    if (n < 0) return n;
  }
  return 0;
}

static int stream_body(rd_t *r, const char *array_key, ptj_member_fn on_member, ptj_elem_fn on_elem,
                       ptj_fast_fn on_fast, void *user, const ptj_want_t *want, int *found,
                       etsim_error_t *err) {
  size_t i = 0;
  int rc = rd_ws(r, &i, err);
  if (rc < 0) return rc;
  if (rc == 0)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: empty file (expected a JSON object)", r->path);
  if (r->buf[i] != '{')
    return fail_at(r, r->base + i, ETSIM_EFORMAT,
                   "the top level is not a JSON object (expected '{')", err);
  i++;
  char key[256];
  int first = 1;
  for (;;) {
    if ((rc = expect(r, &i, first ? "\"}" : ",}", "',' or '}'", err)) < 0) return rc;
    if (r->buf[i] == '}') {
      i++;
      break;
    }
    if (!first) {
      i++;
      if ((rc = expect(r, &i, "\"", "a member name", err)) < 0) return rc;
    }
    first = 0;
    if ((rc = rd_key(r, &i, key, sizeof key, err))) return rc;
    if ((rc = expect(r, &i, ":", "':'", err)) < 0) return rc;
    i++;
    if ((rc = expect(r, &i, "{[\"-0123456789tfn", "a value", err)) < 0) return rc;
    if (strcmp(key, array_key) == 0) {
      *found = 1;
      if (r->buf[i] != '[') {
        char m[300];
        snprintf(m, sizeof m, "'%s' is not an array", array_key);
        return fail_at(r, r->base + i, ETSIM_EFORMAT, m, err);
      }
      i++;
      uint64_t index = 0;
      for (;;) {
        if ((rc = expect(r, &i, index ? ",]" : "{[\"-0123456789tfn]",
                         index ? "',' or ']'" : "a value or ']'", err)) < 0)
          return rc;
        if (r->buf[i] == ']') {
          i++;
          break;
        }
        if (index) {
          i++;
          if ((rc = expect(r, &i, "{[\"-0123456789tfn", "a value", err)) < 0) return rc;
        }
        int skip = want && (index >= want->n || !(want->bits[index / 8] & (1u << (index % 8))));
        if (on_fast && !skip) {
          size_t used = 0;
          if ((rc = rd_ahead(r, &i, err))) return rc;
          rc = on_fast(user, r->buf + i, r->len - i, index, r->base + i, &used, err);
          if (rc < 0) return rc;
          if (rc == 0) {
            index++;
            i += used;
            continue;
          }
        }
        size_t s = i, e;
        if ((rc = rd_value_end(r, &s, &e, err))) return rc;
        if (skip) {
          index++;
          i = e;
          continue;
        }
        ptj_loc_t l;
        ptv_t v;
        if ((rc = rd_parse_at(r, s, e, &v, &l, err))) return rc;
        rc = on_elem ? on_elem(user, &v, index, &l, err) : 0;
        if (rc) return rc;
        index++;
        i = e;
      }
    } else {
      size_t s = i, e;
      if ((rc = rd_value_end(r, &s, &e, err))) return rc;
      if (!on_member) {
        i = e;
        continue;
      }
      ptj_loc_t l;
      ptv_t v;
      if ((rc = rd_parse_at(r, s, e, &v, &l, err))) return rc;
      rc = on_member(user, key, &v, &l, err);
      if (rc) return rc;
      i = e;
    }
  }
  rc = rd_ws(r, &i, err);
  if (rc < 0) return rc;
  if (rc > 0)
    return fail_at(r, r->base + i, ETSIM_EFORMAT, "malformed JSON: data after the top-level object",
                   err);
  return 0;
}

int etsim_conv__pt_json_stream(const char *path, const char *array_key, ptj_member_fn on_member,
                               ptj_elem_fn on_elem, void *user, const ptj_want_t *want,
                               uint64_t *out_bytes, int *out_found, etsim_error_t *err) {
  return etsim_conv__pt_json_stream_ex(path, array_key, on_member, on_elem, NULL, user, want,
                                       out_bytes, out_found, err);
}

int etsim_conv__pt_json_stream_ex(const char *path, const char *array_key, ptj_member_fn on_member,
                                  ptj_elem_fn on_elem, ptj_fast_fn on_fast, void *user,
                                  const ptj_want_t *want, uint64_t *out_bytes, int *out_found,
                                  etsim_error_t *err) {
  rd_t r;
  memset(&r, 0, sizeof r);
  r.path = path;
  r.t_line = 1;
  r.t_col = 1;
  int rc0 = etsim_input_check(path, err);
  if (rc0) return rc0;
  etsim_conv__pt_value_parser_init(&r.parser);
  r.fd = open(path, O_RDONLY);
  if (r.fd < 0) {
    etsim_conv__pt_value_parser_free(&r.parser);
    return etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  }
  unsigned char magic[2];
  ssize_t got = pread(r.fd, magic, 2, 0);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    r.gz = gzdopen(r.fd, "rb");
    if (!r.gz) {
      close(r.fd);
      etsim_conv__pt_value_parser_free(&r.parser);
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    }
    gzbuffer(r.gz, 1 << 17);
  }
  int found = 0;
  int rc = stream_body(&r, array_key, on_member, on_elem, on_fast, user, want, &found, err);
  if (out_bytes) *out_bytes = r.base + r.len;
  if (out_found) *out_found = found;
  if (r.gz) gzclose(r.gz); /* closes fd too */
  else close(r.fd);
  etsim_free(r.buf);
  etsim_conv__pt_value_parser_free(&r.parser);
  return rc;
}

int etsim_conv__pt_json_is_gzip(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  unsigned char m[2];
  ssize_t n = pread(fd, m, 2, 0);
  close(fd);
  return n == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

int etsim_conv__pt_json_pread(const char *path, int fd, uint64_t off, size_t len, char *buf,
                              etsim_error_t *err) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return etsim_error_set(err, ETSIM_EIO, "%s: offset %llu: %s", path,
                             (unsigned long long)(off + got),
                             n < 0 ? strerror(errno) : "file shrank");
    got += (size_t)n;
  }
  buf[len] = '\0';
  return 0;
}

/* ------------------------------------------------------------- repr */

int etsim_conv__pt_repr_putn(ptr_buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap;
    if (etsim_grow((void **)&b->data, &cap, b->len + n + 1, 1)) return ETSIM_ENOMEM;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int etsim_conv__pt_repr_puts(ptr_buf_t *b, const char *s) {
  return etsim_conv__pt_repr_putn(b, s, strlen(s));
}

void etsim_conv__pt_repr_reset(ptr_buf_t *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

void etsim_conv__pt_repr_free(ptr_buf_t *b) {
  etsim_free(b->data);
  memset(b, 0, sizeof *b);
}

static int repr_str(ptr_buf_t *b, const char *s, size_t n) {
  /* Python picks double quotes only when the text has a ' and no ". */
  char q = '\'';
  if (memchr(s, '\'', n) && !memchr(s, '"', n)) q = '"';
  if (etsim_conv__pt_repr_putn(b, &q, 1)) return ETSIM_ENOMEM;
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char tmp[8];
    if (c == '\\') esc = "\\\\";
    else if (c == (unsigned char)q) esc = q == '\'' ? "\\'" : "\\\"";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20 || c == 0x7f) {
      snprintf(tmp, sizeof tmp, "\\x%02x", c);
      esc = tmp;
    }
    if (esc) {
      if (etsim_conv__pt_repr_putn(b, s + i - run, run) || etsim_conv__pt_repr_puts(b, esc))
        return ETSIM_ENOMEM;
      run = 0;
    } else {
      run++;
    }
  }
  if (etsim_conv__pt_repr_putn(b, s + n - run, run) || etsim_conv__pt_repr_putn(b, &q, 1))
    return ETSIM_ENOMEM;
  return 0;
}

/* Python's repr(float): the shortest digits that read back, in fixed
 * notation when the exponent is in [-4, 16), else d.ddde+XX. */
static int repr_real(ptr_buf_t *b, double d) {
  if (isnan(d)) return etsim_conv__pt_repr_puts(b, "nan");
  if (isinf(d)) return etsim_conv__pt_repr_puts(b, d < 0 ? "-inf" : "inf");
  char e[40];
  for (int p = 0; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p, d);
    if (strtod(e, NULL) == d) break;
  }
  /* e is [-]d[.ddd]e[+-]XX */
  char digits[24];
  size_t nd = 0;
  const char *p = e;
  int neg = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  digits[nd] = '\0';
  int ex = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
  char out[64];
  size_t o = 0;
  if (neg) out[o++] = '-';
  if (ex >= -4 && ex < 16) {
    if (ex >= 0) {
      for (int k = 0; k <= ex; k++) out[o++] = (size_t)k < nd ? digits[k] : '0';
      out[o++] = '.';
      if ((size_t)ex + 1 < nd)
        for (size_t k = (size_t)ex + 1; k < nd; k++) out[o++] = digits[k];
      else out[o++] = '0';
    } else {
      out[o++] = '0';
      out[o++] = '.';
      for (int k = 0; k < -ex - 1; k++) out[o++] = '0';
      for (size_t k = 0; k < nd; k++) out[o++] = digits[k];
    }
    out[o] = '\0';
  } else {
    out[o++] = digits[0];
    if (nd > 1) {
      out[o++] = '.';
      for (size_t k = 1; k < nd; k++) out[o++] = digits[k];
    }
    snprintf(out + o, sizeof out - o, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
  }
  return etsim_conv__pt_repr_puts(b, out);
}

int etsim_conv__pt_repr(ptr_buf_t *b, const ptv_t *v) {
  char tmp[32];
  switch (v->t) {
    case PTV_NULL:
      return etsim_conv__pt_repr_puts(b, "None");
    case PTV_TRUE:
      return etsim_conv__pt_repr_puts(b, "True");
    case PTV_FALSE:
      return etsim_conv__pt_repr_puts(b, "False");
    case PTV_INT: {
      /* Integers are most of the IO text: convert by hand. */
      char *e = tmp + sizeof tmp, *q = e;
      uint64_t u = v->u.i < 0 ? 0 - (uint64_t)v->u.i : (uint64_t)v->u.i;
      do *--q = (char)('0' + u % 10);
      while (u /= 10);
      if (v->u.i < 0) *--q = '-';
      return etsim_conv__pt_repr_putn(b, q, (size_t)(e - q));
    }
    case PTV_REAL:
      return repr_real(b, v->u.d);
    case PTV_STR:
      return repr_str(b, v->u.s, v->n);
    case PTV_ARR:
      if (etsim_conv__pt_repr_puts(b, "[")) return ETSIM_ENOMEM;
      for (uint32_t i = 0; i < v->n; i++)
        if ((i && etsim_conv__pt_repr_puts(b, ", ")) || etsim_conv__pt_repr(b, &v->u.items[i]))
          return ETSIM_ENOMEM;
      return etsim_conv__pt_repr_puts(b, "]");
    case PTV_OBJ:
      if (etsim_conv__pt_repr_puts(b, "{")) return ETSIM_ENOMEM;
      for (uint32_t i = 0; i < v->n; i++) {
        const ptv_t *k = &v->u.items[2 * i];
        if ((i && etsim_conv__pt_repr_puts(b, ", ")) || repr_str(b, k->u.s, k->n) ||
            etsim_conv__pt_repr_puts(b, ": ") || etsim_conv__pt_repr(b, &v->u.items[2 * i + 1]))
          return ETSIM_ENOMEM;
      }
      return etsim_conv__pt_repr_puts(b, "}");
  }
  return 0;
}

int etsim_conv__pt_repr_json_str(ptr_buf_t *b, const char *s) {
  if (etsim_conv__pt_repr_puts(b, "\"")) return ETSIM_ENOMEM;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char tmp[8];
    if (c == '"' || c == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)c;
      tmp[2] = '\0';
    } else if (c < 0x20) {
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
    } else {
      tmp[0] = (char)c;
      tmp[1] = '\0';
    }
    if (etsim_conv__pt_repr_puts(b, tmp)) return ETSIM_ENOMEM;
  }
  return etsim_conv__pt_repr_puts(b, "\"");
}
