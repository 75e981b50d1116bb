/*
 * tiers.c — multi-level embedding memory: HBM as a cache of the hottest
 * rows over DDR and SSD.  Access skew is a Zipf law (row i of n is read
 * with probability i^-a / H(n, a)) or measured counts from a trace file.
 * Per rank the planner fills HBM, then DDR, with the rows that bring the
 * most hits per byte (water-filling on the marginal hit density, which is
 * decreasing for a sorted access curve, so a threshold search is optimal),
 * and leaves the rest on SSD.  A row-wise shard is assumed to see its
 * table's access shape over its own rows (ids hashed across shards).
 */
#include "shard_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct etsim_shard_access {
  size_t n_tables;
  size_t *off;    /* per table: counts [off[t], off[t+1]) */
  double *counts; /* descending per table */
  double *cum;    /* cum[i] = sum of counts of the table up to and including i */
  double *total;  /* per table */
  uint64_t *rows; /* table rows */
};

void etsim_shard_access_free(etsim_shard_access_t *a) {
  if (!a) return;
  etsim_free(a->off);
  etsim_free(a->counts);
  etsim_free(a->cum);
  etsim_free(a->total);
  etsim_free(a->rows);
  etsim_free(a);
}

static int cmp_desc(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? 1 : a > b ? -1 : 0;
}

int etsim_shard_access_load(const char *path, const etsim_shard_model_t *m,
                            etsim_shard_access_t **out, etsim_error_t *err) {
  FILE *fp = fopen(path, "r");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: cannot open", path);
  etsim_u64map_t map;
  etsim_u64map_init(&map);
  double *cnt = NULL;
  uint32_t *tab = NULL;
  size_t n = 0, cap = 0, tcap = 0, line = 0;
  etsim_shard_access_t *a = NULL;
  int rc = 0;
  char buf[512];
  while (fgets(buf, sizeof buf, fp)) {
    line++;
    char *p = buf;
    while (isspace((unsigned char)*p)) p++;
    if (!*p || *p == '#') continue;
    char tname[128];
    unsigned long long row;
    double c = 1;
    int got = sscanf(p, "%127s %llu %lf", tname, &row, &c);
    size_t t = SIZE_MAX;
    char *end;
    unsigned long long ti = strtoull(tname, &end, 10);
    if (*end == 0 && ti < m->n_tables) t = (size_t)ti;
    for (size_t k = 0; t == SIZE_MAX && *end && k < m->n_tables; k++)
      if (strcmp(m->tables[k].name, tname) == 0) t = k;
    if (got < 2 || t == SIZE_MAX || row >= m->tables[t].rows || !(c > 0) || !isfinite(c) ||
        c > 1e15) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%zu: expected \"TABLE ROW [COUNT]\" with a table of model %s (index "
                           "or name), a row below its row count and a positive count",
                           path, line, m->name);
      goto done;
    }
    uint64_t key = (uint64_t)t << 40 | row;
    uint32_t idx = (uint32_t)n, old;
    int r = etsim_u64map_put(&map, key, idx, &old);
    if (r < 0) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    if (r == 0) { /* seen before */
      cnt[old] += c;
      continue;
    }
    if (etsim_grow((void **)&cnt, &cap, n + 1, sizeof *cnt) ||
        etsim_grow((void **)&tab, &tcap, n + 1, sizeof *tab)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    cnt[n] = c;
    tab[n++] = (uint32_t)t;
  }
  if (ferror(fp)) {
    rc = etsim_error_set(err, ETSIM_EIO, "%s: read error", path);
    goto done;
  }
  a = etsim_calloc(1, sizeof *a);
  if (!a) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  size_t T = m->n_tables;
  a->n_tables = T;
  a->off = etsim_calloc(T + 1, sizeof *a->off);
  a->counts = etsim_malloc((n ? n : 1) * sizeof *a->counts);
  a->cum = etsim_malloc((n ? n : 1) * sizeof *a->cum);
  a->total = etsim_calloc(T, sizeof *a->total);
  a->rows = etsim_malloc(T * sizeof *a->rows);
  if (!a->off || !a->counts || !a->cum || !a->total || !a->rows) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) a->off[tab[i] + 1]++;
  for (size_t t = 0; t < T; t++) a->off[t + 1] += a->off[t];
  size_t *pos = etsim_malloc((T ? T : 1) * sizeof *pos);
  if (!pos) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  memcpy(pos, a->off, T * sizeof *pos);
  for (size_t i = 0; i < n; i++) a->counts[pos[tab[i]]++] = cnt[i];
  etsim_free(pos);
  for (size_t t = 0; t < T; t++) {
    a->rows[t] = m->tables[t].rows;
    size_t lo = a->off[t], k = a->off[t + 1] - lo;
    etsim_qsort(a->counts + lo, k, sizeof *a->counts, cmp_desc);
    double s = 0;
    for (size_t i = 0; i < k; i++) a->cum[lo + i] = (s += a->counts[lo + i]);
    a->total[t] = s;
  }
