/*
 * surrogate.c — the paper's evaluation regressor: a bidirectional message-
 * passing network (BiMPNN) that predicts a DAG's label, trained on one set
 * and scored on another (Pearson, Spearman, MAE).
 *
 * Architecture and training follow LayerDAG's evaluation code (its
 * src/eval/discriminator/mpnn.py; docs/synth.md):
 *   h_0 = [Emb_c(x_c) for every channel c]            (width n_ch * H)
 *   h_k = ReLU(A (W h_{k-1} + b) + W_s h_{k-1} + b_s + A^T (W_t h_{k-1} + b_t))
 *   o   = ReLU(W_o [h_0 | ... | h_K] + b_o);  g = sum of o over the graph
 *   y^  = W_2 ReLU(W_1 g + b_1) + b_2
 * where A sums a node's parents and A^T its children.  The loss is smooth
 * L1 on the raw label, Adam (lr 1e-3), batches of 256 graphs, and the
 * epoch with the best validation Pearson is kept (patience 100).
 *
 * Batches are block-diagonal: a batch's nodes are consecutive rows, so the
 * sparse products run over one CSR of the whole set.
 */
#include "synth/synth_int.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct etsim_synth_surrogate {
  etsim_synth_surrogate_config_t cfg;
  uint32_t n_ch, n_cls[ETSIM_SYNTH_MAX_CH];
  int Ht; /* n_ch * hidden */
  size_t n_params;
  float *w, *g, *am, *av;
  float *emb[ETSIM_SYNTH_MAX_CH], *gemb[ETSIM_SYNTH_MAX_CH];
  nn_linear_t msg[SY_MAXK], self[SY_MAXK], trans[SY_MAXK], jk[SY_MAXK + 1], p1, p2;
};

void etsim_synth_surrogate_config_default(etsim_synth_surrogate_config_t *c) {
  memset(c, 0, sizeof *c);
  c->hidden = 128;
  c->mp_layers = 4;
  c->epochs = 500;
  c->patience = 100;
  c->batch = 256;
  c->lr = 1e-3f;
  c->seed = 1;
}

/* ------------------------------------------------------------ parameters */

typedef struct {
  size_t off;
  float *w, *g;
} cur_t;

static float *take(cur_t *c, size_t n, float **grad) {
  float *p = c->w ? c->w + c->off : NULL;
  if (grad) *grad = c->g ? c->g + c->off : NULL;
  c->off += n;
  return p;
}

static void lin(cur_t *c, nn_linear_t *l, int in, int out, int bias) {
  l->in = in;
  l->out = out;
  l->w = take(c, (size_t)in * out, &l->gw);
  l->b = l->gb = NULL;
  if (bias) l->b = take(c, (size_t)out, &l->gb);
}

static size_t layout(etsim_synth_surrogate_t *s, float *w, float *g) {
  cur_t c = {0, w, g};
  int H = s->cfg.hidden, Ht = s->Ht, K = s->cfg.mp_layers;
  for (uint32_t ch = 0; ch < s->n_ch; ch++)
    s->emb[ch] = take(&c, (size_t)s->n_cls[ch] * H, &s->gemb[ch]);
  for (int k = 0; k < K; k++) {
    lin(&c, &s->msg[k], Ht, Ht, 1);
    lin(&c, &s->self[k], Ht, Ht, 1);
    lin(&c, &s->trans[k], Ht, Ht, 1);
  }
  /* The output projection of the concatenated stages, one block per stage
   * (a Linear on a concatenation is the sum of Linears on its parts). */
  for (int k = 0; k <= K; k++) lin(&c, &s->jk[k], Ht, Ht, k == 0);
  lin(&c, &s->p1, Ht, Ht, 1);
  lin(&c, &s->p2, Ht, 1, 1);
  return c.off;
}

/* PyTorch's default initialisation: Linear weights and biases uniform in
 * +-1/sqrt(in), embeddings N(0, 1). */
static void init_lin(nn_linear_t *l, etsim_rng_t *r) {
  float a = 1.0f / sqrtf((float)l->in);
  for (size_t i = 0; i < (size_t)l->in * l->out; i++)
    l->w[i] = a * (float)(2 * etsim_rng_uniform(r) - 1);
  if (l->b)
    for (int j = 0; j < l->out; j++) l->b[j] = a * (float)(2 * etsim_rng_uniform(r) - 1);
}

void etsim_synth_surrogate_free(etsim_synth_surrogate_t *s) {
  if (!s) return;
  etsim_free(s->w);
  etsim_free(s->g);
  etsim_free(s->am);
  etsim_free(s->av);
  etsim_free(s);
}

