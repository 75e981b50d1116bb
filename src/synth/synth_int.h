/*
 * synth_int.h — private parts of the LayerDAG generator shared by its
 * files and its tests: the model layout, the diffusion schedule and the
 * per-graph loss (for whole-model gradient checks).
 */
#ifndef ETSIM_SYNTH_INT_H
#define ETSIM_SYNTH_INT_H

#include <string.h>

#include "etsim/synth.h"
#include "synth/nn_int.h"

#define SY_DY 16                     /* label sinusoid width */
#define SY_DT 16                     /* diffusion-step sinusoid width */
#define SY_FEAT 4                    /* hand-made context features per step */
#define SY_DL 16                     /* depth sinusoid width (stop head) */
#define SY_STOPF (SY_DL + 1 + SY_DY) /* stop head inputs */
#define SY_SIZEF (SY_DL + 3 + SY_DY) /* size head inputs */
#define SY_PROG 2                    /* depth-progress context features */
#define SY_NCF 7                     /* node-count features (cfg.size_cond) */
#define SY_GAPF 4                    /* per-candidate features of the edge scorer */
#define SY_MAXK 8                    /* message-passing layers at most */
#define SY_MAXT 1024
/* cfg.bidir re-encodes every prefix: a graph's encoder work grows as its
 * layers times its nodes, and graphs above this product are refused (a
 * chain of 2,048 nodes; TPU Tile's largest is far below). */
#define SY_BIDIR_MAX_WORK ((uint64_t)1 << 22)

struct etsim_synth_model {
  etsim_synth_config_t cfg;
  int kind;
  uint32_t n_ch, n_cls[ETSIM_SYNTH_MAX_CH], sum_cls;
  uint32_t max_size;   /* largest layer size seen: count classes 0..max */
  uint32_t max_layers; /* deepest graph seen */
  uint32_t max_nodes;  /* largest graph seen */
  int y_log;           /* labels enter as log(y) (all positive) */
  double mean_indeg;   /* mean in-degree of non-source nodes */
  double y_mean, y_std, y_median;
  /* Label components (1, or 2: y and y2) and the second one's scaling, by
   * the first one's rule (docs/synth.md, Model item 5). */
  uint32_t n_lab;
  int y2_log;
  double y2_mean, y2_std, y2_median;
  /* Trace models (version 7): the longest run of consecutive layers made
   * of communication nodes only (send, recv, collective) in training;
   * with comm_rule, sampling never makes a longer one. */
  uint32_t comm_rule, max_comm_run;
  /* Loss normalisers: mean steps (L + 1), nodes and candidate pairs per
   * training graph.  Every step, node and pair weighs the same across the
   * data set (per-graph means would favour small graphs: shallow graphs'
   * stop decisions would dominate and samples would stop too early). */
  double mean_steps, mean_nodes, mean_pairs;
  float *marg; /* sum_cls floats: per-channel training marginals */
  /* Trace models: the training mean of every duration bin (ns) and size
   * bin (bytes), 0 for a bin without values (written at its midpoint). */
  double bin_mean[ETSIM_SYNTH_BIN_VALUES];
  /* Schedules, abar[0] = 1 (clean) .. abar[T] ~ 0. */
  double abar_a[SY_MAXT + 1], alpha_a[SY_MAXT + 1];
  double abar_e[SY_MAXT + 1], alpha_e[SY_MAXT + 1];

