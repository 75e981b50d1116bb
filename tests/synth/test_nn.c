/*
 * test_nn.c — every NN primitive of the generator against central finite
 * differences, plus closed-form checks (softmax sums, cross-entropy of a
 * uniform row = log C, Adam's first step = lr * sign(g)).
 *
 * The scalar probe is L = sum(R .* f(inputs)) for a fixed random R, so the
 * analytic gradient of L is exactly what each backward receives as dy = R.
 */
#include "test_util.h"

#include "synth/nn_int.h"
#include "etsim/base.h"

#include <math.h>

static etsim_rng_t rng;

static void fill(float *a, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) a[i] = (float)((etsim_rng_uniform(&rng) * 2 - 1) * scale);
}

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* Compare analytic g against central differences of f over the array p. */
typedef double (*probe_fn)(void *ctx);
static void check_grad(const char *what, float *p, const float *g, size_t n, probe_fn f, void *ctx,
                       float h, double tol) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    float keep = p[i];
    p[i] = keep + h;
    double lp = f(ctx);
    p[i] = keep - h;
    double lm = f(ctx);
    p[i] = keep;
    double num = (lp - lm) / (2.0 * h);
    double err = fabs(num - g[i]) / fmax(1.0, fabs(num) + fabs(g[i]));
    if (err > worst) worst = err;
    if (err > tol)
      fail_msg("%s: d/dp[%zu]: analytic %.6g, numeric %.6g", what, i, (double)g[i], num);
  }
  print_message("%s: worst relative error %.2e over %zu entries\n", what, worst, n);
}

/* ---------------------------------------------------------------- linear */
typedef struct {
  nn_linear_t l;
  int n;
  float *x, *y, *r;
} lin_ctx;
static double lin_probe(void *c) {
  lin_ctx *k = c;
  etsim_synth__nn_linear_fwd(&k->l, k->n, k->x, k->y);
  return dot(k->y, k->r, (size_t)k->n * k->l.out);
}
static void test_linear(void **state) {
  (void)state;
  enum { N = 5, I = 7, O = 4 };
  float w[I * O], b[O], gw[I * O] = {0}, gb[O] = {0}, x[N * I], y[N * O], r[N * O], dx[N * I] = {0};
  fill(w, I * O, 1);
  fill(b, O, 1);
  fill(x, N * I, 1);
  fill(r, N * O, 1);
  lin_ctx k = {{I, O, w, b, gw, gb}, N, x, y, r};
  lin_probe(&k);
  /* y[0][0] by hand. */
  double y00 = b[0];
  for (int i = 0; i < I; i++) y00 += x[i] * w[i * O];
  assert_float_equal(y[0], y00, 1e-5);
  etsim_synth__nn_linear_bwd(&k.l, N, x, r, dx, 1);
  check_grad("linear dW", w, gw, I * O, lin_probe, &k, 1e-2f, 2e-3);
  check_grad("linear db", b, gb, O, lin_probe, &k, 1e-2f, 2e-3);
  check_grad("linear dx", x, dx, N * I, lin_probe, &k, 1e-2f, 2e-3);
}

/* ------------------------------------------------------------ activations */
typedef struct {
  int relu;
  size_t n;
  float *x, *y, *r;
} act_ctx;
static double act_probe(void *c) {
  act_ctx *k = c;
  if (k->relu) etsim_synth__nn_relu_fwd(k->n, k->x, k->y);
  else etsim_synth__nn_gelu_fwd(k->n, k->x, k->y);
  return dot(k->y, k->r, k->n);
}
static void test_activations(void **state) {
  (void)state;
  enum { N = 40 };
  float x[N], y[N], r[N], dx[N] = {0};
  fill(x, N, 3);
  for (int i = 0; i < N; i++) /* keep ReLU away from its kink */
    if (fabsf(x[i]) < 0.05f) x[i] = 0.5f;
  fill(r, N, 1);
  act_ctx k = {0, N, x, y, r};
  act_probe(&k);
  /* GELU(1) = Phi(1) = 0.841344746... */
  float one = 1, g1;
  etsim_synth__nn_gelu_fwd(1, &one, &g1);
  assert_float_equal(g1, 0.8413447f, 1e-6);
  etsim_synth__nn_gelu_bwd(N, x, r, dx);
  check_grad("gelu dx", x, dx, N, act_probe, &k, 1e-3f, 2e-3);
  memset(dx, 0, sizeof dx);
  k.relu = 1;
  etsim_synth__nn_relu_bwd(N, x, r, dx);
  check_grad("relu dx", x, dx, N, act_probe, &k, 1e-3f, 2e-3);
}