static int surrogate_new(const etsim_synth_data_t *d, const etsim_synth_surrogate_config_t *cfg,
                         etsim_synth_surrogate_t **out, etsim_error_t *err) {
  if (cfg->hidden < 1 || cfg->hidden > 4096 || cfg->mp_layers < 0 || cfg->mp_layers > SY_MAXK ||
      cfg->epochs < 1 || cfg->batch < 1 || !(cfg->lr > 0) || cfg->patience < 1)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "surrogate configuration out of range (hidden 1..4096, "
                           "mp_layers 0..%d, epochs, batch, patience >= 1, lr > 0)",
                           SY_MAXK);
  if (d->n_ch < 1 || d->n_ch > ETSIM_SYNTH_MAX_CH)
    return etsim_error_set(err, ETSIM_EINVAL, "surrogate: data have %u channels", d->n_ch);
  etsim_synth_surrogate_t *s = etsim_calloc(1, sizeof *s);
  if (!s) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  s->cfg = *cfg;
  s->n_ch = d->n_ch;
  for (uint32_t c = 0; c < d->n_ch; c++) s->n_cls[c] = d->n_cls[c] ? d->n_cls[c] : 1;
  s->Ht = (int)d->n_ch * cfg->hidden;
  s->n_params = layout(s, NULL, NULL);
  s->w = etsim_calloc(s->n_params, sizeof(float));
  s->g = etsim_calloc(s->n_params, sizeof(float));
  s->am = etsim_calloc(s->n_params, sizeof(float));
  s->av = etsim_calloc(s->n_params, sizeof(float));
  if (!s->w || !s->g || !s->am || !s->av) {
    etsim_synth_surrogate_free(s);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  layout(s, s->w, s->g);
  etsim_rng_t r;
  etsim_rng_seed(&r, cfg->seed ^ 0x5077a11ULL);
  for (uint32_t c = 0; c < s->n_ch; c++)
    for (size_t i = 0; i < (size_t)s->n_cls[c] * cfg->hidden; i++)
      s->emb[c][i] = (float)etsim_rng_normal(&r);
  for (int k = 0; k < cfg->mp_layers; k++) {
    init_lin(&s->msg[k], &r);
    init_lin(&s->self[k], &r);
    init_lin(&s->trans[k], &r);
  }
  /* One Linear over the concatenation in PyTorch: its bound uses the full
   * fan-in (K+1)*Ht. */
  float a = 1.0f / sqrtf((float)((cfg->mp_layers + 1) * s->Ht));
  for (int k = 0; k <= cfg->mp_layers; k++) {
    nn_linear_t *l = &s->jk[k];
    for (size_t i = 0; i < (size_t)l->in * l->out; i++)
      l->w[i] = a * (float)(2 * etsim_rng_uniform(&r) - 1);
    if (l->b)
      for (int j = 0; j < l->out; j++) l->b[j] = a * (float)(2 * etsim_rng_uniform(&r) - 1);
  }
  init_lin(&s->p1, &r);
  init_lin(&s->p2, &r);
  *out = s;
  return 0;
}

/* ------------------------------------------------------------- graph set */

/* A data set in row form: graph i holds rows [goff[i], goff[i+1]); parent
 * and child lists in CSR over all rows. */
typedef struct {
  size_t n_graphs, n_rows;
  size_t *goff;
  uint32_t *pof, *pad, *cof, *cad;
  int32_t *x; /* n_rows * n_ch, row-major */
  float *y;
  float *wt; /* per-graph loss weights */
} gset_t;

static void gset_free(gset_t *G) {
  etsim_free(G->goff);
  etsim_free(G->pof);
  etsim_free(G->pad);
  etsim_free(G->cof);
  etsim_free(G->cad);
  etsim_free(G->x);
  etsim_free(G->y);
  etsim_free(G->wt);
  memset(G, 0, sizeof *G);
}

