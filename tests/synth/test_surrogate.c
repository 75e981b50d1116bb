/*
 * test_surrogate.c — the BiMPNN evaluation regressor: its backward pass
 * against finite differences, the scores against closed forms, and that it
 * learns a label that needs both message directions, that a fine-tune
 * starts from the pre-trained weights, and the weights file.
 */
#include "synth_util.h"

#include <math.h>

/* synth_util.h's two DAGs and a third with a large label, so that one
 * graph sits on the L1 branch of smooth L1. */
static void toy_data3(etsim_synth_data_t *d) {
  toy_data(d);
  uint32_t x2[6] = {2, 1, 0, 0, 1, 3};
  uint32_t s2[2] = {0, 1}, t2[2] = {1, 2};
  etsim_synth_dag_t g2 = {3, 2, x2, s2, t2, 9.0, 0};
  assert_int_equal(etsim_synth_data_add(d, &g2), 0);
}

static void test_gradient(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data3(&d);
  etsim_synth_surrogate_config_t c;
  etsim_synth_surrogate_config_default(&c);
  c.hidden = 4;
  c.mp_layers = 2;
  etsim_synth_surrogate_t *s;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth__surrogate_new(&d, &c, &s, &err), 0);
  float *w, *g;
  size_t np;
  double l0 = etsim_synth__surrogate_loss(s, &d, &w, &g, &np);
  assert_true(isfinite(l0));
  TU_GT(l0, 0);
  /* Params: embeddings (3 + 4) * 4, per layer 3 * (8*8 + 8), output
   * projection 3 blocks of 8*8 + 8, head 8*8 + 8 + 8 + 1. */
  assert_int_equal(np, 28 + 2 * 216 + 200 + 72 + 9);
  float *ana = malloc(sizeof(float) * np);
  memcpy(ana, g, sizeof(float) * np);
  size_t bad = 0, nonzero = 0;
  double worst = 0;
  for (size_t i = 0; i < np; i++) {
    float keep = w[i], h = 1e-3f;
    float *w2, *g2;
    size_t n2;
    w[i] = keep + h;
    double lp = etsim_synth__surrogate_loss(s, &d, &w2, &g2, &n2);
    w[i] = keep - h;
    double lm = etsim_synth__surrogate_loss(s, &d, &w2, &g2, &n2);
    w[i] = keep;
    double num = (lp - lm) / (2.0 * h);
    double e = fabs(num - ana[i]) / (1e-3 + fabs(num) + fabs(ana[i]));
    nonzero += fabs(ana[i]) > 1e-6;
    if (e > worst) worst = e;
    if (e > 0.02) {
      bad++;
      if (bad < 5) print_message("param %zu: analytic %.6g numeric %.6g\n", i, ana[i], num);
    }
  }
  print_message("%zu params, %zu nonzero grads, %zu off (worst %.3g)\n", np, nonzero, bad, worst);
  /* ReLU kinks may spoil a few entries; the rest must agree. */
  TU_LE(bad * 100, np);
  TU_GT(nonzero * 2, np);
  free(ana);
  etsim_synth_surrogate_free(s);
  etsim_synth_data_free(&d);
}

static void test_scores(void **state) {
  (void)state;
  double y[5] = {1, 2, 3, 4, 5}, p[5] = {2, 4, 6, 8, 10}, q[5] = {5, 4, 3, 2, 1};
  etsim_synth_scores_t sc;
  assert_int_equal(etsim_synth_score(p, y, 5, &sc), 0);
  assert_float_equal(sc.pearson, 1.0, 1e-12);
  assert_float_equal(sc.spearman, 1.0, 1e-12);
  assert_float_equal(sc.mae, 3.0, 1e-12); /* |2-1|+..+|10-5| = 15 */
  assert_int_equal(etsim_synth_score(q, y, 5, &sc), 0);
  assert_float_equal(sc.pearson, -1.0, 1e-12);
  assert_float_equal(sc.spearman, -1.0, 1e-12);
  /* Monotone but not linear: Spearman 1, Pearson below 1. */
  double e[5] = {1, 10, 100, 1000, 10000};
  assert_int_equal(etsim_synth_score(e, y, 5, &sc), 0);
  assert_float_equal(sc.spearman, 1.0, 1e-12);
  TU_LT(sc.pearson, 0.9);
  /* Ties take their mean rank: ranks of {1,1,2} are {1.5,1.5,3}; against
   * {1,2,3} the rank correlation is 0.75 / sqrt(0.5 * 2) ... = 0.8660. */
  double t[3] = {1, 1, 2}, u[3] = {1, 2, 3};
  assert_int_equal(etsim_synth_score(t, u, 3, &sc), 0);
  assert_float_equal(sc.spearman, sqrt(3.0) / 2, 1e-12);
  assert_int_equal(etsim_synth_score(t, u, 0, &sc), ETSIM_EINVAL);
}

