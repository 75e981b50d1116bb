/*
 * test_train.c — the generator learns a toy distribution down to its
 * closed-form entropy, samples valid DAGs from it, is deterministic for a
 * seed, and its model file round-trips and rejects damaged copies.
 *
 * Toy data: chains of 3 or 5 nodes (as many of each), node i of a chain has
 * category i mod 3.  Given the prefix, everything is determined except
 * whether a chain stops after 3 nodes: there p(stop) = 1/2, both lengths
 * being equally common.  Every step weighs the same (the count loss of a
 * graph is its sum over steps divided by the data's mean number of steps,
 * (4 + 6) / 2 = 5), so the smallest mean count loss is the entropy of that
 * one decision over 5: ln 2 / 5 = 0.13863.  Attribute and edge losses can
 * reach 0.
 */
#include "test_util.h"

#include "synth/synth_int.h"

#include <math.h>

static etsim_synth_model_t *model; /* trained once, shared by the tests */
static etsim_synth_data_t toy;

static void make_toy(etsim_synth_data_t *d) {
  etsim_synth_data_init(d);
  d->kind = ETSIM_SYNTH_KIND_TEXT;
  d->n_ch = 1;
  d->n_cls[0] = 3;
  for (int i = 0; i < 16; i++) {
    uint32_t L = i % 2 ? 5 : 3, x[5], s[4], t[4];
    for (uint32_t v = 0; v < L; v++) x[v] = v % 3;
    for (uint32_t k = 0; k + 1 < L; k++) {
      s[k] = k;
      t[k] = k + 1;
    }
    etsim_synth_dag_t g = {L, L - 1, x, s, t, 1.0, 0};
    assert_int_equal(etsim_synth_data_add(d, &g), 0);
  }
}

static void toy_cfg(etsim_synth_config_t *c) {
  etsim_synth_config_default(c);
  c->hidden = 16;
  c->pair_hidden = 8;
  c->t_attr = 16;
  c->t_edge = 8;
  c->epochs = 150;
  c->batch = 4;
  c->lr = 5e-3f;
  c->seed = 3;
}

static int setup(void **state) {
  (void)state;
  make_toy(&toy);
  etsim_synth_config_t c;
  toy_cfg(&c);
  etsim_error_t err = {0};
  /* Validate on the training set itself: the best epoch is the best fit. */
  if (etsim_synth_train(&toy, &toy, &c, NULL, NULL, &model, &err)) {
    fprintf(stderr, "train: %s\n", err.msg);
    return -1;
  }
  return tu_setup(state);
}

static int teardown(void **state) {
  etsim_synth_model_free(model);
  etsim_synth_data_free(&toy);
  return tu_teardown(state);
}

static void test_learns_toy(void **state) {
  (void)state;
  double total, cnt, attr, edge;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_model_loss(model, &toy, 11, &total, &cnt, &attr, &edge, &err), 0);
  double h = log(2.0) / 5;
  print_message("count loss %.5f (optimum %.5f), attr %.4f, edge %.4f\n", cnt, h, attr, edge);
  /* No model beats the optimum of the stop decision on this data... */
  TU_GT(cnt, h - 1e-3);
  /* ...and this one gets close to it and to zero for the rest. */
  TU_LT(cnt, h + 0.01);
  TU_LT(attr, 0.05);
  TU_LT(edge, 0.05);
}

static void test_samples_valid_and_learned(void **state) {
  (void)state;
  etsim_synth_data_t out;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_sample(model, 200, NULL, 5, &out, &err), 0);
  assert_int_equal(out.n_graphs, 200);
  int n3 = 0, n5 = 0, pattern = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    const etsim_synth_dag_t *g = &out.g[i];
    assert_int_equal(etsim_synth_dag_valid(&out, g), 1);
    uint32_t lay[64];
    TU_LT(g->n_nodes, 64);
    int L = etsim_synth_layers(g, lay, NULL);
    TU_GE(L, 1);
    int chain = g->n_edges + 1 == g->n_nodes && (uint32_t)L == g->n_nodes;
    n3 += chain && L == 3;
    n5 += chain && L == 5;
    int ok = 1;
    for (uint32_t v = 0; v < g->n_nodes; v++) ok &= g->x[v] == (lay[v] - 1) % 3;
    pattern += ok;
  }
  print_message("chains of 3: %d, of 5: %d, attribute pattern: %d of 200\n", n3, n5, pattern);
  TU_GE(n3 + n5, 190);
  /* p(stop after 3) = 1/2: n3 ~ Binomial(200, 0.5), mean 100, sd 7.1. */
  TU_GE(n3, 75);
  TU_LE(n3, 125);
  TU_GE(pattern, 190);
  etsim_synth_data_free(&out);
}

static int same_data(const etsim_synth_data_t *a, const etsim_synth_data_t *b) {
  if (a->n_graphs != b->n_graphs) return 0;
  for (size_t i = 0; i < a->n_graphs; i++) {
    const etsim_synth_dag_t *x = &a->g[i], *y = &b->g[i];
    if (x->n_nodes != y->n_nodes || x->n_edges != y->n_edges ||
        memcmp(x->x, y->x, sizeof(uint32_t) * x->n_nodes * a->n_ch) ||
        memcmp(x->src, y->src, sizeof(uint32_t) * x->n_edges) ||
        memcmp(x->dst, y->dst, sizeof(uint32_t) * x->n_edges))
      return 0;
  }
  return 1;
}

/* Models a and b (b loaded from a file, freed here) sample the same 20
 * DAGs for seed 2. */
static void same_samples(etsim_synth_model_t *a, etsim_synth_model_t *b) {
  etsim_error_t err = {0};
  etsim_synth_data_t s1, s2;
  assert_int_equal(etsim_synth_sample(a, 20, NULL, 2, &s1, &err), 0);
  assert_int_equal(etsim_synth_sample(b, 20, NULL, 2, &s2, &err), 0);
  assert_true(same_data(&s1, &s2));
  etsim_synth_data_free(&s1);
  etsim_synth_data_free(&s2);
  etsim_synth_model_free(b);
}

