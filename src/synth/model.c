/*
 * model.c — the layer-wise generator: parameters, the causal encoder, the
 * three heads and their losses (forward and hand-written backward), and
 * training.
 *
 * One pass of the causal encoder over a whole graph gives the embedding of
 * every node; because messages only flow from parents to children, the
 * embeddings of a prefix never change when later layers are added, so the
 * prefix summaries of every step are cumulative sums over layers and a
 * graph costs one encoder pass per epoch instead of one per layer.
 *
 * Rows: row 0 is the start token (layer 0, an extra category, no edges);
 * rows 1.. are the graph's nodes sorted by layer.
 */
#include "synth/synth_int.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- schedule */

void etsim_synth__schedule(int T, double *abar, double *alpha) {
  const double s = 0.008;
  double f0 = cos((s / (1 + s)) * M_PI / 2);
  f0 *= f0;
  abar[0] = 1;
  alpha[0] = 1;
  double prev = 1;
  for (int t = 1; t <= T; t++) {
    double f = cos((((double)t / T) + s) / (1 + s) * M_PI / 2);
    double ab = f * f / f0;
    double beta = 1 - ab / prev;
    if (beta > 0.9999) beta = 0.9999;
    if (beta < 0) beta = 0;
    prev = ab;
    alpha[t] = 1 - beta;
    abar[t] = abar[t - 1] * alpha[t];
  }
}

/* ------------------------------------------------------------- parameters */

typedef struct {
  size_t off;
  float *w, *g;
} cursor_t;

static float *take(cursor_t *c, size_t n, float **grad) {
  float *p = c->w ? c->w + c->off : NULL;
  if (grad) *grad = c->g ? c->g + c->off : NULL;
  c->off += n;
  return p;
}

static void lin(cursor_t *c, nn_linear_t *l, int in, int out, int bias) {
  l->in = in;
  l->out = out;
  l->w = take(c, (size_t)in * out, &l->gw);
  l->b = l->gb = NULL;
  if (bias) l->b = take(c, (size_t)out, &l->gb);
}

int etsim_synth__dim_hist(const etsim_synth_model_t *m) {
  return m->cfg.ctx_hist & ETSIM_SYNTH_HIST_DENOISE ? 3 * (int)m->sum_cls : 0;
}
int etsim_synth__dim_size_in(const etsim_synth_model_t *m) {
  return SY_SIZEF + (m->cfg.ctx_hist & ETSIM_SYNTH_HIST_SIZE ? (int)m->sum_cls : 0);
}
int etsim_synth__dim_recent(const etsim_synth_model_t *m) {
  return m->cfg.ctx_hist & ETSIM_SYNTH_CTX_RECENT ? (int)m->n_cls[0] : 0;
}
int etsim_synth__off_recent(const etsim_synth_model_t *m) {
  return m->cfg.hidden + SY_FEAT + SY_DY + etsim_synth__dim_hist(m);
}
int etsim_synth__dim_ctx(const etsim_synth_model_t *m) {
  return etsim_synth__off_recent(m) + etsim_synth__dim_recent(m) +
         (m->cfg.ctx_hist & ETSIM_SYNTH_CTX_PROGRESS ? SY_PROG : 0);
}

/* 1 / (1 + layers since): the last layer, the one before and the one
 * before that are 1, 1/2, 1/3 apart, which is where a trace's periods
 * lie (a ZeRO-3 backward pass repeats collective, compute, compute), and
 * a class never seen is 0, below any gap. */
void etsim_synth__recent_feats(const etsim_synth_model_t *m, int l, const uint32_t *seen,
                               float *f) {
  for (uint32_t k = 0; k < m->n_cls[0]; k++)
    f[k] = seen[k] ? (float)(1.0 / (1.0 + (double)l - (double)seen[k])) : 0.0f;
}

/* log(1 + count) / 2: counts of a few nodes matter most (a layer after a
 * given op, the third input of a kernel), and large prefixes stay bounded. */
void etsim_synth__hist_feats(const etsim_synth_model_t *m, const uint32_t *last,
                             const uint32_t *prefix, const uint32_t *open, float *f) {
  uint32_t K = m->sum_cls;
  for (uint32_t k = 0; k < K; k++) {
    f[k] = (float)(log1p((double)last[k]) / 2);
    f[K + k] = (float)(log1p((double)prefix[k]) / 2);
    f[2 * K + k] = (float)(log1p((double)open[k]) / 2);
  }
}
int etsim_synth__dim_attr_in(const etsim_synth_model_t *m) {
  return 2 * m->cfg.hidden + etsim_synth__dim_ctx(m) + SY_DT;
}
int etsim_synth__dim_edge_in(const etsim_synth_model_t *m) {
  return 2 * m->cfg.hidden + etsim_synth__dim_ctx(m) + SY_DT + 1;
}

static size_t layout(etsim_synth_model_t *m, float *w, float *g) {
  cursor_t c = {0, w, g};
  int H = m->cfg.hidden, K = m->cfg.mp_layers, P = m->cfg.pair_hidden;
  for (uint32_t ch = 0; ch < m->n_ch; ch++)
    m->emb[ch] = take(&c, (size_t)(m->n_cls[ch] + 1) * H, &m->gemb[ch]);
  lin(&c, &m->enc_in, H, H, 1);
  for (int k = 0; k < K; k++) {
    lin(&c, &m->mp_msg[k], H, H, 0);
    lin(&c, &m->mp_self[k], H, H, 1);
  }
  for (int k = 0; k <= K; k++) lin(&c, &m->jk[k], H, H, k == 0);
  m->ln_g = take(&c, (size_t)H, &m->gln_g);
  m->ln_b = take(&c, (size_t)H, &m->gln_b);
  lin(&c, &m->c1, etsim_synth__dim_size_in(m), H, 1);
  lin(&c, &m->c2, H, (int)m->max_size, 1);
  lin(&c, &m->s1, SY_STOPF, H, 1);
  lin(&c, &m->s2, H, 1, 1);
  for (uint32_t ch = 0; ch < m->n_ch; ch++)
    m->aemb[ch] = take(&c, (size_t)m->n_cls[ch] * H, &m->gaemb[ch]);
  lin(&c, &m->a1, etsim_synth__dim_attr_in(m), H, 1);
  lin(&c, &m->a2, H, H, 1);
  lin(&c, &m->a3, H, (int)m->sum_cls, 1);
  for (uint32_t ch = 0; ch < m->n_ch; ch++)
    m->eemb[ch] = take(&c, (size_t)m->n_cls[ch] * H, &m->geemb[ch]);
  lin(&c, &m->es_z, H, P, 0);
  lin(&c, &m->es_g, SY_GAPF, P, 1);
  lin(&c, &m->ed, etsim_synth__dim_edge_in(m), P, 1);
  m->eo = take(&c, (size_t)P, &m->geo);
  m->eob = take(&c, 1, &m->geob);
  m->ew = take(&c, (size_t)P, &m->gew);
  /* Last, so the other parameters keep their places and initial values. */
  if (m->cfg.label_film) {
    lin(&c, &m->af1, SY_DY, 2 * H, 1);
    lin(&c, &m->af2, SY_DY, 2 * H, 1);
  }
  if (m->cfg.label_edge) lin(&c, &m->ef, SY_DY, P, 1);
  if (m->cfg.size_cond) lin(&c, &m->ncs, SY_NCF, H, 0);
  if (m->cfg.size_cond == ETSIM_SYNTH_SIZE_COND_HEADS) lin(&c, &m->ncc, SY_NCF + 1, H, 0);
  if (m->cfg.succ_msg) lin(&c, &m->succ, H, H, 0);
  if (m->cfg.attn) {
    lin(&c, &m->aq, H, H, 0);
    lin(&c, &m->ak, H, H, 0);
    lin(&c, &m->av, H, H, 0);
    lin(&c, &m->ao, H, H, 0);
  }
  if (m->cfg.bidir)
    for (int k = 0; k < K; k++) lin(&c, &m->mp_rev[k], H, H, 0);
  return c.off;
}

static void init_lin(nn_linear_t *l, etsim_rng_t *r) {
  float s = (float)sqrt(2.0 / l->in);
  for (size_t i = 0; i < (size_t)l->in * l->out; i++) l->w[i] = (float)etsim_rng_normal(r) * s;
  if (l->b) memset(l->b, 0, sizeof(float) * (size_t)l->out);
}

size_t etsim_synth__param_count(etsim_synth_model_t *m) { return layout(m, NULL, NULL); }

int etsim_synth__alloc_params(etsim_synth_model_t *m, int init, uint64_t seed) {
  size_t n = layout(m, NULL, NULL);
  m->n_params = n;
  m->w = etsim_calloc(n, sizeof(float));
  m->g = etsim_calloc(n, sizeof(float));
  m->adam_m = etsim_calloc(n, sizeof(float));
  m->adam_v = etsim_calloc(n, sizeof(float));
  m->adam_vmax = etsim_calloc(n, sizeof(float));
  if (!m->w || !m->g || !m->adam_m || !m->adam_v || !m->adam_vmax) return ETSIM_ENOMEM;
  layout(m, m->w, m->g);
  if (!init) return 0;
  etsim_rng_t r;
  etsim_rng_seed(&r, seed ^ 0x1a7e4da9ULL);
  int H = m->cfg.hidden, K = m->cfg.mp_layers;
  for (uint32_t ch = 0; ch < m->n_ch; ch++) {
    for (size_t i = 0; i < (size_t)(m->n_cls[ch] + 1) * H; i++)
      m->emb[ch][i] = (float)(etsim_rng_normal(&r) * 0.5);
    for (size_t i = 0; i < (size_t)m->n_cls[ch] * H; i++) {
      m->aemb[ch][i] = (float)(etsim_rng_normal(&r) * 0.5);
      m->eemb[ch][i] = (float)(etsim_rng_normal(&r) * 0.5);
    }
  }
  init_lin(&m->enc_in, &r);
  for (int k = 0; k < K; k++) {
    init_lin(&m->mp_msg[k], &r);
    init_lin(&m->mp_self[k], &r);
    /* Sums over many parents grow with the degree: start the message
     * weights small so deep graphs do not blow up at initialisation. */
    for (size_t i = 0; i < (size_t)H * H; i++) m->mp_msg[k].w[i] *= 0.3f;
  }
  for (int k = 0; k <= K; k++) init_lin(&m->jk[k], &r);
  for (int j = 0; j < H; j++) {
    m->ln_g[j] = 1;
    m->ln_b[j] = 0;
  }
  init_lin(&m->c1, &r);
  init_lin(&m->c2, &r);
  init_lin(&m->s1, &r);
  init_lin(&m->s2, &r);
  /* Start the stop head at the mean stop rate, one stop per graph. */
  m->s2.b[0] = (float)-log(m->mean_steps > 2 ? m->mean_steps - 2 : 1.0);
  init_lin(&m->a1, &r);
  init_lin(&m->a2, &r);
  init_lin(&m->a3, &r);
  init_lin(&m->es_z, &r);
  init_lin(&m->es_g, &r);
  init_lin(&m->ed, &r);
  float s = (float)sqrt(1.0 / m->cfg.pair_hidden);
  for (int j = 0; j < m->cfg.pair_hidden; j++) m->eo[j] = (float)etsim_rng_normal(&r) * s;
  /* Start the edge logit at the prior odds of a typical step. */
  m->eob[0] = -2.0f;
  /* The pair's own noisy bit starts with no say; training gives it one. */
  for (int j = 0; j < m->cfg.pair_hidden; j++) m->ew[j] = 0;
  if (m->cfg.attn) {
    /* A stream of its own, so every other parameter starts as without the
     * option; Wo stays zero, so the block starts as the identity. */
    etsim_rng_seed(&r, seed ^ 0x5a77e4710c3bULL);
    float sa = (float)sqrt(1.0 / H);
    nn_linear_t *qkv[3] = {&m->aq, &m->ak, &m->av};
    for (int k = 0; k < 3; k++)
      for (size_t i = 0; i < (size_t)H * H; i++) qkv[k]->w[i] = (float)etsim_rng_normal(&r) * sa;
  }
  return 0;
}

void etsim_synth_config_default(etsim_synth_config_t *c) {
  c->hidden = 64;
  c->mp_layers = 2;
  c->pair_hidden = 32;
  c->t_attr = 64;
  c->t_edge = 16;
  c->epochs = 40;
  c->batch = 16;
  c->lr = 2e-3f;
  c->seed = 1;
  c->exact_candidates = 256;
  /* Progress and recency apply to traces only (etsim_synth__model_new):
   * text DAGs train with the histograms alone, as before. */
  c->ctx_hist = ETSIM_SYNTH_HIST_DENOISE | ETSIM_SYNTH_CTX_PROGRESS | ETSIM_SYNTH_CTX_RECENT;
  c->label_drop = 0;
  c->label_film = 0;
  c->label_edge = 0;
  c->ema = 0;
  c->size_cond = 0;
  c->succ_msg = 0;
  c->attn = 0;
  c->bidir = 0;
}

void etsim_synth_model_free(etsim_synth_model_t *m) {
  if (!m) return;
  etsim_free(m->marg);
  etsim_free(m->cat_cap);
  etsim_free(m->w);
  etsim_free(m->g);
  etsim_free(m->adam_m);
  etsim_free(m->adam_v);
  etsim_free(m->adam_vmax);
  etsim_free(m);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* How one label component enters the model: its log when every training
 * value is positive, standardised over the training set; and its median.
 * Sorts v. */
static void label_scale(double *v, size_t n, int *lg, double *mean, double *sd, double *median) {
  int pos = 1;
  for (size_t i = 0; i < n; i++)
    if (!(v[i] > 0)) pos = 0;
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) {
    double y = pos ? log(v[i]) : v[i];
    s += y;
    s2 += y * y;
  }
  *lg = pos;
  *mean = s / (double)n;
  double var = s2 / (double)n - *mean * *mean;
  *sd = var > 1e-12 ? sqrt(var) : 1.0;
  etsim_qsort(v, n, sizeof *v, cmp_double);
  *median = v[n / 2];
}

/* The longest run of consecutive layers holding communication nodes
 * only, into m->max_comm_run: cnt[1..L] holds the layer sizes, comm[1..L]
 * their communication nodes (counted in the one pass over the nodes, so
 * this stays linear in a deep graph). */
static void comm_runs(etsim_synth_model_t *m, int L, const uint32_t *cnt, const uint32_t *comm) {
  uint32_t run = 0;
  for (int l = 1; l <= L; l++) {
    run = comm[l] == cnt[l] ? run + 1 : 0;
    if (run > m->max_comm_run) m->max_comm_run = run;
  }
}