/* Rows of the graphs idx[0..n) (all graphs when idx is NULL). */
static int gset_build(const etsim_synth_surrogate_t *s, const etsim_synth_data_t *d,
                      const size_t *idx, size_t n, const double *weights, gset_t *G,
                      etsim_error_t *err) {
  memset(G, 0, sizeof *G);
  if (d->n_ch != s->n_ch)
    return etsim_error_set(err, ETSIM_EINVAL, "surrogate: data have %u channels, the model %u",
                           d->n_ch, s->n_ch);
  size_t rows = 0, edges = 0;
  for (size_t k = 0; k < n; k++) {
    const etsim_synth_dag_t *g = &d->g[idx ? idx[k] : k];
    rows += g->n_nodes;
    edges += g->n_edges;
  }
  if (rows >= UINT32_MAX || edges >= UINT32_MAX)
    return etsim_error_set(err, ETSIM_EINVAL, "surrogate: data set too large (%zu nodes)", rows);
  G->n_graphs = n;
  G->n_rows = rows;
  G->goff = etsim_malloc(sizeof *G->goff * (n + 1));
  G->pof = etsim_calloc(rows + 2, sizeof *G->pof);
  G->cof = etsim_calloc(rows + 2, sizeof *G->cof);
  G->pad = etsim_malloc(sizeof *G->pad * (edges + 1));
  G->cad = etsim_malloc(sizeof *G->cad * (edges + 1));
  G->x = etsim_malloc(sizeof *G->x * (rows * s->n_ch + 1));
  G->y = etsim_malloc(sizeof *G->y * (n + 1));
  G->wt = etsim_malloc(sizeof *G->wt * (n + 1));
  uint32_t *cp = etsim_malloc(sizeof *cp * (rows + 1)), *cc = etsim_malloc(sizeof *cc * (rows + 1));
  if (!G->goff || !G->pof || !G->cof || !G->pad || !G->cad || !G->x || !G->y || !G->wt || !cp ||
      !cc) {
    etsim_free(cp);
    etsim_free(cc);
    gset_free(G);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  size_t r0 = 0;
  for (size_t k = 0; k < n; k++) {
    size_t gi = idx ? idx[k] : k;
    const etsim_synth_dag_t *g = &d->g[gi];
    G->goff[k] = r0;
    G->y[k] = (float)g->y;
    G->wt[k] = weights ? (float)weights[gi] : 1.0f;
    for (uint32_t v = 0; v < g->n_nodes; v++)
      for (uint32_t c = 0; c < s->n_ch; c++) {
        uint32_t x = g->x[(size_t)v * d->n_ch + c];
        if (x >= s->n_cls[c]) {
          etsim_free(cp);
          etsim_free(cc);
          gset_free(G);
          return etsim_error_set(err, ETSIM_EFORMAT,
                                 "surrogate: graph %zu node %u: category %u of channel %u "
                                 "is outside the model's 0..%u",
                                 gi, v, x, c, s->n_cls[c] - 1);
        }
        G->x[(r0 + v) * s->n_ch + c] = (int32_t)x;
      }
    for (uint32_t e = 0; e < g->n_edges; e++) {
      if (g->src[e] >= g->n_nodes || g->dst[e] >= g->n_nodes) {
        etsim_free(cp);
        etsim_free(cc);
        gset_free(G);
        return etsim_error_set(err, ETSIM_EFORMAT, "surrogate: graph %zu edge %u out of range", gi,
                               e);
      }
      G->pof[r0 + g->dst[e] + 1]++;
      G->cof[r0 + g->src[e] + 1]++;
    }
    r0 += g->n_nodes;
  }
  G->goff[n] = r0;
  for (size_t r = 0; r < rows; r++) {
    G->pof[r + 1] += G->pof[r];
    G->cof[r + 1] += G->cof[r];
  }
  memcpy(cp, G->pof, sizeof *cp * rows);
  memcpy(cc, G->cof, sizeof *cc * rows);
  for (size_t k = 0; k < n; k++) {
    const etsim_synth_dag_t *g = &d->g[idx ? idx[k] : k];
    size_t b = G->goff[k];
    for (uint32_t e = 0; e < g->n_edges; e++) {
      G->pad[cp[b + g->dst[e]]++] = (uint32_t)(b + g->src[e]);
      G->cad[cc[b + g->src[e]]++] = (uint32_t)(b + g->dst[e]);
    }
  }
  etsim_free(cp);
  etsim_free(cc);
  return 0;
}

/* ---------------------------------------------------------- forward pass */

typedef struct {
  size_t cap_rows, cap_graphs;
  float *H[SY_MAXK + 1], *P[SY_MAXK + 1], *T, *dT, *O, *Op, *dO, *dH[SY_MAXK + 1], *dP;
  float *Gs, *Qp, *Q, *yh, *dG, *dQ, *dy;
} sws_t;

static void sws_free(sws_t *w) {
  for (int k = 0; k <= SY_MAXK; k++) {
    etsim_free(w->H[k]);
    etsim_free(w->P[k]);
    etsim_free(w->dH[k]);
  }
  etsim_free(w->T);
  etsim_free(w->dT);
  etsim_free(w->O);
  etsim_free(w->Op);
  etsim_free(w->dO);
  etsim_free(w->dP);
  etsim_free(w->Gs);
  etsim_free(w->Qp);
  etsim_free(w->Q);
  etsim_free(w->yh);
  etsim_free(w->dG);
  etsim_free(w->dQ);
  etsim_free(w->dy);
  memset(w, 0, sizeof *w);
}

/* Grow the workspace to rows x graphs; buffers are reused across batches so
 * a training run allocates a handful of times, not per batch. */
static int sws_reserve(sws_t *w, const etsim_synth_surrogate_t *s, size_t rows, size_t graphs,
                       int backward) {
  int K = s->cfg.mp_layers, Ht = s->Ht;
  if (rows > w->cap_rows || (backward && !w->dP && rows)) {
    size_t nh = rows * (size_t)Ht + 1;
    for (int k = 0; k <= K; k++) {
      etsim_free(w->H[k]);
      etsim_free(w->P[k]);
      etsim_free(w->dH[k]);
      w->H[k] = etsim_malloc(sizeof(float) * nh);
      w->P[k] = etsim_malloc(sizeof(float) * nh);
      w->dH[k] = backward ? etsim_malloc(sizeof(float) * nh) : NULL;
      if (!w->H[k] || !w->P[k] || (backward && !w->dH[k])) return ETSIM_ENOMEM;
    }
    etsim_free(w->T);
    etsim_free(w->dT);
    etsim_free(w->O);
    etsim_free(w->Op);
    etsim_free(w->dO);
    etsim_free(w->dP);
    w->T = etsim_malloc(sizeof(float) * nh);
    w->O = etsim_malloc(sizeof(float) * nh);
    w->Op = etsim_malloc(sizeof(float) * nh);
    w->dT = backward ? etsim_malloc(sizeof(float) * nh) : NULL;
    w->dO = backward ? etsim_malloc(sizeof(float) * nh) : NULL;
    w->dP = backward ? etsim_malloc(sizeof(float) * nh) : NULL;
    if (!w->T || !w->O || !w->Op || (backward && (!w->dT || !w->dO || !w->dP))) return ETSIM_ENOMEM;
    w->cap_rows = rows;
  }
  if (graphs > w->cap_graphs) {
    size_t ng = graphs * (size_t)Ht + 1;
    etsim_free(w->Gs);
    etsim_free(w->Qp);
    etsim_free(w->Q);
    etsim_free(w->yh);
    etsim_free(w->dG);
    etsim_free(w->dQ);
    etsim_free(w->dy);
    w->Gs = etsim_malloc(sizeof(float) * ng);
    w->Qp = etsim_malloc(sizeof(float) * ng);
    w->Q = etsim_malloc(sizeof(float) * ng);
    w->dG = etsim_malloc(sizeof(float) * ng);
    w->dQ = etsim_malloc(sizeof(float) * ng);
    w->yh = etsim_malloc(sizeof(float) * (graphs + 1));
    w->dy = etsim_malloc(sizeof(float) * (graphs + 1));
    if (!w->Gs || !w->Qp || !w->Q || !w->dG || !w->dQ || !w->yh || !w->dy) return ETSIM_ENOMEM;
    w->cap_graphs = graphs;
  }
  return 0;
}

/* Sparse sum over a CSR restricted to rows [r0, r1) whose neighbours lie in
 * the same range: y[r - r0] += sum x[j - r0]. */
static void spmm_rows(size_t r0, size_t r1, int d, const uint32_t *off, const uint32_t *adj,
                      const float *x, float *y) {
  for (size_t r = r0; r < r1; r++) {
    float *yr = y + (r - r0) * d;
    for (uint32_t k = off[r]; k < off[r + 1]; k++) {
      const float *xr = x + (adj[k] - r0) * d;
      for (int j = 0; j < d; j++) yr[j] += xr[j];
    }
  }
}

/* Forward over graphs [g0, g1) of G (their rows are consecutive); with
 * backward, adds the gradient of the weighted smooth-L1 loss (scaled by
 * `scale`) into s->g and returns the loss sum.  Predictions go to w->yh. */
static double pass(etsim_synth_surrogate_t *s, sws_t *w, const gset_t *G, size_t g0, size_t g1,
                   int backward, float scale) {
  int K = s->cfg.mp_layers, Ht = s->Ht, H = s->cfg.hidden;
  size_t r0 = G->goff[g0], r1 = G->goff[g1];
  int n = (int)(r1 - r0), B = (int)(g1 - g0);
  size_t nh = (size_t)n * Ht;
  /* h_0: per-channel embeddings side by side. */
  for (int r = 0; r < n; r++)
    for (uint32_t c = 0; c < s->n_ch; c++)
      memcpy(w->H[0] + (size_t)r * Ht + (size_t)c * H,
             s->emb[c] + (size_t)G->x[(r0 + r) * s->n_ch + c] * H, sizeof(float) * H);
  for (int k = 1; k <= K; k++) {
    float *Pk = w->P[k];
    etsim_synth__nn_linear_fwd(&s->self[k - 1], n, w->H[k - 1], Pk);
    etsim_synth__nn_linear_fwd(&s->msg[k - 1], n, w->H[k - 1], w->T);
    spmm_rows(r0, r1, Ht, G->pof, G->pad, w->T, Pk);
    etsim_synth__nn_linear_fwd(&s->trans[k - 1], n, w->H[k - 1], w->T);
    spmm_rows(r0, r1, Ht, G->cof, G->cad, w->T, Pk);
    etsim_synth__nn_relu_fwd(nh, Pk, w->H[k]);
  }
  etsim_synth__nn_linear_fwd(&s->jk[0], n, w->H[0], w->Op);
  for (int k = 1; k <= K; k++) etsim_synth__nn_linear_fwd_add(&s->jk[k], n, w->H[k], w->Op, 0);
  etsim_synth__nn_relu_fwd(nh, w->Op, w->O);
  memset(w->Gs, 0, sizeof(float) * (size_t)B * Ht);
  for (int b = 0; b < B; b++) {
    float *gs = w->Gs + (size_t)b * Ht;
    for (size_t r = G->goff[g0 + b]; r < G->goff[g0 + b + 1]; r++) {
      const float *o = w->O + (r - r0) * Ht;
      for (int j = 0; j < Ht; j++) gs[j] += o[j];
    }
  }
  etsim_synth__nn_linear_fwd(&s->p1, B, w->Gs, w->Qp);
  etsim_synth__nn_relu_fwd((size_t)B * Ht, w->Qp, w->Q);
  etsim_synth__nn_linear_fwd(&s->p2, B, w->Q, w->yh);
  double loss = 0;
  for (int b = 0; b < B; b++) {
    double d = (double)w->yh[b] - G->y[g0 + b], wt = G->wt[g0 + b];
    double ad = fabs(d);
    loss += wt * (ad < 1 ? 0.5 * d * d : ad - 0.5);
    w->dy[b] = (float)(scale * wt * (ad < 1 ? d : (d > 0 ? 1 : -1)));
  }
  if (!backward) return loss;
  memset(w->dQ, 0, sizeof(float) * (size_t)B * Ht);
  etsim_synth__nn_linear_bwd(&s->p2, B, w->Q, w->dy, w->dQ, 1);
  memset(w->dG, 0, sizeof(float) * (size_t)B * Ht);
  for (size_t i = 0; i < (size_t)B * Ht; i++)
    if (!(w->Qp[i] > 0)) w->dQ[i] = 0;
  etsim_synth__nn_linear_bwd(&s->p1, B, w->Gs, w->dQ, w->dG, 1);
  for (int b = 0; b < B; b++) {
    const float *dg = w->dG + (size_t)b * Ht;
    for (size_t r = G->goff[g0 + b]; r < G->goff[g0 + b + 1]; r++) {
      float *dor = w->dO + (r - r0) * Ht;
      const float *op = w->Op + (r - r0) * Ht;
      for (int j = 0; j < Ht; j++) dor[j] = op[j] > 0 ? dg[j] : 0;
    }
  }
  for (int k = 0; k <= K; k++) {
    memset(w->dH[k], 0, sizeof(float) * nh);
    etsim_synth__nn_linear_bwd(&s->jk[k], n, w->H[k], w->dO, w->dH[k], k == 0);
  }
  for (int k = K; k >= 1; k--) {
    float *dP = w->dP;
    for (size_t i = 0; i < nh; i++) dP[i] = w->P[k][i] > 0 ? w->dH[k][i] : 0;
    etsim_synth__nn_linear_bwd(&s->self[k - 1], n, w->H[k - 1], dP, w->dH[k - 1], 1);
    /* d(A T)/dT = A^T: sum over children; d(A^T T)/dT = A: over parents. */
    memset(w->dT, 0, sizeof(float) * nh);
    spmm_rows(r0, r1, Ht, G->cof, G->cad, dP, w->dT);
    etsim_synth__nn_linear_bwd(&s->msg[k - 1], n, w->H[k - 1], w->dT, w->dH[k - 1], 1);
    memset(w->dT, 0, sizeof(float) * nh);
    spmm_rows(r0, r1, Ht, G->pof, G->pad, dP, w->dT);
    etsim_synth__nn_linear_bwd(&s->trans[k - 1], n, w->H[k - 1], w->dT, w->dH[k - 1], 1);
  }
  for (int r = 0; r < n; r++)
    for (uint32_t c = 0; c < s->n_ch; c++) {
      float *ge = s->gemb[c] + (size_t)G->x[(r0 + r) * s->n_ch + c] * H;
      const float *d = w->dH[0] + (size_t)r * Ht + (size_t)c * H;
      for (int j = 0; j < H; j++) ge[j] += d[j];
    }
  return loss;
}

/* Predictions for every graph of G, in batches. */
static int predict_set(etsim_synth_surrogate_t *s, sws_t *w, const gset_t *G, double *pred) {
  size_t B = (size_t)s->cfg.batch;
  for (size_t g0 = 0; g0 < G->n_graphs; g0 += B) {
    size_t g1 = g0 + B < G->n_graphs ? g0 + B : G->n_graphs;
    if (sws_reserve(w, s, G->goff[g1] - G->goff[g0], g1 - g0, 0)) return ETSIM_ENOMEM;
    pass(s, w, G, g0, g1, 0, 0);
    for (size_t b = g0; b < g1; b++) pred[b] = w->yh[b - g0];
  }
  return 0;
}

/* ---------------------------------------------------------------- scores */

int etsim_synth_score(const double *pred, const double *y, size_t n, etsim_synth_scores_t *out) {
  memset(out, 0, sizeof *out);
  if (!n) return ETSIM_EINVAL;
  double *ry = etsim_malloc(sizeof(double) * n), *rp = etsim_malloc(sizeof(double) * n);
  int rc = ry && rp ? 0 : ETSIM_ENOMEM;
  if (!rc) rc = etsim_ranks(y, n, ry);
  if (!rc) rc = etsim_ranks(pred, n, rp);
  if (!rc) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += fabs(pred[i] - y[i]);
    out->n = n;
    out->mae = s / (double)n;
    out->pearson = etsim_pearson(pred, y, n);
    out->spearman = etsim_pearson(rp, ry, n);
  }
  etsim_free(ry);
  etsim_free(rp);
  return rc;
}

