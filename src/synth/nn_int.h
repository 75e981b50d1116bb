/*
 * nn_int.h — neural-network primitives for the LayerDAG generator (private).
 *
 * Every primitive has a forward and a hand-written backward pass; matrices
 * are row-major float arrays with one row per item (node, pair, layer).
 * Linear layers run on cblas_sgemm.  Backward functions ADD into gradient
 * buffers (parameters and inputs alike), so several consumers of one tensor
 * simply accumulate; callers zero what they own.  tests/synth/test_nn.c
 * checks each backward against central finite differences.
 */
#ifndef ETSIM_SYNTH_NN_H
#define ETSIM_SYNTH_NN_H

#include <stddef.h>
#include <stdint.h>

/* A linear layer y = x W + b, W stored [in x out] row-major.  w and b point
 * into the model's flat parameter array, gw and gb into its gradient. */
typedef struct nn_linear {
  int in, out;
  float *w, *b, *gw, *gb;
} nn_linear_t;

/* y[n x out] = x[n x in] W + b (overwrites y). */
void etsim_synth__nn_linear_fwd(const nn_linear_t *l, int n, const float *x, float *y);
/* Same but adds into y (for sums of linear maps, as in message passing). */
void etsim_synth__nn_linear_fwd_add(const nn_linear_t *l, int n, const float *x, float *y,
                                    int with_bias);
/* gw += x^T dy, gb += colsum(dy) (when with_bias), dx += dy W^T (dx may be
 * NULL). */
void etsim_synth__nn_linear_bwd(const nn_linear_t *l, int n, const float *x, const float *dy,
                                float *dx, int with_bias);

/* GELU (exact, erf form): y = x * Phi(x).  In place allowed for fwd. */
void etsim_synth__nn_gelu_fwd(size_t n, const float *x, float *y);
/* dx += dy * gelu'(x), from the pre-activation x. */
void etsim_synth__nn_gelu_bwd(size_t n, const float *x, const float *dy, float *dx);
/* ReLU, used in the pair scorer where GELU's erf would dominate sampling. */
void etsim_synth__nn_relu_fwd(size_t n, const float *x, float *y);
void etsim_synth__nn_relu_bwd(size_t n, const float *x, const float *dy, float *dx);

/* Layer norm over rows of width d with gain g and bias b (d floats each).
 * fwd stores per-row mean and reciprocal std in stats[2n] for bwd. */
void etsim_synth__nn_layernorm_fwd(int n, int d, const float *x, const float *g, const float *b,
                                   float *y, float *stats);
void etsim_synth__nn_layernorm_bwd(int n, int d, const float *x, const float *g, const float *stats,
                                   const float *dy, float *dx, float *gg, float *gb);

/* Row softmax over width c (in place allowed). */
void etsim_synth__nn_softmax(int n, int c, const float *x, float *p);
/*
 * Mean-free cross-entropy: for each row r with target t[r] (t[r] < 0 skips
 * the row), adds -log softmax(x_r)[t_r] * weight to the returned sum and
 * dx_r += weight * (softmax(x_r) - onehot(t_r)).  `mask` (may be NULL) is
 * n*c bytes: 0 excludes a logit (treated as -inf).
 */
double etsim_synth__nn_softmax_xent(int n, int c, const float *x, const int32_t *t,
                                    const uint8_t *mask, float weight, float *dx);
/* Binary cross-entropy with logits: rows of one logit, targets 0/1. */
double etsim_synth__nn_bce_logits(int n, const float *x, const uint8_t *t, float weight, float *dx);

/* Embedding: y[r] (+)= E[idx[r]] (rows of width d). */
void etsim_synth__nn_embed_fwd_add(int n, int d, const float *e, const int32_t *idx, float *y);
void etsim_synth__nn_embed_bwd(int n, int d, const int32_t *idx, const float *dy, float *ge);

/* Sinusoidal features of a scalar: out[2k] = sin(v * f_k), out[2k+1] =
 * cos(v * f_k), f_k = base^k, k < d/2 (d even). */
void etsim_synth__nn_sinusoid(float v, int d, float base, float *out);

/* Sparse A*X with A in CSR over rows [r0, r1): y[r] += sum_{j in
 * adj[off[r]..off[r+1])} x[j] (row width d).  The transpose, for backward:
 * dx[j] += dy[r] for the same pairs. */
void etsim_synth__nn_spmm_add(int r0, int r1, int d, const uint32_t *off, const uint32_t *adj,
                              const float *x, float *y);
void etsim_synth__nn_spmm_t_add(int r0, int r1, int d, const uint32_t *off, const uint32_t *adj,
                                const float *dy, float *dx);

/* Single-head softmax attention among the n rows of one block (the nodes
 * of one layer): A = softmax(Q K^T / sqrt(d)) V, Q, K, V and A n x d.
 * Query rows go NN_ATTN_CHUNK at a time, so the scratch S holds
 * NN_ATTN_CHUNK * n floats, not n * n; the time is O(n^2 d) all the same.
 * bwd recomputes the probabilities (nothing n x n is kept) and ADDS into
 * dQ, dK, dV; S and dS are scratch of NN_ATTN_CHUNK * n floats each. */
#define NN_ATTN_CHUNK 64
void etsim_synth__nn_attn_fwd(int n, int d, const float *Q, const float *K, const float *V,
                              float *A, float *S);
void etsim_synth__nn_attn_bwd(int n, int d, const float *Q, const float *K, const float *V,
                              const float *dA, float *dQ, float *dK, float *dV, float *S,
                              float *dS);

/* Adam / AMSGrad over a flat parameter array.  `step` counts from 1. */
typedef struct nn_adam {
  float lr, beta1, beta2, eps;
  int amsgrad;
  long step;
} nn_adam_t;
void etsim_synth__nn_adam_update(nn_adam_t *o, size_t n, float *w, const float *g, float *m,
                                 float *v, float *vmax);

/* Scale g so that its L2 norm is at most max_norm; returns the norm. */
double etsim_synth__nn_clip_grad(size_t n, float *g, double max_norm);

#endif