int etsim_synth__model_new(const etsim_synth_data_t *d, const etsim_synth_config_t *cfg,
                           etsim_synth_model_t **out, etsim_error_t *err) {
  if (!d->n_graphs) return etsim_error_set(err, ETSIM_EINVAL, "no training graphs");
  if (cfg->hidden < 4 || cfg->hidden > 4096 || cfg->mp_layers < 0 || cfg->mp_layers > SY_MAXK ||
      cfg->pair_hidden < 1 || cfg->pair_hidden > 4096 || cfg->t_attr < 1 || cfg->t_attr > SY_MAXT ||
      cfg->t_edge < 1 || cfg->t_edge > SY_MAXT)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "model size out of range (hidden 4..4096, "
                           "mp_layers 0..%d, T 1..%d)",
                           SY_MAXK, SY_MAXT);
  if (cfg->size_cond < 0 || cfg->size_cond > ETSIM_SYNTH_SIZE_COND_STOP)
    return etsim_error_set(err, ETSIM_EINVAL, "size_cond %d: must be 0, 1 or 2", cfg->size_cond);
  if (cfg->attn < 0 || cfg->attn > 1)
    return etsim_error_set(err, ETSIM_EINVAL, "attn %d: must be 0 or 1", cfg->attn);
  if (cfg->bidir < 0 || cfg->bidir > 1 || (cfg->bidir && cfg->succ_msg))
    return etsim_error_set(err, ETSIM_EINVAL, "bidir %d: must be 0 or 1, and 0 with succ_msg",
                           cfg->bidir);
  etsim_synth_model_t *m = etsim_calloc(1, sizeof *m);
  if (!m) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  m->cfg = *cfg;
  m->kind = d->kind;
  /* Depth progress and class recency are measured on traces only
   * (docs/synth.md): text DAGs train and sample as before. */
  if (d->kind != ETSIM_SYNTH_KIND_TRACE)
    m->cfg.ctx_hist &= ~(ETSIM_SYNTH_CTX_PROGRESS | ETSIM_SYNTH_CTX_RECENT);
  for (int b = 0; b < ETSIM_SYNTH_BIN_VALUES; b++)
    m->bin_mean[b] = d->bin_n[b] > 0 ? d->bin_sum[b] / d->bin_n[b] : 0;
  m->n_ch = d->n_ch;
  for (uint32_t c = 0; c < d->n_ch; c++) {
    m->n_cls[c] = d->n_cls[c];
    m->sum_cls += d->n_cls[c];
  }
  m->comm_rule = d->kind == ETSIM_SYNTH_KIND_TRACE && d->n_ch == ETSIM_SYNTH_TRACE_CH;
  m->marg = etsim_calloc(m->sum_cls + 1, sizeof(float));
  double *ys = etsim_malloc(sizeof(double) * d->n_graphs);
  uint32_t *layer = NULL, *cnt = NULL, *comm = NULL;
  size_t lcap = 0, ccap = 0, kcap = 0;
  double *mc = etsim_calloc(m->sum_cls + 1, sizeof(double));
  if (!m->marg || !ys || !mc) goto oom;
  double nonsrc = 0, nonsrc_edges = 0;
  for (size_t i = 0; i < d->n_graphs; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    if (etsim_grow((void **)&layer, &lcap, g->n_nodes + 1, sizeof *layer)) goto oom;
    int L = etsim_synth_layers(g, layer, err);
    if (L < 0) {
      etsim_error_prefix(err, "training graph %zu", i);
      goto fail;
    }
    if ((uint32_t)L > m->max_layers) m->max_layers = (uint32_t)L;
    if (g->n_nodes > m->max_nodes) m->max_nodes = g->n_nodes;
    if (etsim_grow((void **)&cnt, &ccap, (size_t)L + 2, sizeof *cnt) ||
        etsim_grow((void **)&comm, &kcap, (size_t)L + 2, sizeof *comm))
      goto oom;
    memset(cnt, 0, sizeof *cnt * ((size_t)L + 2));
    memset(comm, 0, sizeof *comm * ((size_t)L + 2));
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      cnt[layer[v]]++;
      if (m->comm_rule) comm[layer[v]] += etsim_synth__is_comm(g->x[(size_t)v * d->n_ch]);
      if (layer[v] > 1) nonsrc++;
      uint32_t off = 0;
      for (uint32_t c = 0; c < d->n_ch; c++) {
        uint32_t x = g->x[(size_t)v * d->n_ch + c];
        if (x >= d->n_cls[c]) {
          etsim_error_set(err, ETSIM_EFORMAT, "training graph %zu node %u: category %u >= %u", i, v,
                          x, d->n_cls[c]);
          goto fail;
        }
        mc[off + x] += 1;
        off += d->n_cls[c];
      }
    }
    for (uint32_t k = 0; k < g->n_edges; k++) nonsrc_edges += 1;
    for (int l = 1; l <= L; l++)
      if (cnt[l] > m->max_size) m->max_size = cnt[l];
    if (m->comm_rule) comm_runs(m, L, cnt, comm);
    m->mean_steps += L + 1;
    m->mean_nodes += g->n_nodes;
    for (int l = 2, before = (int)cnt[1]; l <= L; before += (int)cnt[l], l++)
      m->mean_pairs += (double)cnt[l] * before;
    ys[i] = g->y;
  }
  m->mean_steps /= (double)d->n_graphs;
  m->mean_nodes /= (double)d->n_graphs;
  m->mean_pairs /= (double)d->n_graphs;
  if (m->mean_pairs < 1) m->mean_pairs = 1;
  m->mean_indeg = nonsrc > 0 ? nonsrc_edges / nonsrc : 1.0;
  if (m->mean_indeg < 1) m->mean_indeg = 1;
  {
    uint32_t off = 0;
    for (uint32_t c = 0; c < d->n_ch; c++) {
      double tot = 0;
      for (uint32_t k = 0; k < d->n_cls[c]; k++) tot += mc[off + k];
      /* Categories never seen in training keep probability 0: the prior
       * never draws them and the sampler masks them out of predictions, so
       * a sample only holds categories the data has. */
      for (uint32_t k = 0; k < d->n_cls[c]; k++)
        m->marg[off + k] = tot > 0 ? (float)(mc[off + k] / tot) : 1.0f / (float)d->n_cls[c];
      off += d->n_cls[c];
    }
  }
  label_scale(ys, d->n_graphs, &m->y_log, &m->y_mean, &m->y_std, &m->y_median);
  m->n_lab = d->n_labels >= 2 ? 2 : 1;
  m->y2_std = 1;
  if (m->n_lab == 2) {
    for (size_t i = 0; i < d->n_graphs; i++) {
      ys[i] = d->g[i].y2;
      if (!isfinite(ys[i])) {
        etsim_error_set(err, ETSIM_EINVAL, "training graph %zu: second label component %g", i,
                        ys[i]);
        goto fail;
      }
    }
    label_scale(ys, d->n_graphs, &m->y2_log, &m->y2_mean, &m->y2_std, &m->y2_median);
  }
  etsim_synth__schedule(cfg->t_attr, m->abar_a, m->alpha_a);
  etsim_synth__schedule(cfg->t_edge, m->abar_e, m->alpha_e);
  etsim_free(ys);
  etsim_free(layer);
  etsim_free(cnt);
  etsim_free(comm);
  etsim_free(mc);
  *out = m;
  return 0;
oom:
  etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
fail:
  etsim_free(ys);
  etsim_free(layer);
  etsim_free(cnt);
  etsim_free(comm);
  etsim_free(mc);
  etsim_synth_model_free(m);
  return err ? err->code : ETSIM_ENOMEM;
}

/* ------------------------------------------------------------ workspace */

float *etsim_synth__pz(pool_t *p, size_t n) {
  n = (n + 15) & ~(size_t)15;
  while (p->cur && p->cur->used + n > p->cur->cap) {
    if (!p->cur->next) break;
    p->cur = p->cur->next;
    p->cur->used = 0;
  }
  if (!p->cur || p->cur->used + n > p->cur->cap) {
    size_t cap = n > (1u << 16) ? n : (1u << 16);
    chunk_t *c = etsim_malloc(sizeof *c + sizeof(float) * cap);
    if (!c) {
      p->oom = 1;
      return NULL;
    }
    c->next = NULL;
    c->cap = cap;
    c->used = 0;
    if (p->cur) {
      c->next = p->cur->next;
      p->cur->next = c;
    } else {
      p->head = c;
    }
    p->cur = c;
  }
  float *r = p->cur->data + p->cur->used;
  p->cur->used += n;
  memset(r, 0, sizeof(float) * n);
  return r;
}

void etsim_synth__pool_reset(pool_t *p) {
  p->cur = p->head;
  if (p->cur) p->cur->used = 0;
  p->oom = 0;
}

void etsim_synth__pool_free(pool_t *p) {
  chunk_t *c = p->head;
  while (c) {
    chunk_t *n = c->next;
    etsim_free(c);
    c = n;
  }
  p->head = p->cur = NULL;
}

/* A graph in row form. */
typedef struct {
  int n, L;              /* rows (nodes + 1), layers */
  uint32_t *lay;         /* row -> layer */
  uint32_t *ls;          /* L + 2 entries: layer l holds rows [ls[l], ls[l+1]) */
  uint32_t *poff, *padj; /* parent rows of each row (CSR) */
  int32_t *xr;           /* channel-major categories: xr[c * n + r] */
  uint32_t *orig;        /* row -> node index of the DAG (row 0: unused) */
} rows_t;

static void rows_free(rows_t *r) {
  etsim_free(r->lay);
  etsim_free(r->ls);
  etsim_free(r->poff);
  etsim_free(r->padj);
  etsim_free(r->xr);
  etsim_free(r->orig);
  memset(r, 0, sizeof *r);
}

static int rows_build(const etsim_synth_model_t *m, const etsim_synth_dag_t *g, rows_t *R,
                      etsim_error_t *err) {
  memset(R, 0, sizeof *R);
  uint32_t nn = g->n_nodes;
  int n = (int)nn + 1;
  uint32_t *layer = etsim_malloc(sizeof *layer * (nn + 1));
  uint32_t *rowof = etsim_malloc(sizeof *rowof * (nn + 1));
  R->lay = etsim_malloc(sizeof *R->lay * (size_t)n);
  R->poff = etsim_calloc((size_t)n + 1, sizeof *R->poff);
  R->padj = etsim_malloc(sizeof *R->padj * (g->n_edges + 1));
  R->xr = etsim_malloc(sizeof *R->xr * (size_t)n * m->n_ch);
  R->orig = etsim_malloc(sizeof *R->orig * (size_t)n);
  int rc = 0;
  if (!layer || !rowof || !R->lay || !R->poff || !R->padj || !R->xr || !R->orig) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  int L = etsim_synth_layers(g, layer, err);
  if (L < 0) {
    rc = L;
    goto out;
  }
  if (m->cfg.bidir && (uint64_t)L * (uint64_t)n > SY_BIDIR_MAX_WORK) {
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%d layers and %u nodes: the bidirectional encoder (--bidir) re-encodes "
                         "every prefix, and takes graphs whose layers times nodes is at most %llu",
                         L, nn, (unsigned long long)SY_BIDIR_MAX_WORK);
    goto out;
  }
  R->n = n;
  R->L = L;
  R->ls = etsim_calloc((size_t)L + 3, sizeof *R->ls);
  if (!R->ls) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  for (uint32_t v = 0; v < nn; v++) R->ls[layer[v] + 1]++;
  R->ls[0] = 0;
  R->ls[1] = 1; /* row 0 = start token = layer 0 */
  for (int l = 1; l <= L + 1; l++) R->ls[l] += R->ls[l - 1];
  /* ls[l] now = first row of layer l (rows of layer l follow the start). */
  {
    uint32_t *cur = etsim_malloc(sizeof *cur * ((size_t)L + 2));
    if (!cur) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto out;
    }
    memcpy(cur, R->ls, sizeof *cur * ((size_t)L + 2));
    for (uint32_t v = 0; v < nn; v++) {
      uint32_t r = cur[layer[v]]++;
      rowof[v] = r;
      R->orig[r] = v;
      R->lay[r] = layer[v];
    }
    etsim_free(cur);
  }
  R->lay[0] = 0;
  R->orig[0] = 0;
  for (uint32_t k = 0; k < g->n_edges; k++) R->poff[rowof[g->dst[k]] + 1]++;
  for (int r = 0; r < n; r++) R->poff[r + 1] += R->poff[r];
  {
    uint32_t *cur = etsim_malloc(sizeof *cur * ((size_t)n + 1));
    if (!cur) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto out;
    }
    memcpy(cur, R->poff, sizeof *cur * (size_t)n);
    for (uint32_t k = 0; k < g->n_edges; k++) R->padj[cur[rowof[g->dst[k]]]++] = rowof[g->src[k]];
    etsim_free(cur);
  }
  for (uint32_t c = 0; c < m->n_ch; c++) {
    R->xr[(size_t)c * n] = (int32_t)m->n_cls[c]; /* start category */
    for (uint32_t v = 0; v < nn; v++) {
      uint32_t x = g->x[(size_t)v * m->n_ch + c];
      if (x >= m->n_cls[c]) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "node %u: category %u of channel %u is outside "
                             "the model's 0..%u",
                             v, x, c, m->n_cls[c] - 1);
        goto out;
      }
      R->xr[(size_t)c * n + rowof[v]] = (int32_t)x;
    }
  }
out:
  etsim_free(layer);
  etsim_free(rowof);
  if (rc) rows_free(R);
  return rc;
}