/* ------------------------------------------------------------ layer norm */
typedef struct {
  int n, d;
  float *x, *g, *b, *y, *st, *r;
} ln_ctx;
static double ln_probe(void *c) {
  ln_ctx *k = c;
  etsim_synth__nn_layernorm_fwd(k->n, k->d, k->x, k->g, k->b, k->y, k->st);
  return dot(k->y, k->r, (size_t)k->n * k->d);
}
static void test_layernorm(void **state) {
  (void)state;
  enum { N = 3, D = 8 };
  float x[N * D], g[D], b[D], y[N * D], st[2 * N], r[N * D], dx[N * D] = {0}, gg[D] = {0},
                                                                    gb[D] = {0};
  fill(x, N * D, 2);
  fill(g, D, 1);
  fill(b, D, 1);
  fill(r, N * D, 1);
  ln_ctx k = {N, D, x, g, b, y, st, r};
  /* With g = 1, b = 0 each row has mean 0 and variance ~1. */
  float g1[D], b0[D] = {0};
  for (int j = 0; j < D; j++) g1[j] = 1;
  etsim_synth__nn_layernorm_fwd(N, D, x, g1, b0, y, st);
  double mu = 0, var = 0;
  for (int j = 0; j < D; j++) mu += y[j];
  for (int j = 0; j < D; j++) var += y[j] * y[j];
  assert_float_equal(mu / D, 0, 1e-5);
  assert_float_equal(var / D, 1, 1e-3);
  ln_probe(&k);
  etsim_synth__nn_layernorm_bwd(N, D, x, g, st, r, dx, gg, gb);
  check_grad("layernorm dx", x, dx, N * D, ln_probe, &k, 1e-2f, 5e-3);
  check_grad("layernorm dgain", g, gg, D, ln_probe, &k, 1e-2f, 5e-3);
  check_grad("layernorm dbias", b, gb, D, ln_probe, &k, 1e-2f, 5e-3);
}

/* ------------------------------------------------------- softmax and CE */
typedef struct {
  int n, c;
  float *x;
  int32_t *t;
  uint8_t *mask, *bt;
  int bce;
} ce_ctx;
static double ce_probe(void *c) {
  ce_ctx *k = c;
  if (k->bce) return etsim_synth__nn_bce_logits(k->n, k->x, k->bt, 0.5f, NULL);
  return etsim_synth__nn_softmax_xent(k->n, k->c, k->x, k->t, k->mask, 0.5f, NULL);
}
static void test_softmax_xent(void **state) {
  (void)state;
  enum { N = 4, C = 6 };
  float x[N * C], p[N * C], dx[N * C] = {0};
  int32_t t[N] = {0, 5, -1, 2};
  uint8_t mask[N * C];
  memset(mask, 1, sizeof mask);
  mask[1 * C + 0] = 0; /* row 1 may not pick class 0 */
  fill(x, N * C, 2);
  etsim_synth__nn_softmax(N, C, x, p);
  for (int r = 0; r < N; r++) {
    double s = 0;
    for (int j = 0; j < C; j++) s += p[r * C + j];
    assert_float_equal(s, 1.0, 1e-6);
  }
  /* A uniform row costs log C. */
  float z[C] = {0};
  int32_t t0 = 3;
  assert_float_equal(etsim_synth__nn_softmax_xent(1, C, z, &t0, NULL, 1, NULL), log(C), 1e-6);
  ce_ctx k = {N, C, x, t, mask, NULL, 0};
  etsim_synth__nn_softmax_xent(N, C, x, t, mask, 0.5f, dx);
  assert_float_equal(dx[1 * C + 0], 0, 0); /* masked logit gets no gradient */
  for (int j = 0; j < C; j++)              /* skipped row gets none either */
    assert_float_equal(dx[2 * C + j], 0, 0);
  check_grad("softmax-xent dx", x, dx, N * C, ce_probe, &k, 1e-2f, 2e-3);
  float bx[8], bdx[8] = {0};
  uint8_t bt[8] = {0, 1, 1, 0, 1, 0, 0, 1};
  fill(bx, 8, 4);
  ce_ctx kb = {8, 1, bx, NULL, NULL, bt, 1};
  etsim_synth__nn_bce_logits(8, bx, bt, 0.5f, bdx);
  check_grad("bce dx", bx, bdx, 8, ce_probe, &kb, 1e-2f, 2e-3);
  float zero = 0;
  uint8_t one = 1;
  assert_float_equal(etsim_synth__nn_bce_logits(1, &zero, &one, 1, NULL), log(2), 1e-9);
}

