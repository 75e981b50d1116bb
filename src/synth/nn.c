/*
 * nn.c — forward and backward passes of the generator's building blocks.
 *
 * Dense layers go through cblas_sgemm (one thread: training must be
 * deterministic, and the note in docs/synth.md measured no gain from a
 * second thread on this machine kind).  Everything else is plain loops.
 * Reductions that feed a loss are accumulated in double.
 */
#include "synth/nn_int.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

void etsim_synth__nn_linear_fwd(const nn_linear_t *l, int n, const float *x, float *y) {
  for (int r = 0; r < n; r++) memcpy(y + (size_t)r * l->out, l->b, sizeof(float) * (size_t)l->out);
  if (n > 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, l->out, l->in, 1.0f, x, l->in, l->w,
                l->out, 1.0f, y, l->out);
}

void etsim_synth__nn_linear_fwd_add(const nn_linear_t *l, int n, const float *x, float *y,
                                    int with_bias) {
  if (n <= 0) return;
  if (with_bias)
    for (int r = 0; r < n; r++)
      for (int j = 0; j < l->out; j++) y[(size_t)r * l->out + j] += l->b[j];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, l->out, l->in, 1.0f, x, l->in, l->w,
              l->out, 1.0f, y, l->out);
}

void etsim_synth__nn_linear_bwd(const nn_linear_t *l, int n, const float *x, const float *dy,
                                float *dx, int with_bias) {
  if (n <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l->in, l->out, n, 1.0f, x, l->in, dy, l->out,
              1.0f, l->gw, l->out);
  if (with_bias)
    for (int r = 0; r < n; r++)
      for (int j = 0; j < l->out; j++) l->gb[j] += dy[(size_t)r * l->out + j];
  if (dx)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, l->in, l->out, 1.0f, dy, l->out, l->w,
                l->out, 1.0f, dx, l->in);
}

void etsim_synth__nn_gelu_fwd(size_t n, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
  }
}

void etsim_synth__nn_gelu_bwd(size_t n, const float *x, const float *dy, float *dx) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + erff(v * 0.70710678f));
    float pdf = 0.39894228f * expf(-0.5f * v * v);
    dx[i] += dy[i] * (cdf + v * pdf);
  }
}

void etsim_synth__nn_relu_fwd(size_t n, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
}

void etsim_synth__nn_relu_bwd(size_t n, const float *x, const float *dy, float *dx) {
  for (size_t i = 0; i < n; i++)
    if (x[i] > 0) dx[i] += dy[i];
}

void etsim_synth__nn_layernorm_fwd(int n, int d, const float *x, const float *g, const float *b,
                                   float *y, float *stats) {
  for (int r = 0; r < n; r++) {
    const float *xr = x + (size_t)r * d;
    float *yr = y + (size_t)r * d;
    double mu = 0, var = 0;
    for (int j = 0; j < d; j++) mu += xr[j];
    mu /= d;
    for (int j = 0; j < d; j++) var += (xr[j] - mu) * (xr[j] - mu);
    var /= d;
    float rstd = (float)(1.0 / sqrt(var + 1e-5));
    stats[2 * r] = (float)mu;
    stats[2 * r + 1] = rstd;
    for (int j = 0; j < d; j++) yr[j] = ((xr[j] - (float)mu) * rstd) * g[j] + b[j];
  }
}

void etsim_synth__nn_layernorm_bwd(int n, int d, const float *x, const float *g, const float *stats,
                                   const float *dy, float *dx, float *gg, float *gb) {
  for (int r = 0; r < n; r++) {
    const float *xr = x + (size_t)r * d, *dyr = dy + (size_t)r * d;
    float mu = stats[2 * r], rstd = stats[2 * r + 1];
    double s1 = 0, s2 = 0; /* sum of dxhat, sum of dxhat * xhat */
    for (int j = 0; j < d; j++) {
      float xh = (xr[j] - mu) * rstd;
      float dxh = dyr[j] * g[j];
      gg[j] += dyr[j] * xh;
      gb[j] += dyr[j];
      s1 += dxh;
      s2 += dxh * xh;
    }
    if (!dx) continue;
    float m1 = (float)(s1 / d), m2 = (float)(s2 / d);
    float *dxr = dx + (size_t)r * d;
    for (int j = 0; j < d; j++) {
      float xh = (xr[j] - mu) * rstd;
      dxr[j] += rstd * (dyr[j] * g[j] - m1 - xh * m2);
    }
  }
}