  size_t n_params;
  float *w, *g, *adam_m, *adam_v, *adam_vmax;
  /* Encoder. */
  float *emb[ETSIM_SYNTH_MAX_CH], *gemb[ETSIM_SYNTH_MAX_CH];
  nn_linear_t enc_in, mp_msg[SY_MAXK], mp_self[SY_MAXK], jk[SY_MAXK + 1];
  float *ln_g, *ln_b, *gln_g, *gln_b;
  /* Size head (classes 1..max_size) and stop head. */
  nn_linear_t c1, c2, s1, s2;
  /* Attribute denoiser. */
  float *aemb[ETSIM_SYNTH_MAX_CH], *gaemb[ETSIM_SYNTH_MAX_CH];
  nn_linear_t a1, a2, a3;
  /* FiLM of the attribute denoiser (cfg.label_film): label features to
   * (gamma, beta) of its first (af1) and second (af2) hidden layer, 2H
   * outputs each; zero-initialised. */
  nn_linear_t af1, af2;
  /* Label scale of the edge denoiser (cfg.label_edge): label features to
   * gamma (P outputs), the per-candidate part a_u scaled by 1 + gamma;
   * zero-initialised. */
  nn_linear_t ef;
  /* Node-count conditioning (cfg.size_cond): the SY_NCF count features
   * into the stop head's first layer (ncs), those and the nodes still to
   * come into the size head's (ncc, only with ETSIM_SYNTH_SIZE_COND_HEADS);
   * no bias, zero-initialised. */
  nn_linear_t ncs, ncc;
  /* Successor messages (cfg.succ_msg): W_succ, H x H, no bias,
   * zero-initialised, after all other parameters. */
  nn_linear_t succ;
  /* Self-attention within each new layer in the attribute denoiser
   * (cfg.attn), after its first hidden layer h1: h1 + (softmax(Q K^T /
   * sqrt(H)) V) Wo, Q, K, V = h1 Wq, h1 Wk, h1 Wv; H x H each, no bias;
   * Wo (ao) zero-initialised. */
  nn_linear_t aq, ak, av, ao;
  /* Bidirectional encoder per layer step (cfg.bidir): the reverse
   * messages' weights of each message-passing layer, H x H, no bias,
   * zero-initialised, after all other parameters. */
  nn_linear_t mp_rev[SY_MAXK];
  /* Edge denoiser: split first layer (per candidate: es_z on Z plus es_g
   * on gap features; per new node: ed), then a ReLU and one output. */
  float *eemb[ETSIM_SYNTH_MAX_CH], *geemb[ETSIM_SYNTH_MAX_CH];
  nn_linear_t es_z, es_g, ed;
  float *eo, *geo, *eob, *geob;
  float *ew, *gew; /* the pair's own noisy bit, into the first layer */
  /* Sampling only, never saved: the edge denoiser's logits are divided by
   * it (0 means 1; etsim_synth_model_set_edge_temp). */
  double edge_temp;
  /* Sampling only, never saved: the attribute denoiser's logits are
   * divided by it (0 means 1; etsim_synth_model_set_attr_temp). */
  double attr_temp;
  /* Sampling only, never saved: at most this many parents per node (0: no
   * cap; etsim_synth_model_set_max_parents). */
  uint32_t max_indeg;
  /* Sampling only, never saved: per category of channel 0 a parent cap
   * (0: none), NULL when not set (etsim_synth_model_set_parent_caps). */
  uint32_t *cat_cap;
  /* Sampling only, never saved: classifier-free guidance weight w
   * (etsim_synth_model_set_guidance). */
  double guidance;
  /* Sampling only, never saved: the edge denoiser's own guidance weight
   * when guidance_edge_set (etsim_synth_model_set_guidance_edge); else
   * it follows guidance. */
  double guidance_edge;
  int guidance_edge_set;
  /* Test hook, never saved: when ctx_log is set, sampling copies each
   * step's context (dim_ctx floats) there, at most ctx_log_cap floats in
   * all, and counts the steps in ctx_log_n. */
  float *ctx_log;
  size_t ctx_log_cap, ctx_log_n;
  /* Test hook, never saved: when parts_log is set, sampling appends at
   * every step l >= 1 the edge denoiser's candidate parts of the prefix
   * rows 1..N, then their parent parts (P floats a row; as
   * etsim_synth__step_parts), while they fit in parts_log_cap floats;
   * parts_log_n counts the floats. */
  float *parts_log;
  size_t parts_log_cap, parts_log_n;
};

/* Cosine schedule (s = 0.008): abar[0] = 1, beta clamped to 0.9999. */
void etsim_synth__schedule(int T, double *abar, double *alpha);

/* Free g's arrays and zero it. */
void etsim_synth__dag_free(etsim_synth_dag_t *g);

/* Lay out (and with init, randomly initialise) the parameters of a model
 * whose dimensions are set.  0 or ETSIM_ENOMEM. */
size_t etsim_synth__param_count(etsim_synth_model_t *m);
int etsim_synth__alloc_params(etsim_synth_model_t *m, int init, uint64_t seed);

