/*
 * sample.c — generating DAGs layer by layer, and the model file.
 *
 * Per layer: draw the stop decision from the stop head (not at the first
 * step), else the layer's size from the size head; denoise its nodes'
 * categories from the training marginal in t_attr reverse steps of the
 * categorical posterior, then denoise the
 * Bernoulli chain of every (earlier node, new node) pair in t_edge steps.
 * A new node whose sampled parents miss the previous layer gets its most
 * probable parent there, so the Kahn layering of the sample is exactly the
 * generated one (every real DAG has that property by definition).  Only the
 * new layer's rows are encoded: the causal encoder never revisits a prefix.
 */
#include "synth/synth_int.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* p(z_{t-1} = j | z_t = k, predicted clean distribution ph) for the
 * marginal-transition chain: proportional to
 *   Q_t[j,k] * sum_c ph[c] Qbar_{t-1}[c,j] / Qbar_t[c,k]. */
void etsim_synth__posterior(int K, const float *ph, const float *mg, int k, double alpha_t,
                            double abar_t, double abar_s, float *out) {
  /* r_c = ph[c] / Qbar_t[c,k]; Qbar_t[c,k] = abar_t [c = k] + (1-abar_t) m_k */
  double qo = (1 - abar_t) * mg[k], qk = qo + abar_t;
  if (qo < 1e-30) qo = 1e-30;
  double R = 0;
  for (int c = 0; c < K; c++) R += ph[c] / (c == k ? qk : qo);
  double s = 0;
  for (int j = 0; j < K; j++) {
    double rj = ph[j] / (j == k ? qk : qo);
    double qt = (1 - alpha_t) * mg[k] + (j == k ? alpha_t : 0);
    double v = qt * (abar_s * rj + (1 - abar_s) * mg[j] * R);
    out[j] = (float)v;
    s += v;
  }
  if (!(s > 0)) {
    for (int j = 0; j < K; j++) out[j] = ph[j];
    return;
  }
  for (int j = 0; j < K; j++) out[j] = (float)(out[j] / s);
}

typedef struct {
  pool_t pool;
  enc_t e;
  int cap;
  int32_t *xr;    /* channel-major, stride cap */
  uint32_t *poff; /* cap + 1 */
  uint32_t *padj;
  size_t adj_cap;
  uint32_t *lay, *children;
  uint8_t *noisy;
  size_t noisy_cap;
  /* Lookup tables: the first layers of both denoisers are linear in the
   * embeddings, the step features and the parents' embeddings, so their
   * parts are precomputed once per model (see build_tables). */
  float *ta[ETSIM_SYNTH_MAX_CH], *tm[ETSIM_SYNTH_MAX_CH]; /* n_cls x H */
  float *tt;                                              /* t_attr+1 x H */
  float *te[ETSIM_SYNTH_MAX_CH];                          /* n_cls x P */
  float *tte;                                             /* t_edge+1 x P */
  float *tables;
  uint32_t *hist; /* 3 * sum_cls category counts */
  int project;    /* enforce the trace attribute rules */
  etsim_synth_sample_stats_t stats;
  const uint32_t *fixed; /* benchmark hook: forced layer sizes, 0-ended */
  uint32_t cond_n;       /* node-count conditioning (cfg.size_cond): the target */
} sampler_t;

/* x[n x k] times rows [r0, r0+k) of the linear layer's W -> y[n x out]. */
static void part(const nn_linear_t *l, int n, int r0, int k, const float *x, float *y) {
  if (n > 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, l->out, k, 1.0f, x, k,
                l->w + (size_t)r0 * l->out, l->out, 0.0f, y, l->out);
}

static int build_tables(const etsim_synth_model_t *m, sampler_t *S) {
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  int Ta = m->cfg.t_attr, Te = m->cfg.t_edge;
  size_t need = (size_t)(Ta + 1) * H + (size_t)(Te + 1) * P;
  for (uint32_t c = 0; c < m->n_ch; c++) need += (size_t)m->n_cls[c] * (2 * H + P);
  S->tables = etsim_malloc(sizeof(float) * need);
  if (!S->tables) return ETSIM_ENOMEM;
  float *q = S->tables;
  for (uint32_t c = 0; c < m->n_ch; c++) {
    int K = (int)m->n_cls[c];
    S->ta[c] = q;
    q += (size_t)K * H;
    S->tm[c] = q;
    q += (size_t)K * H;
    S->te[c] = q;
    q += (size_t)K * P;
    part(&m->a1, K, 0, H, m->aemb[c], S->ta[c]);
    part(&m->a1, K, H, H, m->aemb[c], S->tm[c]);
    part(&m->ed, K, 0, H, m->eemb[c], S->te[c]);
  }
  S->tt = q;
  q += (size_t)(Ta + 1) * H;
  S->tte = q;
  float ts[SY_DT];
  for (int t = 0; t <= Ta; t++) {
    etsim_synth__t_feat(t, Ta, ts);
    part(&m->a1, 1, 2 * H + Dc, SY_DT, ts, S->tt + (size_t)t * H);
  }
  for (int t = 0; t <= Te; t++) {
    etsim_synth__t_feat(t, Te, ts);
    part(&m->ed, 1, 2 * H + Dc, SY_DT, ts, S->tte + (size_t)t * P);
  }
  return 0;
}

/* Draw channel c of a node from the last step's clean prediction (logits
 * lg of that channel) restricted to categories [lo, hi). */
static int32_t draw_range(const etsim_synth_model_t *m, uint32_t off, const float *lg, int lo,
                          int hi, float *p, etsim_rng_t *rng) {
  float mx = -1e30f;
  for (int j = lo; j < hi; j++)
    if (m->marg[off + j] > 0 && lg[j] > mx) mx = lg[j];
  if (mx <= -1e30f) return lo; /* nothing allowed was ever seen: the first */
  for (int j = 0; j < hi - lo; j++) p[j] = m->marg[off + lo + j] > 0 ? expf(lg[lo + j] - mx) : 0.0f;
  double sum = 0;
  for (int j = 0; j < hi - lo; j++) sum += p[j];
  for (int j = 0; j < hi - lo; j++) p[j] = (float)(p[j] / sum);
  return lo + etsim_synth__draw(rng, p, hi - lo);
}

/*
 * Counts the new nodes that break an attribute rule and, when S->project,
 * repairs them.  The attribute rules of trace data (a collective type exactly on
 * collectives, a size exactly on communication) couple channels that are
 * diffused independently.  A new node that breaks one keeps its class and
 * redraws the offending channel from the last step's clean prediction
 * restricted to the values the rule allows: the model's own distribution
 * conditioned on validity, as the forced parent makes every sample a DAG.
 */
static void project_rules(const etsim_synth_model_t *m, sampler_t *S, int32_t *zt, uint32_t s,
                          const float *alog, float *p, etsim_rng_t *rng) {
  uint32_t o1 = m->n_cls[0], o3 = m->n_cls[0] + m->n_cls[1] + m->n_cls[2];
  for (uint32_t v = 0; v < s; v++) {
    uint32_t x[ETSIM_SYNTH_TRACE_CH];
    for (uint32_t c = 0; c < ETSIM_SYNTH_TRACE_CH; c++) x[c] = (uint32_t)zt[(size_t)c * s + v];
    S->stats.nodes++;
    if (etsim_synth__attr_rule_ok(x)) continue;
    S->stats.projected++;
    if (!S->project) continue;
    const float *lg = alog + (size_t)v * m->sum_cls;
    int coll = x[0] == ETSIM_SYNTH_OP_COLL;
    int comm = coll || x[0] == ETSIM_SYNTH_OP_SEND || x[0] == ETSIM_SYNTH_OP_RECV;
    if (coll != (x[1] != 0))
      zt[(size_t)1 * s + v] = coll ? draw_range(m, o1, lg + o1, 1, (int)m->n_cls[1], p, rng) : 0;
    if (comm != (x[3] != 0))
      zt[(size_t)3 * s + v] = comm ? draw_range(m, o3, lg + o3, 1, (int)m->n_cls[3], p, rng) : 0;
  }
}

/*
 * The depth of a sample, drawn before its first layer (models with
 * ETSIM_SYNTH_CTX_PROGRESS): the stop head reads only the depth and the
 * label, so its decisions drawn up front give the depths that drawing
 * them layer by layer gives, and the denoisers then know, as in training,
 * how far through its depth the sample is.  Forced sizes (S->fixed) stop
 * at their 0.  sf, a and h are scratch of SY_STOPF, H and H floats.
 */
static int plan_depth(const etsim_synth_model_t *m, const sampler_t *S, const float *ysin,
                      float *sf, float *a, float *h, etsim_rng_t *rng) {
  int l = 1;
  for (; (uint32_t)l < m->max_layers; l++) {
    if (S->fixed) {
      if (S->fixed[l] == 0) break;
      continue;
    }
    float lg;
    etsim_synth__stop_feats(m, l, ysin, sf);
    etsim_synth__nn_linear_fwd(&m->s1, 1, sf, a);
    if (m->cfg.size_cond) {
      float nf[SY_NCF];
      etsim_synth__count_feats(S->cond_n, nf);
      etsim_synth__nn_linear_fwd_add(&m->ncs, 1, nf, a, 0);
    }
    etsim_synth__nn_gelu_fwd((size_t)m->cfg.hidden, a, h);
    etsim_synth__nn_linear_fwd(&m->s2, 1, h, &lg);
    if (etsim_rng_uniform(rng) < 1.0 / (1.0 + exp(-(double)lg))) break;
  }
  return l;
}