static void test_determinism(void **state) {
  (void)state;
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.epochs = 5;
  etsim_synth_model_t *a, *b, *d;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_train(&toy, NULL, &c, NULL, NULL, &a, &err), 0);
  assert_int_equal(etsim_synth_train(&toy, NULL, &c, NULL, NULL, &b, &err), 0);
  c.seed = 4;
  assert_int_equal(etsim_synth_train(&toy, NULL, &c, NULL, NULL, &d, &err), 0);
  assert_int_equal(a->n_params, b->n_params);
  assert_memory_equal(a->w, b->w, sizeof(float) * a->n_params);
  assert_memory_not_equal(a->w, d->w, sizeof(float) * a->n_params);
  etsim_synth_data_t s1, s2, s3;
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 9, &s1, &err), 0);
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 9, &s2, &err), 0);
  assert_int_equal(etsim_synth_sample(a, 30, NULL, 10, &s3, &err), 0);
  assert_true(same_data(&s1, &s2));
  assert_false(same_data(&s1, &s3));
  etsim_synth_data_free(&s1);
  etsim_synth_data_free(&s2);
  etsim_synth_data_free(&s3);
  etsim_synth_model_free(a);
  etsim_synth_model_free(b);
  etsim_synth_model_free(d);
}

static unsigned char *slurp(const char *path, size_t *n) { return tu_read(path, n); }

static void spit(const char *path, const unsigned char *b, size_t n) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(b, 1, n, fp), n);
  fclose(fp);
}

static void expect_load_error(const char *path, const char *needle) {
  etsim_synth_model_t *m = NULL;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_model_load(&m, path, &err), ETSIM_EFORMAT);
  assert_null(m);
  if (!strstr(err.msg, needle)) fail_msg("error '%s' does not mention '%s'", err.msg, needle);
}

/* Where the version-6 label block starts in m's file (after the bin
 * values). */
static size_t tables_end(const etsim_synth_model_t *m) {
  return 8 + 4 + 4 + 16 * 4 + 7 * 8 + sizeof(float) * m->sum_cls +
         sizeof(double) * ETSIM_SYNTH_BIN_VALUES;
}

/* The version-7 file b (n bytes) of m written as version ver (5 or 6) to
 * path: without the 8 bytes of the communication-run rule (version 7) and
 * for version 5 the 32 of the label components, re-checksummed. */
static void downgrade(const etsim_synth_model_t *m, const unsigned char *b, size_t n, uint32_t ver,
                      const char *path) {
  size_t off = tables_end(m), cut = ver == 5 ? 40 : 8;
  unsigned char *o = malloc(n);
  assert_non_null(o);
  memcpy(o, b, off);
  if (ver == 6) memcpy(o + off, b + off, 32);
  size_t keep = ver == 6 ? 32 : 0;
  memcpy(o + off + keep, b + off + 40, n - 8 - off - 40);
  memcpy(o + 8, &ver, 4);
  uint64_t h = etsim_hash_bytes(o, n - 8 - cut);
  memcpy(o + n - 8 - cut, &h, 8);
  spit(path, o, n - cut);
  free(o);
}

static void test_model_file(void **state) {
  (void)state;
  char path[512], bad[512];
  snprintf(path, sizeof path, "%s/toy.model", tmp);
  snprintf(bad, sizeof bad, "%s/bad.model", tmp);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_model_save(model, path, &err), 0);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  assert_int_equal(m2->n_params, model->n_params);
  assert_memory_equal(m2->w, model->w, sizeof(float) * model->n_params);
  same_samples(model, m2);

  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  assert_non_null(b);
  TU_EQ(b[8], 7); /* without FiLM and the edge scale: still version 7 */
  spit(bad, b, n / 2);
  expect_load_error(bad, "truncated");
  spit(bad, b, 10);
  expect_load_error(bad, "truncated");
  /* A version-3 file (before the context histograms) has a different
   * header and parameter layout, and a version-4 one no depth-progress
   * context: refused by version. */
  b[8] = 3; /* version field */
  spit(bad, b, n);
  expect_load_error(bad, "version 3, this etsim reads versions 5 to 14");
  b[8] = 4;
  spit(bad, b, n);
  expect_load_error(bad, "version 4, this etsim reads versions 5 to 14");
  b[8] = 15;
  spit(bad, b, n);
  expect_load_error(bad, "version 15, this etsim reads versions 5 to 14");
  /* A version-6 file (before the class recency and the communication-run
   * rule: 8 bytes fewer) loads and samples the same DAGs; a version-5 file
   * (before the second label component: 32 bytes fewer still) loads as a
   * one-component model and samples the same DAGs. */
  b[8] = 7;
  uint32_t nlab;
  memcpy(&nlab, b + tables_end(model), 4);
  TU_EQ(nlab, 1);
  for (uint32_t v = 6; v >= 5; v--) {
    downgrade(model, b, n, v, bad);
    assert_int_equal(etsim_synth_model_load(&m2, bad, &err), 0);
    TU_EQ(etsim_synth_model_n_labels(m2), 1);
    TU_EQ(m2->comm_rule, 0);
    assert_memory_equal(m2->w, model->w, sizeof(float) * model->n_params);
    same_samples(model, m2);
  }
  b[0] = 'X';
  spit(bad, b, n);
  expect_load_error(bad, "not an etsim synth model");
  b[0] = 'E';
  uint32_t keep, big = 4096; /* hidden width: a huge model, a small file */
  memcpy(&keep, b + 16, 4);
  memcpy(b + 16, &big, 4);
  spit(bad, b, n);
  expect_load_error(bad, "parameters stored, the header implies");
  memcpy(b + 16, &keep, 4);
  b[n - 20] ^= 0x40; /* a parameter byte */
  spit(bad, b, n);
  expect_load_error(bad, "checksum");
  free(b);
}

/* A second label component conditions what the first cannot: the toy's
 * chains with y = 1 for all and y2 = their length.  Conditioned on y2 = 3
 * or 5 the samples are chains of that length, where the one-label model
 * above draws either half the time.  A label of two components is refused
 * by a one-component model, and the model file keeps the second. */
