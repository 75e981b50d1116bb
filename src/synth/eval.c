/*
 * eval.c — how close generated DAGs are to real ones, and the fitted
 * layered random-DAG baseline.
 *
 * Metrics (docs/synth.md): validity; W1 distances of the number of layers,
 * nodes and edges; Gaussian-kernel MMD^2 (sigma = 1) between per-graph
 * normalised histograms of layer sizes, in-degrees and out-degrees; total
 * variation between attribute marginals; and the surrogate protocol: a
 * ridge regressor on graph features trained on one set and tested on the
 * real set (Pearson, Spearman, MAE).
 */
#include "synth/synth_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u32p(const void *a, const void *b) {
  const uint32_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

int etsim_synth_dag_valid(const etsim_synth_data_t *d, const etsim_synth_dag_t *g) {
  if (g->n_nodes == 0) return 0;
  uint32_t *pairs = etsim_malloc(sizeof(uint32_t) * 2 * (g->n_edges + 1));
  uint32_t *layer = etsim_malloc(sizeof(uint32_t) * (g->n_nodes + 1));
  if (!pairs || !layer) {
    etsim_free(pairs);
    etsim_free(layer);
    return ETSIM_ENOMEM; /* not "invalid": a metric would count it wrong */
  }
  int ok = 1;
  for (uint32_t k = 0; ok && k < g->n_edges; k++) {
    if (g->src[k] >= g->n_nodes || g->dst[k] >= g->n_nodes || g->src[k] == g->dst[k]) ok = 0;
    else {
      pairs[2 * k] = g->src[k];
      pairs[2 * k + 1] = g->dst[k];
    }
  }
  if (ok && g->n_edges) {
    etsim_qsort(pairs, g->n_edges, 2 * sizeof(uint32_t), cmp_u32p);
    for (uint32_t k = 1; k < g->n_edges; k++)
      if (pairs[2 * k] == pairs[2 * k - 2] && pairs[2 * k + 1] == pairs[2 * k - 1]) ok = 0;
  }
  if (ok) {
    int L = etsim_synth_layers(g, layer, NULL);
    if (L == ETSIM_ENOMEM) ok = L;
    else if (L < 0) ok = 0;
  }
  for (uint32_t v = 0; ok > 0 && v < g->n_nodes; v++)
    for (uint32_t c = 0; c < d->n_ch; c++)
      if (d->n_cls[c] && g->x[(size_t)v * d->n_ch + c] >= d->n_cls[c]) ok = 0;
  etsim_free(pairs);
  etsim_free(layer);
  return ok;
}

int etsim_synth_attr_valid(const etsim_synth_data_t *d, const etsim_synth_dag_t *g) {
  if (d->kind != ETSIM_SYNTH_KIND_TRACE || d->n_ch != ETSIM_SYNTH_TRACE_CH) return 1;
  for (uint32_t v = 0; v < g->n_nodes; v++)
    if (!etsim_synth__attr_rule_ok(g->x + ETSIM_SYNTH_TRACE_CH * (size_t)v)) return 0;
  return 1;
}

/* ------------------------------------------------------------ statistics */

typedef struct {
  double *nodes, *edges, *layers; /* per graph */
  /* per-graph normalised histograms, rows of width B */
  double *h_size, *h_in, *h_out;
  double *attr; /* pooled marginals, sum n_cls */
  size_t n;
  int valid_n, attr_ok_n;
} stats_t;

#define HB 64 /* histogram bins; the last collects everything above */

static void stats_free(stats_t *s) {
  etsim_free(s->nodes);
  etsim_free(s->edges);
  etsim_free(s->layers);
  etsim_free(s->h_size);
  etsim_free(s->h_in);
  etsim_free(s->h_out);
  etsim_free(s->attr);
}