/* -------------------------------------------------------------- training */

/* Train s on `train` from its current weights, selecting on `val` (NULL:
 * a seeded 10% of train held out).  Adam starts afresh.  With keep_start
 * the current weights are the epoch-0 candidate (a fine-tune never ends
 * worse on val than where it began; zero epochs keep them exactly);
 * without, the first epoch always counts as best (a fresh model).  On any
 * return s holds the best weights seen. */
static int train_loop(etsim_synth_surrogate_t *s, const etsim_synth_data_t *train,
                      const double *weights, const etsim_synth_data_t *val,
                      const etsim_synth_surrogate_config_t *cfg, int keep_start,
                      etsim_synth_surrogate_progress_fn fn, void *user, etsim_error_t *err) {
  gset_t TR = {0}, VA = {0};
  sws_t w = {0};
  size_t *idx = NULL, *perm = NULL, ntr = train->n_graphs, nva = 0;
  double *pred = NULL, *yv = NULL;
  float *best = NULL;
  int rc = 0;
  etsim_rng_t rng;
  etsim_rng_seed(&rng, cfg->seed);
  idx = etsim_malloc(sizeof *idx * (ntr + 1));
  perm = etsim_malloc(sizeof *perm * (ntr + 1));
  best = etsim_malloc(sizeof *best * s->n_params);
  if (!idx || !perm || !best) goto oom;
  memcpy(best, s->w, sizeof *best * s->n_params);
  memset(s->am, 0, sizeof(float) * s->n_params);
  memset(s->av, 0, sizeof(float) * s->n_params);
  for (size_t i = 0; i < ntr; i++) idx[i] = i;
  if (!val) {
    /* Hold out a seeded 10% of the training graphs for model selection. */
    for (size_t i = ntr; i > 1; i--) {
      size_t j = etsim_rng_below(&rng, i), t = idx[i - 1];
      idx[i - 1] = idx[j];
      idx[j] = t;
    }
    nva = ntr >= 10 ? ntr / 10 : (ntr >= 2 ? 1 : 0);
    if (!nva) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "surrogate: need >= 2 training graphs");
      goto out;
    }
    if ((rc = gset_build(s, train, idx, nva, NULL, &VA, err))) goto out;
    ntr -= nva;
    memmove(idx, idx + nva, sizeof *idx * ntr);
  } else {
    if (!val->n_graphs) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "surrogate: empty validation set");
      goto out;
    }
    if ((rc = gset_build(s, val, NULL, val->n_graphs, NULL, &VA, err))) goto out;
  }
  /* Keep the training graphs in their original order; batches are drawn by
   * permuting graphs and copying their rows would cost a pass, so a
   * shuffled gset is rebuilt per epoch from the index instead. */
  pred = etsim_malloc(sizeof(double) * (VA.n_graphs + 1));
  yv = etsim_malloc(sizeof(double) * (VA.n_graphs + 1));
  if (!pred || !yv) goto oom;
  for (size_t i = 0; i < VA.n_graphs; i++) yv[i] = VA.y[i];
  nn_adam_t opt = {cfg->lr, 0.9f, 0.999f, 1e-8f, 0, 0};
  double best_val = -INFINITY;
  int since = 0;
  if (keep_start) {
    if ((rc = predict_set(s, &w, &VA, pred))) goto oom;
    etsim_synth_scores_t sc;
    if (etsim_synth_score(pred, yv, VA.n_graphs, &sc)) goto oom;
    best_val = isfinite(sc.pearson) ? sc.pearson : -1;
    if (fn) {
      etsim_synth_surrogate_progress_t pg = {0, cfg->epochs, NAN, sc, 1};
      if (fn(user, &pg)) goto out;
    }
  }
  size_t B = (size_t)cfg->batch;
  for (int ep = 1; ep <= cfg->epochs; ep++) {
    for (size_t i = 0; i < ntr; i++) perm[i] = idx[i];
    for (size_t i = ntr; i > 1; i--) {
      size_t j = etsim_rng_below(&rng, i), t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
    gset_free(&TR);
    if ((rc = gset_build(s, train, perm, ntr, weights, &TR, err))) goto out;
    double lsum = 0;
    for (size_t g0 = 0; g0 < ntr; g0 += B) {
      size_t g1 = g0 + B < ntr ? g0 + B : ntr;
      if (sws_reserve(&w, s, TR.goff[g1] - TR.goff[g0], g1 - g0, 1)) goto oom;
      memset(s->g, 0, sizeof(float) * s->n_params);
      lsum += pass(s, &w, &TR, g0, g1, 1, 1.0f / (float)(g1 - g0));
      etsim_synth__nn_adam_update(&opt, s->n_params, s->w, s->g, s->am, s->av, NULL);
    }
    if ((rc = predict_set(s, &w, &VA, pred))) goto oom;
    etsim_synth_scores_t sc;
    if (etsim_synth_score(pred, yv, VA.n_graphs, &sc)) goto oom;
    /* A constant prediction has no Pearson; it must not count as best. */
    double vp = isfinite(sc.pearson) ? sc.pearson : -1;
    int is_best = vp > best_val;
    if (is_best) {
      best_val = vp;
      since = 0;
      memcpy(best, s->w, sizeof *best * s->n_params);
    } else {
      since++;
    }
    if (fn) {
      etsim_synth_surrogate_progress_t pg = {ep, cfg->epochs, lsum / (double)ntr, sc, is_best};
      if (fn(user, &pg)) break;
    }
    if (since >= cfg->patience) break;
  }
  rc = 0;
  goto out;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
out:
  if (best) memcpy(s->w, best, sizeof *best * s->n_params);
  sws_free(&w);
  gset_free(&TR);
  gset_free(&VA);
  etsim_free(idx);
  etsim_free(perm);
  etsim_free(best);
  etsim_free(pred);
  etsim_free(yv);
  return rc;
}