int etsim_synth__enc_alloc(const etsim_synth_model_t *m, pool_t *p, int cap, enc_t *e) {
  int H = m->cfg.hidden, K = m->cfg.mp_layers;
  size_t nh = (size_t)cap * H;
  e->X0 = etsim_synth__pz(p, nh);
  for (int k = 0; k <= K; k++) {
    e->P[k] = etsim_synth__pz(p, nh);
    e->Hh[k] = etsim_synth__pz(p, nh);
    e->M[k] = etsim_synth__pz(p, nh);
  }
  e->Z = etsim_synth__pz(p, nh);
  e->Zs = etsim_synth__pz(p, (size_t)cap * m->cfg.pair_hidden);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* Forward over rows [r0, r1); rows below r0 must be done already. */
void etsim_synth__enc_fwd(const etsim_synth_model_t *m, enc_t *e, int n_rows_xr, const int32_t *xr,
                          const uint32_t *poff, const uint32_t *padj, int r0, int r1) {
  int H = m->cfg.hidden, K = m->cfg.mp_layers, P = m->cfg.pair_hidden;
  int nr = r1 - r0;
  size_t o = (size_t)r0 * H;
  memset(e->X0 + o, 0, sizeof(float) * (size_t)nr * H);
  for (uint32_t c = 0; c < m->n_ch; c++)
    etsim_synth__nn_embed_fwd_add(nr, H, m->emb[c], xr + (size_t)c * n_rows_xr + r0, e->X0 + o);
  etsim_synth__nn_linear_fwd(&m->enc_in, nr, e->X0 + o, e->P[0] + o);
  etsim_synth__nn_gelu_fwd((size_t)nr * H, e->P[0] + o, e->Hh[0] + o);
  for (int k = 1; k <= K; k++) {
    memset(e->M[k] + o, 0, sizeof(float) * (size_t)nr * H);
    etsim_synth__nn_spmm_add(r0, r1, H, poff, padj, e->Hh[k - 1], e->M[k]);
    etsim_synth__nn_linear_fwd(&m->mp_self[k - 1], nr, e->Hh[k - 1] + o, e->P[k] + o);
    etsim_synth__nn_linear_fwd_add(&m->mp_msg[k - 1], nr, e->M[k] + o, e->P[k] + o, 0);
    etsim_synth__nn_gelu_fwd((size_t)nr * H, e->P[k] + o, e->Hh[k] + o);
  }
  etsim_synth__nn_linear_fwd(&m->jk[0], nr, e->Hh[0] + o, e->Z + o);
  for (int k = 1; k <= K; k++)
    etsim_synth__nn_linear_fwd_add(&m->jk[k], nr, e->Hh[k] + o, e->Z + o, 0);
  memset(e->Zs + (size_t)r0 * P, 0, sizeof(float) * (size_t)nr * P);
  etsim_synth__nn_linear_fwd_add(&m->es_z, nr, e->Z + o, e->Zs + (size_t)r0 * P, 0);
}

/* Forward of cfg.bidir over the prefix rows [0, rows) (synth_int.h). */
void etsim_synth__bidir_fwd(const etsim_synth_model_t *m, enc_t *e, float *const *Mr, int n_rows_xr,
                            const int32_t *xr, const uint32_t *poff, const uint32_t *padj,
                            int rows) {
  int H = m->cfg.hidden, K = m->cfg.mp_layers, P = m->cfg.pair_hidden;
  size_t nh = (size_t)rows * H;
  memset(e->X0, 0, sizeof(float) * nh);
  for (uint32_t c = 0; c < m->n_ch; c++)
    etsim_synth__nn_embed_fwd_add(rows, H, m->emb[c], xr + (size_t)c * n_rows_xr, e->X0);
  etsim_synth__nn_linear_fwd(&m->enc_in, rows, e->X0, e->P[0]);
  etsim_synth__nn_gelu_fwd(nh, e->P[0], e->Hh[0]);
  for (int k = 1; k <= K; k++) {
    memset(e->M[k], 0, sizeof(float) * nh);
    memset(Mr[k], 0, sizeof(float) * nh);
    etsim_synth__nn_spmm_add(0, rows, H, poff, padj, e->Hh[k - 1], e->M[k]);
    /* The children's sums: each prefix row's state into its parents'. */
    etsim_synth__nn_spmm_t_add(0, rows, H, poff, padj, e->Hh[k - 1], Mr[k]);
    etsim_synth__nn_linear_fwd(&m->mp_self[k - 1], rows, e->Hh[k - 1], e->P[k]);
    etsim_synth__nn_linear_fwd_add(&m->mp_msg[k - 1], rows, e->M[k], e->P[k], 0);
    etsim_synth__nn_linear_fwd_add(&m->mp_rev[k - 1], rows, Mr[k], e->P[k], 0);
    etsim_synth__nn_gelu_fwd(nh, e->P[k], e->Hh[k]);
  }
  etsim_synth__nn_linear_fwd(&m->jk[0], rows, e->Hh[0], e->Z);
  for (int k = 1; k <= K; k++) etsim_synth__nn_linear_fwd_add(&m->jk[k], rows, e->Hh[k], e->Z, 0);
  memset(e->Zs, 0, sizeof(float) * (size_t)rows * P);
  etsim_synth__nn_linear_fwd_add(&m->es_z, rows, e->Z, e->Zs, 0);
}

/* Gradient buffers of the encoder's backward pass (n rows x H each). */
typedef struct enc_grad {
  float *dH[SY_MAXK + 1], *dP, *dM;
} enc_grad_t;

static int enc_grad_alloc(const etsim_synth_model_t *m, pool_t *p, int n, enc_grad_t *d) {
  size_t nh = (size_t)n * m->cfg.hidden;
  for (int k = 0; k <= m->cfg.mp_layers; k++) d->dH[k] = etsim_synth__pz(p, nh);
  d->dP = etsim_synth__pz(p, nh), d->dM = etsim_synth__pz(p, nh);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* Back through the encoder's n rows from dZ and dZs (dZ gains es_z's
 * part); xr has row stride nx.  With Mr (cfg.bidir) the pass is the
 * bidirectional one of etsim_synth__bidir_fwd, else the causal one. */
static void enc_bwd_rows(etsim_synth_model_t *m, const enc_grad_t *d, enc_t *e, float *const *Mr,
                         int n, int nx, const int32_t *xr, const uint32_t *poff,
                         const uint32_t *padj, float *dZ, const float *dZs) {
  int H = m->cfg.hidden, K = m->cfg.mp_layers;
  size_t nh = (size_t)n * H;
  float *dP = d->dP, *dM = d->dM;
  etsim_synth__nn_linear_bwd(&m->es_z, n, e->Z, dZs, dZ, 0);
  for (int k = 0; k <= K; k++) {
    memset(d->dH[k], 0, sizeof(float) * nh);
    etsim_synth__nn_linear_bwd(&m->jk[k], n, e->Hh[k], dZ, d->dH[k], k == 0);
  }
  for (int k = K; k >= 1; k--) {
    memset(dP, 0, sizeof(float) * nh);
    etsim_synth__nn_gelu_bwd(nh, e->P[k], d->dH[k], dP);
    etsim_synth__nn_linear_bwd(&m->mp_self[k - 1], n, e->Hh[k - 1], dP, d->dH[k - 1], 1);
    memset(dM, 0, sizeof(float) * nh);
    etsim_synth__nn_linear_bwd(&m->mp_msg[k - 1], n, e->M[k], dP, dM, 0);
    etsim_synth__nn_spmm_t_add(0, n, H, poff, padj, dM, d->dH[k - 1]);
    if (Mr) { /* the reverse messages: each row's state had gone to its parents */
      memset(dM, 0, sizeof(float) * nh);
      etsim_synth__nn_linear_bwd(&m->mp_rev[k - 1], n, Mr[k], dP, dM, 0);
      etsim_synth__nn_spmm_add(0, n, H, poff, padj, dM, d->dH[k - 1]);
    }
  }
  memset(dP, 0, sizeof(float) * nh);
  etsim_synth__nn_gelu_bwd(nh, e->P[0], d->dH[0], dP);
  memset(dM, 0, sizeof(float) * nh); /* dX0 */
  etsim_synth__nn_linear_bwd(&m->enc_in, n, e->X0, dP, dM, 1);
  for (uint32_t c = 0; c < m->n_ch; c++)
    etsim_synth__nn_embed_bwd(n, H, xr + (size_t)c * nx, dM, m->gemb[c]);
}

static void enc_bwd(etsim_synth_model_t *m, pool_t *p, enc_t *e, int n, const int32_t *xr,
                    const uint32_t *poff, const uint32_t *padj, float *dZ, const float *dZs) {
  enc_grad_t d;
  if (enc_grad_alloc(m, p, n, &d)) return;
  enc_bwd_rows(m, &d, e, NULL, n, n, xr, poff, padj, dZ, dZs);
}

/* Label and step features. */
void etsim_synth__label_feat(const etsim_synth_model_t *m, double y, double y2, float *out) {
  double u = m->y_log ? log(y > 1e-300 ? y : 1e-300) : y;
  u = (u - m->y_mean) / m->y_std;
  if (m->n_lab < 2) {
    etsim_synth__nn_sinusoid((float)u, SY_DY, 0.5f, out);
    return;
  }
  /* Half the frequencies each (1 to 1/8): the lower ones a lone label
   * also gets are nearly linear over |u| <= 3, so the heads keep their
   * widths and the first component loses little. */
  double u2 = m->y2_log ? log(y2 > 1e-300 ? y2 : 1e-300) : y2;
  u2 = (u2 - m->y2_mean) / m->y2_std;
  etsim_synth__nn_sinusoid((float)u, SY_DY / 2, 0.5f, out);
  etsim_synth__nn_sinusoid((float)u2, SY_DY / 2, 0.5f, out + SY_DY / 2);
}
void etsim_synth__t_feat(int t, int T, float *out) {
  etsim_synth__nn_sinusoid((float)(8.0 * t / T), SY_DT, 0.5f, out);
}

/* Context of step l (after layers 0..l): [LN(S_l) | features | label]. */
void etsim_synth__step_feats(const etsim_synth_model_t *m, int l, uint32_t n_prefix,
                             uint32_t last_size, float *f) {
  f[0] = (float)(log1p((double)n_prefix) / 4);
  f[1] = (float)(log1p((double)last_size) / 3);
  f[2] = (float)l / (float)(m->max_layers ? m->max_layers : 1);
  f[3] = l == 0 ? 1.0f : 0.0f;
}

void etsim_synth__stop_feats(const etsim_synth_model_t *m, int l, const float *ysin, float *f) {
  etsim_synth__nn_sinusoid((float)l, SY_DL, 0.5f, f);
  f[SY_DL] = (float)l / (float)(m->max_layers ? m->max_layers : 1);
  memcpy(f + SY_DL + 1, ysin, sizeof(float) * SY_DY);
}

void etsim_synth__count_feats(uint32_t n, float *f) {
  double z = log1p((double)n);
  f[0] = (float)(z / 4);
  etsim_synth__nn_sinusoid((float)z, SY_NCF - 1, 0.5f, f + 1);
}

void etsim_synth__count_size_feats(uint32_t n, uint32_t n_prefix, float *f) {
  etsim_synth__count_feats(n, f);
  f[SY_NCF] = (float)(log1p((double)(n > n_prefix ? n - n_prefix : 0)) / 4);
}

/* Where step l sits in a graph of L layers: the fraction done and the
 * layers left.  Trace data have phases (an LLM's forward pass carries no
 * collective, its backward pass one per layer) whose turn lies at a
 * fraction of the depth that the label does not pin; without it the
 * denoisers could not tell a long forward pass from a short one, and
 * sampled traces stopped, by the content-blind stop head, before any
 * collective (docs/synth.md, "Synthetic Chakra traces"). */
void etsim_synth__prog_feats(int l, int L, float *f) {
  f[0] = L > 0 ? (float)l / (float)L : 0.0f;
  f[1] = (float)(log1p((double)(L > l ? L - l : 0)) / 4);
}

void etsim_synth__size_feats(const etsim_synth_model_t *m, int l, uint32_t n_prefix,
                             uint32_t last_size, const float *ysin, float *f) {
  etsim_synth__stop_feats(m, l, ysin, f);
  f[SY_STOPF] = (float)(log1p((double)n_prefix) / 4);
  f[SY_STOPF + 1] = (float)(log1p((double)last_size) / 3);
}

void etsim_synth__gap_feats(uint32_t gap, uint32_t children, float *f) {
  f[0] = 1.0f / (float)gap;
  f[1] = gap == 1 ? 1.0f : 0.0f;
  f[2] = (float)(log((double)gap) / 4);
  f[3] = (float)(log1p((double)children) / 4);
}

/* Draw from a categorical distribution of n entries (sums to ~1). */
int etsim_synth__draw(etsim_rng_t *r, const float *p, int n) {
  double u = etsim_rng_uniform(r), c = 0;
  for (int i = 0; i < n; i++) {
    c += p[i];
    if (u < c) return i;
  }
  for (int i = n - 1; i >= 0; i--)
    if (p[i] > 0) return i;
  return 0;
}

/* ------------------------------------------------------------ graph loss */

typedef struct {
  pool_t pool;
  uint32_t *u32;
  size_t u32_cap;
  uint8_t *u8;
  size_t u8_cap;
  int32_t *i32;
  size_t i32_cap;
  /* Sampled candidates (edges_sampled): per row a stamp marking the
   * current new node's listed candidates; per pair the candidate, its new
   * node, clean and noisy bits and weight; per-pair and per-node floats. */
  uint32_t *mark, stamp;
  size_t mark_cap;
  uint32_t *hist; /* hist_ctx: counts and per-row child counts */
  size_t hist_cap;
  float *histf; /* hist_ctx: one step's features */
  size_t histf_cap;
  uint32_t *pu, *pv;
  uint8_t *pc, *pn;
  float *pw;
  size_t pair_cap;
  float *fpair, *fnode;
  size_t fpair_cap, fnode_cap;
  /* Successor messages (cfg.succ_msg): the children CSR, a per-row count
   * and a row list (succ_csr). */
  uint32_t *su32;
  size_t su32_cap;
} ws_t;

static void ws_free(ws_t *w) {
  etsim_synth__pool_free(&w->pool);
  etsim_free(w->u32);
  etsim_free(w->u8);
  etsim_free(w->i32);
  etsim_free(w->mark);
  etsim_free(w->hist);
  etsim_free(w->histf);
  etsim_free(w->pu);
  etsim_free(w->pv);
  etsim_free(w->pc);
  etsim_free(w->pn);
  etsim_free(w->pw);
  etsim_free(w->fpair);
  etsim_free(w->fnode);
  etsim_free(w->su32);
}

/* Candidates sampled per new node beyond a layer's exact limit: all of the
 * SY_NEAR_LAYERS layers before it up to SY_NEAR_S nodes, SY_FAR_S from the
 * rest (docs/synth.md, "Training cost"). */
#define SY_NEAR_LAYERS 8
#define SY_NEAR_S 128
#define SY_FAR_S 64

static int add_pair(ws_t *ws, size_t *np, uint32_t u, uint32_t v, int clean, int noisy, float w) {
  if (*np + 1 > ws->pair_cap) {
    size_t c = ws->pair_cap, c1 = c, c2 = c, c3 = c, c4 = c;
    if (etsim_grow((void **)&ws->pu, &c, *np + 1, sizeof(uint32_t)) ||
        etsim_grow((void **)&ws->pv, &c1, *np + 1, sizeof(uint32_t)) ||
        etsim_grow((void **)&ws->pc, &c2, *np + 1, 1) ||
        etsim_grow((void **)&ws->pn, &c3, *np + 1, 1) ||
        etsim_grow((void **)&ws->pw, &c4, *np + 1, sizeof(float)))
      return ETSIM_ENOMEM;
    size_t m = c < c1 ? c : c1;
    m = m < c2 ? m : c2;
    m = m < c3 ? m : c3;
    ws->pair_cap = m < c4 ? m : c4;
  }
  ws->pu[*np] = u;
  ws->pv[*np] = v;
  ws->pc[*np] = (uint8_t)clean;
  ws->pn[*np] = (uint8_t)noisy;
  ws->pw[*np] = w;
  (*np)++;
  return 0;
}

/* The pairs of layer l's edge loss into ws->pu/pv/pc/pn/pw (their number
 * in *np_out), as the comment above edges_sampled says: per new node its
 * true parents, the noisy-on pairs, and the two strata of the rest. */
static int draw_pairs(const etsim_synth_model_t *m, ws_t *ws, const rows_t *R, int l, int t,
                      etsim_rng_t *rng, size_t *np_out) {
  int n = R->n;
  uint32_t v0 = R->ls[l], nv = R->ls[l + 1] - v0, N = v0 - 1;
  double ab = m->abar_e[t];
  double ml = (m->mean_indeg < N ? m->mean_indeg : N) / N;
  double q0 = (1 - ab) * ml; /* P(noisy on | clean off) */
  int lw = l - SY_NEAR_LAYERS >= 1 ? l - SY_NEAR_LAYERS : 1;
  uint32_t near0 = R->ls[lw] - 1; /* candidates [near0, N) are near */
  size_t old_cap = ws->mark_cap;
  if (etsim_grow((void **)&ws->mark, &ws->mark_cap, (size_t)n + 1, sizeof(uint32_t)))
    return ETSIM_ENOMEM;
  if (ws->mark_cap != old_cap || ws->stamp == 0 || ws->stamp > UINT32_MAX - 2 * nv - 2) {
    memset(ws->mark, 0, sizeof(uint32_t) * ws->mark_cap);
    ws->stamp = 0;
  }
  size_t np = 0;
  for (uint32_t v = 0; v < nv; v++) {
    uint32_t st = ++ws->stamp;
    size_t first = np;
    for (uint32_t k = R->poff[v0 + v]; k < R->poff[v0 + v + 1]; k++) {
      uint32_t u = R->padj[k] - 1;
      ws->mark[u] = st;
      int on = etsim_rng_uniform(rng) < ab ? 1 : etsim_rng_uniform(rng) < ml;
      if (add_pair(ws, &np, u, v, 1, on, 1.0f)) return ETSIM_ENOMEM;
    }
    if (q0 > 0) {
      double lq = log1p(-q0);
      double u = -1;
      for (;;) {
        double r = etsim_rng_uniform(rng);
        u += 1 + floor(log1p(-r) / lq);
        if (!(u < N)) break;
        uint32_t ui = (uint32_t)u;
        if (ws->mark[ui] == st) continue;
        ws->mark[ui] = st;
        if (add_pair(ws, &np, ui, v, 0, 1, 1.0f)) return ETSIM_ENOMEM;
      }
    }
    /* The two strata of the clean-off, noisy-off pairs. */
    for (int sidx = 0; sidx < 2; sidx++) {
      uint32_t a = sidx ? 0 : near0, b = sidx ? near0 : N;
      uint32_t draws = sidx ? SY_FAR_S : SY_NEAR_S;
      size_t marked = 0;
      for (size_t q = first; q < np; q++) marked += ws->pu[q] >= a && ws->pu[q] < b;
      size_t free_n = (size_t)(b - a) - marked;
      if (!free_n) continue;
      if (free_n <= draws) {
        for (uint32_t u = a; u < b; u++)
          if (ws->mark[u] != st && add_pair(ws, &np, u, v, 0, 0, 1.0f)) return ETSIM_ENOMEM;
        continue;
      }
      float w = (float)((double)free_n / draws);
      for (uint32_t d = 0; d < draws; d++) {
        uint32_t u;
        do u = a + (uint32_t)etsim_rng_below(rng, b - a);
        while (ws->mark[u] == st);
        if (add_pair(ws, &np, u, v, 0, 0, w)) return ETSIM_ENOMEM;
      }
    }
  }
  *np_out = np;
  return 0;
}

/* Backward of the edge label scale (cfg.label_edge) over n rows: dA (the
 * gradient of the scaled rows, overwritten by that of the unscaled A0)
 * and the gradient of m->ef from the label features of ctx, the step's
 * context row (as etsim_synth__edge_scale reads them). */
static void edge_scale_bwd(etsim_synth_model_t *m, const float *ctx, const float *sc, size_t n,
                           const float *A0, float *dA) {
  int P = m->cfg.pair_hidden;
  const float *lab = ctx + m->cfg.hidden + SY_FEAT;
  float dg[4096];
  memset(dg, 0, sizeof(float) * (size_t)P);
  for (size_t r = 0; r < n; r++)
    for (int j = 0; j < P; j++) {
      dg[j] += dA[r * P + j] * A0[r * P + j];
      dA[r * P + j] *= sc[j];
    }
  etsim_synth__nn_linear_bwd(&m->ef, 1, lab, dg, NULL, 1);
}

/* Per pair: gap features [np x 4], first-layer part a_u [np x P] and its
 * gradient; per new node: inputs [nv x De], b_v [nv x P] and gradients
 * (all in ws->fpair and ws->fnode). */
typedef struct {
  size_t np;
  uint32_t nv;
  float *gapf, *A, *dA;
  float *ein, *dein, *B, *dB;
  float *A0, sc[4096]; /* cfg.label_edge: unscaled A, the scale */
} pair_bufs_t;

/* The forward pass of the edge scorer's first layer for the np drawn pairs
 * of layer l (its nv new nodes): gap features and A per pair, inputs and B
 * per new node, into bf. */
static int pairs_forward(etsim_synth_model_t *m, ws_t *ws, const rows_t *R, const enc_t *e,
                         const float *ctx, const uint32_t *children, int l, int t, size_t np,
                         pair_bufs_t *bf) {
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  int De = etsim_synth__dim_edge_in(m), Te = m->cfg.t_edge, n = R->n;
  uint32_t nch = m->n_ch;
  uint32_t v0 = R->ls[l], nv = R->ls[l + 1] - v0;
  int ne = m->cfg.label_edge ? 3 : 2; /* A, dA and with the label scale A0 */
  size_t need_p = np * (size_t)(SY_GAPF + ne * P) + 1;
  size_t need_n = (size_t)nv * (size_t)(2 * De + 2 * P) + 1;
  if (etsim_grow((void **)&ws->fpair, &ws->fpair_cap, need_p, sizeof(float)) ||
      etsim_grow((void **)&ws->fnode, &ws->fnode_cap, need_n, sizeof(float)))
    return ETSIM_ENOMEM;
  float *gapf = ws->fpair, *A = gapf + np * SY_GAPF, *dA = A + np * P;
  float *ein = ws->fnode, *dein = ein + (size_t)nv * De, *B = dein + (size_t)nv * De;
  float *dB = B + (size_t)nv * P;
  bf->np = np, bf->nv = nv, bf->gapf = gapf, bf->A = A, bf->dA = dA;
  bf->ein = ein, bf->dein = dein, bf->B = B, bf->dB = dB, bf->A0 = NULL;
  for (size_t q = 0; q < np; q++) {
    uint32_t u = ws->pu[q];
    etsim_synth__gap_feats((uint32_t)l - R->lay[u + 1], children[u + 1], gapf + q * SY_GAPF);
  }
  etsim_synth__nn_linear_fwd(&m->es_g, (int)np, gapf, A);
  for (size_t q = 0; q < np; q++) {
    const float *zs = e->Zs + (size_t)(ws->pu[q] + 1) * P;
    float *a = A + q * P;
    for (int j = 0; j < P; j++) a[j] += zs[j];
  }
  if (m->cfg.label_edge) {
    bf->A0 = dA + np * P;
    etsim_synth__edge_scale(m, ctx + (size_t)(l - 1) * Dc, bf->sc);
    etsim_synth__edge_scale_rows(np, P, bf->sc, A, bf->A0);
  }
  float tsin[SY_DT];
  etsim_synth__t_feat(t, Te, tsin);
  memset(ein, 0, sizeof(float) * (size_t)nv * De);
  {
    int *deg = (int *)(void *)dein; /* scratch until the backward pass */
    memset(deg, 0, sizeof(int) * nv);
    for (size_t q = 0; q < np; q++) {
      if (!ws->pn[q]) continue;
      float *a = ein + (size_t)ws->pv[q] * De;
      const float *z = e->Z + (size_t)(ws->pu[q] + 1) * H;
      for (int j = 0; j < H; j++) a[H + j] += z[j];
      deg[ws->pv[q]]++;
    }
    for (uint32_t v = 0; v < nv; v++) {
      float *a = ein + (size_t)v * De;
      for (uint32_t c = 0; c < nch; c++) {
        const float *er = m->eemb[c] + (size_t)R->xr[(size_t)c * n + v0 + v] * H;
        for (int j = 0; j < H; j++) a[j] += er[j];
      }
      memcpy(a + 2 * H, ctx + (size_t)(l - 1) * Dc, sizeof(float) * Dc);
      memcpy(a + 2 * H + Dc, tsin, sizeof tsin);
      a[2 * H + Dc + SY_DT] = (float)(log1p((double)deg[v]) / 2);
    }
  }
  etsim_synth__nn_linear_fwd(&m->ed, (int)nv, ein, B);
  return 0;
}

/* The pairs' logistic loss, weighted by we, into *le; with backward, its
 * gradient (times weight) into the output layer's and dA, dB. */
static void pairs_loss(etsim_synth_model_t *m, const ws_t *ws, const pair_bufs_t *bf, int backward,
                       float weight, float we, double *le) {
  int P = m->cfg.pair_hidden;
  size_t np = bf->np;
  const float *A = bf->A, *B = bf->B;
  float *dA = bf->dA, *dB = bf->dB;
  memset(dA, 0, sizeof(float) * np * P);
  memset(dB, 0, sizeof(float) * (size_t)bf->nv * P);
  float w_l = we * weight;
  for (size_t q = 0; q < np; q++) {
    const float *a = A + q * P, *b = B + (size_t)ws->pv[q] * P;
    int on = ws->pn[q];
    double z = m->eob[0];
    for (int j = 0; j < P; j++) {
      float h = a[j] + b[j] + (on ? m->ew[j] : 0);
      z += (h > 0 ? h : 0) * m->eo[j];
    }
    int tg = ws->pc[q];
    double sp = z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
    *le += we * ws->pw[q] * (sp - (tg ? z : 0));
    if (!backward) continue;
    float dz = w_l * ws->pw[q] * (float)(1.0 / (1.0 + exp(-z)) - tg);
    m->geob[0] += dz;
    float *da = dA + q * P, *db = dB + (size_t)ws->pv[q] * P;
    for (int j = 0; j < P; j++) {
      float h = a[j] + b[j] + (on ? m->ew[j] : 0);
      if (h > 0) {
        m->geo[j] += dz * h;
        float g = dz * m->eo[j];
        da[j] += g;
        db[j] += g;
        if (on) m->gew[j] += g;
      }
    }
  }
}

/* dA, dB of layer l's pairs back through the first layer into the
 * embeddings, the context (dctx) and the encoder outputs (dZ, dZs). */
static void pairs_backward(etsim_synth_model_t *m, const ws_t *ws, const rows_t *R,
                           const pair_bufs_t *bf, float *dZ, float *dZs, float *dctx, int l) {
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  int De = etsim_synth__dim_edge_in(m), n = R->n;
  uint32_t nch = m->n_ch, v0 = R->ls[l], nv = bf->nv;
  size_t np = bf->np;
  float *dein = bf->dein;
  memset(dein, 0, sizeof(float) * (size_t)nv * De);
  etsim_synth__nn_linear_bwd(&m->ed, (int)nv, bf->ein, bf->dB, dein, 1);
  for (uint32_t v = 0; v < nv; v++) {
    const float *da = dein + (size_t)v * De;
    for (uint32_t c = 0; c < nch; c++) {
      float *ge = m->geemb[c] + (size_t)R->xr[(size_t)c * n + v0 + v] * H;
      for (int j = 0; j < H; j++) ge[j] += da[j];
    }
    float *dc = dctx + (size_t)(l - 1) * Dc;
    for (int j = 0; j < Dc; j++) dc[j] += da[2 * H + j];
  }
  for (size_t q = 0; q < np; q++) {
    uint32_t u = ws->pu[q] + 1;
    if (ws->pn[q]) {
      const float *da = dein + (size_t)ws->pv[q] * De;
      float *dz = dZ + (size_t)u * H;
      for (int j = 0; j < H; j++) dz[j] += da[H + j];
    }
    float *dzs = dZs + (size_t)u * P;
    const float *da = bf->dA + q * P;
    for (int j = 0; j < P; j++) dzs[j] += da[j];
  }
  etsim_synth__nn_linear_bwd(&m->es_g, (int)np, bf->gapf, bf->dA, NULL, 1);
}

/*
 * Edge loss of layer l when its prefix is too large to score every
 * (earlier node, new node) pair: an unbiased estimate of the same loss, at
 * a cost per new node that does not grow with the prefix.  Per new node,
 * its true parents and every pair whose noisy bit is on are scored exactly
 * (the noisy-on pairs among the non-parents are found by geometric skips,
 * so drawing the noise costs their number, not the prefix size); of the
 * rest, the nodes of the SY_NEAR_LAYERS layers before l are scored all
 * when there are at most SY_NEAR_S of them, and otherwise, like the older
 * nodes, by a uniform sample with replacement (SY_NEAR_S resp. SY_FAR_S
 * draws) weighted by (stratum size) / (draws).  Deep graphs (a chain of n
 * nodes has n^2/2 pairs) therefore train in time linear in their edges.
 */
static int edges_sampled(etsim_synth_model_t *m, ws_t *ws, const rows_t *R, const enc_t *e,
                         const float *ctx, float *dZ, float *dZs, float *dctx,
                         const uint32_t *children, int l, int t, etsim_rng_t *rng, int backward,
                         float weight, float we, double *le) {
  size_t np = 0;
  pair_bufs_t bf;
  if (draw_pairs(m, ws, R, l, t, rng, &np) ||
      pairs_forward(m, ws, R, e, ctx, children, l, t, np, &bf))
    return ETSIM_ENOMEM;
  pairs_loss(m, ws, &bf, backward, weight, we, le);
  if (backward && bf.A0)
    edge_scale_bwd(m, ctx + (size_t)(l - 1) * etsim_synth__dim_ctx(m), bf.sc, np, bf.A0, bf.dA);
  if (backward) pairs_backward(m, ws, R, &bf, dZ, dZs, dctx, l);
  return 0;
}

/* Category histograms of every step's context (after layers 0..l): the
 * last layer's, the prefix's, and those of the prefix nodes that have no
 * child yet, written after the first H + SY_FEAT + SY_DY floats of each
 * context row; then (ETSIM_SYNTH_CTX_RECENT) the class recency.  The
 * start token (row 0) counts in none of them. */
static int hist_ctx(const etsim_synth_model_t *m, ws_t *ws, const rows_t *R, float *ctx, int Dc,
                    float *hlast) {
  uint32_t K = m->sum_cls, n = (uint32_t)R->n;
  size_t need = 3 * (size_t)K + n + m->n_cls[0];
  if (etsim_grow((void **)&ws->hist, &ws->hist_cap, need, sizeof(uint32_t)) ||
      etsim_grow((void **)&ws->histf, &ws->histf_cap, 3 * (size_t)K, sizeof(float)))
    return ETSIM_ENOMEM;
  float *hf = ws->histf;
  uint32_t *last = ws->hist, *pre = last + K, *open = pre + K, *kids = open + K;
  uint32_t *seen = kids + n; /* latest layer of each class (0: none yet) */
  memset(ws->hist, 0, sizeof(uint32_t) * need);
  int base = m->cfg.hidden + SY_FEAT + SY_DY, recent = etsim_synth__dim_recent(m);
  int rbase = etsim_synth__off_recent(m);
  for (int l = 0; l <= R->L; l++) {
    memset(last, 0, sizeof(uint32_t) * K);
    for (uint32_t r = R->ls[l] > 0 ? R->ls[l] : 1; r < R->ls[l + 1]; r++) {
      for (uint32_t k = R->poff[r]; k < R->poff[r + 1]; k++) {
        uint32_t u = R->padj[k];
        if (u && kids[u]++ == 0) {
          uint32_t off = 0;
          for (uint32_t c = 0; c < m->n_ch; c++) {
            open[off + (uint32_t)R->xr[(size_t)c * n + u]]--;
            off += m->n_cls[c];
          }
        }
      }
      uint32_t off = 0;
      for (uint32_t c = 0; c < m->n_ch; c++) {
        uint32_t x = off + (uint32_t)R->xr[(size_t)c * n + r];
        last[x]++;
        pre[x]++;
        open[x]++;
        off += m->n_cls[c];
      }
      seen[R->xr[r]] = (uint32_t)l;
    }
    etsim_synth__hist_feats(m, last, pre, open, hf);
    if (m->cfg.ctx_hist & ETSIM_SYNTH_HIST_DENOISE)
      memcpy(ctx + (size_t)l * Dc + base, hf, sizeof(float) * 3 * K);
    if (recent) etsim_synth__recent_feats(m, l, seen, ctx + (size_t)l * Dc + rbase);
    memcpy(hlast + (size_t)l * K, hf, sizeof(float) * K);
  }
  return 0;
}

/* What the steps of graph_loss_ws share: the graph, the encoder's output
 * and its gradients, the context of every step, and one random stream
 * (drawn from in a fixed order: attributes, then edges). */
/* One layer step's bidirectional pass (cfg.bidir; see bidir_alloc). */
typedef struct bidir_step {
  enc_t e;
  float *Mr[SY_MAXK + 1];
  enc_grad_t d;
  float *dZl, *dZsl; /* the step's gradients of Z_l and es_z Z_l */
} bidir_step_t;

typedef struct gl {
  etsim_synth_model_t *m;
  ws_t *ws;
  const rows_t *R;
  pool_t *p;
  etsim_rng_t rng;
  enc_t e;
  int backward;
  float weight;
  int ns;                      /* steps 0..L */
  float *dZ, *dZs;             /* gradients of the node embeddings */
  float *S, *lst, *ctx, *dctx; /* prefix sums, their norm statistics, contexts */
  float *hlast;                /* per step: the last layer's histogram features */
  float ysin[SY_DY];
  /* Successor messages (cfg.succ_msg): the rows' children (CSR, each
   * list ascending), a per-row count and a row list (scratch), and per
   * step the sum of the prefix's messages T (ns x H). */
  uint32_t *coff, *cadj, *kc, *list;
  float *T;
  /* Bidirectional encoder per layer step (cfg.bidir): the step's pass
   * (bd points to bds, NULL without the option). */
  bidir_step_t bds, *bd;
} gl_t;

/*
 * Bidirectional encoder per layer step (cfg.bidir, issue 25): LayerDAG
 * re-encodes every prefix with a bidirectional MPNN.  At step l (after
 * layers 0..l) the K layers run again over the prefix rows [0, ls[l + 1])
 * with each row's children among them as well as its parents
 * (etsim_synth__bidir_fwd), and every reader of node embeddings at step l
 * reads that pass's Z_l: the prefix pool of context l and the edge
 * denoiser of layer l + 1 (candidates and noisy parents).  One pass's
 * activations are kept at a time: gl_contexts runs each step's for its
 * pool, gl_edges each step's again for its edges and goes back through it
 * at once, and gl_contexts_bwd runs each step's a third time before
 * going back through it from the pool's gradient.  The encoder work per
 * graph is O(L N) rather than O(N); the default path does none of this.
 */
static int bidir_alloc(gl_t *g) {
  etsim_synth_model_t *m = g->m;
  pool_t *p = g->p;
  int n = g->R->n;
  size_t nh = (size_t)n * m->cfg.hidden;
  bidir_step_t *b = g->bd = &g->bds;
  if (etsim_synth__enc_alloc(m, p, n, &b->e) || enc_grad_alloc(m, p, n, &b->d)) return ETSIM_ENOMEM;
  for (int k = 1; k <= m->cfg.mp_layers; k++) b->Mr[k] = etsim_synth__pz(p, nh);
  b->dZl = etsim_synth__pz(p, nh), b->dZsl = etsim_synth__pz(p, (size_t)n * m->cfg.pair_hidden);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* The pass of the step whose prefix is rows [0, rows), its gradients
 * zeroed. */
static void bidir_step_fwd(gl_t *g, int rows) {
  const rows_t *R = g->R;
  bidir_step_t *b = g->bd;
  etsim_synth__bidir_fwd(g->m, &b->e, b->Mr, R->n, R->xr, R->poff, R->padj, rows);
  memset(b->dZl, 0, sizeof(float) * (size_t)rows * g->m->cfg.hidden);
  memset(b->dZsl, 0, sizeof(float) * (size_t)rows * g->m->cfg.pair_hidden);
}

/* Back through that pass from its gradients dZl and dZsl. */
static void bidir_step_bwd(gl_t *g, int rows) {
  const rows_t *R = g->R;
  bidir_step_t *b = g->bd;
  enc_bwd_rows(g->m, &b->d, &b->e, b->Mr, rows, R->n, R->xr, R->poff, R->padj, b->dZl, b->dZsl);
}

/*
 * Successor messages (cfg.succ_msg, issue 25): the causal encoder's Z(u)
 * never sees u's children, where LayerDAG re-encodes every prefix with a
 * bidirectional MPNN.  One reverse step per layer step stands in for it:
 * at step l (after layers 0..l) a prefix node with k > 0 children in the
 * prefix has Z_l(u) = Z(u) + W_succ N_l(u), N_l(u) = (sum of those
 * children's Z) / (1 + k) (etsim_synth__succ_msg), and every reader of
 * node embeddings at step l reads Z_l: the prefix pool of context l
 * (whose sum gains W_succ T_l, T_l the sum of the N_l) and the edge
 * denoiser of layer l + 1 (candidates and noisy parents).  Z(c) gets the
 * gradients of the messages back, then enc_bwd as before.  Each step
 * costs O(prefix) rows, so training with it is no longer linear in a
 * deep graph; the default path does none of this.
 */

/* The children of every row in CSR (each list ascending, rows being in
 * layer order), a per-row count and a row list, in ws->su32. */
static int succ_csr(gl_t *g) {
  const rows_t *R = g->R;
  uint32_t n = (uint32_t)R->n, E = R->poff[n];
  ws_t *ws = g->ws;
  if (etsim_grow((void **)&ws->su32, &ws->su32_cap, 3 * (size_t)n + 1 + E + 1, sizeof(uint32_t)))
    return ETSIM_ENOMEM;
  uint32_t *coff = g->coff = ws->su32, *cadj = g->cadj = coff + n + 1;
  uint32_t *kc = g->kc = cadj + E;
  g->list = kc + n;
  memset(coff, 0, sizeof(uint32_t) * ((size_t)n + 1));
  for (uint32_t k = 0; k < E; k++) coff[R->padj[k] + 1]++;
  for (uint32_t r = 0; r < n; r++) coff[r + 1] += coff[r];
  memcpy(kc, coff, sizeof(uint32_t) * n);
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t k = R->poff[r]; k < R->poff[r + 1]; k++) cadj[kc[R->padj[k]]++] = r;
  return 0;
}

/* The prefix pools' part: T_l for every step into g->T, and W_succ T_l
 * added to the prefix sums S. */
static int succ_pool(gl_t *g, float *S) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  const float *Z = g->e.Z;
  int H = m->cfg.hidden, n = R->n, ns = g->ns;
  if (succ_csr(g)) return ETSIM_ENOMEM;
  float *C = etsim_synth__pz(g->p, (size_t)n * H), *U = etsim_synth__pz(g->p, (size_t)ns * H);
  float *T = g->T = etsim_synth__pz(g->p, (size_t)ns * H), nb[4096];
  if (g->p->oom) return ETSIM_ENOMEM;
  uint32_t *kc = g->kc;
  memset(kc, 0, sizeof(uint32_t) * (size_t)n);
  for (int l = 0; l < ns; l++) {
    for (uint32_t r = R->ls[l]; r < R->ls[l + 1]; r++)
      for (uint32_t k = R->poff[r]; k < R->poff[r + 1]; k++) {
        uint32_t u = R->padj[k];
        kc[u]++;
        for (int j = 0; j < H; j++) C[(size_t)u * H + j] += Z[(size_t)r * H + j];
      }
    float *Tl = T + (size_t)l * H;
    for (uint32_t u = 1; u < R->ls[l + 1]; u++)
      if (kc[u]) {
        etsim_synth__succ_msg(H, C + (size_t)u * H, kc[u], nb);
        for (int j = 0; j < H; j++) Tl[j] += nb[j];
      }
  }
  etsim_synth__nn_linear_fwd_add(&m->succ, ns, T, U, 0);
  for (size_t i = 0; i < (size_t)ns * H; i++) S[i] += U[i];
  return 0;
}