static int stats_build(const etsim_synth_data_t *d, uint32_t sum_cls, const uint32_t *n_cls,
                       uint32_t n_ch, stats_t *s) {
  memset(s, 0, sizeof *s);
  size_t n = d->n_graphs;
  s->n = n;
  s->nodes = etsim_calloc(n + 1, sizeof(double));
  s->edges = etsim_calloc(n + 1, sizeof(double));
  s->layers = etsim_calloc(n + 1, sizeof(double));
  s->h_size = etsim_calloc(n * HB + 1, sizeof(double));
  s->h_in = etsim_calloc(n * HB + 1, sizeof(double));
  s->h_out = etsim_calloc(n * HB + 1, sizeof(double));
  s->attr = etsim_calloc(sum_cls + 1, sizeof(double));
  if (!s->nodes || !s->edges || !s->layers || !s->h_size || !s->h_in || !s->h_out || !s->attr)
    return ETSIM_ENOMEM;
  uint32_t *layer = NULL, *cnt = NULL, *din = NULL, *dout = NULL;
  size_t cl = 0, cc = 0, ci = 0, co = 0;
  for (size_t i = 0; i < n; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    s->nodes[i] = g->n_nodes;
    s->edges[i] = g->n_edges;
    int valid = etsim_synth_dag_valid(d, g);
    if (valid < 0) goto oom;
    s->valid_n += valid;
    if (d->kind == ETSIM_SYNTH_KIND_TRACE && d->n_ch == ETSIM_SYNTH_TRACE_CH)
      s->attr_ok_n += etsim_synth_attr_valid(d, g);
    if (!valid) continue;
    if (etsim_grow((void **)&layer, &cl, g->n_nodes + 1, sizeof *layer) ||
        etsim_grow((void **)&din, &ci, g->n_nodes + 1, sizeof *din) ||
        etsim_grow((void **)&dout, &co, g->n_nodes + 1, sizeof *dout))
      goto oom;
    int L = etsim_synth_layers(g, layer, NULL);
    if (L < 0) goto oom; /* valid, so acyclic: only out of memory */
    s->layers[i] = L;
    if (etsim_grow((void **)&cnt, &cc, (size_t)L + 2, sizeof *cnt)) goto oom;
    memset(cnt, 0, sizeof *cnt * ((size_t)L + 2));
    memset(din, 0, sizeof *din * g->n_nodes);
    memset(dout, 0, sizeof *dout * g->n_nodes);
    for (uint32_t v = 0; v < g->n_nodes; v++) cnt[layer[v]]++;
    for (uint32_t k = 0; k < g->n_edges; k++) {
      din[g->dst[k]]++;
      dout[g->src[k]]++;
    }
    double *hs = s->h_size + i * HB, *hi = s->h_in + i * HB, *ho = s->h_out + i * HB;
    for (int l = 1; l <= L; l++) hs[cnt[l] < HB ? cnt[l] : HB - 1] += 1.0 / L;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      hi[din[v] < HB ? din[v] : HB - 1] += 1.0 / g->n_nodes;
      ho[dout[v] < HB ? dout[v] : HB - 1] += 1.0 / g->n_nodes;
      uint32_t off = 0;
      for (uint32_t c = 0; c < n_ch && c < d->n_ch; c++) {
        uint32_t x = g->x[(size_t)v * d->n_ch + c];
        if (x < n_cls[c]) s->attr[off + x] += 1;
        off += n_cls[c];
      }
    }
  }
  etsim_free(layer);
  etsim_free(cnt);
  etsim_free(din);
  etsim_free(dout);
  return 0;
oom:
  etsim_free(layer);
  etsim_free(cnt);
  etsim_free(din);
  etsim_free(dout);
  return ETSIM_ENOMEM;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* W1 between two empirical distributions: integral of |F_a - F_b| into
 * *out (NaN when one is empty); 0 or ETSIM_ENOMEM. */
static int w1(const double *a, size_t na, const double *b, size_t nb, double *out) {
  *out = NAN;
  if (!na || !nb) return 0;
  double *x = etsim_malloc(sizeof(double) * na), *y = etsim_malloc(sizeof(double) * nb);
  if (!x || !y) {
    etsim_free(x);
    etsim_free(y);
    return ETSIM_ENOMEM;
  }
  memcpy(x, a, sizeof(double) * na);
  memcpy(y, b, sizeof(double) * nb);
  etsim_qsort(x, na, sizeof *x, cmp_d);
  etsim_qsort(y, nb, sizeof *y, cmp_d);
  size_t i = 0, j = 0;
  double cur = fmin(x[0], y[0]), s = 0;
  while (i < na || j < nb) {
    double nx = i < na ? x[i] : INFINITY, ny = j < nb ? y[j] : INFINITY;
    double nxt = fmin(nx, ny);
    s += fabs((double)i / na - (double)j / nb) * (nxt - cur);
    cur = nxt;
    if (nx <= ny) i++;
    else j++;
  }
  etsim_free(x);
  etsim_free(y);
  *out = s;
  return 0;
}