/* What the steps of sample_one share: the model, the sampler's rows, the
 * random stream and the buffers of one graph, sized for the largest layer
 * (maxs nodes) and graph (cap rows). */
typedef struct so {
  etsim_synth_model_t *m;
  sampler_t *S;
  etsim_rng_t *rng;
  float *ctx;               /* the step's context */
  float *cxa, *meanp;       /* attribute denoiser: fixed part, layer mean */
  float *p1, *h1, *p2, *h2; /* attribute denoiser layers */
  float *alog, *ph, *post;  /* attribute logits, one node's probabilities */
  float *cxe, *zm;          /* edge denoiser: fixed part, node parts */
  float *gapf, *A, *B;      /* edge denoiser: earlier and new node parts */
  float *phat;              /* edge probabilities of the last denoising step */
  int32_t *zt;              /* the new layer's categories, channel-major */
  /* Classifier-free guidance (either weight > 0): the context with the null
   * label, the denoisers' fixed parts for it, and the unguided logits. */
  float *ctxu, *cxau, *p1u, *alogu, *cxeu, *Bu;
  /* FiLM (cfg.label_film): the step's (gamma, beta) of both attribute
   * layers, 4H floats, with the label and with the null label. */
  float *film, *filmu;
  /* Edge label scale (cfg.label_edge) with guidance: the candidate parts
   * scaled for the null label. */
  float *Au;
  /* Attention within the layer (cfg.attn): Q, K, V, A (s x H each) and
   * the scores of NN_ATTN_CHUNK queries; NULL without it. */
  float *aq, *ak, *av, *aa, *as;
  int no_comm0; /* the new layer's node 0 may not communicate */
  /* The step's candidate parts (es_z on the embeddings, cap x P) and
   * parent parts (ed's on them, cap x P): the graph's (e->Zs, zm), or
   * with successor messages (cfg.succ_msg) the step's. */
  const float *zs_step, *zm_step;
  /* Successor messages: per row the sum of its children's Z (C), the
   * step's messages (Nb), their W_succ images (WN), rows with children
   * (list, nl of them), the step's parts (zsl, zml) and scratch. */
  float *C, *Nb, *WN, *zsl, *zml, *Ys, *T, *U;
  uint32_t *list, nl;
  /* Bidirectional encoder per layer step (cfg.bidir): the step's pass
   * over the prefix (be, with the children's sums bMr); its parent parts
   * go to zml. */
  enc_t be;
  float *bMr[SY_MAXK + 1];
} so_t;

/* The communication-run rule (docs/synth.md, Output): node 0 of a layer
 * that would otherwise make a longer run of communication-only layers
 * than training has is denoised with its class held to the classes that
 * do not communicate, from the first draw to the last step, so its other
 * channels are drawn for that class.  p is renormalised; an all-zero p
 * (no such class seen) is left alone. */
static void mask_comm(float *p, int K) {
  double s = 0;
  for (int j = 0; j < K; j++) {
    if (etsim_synth__is_comm((uint32_t)j)) p[j] = 0;
    s += p[j];
  }
  if (s > 0)
    for (int j = 0; j < K; j++) p[j] = (float)(p[j] / s);
}

/* The first attribute layer's pre-activations of the s new nodes (zt their
 * categories) from its fixed part cx, the step's part tt and the layer
 * mean's part meanp. */
static void attr_pre(const etsim_synth_model_t *m, const sampler_t *S, const int32_t *zt,
                     uint32_t s, const float *cx, const float *tt, const float *meanp, float *p1) {
  int H = m->cfg.hidden;
  for (uint32_t v = 0; v < s; v++) {
    float *pr = p1 + (size_t)v * H;
    for (int j = 0; j < H; j++) pr[j] = cx[j] + tt[j];
    for (uint32_t c = 0; c < m->n_ch; c++) {
      const float *a = S->ta[c] + (size_t)zt[(size_t)c * s + v] * H;
      for (int j = 0; j < H; j++) pr[j] += a[j];
    }
    for (int j = 0; j < H; j++) pr[j] += meanp[j];
  }
}

/* The attribute denoiser after its first layer's pre-activations p1 (s
 * rows): logits into alog.  With FiLM (F: 4H floats, gamma and beta of
 * both layers, shared by the rows), p1 and p2 are modulated in place.
 * With attention (o->aq set), the s rows, one layer, attend to each other
 * after the first hidden layer, as in training (model.c gl_attrs). */
static void attr_mlp(const so_t *o, uint32_t s, float *p1, const float *F, float *h1, float *p2,
                     float *h2, float *alog) {
  const etsim_synth_model_t *m = o->m;
  int H = m->cfg.hidden;
  if (F) etsim_synth__film_fwd((int)s, H, F, 0, p1, p1);
  etsim_synth__nn_gelu_fwd((size_t)s * H, p1, h1);
  if (o->aq) {
    uint32_t bs[2] = {0, s};
    etsim_synth__attn_fwd(m, (int)s, 1, bs, 0, h1, o->aq, o->ak, o->av, o->aa, o->as, h1);
  }
  etsim_synth__nn_linear_fwd(&m->a2, (int)s, h1, p2);
  if (F) etsim_synth__film_fwd((int)s, H, F + 2 * H, 0, p2, p2);
  etsim_synth__nn_gelu_fwd((size_t)s * H, p2, h2);
  etsim_synth__nn_linear_fwd(&m->a3, (int)s, h2, alog);
}

/* (2) the categories of a new layer of s nodes: drawn from the marginals,
 * then denoised from step Ta down to 1; written to rows r0.. of S->xr. */
static void so_attrs(so_t *o, uint32_t s, uint32_t r0) {
  etsim_synth_model_t *m = o->m;
  sampler_t *S = o->S;
  etsim_rng_t *rng = o->rng;
  int H = m->cfg.hidden, Dc = etsim_synth__dim_ctx(m), Ta = m->cfg.t_attr, cap = S->cap;
  uint32_t nch = m->n_ch;
  int32_t *zt = o->zt;
  float *cxa = o->cxa, *meanp = o->meanp, *p1 = o->p1, *h1 = o->h1, *p2 = o->p2, *h2 = o->h2;
  float *alog = o->alog, *ph = o->ph, *post = o->post;
  uint32_t off = 0;
  for (uint32_t c = 0; c < nch; c++) {
    for (uint32_t v = 0; v < s; v++) {
      const float *mg = m->marg + off;
      if (o->no_comm0 && c == 0 && v == 0) {
        memcpy(post, mg, sizeof(float) * m->n_cls[0]);
        mask_comm(post, (int)m->n_cls[0]);
        mg = post;
      }
      zt[(size_t)c * s + v] = etsim_synth__draw(rng, mg, (int)m->n_cls[c]);
    }
    off += m->n_cls[c];
  }
  /* Parts of the first attribute layer fixed for this layer. */
  part(&m->a1, 1, 2 * H, Dc, o->ctx, cxa);
  for (int j = 0; j < H; j++) cxa[j] += m->a1.b[j];
  double w = m->guidance;
  float atau = m->attr_temp > 0 ? (float)(1 / m->attr_temp) : 1.0f;
  if (w > 0) {
    part(&m->a1, 1, 2 * H, Dc, o->ctxu, o->cxau);
    for (int j = 0; j < H; j++) o->cxau[j] += m->a1.b[j];
  }
  if (o->film) { /* the label features follow the H summary and SY_FEAT */
    etsim_synth__nn_linear_fwd(&m->af1, 1, o->ctx + H + SY_FEAT, o->film);
    etsim_synth__nn_linear_fwd(&m->af2, 1, o->ctx + H + SY_FEAT, o->film + 2 * H);
    if (w > 0) {
      etsim_synth__nn_linear_fwd(&m->af1, 1, o->ctxu + H + SY_FEAT, o->filmu);
      etsim_synth__nn_linear_fwd(&m->af2, 1, o->ctxu + H + SY_FEAT, o->filmu + 2 * H);
    }
  }
  for (int t = Ta; t >= 1; t--) {
    const float *tt = S->tt + (size_t)t * H;
    float inv = 1.0f / (float)s;
    memset(meanp, 0, sizeof(float) * H);
    for (uint32_t v = 0; v < s; v++)
      for (uint32_t c = 0; c < nch; c++) {
        const float *b = S->tm[c] + (size_t)zt[(size_t)c * s + v] * H;
        for (int j = 0; j < H; j++) meanp[j] += b[j] * inv;
      }
    if (w > 0) { /* the null-label denoiser first, then the guided mix */
      attr_pre(m, S, zt, s, o->cxau, tt, meanp, o->p1u);
      attr_mlp(o, s, o->p1u, o->filmu, h1, p2, h2, o->alogu);
    }
    attr_pre(m, S, zt, s, cxa, tt, meanp, p1);
    attr_mlp(o, s, p1, o->film, h1, p2, h2, alog);
    if (w > 0)
      for (size_t i = 0; i < (size_t)s * m->sum_cls; i++)
        alog[i] = (float)((1 + w) * alog[i] - w * o->alogu[i]);
    if (atau != 1.0f) /* before the mask: masked classes stay at -1e30 */
      for (size_t i = 0; i < (size_t)s * m->sum_cls; i++) alog[i] *= atau;
    off = 0;
    for (uint32_t c = 0; c < nch; c++) {
      int K = (int)m->n_cls[c];
      for (uint32_t v = 0; v < s; v++) {
        float *lg = alog + (size_t)v * m->sum_cls + off;
        for (int j = 0; j < K; j++)
          if (m->marg[off + j] <= 0) lg[j] = -1e30f;
        etsim_synth__nn_softmax(1, K, lg, ph);
        int32_t *z = &zt[(size_t)c * s + v];
        etsim_synth__posterior(K, ph, m->marg + off, *z, m->alpha_a[t], m->abar_a[t],
                               m->abar_a[t - 1], post);
        if (o->no_comm0 && c == 0 && v == 0) mask_comm(post, K);
        *z = etsim_synth__draw(rng, post, K);
      }
      off += m->n_cls[c];
    }
  }
  if (m->kind == ETSIM_SYNTH_KIND_TRACE && nch == ETSIM_SYNTH_TRACE_CH)
    project_rules(m, S, zt, s, alog, ph, rng);
  for (uint32_t c = 0; c < nch; c++)
    for (uint32_t v = 0; v < s; v++) S->xr[(size_t)c * cap + r0 + v] = zt[(size_t)c * s + v];
}