/* Backward of succ_pool from dS (ns x H): W_succ's gradient, and the
 * children's dZ through the messages. */
static int succ_pool_bwd(gl_t *g, const float *dS) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  int H = m->cfg.hidden, n = R->n, ns = g->ns;
  float *dT = etsim_synth__pz(g->p, (size_t)ns * H);
  if (g->p->oom) return ETSIM_ENOMEM;
  etsim_synth__nn_linear_bwd(&m->succ, ns, g->T, dS, dT, 0);
  uint32_t *kc = g->kc;
  memset(kc, 0, sizeof(uint32_t) * (size_t)n);
  for (int l = 0; l < ns; l++) {
    for (uint32_t r = R->ls[l]; r < R->ls[l + 1]; r++)
      for (uint32_t k = R->poff[r]; k < R->poff[r + 1]; k++) kc[R->padj[k]]++;
    const float *dt = dT + (size_t)l * H;
    for (uint32_t u = 1; u < R->ls[l + 1]; u++)
      if (kc[u]) {
        float sc = 1.0f / (float)(1 + kc[u]);
        for (uint32_t q = 0; q < kc[u]; q++) {
          float *dz = g->dZ + (size_t)g->cadj[g->coff[u] + q] * H;
          for (int j = 0; j < H; j++) dz[j] += dt[j] * sc;
        }
      }
  }
  return 0;
}