void etsim_synth__nn_softmax(int n, int c, const float *x, float *p) {
  for (int r = 0; r < n; r++) {
    const float *xr = x + (size_t)r * c;
    float *pr = p + (size_t)r * c;
    float mx = -FLT_MAX;
    for (int j = 0; j < c; j++) mx = xr[j] > mx ? xr[j] : mx;
    double s = 0;
    for (int j = 0; j < c; j++) {
      pr[j] = expf(xr[j] - mx);
      s += pr[j];
    }
    float inv = (float)(1.0 / s);
    for (int j = 0; j < c; j++) pr[j] *= inv;
  }
}

/* The probabilities of query rows [i0, i0 + c) over all n keys into S. */
static void attn_probs(int n, int d, int i0, int c, const float *Q, const float *K, float *S) {
  float sc = 1.0f / sqrtf((float)d);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, n, d, sc, Q + (size_t)i0 * d, d, K, d,
              0.0f, S, n);
  etsim_synth__nn_softmax(c, n, S, S);
}

void etsim_synth__nn_attn_fwd(int n, int d, const float *Q, const float *K, const float *V,
                              float *A, float *S) {
  for (int i0 = 0; i0 < n; i0 += NN_ATTN_CHUNK) {
    int c = n - i0 < NN_ATTN_CHUNK ? n - i0 : NN_ATTN_CHUNK;
    attn_probs(n, d, i0, c, Q, K, S);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, d, n, 1.0f, S, n, V, d, 0.0f,
                A + (size_t)i0 * d, d);
  }
}

/* With P the probabilities and dP = dA V^T, the scores' gradient is
 * dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik) (the softmax's Jacobian), and
 * the scores are Q K^T / sqrt(d). */
void etsim_synth__nn_attn_bwd(int n, int d, const float *Q, const float *K, const float *V,
                              const float *dA, float *dQ, float *dK, float *dV, float *S,
                              float *dS) {
  float sc = 1.0f / sqrtf((float)d);
  for (int i0 = 0; i0 < n; i0 += NN_ATTN_CHUNK) {
    int c = n - i0 < NN_ATTN_CHUNK ? n - i0 : NN_ATTN_CHUNK;
    const float *dAc = dA + (size_t)i0 * d;
    attn_probs(n, d, i0, c, Q, K, S);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, n, d, 1.0f, dAc, d, V, d, 0.0f, dS, n);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, c, 1.0f, S, n, dAc, d, 1.0f, dV, d);
    for (int r = 0; r < c; r++) {
      const float *pr = S + (size_t)r * n;
      float *gr = dS + (size_t)r * n;
      double s = 0;
      for (int j = 0; j < n; j++) s += (double)pr[j] * gr[j];
      for (int j = 0; j < n; j++) gr[j] = pr[j] * (gr[j] - (float)s) * sc;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, d, n, 1.0f, dS, n, K, d, 1.0f,
                dQ + (size_t)i0 * d, d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, c, 1.0f, dS, n, Q + (size_t)i0 * d,
                d, 1.0f, dK, d);
  }
}

double etsim_synth__nn_softmax_xent(int n, int c, const float *x, const int32_t *t,
                                    const uint8_t *mask, float weight, float *dx) {
  double loss = 0;
  for (int r = 0; r < n; r++) {
    if (t[r] < 0) continue;
    const float *xr = x + (size_t)r * c;
    const uint8_t *mr = mask ? mask + (size_t)r * c : NULL;
    float mx = -FLT_MAX;
    for (int j = 0; j < c; j++)
      if (!mr || mr[j]) mx = xr[j] > mx ? xr[j] : mx;
    double s = 0;
    for (int j = 0; j < c; j++)
      if (!mr || mr[j]) s += exp((double)xr[j] - mx);
    double lse = mx + log(s);
    loss += weight * (lse - xr[t[r]]);
    if (dx) {
      float *dr = dx + (size_t)r * c;
      for (int j = 0; j < c; j++) {
        if (mr && !mr[j]) continue;
        float p = (float)exp((double)xr[j] - lse);
        dr[j] += weight * (p - (j == t[r] ? 1.0f : 0.0f));
      }
    }
  }
  return loss;
}