static double kern(const double *a, const double *b) {
  double s = 0;
  for (int k = 0; k < HB; k++) s += (a[k] - b[k]) * (a[k] - b[k]);
  return exp(-s / 2.0);
}

/* Unbiased-free (V-statistic) MMD^2 between rows of X (n) and Y (m). */
static double mmd2(const double *X, size_t n, const double *Y, size_t m) {
  if (!n || !m) return NAN;
  double kxx = 0, kyy = 0, kxy = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) kxx += kern(X + i * HB, X + j * HB);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < m; j++) kyy += kern(Y + i * HB, Y + j * HB);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < m; j++) kxy += kern(X + i * HB, Y + j * HB);
  return kxx / ((double)n * n) + kyy / ((double)m * m) - 2 * kxy / ((double)n * m);
}

/* ------------------------------------------------------------- surrogate */

static int features(const etsim_synth_data_t *d, size_t i, uint32_t n_ch, const uint32_t *n_cls,
                    double *f, int nf) {
  const etsim_synth_dag_t *g = &d->g[i];
  memset(f, 0, sizeof(double) * nf);
  uint32_t *layer = etsim_malloc(sizeof(uint32_t) * (g->n_nodes + 1));
  if (!layer) return ETSIM_ENOMEM;
  int L = etsim_synth_layers(g, layer, NULL);
  etsim_free(layer);
  if (L == ETSIM_ENOMEM) return L;
  if (L < 0) L = 0;
  int k = 0;
  f[k++] = 1;
  f[k++] = log1p(g->n_nodes);
  f[k++] = log1p(g->n_edges);
  f[k++] = log1p(L);
  f[k++] = g->n_nodes ? (double)g->n_edges / g->n_nodes : 0;
  uint32_t off = 0;
  for (uint32_t c = 0; c < n_ch && c < d->n_ch; c++) {
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      uint32_t x = g->x[(size_t)v * d->n_ch + c];
      if (x < n_cls[c]) f[k + off + x] += 1;
    }
    off += n_cls[c];
  }
  for (uint32_t q = 0; q < off; q++) f[k + q] = log1p(f[k + q]);
  return 0;
}

/* Ridge regression on features of `tr`, predictions for `te`. */
static int ridge(const etsim_synth_data_t *tr, const etsim_synth_data_t *te, uint32_t n_ch,
                 const uint32_t *n_cls, int ylog, double *pred) {
  int nf = 5;
  for (uint32_t c = 0; c < n_ch; c++) nf += (int)n_cls[c];
  double *A = etsim_calloc((size_t)nf * nf, sizeof(double));
  double *bv = etsim_calloc((size_t)nf, sizeof(double));
  double *f = etsim_calloc((size_t)nf, sizeof(double));
  int rc = 0;
  if (!A || !bv || !f) {
    rc = ETSIM_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < tr->n_graphs; i++) {
    if ((rc = features(tr, i, n_ch, n_cls, f, nf))) goto out;
    double y = ylog ? log(tr->g[i].y) : tr->g[i].y;
    for (int a = 0; a < nf; a++) {
      bv[a] += f[a] * y;
      for (int b = 0; b < nf; b++) A[a * nf + b] += f[a] * f[b];
    }
  }
  for (int a = 0; a < nf; a++) A[a * nf + a] += 1e-1 + 1e-6 * A[a * nf + a];
  /* Cholesky: A = L L^T in place (lower). */
  for (int j = 0; j < nf; j++) {
    double s = A[j * nf + j];
    for (int k = 0; k < j; k++) s -= A[j * nf + k] * A[j * nf + k];
    if (s <= 0) {
      rc = ETSIM_EINTERNAL;
      goto out;
    }
    A[j * nf + j] = sqrt(s);
    for (int i = j + 1; i < nf; i++) {
      double t = A[i * nf + j];
      for (int k = 0; k < j; k++) t -= A[i * nf + k] * A[j * nf + k];
      A[i * nf + j] = t / A[j * nf + j];
    }
  }
  for (int i = 0; i < nf; i++) { /* L z = b */
    double t = bv[i];
    for (int k = 0; k < i; k++) t -= A[i * nf + k] * bv[k];
    bv[i] = t / A[i * nf + i];
  }
  for (int i = nf - 1; i >= 0; i--) { /* L^T w = z */
    double t = bv[i];
    for (int k = i + 1; k < nf; k++) t -= A[k * nf + i] * bv[k];
    bv[i] = t / A[i * nf + i];
  }
  for (size_t i = 0; i < te->n_graphs; i++) {
    if ((rc = features(te, i, n_ch, n_cls, f, nf))) goto out;
    double y = 0;
    for (int a = 0; a < nf; a++) y += f[a] * bv[a];
    pred[i] = ylog ? exp(y > 50 ? 50 : y) : y;
  }
out:
  etsim_free(A);
  etsim_free(bv);
  etsim_free(f);
  return rc;
}