/* ------------------------------------------------ embedding and spmm */
typedef struct {
  float *e, *x, *y, *r;
  int32_t *idx;
  uint32_t *off, *adj;
} es_ctx;
enum { EN = 5, ED = 3, EV = 4 };
static double es_probe(void *c) {
  es_ctx *k = c;
  float h[EN * ED] = {0};
  etsim_synth__nn_embed_fwd_add(EN, ED, k->e, k->idx, h);
  memset(k->y, 0, sizeof(float) * EN * ED);
  etsim_synth__nn_spmm_add(0, EN, ED, k->off, k->adj, h, k->y);
  for (int i = 0; i < EN * ED; i++) k->y[i] += h[i] * h[i]; /* make it nonlinear in h */
  return dot(k->y, k->r, EN * ED);
}
static void test_embed_spmm(void **state) {
  (void)state;
  float e[EV * ED], y[EN * ED], r[EN * ED], ge[EV * ED] = {0};
  int32_t idx[EN] = {0, 2, 2, 3, 1};
  /* node 2 <- {0,1}, node 3 <- {2}, node 4 <- {0,3} */
  uint32_t off[EN + 1] = {0, 0, 0, 2, 3, 5}, adj[5] = {0, 1, 2, 0, 3};
  fill(e, EV * ED, 1);
  fill(r, EN * ED, 1);
  es_ctx k = {e, NULL, y, r, idx, off, adj};
  es_probe(&k);
  /* backward by hand: dh = A^T r + 2 h r, then scatter into ge */
  float h[EN * ED] = {0}, dh[EN * ED] = {0};
  etsim_synth__nn_embed_fwd_add(EN, ED, e, idx, h);
  etsim_synth__nn_spmm_t_add(0, EN, ED, off, adj, r, dh);
  for (int i = 0; i < EN * ED; i++) dh[i] += 2 * h[i] * r[i];
  etsim_synth__nn_embed_bwd(EN, ED, idx, dh, ge);
  check_grad("embedding+spmm dE", e, ge, EV * ED, es_probe, &k, 1e-2f, 2e-3);
}