/* One edge step's embeddings (cfg.succ_msg): Z_{l-1} and es_z Z_{l-1} of
 * rows [0, ls[l]) for the edges into layer l, the messages' buffers, and
 * the step's gradients (zeroed here, folded back by succ_step_bwd). */
typedef struct succ_step {
  float *C, *Zl, *Zsl, *dZl, *dZsl, *Nb, *WN, *dWN, *dN, *Ys, *dYs;
  uint32_t nl;
} succ_step_t;

static int succ_step_alloc(gl_t *g, succ_step_t *st) {
  size_t nh = (size_t)g->R->n * g->m->cfg.hidden, np = (size_t)g->R->n * g->m->cfg.pair_hidden;
  pool_t *p = g->p;
  st->C = etsim_synth__pz(p, nh), st->Zl = etsim_synth__pz(p, nh), st->dZl = etsim_synth__pz(p, nh);
  st->Nb = etsim_synth__pz(p, nh), st->WN = etsim_synth__pz(p, nh),
  st->dWN = etsim_synth__pz(p, nh);
  st->dN = etsim_synth__pz(p, nh);
  st->Zsl = etsim_synth__pz(p, np), st->dZsl = etsim_synth__pz(p, np);
  st->Ys = etsim_synth__pz(p, np), st->dYs = etsim_synth__pz(p, np);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* The embeddings of step l - 1 for the edges into layer l; children[u]
 * counts u's children in layers < l and st->C sums their Z. */
static void succ_step_fwd(gl_t *g, succ_step_t *st, const uint32_t *children, int l) {
  etsim_synth_model_t *m = g->m;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden;
  uint32_t rows = g->R->ls[l], nl = 0;
  memcpy(st->Zl, g->e.Z, sizeof(float) * rows * H);
  memcpy(st->Zsl, g->e.Zs, sizeof(float) * rows * P);
  for (uint32_t u = 1; u < rows; u++)
    if (children[u]) {
      etsim_synth__succ_msg(H, st->C + (size_t)u * H, children[u], st->Nb + (size_t)nl * H);
      g->list[nl++] = u;
    }
  st->nl = nl;
  memset(st->WN, 0, sizeof(float) * nl * H);
  etsim_synth__nn_linear_fwd_add(&m->succ, (int)nl, st->Nb, st->WN, 0);
  memset(st->Ys, 0, sizeof(float) * nl * P);
  etsim_synth__nn_linear_fwd_add(&m->es_z, (int)nl, st->WN, st->Ys, 0);
  for (uint32_t i = 0; i < nl; i++) {
    size_t u = g->list[i];
    for (int j = 0; j < H; j++) st->Zl[u * H + j] += st->WN[(size_t)i * H + j];
    for (int j = 0; j < P; j++) st->Zsl[u * P + j] += st->Ys[(size_t)i * P + j];
  }
  memset(st->dZl, 0, sizeof(float) * rows * H);
  memset(st->dZsl, 0, sizeof(float) * rows * P);
}

/* Back from the step's gradients dZl, dZsl into dZ, dZs, W_succ, es_z and
 * the children's dZ. */
static void succ_step_bwd(gl_t *g, succ_step_t *st, const uint32_t *children, int l) {
  etsim_synth_model_t *m = g->m;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden;
  uint32_t rows = g->R->ls[l], nl = st->nl;
  for (uint32_t i = 0; i < nl; i++) {
    size_t u = g->list[i];
    memcpy(st->dWN + (size_t)i * H, st->dZl + u * H, sizeof(float) * H);
    memcpy(st->dYs + (size_t)i * P, st->dZsl + u * P, sizeof(float) * P);
  }
  etsim_synth__nn_linear_bwd(&m->es_z, (int)nl, st->WN, st->dYs, st->dWN, 0);
  memset(st->dN, 0, sizeof(float) * nl * H);
  etsim_synth__nn_linear_bwd(&m->succ, (int)nl, st->Nb, st->dWN, st->dN, 0);
  for (uint32_t i = 0; i < nl; i++) {
    uint32_t u = g->list[i], k = children[u];
    float sc = 1.0f / (float)(1 + k);
    const float *dn = st->dN + (size_t)i * H;
    for (uint32_t q = 0; q < k; q++) {
      float *dz = g->dZ + (size_t)g->cadj[g->coff[u] + q] * H;
      for (int j = 0; j < H; j++) dz[j] += dn[j] * sc;
    }
  }
  for (size_t i = 0; i < (size_t)rows * H; i++) g->dZ[i] += st->dZl[i];
  for (size_t i = 0; i < (size_t)rows * P; i++) g->dZs[i] += st->dZsl[i];
}

/* The encoder over the whole graph, then the context of every step: the
 * normalised prefix sum of the embeddings, step features and the label. */
static int gl_contexts(gl_t *g, double y, double y2, uint64_t seed) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  int n = R->n, L = R->L;
  pool_t *p = g->p = &g->ws->pool;
  etsim_synth__pool_reset(p);
  etsim_rng_seed(&g->rng, seed);
  enc_t *e = &g->e;
  if (etsim_synth__enc_alloc(m, p, n, e)) return ETSIM_ENOMEM;
  etsim_synth__enc_fwd(m, e, n, R->xr, R->poff, R->padj, 0, n);
  g->dZ = etsim_synth__pz(p, (size_t)n * H), g->dZs = etsim_synth__pz(p, (size_t)n * P);
  /* Prefix sums and contexts for steps 0..L. */
  int ns = g->ns = L + 1;
  float *S = g->S = etsim_synth__pz(p, (size_t)ns * H), *G = etsim_synth__pz(p, (size_t)ns * H);
  float *lst = g->lst = etsim_synth__pz(p, 2 * (size_t)ns);
  float *ctx = g->ctx = etsim_synth__pz(p, (size_t)ns * Dc);
  g->dctx = etsim_synth__pz(p, (size_t)ns * Dc);
  float *ysin = g->ysin;
  if (p->oom) return ETSIM_ENOMEM;
  etsim_synth__label_feat(m, y, y2, ysin);
  if (m->cfg.bidir && bidir_alloc(g)) return ETSIM_ENOMEM;
  for (int l = 0; l <= L; l++) {
    float *Sl = S + (size_t)l * H;
    if (g->bd) { /* the step's own pass, summed in row order as below */
      bidir_step_fwd(g, (int)R->ls[l + 1]);
      for (uint32_t r = 0; r < R->ls[l + 1]; r++)
        for (int j = 0; j < H; j++) Sl[j] += g->bd->e.Z[(size_t)r * H + j];
      continue;
    }
    if (l) memcpy(Sl, S + (size_t)(l - 1) * H, sizeof(float) * H);
    for (uint32_t r = R->ls[l]; r < R->ls[l + 1]; r++)
      for (int j = 0; j < H; j++) Sl[j] += e->Z[(size_t)r * H + j];
  }
  if (m->cfg.succ_msg && succ_pool(g, S)) return ETSIM_ENOMEM;
  etsim_synth__nn_layernorm_fwd(ns, H, S, m->ln_g, m->ln_b, G, lst);
  for (int l = 0; l <= L; l++) {
    float *c = ctx + (size_t)l * Dc;
    memcpy(c, G + (size_t)l * H, sizeof(float) * H);
    etsim_synth__step_feats(m, l, R->ls[l + 1] - 1, l ? R->ls[l + 1] - R->ls[l] : 0, c + H);
    memcpy(c + H + SY_FEAT, ysin, sizeof(float) * SY_DY);
    if (m->cfg.ctx_hist & ETSIM_SYNTH_CTX_PROGRESS) etsim_synth__prog_feats(l, L, c + Dc - SY_PROG);
  }
  g->hlast = NULL;
  if (m->cfg.ctx_hist) {
    g->hlast = etsim_synth__pz(p, (size_t)ns * m->sum_cls);
    if (p->oom || hist_ctx(m, g->ws, R, ctx, Dc, g->hlast)) return ETSIM_ENOMEM;
  }
  return 0;
}

/* (1) layer sizes: a stop decision, then the size given no stop.  Leaves
 * the size targets at the start of ws->i32, which it sizes for the
 * attribute step's noisy categories too. */
static int gl_sizes(gl_t *g, double *loss) {
  etsim_synth_model_t *m = g->m;
  ws_t *ws = g->ws;
  const rows_t *R = g->R;
  pool_t *p = g->p;
  int H = m->cfg.hidden, n = R->n, L = R->L, ns = g->ns, backward = g->backward;
  uint32_t nch = m->n_ch;
  float weight = g->weight;
  const float *ysin = g->ysin, *hlast = g->hlast;
  int C = (int)m->max_size;
  float *cp = etsim_synth__pz(p, (size_t)ns * H), *ch = etsim_synth__pz(p, (size_t)ns * H);
  float *clog = etsim_synth__pz(p, (size_t)ns * C), *dclog = etsim_synth__pz(p, (size_t)ns * C);
  if (etsim_grow((void **)&ws->u8, &ws->u8_cap, (size_t)ns * C, 1) ||
      etsim_grow((void **)&ws->i32, &ws->i32_cap, (size_t)ns + (size_t)n * nch, sizeof(int32_t)) ||
      p->oom)
    return ETSIM_ENOMEM;
  int32_t *tgt = ws->i32;
  uint8_t *stop = ws->u8;
  for (int l = 0; l <= L; l++) {
    uint32_t sz = l < L ? R->ls[l + 2] - R->ls[l + 1] : 0;
    tgt[l] = sz ? (int32_t)(sz > m->max_size ? m->max_size : sz) - 1 : -1;
    stop[l] = l == L;
  }
  int Ds = etsim_synth__dim_size_in(m);
  float *cf = etsim_synth__pz(p, (size_t)ns * Ds);
  if (p->oom) return ETSIM_ENOMEM;
  for (int l = 0; l <= L; l++) {
    float *f = cf + (size_t)l * Ds;
    etsim_synth__size_feats(m, l, R->ls[l + 1] - 1, l ? R->ls[l + 1] - R->ls[l] : 0, ysin, f);
    if (Ds > SY_SIZEF)
      memcpy(f + SY_SIZEF, hlast + (size_t)l * m->sum_cls, sizeof(float) * m->sum_cls);
  }
  etsim_synth__nn_linear_fwd(&m->c1, ns, cf, cp);
  /* Node-count conditioning (cfg.size_cond): the graph's own count, into
   * the stop head (nfs) and, unless only the stop head reads it, the size
   * head (nf). */
  uint32_t nn = R->ls[L + 1] - 1;
  float *nf = NULL, *nfs = NULL;
  if (m->cfg.size_cond) {
    nfs = etsim_synth__pz(p, (size_t)(L ? L : 1) * SY_NCF);
    if (p->oom) return ETSIM_ENOMEM;
    for (int l = 0; l < L; l++) etsim_synth__count_feats(nn, nfs + (size_t)l * SY_NCF);
  }
  if (m->cfg.size_cond == ETSIM_SYNTH_SIZE_COND_HEADS) {
    nf = etsim_synth__pz(p, (size_t)ns * (SY_NCF + 1));
    if (p->oom) return ETSIM_ENOMEM;
    for (int l = 0; l <= L; l++)
      etsim_synth__count_size_feats(nn, R->ls[l + 1] - 1, nf + (size_t)l * (SY_NCF + 1));
    etsim_synth__nn_linear_fwd_add(&m->ncc, ns, nf, cp, 0);
  }
  etsim_synth__nn_gelu_fwd((size_t)ns * H, cp, ch);
  etsim_synth__nn_linear_fwd(&m->c2, ns, ch, clog);
  double lc;
  {
    float wst = (float)(1.0 / m->mean_steps);
    lc = etsim_synth__nn_softmax_xent(ns, C, clog, tgt, NULL, wst, dclog);
    /* The stop head sees only the depth and the label, never the prefix:
     * on real prefixes a head that read the prefix was calibrated, but on
     * generated ones its errors (too many parents, off categories, too
     * many one-node layers, which in real graphs mostly end them) made it
     * stop up to twice as often and samples came out too shallow
     * (docs/synth.md).  Step 0 never stops, so its rows are l = 1..L. */
    float *sf = etsim_synth__pz(p, (size_t)L * SY_STOPF), *sp = etsim_synth__pz(p, (size_t)L * H);
    float *sh = etsim_synth__pz(p, (size_t)L * H), *slog = etsim_synth__pz(p, (size_t)L);
    float *dslog = etsim_synth__pz(p, (size_t)L);
    if (p->oom) return ETSIM_ENOMEM;
    for (int l = 1; l <= L; l++)
      etsim_synth__stop_feats(m, l, ysin, sf + (size_t)(l - 1) * SY_STOPF);
    etsim_synth__nn_linear_fwd(&m->s1, L, sf, sp);
    if (nfs) etsim_synth__nn_linear_fwd_add(&m->ncs, L, nfs, sp, 0);
    etsim_synth__nn_gelu_fwd((size_t)L * H, sp, sh);
    etsim_synth__nn_linear_fwd(&m->s2, L, sh, slog);
    lc += etsim_synth__nn_bce_logits(L, slog, stop + 1, wst, dslog);
    if (backward) {
      float *dsh = etsim_synth__pz(p, (size_t)L * H), *dsp = etsim_synth__pz(p, (size_t)L * H);
      if (p->oom) return ETSIM_ENOMEM;
      for (int l = 0; l < L; l++) dslog[l] *= weight;
      etsim_synth__nn_linear_bwd(&m->s2, L, sh, dslog, dsh, 1);
      etsim_synth__nn_gelu_bwd((size_t)L * H, sp, dsh, dsp);
      etsim_synth__nn_linear_bwd(&m->s1, L, sf, dsp, NULL, 1);
      if (nfs) etsim_synth__nn_linear_bwd(&m->ncs, L, nfs, dsp, NULL, 0);
    }
  }
  if (backward) {
    for (size_t i = 0; i < (size_t)ns * C; i++) dclog[i] *= weight;
    float *dch = etsim_synth__pz(p, (size_t)ns * H), *dcp = etsim_synth__pz(p, (size_t)ns * H);
    if (p->oom) return ETSIM_ENOMEM;
    etsim_synth__nn_linear_bwd(&m->c2, ns, ch, dclog, dch, 1);
    etsim_synth__nn_gelu_bwd((size_t)ns * H, cp, dch, dcp);
    etsim_synth__nn_linear_bwd(&m->c1, ns, cf, dcp, NULL, 1);
    if (nf) etsim_synth__nn_linear_bwd(&m->ncc, ns, nf, dcp, NULL, 0);
  }
  *loss = lc;
  return 0;
}