static void test_two_labels(void **state) {
  (void)state;
  etsim_synth_data_t d;
  make_toy(&d);
  d.n_labels = 2;
  for (size_t i = 0; i < d.n_graphs; i++) d.g[i].y2 = d.g[i].n_nodes;
  etsim_synth_config_t c;
  toy_cfg(&c);
  etsim_synth_model_t *m;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(etsim_synth_model_n_labels(m), 2);
  double lab[2 * 200];
  for (int i = 0; i < 200; i++) lab[2 * i] = 1, lab[2 * i + 1] = i < 100 ? 3 : 5;
  etsim_synth_data_t out;
  assert_int_equal(etsim_synth_sample_ex(m, 200, lab, 2, 5, 1, NULL, &out, &err), 0);
  TU_EQ(out.n_labels, 2);
  int n3 = 0, n5 = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    const etsim_synth_dag_t *g = &out.g[i];
    TU_EQ(g->y2, lab[2 * i + 1]);
    uint32_t lay[64];
    TU_LT(g->n_nodes, 64);
    int L = etsim_synth_layers(g, lay, NULL);
    int chain = g->n_edges + 1 == g->n_nodes && (uint32_t)L == g->n_nodes;
    if (i < 100) n3 += chain && L == 3;
    else n5 += chain && L == 5;
  }
  print_message("y2 = 3: %d chains of 3 of 100; y2 = 5: %d chains of 5 of 100\n", n3, n5);
  /* Binomial(100, 1/2) exceeds 75 with probability 3e-7. */
  TU_GE(n3, 90);
  TU_GE(n5, 90);
  etsim_synth_data_free(&out);

  char path[512];
  snprintf(path, sizeof path, "%s/two.model", tmp);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_save(m, path, &err), 0);
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(etsim_synth_model_n_labels(m2), 2);
  assert_float_equal(m2->y2_mean, m->y2_mean, 0);
  assert_float_equal(m2->y2_std, m->y2_std, 0);
  assert_float_equal(m2->y2_median, m->y2_median, 0);
  TU_EQ(m2->y2_log, m->y2_log);
  etsim_synth_data_t s1, s2;
  assert_int_equal(etsim_synth_sample_ex(m, 20, lab + 190, 2, 2, 1, NULL, &s1, &err), 0);
  assert_int_equal(etsim_synth_sample_ex(m2, 20, lab + 190, 2, 2, 1, NULL, &s2, &err), 0);
  assert_true(same_data(&s1, &s2));
  etsim_synth_data_free(&s1);
  etsim_synth_data_free(&s2);
  /* Only the first component given: the second at its training median. */
  double one[1] = {1}, both[2] = {1, m->y2_median};
  assert_int_equal(etsim_synth_sample_ex(m, 1, one, 1, 4, 1, NULL, &s1, &err), 0);
  assert_int_equal(etsim_synth_sample_ex(m, 1, both, 2, 4, 1, NULL, &s2, &err), 0);
  assert_true(same_data(&s1, &s2));
  TU_EQ(s1.g[0].y2, m->y2_median);
  etsim_synth_data_free(&s1);
  etsim_synth_data_free(&s2);
  etsim_synth_model_free(m2);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);

  assert_int_equal(etsim_synth_sample_ex(model, 2, lab, 2, 1, 1, NULL, &out, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "label");
}

/* The period of a trace's layers, which the class recency (version 7,
 * ETSIM_SYNTH_CTX_RECENT) gives the denoisers.  Toy traces: chains of one
 * node per layer, class 1 ("collective") then two of class 0
 * ("compute"), over and over, as in a ZeRO-3 backward pass; 6 to 12
 * layers, the period starting at any of its three phases.  With no
 * message passing the context holds the class counts, the last layer's
 * class and the depth, and those cannot tell phase 0 from phase 2 after
 * 3k nodes: both have k of class 1 and 2k of class 0 and end in class 0,
 * and one goes on with 1, the other with 0 (so chains of 3k nodes or
 * more break the rule about half the time).  The recency (class 1 two
 * layers ago against one) settles it. */
static void make_period(etsim_synth_data_t *d) {
  etsim_synth_data_init(d);
  d->kind = ETSIM_SYNTH_KIND_TRACE;
  d->n_ch = 1;
  d->n_cls[0] = 2;
  for (int i = 0; i < 42; i++) {
    uint32_t L = 6 + (uint32_t)(i / 3) % 7, phase = (uint32_t)i % 3, x[12], s[11], t[11];
    for (uint32_t v = 0; v < L; v++) x[v] = (v + phase) % 3 != 0 ? 0 : 1;
    for (uint32_t k = 0; k + 1 < L; k++) {
      s[k] = k;
      t[k] = k + 1;
    }
    etsim_synth_dag_t g = {L, L - 1, x, s, t, 1.0, 0};
    assert_int_equal(etsim_synth_data_add(d, &g), 0);
  }
}

/* Samples of 200 DAGs whose layers follow the period: one node per layer,
 * every class-1 layer followed by two class-0 layers (or the end), and no
 * run of class 0 longer than 2. */
static int period_kept(etsim_synth_model_t *m, uint64_t seed) {
  etsim_synth_data_t out;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_sample(m, 200, NULL, seed, &out, &err), 0);
  int ok = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    const etsim_synth_dag_t *g = &out.g[i];
    uint32_t lay[64];
    TU_LT(g->n_nodes, 64);
    int L = etsim_synth_layers(g, lay, NULL), good = (uint32_t)L == g->n_nodes, run = 0;
    for (uint32_t v = 0; good && v < g->n_nodes; v++) {
      good &= lay[v] == v + 1; /* generation order is layer order */
      if (g->x[v] == 0) {
        good &= ++run <= 2;
      } else {
        good &= run == 2 || (uint32_t)run == v; /* or only class 0 before it */
        run = 0;
      }
    }
    ok += good;
  }
  etsim_synth_data_free(&out);
  return ok;
}

static void test_class_recency(void **state) {
  (void)state;
  etsim_synth_data_t d;
  make_period(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.mp_layers = 0;
  c.epochs = 120;
  etsim_error_t err = {0};
  etsim_synth_model_t *with, *without;
  c.ctx_hist = ETSIM_SYNTH_HIST_DENOISE | ETSIM_SYNTH_CTX_PROGRESS | ETSIM_SYNTH_CTX_RECENT;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &with, &err), 0);
  c.ctx_hist = ETSIM_SYNTH_HIST_DENOISE | ETSIM_SYNTH_CTX_PROGRESS;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &without, &err), 0);
  TU_EQ(etsim_synth__dim_ctx(with), etsim_synth__dim_ctx(without) + 2);
  int a = period_kept(with, 6), b = period_kept(without, 6);
  print_message("period kept: %d of 200 with the class recency, %d without\n", a, b);
  TU_GE(a, 190);
  TU_LT(b, 150);

  /* The model file keeps the flag (version 7); a version-6 file cannot
   * hold it and is refused, and one without it loads. */
  char path[512];
  snprintf(path, sizeof path, "%s/recent.model", tmp);
  assert_int_equal(etsim_synth_model_save(with, path, &err), 0);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.ctx_hist, with->cfg.ctx_hist);
  etsim_synth_data_t s1, s2;
  assert_int_equal(etsim_synth_sample(with, 20, NULL, 2, &s1, &err), 0);
  assert_int_equal(etsim_synth_sample(m2, 20, NULL, 2, &s2, &err), 0);
  assert_true(same_data(&s1, &s2));
  etsim_synth_data_free(&s1);
  etsim_synth_data_free(&s2);
  etsim_synth_model_free(m2);
  size_t n = 0;
  unsigned char *b7 = slurp(path, &n);
  assert_non_null(b7);
  downgrade(with, b7, n, 6, path);
  free(b7);
  expect_load_error(path, "header values out of range");
  etsim_synth_model_free(with);
  etsim_synth_model_free(without);
  etsim_synth_data_free(&d);
}