/* The BiMPNN surrogate trained on tr (a seeded 10% held out for model
 * selection) with the vocabulary n_cls, predictions for te. */
static int fit_predict(const etsim_synth_data_t *tr, const etsim_synth_data_t *te,
                       const uint32_t *n_cls, const etsim_synth_surrogate_config_t *sc,
                       double *pred, etsim_error_t *err) {
  etsim_synth_data_t t = *tr, e = *te;
  memcpy(t.n_cls, n_cls, sizeof(uint32_t) * tr->n_ch);
  memcpy(e.n_cls, n_cls, sizeof(uint32_t) * tr->n_ch);
  etsim_synth_surrogate_t *s;
  int rc = etsim_synth_surrogate_fit(&t, NULL, NULL, sc, NULL, NULL, &s, err);
  if (rc) return rc;
  rc = etsim_synth_surrogate_predict(s, &e, pred, err);
  etsim_synth_surrogate_free(s);
  return rc;
}

static int score(const etsim_synth_data_t *real, const double *pred, double *pe, double *sp,
                 double *mae) {
  size_t n = real->n_graphs;
  double *y = etsim_malloc(sizeof(double) * (n + 1));
  if (!y) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n; i++) y[i] = real->g[i].y;
  etsim_synth_scores_t sc;
  int rc = etsim_synth_score(pred, y, n, &sc);
  etsim_free(y);
  *pe = sc.pearson;
  *sp = sc.spearman;
  *mae = sc.mae;
  return rc;
}