/* (2) attributes of every layer, one diffusion step per layer. */
/* FiLM of the attribute denoiser in training (cfg.label_film): each row's
 * label features (lab, copied from its context in ain), its (gamma, beta)
 * of both layers (F1, F2, 2H per row), the modulated pre-activations (q1,
 * q2) and backward scratch (dq, dF).  F1 is NULL without FiLM. */
typedef struct attr_film {
  float *lab, *F1, *F2, *q1, *q2, *dq, *dF;
} attr_film_t;

static int attr_film_alloc(const etsim_synth_model_t *m, pool_t *p, int Rn, const float *ain,
                           attr_film_t *f) {
  int H = m->cfg.hidden, Da = etsim_synth__dim_attr_in(m);
  size_t nh = (size_t)Rn * H;
  f->lab = etsim_synth__pz(p, (size_t)Rn * SY_DY);
  f->F1 = etsim_synth__pz(p, 2 * nh), f->F2 = etsim_synth__pz(p, 2 * nh);
  f->q1 = etsim_synth__pz(p, nh), f->q2 = etsim_synth__pz(p, nh);
  f->dq = etsim_synth__pz(p, nh), f->dF = etsim_synth__pz(p, 2 * nh);
  if (p->oom) return ETSIM_ENOMEM;
  for (int r = 0; r < Rn; r++) /* the label follows H summary + SY_FEAT in the context */
    memcpy(f->lab + (size_t)r * SY_DY, ain + (size_t)r * Da + 3 * H + SY_FEAT,
           sizeof(float) * SY_DY);
  etsim_synth__nn_linear_fwd(&m->af1, Rn, f->lab, f->F1);
  etsim_synth__nn_linear_fwd(&m->af2, Rn, f->lab, f->F2);
  return 0;
}

/* Backward of q = p * (1 + F[0..H)) + F[H..2H) for n rows: dp (overwritten)
 * from dq, and the FiLM layer l's gradients from dF (scratch, 2H a row). */
static void film_bwd(nn_linear_t *l, int n, int H, const float *lab, const float *F, const float *p,
                     const float *dq, float *dp, float *dF) {
  for (int r = 0; r < n; r++) {
    const float *f = F + (size_t)r * 2 * H, *x = p + (size_t)r * H, *d = dq + (size_t)r * H;
    float *o = dF + (size_t)r * 2 * H, *dx = dp + (size_t)r * H;
    for (int j = 0; j < H; j++) {
      o[j] = d[j] * x[j];
      o[H + j] = d[j];
      dx[j] = d[j] * (1 + f[j]);
    }
  }
  etsim_synth__nn_linear_bwd(l, n, lab, dF, NULL, 1);
}

void etsim_synth__attn_fwd(const etsim_synth_model_t *m, int n, int nb, const uint32_t *bs,
                           uint32_t base, const float *h, float *Q, float *K, float *V, float *A,
                           float *S, float *out) {
  int H = m->cfg.hidden;
  size_t nh = (size_t)n * H;
  memset(Q, 0, sizeof(float) * nh);
  memset(K, 0, sizeof(float) * nh);
  memset(V, 0, sizeof(float) * nh);
  etsim_synth__nn_linear_fwd_add(&m->aq, n, h, Q, 0);
  etsim_synth__nn_linear_fwd_add(&m->ak, n, h, K, 0);
  etsim_synth__nn_linear_fwd_add(&m->av, n, h, V, 0);
  for (int b = 0; b < nb; b++) {
    size_t r0 = (size_t)(bs[b] - base) * H;
    etsim_synth__nn_attn_fwd((int)(bs[b + 1] - bs[b]), H, Q + r0, K + r0, V + r0, A + r0, S);
  }
  if (out != h) memcpy(out, h, sizeof(float) * nh);
  etsim_synth__nn_linear_fwd_add(&m->ao, n, A, out, 0);
}

/* The attention of cfg.attn in training: its activations over the Rn
 * rows (the input h1 is the caller's), and backward scratch. */
typedef struct attr_attn {
  float *Q, *K, *V, *A, *S, *dS, *out, *dQ, *dK, *dV, *dA;
} attr_attn_t;

static int attr_attn_alloc(const etsim_synth_model_t *m, pool_t *p, int Rn, uint32_t widest,
                           attr_attn_t *a) {
  size_t nh = (size_t)Rn * m->cfg.hidden, ns = (size_t)NN_ATTN_CHUNK * widest;
  a->Q = etsim_synth__pz(p, nh), a->K = etsim_synth__pz(p, nh), a->V = etsim_synth__pz(p, nh);
  a->A = etsim_synth__pz(p, nh), a->out = etsim_synth__pz(p, nh);
  a->S = etsim_synth__pz(p, ns), a->dS = etsim_synth__pz(p, ns);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* Backward of the attention: dh (the gradient of its output) becomes that
 * of its input h in place, the residual plus every path through Wq, Wk,
 * Wv; the four maps' gradients are added to. */
static int attr_attn_bwd(etsim_synth_model_t *m, pool_t *p, const rows_t *R, int Rn, const float *h,
                         attr_attn_t *a, float *dh) {
  int H = m->cfg.hidden;
  size_t nh = (size_t)Rn * H;
  a->dQ = etsim_synth__pz(p, nh), a->dK = etsim_synth__pz(p, nh), a->dV = etsim_synth__pz(p, nh);
  a->dA = etsim_synth__pz(p, nh);
  if (p->oom) return ETSIM_ENOMEM;
  etsim_synth__nn_linear_bwd(&m->ao, Rn, a->A, dh, a->dA, 0);
  for (int l = 1; l <= R->L; l++) {
    size_t r0 = (size_t)(R->ls[l] - 1) * H;
    etsim_synth__nn_attn_bwd((int)(R->ls[l + 1] - R->ls[l]), H, a->Q + r0, a->K + r0, a->V + r0,
                             a->dA + r0, a->dQ + r0, a->dK + r0, a->dV + r0, a->S, a->dS);
  }
  etsim_synth__nn_linear_bwd(&m->aq, Rn, h, a->dQ, dh, 0);
  etsim_synth__nn_linear_bwd(&m->ak, Rn, h, a->dK, dh, 0);
  etsim_synth__nn_linear_bwd(&m->av, Rn, h, a->dV, dh, 0);
  return 0;
}

static int gl_attrs(gl_t *g, double *loss) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  pool_t *p = g->p;
  int H = m->cfg.hidden, Dc = etsim_synth__dim_ctx(m), n = R->n, L = R->L, Ta = m->cfg.t_attr;
  int backward = g->backward;
  uint32_t nch = m->n_ch;
  float weight = g->weight;
  const float *ctx = g->ctx;
  float *dctx = g->dctx;
  int Rn = n - 1, Da = etsim_synth__dim_attr_in(m);
  double la = 0;
  *loss = 0;
  if (Rn <= 0) return 0;
  float *ain = etsim_synth__pz(p, (size_t)Rn * Da), *EA = etsim_synth__pz(p, (size_t)Rn * H);
  float *p1 = etsim_synth__pz(p, (size_t)Rn * H), *h1 = etsim_synth__pz(p, (size_t)Rn * H);
  float *p2 = etsim_synth__pz(p, (size_t)Rn * H), *h2 = etsim_synth__pz(p, (size_t)Rn * H);
  float *alog = etsim_synth__pz(p, (size_t)Rn * m->sum_cls);
  float *dalog = etsim_synth__pz(p, (size_t)Rn * m->sum_cls);
  float *seg = etsim_synth__pz(p, (size_t)Rn * m->sum_cls),
        *dseg = etsim_synth__pz(p, (size_t)Rn * m->sum_cls);
  int32_t *zt = g->ws->i32 + g->ns; /* Rn * nch noisy categories, channel-major */
  if (p->oom) return ETSIM_ENOMEM;
  float tsin[SY_DT];
  for (int l = 1; l <= L; l++) {
    int t = 1 + (int)etsim_rng_below(&g->rng, (uint64_t)Ta);
    double ab = m->abar_a[t];
    etsim_synth__t_feat(t, Ta, tsin);
    uint32_t r0 = R->ls[l], r1 = R->ls[l + 1];
    uint32_t off = 0;
    for (uint32_t c = 0; c < nch; c++) {
      for (uint32_t r = r0; r < r1; r++) {
        int32_t x0 = R->xr[(size_t)c * n + r];
        int32_t z = x0;
        if (etsim_rng_uniform(&g->rng) >= ab)
          z = etsim_synth__draw(&g->rng, m->marg + off, (int)m->n_cls[c]);
        zt[(size_t)c * Rn + (r - 1)] = z;
      }
      off += m->n_cls[c];
    }
    for (uint32_t r = r0; r < r1; r++) {
      float *a = ain + (size_t)(r - 1) * Da;
      memcpy(a + 2 * H, ctx + (size_t)(l - 1) * Dc, sizeof(float) * Dc);
      memcpy(a + 2 * H + Dc, tsin, sizeof tsin);
    }
  }
  for (uint32_t c = 0; c < nch; c++)
    etsim_synth__nn_embed_fwd_add(Rn, H, m->aemb[c], zt + (size_t)c * Rn, EA);
  for (int l = 1; l <= L; l++) {
    uint32_t r0 = R->ls[l], r1 = R->ls[l + 1];
    float inv = 1.0f / (float)(r1 - r0);
    float mean[4096];
    memset(mean, 0, sizeof(float) * H);
    for (uint32_t r = r0; r < r1; r++)
      for (int j = 0; j < H; j++) mean[j] += EA[(size_t)(r - 1) * H + j] * inv;
    for (uint32_t r = r0; r < r1; r++) {
      float *a = ain + (size_t)(r - 1) * Da;
      memcpy(a, EA + (size_t)(r - 1) * H, sizeof(float) * H);
      memcpy(a + H, mean, sizeof(float) * H);
    }
  }
  attr_film_t fm = {0};
  if (m->cfg.label_film && attr_film_alloc(m, p, Rn, ain, &fm)) return ETSIM_ENOMEM;
  etsim_synth__nn_linear_fwd(&m->a1, Rn, ain, p1);
  if (fm.F1) etsim_synth__film_fwd(Rn, H, fm.F1, 2 * (size_t)H, p1, fm.q1);
  etsim_synth__nn_gelu_fwd((size_t)Rn * H, fm.F1 ? fm.q1 : p1, h1);
  attr_attn_t at = {0};
  if (m->cfg.attn) {
    uint32_t widest = 0;
    for (int l = 1; l <= L; l++)
      if (R->ls[l + 1] - R->ls[l] > widest) widest = R->ls[l + 1] - R->ls[l];
    if (attr_attn_alloc(m, p, Rn, widest, &at)) return ETSIM_ENOMEM;
    etsim_synth__attn_fwd(m, Rn, L, R->ls + 1, 1, h1, at.Q, at.K, at.V, at.A, at.S, at.out);
  }
  etsim_synth__nn_linear_fwd(&m->a2, Rn, at.out ? at.out : h1, p2);
  if (fm.F1) etsim_synth__film_fwd(Rn, H, fm.F2, 2 * (size_t)H, p2, fm.q2);
  etsim_synth__nn_gelu_fwd((size_t)Rn * H, fm.F1 ? fm.q2 : p2, h2);
  etsim_synth__nn_linear_fwd(&m->a3, Rn, h2, alog);
  uint32_t off = 0;
  float wa = (float)(1.0 / (m->mean_nodes * nch));
  for (uint32_t c = 0; c < nch; c++) {
    int Kc = (int)m->n_cls[c];
    for (int r = 0; r < Rn; r++)
      memcpy(seg + (size_t)r * Kc, alog + (size_t)r * m->sum_cls + off, sizeof(float) * Kc);
    memset(dseg, 0, sizeof(float) * (size_t)Rn * Kc);
    la += etsim_synth__nn_softmax_xent(Rn, Kc, seg, R->xr + (size_t)c * n + 1, NULL, wa, dseg);
    for (int r = 0; r < Rn; r++)
      memcpy(dalog + (size_t)r * m->sum_cls + off, dseg + (size_t)r * Kc, sizeof(float) * Kc);
    off += m->n_cls[c];
  }
  *loss = la;
  if (!backward) return 0;
  for (size_t i = 0; i < (size_t)Rn * m->sum_cls; i++) dalog[i] *= weight;
  float *dh2 = etsim_synth__pz(p, (size_t)Rn * H), *dp2 = etsim_synth__pz(p, (size_t)Rn * H);
  float *dh1 = etsim_synth__pz(p, (size_t)Rn * H), *dp1 = etsim_synth__pz(p, (size_t)Rn * H);
  float *dain = etsim_synth__pz(p, (size_t)Rn * Da), *dEA = etsim_synth__pz(p, (size_t)Rn * H);
  if (p->oom) return ETSIM_ENOMEM;
  etsim_synth__nn_linear_bwd(&m->a3, Rn, h2, dalog, dh2, 1);
  if (fm.F1) {
    etsim_synth__nn_gelu_bwd((size_t)Rn * H, fm.q2, dh2, fm.dq);
    film_bwd(&m->af2, Rn, H, fm.lab, fm.F2, p2, fm.dq, dp2, fm.dF);
  } else {
    etsim_synth__nn_gelu_bwd((size_t)Rn * H, p2, dh2, dp2);
  }
  etsim_synth__nn_linear_bwd(&m->a2, Rn, at.out ? at.out : h1, dp2, dh1, 1);
  if (at.out && attr_attn_bwd(m, p, R, Rn, h1, &at, dh1)) return ETSIM_ENOMEM;
  if (fm.F1) {
    memset(fm.dq, 0, sizeof(float) * (size_t)Rn * H);
    etsim_synth__nn_gelu_bwd((size_t)Rn * H, fm.q1, dh1, fm.dq);
    film_bwd(&m->af1, Rn, H, fm.lab, fm.F1, p1, fm.dq, dp1, fm.dF);
  } else {
    etsim_synth__nn_gelu_bwd((size_t)Rn * H, p1, dh1, dp1);
  }
  etsim_synth__nn_linear_bwd(&m->a1, Rn, ain, dp1, dain, 1);
  for (int l = 1; l <= L; l++) {
    uint32_t r0 = R->ls[l], r1 = R->ls[l + 1];
    float inv = 1.0f / (float)(r1 - r0);
    float dmean[4096];
    memset(dmean, 0, sizeof(float) * H);
    float *dc = dctx + (size_t)(l - 1) * Dc;
    for (uint32_t r = r0; r < r1; r++) {
      const float *da = dain + (size_t)(r - 1) * Da;
      for (int j = 0; j < H; j++) {
        dEA[(size_t)(r - 1) * H + j] += da[j];
        dmean[j] += da[H + j] * inv;
      }
      for (int j = 0; j < Dc; j++) dc[j] += da[2 * H + j];
    }
    for (uint32_t r = r0; r < r1; r++)
      for (int j = 0; j < H; j++) dEA[(size_t)(r - 1) * H + j] += dmean[j];
  }
  for (uint32_t c = 0; c < nch; c++)
    etsim_synth__nn_embed_bwd(Rn, H, zt + (size_t)c * Rn, dEA, m->gaemb[c]);
  return 0;
}