/* Random layered DAGs whose label counts edges from category 0 into
 * category 1 plus the sinks: the first needs parent messages with the
 * node's own category, the second the child direction (A^T). */
static void make_set(etsim_synth_data_t *d, size_t n, uint64_t seed) {
  etsim_synth_data_init(d);
  d->kind = ETSIM_SYNTH_KIND_TEXT;
  d->n_ch = 1;
  d->n_cls[0] = 3;
  etsim_rng_t r;
  etsim_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) {
    uint32_t nn = 4 + (uint32_t)etsim_rng_below(&r, 12), x[16], src[64], dst[64], ne = 0;
    uint32_t outd[16] = {0};
    for (uint32_t v = 0; v < nn; v++) x[v] = (uint32_t)etsim_rng_below(&r, 3);
    for (uint32_t v = 1; v < nn; v++) {
      uint32_t k = 1 + (uint32_t)etsim_rng_below(&r, 2);
      for (uint32_t q = 0; q < k && ne < 64; q++) {
        uint32_t u = (uint32_t)etsim_rng_below(&r, v);
        int dup = 0;
        for (uint32_t e = 0; e < ne; e++) dup |= src[e] == u && dst[e] == v;
        if (dup) continue;
        src[ne] = u;
        dst[ne++] = v;
        outd[u]++;
      }
    }
    double y = 0;
    for (uint32_t e = 0; e < ne; e++) y += x[src[e]] == 0 && x[dst[e]] == 1;
    for (uint32_t v = 0; v < nn; v++) y += outd[v] == 0;
    etsim_synth_dag_t g = {nn, ne, x, src, dst, y, 0};
    assert_int_equal(etsim_synth_data_add(d, &g), 0);
  }
}

static void test_learns(void **state) {
  (void)state;
  etsim_synth_data_t tr, va, te;
  make_set(&tr, 300, 1);
  make_set(&va, 60, 2);
  make_set(&te, 100, 3);
  etsim_synth_surrogate_config_t c;
  etsim_synth_surrogate_config_default(&c);
  c.hidden = 16;
  c.mp_layers = 2;
  c.epochs = 150;
  c.patience = 40;
  c.batch = 32;
  c.lr = 3e-3f;
  etsim_synth_surrogate_t *s;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_surrogate_fit(&tr, NULL, &va, &c, NULL, NULL, &s, &err), 0);
  double pred[100], y[100];
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, pred, &err), 0);
  for (size_t i = 0; i < te.n_graphs; i++) y[i] = te.g[i].y;
  etsim_synth_scores_t sc;
  assert_int_equal(etsim_synth_score(pred, y, te.n_graphs, &sc), 0);
  print_message("test Pearson %.4f Spearman %.4f MAE %.4f\n", sc.pearson, sc.spearman, sc.mae);
  TU_GT(sc.pearson, 0.95);
  TU_LT(sc.mae, 1.0);
  /* With no message passing the label's edge part is out of reach. */
  etsim_synth_surrogate_t *s0;
  c.mp_layers = 0;
  assert_int_equal(etsim_synth_surrogate_fit(&tr, NULL, &va, &c, NULL, NULL, &s0, &err), 0);
  double pred0[100];
  assert_int_equal(etsim_synth_surrogate_predict(s0, &te, pred0, &err), 0);
  etsim_synth_scores_t sc0;
  assert_int_equal(etsim_synth_score(pred0, y, te.n_graphs, &sc0), 0);
  print_message("no message passing: Pearson %.4f MAE %.4f\n", sc0.pearson, sc0.mae);
  TU_GT(sc0.mae, 1.5 * sc.mae);
  /* Same seed, same predictions. */
  etsim_synth_surrogate_t *s2;
  c.mp_layers = 2;
  assert_int_equal(etsim_synth_surrogate_fit(&tr, NULL, &va, &c, NULL, NULL, &s2, &err), 0);
  double pred2[100];
  assert_int_equal(etsim_synth_surrogate_predict(s2, &te, pred2, &err), 0);
  assert_memory_equal(pred, pred2, sizeof pred);
  /* A category the regressor never embedded is an error naming it. */
  te.g[7].x[2] = 9;
  te.n_cls[0] = 10;
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, pred, &err), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "graph 7 node 2: category 9"));
  etsim_synth_surrogate_free(s);
  etsim_synth_surrogate_free(s0);
  etsim_synth_surrogate_free(s2);
  etsim_synth_data_free(&tr);
  etsim_synth_data_free(&va);
  etsim_synth_data_free(&te);
}