/* Four-channel toy traces: chains of one node per layer, collectives
 * (all-gather, size bin 20) and GEMMs (duration bin 5) in the period
 * given ('X' a collective, 'C' a GEMM), 6 to 12 layers, any phase. */
static void make_trace_period(etsim_synth_data_t *d, const char *period) {
  etsim_synth_data_init(d);
  etsim_synth__trace_layout(d);
  uint32_t P = (uint32_t)strlen(period);
  for (int i = 0; i < 42; i++) {
    uint32_t L = 6 + (uint32_t)(i / 3) % 7, phase = (uint32_t)i % P, x[12 * 4], s[11], t[11];
    for (uint32_t v = 0; v < L; v++) {
      int coll = period[(v + phase) % P] == 'X';
      x[4 * v] = coll ? ETSIM_SYNTH_OP_COLL : ETSIM_SYNTH_OP_GEMM;
      x[4 * v + 1] = coll ? 1 + ETSIM_COLL_ALL_GATHER : 0;
      x[4 * v + 2] = coll ? 0 : 5;
      x[4 * v + 3] = coll ? 20 : 0;
    }
    for (uint32_t k = 0; k + 1 < L; k++) {
      s[k] = k;
      t[k] = k + 1;
    }
    etsim_synth_dag_t g = {L, L - 1, x, s, t, 1.0, 0};
    assert_int_equal(etsim_synth_data_add(d, &g), 0);
  }
}

/* The longest run of layers made of communication nodes only. */
static uint32_t longest_comm_run(const etsim_synth_data_t *d) {
  uint32_t best = 0;
  for (size_t i = 0; i < d->n_graphs; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    uint32_t lay[512], comm[512] = {0}, size[512] = {0};
    TU_LT(g->n_nodes, 512);
    int L = etsim_synth_layers(g, lay, NULL);
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      size[lay[v]]++;
      comm[lay[v]] += etsim_synth__is_comm(g->x[(size_t)v * d->n_ch]);
    }
    for (int l = 1, run = 0; l <= L; l++) {
      run = comm[l] == size[l] ? run + 1 : 0;
      if ((uint32_t)run > best) best = (uint32_t)run;
    }
  }
  return best;
}

/* The communication-run rule (model version 7): a trace model records the
 * longest run of communication-only layers in training (1 in X C C, 2 in
 * X X C), and sampling with the rules on never makes a longer one, where
 * a barely trained model left to itself does; the model file keeps it. */
static void test_comm_run_rule(void **state) {
  (void)state;
  etsim_synth_data_t d, out;
  etsim_synth_config_t c;
  toy_cfg(&c);
  etsim_error_t err = {0};
  etsim_synth_model_t *m;
  make_trace_period(&d, "XXC");
  assert_int_equal(etsim_synth__model_new(&d, &c, &m, &err), 0);
  TU_EQ(m->comm_rule, 1);
  TU_EQ(m->max_comm_run, 2);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);

  make_trace_period(&d, "XCC");
  TU_EQ(longest_comm_run(&d), 1);
  c.epochs = 2;
  /* Without the class recency, so that the version-6 copy below loads:
   * the rule does not depend on it. */
  c.ctx_hist = ETSIM_SYNTH_HIST_DENOISE | ETSIM_SYNTH_CTX_PROGRESS;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(m->comm_rule, 1);
  TU_EQ(m->max_comm_run, 1);
  etsim_synth_sample_stats_t st = {0};
  assert_int_equal(etsim_synth_sample_ex(m, 100, NULL, 1, 8, 0, &st, &out, &err), 0);
  uint32_t free_run = longest_comm_run(&out);
  TU_EQ(st.run_cut, 0);
  etsim_synth_data_free(&out);
  assert_int_equal(etsim_synth_sample_ex(m, 100, NULL, 1, 8, 1, &st, &out, &err), 0);
  uint32_t ruled = longest_comm_run(&out);
  print_message("longest communication run: %u without the rule, %u with (%zu layers held)\n",
                free_run, ruled, st.run_cut);
  TU_GE(free_run, 2);
  TU_EQ(ruled, 1);
  TU_GT(st.run_cut, 0);
  etsim_synth_data_free(&out);

  char path[512];
  snprintf(path, sizeof path, "%s/rule.model", tmp);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_save(m, path, &err), 0);
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->comm_rule, 1);
  TU_EQ(m2->max_comm_run, 1);
  etsim_synth_model_free(m2);
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  assert_non_null(b);
  downgrade(m, b, n, 6, path); /* an older trace model: no rule */
  free(b);
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->comm_rule, 0);
  etsim_synth_model_free(m2);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

static void test_posterior(void **state) {
  (void)state;
  /* The sampler's closed form against the O(K^2) definition. */
  enum { K = 5 };
  float ph[K] = {0.1f, 0.4f, 0.2f, 0.25f, 0.05f};
  float mg[K] = {0.3f, 0.1f, 0.2f, 0.15f, 0.25f};
  double ab[9], al[9];
  etsim_synth__schedule(8, ab, al);
  for (int t = 1; t <= 8; t++)
    for (int k = 0; k < K; k++) {
      float out[K];
      etsim_synth__posterior(K, ph, mg, k, al[t], ab[t], ab[t - 1], out);
      double ref[K], s = 0, so = 0;
      for (int j = 0; j < K; j++) {
        double qt = al[t] * (j == k) + (1 - al[t]) * mg[k];
        double acc = 0;
        for (int c = 0; c < K; c++) {
          double qs = ab[t - 1] * (c == j) + (1 - ab[t - 1]) * mg[j];
          double qb = ab[t] * (c == k) + (1 - ab[t]) * mg[k];
          acc += ph[c] * qs / qb;
        }
        ref[j] = qt * acc;
        s += ref[j];
      }
      for (int j = 0; j < K; j++) {
        assert_float_equal(out[j], ref[j] / s, 1e-5);
        so += out[j];
      }
      assert_float_equal(so, 1.0, 1e-5);
      if (t == 1) /* abar_0 = 1: the last step returns the prediction */
        for (int j = 0; j < K; j++) assert_float_equal(out[j], ph[j], 1e-5);
    }
}