/* The buffers of the exactly scored edge layers, sized for the largest. */
typedef struct gl_edge_bufs {
  uint8_t *clean, *noisy;
  uint32_t *children;
  float *gapf, *A, *dA, *ein, *B, *dB, *dein;
  float *A0; /* cfg.label_edge: the unscaled A */
} gl_edge_bufs_t;

/* (3), one layer l >= 2 whose prefix is small enough: every (node, earlier
 * node) pair is scored, against noise of diffusion step t.  The node
 * embeddings e (Z and Zs) and their gradients (dZ, dZs) are the graph's,
 * or the step's with successor messages. */
static void gl_edges_exact(gl_t *g, const gl_edge_bufs_t *b, const enc_t *e, float *dZ, float *dZs,
                           int l, int t, float we, double *le) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  int n = R->n, Te = m->cfg.t_edge, De = etsim_synth__dim_edge_in(m), backward = g->backward;
  uint32_t nch = m->n_ch;
  const uint8_t *clean = b->clean;
  uint8_t *noisy = b->noisy;
  const uint32_t *children = b->children;
  float *gapf = b->gapf, *A = b->A, *dA = b->dA, *ein = b->ein, *B = b->B, *dB = b->dB;
  float *dein = b->dein, *dctx = g->dctx;
  const float *ctx = g->ctx;
  uint32_t v0 = R->ls[l], nv = R->ls[l + 1] - v0, N = v0 - 1;
  float tsin[SY_DT];
  double ab = m->abar_e[t];
  double ml = (m->mean_indeg < N ? m->mean_indeg : N) / N;
  etsim_synth__t_feat(t, Te, tsin);
  memset(b->clean, 0, (size_t)nv * N);
  for (uint32_t v = 0; v < nv; v++)
    for (uint32_t k = R->poff[v0 + v]; k < R->poff[v0 + v + 1]; k++)
      b->clean[(size_t)v * N + (R->padj[k] - 1)] = 1;
  for (size_t q = 0; q < (size_t)nv * N; q++)
    noisy[q] = etsim_rng_uniform(&g->rng) < ab ? clean[q] : (etsim_rng_uniform(&g->rng) < ml);
  for (uint32_t u = 0; u < N; u++)
    etsim_synth__gap_feats((uint32_t)l - R->lay[u + 1], children[u + 1],
                           gapf + (size_t)u * SY_GAPF);
  etsim_synth__nn_linear_fwd(&m->es_g, (int)N, gapf, A);
  for (size_t i = 0; i < (size_t)N * P; i++) A[i] += e->Zs[(size_t)P + i]; /* rows 1..N */
  float sc[4096];
  if (m->cfg.label_edge) {
    etsim_synth__edge_scale(m, ctx + (size_t)(l - 1) * Dc, sc);
    etsim_synth__edge_scale_rows(N, P, sc, A, b->A0);
  }
  memset(ein, 0, sizeof(float) * (size_t)nv * De);
  for (uint32_t v = 0; v < nv; v++) {
    float *a = ein + (size_t)v * De;
    for (uint32_t c = 0; c < nch; c++) {
      const float *er = m->eemb[c] + (size_t)R->xr[(size_t)c * n + v0 + v] * H;
      for (int j = 0; j < H; j++) a[j] += er[j];
    }
    int deg = 0;
    for (uint32_t u = 0; u < N; u++)
      if (noisy[(size_t)v * N + u]) {
        deg++;
        const float *z = e->Z + (size_t)(u + 1) * H;
        for (int j = 0; j < H; j++) a[H + j] += z[j];
      }
    memcpy(a + 2 * H, ctx + (size_t)(l - 1) * Dc, sizeof(float) * Dc);
    memcpy(a + 2 * H + Dc, tsin, sizeof tsin);
    a[2 * H + Dc + SY_DT] = (float)(log1p((double)deg) / 2);
  }
  etsim_synth__nn_linear_fwd(&m->ed, (int)nv, ein, B);
  memset(dA, 0, sizeof(float) * (size_t)N * P);
  memset(dB, 0, sizeof(float) * (size_t)nv * P);
  float w_l = we * g->weight;
  float b1[4096];
  for (uint32_t v = 0; v < nv; v++) {
    const float *b0 = B + (size_t)v * P;
    float *db = dB + (size_t)v * P;
    for (int j = 0; j < P; j++) b1[j] = b0[j] + m->ew[j];
    for (uint32_t u = 0; u < N; u++) {
      const float *a = A + (size_t)u * P;
      /* The pair's own noisy bit enters the split first layer as one
       * more term (b1 = b + ew when the pair is on): a denoiser that
       * cannot see its own input cannot copy it at small t. */
      int on = noisy[(size_t)v * N + u];
      const float *bv = on ? b1 : b0;
      float acc[8];
      etsim_synth__pair_acc(m->eo, P, a, bv, acc);
      double z = m->eob[0] + (double)(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                      ((acc[4] + acc[5]) + (acc[6] + acc[7])));
      int tg = clean[(size_t)v * N + u];
      double sp = z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
      *le += we * (sp - (tg ? z : 0));
      if (!backward) continue;
      float dz = w_l * (float)(1.0 / (1.0 + exp(-z)) - tg);
      m->geob[0] += dz;
      float *da = dA + (size_t)u * P;
      for (int j = 0; j < P; j++) {
        float h = a[j] + bv[j];
        if (h > 0) {
          m->geo[j] += dz * h;
          float gr = dz * m->eo[j];
          da[j] += gr;
          db[j] += gr;
          if (on) m->gew[j] += gr;
        }
      }
    }
  }
  if (!backward) return;
  memset(dein, 0, sizeof(float) * (size_t)nv * De);
  etsim_synth__nn_linear_bwd(&m->ed, (int)nv, ein, dB, dein, 1);
  for (uint32_t v = 0; v < nv; v++) {
    const float *da = dein + (size_t)v * De;
    for (uint32_t c = 0; c < nch; c++) {
      float *ge = m->geemb[c] + (size_t)R->xr[(size_t)c * n + v0 + v] * H;
      for (int j = 0; j < H; j++) ge[j] += da[j];
    }
    for (uint32_t u = 0; u < N; u++)
      if (noisy[(size_t)v * N + u]) {
        float *dz = dZ + (size_t)(u + 1) * H;
        for (int j = 0; j < H; j++) dz[j] += da[H + j];
      }
    float *dc = dctx + (size_t)(l - 1) * Dc;
    for (int j = 0; j < Dc; j++) dc[j] += da[2 * H + j];
  }
  if (m->cfg.label_edge) edge_scale_bwd(m, ctx + (size_t)(l - 1) * Dc, sc, N, b->A0, dA);
  etsim_synth__nn_linear_bwd(&m->es_g, (int)N, gapf, dA, NULL, 1);
  for (size_t i = 0; i < (size_t)N * P; i++) dZs[(size_t)P + i] += dA[i];
}

/* (3) edges into every layer from layer 2 on. */
static int gl_edges(gl_t *g, double *loss) {
  etsim_synth_model_t *m = g->m;
  ws_t *ws = g->ws;
  const rows_t *R = g->R;
  pool_t *p = g->p;
  int P = m->cfg.pair_hidden, n = R->n, L = R->L, Te = m->cfg.t_edge;
  double le = 0;
  *loss = 0;
  /* Layers whose prefix holds more than `exact` nodes score a sample of
   * their candidates (edges_sampled); the others score every pair. */
  uint32_t exact = m->cfg.exact_candidates > 0 ? (uint32_t)m->cfg.exact_candidates : 0;
  size_t total_pairs = 0, maxpairs = 0;
  for (int l = 2; l <= L; l++) {
    size_t pr = (size_t)(R->ls[l + 1] - R->ls[l]) * (R->ls[l] - 1);
    total_pairs += pr;
    if (exact && R->ls[l] - 1 > exact) continue;
    if (pr > maxpairs) maxpairs = pr;
  }
  if (!total_pairs) return 0;
  int De = etsim_synth__dim_edge_in(m);
  /* Sum over a node's candidates = NLL of its parent set; per pair it
   * would be tiny next to the other heads (most pairs are easy zeros). */
  float we = (float)(1.0 / m->mean_nodes);
  if (etsim_grow((void **)&ws->u8, &ws->u8_cap, 2 * maxpairs + 1, 1) ||
      etsim_grow((void **)&ws->u32, &ws->u32_cap, (size_t)n + 1, sizeof(uint32_t)))
    return ETSIM_ENOMEM;
  gl_edge_bufs_t b = {.clean = ws->u8, .noisy = ws->u8 + maxpairs, .children = ws->u32};
  memset(b.children, 0, sizeof(uint32_t) * (size_t)n);
  size_t maxnv = 0, maxN = 0;
  for (int l = 2; l <= L; l++) {
    size_t nv = R->ls[l + 1] - R->ls[l], N = R->ls[l] - 1;
    if (exact && N > exact) continue;
    maxnv = nv > maxnv ? nv : maxnv;
    maxN = N > maxN ? N : maxN;
  }
  b.gapf = etsim_synth__pz(p, maxN * SY_GAPF), b.A = etsim_synth__pz(p, maxN * P);
  b.dA = etsim_synth__pz(p, maxN * P);
  if (m->cfg.label_edge) b.A0 = etsim_synth__pz(p, maxN * P);
  b.ein = etsim_synth__pz(p, maxnv * De), b.B = etsim_synth__pz(p, maxnv * P);
  b.dB = etsim_synth__pz(p, maxnv * P), b.dein = etsim_synth__pz(p, maxnv * De);
  succ_step_t st = {0};
  if (p->oom || (m->cfg.succ_msg && succ_step_alloc(g, &st))) return ETSIM_ENOMEM;
  int H = m->cfg.hidden;
  for (int l = 2; l <= L; l++) {
    /* Children of earlier nodes among layers < l (and their Z's sums). */
    for (uint32_t r = R->ls[l - 1]; r < R->ls[l]; r++)
      for (uint32_t k = R->poff[r]; k < R->poff[r + 1]; k++) {
        b.children[R->padj[k]]++;
        if (st.C)
          for (int j = 0; j < H; j++) st.C[(size_t)R->padj[k] * H + j] += g->e.Z[(size_t)r * H + j];
      }
    uint32_t N = R->ls[l] - 1;
    int t = 1 + (int)etsim_rng_below(&g->rng, (uint64_t)Te);
    enc_t es = g->e; /* the step's embeddings: the graph's, or with messages */
    float *dZ = g->dZ, *dZs = g->dZs;
    if (st.C) {
      succ_step_fwd(g, &st, b.children, l);
      es.Z = st.Zl, es.Zs = st.Zsl, dZ = st.dZl, dZs = st.dZsl;
    }
    if (g->bd) { /* step l - 1's bidirectional pass over rows [0, ls[l]) */
      bidir_step_fwd(g, (int)R->ls[l]);
      es.Z = g->bd->e.Z, es.Zs = g->bd->e.Zs, dZ = g->bd->dZl, dZs = g->bd->dZsl;
    }
    if (exact && N > exact) {
      int rc = edges_sampled(m, ws, R, &es, g->ctx, dZ, dZs, g->dctx, b.children, l, t, &g->rng,
                             g->backward, g->weight, we, &le);
      if (rc) return rc;
    } else {
      gl_edges_exact(g, &b, &es, dZ, dZs, l, t, we, &le);
    }
    if (st.C && g->backward) succ_step_bwd(g, &st, b.children, l);
    if (g->bd && g->backward) bidir_step_bwd(g, (int)R->ls[l]);
  }
  *loss = le;
  return 0;
}

/* Back through the contexts: layer norm, prefix sums, node embeddings. */
static int gl_contexts_bwd(gl_t *g) {
  etsim_synth_model_t *m = g->m;
  const rows_t *R = g->R;
  pool_t *p = g->p;
  int H = m->cfg.hidden, Dc = etsim_synth__dim_ctx(m), n = R->n, L = R->L, ns = g->ns;
  float *dZ = g->dZ;
  float *dG = etsim_synth__pz(p, (size_t)ns * H), *dS = etsim_synth__pz(p, (size_t)ns * H);
  if (p->oom) return ETSIM_ENOMEM;
  for (int l = 0; l <= L; l++)
    memcpy(dG + (size_t)l * H, g->dctx + (size_t)l * Dc, sizeof(float) * H);
  etsim_synth__nn_layernorm_bwd(ns, H, g->S, m->ln_g, g->lst, dG, dS, m->gln_g, m->gln_b);
  if (m->cfg.succ_msg && succ_pool_bwd(g, dS)) return ETSIM_ENOMEM;
  if (g->bd) { /* each step's pass again, each of its rows getting dS_l */
    for (int l = 0; l <= L; l++) {
      int rows = (int)R->ls[l + 1];
      bidir_step_fwd(g, rows);
      for (int r = 0; r < rows; r++)
        memcpy(g->bd->dZl + (size_t)r * H, dS + (size_t)l * H, sizeof(float) * H);
      bidir_step_bwd(g, rows);
    }
    return 0; /* nothing read the causal pass's Z */
  }
  float acc[4096];
  memset(acc, 0, sizeof(float) * H);
  for (int l = L; l >= 0; l--) {
    for (int j = 0; j < H; j++) acc[j] += dS[(size_t)l * H + j];
    for (uint32_t r = R->ls[l]; r < R->ls[l + 1]; r++)
      for (int j = 0; j < H; j++) dZ[(size_t)r * H + j] += acc[j];
  }
  enc_bwd(m, p, &g->e, n, R->xr, R->poff, R->padj, dZ, g->dZs);
  return p->oom ? ETSIM_ENOMEM : 0;
}

/* The loss of one graph (sizes, attributes, edges; parts[0..2] when given),
 * with the gradients added into m when `backward`, scaled by `weight`. */
static int graph_loss_ws(etsim_synth_model_t *m, ws_t *ws, const rows_t *R, double y, double y2,
                         uint64_t seed, int backward, float weight, double *loss, double *parts) {
  gl_t g = {.m = m, .ws = ws, .R = R, .backward = backward, .weight = weight};
  double lc, la, le;
  int rc = gl_contexts(&g, y, y2, seed);
  if (!rc && backward && m->cfg.label_drop > 0) {
    /* The null label for the denoisers (classifier-free guidance), drawn
     * from a stream of its own so the rest of the noise is unchanged. */
    etsim_rng_t r;
    etsim_rng_seed(&r, seed ^ 0x6e756c6cULL);
    if (etsim_rng_uniform(&r) < m->cfg.label_drop) {
      int Dc = etsim_synth__dim_ctx(m);
      for (int l = 0; l < g.ns; l++) etsim_synth__null_label(m, g.ctx + (size_t)l * Dc);
    }
  }
  if (!rc) rc = gl_sizes(&g, &lc);
  if (!rc) rc = gl_attrs(&g, &la);
  if (!rc) rc = gl_edges(&g, &le);
  if (!rc && backward) rc = gl_contexts_bwd(&g);
  if (rc) return rc;
  *loss = lc + la + le;
  if (parts) {
    parts[0] = lc;
    parts[1] = la;
    parts[2] = le;
  }
  return 0;
}

int etsim_synth__graph_loss(etsim_synth_model_t *m, const etsim_synth_data_t *d,
                            const etsim_synth_dag_t *g, uint64_t seed, int backward, float weight,
                            double *loss, double *parts, etsim_error_t *err) {
  (void)d;
  rows_t R;
  int rc = rows_build(m, g, &R, err);
  if (rc) return rc;
  ws_t ws = {0};
  rc = graph_loss_ws(m, &ws, &R, g->y, g->y2, seed, backward, weight, loss, parts);
  ws_free(&ws);
  rows_free(&R);
  if (rc) return etsim_error_set(err, rc, "out of memory");
  return 0;
}

/* Test hook: the step contexts of g as training builds them. */
int etsim_synth__contexts(etsim_synth_model_t *m, const etsim_synth_dag_t *g, float *out,
                          size_t cap, etsim_error_t *err) {
  rows_t R;
  int rc = rows_build(m, g, &R, err);
  if (rc) return rc;
  ws_t ws = {0};
  gl_t G = {.m = m, .ws = &ws, .R = &R};
  size_t need = (size_t)(R.L + 1) * (size_t)etsim_synth__dim_ctx(m);
  rc = gl_contexts(&G, g->y, g->y2, 1);
  if (!rc && need > cap) rc = ETSIM_EINVAL;
  if (!rc) memcpy(out, G.ctx, sizeof(float) * need);
  int steps = R.L + 1;
  ws_free(&ws);
  rows_free(&R);
  if (rc == ETSIM_EINVAL)
    return etsim_error_set(err, rc, "contexts: %zu floats do not fit in %zu", need, cap);
  if (rc) return etsim_error_set(err, rc, "contexts: out of memory");
  return steps;
}