/* Progress of a fine-tune: the first callbacks' epochs, losses and
 * validation Pearsons. */
typedef struct {
  int n, epoch[4];
  double loss[4], val[4];
} ft_log_t;

static int ft_note(void *user, const etsim_synth_surrogate_progress_t *p) {
  ft_log_t *l = user;
  if (l->n < 4) {
    l->epoch[l->n] = p->epoch;
    l->loss[l->n] = p->train_loss;
    l->val[l->n] = p->val.pearson;
  }
  l->n++;
  return 0;
}

/* Pre-training then fine-tuning starts from the pre-trained weights: zero
 * epochs give its predictions bit for bit, the fine-tune's first step
 * sees exactly its loss (one batch holds the whole set), and its epoch-0
 * score is the pre-trained model's on the validation set. */
static void test_finetune(void **state) {
  (void)state;
  etsim_synth_data_t pre, tr, va, te;
  make_set(&pre, 120, 11);
  make_set(&tr, 80, 12);
  make_set(&va, 30, 13);
  make_set(&te, 50, 14);
  /* The pre-training set's labels are off by a factor, so its model is
   * wrong on the fine-tune's labels until it is fine-tuned. */
  for (size_t i = 0; i < pre.n_graphs; i++) pre.g[i].y = 2 * pre.g[i].y + 1;
  etsim_synth_surrogate_config_t c;
  etsim_synth_surrogate_config_default(&c);
  c.hidden = 8;
  c.mp_layers = 2;
  c.epochs = 30;
  c.patience = 30;
  c.batch = 128;
  c.lr = 3e-3f;
  etsim_synth_surrogate_t *s;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_surrogate_fit(&pre, NULL, &va, &c, NULL, NULL, &s, &err), 0);
  double p0[50], p1[50], y[50];
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, p0, &err), 0);
  for (size_t i = 0; i < te.n_graphs; i++) y[i] = te.g[i].y;
  float *w, *g;
  size_t np;
  double l_pre = etsim_synth__surrogate_loss(s, &tr, &w, &g, &np);
  /* Zero epochs: the model is left as it was, epoch 0 scored on va. */
  etsim_synth_surrogate_config_t f = c;
  f.epochs = 0;
  ft_log_t lg = {0};
  assert_int_equal(etsim_synth_surrogate_finetune(s, &tr, NULL, &va, &f, ft_note, &lg, &err), 0);
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, p1, &err), 0);
  assert_memory_equal(p0, p1, sizeof p0);
  assert_int_equal(lg.n, 1);
  assert_int_equal(lg.epoch[0], 0);
  double pv[30], yv[30];
  assert_int_equal(etsim_synth_surrogate_predict(s, &va, pv, &err), 0);
  for (size_t i = 0; i < va.n_graphs; i++) yv[i] = va.g[i].y;
  etsim_synth_scores_t sv;
  assert_int_equal(etsim_synth_score(pv, yv, va.n_graphs, &sv), 0);
  assert_true(lg.val[0] == sv.pearson);
  /* Fine-tune: epoch 1's loss is the pre-trained model's mean loss on tr
   * (one batch), far from a fresh model's. */
  etsim_synth_surrogate_t *fresh;
  assert_int_equal(etsim_synth__surrogate_new(&tr, &c, &fresh, &err), 0);
  double l_fresh = etsim_synth__surrogate_loss(fresh, &tr, &w, &g, &np);
  memset(&lg, 0, sizeof lg);
  assert_int_equal(etsim_synth_surrogate_finetune(s, &tr, NULL, &va, &c, ft_note, &lg, &err), 0);
  assert_int_equal(lg.epoch[1], 1);
  print_message("pre-trained loss %.6f, fine-tune epoch 1 %.6f, fresh %.6f\n",
                l_pre / (double)tr.n_graphs, lg.loss[1], l_fresh / (double)tr.n_graphs);
  assert_true(fabs(lg.loss[1] - l_pre / (double)tr.n_graphs) <= 1e-5 * lg.loss[1]);
  TU_GT(fabs(l_fresh - l_pre), 0.1 * l_pre);
  /* The fine-tuned model is better on the fine-tune's labels. */
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, p1, &err), 0);
  etsim_synth_scores_t s0, s1;
  assert_int_equal(etsim_synth_score(p0, y, te.n_graphs, &s0), 0);
  assert_int_equal(etsim_synth_score(p1, y, te.n_graphs, &s1), 0);
  print_message("test MAE pre-trained %.4f, fine-tuned %.4f\n", s0.mae, s1.mae);
  TU_LT(s1.mae, 0.7 * s0.mae);
  /* A category outside the model's vocabulary is an error naming it. */
  va.g[3].x[1] = 7;
  va.n_cls[0] = 8;
  assert_int_equal(etsim_synth_surrogate_finetune(s, &tr, NULL, &va, &c, NULL, NULL, &err),
                   ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "graph 3 node 1: category 7"));
  etsim_synth_surrogate_free(s);
  etsim_synth_surrogate_free(fresh);
  etsim_synth_data_free(&pre);
  etsim_synth_data_free(&tr);
  etsim_synth_data_free(&va);
  etsim_synth_data_free(&te);
}