/* The edge denoiser's guidance weight: its own when set, else the
 * attribute denoiser's. */
static double edge_guidance(const etsim_synth_model_t *m) {
  return m->guidance_edge_set ? m->guidance_edge : m->guidance;
}

/* The edge denoiser's logit of one pair from its candidate part a and new-
 * node part b (P wide). */
static inline float pair_logit(const etsim_synth_model_t *m, int P, const float *a,
                               const float *b) {
  float acc[8];
  etsim_synth__pair_acc(m->eo, P, a, b, acc);
  return m->eob[0] + ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* The per-new-node part of the edge denoiser's first layer (P wide, into
 * B) for the s new nodes, from its fixed part cx, the step's part tte,
 * their categories, current noisy parents (nz, s x N) and in-degree. */
static void edge_node_part(const so_t *o, uint32_t s, uint32_t N, const uint8_t *nz,
                           const float *cx, const float *tte, float *B) {
  const etsim_synth_model_t *m = o->m;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  const float *wdeg = m->ed.w + (size_t)(2 * H + Dc + SY_DT) * P;
  for (uint32_t v = 0; v < s; v++) {
    float *bv = B + (size_t)v * P;
    for (int j = 0; j < P; j++) bv[j] = cx[j] + tte[j];
    for (uint32_t c = 0; c < m->n_ch; c++) {
      const float *er = o->S->te[c] + (size_t)o->zt[(size_t)c * s + v] * P;
      for (int j = 0; j < P; j++) bv[j] += er[j];
    }
    int deg = 0;
    for (uint32_t u = 0; u < N; u++)
      if (nz[(size_t)v * N + u]) {
        deg++;
        const float *z = o->zm_step + (size_t)(u + 1) * P;
        for (int j = 0; j < P; j++) bv[j] += z[j];
      }
    float fd = (float)(log1p((double)deg) / 2);
    for (int j = 0; j < P; j++) bv[j] += fd * wdeg[j];
  }
}

/* (3), the denoising: the edges nz (s x N) from rows 1..N into the s new
 * nodes of layer l, from step Te down to 1; the probabilities of the last
 * step stay in o->phat. */
static void so_edges_denoise(so_t *o, int l, uint32_t N, uint32_t s, double ml, uint8_t *nz) {
  etsim_synth_model_t *m = o->m;
  sampler_t *S = o->S;
  etsim_rng_t *rng = o->rng;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m), Te = m->cfg.t_edge;
  float *gapf = o->gapf, *A = o->A, *B = o->B, *cxe = o->cxe, *phat = o->phat;
  for (uint32_t u = 0; u < N; u++)
    etsim_synth__gap_feats((uint32_t)(l + 1) - S->lay[u + 1], S->children[u + 1],
                           gapf + (size_t)u * SY_GAPF);
  etsim_synth__nn_linear_fwd(&m->es_g, (int)N, gapf, A);
  for (size_t i = 0; i < (size_t)N * P; i++) A[i] += o->zs_step[(size_t)P + i];
  part(&m->ed, 1, 2 * H, Dc, o->ctx, cxe);
  for (int j = 0; j < P; j++) cxe[j] += m->ed.b[j];
  float itau = m->edge_temp > 0 ? (float)(1 / m->edge_temp) : 1.0f;
  double w = edge_guidance(m);
  const float *Au = A; /* the null label's candidate parts */
  if (m->cfg.label_edge) {
    float sc[4096];
    if (w > 0) {
      etsim_synth__edge_scale(m, o->ctxu, sc);
      memcpy(o->Au, A, sizeof(float) * (size_t)N * P);
      etsim_synth__edge_scale_rows(N, P, sc, o->Au, NULL);
      Au = o->Au;
    }
    etsim_synth__edge_scale(m, o->ctx, sc);
    etsim_synth__edge_scale_rows(N, P, sc, A, NULL);
  }
  if (w > 0) {
    part(&m->ed, 1, 2 * H, Dc, o->ctxu, o->cxeu);
    for (int j = 0; j < P; j++) o->cxeu[j] += m->ed.b[j];
  }
  for (int t = Te; t >= 1; t--) {
    const float *tte = S->tte + (size_t)t * P;
    edge_node_part(o, s, N, nz, cxe, tte, B);
    if (w > 0) edge_node_part(o, s, N, nz, o->cxeu, tte, o->Bu); /* the null label's */
    float mg2[2] = {(float)(1 - ml), (float)ml}, ph2[2], po2[2];
    float b1[4096], b1u[4096];
    for (uint32_t v = 0; v < s; v++) {
      const float *b0 = B + (size_t)v * P, *b0u = w > 0 ? o->Bu + (size_t)v * P : NULL;
      for (int j = 0; j < P; j++) b1[j] = b0[j] + m->ew[j];
      if (w > 0)
        for (int j = 0; j < P; j++) b1u[j] = b0u[j] + m->ew[j];
      for (uint32_t u = 0; u < N; u++) {
        const float *a = A + (size_t)u * P;
        /* The pair's state at step t, read before it is redrawn. */
        int on = nz[(size_t)v * N + u];
        float z = pair_logit(m, P, a, on ? b1 : b0);
        if (w > 0)
          z = (float)((1 + w) * z - w * pair_logit(m, P, Au + (size_t)u * P, on ? b1u : b0u));
        float pr = 1.0f / (1.0f + expf(-z * itau));
        phat[(size_t)v * N + u] = pr;
        ph2[0] = 1 - pr;
        ph2[1] = pr;
        uint8_t *q = &nz[(size_t)v * N + u];
        etsim_synth__posterior(2, ph2, mg2, *q, m->alpha_e[t], m->abar_e[t], m->abar_e[t - 1], po2);
        *q = etsim_rng_uniform(rng) < po2[1];
      }
    }
  }
}

/* At most cap parents for one new node (row nz of N pairs, phat their
 * last probabilities): the least probable go, but the most probable
 * parent in the previous layer (from column prev) stays, so the layering
 * is kept.  Runs only when a node has more parents than any training
 * node had; each removal scans the row once. */
static void cap_parents(uint8_t *nz, const float *phat, uint32_t N, uint32_t prev, uint32_t cap) {
  uint32_t deg = 0, keep = UINT32_MAX;
  for (uint32_t u = 0; u < N; u++)
    if (nz[u]) {
      deg++;
      if (u >= prev && (keep == UINT32_MAX || phat[u] > phat[keep])) keep = u;
    }
  for (; deg > cap; deg--) {
    uint32_t worst = UINT32_MAX;
    for (uint32_t u = 0; u < N; u++)
      if (nz[u] && u != keep && (worst == UINT32_MAX || phat[u] < phat[worst])) worst = u;
    nz[worst] = 0;
  }
}

/* (3) edges from rows 1..N into the s new rows r0.. of layer l (l >= 1),
 * appended to S->padj (*n_edges entries so far); every new node keeps a
 * parent in the previous layer, whose rows start at first_prev. */
