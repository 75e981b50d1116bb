/*
 * misc.c — random numbers, atomic output files, size parsing.
 */
#include "etsim/base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* -------------------------------------------------------------------- RNG */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void etsim_rng_seed(etsim_rng_t *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t etsim_rng_next(etsim_rng_t *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double etsim_rng_uniform(etsim_rng_t *r) { return (double)(etsim_rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t etsim_rng_below(etsim_rng_t *r, uint64_t n) {
  /* Rejection sampling removes modulo bias. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = etsim_rng_next(r);
  while (x >= limit);
  return x % n;
}

double etsim_rng_normal(etsim_rng_t *r) {
  /* Box-Muller; the second value is dropped to keep the state simple. */
  double u1 = etsim_rng_uniform(r), u2 = etsim_rng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ----------------------------------------------------------- output files */

int etsim_outfile_open(etsim_outfile_t *o, const char *path, etsim_error_t *err) {
  memset(o, 0, sizeof *o);
  if (strcmp(path, "-") == 0) {
    o->fp = stdout;
    o->path = etsim_strdup("-");
    return o->path ? 0 : etsim_error_set(err, ETSIM_ENOMEM, "-: out of memory");
  }
  o->path = etsim_strdup(path);
  if (!o->path) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  int rc = etsim_tmp_name(path, &o->tmp_path, err);
  if (rc) {
    etsim_free(o->path);
    o->path = NULL;
    return rc;
  }
  FILE *fp = fopen(o->tmp_path, "wb");
  if (!fp) {
    int e = errno;
    etsim_free(o->path);
    etsim_tmp_release(o->tmp_path);
    o->path = o->tmp_path = NULL;
    return etsim_error_set(err, ETSIM_EIO, "%s: cannot create: %s", path, strerror(e));
  }
  o->fp = fp;
  return 0;
}

/* The batch: completed temporaries waiting for etsim_outfile_batch_commit. */
static int batching;
static struct pending { char *path, *tmp; } * pending;
static size_t n_pending, cap_pending;

void etsim_outfile_batch_begin(void) { batching = 1; }

static void batch_end(int keep) {
  for (size_t i = 0; i < n_pending; i++) {
    if (!keep) remove(pending[i].tmp);
    etsim_free(pending[i].path);
    etsim_tmp_release(pending[i].tmp);
  }
  etsim_free(pending);
  pending = NULL;
  n_pending = cap_pending = 0;
  batching = 0;
}

int etsim_outfile_batch_commit(etsim_error_t *err) {
  int rc = 0;
  for (size_t i = 0; i < n_pending && !rc; i++)
    if (rename(pending[i].tmp, pending[i].path) != 0)
      rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot rename into place: %s", pending[i].path,
                           strerror(errno));
  batch_end(!rc); /* after a failed rename, those not yet renamed are removed */
  return rc;
}

void etsim_outfile_batch_abort(void) { batch_end(0); }

const char *etsim_outfile_batched(const char *path) {
  for (size_t i = 0; i < n_pending; i++)
    if (strcmp(pending[i].path, path) == 0) return pending[i].tmp;
  return NULL;
}

int etsim_outfile_commit(etsim_outfile_t *o, etsim_error_t *err) {
  int rc = 0;
  FILE *fp = o->fp;
  if (!fp) return 0;
  if (!o->tmp_path) {
    if (fflush(fp) != 0 || ferror(fp))
      rc = etsim_error_set(err, ETSIM_EIO, "standard output: write error: %s",
                           strerror(errno ? errno : EIO));
  } else {
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
      rc = etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", o->path, strerror(errno));
      remove(o->tmp_path);
    } else if (batching) {
      if (etsim_grow((void **)&pending, &cap_pending, n_pending + 1, sizeof *pending)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", o->path);
        remove(o->tmp_path);
      } else {
        pending[n_pending++] = (struct pending){o->path, o->tmp_path};
        memset(o, 0, sizeof *o); /* the batch owns both names now */
        return 0;
      }
    } else if (rename(o->tmp_path, o->path) != 0) {
      rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot rename into place: %s", o->path,
                           strerror(errno));
      remove(o->tmp_path);
    }
  }
  etsim_free(o->path);
  etsim_tmp_release(o->tmp_path);
  memset(o, 0, sizeof *o);
  return rc;
}