/* Rows of the first attribute and edge layers that read the label
 * features (the context starts after the 2H node inputs; the label after
 * its H + SY_FEAT). */
static float *label_rows(nn_linear_t *l, const etsim_synth_model_t *m) {
  return l->w + (size_t)(3 * m->cfg.hidden + SY_FEAT) * l->out;
}

/* First-node categories that match the label of the toy below. */
static int first_matches(const etsim_synth_data_t *d, const double *lab) {
  int ok = 0;
  for (size_t i = 0; i < d->n_graphs; i++) ok += d->g[i].x[0] == (lab[i] > 4 ? 1u : 0u);
  return ok;
}

/* The toy of test_guidance below: chains whose first category is the
 * label's (0 for y = 3, 1 for y = 5), the rest i mod 3 after it. */
static void make_label_toy(etsim_synth_data_t *d) {
  make_toy(d);
  for (size_t i = 0; i < d->n_graphs; i++) {
    etsim_synth_dag_t *g = &d->g[i];
    g->y = g->n_nodes;
    for (uint32_t v = 0; v < g->n_nodes; v++) g->x[v] = (v + (g->n_nodes == 5)) % 3;
  }
}

/* Classifier-free guidance (etsim_synth_model_set_guidance).
 * (1) w = 0 samples exactly as without guidance;
 * (2) with the denoisers' label weights zeroed, the null-label denoisers
 *     equal the conditional ones and (1 + w)·c − w·c = c exactly, so w = 3
 *     samples the unguided DAGs bit for bit;
 * (3) toy chains whose first category is the label's (0 for y = 3, 1 for
 *     y = 5; the rest i mod 3 after it), trained 10 epochs with
 *     label_drop 0.3, an under-trained model: its first category follows
 *     the label in 165 of 200 samples unguided, 182 at w = 1 and 192 at
 *     w = 3. */