static int so_edges(so_t *o, int l, uint32_t N, uint32_t s, uint32_t r0, uint32_t first_prev,
                    size_t *n_edges) {
  etsim_synth_model_t *m = o->m;
  sampler_t *S = o->S;
  size_t np = (size_t)s * N;
  if (etsim_grow((void **)&S->noisy, &S->noisy_cap, np + 1, 1)) return ETSIM_ENOMEM;
  uint8_t *nz = S->noisy;
  double ml = (m->mean_indeg < N ? m->mean_indeg : N) / N;
  for (size_t q = 0; q < np; q++) nz[q] = etsim_rng_uniform(o->rng) < ml;
  so_edges_denoise(o, l, N, s, ml, nz);
  const float *phat = o->phat;
  /* Every new node keeps a parent in the previous layer. */
  for (uint32_t v = 0; v < s; v++) {
    int ok = 0;
    uint32_t bestu = first_prev - 1;
    float bestp = -1;
    for (uint32_t u = first_prev - 1; u < N; u++) {
      if (nz[(size_t)v * N + u]) ok = 1;
      if (phat[(size_t)v * N + u] > bestp) {
        bestp = phat[(size_t)v * N + u];
        bestu = u;
      }
    }
    if (!ok) nz[(size_t)v * N + bestu] = 1;
    uint32_t cap = m->max_indeg;
    if (m->cat_cap) { /* the category's own cap, when lower */
      uint32_t cc = m->cat_cap[o->zt[v]];
      if (cc && (!cap || cc < cap)) cap = cc;
    }
    if (cap) cap_parents(nz + (size_t)v * N, phat + (size_t)v * N, N, first_prev - 1, cap);
  }
  for (uint32_t v = 0; v < s; v++) {
    for (uint32_t u = 0; u < N; u++)
      if (nz[(size_t)v * N + u]) {
        if (etsim_grow((void **)&S->padj, &S->adj_cap, *n_edges + 1, sizeof(uint32_t)))
          return ETSIM_ENOMEM;
        S->padj[(*n_edges)++] = u + 1;
      }
    S->poff[r0 + v + 1] = (uint32_t)*n_edges;
  }
  return 0;
}

/* The s new rows r0.. of layer l join the graph's bookkeeping: their layer,
 * the children counts, and the category counts of the last layer (hl), the
 * prefix (hp) and its childless nodes (ho). */
static void so_account(so_t *o, int l, uint32_t s, uint32_t r0, uint32_t *hl, uint32_t *hp,
                       uint32_t *ho) {
  etsim_synth_model_t *m = o->m;
  sampler_t *S = o->S;
  uint32_t nch = m->n_ch;
  int cap = S->cap;
  memset(hl, 0, sizeof(uint32_t) * m->sum_cls);
  for (uint32_t v = 0; v < s; v++) {
    S->lay[r0 + v] = (uint32_t)l + 1;
    S->children[r0 + v] = 0;
    for (uint32_t k = S->poff[r0 + v]; k < S->poff[r0 + v + 1]; k++) {
      uint32_t u = S->padj[k];
      if (S->children[u]++ == 0) {
        uint32_t o2 = 0;
        for (uint32_t c = 0; c < nch; c++) {
          ho[o2 + (uint32_t)S->xr[(size_t)c * cap + u]]--;
          o2 += m->n_cls[c];
        }
      }
    }
  }
  for (uint32_t v = 0; v < s; v++) {
    uint32_t o2 = 0;
    for (uint32_t c = 0; c < nch; c++) {
      uint32_t x = o2 + (uint32_t)S->xr[(size_t)c * cap + r0 + v];
      hl[x]++;
      hp[x]++;
      ho[x]++;
      o2 += m->n_cls[c];
    }
  }
}

/* Successor messages (cfg.succ_msg) at the step after N real rows: the
 * messages of the rows with children, the prefix sum Ssum plus W_succ T
 * into Sx, and the step's candidate and parent parts (o->zsl, o->zml),
 * in the order of model.c's succ_pool and succ_step_fwd. */
static void so_succ(so_t *o, uint32_t N, const float *Ssum, float *Sx) {
  const etsim_synth_model_t *m = o->m;
  const sampler_t *S = o->S;
  int H = m->cfg.hidden, P = m->cfg.pair_hidden;
  uint32_t nl = 0;
  memset(o->T, 0, sizeof(float) * H);
  for (uint32_t u = 1; u <= N; u++)
    if (S->children[u]) {
      float *nb = o->Nb + (size_t)nl * H;
      etsim_synth__succ_msg(H, o->C + (size_t)u * H, S->children[u], nb);
      for (int j = 0; j < H; j++) o->T[j] += nb[j];
      o->list[nl++] = u;
    }
  o->nl = nl;
  memset(o->U, 0, sizeof(float) * H);
  etsim_synth__nn_linear_fwd_add(&m->succ, 1, o->T, o->U, 0);
  for (int j = 0; j < H; j++) Sx[j] = Ssum[j] + o->U[j];
  memset(o->WN, 0, sizeof(float) * nl * H);
  etsim_synth__nn_linear_fwd_add(&m->succ, (int)nl, o->Nb, o->WN, 0);
  memcpy(o->zsl, S->e.Zs, sizeof(float) * ((size_t)N + 1) * P);
  memcpy(o->zml, o->zm, sizeof(float) * ((size_t)N + 1) * P);
  memset(o->Ys, 0, sizeof(float) * nl * P);
  etsim_synth__nn_linear_fwd_add(&m->es_z, (int)nl, o->WN, o->Ys, 0);
  for (uint32_t i = 0; i < nl; i++)
    for (int j = 0; j < P; j++) o->zsl[(size_t)o->list[i] * P + j] += o->Ys[(size_t)i * P + j];
  part(&m->ed, (int)nl, H, H, o->WN, o->Ys);
  for (uint32_t i = 0; i < nl; i++)
    for (int j = 0; j < P; j++) o->zml[(size_t)o->list[i] * P + j] += o->Ys[(size_t)i * P + j];
}

/* Bidirectional encoder (cfg.bidir) at the step after N real rows: the
 * pass over the prefix rows 0..N, its embeddings summed in row order into
 * Sx and its candidate and parent parts (o->be.Zs, o->zml), as model.c's
 * gl_contexts and gl_edges compute them. */
static void so_bidir(so_t *o, uint32_t N, float *Sx) {
  const etsim_synth_model_t *m = o->m;
  const sampler_t *S = o->S;
  int H = m->cfg.hidden, rows = (int)N + 1;
  etsim_synth__bidir_fwd(m, &o->be, o->bMr, S->cap, S->xr, S->poff, S->padj, rows);
  memset(Sx, 0, sizeof(float) * H);
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < H; j++) Sx[j] += o->be.Z[(size_t)r * H + j];
  part(&m->ed, rows, H, H, o->be.Z, o->zml);
}

/* The step's candidate and parent parts: the graph's, or with successor
 * messages (cfg.succ_msg) so_succ's, whose buffers come from p.  Returns
 * the prefix pool's buffer: Ssum, or with messages its own. */
static float *so_succ_alloc(so_t *o, pool_t *p, float *Ssum) {
  const etsim_synth_model_t *m = o->m;
  int H = m->cfg.hidden, cap = o->S->cap;
  o->zs_step = o->S->e.Zs, o->zm_step = o->zm;
  if (m->cfg.bidir) {
    if (etsim_synth__enc_alloc(m, p, cap, &o->be)) return NULL;
    for (int k = 1; k <= m->cfg.mp_layers; k++) o->bMr[k] = etsim_synth__pz(p, (size_t)cap * H);
    o->zml = etsim_synth__pz(p, (size_t)cap * m->cfg.pair_hidden);
    o->zs_step = o->be.Zs, o->zm_step = o->zml;
    return etsim_synth__pz(p, (size_t)H);
  }
  if (!m->cfg.succ_msg) return Ssum;
  size_t nh = (size_t)cap * H, np = (size_t)cap * m->cfg.pair_hidden;
  o->C = etsim_synth__pz(p, nh), o->Nb = etsim_synth__pz(p, nh), o->WN = etsim_synth__pz(p, nh);
  o->zsl = etsim_synth__pz(p, np), o->zml = etsim_synth__pz(p, np), o->Ys = etsim_synth__pz(p, np);
  o->T = etsim_synth__pz(p, (size_t)H), o->U = etsim_synth__pz(p, (size_t)H);
  o->list = (uint32_t *)(void *)etsim_synth__pz(p, (size_t)cap);
  o->zs_step = o->zsl, o->zm_step = o->zml;
  return etsim_synth__pz(p, (size_t)H);
}

/* Test hook (m->parts_log): the step's candidate and parent parts of rows
 * 1..N, as etsim_synth__step_parts writes them. */
static void so_log_parts(so_t *o, uint32_t N) {
  etsim_synth_model_t *m = o->m;
  size_t P = (size_t)m->cfg.pair_hidden;
  if (m->parts_log_n + 2 * N * P > m->parts_log_cap) return;
  memcpy(m->parts_log + m->parts_log_n, o->zs_step + P, sizeof(float) * N * P);
  memcpy(m->parts_log + m->parts_log_n + N * P, o->zm_step + P, sizeof(float) * N * P);
  m->parts_log_n += 2 * N * P;
}

/* The sampled rows 1..N and their edges as a DAG (nodes from 0). */
static int so_output(const etsim_synth_model_t *m, const sampler_t *S, uint32_t N, size_t n_edges,
                     double y, double y2, etsim_synth_dag_t *outg) {
  uint32_t nch = m->n_ch;
  int cap = S->cap;
  outg->n_nodes = N;
  outg->n_edges = (uint32_t)n_edges;
  outg->y = y;
  outg->y2 = y2;
  outg->x = etsim_malloc(sizeof(uint32_t) * ((size_t)N * nch + 1));
  outg->src = etsim_malloc(sizeof(uint32_t) * (n_edges + 1));
  outg->dst = etsim_malloc(sizeof(uint32_t) * (n_edges + 1));
  if (!outg->x || !outg->src || !outg->dst) {
    etsim_free(outg->x);
    etsim_free(outg->src);
    etsim_free(outg->dst);
    return ETSIM_ENOMEM;
  }
  size_t k = 0;
  for (uint32_t r = 1; r <= N; r++) {
    for (uint32_t c = 0; c < nch; c++)
      outg->x[(size_t)(r - 1) * nch + c] = (uint32_t)S->xr[(size_t)c * cap + r];
    for (uint32_t q = S->poff[r]; q < S->poff[r + 1]; q++) {
      outg->src[k] = S->padj[q] - 1;
      outg->dst[k++] = r - 1;
    }
  }
  return 0;
}