void etsim_outfile_abort(etsim_outfile_t *o) {
  if (o->fp && o->tmp_path) {
    fclose(o->fp);
    remove(o->tmp_path);
  } else if (o->fp) {
    fflush(o->fp);
  }
  etsim_free(o->path);
  etsim_tmp_release(o->tmp_path);
  memset(o, 0, sizeof *o);
}

int etsim_outfile_write_all(const char *path, const void *data, size_t len, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  if (len && fwrite(data, 1, len, o.fp) != len) {
    int e = errno;
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", path, strerror(e ? e : EIO));
  }
  return etsim_outfile_commit(&o, err);
}

/* ------------------------------------------------------------------- UTF-8 */

size_t etsim_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return i;
    if (len > n - i) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) ||
        cp > 0x10FFFF)
      return i;
    i += len;
  }
  return n;
}

/* ------------------------------------------------------------------ sizes */

int etsim_parse_size(const char *s, uint64_t *out_bytes) {
  if (!s || !*s) return ETSIM_EINVAL;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return ETSIM_EINVAL;
  while (*end == ' ') end++;
  static const struct {
    const char *suffix;
    double mult;
  } units[] = {{"", 1},
               {"B", 1},
               {"K", 1e3},
               {"KB", 1e3},
               {"KiB", 1024.0},
               {"M", 1e6},
               {"MB", 1e6},
               {"MiB", 1048576.0},
               {"G", 1e9},
               {"GB", 1e9},
               {"GiB", 1073741824.0},
               {"T", 1e12},
               {"TB", 1e12},
               {"TiB", 1099511627776.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix) == 0 &&
        (strcmp(end, units[i].suffix) == 0 || strlen(end) > 1)) {
      double b = v * units[i].mult;
      if (b > 1.8e19 || b != floor(b)) return ETSIM_EINVAL;
      *out_bytes = (uint64_t)b;
      return 0;
    }
  }
  return ETSIM_EINVAL;
}

void etsim_qsort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, elem, cmp);
}

typedef struct {
  double v;
  size_t i;
} rank_item_t;

/* by value, then by position: a stable order, so ties are found adjacent */
static int cmp_rank_item(const void *a, const void *b) {
  const rank_item_t *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

int etsim_ranks(const double *v, size_t n, double *r) {
  rank_item_t *t = etsim_malloc(sizeof *t * (n + 1));
  if (!t) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n; i++) t[i] = (rank_item_t){v[i], i};
  etsim_qsort(t, n, sizeof *t, cmp_rank_item);
  for (size_t a = 0; a < n;) {
    size_t b = a;
    while (b + 1 < n && t[b + 1].v == t[a].v) b++;
    for (size_t k = a; k <= b; k++) r[t[k].i] = (double)(a + b) / 2.0 + 1.0;
    a = b + 1;
  }
  etsim_free(t);
  return 0;
}

double etsim_pearson(const double *a, const double *b, size_t n) {
  if (!n) return 0;
  double ma = 0, mb = 0;
  for (size_t i = 0; i < n; i++) {
    ma += a[i];
    mb += b[i];
  }
  ma /= (double)n;
  mb /= (double)n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; i++) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

void etsim_format_ranges(char *buf, size_t n, const uint32_t *ids, uint32_t k) {
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t a = 0; a < k && len < n - 24; a++) {
    uint32_t b = a;
    while (b + 1 < k && ids[b + 1] == ids[b] + 1) b++;
    len += (size_t)snprintf(buf + len, n - len, b > a ? "%s%u-%u" : "%s%u", a ? "," : "", ids[a],
                            ids[b]);
    a = b;
  }
  if (len >= n - 24) snprintf(buf + len, n - len, ",...");
}