int etsim_synth_evaluate(const etsim_synth_data_t *real, const etsim_synth_data_t *gen,
                         const etsim_synth_data_t *real_train, int surrogate,
                         const etsim_synth_surrogate_config_t *sc, etsim_synth_eval_t *out,
                         etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  if (!real->n_graphs || !gen->n_graphs)
    return etsim_error_set(err, ETSIM_EINVAL, "need at least one real and one generated graph");
  if (real->kind != gen->kind || real->n_ch != gen->n_ch)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "real and generated DAGs have different category "
                           "layouts (%u vs %u channels)",
                           real->n_ch, gen->n_ch);
  uint32_t n_ch = real->n_ch, n_cls[ETSIM_SYNTH_MAX_CH], sum = 0;
  for (uint32_t c = 0; c < n_ch; c++) {
    n_cls[c] = real->n_cls[c] > gen->n_cls[c] ? real->n_cls[c] : gen->n_cls[c];
    if (real_train && real_train->n_ch == n_ch && real_train->n_cls[c] > n_cls[c])
      n_cls[c] = real_train->n_cls[c];
    sum += n_cls[c];
  }
  stats_t R = {0}, G = {0}; /* both freed when either build fails */
  int rc = stats_build(real, sum, n_cls, n_ch, &R);
  if (!rc) rc = stats_build(gen, sum, n_cls, n_ch, &G);
  if (rc) {
    stats_free(&R);
    stats_free(&G);
    return etsim_error_set(err, rc, "out of memory");
  }
  out->n_real = real->n_graphs;
  out->n_gen = gen->n_graphs;
  out->n_ch = n_ch;
  out->validity = (double)G.valid_n / gen->n_graphs;
  out->attr_validity =
      real->kind == ETSIM_SYNTH_KIND_TRACE ? (double)G.attr_ok_n / gen->n_graphs : 1.0;
  if (!rc) rc = w1(R.layers, R.n, G.layers, G.n, &out->w1_layers);
  if (!rc) rc = w1(R.nodes, R.n, G.nodes, G.n, &out->w1_nodes);
  if (!rc) rc = w1(R.edges, R.n, G.edges, G.n, &out->w1_edges);
  if (rc) {
    stats_free(&R);
    stats_free(&G);
    return etsim_error_set(err, rc, "out of memory");
  }
  out->mmd_layer_size = mmd2(R.h_size, R.n, G.h_size, G.n);
  out->mmd_in_degree = mmd2(R.h_in, R.n, G.h_in, G.n);
  out->mmd_out_degree = mmd2(R.h_out, R.n, G.h_out, G.n);
  uint32_t off = 0;
  for (uint32_t c = 0; c < n_ch; c++) {
    double tr = 0, tg = 0, tv = 0;
    for (uint32_t k = 0; k < n_cls[c]; k++) {
      tr += R.attr[off + k];
      tg += G.attr[off + k];
    }
    for (uint32_t k = 0; k < n_cls[c]; k++)
      tv += fabs(R.attr[off + k] / (tr > 0 ? tr : 1) - G.attr[off + k] / (tg > 0 ? tg : 1));
    out->attr_tv[c] = tv / 2;
    off += n_cls[c];
  }
  stats_free(&R);
  stats_free(&G);
  if (!surrogate) return 0;
  /* Surrogate: labels must be usable; log scale when all positive. */
  int ylog = 1;
  for (size_t i = 0; i < real->n_graphs; i++) ylog &= real->g[i].y > 0;
  for (size_t i = 0; i < gen->n_graphs; i++) ylog &= gen->g[i].y > 0;
  if (real_train)
    for (size_t i = 0; i < real_train->n_graphs; i++) ylog &= real_train->g[i].y > 0;
  double *pred = etsim_malloc(sizeof(double) * real->n_graphs);
  if (!pred) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* Only valid generated graphs train the surrogate. */
  etsim_synth_data_t gv = *gen;
  gv.g = etsim_malloc(sizeof *gv.g * (gen->n_graphs + 1));
  if (!gv.g) {
    etsim_free(pred);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  gv.n_graphs = 0;
  for (size_t i = 0; i < gen->n_graphs; i++) {
    int valid = etsim_synth_dag_valid(gen, &gen->g[i]);
    if (valid < 0) {
      etsim_free(gv.g);
      etsim_free(pred);
      return etsim_error_set(err, valid, "out of memory");
    }
    if (valid) gv.g[gv.n_graphs++] = gen->g[i];
  }
  rc = 0;
  etsim_synth_surrogate_config_t dc;
  if (!sc) {
    etsim_synth_surrogate_config_default(&dc);
    sc = &dc;
  }
  int bim = surrogate == ETSIM_SYNTH_SURROGATE_BIMPNN;
  if (gv.n_graphs) {
    gv.n_ch = n_ch;
    memcpy(gv.n_cls, n_cls, sizeof(uint32_t) * n_ch);
    rc = bim ? fit_predict(&gv, real, n_cls, sc, pred, err)
             : ridge(&gv, real, n_ch, n_cls, ylog, pred);
    if (!rc) rc = score(real, pred, &out->gen_pearson, &out->gen_spearman, &out->gen_mae);
    out->has_surrogate = !rc;
  }
  if (!rc && real_train && real_train->n_graphs && real_train->n_ch == n_ch) {
    rc = bim ? fit_predict(real_train, real, n_cls, sc, pred, err)
             : ridge(real_train, real, n_ch, n_cls, ylog, pred);
    if (!rc) rc = score(real, pred, &out->real_pearson, &out->real_spearman, &out->real_mae);
    out->has_real_surrogate = !rc;
  }
  etsim_free(gv.g);
  etsim_free(pred);
  if (rc && bim) return rc;
  if (rc) return etsim_error_set(err, rc, "surrogate regression failed");
  return 0;
}

/* ------------------------------------------------------------ baseline */