/* One DAG for label (y, y2): layer by layer, (1) stop or a size, (2) the
 * new nodes' categories, (3) their edges from the nodes before them. */
static int sample_one(etsim_synth_model_t *m, sampler_t *S, double y, double y2, etsim_rng_t *rng,
                      etsim_synth_dag_t *outg) {
  int H = m->cfg.hidden, P = m->cfg.pair_hidden, Dc = etsim_synth__dim_ctx(m);
  uint32_t nch = m->n_ch, maxs = m->max_size;
  int cap = S->cap;
  uint32_t limit = (uint32_t)cap - 1; /* real nodes at most */
  pool_t *p = &S->pool;
  etsim_synth__pool_reset(p);
  if (etsim_synth__enc_alloc(m, p, cap, &S->e)) return ETSIM_ENOMEM;
  enc_t *e = &S->e;
  int C = (int)maxs;
  float *sfeat = etsim_synth__pz(p, SY_STOPF), *sp = etsim_synth__pz(p, (size_t)H);
  float *sh = etsim_synth__pz(p, (size_t)H), slog;
  float *cfeat = etsim_synth__pz(p, (size_t)etsim_synth__dim_size_in(m));
  float *Ssum = etsim_synth__pz(p, (size_t)H), *G = etsim_synth__pz(p, (size_t)H);
  float *ctx = etsim_synth__pz(p, (size_t)Dc), st[2];
  float *cp = etsim_synth__pz(p, (size_t)H), *chh = etsim_synth__pz(p, (size_t)H);
  float *clog = etsim_synth__pz(p, (size_t)C), *cpr = etsim_synth__pz(p, (size_t)C);
  so_t o = {.m = m, .S = S, .rng = rng, .ctx = ctx};
  o.cxa = etsim_synth__pz(p, (size_t)H), o.meanp = etsim_synth__pz(p, (size_t)H);
  o.cxe = etsim_synth__pz(p, (size_t)P), o.zm = etsim_synth__pz(p, (size_t)cap * P);
  o.p1 = etsim_synth__pz(p, (size_t)maxs * H), o.h1 = etsim_synth__pz(p, (size_t)maxs * H);
  o.p2 = etsim_synth__pz(p, (size_t)maxs * H), o.h2 = etsim_synth__pz(p, (size_t)maxs * H);
  o.alog = etsim_synth__pz(p, (size_t)maxs * m->sum_cls);
  o.ph = etsim_synth__pz(p, (size_t)m->sum_cls), o.post = etsim_synth__pz(p, (size_t)m->sum_cls);
  o.gapf = etsim_synth__pz(p, (size_t)cap * SY_GAPF), o.A = etsim_synth__pz(p, (size_t)cap * P);
  o.B = etsim_synth__pz(p, (size_t)maxs * P);
  o.phat = etsim_synth__pz(p, (size_t)maxs * cap);
  o.zt = (int32_t *)(void *)etsim_synth__pz(p, (size_t)maxs * nch);
  if (m->guidance > 0 || edge_guidance(m) > 0) {
    o.ctxu = etsim_synth__pz(p, (size_t)Dc), o.cxau = etsim_synth__pz(p, (size_t)H);
    o.p1u = etsim_synth__pz(p, (size_t)maxs * H);
    o.alogu = etsim_synth__pz(p, (size_t)maxs * m->sum_cls);
    o.cxeu = etsim_synth__pz(p, (size_t)P), o.Bu = etsim_synth__pz(p, (size_t)maxs * P);
    if (m->cfg.label_edge) o.Au = etsim_synth__pz(p, (size_t)cap * P);
  }
  if (m->cfg.attn) {
    o.aq = etsim_synth__pz(p, (size_t)maxs * H), o.ak = etsim_synth__pz(p, (size_t)maxs * H);
    o.av = etsim_synth__pz(p, (size_t)maxs * H), o.aa = etsim_synth__pz(p, (size_t)maxs * H);
    o.as = etsim_synth__pz(p, (size_t)NN_ATTN_CHUNK * maxs);
  }
  if (m->cfg.label_film) {
    o.film = etsim_synth__pz(p, 4 * (size_t)H);
    if (m->guidance > 0) o.filmu = etsim_synth__pz(p, 4 * (size_t)H);
  }
  float *Sx = so_succ_alloc(&o, p, Ssum); /* the prefix pool, with messages */
  if (p->oom || !Sx) return ETSIM_ENOMEM;
  float ysin[SY_DY], ncf[SY_NCF + 1]; /* ncf: cfg.size_cond's count features */
  etsim_synth__label_feat(m, y, y2, ysin);
  int depth = m->cfg.ctx_hist & ETSIM_SYNTH_CTX_PROGRESS
                  ? plan_depth(m, S, ysin, sfeat, sp, sh, rng)
                  : 0; /* 0: stop layer by layer */
  /* Row 0: the start token. */
  for (uint32_t c = 0; c < nch; c++) S->xr[(size_t)c * cap] = (int32_t)m->n_cls[c];
  S->poff[0] = 0;
  S->poff[1] = 0;
  S->lay[0] = 0;
  S->children[0] = 0;
  etsim_synth__enc_fwd(m, e, cap, S->xr, S->poff, S->padj, 0, 1);
  part(&m->ed, 1, H, H, e->Z, o.zm);
  memcpy(Ssum, e->Z, sizeof(float) * H);
  /* Category counts of the last layer, the prefix and its childless nodes
   * (the context histograms, model.c hist_ctx). */
  uint32_t *hl = S->hist, *hp = hl + m->sum_cls, *ho = hp + m->sum_cls;
  uint32_t *seen = ho + m->sum_cls; /* class recency: latest layer per class */
  int recent = etsim_synth__dim_recent(m), rbase = etsim_synth__off_recent(m);
  memset(S->hist, 0, sizeof(uint32_t) * (3 * (size_t)m->sum_cls + m->n_cls[0]));
  uint32_t N = 0, last = 0, first_prev = 1; /* rows of layer l: [first_prev, N+1) */
  uint32_t comm_run = 0;                    /* communication-only layers just before */
  size_t n_edges = 0;
  for (int l = 0;; l++) {
    if ((uint32_t)l >= m->max_layers || N >= limit) break;
    if (m->cfg.succ_msg) so_succ(&o, N, Ssum, Sx);
    if (m->cfg.bidir) so_bidir(&o, N, Sx);
    etsim_synth__nn_layernorm_fwd(1, H, Sx, m->ln_g, m->ln_b, G, st);
    memcpy(ctx, G, sizeof(float) * H);
    etsim_synth__step_feats(m, l, N, last, ctx + H);
    memcpy(ctx + H + SY_FEAT, ysin, sizeof ysin);
    if (m->cfg.ctx_hist & ETSIM_SYNTH_HIST_DENOISE)
      etsim_synth__hist_feats(m, hl, hp, ho, ctx + H + SY_FEAT + SY_DY);
    if (recent) etsim_synth__recent_feats(m, l, seen, ctx + rbase);
    if (depth) etsim_synth__prog_feats(l, depth, ctx + Dc - SY_PROG);
    if (m->ctx_log && (m->ctx_log_n + 1) * (size_t)Dc <= m->ctx_log_cap)
      memcpy(m->ctx_log + m->ctx_log_n++ * (size_t)Dc, ctx, sizeof(float) * Dc);
    if (m->parts_log && l >= 1) so_log_parts(&o, N);
    if (o.ctxu) { /* the null label: the label features zeroed */
      memcpy(o.ctxu, ctx, sizeof(float) * Dc);
      etsim_synth__null_label(m, o.ctxu);
    }
    /* (1) stop (never at the first step), else the size. */
    if (depth && l >= depth) break;
    if (l > 0 && !depth) {
      etsim_synth__stop_feats(m, l, ysin, sfeat);
      etsim_synth__nn_linear_fwd(&m->s1, 1, sfeat, sp);
      if (m->cfg.size_cond) {
        etsim_synth__count_feats(S->cond_n, ncf);
        etsim_synth__nn_linear_fwd_add(&m->ncs, 1, ncf, sp, 0);
      }
      etsim_synth__nn_gelu_fwd((size_t)H, sp, sh);
      etsim_synth__nn_linear_fwd(&m->s2, 1, sh, &slog);
      int stop = etsim_rng_uniform(rng) < 1.0 / (1.0 + exp(-(double)slog));
      if (S->fixed) stop = S->fixed[l] == 0;
      if (stop) break;
    }
    etsim_synth__size_feats(m, l, N, last, ysin, cfeat);
    if (m->cfg.ctx_hist & ETSIM_SYNTH_HIST_SIZE)
      for (uint32_t k = 0; k < m->sum_cls; k++)
        cfeat[SY_SIZEF + k] = (float)(log1p((double)hl[k]) / 2);
    etsim_synth__nn_linear_fwd(&m->c1, 1, cfeat, cp);
    if (m->cfg.size_cond == ETSIM_SYNTH_SIZE_COND_HEADS) {
      etsim_synth__count_size_feats(S->cond_n, N, ncf);
      etsim_synth__nn_linear_fwd_add(&m->ncc, 1, ncf, cp, 0);
    }
    etsim_synth__nn_gelu_fwd((size_t)H, cp, chh);
    etsim_synth__nn_linear_fwd(&m->c2, 1, chh, clog);
    etsim_synth__nn_softmax(1, C, clog, cpr);
    uint32_t s = 1 + (uint32_t)etsim_synth__draw(rng, cpr, C);
    if (S->fixed) s = S->fixed[l] <= maxs ? S->fixed[l] : maxs;
    if (s == 0) break;
    if (N + s > limit) s = limit - N;
    uint32_t r0 = N + 1;
    o.no_comm0 = m->comm_rule && S->project && comm_run >= m->max_comm_run;
    so_attrs(&o, s, r0); /* (2) */
    uint32_t comm = 0;
    for (uint32_t v = 0; v < s; v++) comm += etsim_synth__is_comm((uint32_t)S->xr[r0 + v]);
    comm_run = comm == s ? comm_run + 1 : 0;
    S->stats.run_cut += (size_t)o.no_comm0;
    if (l >= 1) { /* (3) */
      if (so_edges(&o, l, N, s, r0, first_prev, &n_edges)) return ETSIM_ENOMEM;
    } else {
      for (uint32_t v = 0; v < s; v++) S->poff[r0 + v + 1] = (uint32_t)n_edges;
    }
    so_account(&o, l, s, r0, hl, hp, ho);
    for (uint32_t v = 0; v < s; v++) seen[S->xr[r0 + v]] = (uint32_t)l + 1;
    etsim_synth__enc_fwd(m, e, cap, S->xr, S->poff, S->padj, (int)r0, (int)(r0 + s));
    part(&m->ed, (int)s, H, H, e->Z + (size_t)r0 * H, o.zm + (size_t)r0 * P);
    for (uint32_t v = 0; v < s; v++)
      for (int j = 0; j < H; j++) Ssum[j] += e->Z[(size_t)(r0 + v) * H + j];
    if (o.C) /* the new rows' Z into their parents' children sums */
      for (uint32_t r = r0; r < r0 + s; r++)
        for (uint32_t k = S->poff[r]; k < S->poff[r + 1]; k++)
          for (int j = 0; j < H; j++) o.C[(size_t)S->padj[k] * H + j] += e->Z[(size_t)r * H + j];
    first_prev = r0;
    N += s;
    last = s;
  }
  return so_output(m, S, N, n_edges, y, y2, outg);
}