done:
  fclose(fp);
  etsim_u64map_free(&map);
  etsim_free(cnt);
  etsim_free(tab);
  if (rc) {
    etsim_shard_access_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* H(n, a) = sum_{i=1..n} i^-a: exact up to 4096 terms, then the midpoint
 * integral, which is within 1e-9 relative beyond there. */
double etsim_shard__harmonic(double n, double a) {
  if (n <= 0) return 0;
  double s = 0, lim = n < 4096 ? floor(n) : 4096;
  for (double i = 1; i <= lim; i++) s += pow(i, -a);
  if (n > lim) {
    double x0 = lim + 0.5, x1 = n + 0.5;
    s += fabs(a - 1) < 1e-12 ? log(x1 / x0) : (pow(x1, 1 - a) - pow(x0, 1 - a)) / (1 - a);
  } else if (n > lim - 1e-9 && n != lim) {
    s += (n - lim) * pow(lim + 1, -a);
  }
  return s;
}

static int has_counts(const etsim_shard_tiers_t *k, size_t t) {
  return k->access && t < k->access->n_tables && k->access->total[t] > 0;
}

double etsim_shard_hit_fraction(const etsim_shard_tiers_t *k, const etsim_shard_model_t *m,
                                size_t t, double f) {
  if (f <= 0) return 0;
  if (f >= 1) return 1;
  double N = (double)m->tables[t].rows, rows = f * N;
  if (has_counts(k, t)) {
    const etsim_shard_access_t *a = k->access;
    size_t lo = a->off[t], n = a->off[t + 1] - lo;
    if (rows >= (double)n) return 1;
    size_t i = (size_t)rows;
    double below = i ? a->cum[lo + i - 1] : 0;
    return (below + (rows - (double)i) * a->counts[lo + i]) / a->total[t];
  }
  double hN = etsim_shard__harmonic(N, k->zipf_alpha);
  return etsim_shard__harmonic(rows, k->zipf_alpha) / hN;
}

/* Lookups per iteration that reach shard s (ids of the global batch for
 * model-parallel types, of the local batch for DP). */
static double shard_ids(const etsim_shard__ctx_t *c, int ty, const etsim_shard_t *s) {
  const etsim_shard_table_t *x = &c->m->tables[s->table];
  double ids = c->B * x->pooling;
  if (ty == ETSIM_SHARD_DP) return ids;
  ids *= (double)c->P;
  if (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_TWRW) ids *= (double)s->rows / (double)x->rows;
  return ids;
}

double etsim_shard__shard_hits(const etsim_shard__ctx_t *c, const etsim_shard_t *s, double rows) {
  if (!s->rows) return 1;
  return etsim_shard_hit_fraction(&c->o->tiers, c->m, s->table, rows / (double)s->rows);
}

/* Rows of shard s worth caching at marginal hits-per-byte threshold tau. */
static double rows_at(const etsim_shard__ctx_t *c, const etsim_shard_t *s, double ids, double hN,
                      double rb, double tau) {
  const etsim_shard_tiers_t *k = &c->o->tiers;
  double R = (double)s->rows, N = (double)c->m->tables[s->table].rows;
  if (R <= 0 || ids <= 0) return 0;
  double rows;
  if (has_counts(k, s->table)) {
    const etsim_shard_access_t *a = k->access;
    size_t lo = a->off[s->table], n = a->off[s->table + 1] - lo;
    double cstar = tau * a->total[s->table] * R * rb / (ids * N);
    size_t l = 0, h = n; /* rows with count >= cstar (counts descending) */
    while (l < h) {
      size_t mid = l + (h - l) / 2;
      if (a->counts[lo + mid] >= cstar) l = mid + 1;
      else h = mid;
    }
    rows = (double)l * R / N;
    if (cstar <= 0) rows = R;
  } else if (k->zipf_alpha < 1e-9) {
    rows = ids / (R * rb) >= tau ? R : 0;
  } else {
    double xN = pow(ids * N / (tau * R * rb * hN), 1 / k->zipf_alpha);
    rows = xN * R / N;
  }
  return rows < R ? floor(rows) : R;
}

typedef struct {
  etsim_shard_t *s;
  double ids, hN, rb;
} tcand_t;

/* Rows per shard (into out[]) filling `budget` bytes by decreasing
 * marginal hits per byte. */
static void fill(const etsim_shard__ctx_t *c, const tcand_t *v, size_t n, double budget,
                 double *out) {
  double lo = -80, hi = 80; /* log10 of tau */
  for (int it = 0; it < 90; it++) {
    double mid = (lo + hi) / 2, tau = pow(10, mid), used = 0;
    for (size_t i = 0; i < n; i++)
      used += rows_at(c, v[i].s, v[i].ids, v[i].hN, v[i].rb, tau) * v[i].rb;
    if (used > budget) lo = mid;
    else hi = mid;
  }
  double tau = pow(10, hi);
  for (size_t i = 0; i < n; i++) out[i] = rows_at(c, v[i].s, v[i].ids, v[i].hN, v[i].rb, tau);
}

int etsim_shard__place_tiers(const etsim_shard__ctx_t *c, etsim_shard_plan_t *p,
                             etsim_error_t *err) {
  size_t P = p->n_ranks;
  p->tiered = c->tiered;
  if (!c->tiered) {
    for (size_t i = 0; i < p->n_shards; i++) {
      p->shards[i].hbm_rows = p->shards[i].rows;
      p->shards[i].ddr_rows = 0;
      p->shards[i].hbm_hit = p->shards[i].ddr_hit = 1;
    }
    return 0;
  }
  size_t *cnt = etsim_calloc(P + 1, sizeof *cnt);
  size_t *idx = etsim_malloc((p->n_shards ? p->n_shards : 1) * sizeof *idx);
  tcand_t *v = etsim_malloc((p->n_shards ? p->n_shards : 1) * sizeof *v);
  double *r1 = etsim_malloc((p->n_shards ? p->n_shards : 1) * 2 * sizeof *r1);
  double *hN = etsim_malloc((c->m->n_tables ? c->m->n_tables : 1) * sizeof *hN);
  int rc = 0;
  if (!cnt || !idx || !v || !r1 || !hN) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t t = 0; t < c->m->n_tables; t++)
    hN[t] = etsim_shard__harmonic((double)c->m->tables[t].rows, c->o->tiers.zipf_alpha);
  for (size_t i = 0; i < p->n_shards; i++) cnt[p->shards[i].rank + 1]++;
  for (size_t r = 0; r < P; r++) cnt[r + 1] += cnt[r];
  {
    size_t *pos = etsim_malloc((P ? P : 1) * sizeof *pos);
    if (!pos) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    memcpy(pos, cnt, P * sizeof *pos);
    for (size_t i = 0; i < p->n_shards; i++) idx[pos[p->shards[i].rank]++] = i;
    etsim_free(pos);
  }
  double ddr = c->o->tiers.ddr_gb * 1e9, ssd = c->o->tiers.ssd_gb * 1e9;
  for (size_t r = 0; r < P && !rc; r++) {
    double fixed = 0, weights = 0;
    size_t n = 0;
    for (size_t k = cnt[r]; k < cnt[r + 1]; k++) {
      etsim_shard_t *s = &p->shards[idx[k]];
      const etsim_shard_table_t *x = &c->m->tables[s->table];
      int ty = p->table_type[s->table];
      double rb = etsim_shard__row_bytes(c, x, s->cols);
      fixed += (double)etsim_shard__io_bytes(c, ty, x, s->cols);
      s->hbm_rows = s->rows;
      s->ddr_rows = 0;
      s->hbm_hit = s->ddr_hit = 1;
      if (ty == ETSIM_SHARD_DP) { /* replicas stay whole in HBM */
        fixed += (double)s->rows * rb;
        continue;
      }
      weights += (double)s->rows * rb;
      v[n++] = (tcand_t){s, shard_ids(c, ty, s), hN[s->table], rb};
    }
    double hbm = (double)c->cap - fixed;
    if (hbm < 0 || weights > hbm + ddr + ssd) {
      rc = etsim_error_set(err, ETSIM_ERANGE,
                           "%s: rank %zu needs %.2f GB for buffers and replicated tables and "
                           "%.2f GB of sharded rows, more than its %.2f GB HBM + %.2f GB DDR + "
                           "%.2f GB SSD",
                           c->m->name, r, fixed / 1e9, weights / 1e9, (double)c->cap / 1e9,
                           ddr / 1e9, ssd / 1e9);
      break;
    }
    if (weights > hbm) {
      double *h = r1, *hd = r1 + n;
      fill(c, v, n, hbm, h);
      if (ddr > 0) fill(c, v, n, hbm + ddr, hd);
      else memcpy(hd, h, n * sizeof *hd);
      double on_ssd = 0;
      for (size_t i = 0; i < n; i++) {
        if (hd[i] < h[i]) hd[i] = h[i];
        v[i].s->hbm_rows = (uint64_t)h[i];
        v[i].s->ddr_rows = (uint64_t)(hd[i] - h[i]);
        v[i].s->hbm_hit = etsim_shard__shard_hits(c, v[i].s, h[i]);
        v[i].s->ddr_hit = etsim_shard__shard_hits(c, v[i].s, hd[i]);
        on_ssd += ((double)v[i].s->rows - hd[i]) * v[i].rb;
      }
      if (on_ssd > ssd * (1 + 1e-9) + 1) {
        rc = etsim_error_set(err, ETSIM_ERANGE,
                             "%s: rank %zu: %.2f GB of rows left for SSD, which holds %.2f GB",
                             c->m->name, r, on_ssd / 1e9, ssd / 1e9);
        break;
      }
    }
    for (size_t k = cnt[r]; k < cnt[r + 1]; k++) {
      etsim_shard_t *s = &p->shards[idx[k]];
      const etsim_shard_table_t *x = &c->m->tables[s->table];
      int ty = p->table_type[s->table];
      s->hbm_bytes = (uint64_t)((double)s->hbm_rows * etsim_shard__row_bytes(c, x, s->cols)) +
                     etsim_shard__io_bytes(c, ty, x, s->cols);
    }
  }
done:
  etsim_free(cnt);
  etsim_free(idx);
  etsim_free(v);
  etsim_free(r1);
  etsim_free(hN);
  if (!rc) etsim_shard__sum_loads(p);
  return rc;
}