/* Build a model's data statistics from a training set (no parameters). */
int etsim_synth__model_new(const etsim_synth_data_t *train, const etsim_synth_config_t *cfg,
                           etsim_synth_model_t **out, etsim_error_t *err);

/* Loss of one graph with noise from `seed` (same seed, same noise); with
 * backward, gradients are ADDED to m->g scaled by `weight`.  Parts go to
 * parts[3] (count, attr, edge) when non-NULL. */
int etsim_synth__graph_loss(etsim_synth_model_t *m, const etsim_synth_data_t *d,
                            const etsim_synth_dag_t *g, uint64_t seed, int backward, float weight,
                            double *loss, double *parts, etsim_error_t *err);

/* Test hook: the training contexts of g's steps 0..L into out (cap
 * floats), dim_ctx floats each; returns L + 1 or a negative code. */
int etsim_synth__contexts(etsim_synth_model_t *m, const etsim_synth_dag_t *g, float *out,
                          size_t cap, etsim_error_t *err);

/* Test hook: per step l = 1..L of g, the edge denoiser's candidate parts
 * of the prefix rows 1..N_l (layers <= l), then their parent parts, P
 * floats a row, as training reads them at that step (model.c); returns
 * the floats written or a negative code. */
int etsim_synth__step_parts(etsim_synth_model_t *m, const etsim_synth_dag_t *g, float *out,
                            size_t cap, etsim_error_t *err);

/* A float pool in chunks that never move, reset per graph. */
typedef struct chunk {
  struct chunk *next;
  size_t cap, used;
  float data[];
} chunk_t;

typedef struct {
  chunk_t *head, *cur;
  int oom;
} pool_t;

/* Encoder activations for rows [0, cap). */
typedef struct {
  float *X0, *P[SY_MAXK + 1], *Hh[SY_MAXK + 1], *M[SY_MAXK + 1], *Z, *Zs;
} enc_t;

float *etsim_synth__pz(pool_t *p, size_t n); /* zeroed floats; sets p->oom on failure */
void etsim_synth__pool_reset(pool_t *p);
void etsim_synth__pool_free(pool_t *p);
int etsim_synth__dim_ctx(const etsim_synth_model_t *m);
int etsim_synth__dim_attr_in(const etsim_synth_model_t *m);
int etsim_synth__dim_edge_in(const etsim_synth_model_t *m);
int etsim_synth__enc_alloc(const etsim_synth_model_t *m, pool_t *p, int cap, enc_t *e);
/* Causal encoder over rows [r0, r1); rows below r0 must be done already;
 * xr is channel-major with row stride n_rows_xr. */
void etsim_synth__enc_fwd(const etsim_synth_model_t *m, enc_t *e, int n_rows_xr, const int32_t *xr,
                          const uint32_t *poff, const uint32_t *padj, int r0, int r1);
/* The bidirectional encoder of cfg.bidir over the prefix rows [0, rows):
 * as etsim_synth__enc_fwd from row 0, and layer k's pre-activation also
 * gains mp_rev[k] times the sum of the row's children among the prefix
 * rows (Mr[k], rows x H each for k = 1..K, kept for the backward pass);
 * the children are read off the parent lists of the prefix rows, so no
 * row beyond the prefix contributes.  Training (every layer step) and
 * sampling (every step, on the prefix so far) both call it. */
void etsim_synth__bidir_fwd(const etsim_synth_model_t *m, enc_t *e, float *const *Mr, int n_rows_xr,
                            const int32_t *xr, const uint32_t *poff, const uint32_t *padj,
                            int rows);
/* The label features (SY_DY floats) of label (y, y2); y2 is read by
 * two-component models only. */
void etsim_synth__label_feat(const etsim_synth_model_t *m, double y, double y2, float *out);
/* The null label of classifier-free guidance (cfg.label_drop,
 * etsim_synth_model_set_guidance): the label features of a step context
 * ctx (Dc floats; they follow the H summary and SY_FEAT step features)
 * set to zero, a value no label takes (every sin/cos pair has norm 1). */