static void expect_sur_error(const char *path, const char *needle) {
  etsim_synth_surrogate_t *s = NULL;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_surrogate_load(&s, path, &err), ETSIM_EFORMAT);
  assert_null(s);
  if (!strstr(err.msg, needle)) fail_msg("'%s' lacks '%s'", err.msg, needle);
}

/* The weights file: a round trip predicts and fine-tunes bit for bit as
 * the saved regressor; damage is refused with its own message. */
static void test_weights_file(void **state) {
  (void)state;
  char path[512], bad[512];
  snprintf(path, sizeof path, "%s/s.sur", tmp);
  snprintf(bad, sizeof bad, "%s/bad.sur", tmp);
  etsim_synth_data_t tr, va, te;
  make_set(&tr, 60, 21);
  make_set(&va, 20, 22);
  make_set(&te, 30, 23);
  etsim_synth_surrogate_config_t c;
  etsim_synth_surrogate_config_default(&c);
  c.hidden = 8;
  c.mp_layers = 3;
  c.epochs = 5;
  c.batch = 16;
  etsim_synth_surrogate_t *s, *s2;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_surrogate_fit(&tr, NULL, &va, &c, NULL, NULL, &s, &err), 0);
  assert_int_equal(etsim_synth_surrogate_save(s, path, &err), 0);
  assert_int_equal(etsim_synth_surrogate_load(&s2, path, &err), 0);
  TU_EQ(etsim_synth_surrogate_params(s2), etsim_synth_surrogate_params(s));
  double p[30], p2[30];
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, p, &err), 0);
  assert_int_equal(etsim_synth_surrogate_predict(s2, &te, p2, &err), 0);
  assert_memory_equal(p, p2, sizeof p);
  /* Fine-tuning either gives the same regressor (f has the default width:
   * _finetune uses the model's). */
  etsim_synth_surrogate_config_t f;
  etsim_synth_surrogate_config_default(&f);
  f.epochs = 4;
  f.batch = 16;
  assert_int_equal(etsim_synth_surrogate_finetune(s, &tr, NULL, &va, &f, NULL, NULL, &err), 0);
  assert_int_equal(etsim_synth_surrogate_finetune(s2, &tr, NULL, &va, &f, NULL, NULL, &err), 0);
  double q[30];
  assert_int_equal(etsim_synth_surrogate_predict(s, &te, q, &err), 0);
  assert_int_equal(etsim_synth_surrogate_predict(s2, &te, p2, &err), 0);
  assert_memory_equal(q, p2, sizeof q);
  TU_NE(memcmp(p, q, sizeof p), 0); /* the fine-tune moved it */
  size_t n = 0;
  unsigned char *b = tu_read(path, &n);
  assert_non_null(b);
  /* 56-byte header, the parameters, an 8-byte checksum. */
  TU_EQ(n, 56 + 4 * etsim_synth_surrogate_params(s2) + 8);
  tu_write(bad, b, n - 1);
  expect_sur_error(bad, "truncated at byte");
  tu_write(bad, b, 20);
  expect_sur_error(bad, "truncated at byte 20");
  b[n - 20] ^= 0x40;
  tu_write(bad, b, n);
  expect_sur_error(bad, "checksum mismatch");
  b[n - 20] ^= 0x40;
  b[8] = 2;
  tu_write(bad, b, n);
  expect_sur_error(bad, "format version 2, this etsim reads version 1");
  b[8] = 1;
  b[16] = 0; /* hidden 0 */
  tu_write(bad, b, n);
  expect_sur_error(bad, "header: surrogate configuration out of range");
  b[16] = 8;
  b[0] = 'X';
  tu_write(bad, b, n);
  expect_sur_error(bad, "bad magic");
  free(b);
  etsim_synth_surrogate_free(s);
  etsim_synth_surrogate_free(s2);
  etsim_synth_data_free(&tr);
  etsim_synth_data_free(&va);
  etsim_synth_data_free(&te);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gradient),     cmocka_unit_test(test_scores),
      cmocka_unit_test(test_learns),       cmocka_unit_test(test_finetune),
      cmocka_unit_test(test_weights_file),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