int etsim_synth_surrogate_fit(const etsim_synth_data_t *train, const double *weights,
                              const etsim_synth_data_t *val,
                              const etsim_synth_surrogate_config_t *cfg,
                              etsim_synth_surrogate_progress_fn fn, void *user,
                              etsim_synth_surrogate_t **out, etsim_error_t *err) {
  openblas_set_num_threads(1);
  if (!train->n_graphs) return etsim_error_set(err, ETSIM_EINVAL, "surrogate: no training graphs");
  etsim_synth_surrogate_t *s = NULL;
  etsim_synth_data_t vocab = *train;
  if (val && val->n_ch == train->n_ch)
    for (uint32_t c = 0; c < train->n_ch; c++)
      if (val->n_cls[c] > vocab.n_cls[c]) vocab.n_cls[c] = val->n_cls[c];
  int rc = surrogate_new(&vocab, cfg, &s, err);
  if (rc) return rc;
  rc = train_loop(s, train, weights, val, cfg, 0, fn, user, err);
  if (rc) {
    etsim_synth_surrogate_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int etsim_synth_surrogate_finetune(etsim_synth_surrogate_t *s, const etsim_synth_data_t *train,
                                   const double *weights, const etsim_synth_data_t *val,
                                   const etsim_synth_surrogate_config_t *cfg,
                                   etsim_synth_surrogate_progress_fn fn, void *user,
                                   etsim_error_t *err) {
  openblas_set_num_threads(1);
  if (!train->n_graphs) return etsim_error_set(err, ETSIM_EINVAL, "surrogate: no training graphs");
  if (cfg->epochs < 0 || cfg->batch < 1 || !(cfg->lr > 0) || cfg->patience < 1)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "surrogate fine-tune configuration out of range (epochs >= 0, "
                           "batch, patience >= 1, lr > 0)");
  etsim_synth_surrogate_config_t c = *cfg;
  c.hidden = s->cfg.hidden;
  c.mp_layers = s->cfg.mp_layers;
  s->cfg = c; /* predictions now batch as this training did */
  return train_loop(s, train, weights, val, &c, 1, fn, user, err);
}

int etsim_synth_surrogate_predict(etsim_synth_surrogate_t *s, const etsim_synth_data_t *d,
                                  double *pred, etsim_error_t *err) {
  openblas_set_num_threads(1);
  gset_t G;
  int rc = gset_build(s, d, NULL, d->n_graphs, NULL, &G, err);
  if (rc) return rc;
  sws_t w = {0};
  rc = predict_set(s, &w, &G, pred);
  sws_free(&w);
  gset_free(&G);
  if (rc) return etsim_error_set(err, rc, "out of memory");
  return 0;
}

size_t etsim_synth_surrogate_params(const etsim_synth_surrogate_t *s) { return s->n_params; }

/* Test hook: loss and gradient of the whole set as one batch. */
double etsim_synth__surrogate_loss(etsim_synth_surrogate_t *s, const etsim_synth_data_t *d,
                                   float **w, float **g, size_t *n_params) {
  gset_t G;
  if (gset_build(s, d, NULL, d->n_graphs, NULL, &G, NULL)) return NAN;
  sws_t ws = {0};
  double l = NAN;
  if (!sws_reserve(&ws, s, G.n_rows, G.n_graphs, 1)) {
    memset(s->g, 0, sizeof(float) * s->n_params);
    l = pass(s, &ws, &G, 0, G.n_graphs, 1, 1.0f);
  }
  sws_free(&ws);
  gset_free(&G);
  *w = s->w;
  *g = s->g;
  *n_params = s->n_params;
  return l;
}

int etsim_synth__surrogate_new(const etsim_synth_data_t *d,
                               const etsim_synth_surrogate_config_t *cfg,
                               etsim_synth_surrogate_t **out, etsim_error_t *err) {
  return surrogate_new(d, cfg, out, err);
}

/* ------------------------------------------------------------ weights file
 *
 * "ETSSURR\0", then u32 version (1), byte-order word 0x01020304, hidden,
 * mp_layers, n_ch, n_cls[ETSIM_SYNTH_MAX_CH], the batch size (predictions
 * run in batches of it, and a float sum's rounding depends on them), u64
 * n_params, the float parameters in layout order, and a u64 hash of
 * everything before it.  Native byte order (checked); the other training
 * settings are not kept. */

#define SUR_MAGIC "ETSSURR\0"
#define SUR_VERSION 1u
#define SUR_NU (6 + ETSIM_SYNTH_MAX_CH)
#define SUR_HDR (8 + 4 * SUR_NU + 8)

int etsim_synth_surrogate_save(const etsim_synth_surrogate_t *s, const char *path,
                               etsim_error_t *err) {
  uint32_t u[SUR_NU] = {SUR_VERSION, 0x01020304u, (uint32_t)s->cfg.hidden,
                        (uint32_t)s->cfg.mp_layers, s->n_ch};
  for (uint32_t c = 0; c < s->n_ch; c++) u[5 + c] = s->n_cls[c];
  u[SUR_NU - 1] = (uint32_t)s->cfg.batch;
  uint64_t np = s->n_params;
  size_t nb = SUR_HDR + sizeof(float) * s->n_params;
  uint8_t *buf = etsim_malloc(nb + 8);
  if (!buf) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  memcpy(buf, SUR_MAGIC, 8);
  memcpy(buf + 8, u, sizeof u);
  memcpy(buf + 8 + sizeof u, &np, 8);
  memcpy(buf + SUR_HDR, s->w, sizeof(float) * s->n_params);
  uint64_t h = etsim_hash_bytes(buf, nb);
  memcpy(buf + nb, &h, 8);
  int rc = etsim_outfile_write_all(path, buf, nb + 8, err);
  etsim_free(buf);
  return rc;
}

/* The header's fields after the magic (the caller checked it), checked;
 * a model with that layout, untrained. */
static int sur_header(const uint8_t *hdr, const char *path, etsim_synth_surrogate_t **out,
                      uint64_t *np, etsim_error_t *err) {
  uint32_t u[SUR_NU];
  memcpy(u, hdr + 8, sizeof u);
  memcpy(np, hdr + 8 + sizeof u, 8);
  if (u[0] != SUR_VERSION)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: surrogate format version %u, this etsim reads version %u", path,
                           u[0], SUR_VERSION);
  if (u[1] != 0x01020304u)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: written on a machine of another byte order",
                           path);
  etsim_synth_surrogate_config_t c;
  etsim_synth_surrogate_config_default(&c);
  c.hidden = (int)(u[2] <= 4096 ? u[2] : 0);
  c.mp_layers = (int)(u[3] <= SY_MAXK ? u[3] : SY_MAXK + 1);
  c.batch = (int)(u[SUR_NU - 1] <= (1u << 20) ? u[SUR_NU - 1] : 0);
  etsim_synth_data_t d;
  memset(&d, 0, sizeof d);
  d.n_ch = u[4];
  for (uint32_t k = 0; k < ETSIM_SYNTH_MAX_CH; k++) {
    if (u[5 + k] > (1u << 20) || (k >= d.n_ch && u[5 + k]))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: header value at byte %u out of range", path,
                             8 + 4 * (5 + k));
    d.n_cls[k] = u[5 + k];
  }
  etsim_error_t e2 = {0};
  if (surrogate_new(&d, &c, out, &e2))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: header: %s", path, e2.msg);
  size_t want = (*out)->n_params;
  if (want != *np) {
    etsim_synth_surrogate_free(*out);
    *out = NULL;
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %llu parameters, the header's layout has %zu",
                           path, (unsigned long long)*np, want);
  }
  return 0;
}