double etsim_synth__nn_bce_logits(int n, const float *x, const uint8_t *t, float weight,
                                  float *dx) {
  double loss = 0;
  for (int r = 0; r < n; r++) {
    double z = x[r];
    /* log(1 + e^z) - t z, computed without overflow. */
    double sp = z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
    loss += weight * (sp - (t[r] ? z : 0));
    if (dx) {
      double p = 1.0 / (1.0 + exp(-z));
      dx[r] += weight * (float)(p - (t[r] ? 1 : 0));
    }
  }
  return loss;
}

void etsim_synth__nn_embed_fwd_add(int n, int d, const float *e, const int32_t *idx, float *y) {
  for (int r = 0; r < n; r++) {
    const float *er = e + (size_t)idx[r] * d;
    float *yr = y + (size_t)r * d;
    for (int j = 0; j < d; j++) yr[j] += er[j];
  }
}

void etsim_synth__nn_embed_bwd(int n, int d, const int32_t *idx, const float *dy, float *ge) {
  for (int r = 0; r < n; r++) {
    float *gr = ge + (size_t)idx[r] * d;
    const float *dr = dy + (size_t)r * d;
    for (int j = 0; j < d; j++) gr[j] += dr[j];
  }
}

void etsim_synth__nn_sinusoid(float v, int d, float base, float *out) {
  double f = 1.0;
  for (int k = 0; k < d / 2; k++) {
    out[2 * k] = (float)sin(v * f);
    out[2 * k + 1] = (float)cos(v * f);
    f *= base;
  }
}

void etsim_synth__nn_spmm_add(int r0, int r1, int d, const uint32_t *off, const uint32_t *adj,
                              const float *x, float *y) {
  for (int r = r0; r < r1; r++) {
    float *yr = y + (size_t)r * d;
    for (uint32_t k = off[r]; k < off[r + 1]; k++) {
      const float *xr = x + (size_t)adj[k] * d;
      for (int j = 0; j < d; j++) yr[j] += xr[j];
    }
  }
}

void etsim_synth__nn_spmm_t_add(int r0, int r1, int d, const uint32_t *off, const uint32_t *adj,
                                const float *dy, float *dx) {
  for (int r = r0; r < r1; r++) {
    const float *dr = dy + (size_t)r * d;
    for (uint32_t k = off[r]; k < off[r + 1]; k++) {
      float *xr = dx + (size_t)adj[k] * d;
      for (int j = 0; j < d; j++) xr[j] += dr[j];
    }
  }
}

void etsim_synth__nn_adam_update(nn_adam_t *o, size_t n, float *w, const float *g, float *m,
                                 float *v, float *vmax) {
  o->step++;
  double bc1 = 1.0 - pow(o->beta1, (double)o->step);
  double bc2 = 1.0 - pow(o->beta2, (double)o->step);
  float a = (float)(o->lr * sqrt(bc2) / bc1);
  for (size_t i = 0; i < n; i++) {
    m[i] = o->beta1 * m[i] + (1 - o->beta1) * g[i];
    v[i] = o->beta2 * v[i] + (1 - o->beta2) * g[i] * g[i];
    float vv = v[i];
    if (o->amsgrad) {
      if (vv > vmax[i]) vmax[i] = vv;
      vv = vmax[i];
    }
    w[i] -= a * m[i] / (sqrtf(vv) + o->eps * (float)sqrt(bc2));
  }
}

double etsim_synth__nn_clip_grad(size_t n, float *g, double max_norm) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
  double norm = sqrt(s);
  if (norm > max_norm && norm > 0) {
    float k = (float)(max_norm / norm);
    for (size_t i = 0; i < n; i++) g[i] *= k;
  }
  return norm;
}