static inline void etsim_synth__null_label(const etsim_synth_model_t *m, float *ctx) {
  memset(ctx + m->cfg.hidden + SY_FEAT, 0, sizeof(float) * SY_DY);
}
/* FiLM of n rows of width H (cfg.label_film): q = p * (1 + F[0..H)) +
 * F[H..2H), F one row of 2H floats per row of p (fs its row stride: 0 to
 * share one row); in place allowed. */
static inline void etsim_synth__film_fwd(int n, int H, const float *F, size_t fs, const float *p,
                                         float *q) {
  for (int r = 0; r < n; r++) {
    const float *f = F + (size_t)r * fs;
    for (int j = 0; j < H; j++) q[(size_t)r * H + j] = p[(size_t)r * H + j] * (1 + f[j]) + f[H + j];
  }
}
/* The attention of cfg.attn over n rows h (n x H) in nb blocks (the
 * layers; block b holds rows [bs[b] - base, bs[b + 1] - base)), each
 * attending within itself: out = h + (softmax(Q K^T / sqrt(H)) V) Wo per
 * block.  Q, K, V, A: n x H scratch (kept for the backward pass), S:
 * NN_ATTN_CHUNK times the largest block (model.c; training and sampling
 * alike). */
void etsim_synth__attn_fwd(const etsim_synth_model_t *m, int n, int nb, const uint32_t *bs,
                           uint32_t base, const float *h, float *Q, float *K, float *V, float *A,
                           float *S, float *out);
/* Label scale of the edge denoiser (cfg.label_edge): sc[j] = 1 +
 * gamma_j(lab) for the P units, lab the label features of a step context
 * (they follow the H summary and SY_FEAT step features; zero for the null
 * label, which leaves the bias). */
static inline void etsim_synth__edge_scale(const etsim_synth_model_t *m, const float *ctx,
                                           float *sc) {
  etsim_synth__nn_linear_fwd(&m->ef, 1, ctx + m->cfg.hidden + SY_FEAT, sc);
  for (int j = 0; j < m->cfg.pair_hidden; j++) sc[j] += 1;
}
/* The per-candidate parts A (n rows of P) times sc per unit, in place;
 * the unscaled rows into A0 when it is not NULL. */
static inline void etsim_synth__edge_scale_rows(size_t n, int P, const float *sc, float *A,
                                                float *A0) {
  if (A0) memcpy(A0, A, sizeof(float) * n * (size_t)P);
  for (size_t r = 0; r < n; r++)
    for (int j = 0; j < P; j++) A[r * (size_t)P + j] *= sc[j];
}
/* The edge denoiser's second layer for one pair, before its bias and the
 * final sum: ReLU(a_j + b_j) * eo_j over P into eight partial sums acc
 * (so the compiler can vectorise), for training (model.c) and sampling
 * (sample.c) alike; each adds them up in its own fixed order. */
static inline void etsim_synth__pair_acc(const float *eo, int P, const float *a, const float *b,
                                         float acc[8]) {
  for (int q = 0; q < 8; q++) acc[q] = 0;
  int j = 0;
  for (; j + 8 <= P; j += 8)
    for (int q = 0; q < 8; q++) {
      float h = a[j + q] + b[j + q];
      acc[q] += (h > 0 ? h : 0) * eo[j + q];
    }
  for (; j < P; j++) {
    float h = a[j] + b[j];
    acc[0] += (h > 0 ? h : 0) * eo[j];
  }
}
/* Successor messages (cfg.succ_msg): the message of a node with k > 0
 * children so far, whose embeddings sum to csum (H floats): csum / (1 +
 * k), bounded in a wide fan-out and still growing with the first few
 * children; training and sampling both compute it here. */
static inline void etsim_synth__succ_msg(int H, const float *csum, uint32_t k, float *out) {
  float s = 1.0f / (float)(1 + k);
  for (int j = 0; j < H; j++) out[j] = csum[j] * s;
}
void etsim_synth__t_feat(int t, int T, float *out);
void etsim_synth__step_feats(const etsim_synth_model_t *m, int l, uint32_t n_prefix,
                             uint32_t last_size, float *f);
void etsim_synth__gap_feats(uint32_t gap, uint32_t children, float *f);
/* Width of the category histograms in the step context (0 when off). */
int etsim_synth__dim_hist(const etsim_synth_model_t *m);
/* Histogram features from per-category counts (sum_cls each): the last
 * layer, the prefix, and the prefix nodes without children. */
