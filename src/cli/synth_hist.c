/*
 * synth_hist.c — real against generated histograms for `synth eval --json`
 * (see synth_hist.h).  Values are small integers: one bin per value up to
 * MAX_BINS values, wider bins of equal width above, over the range both
 * sets share, so the two histograms line up bin for bin.
 */
#include "cli/synth_hist.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BINS 40

enum { Q_LAYERS, Q_NODES, Q_EDGES, Q_LSIZE, Q_IN, Q_OUT, Q_CAT, Q_N };
static const char *qname[Q_N] = {"layers",    "nodes",      "edges",   "layer_size",
                                 "in_degree", "out_degree", "category"};

typedef struct vals {
  uint32_t *v;
  size_t n, cap;
} vals_t;

static int push(vals_t *a, uint32_t x) {
  if (a->n == a->cap && etsim_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v))
    return ETSIM_ENOMEM;
  a->v[a->n++] = x;
  return 0;
}

/* Every quantity of one set, appended to q[0..Q_N). */
static int collect(const etsim_synth_data_t *d, vals_t *q) {
  uint32_t *layer = NULL, *cnt = NULL, *din = NULL, *dout = NULL;
  size_t cap = 0;
  int rc = 0;
  for (size_t i = 0; i < d->n_graphs && !rc; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    size_t need = (size_t)g->n_nodes + 2;
    if (need > cap) {
      cap = need;
      uint32_t *a = realloc(layer, cap * sizeof *a), *b = NULL, *c = NULL, *e = NULL;
      if (a) layer = a;
      b = a ? realloc(cnt, cap * sizeof *b) : NULL;
      if (b) cnt = b;
      c = b ? realloc(din, cap * sizeof *c) : NULL;
      if (c) din = c;
      e = c ? realloc(dout, cap * sizeof *e) : NULL;
      if (e) dout = e;
      if (!e) {
        rc = ETSIM_ENOMEM;
        break;
      }
    }
    int L = etsim_synth_layers(g, layer, NULL);
    if (L < 0) continue; /* an invalid DAG: counted by validity, not here */
    rc = push(&q[Q_LAYERS], (uint32_t)L);
    if (!rc) rc = push(&q[Q_NODES], g->n_nodes);
    if (!rc) rc = push(&q[Q_EDGES], g->n_edges);
    memset(cnt, 0, ((size_t)L + 2) * sizeof *cnt);
    memset(din, 0, (size_t)g->n_nodes * sizeof *din);
    memset(dout, 0, (size_t)g->n_nodes * sizeof *dout);
    for (uint32_t v = 0; v < g->n_nodes; v++) cnt[layer[v]]++;
    for (int l = 1; l <= L && !rc; l++) rc = push(&q[Q_LSIZE], cnt[l]);
    for (uint32_t k = 0; k < g->n_edges; k++) {
      if (g->src[k] < g->n_nodes) dout[g->src[k]]++;
      if (g->dst[k] < g->n_nodes) din[g->dst[k]]++;
    }
    for (uint32_t v = 0; v < g->n_nodes && !rc; v++) {
      rc = push(&q[Q_IN], din[v]);
      if (!rc) rc = push(&q[Q_OUT], dout[v]);
      if (!rc && d->n_ch) rc = push(&q[Q_CAT], g->x[(size_t)v * d->n_ch]);
    }
  }
  free(layer);
  free(cnt);
  free(din);
  free(dout);
  return rc;
}

static json_t *hist(const vals_t *r, const vals_t *g) {
  uint32_t mx = 0;
  for (size_t i = 0; i < r->n; i++) mx = r->v[i] > mx ? r->v[i] : mx;
  for (size_t i = 0; i < g->n; i++) mx = g->v[i] > mx ? g->v[i] : mx;
  uint32_t width = mx + 1 <= MAX_BINS ? 1 : (mx + 1 + MAX_BINS - 1) / MAX_BINS;
  uint32_t bins = mx / width + 1;
  json_t *o = json_object(), *lo = json_array(), *cr = json_array(), *cg = json_array();
  size_t *a = calloc(bins, sizeof *a), *b = calloc(bins, sizeof *b);
  if (!o || !lo || !cr || !cg || !a || !b) {
    json_decref(o);
    json_decref(lo);
    json_decref(cr);
    json_decref(cg);
    free(a);
    free(b);
    return NULL;
  }
  for (size_t i = 0; i < r->n; i++) a[r->v[i] / width]++;
  for (size_t i = 0; i < g->n; i++) b[g->v[i] / width]++;
  for (uint32_t k = 0; k < bins; k++) {
    json_array_append_new(lo, json_integer((json_int_t)k * width));
    json_array_append_new(cr, json_integer((json_int_t)a[k]));
    json_array_append_new(cg, json_integer((json_int_t)b[k]));
  }
  json_object_set_new(o, "lo", lo);
  json_object_set_new(o, "width", json_integer(width));
  json_object_set_new(o, "real", cr);
  json_object_set_new(o, "generated", cg);
  free(a);
  free(b);
  return o;
}

json_t *cli_synth_histograms(const etsim_synth_data_t *real, const etsim_synth_data_t *gen) {
  vals_t qr[Q_N] = {{0}}, qg[Q_N] = {{0}};
  json_t *out = NULL;
  if (collect(real, qr) || collect(gen, qg)) goto done;
  out = json_object();
  for (int k = 0; out && k < Q_N; k++) {
    json_t *h = hist(&qr[k], &qg[k]);
    if (!h) {
      json_decref(out);
      out = NULL;
      break;
    }
    json_object_set_new(out, qname[k], h);
  }
done:
  for (int k = 0; k < Q_N; k++) {
    etsim_free(qr[k].v);
    etsim_free(qg[k].v);
  }
  return out;
}