static void test_guidance(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_data_t s0, s1;
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 6, &s0, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(model, 0, &err), 0);
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 6, &s1, &err), 0);
  assert_true(same_data(&s0, &s1));
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
  assert_int_equal(etsim_synth_model_set_guidance(model, -1, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "guidance");
  assert_int_equal(etsim_synth_model_set_guidance(model, 21, &err), ETSIM_EINVAL);
  /* (2) */
  size_t na = (size_t)SY_DY * model->a1.out, ne = (size_t)SY_DY * model->ed.out;
  float *keep = malloc(sizeof(float) * (na + ne));
  assert_non_null(keep);
  memcpy(keep, label_rows(&model->a1, model), sizeof(float) * na);
  memcpy(keep + na, label_rows(&model->ed, model), sizeof(float) * ne);
  memset(label_rows(&model->a1, model), 0, sizeof(float) * na);
  memset(label_rows(&model->ed, model), 0, sizeof(float) * ne);
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 6, &s0, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(model, 3, &err), 0);
  assert_int_equal(etsim_synth_sample(model, 30, NULL, 6, &s1, &err), 0);
  assert_true(same_data(&s0, &s1));
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
  memcpy(label_rows(&model->a1, model), keep, sizeof(float) * na);
  memcpy(label_rows(&model->ed, model), keep + na, sizeof(float) * ne);
  assert_int_equal(etsim_synth_model_set_guidance(model, 0, &err), 0);
  free(keep);
  /* (3) */
  etsim_synth_data_t d;
  make_label_toy(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.label_drop = 0.3f;
  c.epochs = 10;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  double lab[200];
  for (int i = 0; i < 200; i++) lab[i] = i % 2 ? 5 : 3;
  int ok[3];
  double ws[3] = {0, 1, 3};
  etsim_synth_data_t out[3];
  for (int k = 0; k < 3; k++) {
    assert_int_equal(etsim_synth_model_set_guidance(m, ws[k], &err), 0);
    assert_int_equal(etsim_synth_sample(m, 200, lab, 8, &out[k], &err), 0);
    ok[k] = first_matches(&out[k], lab);
    for (size_t i = 0; i < out[k].n_graphs; i++)
      assert_int_equal(etsim_synth_dag_valid(&out[k], &out[k].g[i]), 1);
  }
  print_message("first category follows the label: w = 0: %d, w = 1: %d, w = 3: %d of 200\n", ok[0],
                ok[1], ok[2]);
  assert_false(same_data(&out[0], &out[2]));
  TU_GT(ok[1], ok[0]);
  TU_GE(ok[2], ok[0] + 10);
  for (int k = 0; k < 3; k++) etsim_synth_data_free(&out[k]);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* 30 samples of m at attribute guidance wa and edge guidance we (we < 0:
 * not set, the edge denoiser follows wa), labels 3 and 5 in turn. */
static void guided(etsim_synth_model_t *m, double wa, double we, etsim_synth_data_t *out) {
  etsim_error_t err = {0};
  double lab[30];
  for (int i = 0; i < 30; i++) lab[i] = i % 2 ? 5 : 3;
  assert_int_equal(etsim_synth_model_set_guidance(m, wa, &err), 0);
  m->guidance_edge_set = 0;
  if (we >= 0) assert_int_equal(etsim_synth_model_set_guidance_edge(m, we, &err), 0);
  assert_int_equal(etsim_synth_sample(m, 30, lab, 6, out, &err), 0);
}

/* The edge denoiser's own guidance weight
 * (etsim_synth_model_set_guidance_edge), on the label toy of
 * test_guidance trained 5 epochs with label_drop 0.3 (its edge
 * probabilities are far from 0 and 1):
 * (1) the same weight as the attribute denoiser's samples as without it,
 *     and edge weight 0 differs;
 * (2) with the edge denoiser's label weights zeroed, its guided logits are
 *     its unguided ones exactly, so any edge weight samples the DAGs of
 *     attribute guidance 3 alone, bit for bit;
 * (3) with the attribute denoiser's label weights zeroed instead, edge
 *     weight 3 with attribute weight 0 samples exactly the DAGs of weight
 *     3 for both, and these differ from the unguided ones: the edge weight
 *     acts on the edge denoiser and on nothing else. */
static void test_guidance_edge(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_data_t d, s0, s1;
  make_label_toy(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.label_drop = 0.3f;
  c.epochs = 5;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  etsim_synth_data_free(&d);
  assert_int_equal(etsim_synth_model_set_guidance_edge(m, -1, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "edge guidance");
  assert_int_equal(etsim_synth_model_set_guidance_edge(m, 20.5, &err), ETSIM_EINVAL);
  /* (1) */
  guided(m, 2, -1, &s0);
  guided(m, 2, 2, &s1);
  assert_true(same_data(&s0, &s1));
  etsim_synth_data_free(&s1);
  guided(m, 2, 0, &s1);
  assert_false(same_data(&s0, &s1));
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
  /* (2) */
  size_t na = (size_t)SY_DY * m->a1.out, ne = (size_t)SY_DY * m->ed.out;
  float *keep = malloc(sizeof(float) * ne);
  assert_non_null(keep);
  memcpy(keep, label_rows(&m->ed, m), sizeof(float) * ne);
  memset(label_rows(&m->ed, m), 0, sizeof(float) * ne);
  guided(m, 3, -1, &s0);
  for (int k = 0; k < 2; k++) {
    guided(m, 3, k ? 7 : 0, &s1);
    assert_true(same_data(&s0, &s1));
    etsim_synth_data_free(&s1);
  }
  etsim_synth_data_free(&s0);
  /* (3) */
  memcpy(label_rows(&m->ed, m), keep, sizeof(float) * ne);
  memset(label_rows(&m->a1, m), 0, sizeof(float) * na);
  guided(m, 3, -1, &s0);
  guided(m, 0, 3, &s1);
  assert_true(same_data(&s0, &s1));
  etsim_synth_data_free(&s1);
  guided(m, 0, -1, &s1);
  assert_false(same_data(&s0, &s1));
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
  free(keep);
  etsim_synth_model_free(m);
}

/* A model with an optional part, saved to path (tmp/name.model): the
 * file has the version byte `version` and the flag word `flags`, loads
 * back with label_film and label_edge as given, the same parameters and
 * samples; the same file claiming version - 1 is refused. */
static void check_model_file(etsim_synth_model_t *m, const char *name, unsigned version,
                             unsigned flags, int film, int edge, char path[512]) {
  etsim_error_t err = {0};
  char bad[512];
  snprintf(path, 512, "%s/%s.model", tmp, name);
  snprintf(bad, sizeof bad, "%s/%s_bad.model", tmp, name);
  assert_int_equal(etsim_synth_model_save(m, path, &err), 0);
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  assert_non_null(b);
  TU_EQ(b[8], version);
  uint32_t word;
  memcpy(&word, b + 8 + 4 + 4 + 5 * 4, 4); /* the context-flag word */
  TU_EQ(word, flags);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.label_film, film);
  TU_EQ(m2->cfg.label_edge, edge);
  assert_int_equal(m2->n_params, m->n_params);
  assert_memory_equal(m2->w, m->w, sizeof(float) * m->n_params);
  same_samples(m, m2); /* frees m2 */
  b[8] = (unsigned char)(version - 1);
  spit(bad, b, n);
  expect_load_error(bad, "header values out of range");
  free(b);
}

/* FiLM label conditioning (config label_film, model version 8).
 * (1) The label toy of test_guidance trained 10 epochs (under-trained)
 *     without and with FiLM, same seed: the first category follows the
 *     label in more of 200 samples with FiLM (measured below), unguided.
 * (2) The FiLM model file is version 8 and round-trips (parameters and
 *     samples); a version-7 file claiming the FiLM flag is refused. */
static void test_film(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_data_t d;
  make_label_toy(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.epochs = 10;
  double lab[200];
  for (int i = 0; i < 200; i++) lab[i] = i % 2 ? 5 : 3;
  int ok[2];
  etsim_synth_model_t *m[2];
  for (int k = 0; k < 2; k++) {
    c.label_film = k;
    assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m[k], &err), 0);
    etsim_synth_data_t out;
    assert_int_equal(etsim_synth_sample(m[k], 200, lab, 8, &out, &err), 0);
    ok[k] = first_matches(&out, lab);
    for (size_t i = 0; i < out.n_graphs; i++)
      assert_int_equal(etsim_synth_dag_valid(&out, &out.g[i]), 1);
    etsim_synth_data_free(&out);
  }
  print_message("first category follows the label: without FiLM %d, with FiLM %d of 200\n", ok[0],
                ok[1]);
  TU_GE(ok[1], ok[0] + 10);
  /* (2) the flag word: histograms (1) and FiLM (16) */
  char path[512];
  check_model_file(m[1], "film", 8, ETSIM_SYNTH_HIST_DENOISE | 16, 1, 0, path);
  for (int k = 0; k < 2; k++) etsim_synth_model_free(m[k]);
  etsim_synth_data_free(&d);
}

/* The edge label scale (config label_edge, model version 9).
 * (1) Trained on the label toy with it (label_drop 0.3), its parameters
 *     have left zero, and the file is version 9 with the flag word
 *     holding 32 (FiLM off); it round-trips (parameters, samples, and
 *     guided samples); a version-8 file claiming the flag is refused.
 * (2) Loaded, its samples at w = 2 differ from those with the scale's
 *     parameters zeroed (the option changes the sampler's output). */
static void test_label_edge(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_data_t d;
  make_label_toy(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.epochs = 4;
  c.label_drop = 0.3f;
  c.label_edge = 1;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  size_t ne = (size_t)SY_DY * c.pair_hidden + c.pair_hidden, n0 = m->n_params - ne, nz = 0;
  for (size_t i = n0; i < m->n_params; i++) nz += m->w[i] != 0;
  assert_ptr_equal(m->ef.w, m->w + n0);
  TU_GT(nz * 2, ne);
  char path[512];
  check_model_file(m, "edge", 9, ETSIM_SYNTH_HIST_DENOISE | 32, 0, 1, path);
  double lab[40];
  for (int i = 0; i < 40; i++) lab[i] = i % 2 ? 5 : 3;
  etsim_synth_data_t s[3];
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(m, 2, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(m2, 2, &err), 0);
  assert_int_equal(etsim_synth_sample(m, 40, lab, 3, &s[0], &err), 0);
  assert_int_equal(etsim_synth_sample(m2, 40, lab, 3, &s[1], &err), 0);
  assert_true(same_data(&s[0], &s[1]));
  /* (2) */
  memset(m2->w + n0, 0, sizeof(float) * ne);
  assert_int_equal(etsim_synth_sample(m2, 40, lab, 3, &s[2], &err), 0);
  assert_false(same_data(&s[0], &s[2]));
  for (int k = 0; k < 3; k++) etsim_synth_data_free(&s[k]);
  etsim_synth_model_free(m);
  etsim_synth_model_free(m2);
  etsim_synth_data_free(&d);
}

/* Attention within the new layer in the attribute denoiser (config attn,
 * model version 13).
 * (1) Trained on the label toy with it (label_drop 0.3), Wo has left zero,
 *     and the file is version 13 with the flag word holding 512; it
 *     round-trips (parameters, samples, and guided samples); a file
 *     claiming version 12 with the flag is refused.
 * (2) Loaded, its guided samples differ from those with Wo zeroed (the
 *     sampler runs the block). */
static void test_attn(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_data_t d;
  make_label_toy(&d);
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.epochs = 4;
  c.label_drop = 0.3f;
  c.attn = 1;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), 0);
  size_t hh = (size_t)c.hidden * c.hidden, n0 = m->n_params - hh, nz = 0;
  assert_ptr_equal(m->ao.w, m->w + n0);
  for (size_t i = n0; i < m->n_params; i++) nz += m->w[i] != 0;
  TU_GT(nz * 2, hh);
  char path[512];
  check_model_file(m, "attn", 13, ETSIM_SYNTH_HIST_DENOISE | 512, 0, 0, path);
  double lab[40];
  for (int i = 0; i < 40; i++) lab[i] = i % 2 ? 5 : 3;
  etsim_synth_data_t s[3];
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.attn, 1);
  assert_int_equal(etsim_synth_model_set_guidance(m, 2, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(m2, 2, &err), 0);
  assert_int_equal(etsim_synth_sample(m, 40, lab, 3, &s[0], &err), 0);
  assert_int_equal(etsim_synth_sample(m2, 40, lab, 3, &s[1], &err), 0);
  assert_true(same_data(&s[0], &s[1]));
  /* (2) */
  memset(m2->w + n0, 0, sizeof(float) * hh);
  assert_int_equal(etsim_synth_sample(m2, 40, lab, 3, &s[2], &err), 0);
  assert_false(same_data(&s[0], &s[2]));
  for (int k = 0; k < 3; k++) etsim_synth_data_free(&s[k]);
  etsim_synth_model_free(m);
  etsim_synth_model_free(m2);
  etsim_synth_data_free(&d);
}