int etsim_synth_baseline(const etsim_synth_data_t *fit, size_t n, uint64_t seed,
                         etsim_synth_data_t *out, etsim_error_t *err) {
  etsim_synth_model_t *m;
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  int rc = etsim_synth__model_new(fit, &cfg, &m, err); /* marginals, d_in */
  if (rc) return rc;
  /* Empirical L, first-layer sizes, other layer sizes. */
  size_t nl = 0, n1 = 0, no = 0, cl = 0, c1 = 0, co = 0;
  uint32_t *Ls = NULL, *first = NULL, *other = NULL, *layer = NULL, *cnt = NULL;
  size_t cly = 0, ccn = 0;
  for (size_t i = 0; i < fit->n_graphs; i++) {
    const etsim_synth_dag_t *g = &fit->g[i];
    if (etsim_grow((void **)&layer, &cly, g->n_nodes + 1, sizeof *layer)) goto oom;
    int L = etsim_synth_layers(g, layer, NULL);
    if (L < 0) goto oom; /* loaded data is acyclic: only out of memory */
    if (etsim_grow((void **)&cnt, &ccn, (size_t)L + 2, sizeof *cnt) ||
        etsim_grow((void **)&Ls, &cl, nl + 1, sizeof *Ls))
      goto oom;
    Ls[nl++] = (uint32_t)L;
    memset(cnt, 0, sizeof *cnt * ((size_t)L + 2));
    for (uint32_t v = 0; v < g->n_nodes; v++) cnt[layer[v]]++;
    if (etsim_grow((void **)&first, &c1, n1 + 1, sizeof *first)) goto oom;
    first[n1++] = cnt[1];
    for (int l = 2; l <= L; l++) {
      if (etsim_grow((void **)&other, &co, no + 1, sizeof *other)) goto oom;
      other[no++] = cnt[l];
    }
  }
  etsim_synth_data_init(out);
  out->kind = fit->kind;
  memcpy(out->bin_sum, fit->bin_sum, sizeof out->bin_sum); /* values of bins */
  memcpy(out->bin_n, fit->bin_n, sizeof out->bin_n);
  out->n_ch = fit->n_ch;
  out->n_labels = fit->n_labels;
  memcpy(out->n_cls, fit->n_cls, sizeof out->n_cls);
  etsim_rng_t r;
  etsim_rng_seed(&r, seed);
  double extra = m->mean_indeg - 1;
  for (size_t i = 0; i < n; i++) {
    uint32_t L = Ls[etsim_rng_below(&r, nl)];
    uint32_t sizes_cap = L + 1;
    uint32_t *sz = etsim_malloc(sizeof *sz * sizes_cap);
    if (!sz) {
      etsim_synth_data_free(out);
      goto oom;
    }
    uint32_t N = 0;
    for (uint32_t l = 1; l <= L; l++) {
      sz[l] = l == 1 || !no ? first[etsim_rng_below(&r, n1)] : other[etsim_rng_below(&r, no)];
      N += sz[l];
    }
    etsim_synth_dag_t g = {0};
    g.n_nodes = N;
    const etsim_synth_dag_t *lab = &fit->g[etsim_rng_below(&r, fit->n_graphs)];
    g.y = lab->y;
    g.y2 = lab->y2;
    g.x = etsim_malloc(sizeof(uint32_t) * ((size_t)N * fit->n_ch + 1));
    size_t ecap = 0, dcap = 0;
    if (!g.x) {
      etsim_free(sz);
      etsim_synth_data_free(out);
      goto oom;
    }
    for (uint32_t v = 0; v < N; v++) {
      uint32_t off = 0;
      for (uint32_t c = 0; c < fit->n_ch; c++) {
        g.x[(size_t)v * fit->n_ch + c] =
            (uint32_t)etsim_synth__draw(&r, m->marg + off, (int)fit->n_cls[c]);
        off += fit->n_cls[c];
      }
    }
    uint32_t start = 0, prev_start = 0;
    int bad = 0;
    for (uint32_t l = 1; l <= L && !bad; l++) {
      for (uint32_t v = start; v < start + sz[l] && l > 1; v++) {
        /* One parent in the previous layer, Poisson(extra) anywhere. */
        uint32_t par[64];
        int np = 0;
        par[np++] = prev_start + (uint32_t)etsim_rng_below(&r, start - prev_start);
        double lim = exp(-extra), pr = etsim_rng_uniform(&r);
        int k = 0;
        while (pr > lim && k < 63) {
          k++;
          pr *= etsim_rng_uniform(&r);
        }
        for (int q = 0; q < k && np < 64; q++) {
          uint32_t u = (uint32_t)etsim_rng_below(&r, start);
          int dup = 0;
          for (int z = 0; z < np; z++) dup |= par[z] == u;
          if (!dup) par[np++] = u;
        }
        for (int z = 0; z < np; z++) {
          if (etsim_grow((void **)&g.src, &ecap, g.n_edges + 1, sizeof(uint32_t)) ||
              etsim_grow((void **)&g.dst, &dcap, g.n_edges + 1, sizeof(uint32_t))) {
            bad = 1;
            break;
          }
          g.src[g.n_edges] = par[z];
          g.dst[g.n_edges++] = v;
        }
      }
      prev_start = start;
      start += sz[l];
    }
    etsim_free(sz);
    if (!bad && !g.src) {
      g.src = etsim_malloc(sizeof(uint32_t));
      g.dst = etsim_malloc(sizeof(uint32_t));
      bad = !g.src || !g.dst;
    }
    if (bad || etsim_grow((void **)&out->g, &out->cap, out->n_graphs + 1, sizeof *out->g)) {
      etsim_synth__dag_free(&g);
      etsim_synth_data_free(out);
      goto oom;
    }
    out->g[out->n_graphs++] = g;
  }
  rc = 0;
  goto done;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
done:
  etsim_free(Ls);
  etsim_free(first);
  etsim_free(other);
  etsim_free(layer);
  etsim_free(cnt);
  etsim_synth_model_free(m);
  return rc;
}