/* Test hook: per step l = 1..L of g, the edge denoiser's candidate parts
 * (es_z on the step's embeddings) of rows 1..N_l, the nodes of layers <=
 * l, then their parent parts (the rows H..2H of ed's first layer on the
 * same embeddings), P floats a row, as training reads them for the edges
 * into layer l + 1 (with successor messages, the step's). */
int etsim_synth__step_parts(etsim_synth_model_t *m, const etsim_synth_dag_t *g, float *out,
                            size_t cap, etsim_error_t *err) {
  rows_t R;
  int rc = rows_build(m, g, &R, err);
  if (rc) return rc;
  ws_t ws = {0};
  gl_t G = {.m = m, .ws = &ws, .R = &R};
  int H = m->cfg.hidden, P = m->cfg.pair_hidden;
  size_t w = 0;
  uint32_t *children = etsim_calloc((size_t)R.n + 1, sizeof *children);
  succ_step_t st = {0};
  rc = children ? gl_contexts(&G, g->y, g->y2, 1) : ETSIM_ENOMEM;
  if (!rc && m->cfg.succ_msg && !succ_csr(&G)) rc = succ_step_alloc(&G, &st);
  for (int l = 1; !rc && l <= R.L; l++) {
    for (uint32_t r = R.ls[l]; r < R.ls[l + 1]; r++)
      for (uint32_t k = R.poff[r]; k < R.poff[r + 1]; k++) {
        children[R.padj[k]]++;
        if (st.C)
          for (int j = 0; j < H; j++) st.C[(size_t)R.padj[k] * H + j] += G.e.Z[(size_t)r * H + j];
      }
    const float *Z = G.e.Z, *Zs = G.e.Zs;
    if (st.C) {
      succ_step_fwd(&G, &st, children, l + 1);
      Z = st.Zl, Zs = st.Zsl;
    }
    if (G.bd) {
      bidir_step_fwd(&G, (int)R.ls[l + 1]);
      Z = G.bd->e.Z, Zs = G.bd->e.Zs;
    }
    size_t N = R.ls[l + 1] - 1;
    if (w + 2 * N * P > cap) {
      rc = ETSIM_EINVAL;
      break;
    }
    memcpy(out + w, Zs + P, sizeof(float) * N * P);
    w += N * P;
    for (size_t u = 1; u <= N; u++, w += P)
      for (int j = 0; j < P; j++) {
        double a = 0;
        for (int i = 0; i < H; i++) a += (double)Z[u * H + i] * m->ed.w[(size_t)(H + i) * P + j];
        out[w + j] = (float)a;
      }
  }
  etsim_free(children);
  ws_free(&ws);
  rows_free(&R);
  if (rc == ETSIM_EINVAL) return etsim_error_set(err, rc, "step parts: more than %zu floats", cap);
  if (rc) return etsim_error_set(err, rc, "step parts: out of memory");
  return (int)w;
}

/* --------------------------------------------------------------- training */

static int check_layout(const etsim_synth_model_t *m, const etsim_synth_data_t *d, const char *what,
                        etsim_error_t *err) {
  if (d->kind != m->kind || d->n_ch != m->n_ch)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: categories (%s, %u channels) differ from the "
                           "model's (%s, %u channels)",
                           what, d->kind ? "trace" : "text", d->n_ch, m->kind ? "trace" : "text",
                           m->n_ch);
  return 0;
}

/* Mean loss over d with the workspace ws (training passes its own, so a
 * large graph's buffers are not held twice). */
/* The mean losses over d; rows, when given, are d's graphs built already
 * (training builds its validation rows once, not every epoch). */
static int model_loss_ws(etsim_synth_model_t *m, ws_t *ws, const etsim_synth_data_t *d,
                         const rows_t *rows, uint64_t seed, double *total, double *count,
                         double *attr, double *edge, etsim_error_t *err) {
  int rc = check_layout(m, d, "data", err);
  if (rc) return rc;
  double s[4] = {0};
  etsim_rng_t r;
  etsim_rng_seed(&r, seed);
  for (size_t i = 0; i < d->n_graphs; i++) {
    rows_t own;
    const rows_t *R = rows ? &rows[i] : &own;
    if (!rows && (rc = rows_build(m, &d->g[i], &own, err))) {
      etsim_error_prefix(err, "graph %zu", i);
      break;
    }
    double l, parts[3];
    rc = graph_loss_ws(m, ws, R, d->g[i].y, d->g[i].y2, etsim_rng_next(&r), 0, 1, &l, parts);
    if (!rows) rows_free(&own);
    if (rc) {
      etsim_error_set(err, rc, "out of memory");
      break;
    }
    s[0] += l;
    for (int k = 0; k < 3; k++) s[k + 1] += parts[k];
  }
  if (rc) return rc;
  double n = d->n_graphs ? (double)d->n_graphs : 1;
  if (total) *total = s[0] / n;
  if (count) *count = s[1] / n;
  if (attr) *attr = s[2] / n;
  if (edge) *edge = s[3] / n;
  return 0;
}

int etsim_synth_model_loss(etsim_synth_model_t *m, const etsim_synth_data_t *d, uint64_t seed,
                           double *total, double *count, double *attr, double *edge,
                           etsim_error_t *err) {
  ws_t ws = {0};
  int rc = model_loss_ws(m, &ws, d, NULL, seed, total, count, attr, edge, err);
  ws_free(&ws);
  return rc;
}

#include <time.h>
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int etsim_synth_train(const etsim_synth_data_t *train, const etsim_synth_data_t *val,
                      const etsim_synth_config_t *cfg, etsim_synth_progress_fn fn, void *user,
                      etsim_synth_model_t **out, etsim_error_t *err) {
  openblas_set_num_threads(1);
  etsim_synth_data_t tr = *train, va = {0};
  etsim_synth_dag_t *split = NULL;
  size_t *idx = NULL;
  float *best = NULL, *avg = NULL, *raw = NULL; /* cfg->ema: the average, the raw weights */
  rows_t *rows = NULL, *vrows = NULL;
  size_t n_rows = 0, n_vrows = 0;
  etsim_synth_model_t *m = NULL;
  ws_t ws = {0};
  int rc;
  etsim_rng_t rng;
  etsim_rng_seed(&rng, cfg->seed);
  if (!val) {
    /* Hold out a seeded 10% of the training graphs. */
    size_t n = train->n_graphs, nv = n >= 10 ? n / 10 : (n >= 2 ? 1 : 0);
    split = etsim_malloc(sizeof *split * (n + 1));
    if (!split) goto oom;
    memcpy(split, train->g, sizeof *split * n);
    for (size_t i = n; i > 1; i--) {
      size_t j = etsim_rng_below(&rng, i);
      etsim_synth_dag_t t = split[i - 1];
      split[i - 1] = split[j];
      split[j] = t;
    }
    va = *train;
    va.g = split;
    va.n_graphs = nv ? nv : n;
    tr.g = split + nv;
    tr.n_graphs = n - nv;
    val = &va;
  }
  if ((rc = etsim_synth__model_new(&tr, cfg, &m, err))) goto out;
  if ((rc = check_layout(m, val, "validation data", err))) goto out;
  if (etsim_synth__alloc_params(m, 1, cfg->seed)) goto oom;
  n_rows = tr.n_graphs;
  rows = etsim_calloc(n_rows, sizeof *rows);
  idx = etsim_malloc(sizeof *idx * n_rows);
  best = etsim_malloc(sizeof *best * m->n_params);
  if (!rows || !idx || !best) goto oom;
  for (size_t i = 0; i < n_rows; i++) {
    if ((rc = rows_build(m, &tr.g[i], &rows[i], err))) {
      etsim_error_prefix(err, "training graph %zu", i);
      goto out;
    }
    idx[i] = i;
  }
  vrows = etsim_calloc(val->n_graphs + 1, sizeof *vrows);
  if (!vrows) goto oom;
  for (; n_vrows < val->n_graphs; n_vrows++)
    if ((rc = rows_build(m, &val->g[n_vrows], &vrows[n_vrows], err))) {
      etsim_error_prefix(err, "validation graph %zu", n_vrows);
      goto out;
    }
  memcpy(best, m->w, sizeof *best * m->n_params);
  float ema = cfg->ema > 0 && cfg->ema < 1 ? cfg->ema : 0;
  if (ema) {
    avg = etsim_malloc(sizeof *avg * m->n_params);
    raw = etsim_malloc(sizeof *raw * m->n_params);
    if (!avg || !raw) goto oom;
    memcpy(avg, m->w, sizeof *avg * m->n_params);
  }
  nn_adam_t opt = {cfg->lr, 0.9f, 0.999f, 1e-8f, 1, 0};
  double best_val = INFINITY;
  int B = cfg->batch > 0 ? cfg->batch : 16;
  for (int ep = 1; ep <= cfg->epochs; ep++) {
    double t0 = now_s();
    for (size_t i = n_rows; i > 1; i--) {
      size_t j = etsim_rng_below(&rng, i);
      size_t t = idx[i - 1];
      idx[i - 1] = idx[j];
      idx[j] = t;
    }
    double sum[4] = {0};
    for (size_t b0 = 0; b0 < n_rows; b0 += (size_t)B) {
      size_t b1 = b0 + (size_t)B < n_rows ? b0 + (size_t)B : n_rows;
      memset(m->g, 0, sizeof(float) * m->n_params);
      float wgt = 1.0f / (float)(b1 - b0);
      for (size_t k = b0; k < b1; k++) {
        double l, parts[3];
        rows_t *R = &rows[idx[k]];
        if ((rc = graph_loss_ws(m, &ws, R, tr.g[idx[k]].y, tr.g[idx[k]].y2, etsim_rng_next(&rng), 1,
                                wgt, &l, parts)))
          goto oom;
        sum[0] += l;
        for (int q = 0; q < 3; q++) sum[q + 1] += parts[q];
      }
      etsim_synth__nn_clip_grad(m->n_params, m->g, 5.0);
      etsim_synth__nn_adam_update(&opt, m->n_params, m->w, m->g, m->adam_m, m->adam_v,
                                  m->adam_vmax);
      if (ema)
        for (size_t i = 0; i < m->n_params; i++) avg[i] += (1 - ema) * (m->w[i] - avg[i]);
    }
    if (ema) { /* validate (and keep) the average; training goes on from the raw weights */
      memcpy(raw, m->w, sizeof *raw * m->n_params);
      memcpy(m->w, avg, sizeof *avg * m->n_params);
    }
    double vl;
    if ((rc =
             model_loss_ws(m, &ws, val, vrows, cfg->seed ^ 0x7a11dULL, &vl, NULL, NULL, NULL, err)))
      goto out;
    etsim_synth_progress_t pg = {
        ep, cfg->epochs,   sum[0] / n_rows, sum[1] / n_rows, sum[2] / n_rows, sum[3] / n_rows,
        vl, vl < best_val, now_s() - t0};
    if (vl < best_val) {
      best_val = vl;
      memcpy(best, m->w, sizeof *best * m->n_params);
    }
    if (ema) memcpy(m->w, raw, sizeof *raw * m->n_params);
    if (fn && fn(user, &pg)) break;
  }
  memcpy(m->w, best, sizeof *best * m->n_params);
  rc = 0;
  goto out;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
out:
  ws_free(&ws);
  if (rows)
    for (size_t i = 0; i < n_rows; i++) rows_free(&rows[i]);
  etsim_free(rows);
  for (size_t i = 0; i < n_vrows; i++) rows_free(&vrows[i]); /* rows_build frees its own */
  etsim_free(vrows);
  etsim_free(idx);
  etsim_free(best);
  etsim_free(avg);
  etsim_free(raw);
  etsim_free(split);
  if (rc) {
    etsim_synth_model_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

void etsim_synth_model_info(const etsim_synth_model_t *m, int *kind, uint32_t *n_ch,
                            uint32_t *n_cls, size_t *n_params) {
  if (kind) *kind = m->kind;
  if (n_ch) *n_ch = m->n_ch;
  if (n_cls)
    for (uint32_t c = 0; c < m->n_ch; c++) n_cls[c] = m->n_cls[c];
  if (n_params) *n_params = m->n_params;
}

double etsim_synth_model_label(const etsim_synth_model_t *m) { return m->y_median; }

/* A denoiser's sampling temperature: *dst = tau, which must be in (0, 100]. */
static int set_temp(double *dst, double tau, const char *which, etsim_error_t *err) {
  if (!(tau > 0 && tau <= 100))
    return etsim_error_set(err, ETSIM_EINVAL, "%s temperature %g not in (0, 100]", which, tau);
  *dst = tau;
  return 0;
}

int etsim_synth_model_set_edge_temp(etsim_synth_model_t *m, double tau, etsim_error_t *err) {
  return set_temp(&m->edge_temp, tau, "edge", err);
}

int etsim_synth_model_set_attr_temp(etsim_synth_model_t *m, double tau, etsim_error_t *err) {
  return set_temp(&m->attr_temp, tau, "attribute", err);
}

void etsim_synth_model_set_max_parents(etsim_synth_model_t *m, uint32_t k) { m->max_indeg = k; }

int etsim_synth_model_set_parent_caps(etsim_synth_model_t *m, const etsim_synth_data_t *d, double q,
                                      etsim_error_t *err) {
  if (!(q > 0 && q <= 1)) return etsim_error_set(err, ETSIM_EINVAL, "share %g not in (0, 1]", q);
  if (d->n_ch != m->n_ch || d->kind != m->kind)
    return etsim_error_set(err, ETSIM_EINVAL, "the DAGs' categories do not fit the model's");
  uint32_t K = m->n_cls[0], D = 64; /* in-degrees above D - 1 count as D - 1 */
  uint32_t *hist = etsim_calloc((size_t)K * D, sizeof *hist), *cap = etsim_calloc(K, sizeof *cap);
  uint32_t *indeg = NULL;
  size_t indeg_cap = 0;
  int rc = hist && cap ? 0 : ETSIM_ENOMEM;
  for (size_t i = 0; !rc && i < d->n_graphs; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    if (etsim_grow((void **)&indeg, &indeg_cap, (size_t)g->n_nodes + 1, sizeof *indeg)) {
      rc = ETSIM_ENOMEM;
      break;
    }
    memset(indeg, 0, sizeof *indeg * g->n_nodes);
    for (uint32_t k = 0; k < g->n_edges; k++) indeg[g->dst[k]]++;
    for (uint32_t v = 0; v < g->n_nodes && !rc; v++) {
      uint32_t c = g->x[(size_t)v * d->n_ch]; /* channel 0 */
      if (c >= K)
        rc = etsim_error_set(err, ETSIM_EINVAL, "DAG %zu node %u: category %u, the model has %u", i,
                             v, c, K);
      else if (indeg[v]) hist[(size_t)c * D + (indeg[v] < D ? indeg[v] : D - 1)]++;
    }
  }
  if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "out of memory");
  for (uint32_t c = 0; !rc && c < K; c++) {
    uint64_t with = 0, atleast = 0;
    for (uint32_t k = 1; k < D; k++) with += hist[(size_t)c * D + k];
    for (uint32_t k = D - 1; with && k >= 1 && !cap[c]; k--) {
      atleast += hist[(size_t)c * D + k];
      if ((double)atleast >= q * (double)with) cap[c] = k;
    }
  }
  etsim_free(indeg);
  etsim_free(hist);
  if (rc) {
    etsim_free(cap);
    return rc;
  }
  etsim_free(m->cat_cap);
  m->cat_cap = cap;
  return 0;
}
int etsim_synth_model_set_guidance(etsim_synth_model_t *m, double w, etsim_error_t *err) {
  if (!(w >= 0 && w <= 20))
    return etsim_error_set(err, ETSIM_EINVAL, "guidance %g: must be in [0, 20]", w);
  m->guidance = w;
  return 0;
}
int etsim_synth_model_set_guidance_edge(etsim_synth_model_t *m, double w, etsim_error_t *err) {
  if (!(w >= 0 && w <= 20))
    return etsim_error_set(err, ETSIM_EINVAL, "edge guidance %g: must be in [0, 20]", w);
  m->guidance_edge = w;
  m->guidance_edge_set = 1;
  return 0;
}
uint32_t etsim_synth_model_n_labels(const etsim_synth_model_t *m) { return m->n_lab < 2 ? 1 : 2; }