/* Of 200 samples of m asked for the toy's chain lengths 3 and 5 in turn
 * (etsim_synth_sample_sized, one draw, seed 5), each valid, how many have
 * the length asked for. */
static int target_hits(etsim_synth_model_t *m) {
  etsim_error_t err = {0};
  uint32_t nodes[200];
  for (int i = 0; i < 200; i++) nodes[i] = i % 2 ? 5 : 3;
  etsim_synth_data_t out;
  assert_int_equal(etsim_synth_sample_sized(m, 200, NULL, 1, nodes, 1, 5, 1, NULL, &out, &err), 0);
  int hit = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    assert_int_equal(etsim_synth_dag_valid(&out, &out.g[i]), 1);
    hit += out.g[i].n_nodes == nodes[i];
  }
  etsim_synth_data_free(&out);
  return hit;
}

/* Node-count conditioning of the stop and size heads (config size_cond,
 * model version 10).  The toy's chains hold 3 or 5 nodes at the same label,
 * so without it a sample's length is a coin flip whatever the target.
 * (1) Trained with it (same settings and seed
 *     as the shared model), 200 samples at targets of 3 and 5 nodes in turn
 *     (etsim_synth_sample_sized, one draw each) hit their target's length
 *     far more often than the shared model's (measured below: the shared
 *     model about half).
 * (2) The file is version 10 with the flag word holding 64 and
 *     round-trips (parameters and samples); a version-9 file claiming the
 *     flag is refused. */
static void test_size_cond(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.size_cond = 1;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(m->cfg.size_cond, 1);
  int hit[2] = {target_hits(model), target_hits(m)};
  print_message("samples of the target's length: without %d, with size_cond %d of 200\n", hit[0],
                hit[1]);
  TU_GE(hit[1], 180);
  TU_GE(hit[1], hit[0] + 50);
  /* (2) the flag word: histograms (1) and node-count conditioning (64) */
  char path[512];
  check_model_file(m, "size", 10, ETSIM_SYNTH_HIST_DENOISE | 64, 0, 0, path);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.size_cond, 1);
  etsim_synth_model_free(m2);
  etsim_synth_model_free(m);
}

/* Node-count conditioning of the stop head alone (config size_cond
 * ETSIM_SYNTH_SIZE_COND_STOP, model version 11).  The toy's chains (one
 * node per layer) hold 3 or 5 nodes at the same label, so their length is
 * the stop head's decision alone.
 * (1) Trained with it (same settings and seed as the shared model), 200
 *     samples at targets of 3 and 5 nodes in turn hit their target's
 *     length far more often than the shared model's.
 * (2) Its file is version 11 with the flag word holding 128, holds the
 *     stop head's count map only (SY_NCF x H parameters more than the
 *     shared model) and round-trips; a version-10 file claiming the flag,
 *     and a version-11 one claiming both 64 and 128, are refused. */
static void test_size_cond_stop(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.size_cond = ETSIM_SYNTH_SIZE_COND_STOP;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(m->cfg.size_cond, ETSIM_SYNTH_SIZE_COND_STOP);
  TU_EQ(m->n_params, model->n_params + (size_t)SY_NCF * c.hidden);
  int hit[2] = {target_hits(model), target_hits(m)};
  print_message("samples of the target's length: without %d, stop head conditioned %d of 200\n",
                hit[0], hit[1]);
  TU_GE(hit[1], 180);
  TU_GE(hit[1], hit[0] + 50);
  /* (2) the flag word: histograms (1) and the stop head's conditioning (128) */
  char path[512], bad[512];
  check_model_file(m, "size_stop", 11, ETSIM_SYNTH_HIST_DENOISE | 128, 0, 0, path);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.size_cond, ETSIM_SYNTH_SIZE_COND_STOP);
  etsim_synth_model_free(m2);
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  assert_non_null(b);
  b[8 + 4 + 4 + 5 * 4] |= 64; /* both node-count flags */
  snprintf(bad, sizeof bad, "%s/size_both.model", tmp);
  spit(bad, b, n);
  expect_load_error(bad, "header values out of range");
  free(b);
  etsim_synth_model_free(m);
}

/* The moving average of the weights (config ema): with one optimiser step
 * (one epoch of one batch) the model is D w0 + (1 - D) w1, w0 the initial
 * weights and w1 those of the same training without the average. */