/* Graph i of sample_impl: with target (size matching), the closest of
 * `tries` draws in node count to target[i] (the earliest on ties, stopping
 * at an exact match; draw 0 is the one without it, seeded by base, and
 * draws 1, 2, ... take their seeds from a stream seeded by base xor a
 * constant); else the one draw.  The sampler's
 * counts are those of the graph kept. */
static int sample_match(etsim_synth_model_t *m, sampler_t *S, double y, double y2, uint64_t base,
                        uint32_t target, uint32_t tries, etsim_synth_dag_t *g) {
  etsim_synth_sample_stats_t st0 = S->stats, kept = st0;
  uint64_t best_d = UINT64_MAX;
  etsim_rng_t side; /* the seeds of draws 1, 2, ... */
  etsim_rng_seed(&side, base ^ 0xD1B54A32D192ED03ull);
  for (uint32_t k = 0; k < (tries ? tries : 1); k++) {
    etsim_synth_dag_t c = {0};
    etsim_rng_t r;
    etsim_rng_seed(&r, k ? etsim_rng_next(&side) : base);
    S->stats = st0;
    int rc = sample_one(m, S, y, y2, &r, &c);
    if (rc) {
      etsim_synth__dag_free(g);
      return rc;
    }
    uint64_t d = c.n_nodes > target ? c.n_nodes - target : target - c.n_nodes;
    if (d < best_d) {
      etsim_synth__dag_free(g);
      *g = c;
      best_d = d;
      kept = S->stats;
    } else etsim_synth__dag_free(&c);
    if (best_d == 0) break;
  }
  S->stats = kept;
  return 0;
}

static int sample_impl(etsim_synth_model_t *m, size_t n, const double *labels, uint32_t dim,
                       uint64_t seed, const uint32_t *fixed, uint32_t max_nodes, int project,
                       const uint32_t *target, uint32_t tries, etsim_synth_sample_stats_t *st,
                       etsim_synth_data_t *out, etsim_error_t *err) {
  openblas_set_num_threads(1);
  etsim_synth_data_init(out);
  if (labels && (dim < 1 || dim > etsim_synth_model_n_labels(m)))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%u label component(s) given, the model conditions on %u", dim,
                           etsim_synth_model_n_labels(m));
  out->kind = m->kind;
  if (m->n_lab == 2) out->n_labels = 2;
  for (int b = 0; b < ETSIM_SYNTH_BIN_VALUES; b++) {
    out->bin_sum[b] = m->bin_mean[b];
    out->bin_n[b] = m->bin_mean[b] > 0;
  }
  out->n_ch = m->n_ch;
  for (uint32_t c = 0; c < m->n_ch; c++) out->n_cls[c] = m->n_cls[c];
  sampler_t S = {0};
  S.cap = (int)(2 * m->max_nodes + m->max_size + 2);
  if (max_nodes + 1 > (uint32_t)S.cap) S.cap = (int)max_nodes + 1;
  S.fixed = fixed;
  S.project = project;
  S.xr = etsim_malloc(sizeof(int32_t) * (size_t)S.cap * m->n_ch);
  S.poff = etsim_calloc((size_t)S.cap + 1, sizeof(uint32_t));
  S.lay = etsim_malloc(sizeof(uint32_t) * (size_t)S.cap);
  S.children = etsim_malloc(sizeof(uint32_t) * (size_t)S.cap);
  S.hist = etsim_malloc(sizeof(uint32_t) * (3 * (size_t)m->sum_cls + m->n_cls[0] + 1));
  int rc = 0;
  if (!S.xr || !S.poff || !S.lay || !S.children || !S.hist || build_tables(m, &S))
    rc = ETSIM_ENOMEM;
  etsim_rng_t rng;
  etsim_rng_seed(&rng, seed);
  for (size_t i = 0; i < n && !rc; i++) {
    etsim_synth_dag_t g = {0};
    double y = labels ? labels[i * dim] : m->y_median;
    double y2 = labels && dim > 1 ? labels[i * dim + 1] : m->y2_median;
    uint64_t base = etsim_rng_next(&rng);
    /* Node-count conditioning: the matched count, else the training mean. */
    S.cond_n = target ? target[i] : (uint32_t)lround(m->mean_nodes);
    if ((rc = sample_match(m, &S, y, y2, base, target ? target[i] : 0, target ? tries : 1, &g)))
      break;
    if (etsim_grow((void **)&out->g, &out->cap, out->n_graphs + 1, sizeof *out->g)) {
      etsim_synth__dag_free(&g);
      rc = ETSIM_ENOMEM;
      break;
    }
    out->g[out->n_graphs++] = g;
  }
  etsim_synth__pool_free(&S.pool);
  etsim_free(S.xr);
  etsim_free(S.poff);
  etsim_free(S.padj);
  etsim_free(S.lay);
  etsim_free(S.children);
  etsim_free(S.hist);
  etsim_free(S.noisy);
  etsim_free(S.tables);
  if (rc) {
    etsim_synth_data_free(out);
    return etsim_error_set(err, rc, "out of memory while sampling");
  }
  if (st) *st = S.stats;
  return 0;
}

/* ------------------------------------------------------------ model file */

#define MAGIC "ETSYNTH\0"
/* Hidden widths up to 4096 keep the parameters well under this. */
#define MAX_MODEL_BYTES ((size_t)1 << 30)
/* The sampler keeps state for 2 max_nodes + max_size nodes, hundreds of
 * bytes each: a 24 KB model claiming 10^7 nodes cost 6.9 GB. */
#define MAX_MODEL_NODES 1000000u
/* Version 8: the value 16 in the header's context-flag word (the bit
 * after ETSIM_SYNTH_CTX_RECENT) marks FiLM label
 * conditioning (config label_film), whose parameters follow the others. */
#define HDR_FILM 16u
/* Version 9: the value 32 there marks the edge label scale (config
 * label_edge), whose parameters follow FiLM's. */
#define HDR_EDGE 32u
/* Version 10: the value 64 there marks node-count conditioning (config
 * size_cond), whose parameters follow the edge label scale's. */
#define HDR_SIZE 64u
/* Version 11: the value 128 there marks node-count conditioning of the
 * stop head alone (config size_cond ETSIM_SYNTH_SIZE_COND_STOP), whose
 * parameters (the stop head's part only) sit where version 10's begin. */