int etsim_synth_surrogate_load(etsim_synth_surrogate_t **out, const char *path,
                               etsim_error_t *err) {
  int rc = etsim_input_check(path, err);
  if (rc) return rc;
  FILE *fp = fopen(path, "rb");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: %s", path, strerror(errno));
  uint8_t hdr[SUR_HDR], *buf = NULL, extra;
  etsim_synth_surrogate_t *s = NULL;
  uint64_t np = 0, h;
  size_t got = fread(hdr, 1, SUR_HDR, fp);
  if (got < 8 || memcmp(hdr, SUR_MAGIC, 8))
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: not an etsim surrogate (bad magic)", path);
  else if (got < SUR_HDR)
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu", path, got);
  else rc = sur_header(hdr, path, &s, &np, err);
  size_t nw = sizeof(float) * (size_t)np;
  if (!rc && !(buf = etsim_malloc(SUR_HDR + nw)))
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  if (!rc) {
    memcpy(buf, hdr, SUR_HDR);
    got = fread(buf + SUR_HDR, 1, nw, fp);
    if (got == nw) got += fread(&h, 1, 8, fp);
    if (got < nw + 8)
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu", path, SUR_HDR + got);
    else if (fread(&extra, 1, 1, fp) == 1)
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: data after byte %zu", path, SUR_HDR + nw + 8);
    else if (h != etsim_hash_bytes(buf, SUR_HDR + nw))
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: checksum mismatch (damaged file)", path);
  }
  if (!rc) {
    memcpy(s->w, buf + SUR_HDR, nw);
    for (size_t i = 0; i < s->n_params && !rc; i++)
      if (!isfinite(s->w[i]))
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: parameter %zu is not finite", path, i);
  }
  fclose(fp);
  etsim_free(buf);
  if (rc) {
    etsim_synth_surrogate_free(s);
    return rc;
  }
  *out = s;
  return 0;
}