static void test_ema(void **state) {
  (void)state;
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.epochs = 1;
  c.batch = (int)toy.n_graphs;
  etsim_synth_model_t *raw, *m, *init;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &raw, &err), 0);
  assert_int_equal(etsim_synth__model_new(&toy, &c, &init, &err), 0);
  assert_int_equal(etsim_synth__alloc_params(init, 1, c.seed), 0);
  TU_EQ(init->n_params, raw->n_params);
  double moved = 0;
  for (size_t i = 0; i < raw->n_params; i++) moved = fmax(moved, fabs(raw->w[i] - init->w[i]));
  TU_GT(moved, 1e-3); /* the step moves the weights (Adam: about lr) */
  const float ds[2] = {0.5f, 0.75f};
  for (int k = 0; k < 2; k++) {
    c.ema = ds[k];
    assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &m, &err), 0);
    size_t bad = 0;
    double off = 0;
    for (size_t i = 0; i < m->n_params; i++) {
      double want = ds[k] * init->w[i] + (1 - ds[k]) * raw->w[i];
      off = fmax(off, fabs(m->w[i] - raw->w[i]));
      bad += fabs(m->w[i] - want) > 1e-6 * (1 + fabs(want));
    }
    print_message("ema %.2f: %zu of %zu weights off the average; %.3g from the raw ones\n", ds[k],
                  bad, m->n_params, off);
    TU_EQ(bad, 0);
    TU_GT(off, 0.4 * moved);
    etsim_synth_model_free(m);
  }
  etsim_synth_model_free(raw);
  etsim_synth_model_free(init);
}

/* 200 samples of m, trained on the toy: valid DAGs, at least 190 of them
 * chains of 3 or 5 and at least 190 with the attribute pattern (category
 * (layer - 1) mod 3), as the shared model's. */
static void toy_chains_learned(etsim_synth_model_t *m, const char *what) {
  etsim_error_t err = {0};
  etsim_synth_data_t out;
  assert_int_equal(etsim_synth_sample(m, 200, NULL, 5, &out, &err), 0);
  int chains = 0, pattern = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    const etsim_synth_dag_t *g = &out.g[i];
    assert_int_equal(etsim_synth_dag_valid(&out, g), 1);
    uint32_t lay[64];
    TU_LT(g->n_nodes, 64);
    int L = etsim_synth_layers(g, lay, NULL);
    TU_GE(L, 1);
    chains += g->n_edges + 1 == g->n_nodes && (uint32_t)L == g->n_nodes && (L == 3 || L == 5);
    int ok = 1;
    for (uint32_t v = 0; v < g->n_nodes; v++) ok &= g->x[v] == (lay[v] - 1) % 3;
    pattern += ok;
  }
  print_message("%s: chains of 3 or 5: %d, attribute pattern: %d of 200\n", what, chains, pattern);
  TU_GE(chains, 190);
  TU_GE(pattern, 190);
  etsim_synth_data_free(&out);
}

/* Successor messages (config succ_msg, model version 12).
 * (1) Trained with them (the shared model's settings and seed), the toy's
 *     200 samples are valid DAGs, chains of 3 or 5 with the attribute
 *     pattern as the shared model's, and W_succ has left zero.
 * (2) The file is version 12 with the flag word holding 256 and
 *     round-trips (parameters and samples); a version-11 file
 *     claiming the flag is refused. */
static void test_succ(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.succ_msg = 1;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(m->cfg.succ_msg, 1);
  double moved = 0;
  for (int i = 0; i < c.hidden * c.hidden; i++) moved = fmax(moved, fabs(m->succ.w[i]));
  TU_GT(moved, 1e-3);
  toy_chains_learned(m, "with successor messages");
  /* (2) the flag word: histograms (1) and successor messages (256) */
  char path[512];
  check_model_file(m, "succ", 12, ETSIM_SYNTH_HIST_DENOISE | 256u, 0, 0, path);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.succ_msg, 1);
  etsim_synth_model_free(m2);
  etsim_synth_model_free(m);
}

/* The bidirectional encoder per layer step (config bidir, model version
 * 14).
 * (1) Trained with it (the shared model's settings and seed), the toy's
 *     200 samples are valid DAGs, chains of 3 or 5 with the attribute
 *     pattern as the shared model's, and mp_rev has left zero.
 * (2) The file is version 14 with the flag word holding 1024 and
 *     round-trips (parameters and samples); a version-13 file claiming
 *     the flag is refused, and so is a version-14 file claiming successor
 *     messages as well (training refuses both). */
static void test_bidir(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_config_t c;
  toy_cfg(&c);
  c.bidir = 1;
  etsim_synth_model_t *m;
  assert_int_equal(etsim_synth_train(&toy, &toy, &c, NULL, NULL, &m, &err), 0);
  TU_EQ(m->cfg.bidir, 1);
  double moved = 0;
  for (int k = 0; k < c.mp_layers; k++)
    for (int i = 0; i < c.hidden * c.hidden; i++) moved = fmax(moved, fabs(m->mp_rev[k].w[i]));
  TU_GT(moved, 1e-3);
  toy_chains_learned(m, "with the bidirectional encoder");
  /* (2) the flag word: histograms (1) and the bidirectional encoder (1024) */
  char path[512], bad[512];
  check_model_file(m, "bidir", 14, ETSIM_SYNTH_HIST_DENOISE | 1024u, 0, 0, path);
  etsim_synth_model_t *m2;
  assert_int_equal(etsim_synth_model_load(&m2, path, &err), 0);
  TU_EQ(m2->cfg.bidir, 1);
  TU_EQ(m2->cfg.succ_msg, 0);
  etsim_synth_model_free(m2);
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  assert_non_null(b);
  uint32_t word = ETSIM_SYNTH_HIST_DENOISE | 1024u | 256u;
  memcpy(b + 8 + 4 + 4 + 5 * 4, &word, 4);
  snprintf(bad, sizeof bad, "%s/bidir_succ.model", tmp);
  spit(bad, b, n);
  expect_load_error(bad, "header values out of range");
  free(b);
  etsim_synth_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_posterior),
      cmocka_unit_test(test_learns_toy),
      cmocka_unit_test(test_samples_valid_and_learned),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_model_file),
      cmocka_unit_test(test_two_labels),
      cmocka_unit_test(test_class_recency),
      cmocka_unit_test(test_comm_run_rule),
      cmocka_unit_test(test_guidance),
      cmocka_unit_test(test_guidance_edge),
      cmocka_unit_test(test_film),
      cmocka_unit_test(test_attn),
      cmocka_unit_test(test_label_edge),
      cmocka_unit_test(test_ema),
      cmocka_unit_test(test_size_cond),
      cmocka_unit_test(test_size_cond_stop),
      cmocka_unit_test(test_succ),
      cmocka_unit_test(test_bidir),
  };
  return TU_RUN(tests, setup, teardown);
}