/* ----------------------------------------------------------------- Adam */
static void test_adam(void **state) {
  (void)state;
  /* First step of Adam moves each weight by lr * sign(g) (up to eps). */
  float w[3] = {1, 2, 3}, g[3] = {0.5f, -2, 1e-3f}, m[3] = {0}, v[3] = {0}, vm[3] = {0};
  nn_adam_t o = {0.01f, 0.9f, 0.999f, 1e-8f, 1, 0};
  etsim_synth__nn_adam_update(&o, 3, w, g, m, v, vm);
  assert_float_equal(w[0], 0.99f, 1e-5);
  assert_float_equal(w[1], 2.01f, 1e-5);
  assert_float_equal(w[2], 2.99f, 1e-4);
  /* Minimises a quadratic. */
  float q = 5, gq, mq = 0, vq = 0, vmq = 0;
  nn_adam_t o2 = {0.1f, 0.9f, 0.999f, 1e-8f, 0, 0};
  for (int i = 0; i < 500; i++) {
    gq = 2 * (q - 1.5f);
    etsim_synth__nn_adam_update(&o2, 1, &q, &gq, &mq, &vq, &vmq);
  }
  assert_float_equal(q, 1.5f, 0.05);
  float cg[2] = {3, 4};
  assert_float_equal(etsim_synth__nn_clip_grad(2, cg, 1.0), 5.0, 1e-6);
  assert_float_equal(cg[0], 0.6f, 1e-6);
  float s[4];
  etsim_synth__nn_sinusoid(0.5f, 4, 0.5f, s);
  assert_float_equal(s[0], sin(0.5), 1e-6);
  assert_float_equal(s[3], cos(0.25), 1e-6);
}

/* ------------------------------------------------------------- attention */
typedef struct {
  int n, d;
  float *q, *k, *v, *a, *r, *s;
} attn_ctx;
static double attn_probe(void *c) {
  attn_ctx *t = c;
  etsim_synth__nn_attn_fwd(t->n, t->d, t->q, t->k, t->v, t->a, t->s);
  return dot(t->a, t->r, (size_t)t->n * t->d);
}
/* Single-head attention over more rows than one chunk of queries (so the
 * chunking is crossed): the forward pass against the formula in double,
 * the backward against central differences in Q, K and V; one row attends
 * to itself only (A = V). */
static void test_attention(void **state) {
  (void)state;
  enum { N = NN_ATTN_CHUNK + 6, D = 3 };
  static float q[N * D], k[N * D], v[N * D], a[N * D], r[N * D], s[NN_ATTN_CHUNK * N],
      s2[NN_ATTN_CHUNK * N];
  float dq[N * D] = {0}, dk[N * D] = {0}, dv[N * D] = {0};
  fill(q, N * D, 1);
  fill(k, N * D, 1);
  fill(v, N * D, 1);
  fill(r, N * D, 1);
  attn_ctx t = {N, D, q, k, v, a, r, s};
  attn_probe(&t);
  double worst = 0;
  for (int i = 0; i < N; i++) {
    double p[N], z = 0, mx = -1e30;
    for (int j = 0; j < N; j++) {
      double sc = 0;
      for (int c = 0; c < D; c++) sc += (double)q[i * D + c] * k[j * D + c];
      p[j] = sc / sqrt((double)D);
      mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j < N; j++) z += p[j] = exp(p[j] - mx);
    for (int c = 0; c < D; c++) {
      double want = 0;
      for (int j = 0; j < N; j++) want += p[j] / z * v[j * D + c];
      double e = fabs(want - a[i * D + c]);
      worst = e > worst ? e : worst;
    }
  }
  print_message("attention forward: worst error %.2e against the formula\n", worst);
  TU_LT(worst, 1e-5);
  etsim_synth__nn_attn_bwd(N, D, q, k, v, r, dq, dk, dv, s, s2);
  check_grad("attention dQ", q, dq, N * D, attn_probe, &t, 1e-2f, 2e-3);
  check_grad("attention dK", k, dk, N * D, attn_probe, &t, 1e-2f, 2e-3);
  check_grad("attention dV", v, dv, N * D, attn_probe, &t, 1e-2f, 2e-3);
  etsim_synth__nn_attn_fwd(1, D, q, k, v, a, s);
  for (int c = 0; c < D; c++) TU_EQ(a[c], v[c]);
}

int main(void) {
  etsim_rng_seed(&rng, 12345);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear),     cmocka_unit_test(test_activations),
      cmocka_unit_test(test_layernorm),  cmocka_unit_test(test_softmax_xent),
      cmocka_unit_test(test_embed_spmm), cmocka_unit_test(test_adam),
      cmocka_unit_test(test_attention),
  };
  return TU_RUN(tests, NULL, NULL);
}