#define HDR_SIZE_STOP 128u
/* Version 12: the value 256 there marks successor messages (config
 * succ_msg), whose W_succ follows every other parameter. */
#define HDR_SUCC 256u
/* Version 13: the value 512 there marks attention within the new layer in
 * the attribute denoiser (config attn), whose parameters follow all the
 * others (W_succ's too). */
#define HDR_ATTN 512u
/* Version 14: the value 1024 there marks the bidirectional encoder per
 * layer step (config bidir), whose mp_rev follow all the others. */
#define HDR_BIDIR 1024u

typedef struct {
  uint8_t *buf;
  size_t len, cap;
  int oom;
} wbuf_t;

static void put(wbuf_t *b, const void *p, size_t n) {
  if (b->oom) return;
  if (etsim_grow((void **)&b->buf, &b->cap, b->len + n, 1)) {
    b->oom = 1;
    return;
  }
  memcpy(b->buf + b->len, p, n);
  b->len += n;
}
static void put_u32(wbuf_t *b, uint32_t v) { put(b, &v, 4); }
static void put_f64(wbuf_t *b, double v) { put(b, &v, 8); }

int etsim_synth_model_save(const etsim_synth_model_t *m, const char *path, etsim_error_t *err) {
  wbuf_t b = {0};
  put(&b, MAGIC, 8);
  const etsim_synth_config_t *c = &m->cfg;
  /* A model without FiLM, the edge label scale and node-count
   * conditioning is written as version 7, one with FiLM only as version 8,
   * one with the edge label scale as 9, one with node-count conditioning
   * as 10, byte for byte as before, so older etsim binaries still read
   * them; the stop head's conditioning alone makes it version 11,
   * successor messages 12 and attention within the layer 13 (with or
   * without successor messages), the bidirectional encoder 14. */
  put_u32(&b, c->bidir                                     ? 14u
              : c->attn                                    ? 13u
              : c->succ_msg                                ? 12u
              : c->size_cond == ETSIM_SYNTH_SIZE_COND_STOP ? 11u
              : c->size_cond                               ? 10u
              : c->label_edge                              ? 9u
              : c->label_film                              ? 8u
                                                           : 7u);
  put_u32(&b, 0x01020304u); /* byte order check */
  put_u32(&b, (uint32_t)c->hidden);
  put_u32(&b, (uint32_t)c->mp_layers);
  put_u32(&b, (uint32_t)c->pair_hidden);
  put_u32(&b, (uint32_t)c->t_attr);
  put_u32(&b, (uint32_t)c->t_edge);
  put_u32(&b, (uint32_t)c->ctx_hist | (c->label_film ? HDR_FILM : 0u) |
                  (c->label_edge ? HDR_EDGE : 0u) |
                  (c->size_cond == ETSIM_SYNTH_SIZE_COND_HEADS  ? HDR_SIZE
                   : c->size_cond == ETSIM_SYNTH_SIZE_COND_STOP ? HDR_SIZE_STOP
                                                                : 0u) |
                  (c->succ_msg ? HDR_SUCC : 0u) | (c->attn ? HDR_ATTN : 0u) |
                  (c->bidir ? HDR_BIDIR : 0u));
  put_u32(&b, (uint32_t)m->kind);
  put_u32(&b, m->n_ch);
  for (int k = 0; k < ETSIM_SYNTH_MAX_CH; k++) put_u32(&b, m->n_cls[k]);
  put_u32(&b, m->max_size);
  put_u32(&b, m->max_layers);
  put_u32(&b, m->max_nodes);
  put_u32(&b, (uint32_t)m->y_log);
  put_f64(&b, m->mean_indeg);
  put_f64(&b, m->y_mean);
  put_f64(&b, m->y_std);
  put_f64(&b, m->y_median);
  put_f64(&b, m->mean_steps);
  put_f64(&b, m->mean_nodes);
  put_f64(&b, m->mean_pairs);
  put(&b, m->marg, sizeof(float) * m->sum_cls);
  put(&b, m->bin_mean, sizeof m->bin_mean);
  /* Version 6: the label components and the second one's scaling. */
  put_u32(&b, m->n_lab < 2 ? 1 : 2);
  put_u32(&b, (uint32_t)m->y2_log);
  put_f64(&b, m->y2_mean);
  put_f64(&b, m->y2_std);
  put_f64(&b, m->y2_median);
  /* Version 7: the communication-run rule. */
  put_u32(&b, m->comm_rule);
  put_u32(&b, m->max_comm_run);
  uint64_t np = m->n_params;
  put(&b, &np, 8);
  put(&b, m->w, sizeof(float) * m->n_params);
  uint64_t h = b.oom ? 0 : etsim_hash_bytes(b.buf, b.len);
  put(&b, &h, 8);
  if (b.oom) {
    etsim_free(b.buf);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  int rc = etsim_outfile_write_all(path, b.buf, b.len, err);
  etsim_free(b.buf);
  return rc;
}

typedef struct {
  const uint8_t *p;
  size_t len, pos;
} rbuf_t;

static int get(rbuf_t *r, void *out, size_t n) {
  if (r->len - r->pos < n) return -1;
  memcpy(out, r->p + r->pos, n);
  r->pos += n;
  return 0;
}

/* The whole file at path into *buf, *len (the caller frees *buf); the
 * read stops early at a wrong magic or past MAX_MODEL_BYTES, which the
 * header checks then report. */
static int read_model_file(const char *path, uint8_t **bufp, size_t *lenp, etsim_error_t *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: %s", path, strerror(errno));
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (etsim_grow((void **)&buf, &cap, len + 65536, 1)) {
      fclose(fp);
      etsim_free(buf);
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    }
    size_t got = fread(buf + len, 1, cap - len, fp);
    len += got;
    if (got == 0) break;
    /* Not a model (/dev/zero was read forever), or more than one can be. */
    if ((len >= 8 && memcmp(buf, MAGIC, 8) != 0) || len > MAX_MODEL_BYTES) break;
  }
  int ioerr = ferror(fp);
  fclose(fp);
  *bufp = buf;
  *lenp = len;
  if (ioerr) return etsim_error_set(err, ETSIM_EIO, "%s: read error", path);
  return 0;
}

/* Magic, size, format version (into *ver) and byte order. */
static int check_preamble(rbuf_t *r, const char *path, uint32_t *ver, etsim_error_t *err) {
  char magic[8];
  uint32_t bom;
  if (get(r, magic, 8) || memcmp(magic, MAGIC, 8))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: not an etsim synth model (bad magic)", path);
  if (r->len > MAX_MODEL_BYTES)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: larger than %zu MiB, more than a model holds",
                           path, (size_t)(MAX_MODEL_BYTES >> 20));
  if (get(r, ver, 4))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu", path, r->pos);
  /* Version 5 lacks only the second label component (a one-component
   * model), version 6 only the class recency flag, version 7 only the FiLM
   * flag, version 8 only the edge label scale's, version 9 only the
   * node-count conditioning's, version 10 only that of the stop head
   * alone, version 11 only the successor messages', version 12 only the
   * attention flag, version 13 only the bidirectional encoder's; older
   * versions differ in layout. */
  if (*ver < 5 || *ver > ETSIM_SYNTH_MODEL_VERSION)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: model format version %u, this etsim reads "
                           "versions 5 to %d",
                           path, *ver, ETSIM_SYNTH_MODEL_VERSION);
  if (get(r, &bom, 4))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu", path, r->pos);
  if (bom != 0x01020304u)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: written on a machine of another byte order",
                           path);
  return 0;
}

/* The header's sizes and statistics into m, each checked against what a
 * model can hold before anything is allocated from them (issue 16). */