void etsim_synth__hist_feats(const etsim_synth_model_t *m, const uint32_t *last,
                             const uint32_t *prefix, const uint32_t *open, float *f);
/* Width of the class recency in the step context (n_cls[0] when
 * cfg.ctx_hist has ETSIM_SYNTH_CTX_RECENT, else 0); it sits right after
 * the histograms, before the depth progress. */
int etsim_synth__dim_recent(const etsim_synth_model_t *m);
int etsim_synth__off_recent(const etsim_synth_model_t *m);
/* Class recency at step l (after layers 0..l): for each class k of
 * channel 0, 1 / (1 + l - seen[k]) where seen[k] is the latest layer
 * (1-based) holding a node of class k, 0 when none has yet. */
void etsim_synth__recent_feats(const etsim_synth_model_t *m, int l, const uint32_t *seen, float *f);
/* Inputs of the stop head at step l (SY_STOPF floats): the depth and the
 * label features ysin (SY_DY floats). */
void etsim_synth__stop_feats(const etsim_synth_model_t *m, int l, const float *ysin, float *f);
/* Node-count conditioning (cfg.size_cond): the count features of a
 * target of n nodes (SY_NCF floats: z/4 and sin/cos of z, z/2, z/4 for
 * z = log(1 + n)), and with them the nodes still to come after a prefix
 * of n_prefix, log(1 + max(0, n - n_prefix))/4, into f[SY_NCF]. */
void etsim_synth__count_feats(uint32_t n, float *f);
void etsim_synth__count_size_feats(uint32_t n, uint32_t n_prefix, float *f);
/* Depth progress of step l in a graph of depth L (SY_PROG floats, the last
 * of the context when cfg.ctx_hist has ETSIM_SYNTH_CTX_PROGRESS). */
void etsim_synth__prog_feats(int l, int L, float *f);
/* Inputs of the size head at step l (SY_SIZEF floats): the stop head's,
 * and the prefix and last-layer sizes. */
void etsim_synth__size_feats(const etsim_synth_model_t *m, int l, uint32_t n_prefix,
                             uint32_t last_size, const float *ysin, float *f);
/* Width of the size head's input: SY_SIZEF, plus the last layer's category
 * histogram (sum_cls floats, written by the caller after the first
 * SY_SIZEF) when cfg.ctx_hist has ETSIM_SYNTH_HIST_SIZE. */
int etsim_synth__dim_size_in(const etsim_synth_model_t *m);
int etsim_synth__draw(etsim_rng_t *r, const float *p, int n);

/* p(z_{t-1} | z_t = k, predicted clean distribution ph) of the marginal-
 * transition chain with marginal mg, K classes (sample.c). */
void etsim_synth__posterior(int K, const float *ph, const float *mg, int k, double alpha_t,
                            double abar_t, double abar_s, float *out);

/* Sampling with forced layer sizes (sizes[] ends with 0), for benchmarks:
 * the size head is still evaluated, its draw replaced.  Layers stop at the
 * model's max_layers. */
int etsim_synth__sample_fixed(etsim_synth_model_t *m, size_t n, const uint32_t *sizes,
                              uint64_t seed, etsim_synth_data_t *out, etsim_error_t *err);

/* Attribute rule for KIND_TRACE categories (dag.c). */
int etsim_synth__attr_rule_ok(const uint32_t *x);
/* The kind and four channels (class, collective, duration and size bins)
 * of a trace data set (dag.c). */
void etsim_synth__trace_layout(etsim_synth_data_t *d);
/* Node class cls communicates (send, recv, collective; dag.c). */
int etsim_synth__is_comm(uint32_t cls);

/* Surrogate test hooks (surrogate.c): a fresh regressor for d's layout, and
 * the loss of all of d as one batch with its gradient left in *g (parameters
 * in *w, n_params of each). */
int etsim_synth__surrogate_new(const etsim_synth_data_t *d,
                               const etsim_synth_surrogate_config_t *cfg,
                               etsim_synth_surrogate_t **out, etsim_error_t *err);
double etsim_synth__surrogate_loss(etsim_synth_surrogate_t *s, const etsim_synth_data_t *d,
                                   float **w, float **g, size_t *n_params);

#endif