/* DAGGEN-style parametric generator.  Fitted per data set:
 *   fat        mean over graphs of log(n / L) / log(n)  (width = n^fat)
 *   regularity sqrt(3) * coefficient of variation of the layer sizes
 *              (widths uniform in [w (1 - r), w (1 + r)] have that CV)
 *   density    mean in-degree of non-source nodes minus the one parent
 *   jump       the 95th percentile of edge layer gaps
 * Node counts come from the data.  Each level after the first draws its
 * width; each node gets one parent in the previous level and Poisson(density)
 * extra parents from the `jump` levels before it. */
int etsim_synth_baseline_daggen(const etsim_synth_data_t *fit, size_t n, uint64_t seed,
                                etsim_synth_data_t *out, etsim_error_t *err) {
  etsim_synth_model_t *m;
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  int rc = etsim_synth__model_new(fit, &cfg, &m, err);
  if (rc) return rc;
  double fat = 0, cv = 0;
  size_t nfat = 0, ncv = 0, gaps_hist[65] = {0}, ngaps = 0;
  uint32_t *layer = NULL, *cnt = NULL, *nodes = NULL;
  size_t cly = 0, ccn = 0;
  nodes = etsim_malloc(sizeof *nodes * (fit->n_graphs + 1));
  if (!nodes) goto oom;
  for (size_t i = 0; i < fit->n_graphs; i++) {
    const etsim_synth_dag_t *g = &fit->g[i];
    nodes[i] = g->n_nodes;
    if (etsim_grow((void **)&layer, &cly, g->n_nodes + 1, sizeof *layer)) goto oom;
    int L = etsim_synth_layers(g, layer, NULL);
    if (L < 0) goto oom; /* loaded data is acyclic: only out of memory */
    if (etsim_grow((void **)&cnt, &ccn, (size_t)L + 2, sizeof *cnt)) goto oom;
    memset(cnt, 0, sizeof *cnt * ((size_t)L + 2));
    for (uint32_t v = 0; v < g->n_nodes; v++) cnt[layer[v]]++;
    if (g->n_nodes >= 2) {
      fat += log((double)g->n_nodes / L) / log((double)g->n_nodes);
      nfat++;
    }
    if (L >= 2) {
      double mu = (double)g->n_nodes / L, var = 0;
      for (int l = 1; l <= L; l++) var += (cnt[l] - mu) * (cnt[l] - mu);
      cv += sqrt(var / L) / mu;
      ncv++;
    }
    for (uint32_t k = 0; k < g->n_edges; k++) {
      uint32_t gap = layer[g->dst[k]] - layer[g->src[k]];
      gaps_hist[gap < 64 ? gap : 64]++;
      ngaps++;
    }
  }
  fat = nfat ? fat / nfat : 0.5;
  double reg = ncv ? sqrt(3.0) * cv / ncv : 0;
  if (reg > 1) reg = 1;
  uint32_t jump = 1;
  for (size_t acc = 0; jump < 64; jump++) {
    acc += gaps_hist[jump];
    if (acc >= 0.95 * ngaps) break;
  }
  double density = m->mean_indeg - 1;
  etsim_synth_data_init(out);
  out->kind = fit->kind;
  memcpy(out->bin_sum, fit->bin_sum, sizeof out->bin_sum); /* values of bins */
  memcpy(out->bin_n, fit->bin_n, sizeof out->bin_n);
  out->n_ch = fit->n_ch;
  out->n_labels = fit->n_labels;
  memcpy(out->n_cls, fit->n_cls, sizeof out->n_cls);
  etsim_rng_t r;
  etsim_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) {
    uint32_t N = nodes[etsim_rng_below(&r, fit->n_graphs)];
    etsim_synth_dag_t g = {0};
    g.n_nodes = N;
    const etsim_synth_dag_t *lab = &fit->g[etsim_rng_below(&r, fit->n_graphs)];
    g.y = lab->y;
    g.y2 = lab->y2;
    g.x = etsim_malloc(sizeof(uint32_t) * ((size_t)N * fit->n_ch + 1));
    uint32_t *start = etsim_malloc(sizeof(uint32_t) * (N + 2)); /* level -> first node */
    size_t ecap = 0, dcap = 0;
    int bad = !g.x || !start;
    for (uint32_t v = 0; !bad && v < N; v++) {
      uint32_t off = 0;
      for (uint32_t c = 0; c < fit->n_ch; c++) {
        g.x[(size_t)v * fit->n_ch + c] =
            (uint32_t)etsim_synth__draw(&r, m->marg + off, (int)fit->n_cls[c]);
        off += fit->n_cls[c];
      }
    }
    /* Levels: the data's first layers are single sources when every graph
     * has one, so the first level copies the data's most common width 1
     * rule only through the fitted widths below. */
    double w = pow((double)N, fat);
    uint32_t nl = 0, placed = 0;
    while (!bad && placed < N) {
      double u = w * (1 - reg + 2 * reg * etsim_rng_uniform(&r));
      uint32_t k = (uint32_t)(u + 0.5);
      if (k < 1) k = 1;
      if (placed + k > N) k = N - placed;
      start[nl++] = placed;
      placed += k;
    }
    if (!bad) start[nl] = N;
    for (uint32_t l = 1; !bad && l < nl; l++)
      for (uint32_t v = start[l]; v < start[l + 1] && !bad; v++) {
        uint32_t par[64];
        int np = 0;
        par[np++] = start[l - 1] + (uint32_t)etsim_rng_below(&r, start[l] - start[l - 1]);
        uint32_t lo = l > jump ? start[l - jump] : 0;
        double lim = exp(-density), pr = etsim_rng_uniform(&r);
        int k = 0;
        while (pr > lim && k < 63) {
          k++;
          pr *= etsim_rng_uniform(&r);
        }
        for (int q = 0; q < k && np < 64; q++) {
          uint32_t uu = lo + (uint32_t)etsim_rng_below(&r, start[l] - lo);
          int dup = 0;
          for (int z = 0; z < np; z++) dup |= par[z] == uu;
          if (!dup) par[np++] = uu;
        }
        for (int z = 0; z < np; z++) {
          if (etsim_grow((void **)&g.src, &ecap, g.n_edges + 1, sizeof(uint32_t)) ||
              etsim_grow((void **)&g.dst, &dcap, g.n_edges + 1, sizeof(uint32_t))) {
            bad = 1;
            break;
          }
          g.src[g.n_edges] = par[z];
          g.dst[g.n_edges++] = v;
        }
      }
    etsim_free(start);
    if (!bad && !g.src) {
      g.src = etsim_malloc(sizeof(uint32_t));
      g.dst = etsim_malloc(sizeof(uint32_t));
      bad = !g.src || !g.dst;
    }
    if (bad || etsim_grow((void **)&out->g, &out->cap, out->n_graphs + 1, sizeof *out->g)) {
      etsim_synth__dag_free(&g);
      etsim_synth_data_free(out);
      goto oom;
    }
    out->g[out->n_graphs++] = g;
  }
  rc = 0;
  goto done;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
done:
  etsim_free(layer);
  etsim_free(cnt);
  etsim_free(nodes);
  etsim_synth_model_free(m);
  return rc;
}