static int read_header(etsim_synth_model_t *m, rbuf_t *r, const char *path, uint32_t ver,
                       etsim_error_t *err) {
  uint32_t f[16];
  double dd[7];
  if (get(r, f, sizeof f) || get(r, dd, sizeof dd))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu (header)", path, r->pos);
  etsim_synth_config_default(&m->cfg);
  m->cfg.hidden = (int)f[0];
  m->cfg.mp_layers = (int)f[1];
  m->cfg.pair_hidden = (int)f[2];
  m->cfg.t_attr = (int)f[3];
  m->cfg.t_edge = (int)f[4];
  m->cfg.ctx_hist = (int)(f[5] & ~(HDR_FILM | HDR_EDGE | HDR_SIZE | HDR_SIZE_STOP | HDR_SUCC |
                                   HDR_ATTN | HDR_BIDIR));
  m->cfg.label_film = ver >= 8 && (f[5] & HDR_FILM);
  m->cfg.label_edge = ver >= 9 && (f[5] & HDR_EDGE);
  m->cfg.size_cond = ver >= 10 && (f[5] & HDR_SIZE)        ? ETSIM_SYNTH_SIZE_COND_HEADS
                     : ver >= 11 && (f[5] & HDR_SIZE_STOP) ? ETSIM_SYNTH_SIZE_COND_STOP
                                                           : 0;
  m->cfg.succ_msg = ver >= 12 && (f[5] & HDR_SUCC);
  m->cfg.attn = ver >= 13 && (f[5] & HDR_ATTN);
  m->cfg.bidir = ver >= 14 && (f[5] & HDR_BIDIR);
  m->kind = (int)f[6];
  m->n_ch = f[7];
  m->max_size = f[12];
  m->max_layers = f[13];
  m->max_nodes = f[14];
  m->y_log = (int)f[15];
  m->mean_indeg = dd[0];
  m->y_mean = dd[1];
  m->y_std = dd[2];
  m->y_median = dd[3];
  m->mean_steps = dd[4];
  m->mean_nodes = dd[5];
  m->mean_pairs = dd[6];
  if (f[14] > MAX_MODEL_NODES)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: the model's largest DAG has %u nodes, more than the %u a sampled "
                           "DAG may have",
                           path, f[14], MAX_MODEL_NODES);
  int okdims =
      f[0] >= 4 && f[0] <= 4096 && f[1] <= SY_MAXK && f[2] >= 1 && f[2] <= 4096 && f[3] >= 1 &&
      f[3] <= SY_MAXT && f[4] >= 1 && f[4] <= SY_MAXT &&
      f[5] <= (ver >= 14 ? 15u | HDR_FILM | HDR_EDGE | HDR_SIZE | HDR_SIZE_STOP | HDR_SUCC |
                               HDR_ATTN | HDR_BIDIR
               : ver >= 13
                   ? 15u | HDR_FILM | HDR_EDGE | HDR_SIZE | HDR_SIZE_STOP | HDR_SUCC | HDR_ATTN
               : ver >= 12 ? 15u | HDR_FILM | HDR_EDGE | HDR_SIZE | HDR_SIZE_STOP | HDR_SUCC
               : ver >= 11 ? 15u | HDR_FILM | HDR_EDGE | HDR_SIZE | HDR_SIZE_STOP
               : ver >= 10 ? 15u | HDR_FILM | HDR_EDGE | HDR_SIZE
               : ver >= 9  ? 15u | HDR_FILM | HDR_EDGE
               : ver >= 8  ? 15u | HDR_FILM
               : ver >= 7  ? 15u
                           : 7u) &&
      !((f[5] & HDR_SIZE) && (f[5] & HDR_SIZE_STOP)) && f[6] <= 1 && f[7] >= 1 &&
      f[7] <= ETSIM_SYNTH_MAX_CH && f[12] >= 1 && f[12] <= 100000 && f[13] >= 1 && f[14] >= 1 &&
      f[14] <= MAX_MODEL_NODES && m->mean_indeg >= 1 && isfinite(m->mean_indeg) && m->y_std > 0 &&
      m->mean_steps >= 1 && m->mean_nodes >= 1 && m->mean_pairs >= 1 &&
      isfinite(m->mean_steps + m->mean_nodes + m->mean_pairs);
  okdims = okdims && !(m->cfg.succ_msg && m->cfg.bidir); /* training refuses both */
  for (uint32_t c = 0; okdims && c < m->n_ch; c++) {
    m->n_cls[c] = f[8 + c];
    okdims = f[8 + c] >= 1 && f[8 + c] <= 65536;
    m->sum_cls += f[8 + c];
  }
  if (!okdims)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: header values out of range (corrupt model)",
                           path);
  return 0;
}

/* The category marginals and bin values after the header, the label
 * components (version 6), and the stored parameter count into *np. */
static int read_tables(etsim_synth_model_t *m, rbuf_t *r, const char *path, uint32_t ver,
                       uint64_t *np, etsim_error_t *err) {
  m->marg = etsim_malloc(sizeof(float) * m->sum_cls);
  if (!m->marg) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  uint32_t lab[2] = {1, 0}, run[2] = {0, 0};
  double lab2[3] = {0, 1, 0};
  if (get(r, m->marg, sizeof(float) * m->sum_cls) || get(r, m->bin_mean, sizeof m->bin_mean) ||
      (ver >= 6 && (get(r, lab, sizeof lab) || get(r, lab2, sizeof lab2))) ||
      (ver >= 7 && get(r, run, sizeof run)) || get(r, np, 8))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu", path, r->pos);
  m->comm_rule = run[0];
  m->max_comm_run = run[1];
  if (run[0] > 1 || (run[0] && m->kind != ETSIM_SYNTH_KIND_TRACE))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: communication-run rule out of range (corrupt "
                           "model)",
                           path);
  m->n_lab = lab[0];
  m->y2_log = (int)lab[1];
  m->y2_mean = lab2[0];
  m->y2_std = lab2[1];
  m->y2_median = lab2[2];
  if (lab[0] < 1 || lab[0] > 2 || lab[1] > 1 || !isfinite(m->y2_mean) || !(m->y2_std > 0) ||
      !isfinite(m->y2_std) || !isfinite(m->y2_median))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: label components out of range (corrupt model)",
                           path);
  for (int b = 0; b < ETSIM_SYNTH_BIN_VALUES; b++)
    if (!(m->bin_mean[b] >= 0 && m->bin_mean[b] < 9.3e18))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: bin value %d out of range (corrupt model)",
                             path, b);
  return 0;
}

/* The np parameters and the checksum over everything before it, which
 * must end the file; every parameter finite. */
static int read_params(etsim_synth_model_t *m, rbuf_t *r, const char *path, uint64_t np,
                       etsim_error_t *err) {
  size_t len = r->len;
  /* Check the size the header implies before allocating anything big. */
  size_t want = etsim_synth__param_count(m);
  if (np != want)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %llu parameters stored, the header implies %zu",
                           path, (unsigned long long)np, want);
  if ((len - r->pos) / sizeof(float) < want)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: truncated at byte %zu (parameters, %zu bytes "
                           "expected after the header)",
                           path, len, sizeof(float) * want + 8);
  if (etsim_synth__alloc_params(m, 0, 0))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  if (get(r, m->w, sizeof(float) * m->n_params))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: truncated at byte %zu (parameters, %zu bytes "
                           "expected after the header)",
                           path, len, sizeof(float) * m->n_params + 8);
  size_t body = r->pos;
  uint64_t h;
  if (get(r, &h, 8))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: truncated at byte %zu (checksum missing)", path,
                           len);
  if (r->pos != len)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %zu unexpected bytes after the checksum", path,
                           len - r->pos);
  if (h != etsim_hash_bytes(r->p, body))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: checksum mismatch (corrupt "
                           "model file)",
                           path);
  for (size_t i = 0; i < m->n_params; i++)
    if (!isfinite(m->w[i]))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: parameter %zu is not finite", path, i);
  return 0;
}

/* The file read whole, then checked field by field in the file's order. */
int etsim_synth_model_load(etsim_synth_model_t **out, const char *path, etsim_error_t *err) {
  int rc = etsim_input_check(path, err);
  if (rc) return rc;
  uint8_t *buf = NULL;
  size_t len = 0;
  etsim_synth_model_t *m = NULL;
  if ((rc = read_model_file(path, &buf, &len, err))) goto out;
  rbuf_t r = {buf, len, 0};
  uint32_t ver = 0;
  if ((rc = check_preamble(&r, path, &ver, err))) goto out;
  m = etsim_calloc(1, sizeof *m);
  if (!m) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  uint64_t np = 0;
  if ((rc = read_header(m, &r, path, ver, err)) || (rc = read_tables(m, &r, path, ver, &np, err)) ||
      (rc = read_params(m, &r, path, np, err)))
    goto out;
  etsim_synth__schedule(m->cfg.t_attr, m->abar_a, m->alpha_a);
  etsim_synth__schedule(m->cfg.t_edge, m->abar_e, m->alpha_e);
out:
  etsim_free(buf);
  if (rc) {
    etsim_synth_model_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

int etsim_synth_sample(etsim_synth_model_t *m, size_t n, const double *labels, uint64_t seed,
                       etsim_synth_data_t *out, etsim_error_t *err) {
  return sample_impl(m, n, labels, 1, seed, NULL, 0, 1, NULL, 0, NULL, out, err);
}

int etsim_synth_sample_ex(etsim_synth_model_t *m, size_t n, const double *labels,
                          uint32_t label_dim, uint64_t seed, int project,
                          etsim_synth_sample_stats_t *st, etsim_synth_data_t *out,
                          etsim_error_t *err) {
  return sample_impl(m, n, labels, label_dim, seed, NULL, 0, project, NULL, 0, st, out, err);
}

int etsim_synth_sample_sized(etsim_synth_model_t *m, size_t n, const double *labels,
                             uint32_t label_dim, const uint32_t *nodes, uint32_t tries,
                             uint64_t seed, int project, etsim_synth_sample_stats_t *st,
                             etsim_synth_data_t *out, etsim_error_t *err) {
  if (!nodes || tries < 1)
    return etsim_error_set(err, ETSIM_EINVAL, "size matching needs node counts and tries >= 1");
  return sample_impl(m, n, labels, label_dim, seed, NULL, 0, project, nodes, tries, st, out, err);
}

int etsim_synth__sample_fixed(etsim_synth_model_t *m, size_t n, const uint32_t *sizes,
                              uint64_t seed, etsim_synth_data_t *out, etsim_error_t *err) {
  uint32_t total = 0;
  for (size_t l = 0; sizes[l]; l++) total += sizes[l];
  return sample_impl(m, n, NULL, 1, seed, sizes, total, 1, NULL, 0, NULL, out, err);
}
