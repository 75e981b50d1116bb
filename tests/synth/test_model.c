/*
 * test_model.c — the whole generator's hand-written backward pass against
 * finite differences, the diffusion schedule, the layer decomposition, and
 * the stop and size heads' independence of the prefix's content.
 */
#include "synth_util.h"

#include <math.h>
#include <string.h>

/* A model of configuration c on d, its parameters drawn with seed 7. */
static etsim_synth_model_t *toy_with(const etsim_synth_data_t *d, const etsim_synth_config_t *c) {
  etsim_synth_model_t *m;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth__model_new(d, c, &m, &err), 0);
  assert_int_equal(etsim_synth__alloc_params(m, 1, 7), 0);
  return m;
}

/* ctx: the context mask, or -1 for the default. */
static etsim_synth_model_t *toy_model_ctx(const etsim_synth_data_t *d, int ctx) {
  etsim_synth_config_t c;
  etsim_synth_config_default(&c);
  if (ctx >= 0) c.ctx_hist = ctx;
  c.hidden = 8;
  c.mp_layers = 2;
  c.pair_hidden = 6;
  c.t_attr = 8;
  c.t_edge = 4;
  return toy_with(d, &c);
}
static etsim_synth_model_t *toy_model(const etsim_synth_data_t *d) { return toy_model_ctx(d, -1); }

/* The central difference of graph g's loss (seed) in parameter i, step
 * 2e-3; the parameter is restored. */
static double num_grad(etsim_synth_model_t *m, const etsim_synth_data_t *d,
                       const etsim_synth_dag_t *g, uint64_t seed, size_t i) {
  etsim_error_t err = {0};
  float keep = m->w[i], h = 2e-3f;
  double lp, lm;
  m->w[i] = keep + h;
  etsim_synth__graph_loss(m, d, g, seed, 0, 1, &lp, NULL, &err);
  m->w[i] = keep - h;
  etsim_synth__graph_loss(m, d, g, seed, 0, 1, &lm, NULL, &err);
  m->w[i] = keep;
  return (lp - lm) / (2.0 * h);
}

static void test_layers(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  uint32_t lay[5];
  assert_int_equal(etsim_synth_layers(&d.g[0], lay, NULL), 4);
  uint32_t want[5] = {1, 2, 2, 3, 4};
  for (int i = 0; i < 5; i++) assert_int_equal(lay[i], want[i]);
  assert_int_equal(etsim_synth_layers(&d.g[1], lay, NULL), 3);
  assert_int_equal(lay[0], 1);
  assert_int_equal(lay[1], 1);
  assert_int_equal(lay[2], 2);
  /* A cycle 1 -> 2 -> 1 is reported. */
  uint32_t x[3] = {0}, s[3] = {0, 1, 2}, t[3] = {1, 2, 1};
  etsim_synth_dag_t cyc = {3, 3, x, s, t, 1, 0};
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_layers(&cyc, lay, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "cycle");
  etsim_synth_data_free(&d);
}

static void test_schedule(void **state) {
  (void)state;
  double ab[65], al[65];
  etsim_synth__schedule(64, ab, al);
  assert_float_equal(ab[0], 1.0, 0);
  for (int t = 1; t <= 64; t++) {
    TU_LT(ab[t], ab[t - 1]);
    assert_float_equal(ab[t], ab[t - 1] * al[t], 1e-12);
  }
  /* Cosine schedule: abar(t) = f(t)/f(0) until beta clamps at the end. */
  double s = 0.008, f0 = pow(cos(s / (1 + s) * M_PI / 2), 2);
  double f32 = pow(cos((0.5 + s) / (1 + s) * M_PI / 2), 2);
  assert_float_equal(ab[32], f32 / f0, 1e-9);
  TU_LT(ab[64], 1e-4);
}

/* Trace data (kind TRACE) add the depth-progress context (SY_PROG
 * floats) and, with `recent` (the default), the class recency, so the
 * denoisers' first layers are wider; both gradients are checked, the
 * trace one with a two-component label. */
static void check_gradient(int kind, int recent) {
  etsim_synth_data_t d;
  toy_data(&d);
  d.kind = kind;
  if (kind == ETSIM_SYNTH_KIND_TRACE) { /* and a second label component */
    d.n_labels = 2;
    d.g[0].y2 = 0.35;
    d.g[1].y2 = 0.12;
  }
  etsim_synth_config_t def;
  etsim_synth_config_default(&def); /* the class recency is on by default */
  TU_EQ(def.ctx_hist & ETSIM_SYNTH_CTX_RECENT, ETSIM_SYNTH_CTX_RECENT);
  etsim_synth_model_t *m =
      toy_model_ctx(&d, recent ? def.ctx_hist : def.ctx_hist & ~ETSIM_SYNTH_CTX_RECENT);
  etsim_error_t err = {0};
  int prog = kind == ETSIM_SYNTH_KIND_TRACE;
  assert_int_equal(!!(m->cfg.ctx_hist & ETSIM_SYNTH_CTX_PROGRESS), prog);
  /* The class recency (3 classes in channel 0) is for traces only. */
  int rec = prog && recent;
  assert_int_equal(!!(m->cfg.ctx_hist & ETSIM_SYNTH_CTX_RECENT), rec);
  assert_int_equal(etsim_synth__dim_ctx(m),
                   8 + SY_FEAT + SY_DY + 3 * (3 + 4) + (rec ? 3 : 0) + (prog ? SY_PROG : 0));
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double loss, parts[3];
    memset(m->g, 0, sizeof(float) * m->n_params);
    assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[gi], 99, 1, 1.0f, &loss, parts, &err), 0);
    assert_float_equal(loss, parts[0] + parts[1] + parts[2], 1e-9);
    TU_GT(parts[0], 0);
    TU_GT(parts[1], 0);
    TU_GT(parts[2], 0);
    size_t bad = 0, checked = 0, nonzero = 0;
    double worst = 0;
    for (size_t i = 0; i < m->n_params; i++) {
      double num = num_grad(m, &d, &d.g[gi], 99, i), ana = m->g[i];
      double e = fabs(num - ana) / (1e-3 + fabs(num) + fabs(ana));
      checked++;
      nonzero += fabs(ana) > 1e-6;
      if (e > worst) worst = e;
      if (e > 0.03) {
        bad++;
        if (bad < 5) print_message("param %zu: analytic %.6g numeric %.6g\n", i, ana, num);
      }
    }
    print_message(
        "graph %zu: %zu params, %zu nonzero grads, %zu off (worst "
        "%.3g)\n",
        gi, checked, nonzero, bad, worst);
    /* ReLU kinks in the pair scorer may spoil a handful of entries. */
    TU_LE(bad * 200, checked);
    TU_GT(nonzero * 2, checked);
  }
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

static void test_model_gradient(void **state) {
  (void)state;
  check_gradient(ETSIM_SYNTH_KIND_TEXT, 0);
  check_gradient(ETSIM_SYNTH_KIND_TRACE, 0);
  check_gradient(ETSIM_SYNTH_KIND_TEXT, 1);
  check_gradient(ETSIM_SYNTH_KIND_TRACE, 1);
}

/* The class recency in closed form: 1 / (1 + layers since the class last
 * occurred), 0 for a class not seen yet; and in the training context of
 * a graph, after the histograms and before the depth progress.  toy_data's
 * g0 has layers {0}, {1, 2}, {3}, {4} of channel-0 classes 0; 1, 2; 0; 1. */
static void test_recency(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  d.kind = ETSIM_SYNTH_KIND_TRACE;
  etsim_synth_model_t *m = toy_model(&d);
  TU_EQ(etsim_synth__dim_recent(m), 3);
  TU_EQ(etsim_synth__off_recent(m), 8 + SY_FEAT + SY_DY + 3 * (3 + 4));
  uint32_t seen[3] = {4, 0, 2};
  float f[3];
  etsim_synth__recent_feats(m, 4, seen, f);
  TU_EQ(f[0], 1.0);
  TU_EQ(f[1], 0.0);
  assert_float_equal(f[2], 1.0 / 3, 1e-7);
  /* g0 after each layer l = 0..4: the latest layer of classes 0, 1, 2. */
  static const uint32_t want[5][3] = {{0, 0, 0}, {1, 0, 0}, {1, 2, 2}, {3, 2, 2}, {3, 4, 2}};
  float ctx[5 * 128];
  int Dc = etsim_synth__dim_ctx(m);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth__contexts(m, &d.g[0], ctx, sizeof ctx / sizeof *ctx, &err), 5);
  for (int l = 0; l <= 4; l++)
    for (int k = 0; k < 3; k++) {
      double v = want[l][k] ? 1.0 / (1 + l - want[l][k]) : 0;
      assert_float_equal(ctx[l * Dc + etsim_synth__off_recent(m) + k], v, 1e-7);
    }
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* The depth-progress features in closed form, and a sample that plans its
 * depth up front keeps forced layer sizes exactly (the plan stops where
 * they end). */
static void test_progress(void **state) {
  (void)state;
  float f[SY_PROG];
  etsim_synth__prog_feats(3, 12, f);
  TU_EQ(f[0], 0.25);
  assert_float_equal(f[1], log(10.0) / 4, 1e-6);
  etsim_synth__prog_feats(12, 12, f);
  TU_EQ(f[0], 1.0);
  TU_EQ(f[1], 0.0);
  etsim_synth_data_t d, out;
  toy_data(&d);
  d.kind = ETSIM_SYNTH_KIND_TRACE;
  etsim_synth_model_t *m = toy_model(&d);
  etsim_error_t err = {0};
  uint32_t sizes[4] = {2, 1, 1, 0};
  assert_int_equal(etsim_synth__sample_fixed(m, 3, sizes, 5, &out, &err), 0);
  assert_int_equal(out.n_graphs, 3);
  for (size_t i = 0; i < out.n_graphs; i++) {
    uint32_t lay[8];
    assert_int_equal(out.g[i].n_nodes, 4);
    assert_int_equal(etsim_synth_layers(&out.g[i], lay, &err), 3);
    assert_int_equal(lay[0] + lay[1] + lay[2] + lay[3], 1 + 1 + 2 + 3);
  }
  etsim_synth_data_free(&out);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* The stop and size heads read only the depth, the sizes so far and the
 * label (docs/synth.md, Model item 2), so their loss must not change when
 * categories and edges change under the same layering; the denoisers'
 * losses must.  A different layering must change it. */
static void test_count_reads_structure_only(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m = toy_model(&d);
  etsim_error_t err = {0};
  /* g0's layering (sizes 1, 2, 1, 1) with other categories and edges:
   * 0 -> 1, 0 -> 2, 2 -> 3, 3 -> 4, 1 -> 4. */
  uint32_t xb[10] = {2, 0, 0, 3, 1, 1, 2, 2, 0, 0};
  uint32_t sb[5] = {0, 0, 2, 3, 1}, tb[5] = {1, 2, 3, 4, 4};
  etsim_synth_dag_t gb = {5, 5, xb, sb, tb, d.g[0].y, 0};
  /* Same nodes, one layer more: a chain 0 -> 1 -> 2 -> 3 -> 4. */
  uint32_t sc[4] = {0, 1, 2, 3}, tc[4] = {1, 2, 3, 4};
  etsim_synth_dag_t gc = {5, 4, xb, sc, tc, d.g[0].y, 0};
  double la, lb, lc, pa[3], pb[3], pc[3];
  assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 5, 0, 1, &la, pa, &err), 0);
  assert_int_equal(etsim_synth__graph_loss(m, &d, &gb, 5, 0, 1, &lb, pb, &err), 0);
  assert_int_equal(etsim_synth__graph_loss(m, &d, &gc, 5, 0, 1, &lc, pc, &err), 0);
  print_message(
      "count loss: g0 %.9g, same layering %.9g, chain %.9g; "
      "attr %.6g vs %.6g, edge %.6g vs %.6g\n",
      pa[0], pb[0], pc[0], pa[1], pb[1], pa[2], pb[2]);
  TU_EQ(pa[0], pb[0]);
  TU_NE(pa[1], pb[1]);
  TU_NE(pa[2], pb[2]);
  TU_GT(fabs(pa[0] - pc[0]), 1e-6);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* A deep graph: a chain of n nodes with a skip edge from i - 1 - (i % 7)
 * into every third node, categories i mod 3. */
static void deep_data(etsim_synth_data_t *d, uint32_t n) {
  etsim_synth_data_init(d);
  d->kind = ETSIM_SYNTH_KIND_TEXT;
  d->n_ch = 1;
  d->n_cls[0] = 3;
  uint32_t *x = malloc(sizeof(uint32_t) * n), *s = malloc(sizeof(uint32_t) * 2 * n);
  uint32_t *t = malloc(sizeof(uint32_t) * 2 * n), ne = 0;
  for (uint32_t i = 0; i < n; i++) {
    x[i] = i % 3;
    if (!i) continue;
    s[ne] = i - 1;
    t[ne++] = i;
    if (i % 3 == 0 && i >= 9) {
      s[ne] = i - 2 - (i % 7);
      t[ne++] = i;
    }
  }
  etsim_synth_dag_t g = {n, ne, x, s, t, 1.5, 0};
  assert_int_equal(etsim_synth_data_add(d, &g), 0);
  free(x);
  free(s);
  free(t);
}

/* The sampled edge loss (prefixes above exact_candidates) is a fixed
 * function of the parameters for a fixed seed, so its hand-written
 * gradient must match finite differences like the exact one. */
static void test_sampled_gradient(void **state) {
  (void)state;
  etsim_synth_data_t d;
  deep_data(&d, 400);
  etsim_synth_model_t *m = toy_model(&d);
  m->cfg.exact_candidates = 16;
  etsim_error_t err = {0};
  double loss, parts[3];
  memset(m->g, 0, sizeof(float) * m->n_params);
  assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 3, 1, 1.0f, &loss, parts, &err), 0);
  size_t bad = 0, checked = 0, nonzero = 0;
  for (size_t i = 0; i < m->n_params; i += 3) {
    double num = num_grad(m, &d, &d.g[0], 3, i), ana = m->g[i];
    double e = fabs(num - ana) / (1e-3 + fabs(num) + fabs(ana));
    checked++;
    nonzero += fabs(ana) > 1e-6;
    if (e > 0.03 && ++bad < 5)
      print_message("param %zu: analytic %.6g numeric %.6g\n", i, ana, num);
  }
  print_message("sampled: %zu params checked, %zu nonzero, %zu off\n", checked, nonzero, bad);
  TU_LE(bad * 100, checked);
  TU_GT(nonzero * 2, checked);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* Averaged over noise draws, the sampled edge loss equals the exact one
 * (it is an unbiased estimate): the means over 200 seeds agree within four
 * standard errors of their difference.  In this chain the near stratum
 * (8 layers, 8 nodes) is scored whole and the far one, over 64 nodes from
 * depth 73 on, by weighted draws. */
static void test_sampled_unbiased(void **state) {
  (void)state;
  etsim_synth_data_t d;
  deep_data(&d, 300);
  etsim_synth_model_t *m = toy_model(&d);
  etsim_error_t err = {0};
  enum { S = 200 };
  double se = 0, se2 = 0, sx = 0, sx2 = 0;
  for (int k = 0; k < S; k++) {
    double parts[3], l;
    m->cfg.exact_candidates = 0;
    assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 1000 + k, 0, 1, &l, parts, &err), 0);
    sx += parts[2];
    sx2 += parts[2] * parts[2];
    m->cfg.exact_candidates = 8;
    assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 5000 + k, 0, 1, &l, parts, &err), 0);
    se += parts[2];
    se2 += parts[2] * parts[2];
  }
  double mx = sx / S, me = se / S;
  double vx = sx2 / S - mx * mx, ve = se2 / S - me * me;
  double sd = sqrt((vx + ve) / S);
  print_message("edge loss: exact %.5f (sd %.5f), sampled %.5f (sd %.5f), diff %.5f, se %.5f\n", mx,
                sqrt(vx), me, sqrt(ve), me - mx, sd);
  TU_LT(fabs(me - mx), 4 * sd);
  /* A real check, not a vacuous one: the spread is small next to the loss. */
  TU_LT(sd, 0.02 * mx);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* A second label component (data with n_labels 2): its scaling follows
 * the first's rule (logs when every value is positive, standardised over
 * the training set, median kept), and the label features split their
 * SY_DY floats between the two, half the frequencies each; one component
 * keeps all SY_DY for itself, as before (so text DAGs and older models
 * see the same features). */
static void test_two_labels(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d); /* labels 2.5 and 0.7 */
  etsim_synth_model_t *m1 = toy_model(&d);
  TU_EQ(etsim_synth_model_n_labels(m1), 1);
  float f[SY_DY], w[SY_DY];
  etsim_synth__label_feat(m1, 1.3, 0.9, f);
  double u = (log(1.3) - (log(2.5) + log(0.7)) / 2) / (fabs(log(2.5) - log(0.7)) / 2);
  etsim_synth__nn_sinusoid((float)u, SY_DY, 0.5f, w);
  for (int k = 0; k < SY_DY; k++) assert_float_equal(f[k], w[k], 1e-6);
  etsim_synth_model_free(m1);

  d.n_labels = 2;
  d.g[0].y2 = 0.4;
  d.g[1].y2 = 0.0; /* not all positive: raw values */
  etsim_synth_model_t *m = toy_model(&d);
  TU_EQ(etsim_synth_model_n_labels(m), 2);
  TU_EQ(m->y2_log, 0);
  assert_float_equal(m->y2_mean, 0.2, 1e-12);
  assert_float_equal(m->y2_std, 0.2, 1e-12);
  assert_float_equal(m->y2_median, 0.4, 0); /* the upper of two, as for y */
  etsim_synth__label_feat(m, 1.3, 0.9, f);
  etsim_synth__nn_sinusoid((float)u, SY_DY / 2, 0.5f, w);
  etsim_synth__nn_sinusoid((float)((0.9 - 0.2) / 0.2), SY_DY / 2, 0.5f, w + SY_DY / 2);
  for (int k = 0; k < SY_DY; k++) assert_float_equal(f[k], w[k], 1e-6);
  /* The second component reaches the loss of every head. */
  etsim_error_t err = {0};
  double pa[3], pb[3], l;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 5, 0, 1, &l, pa, &err), 0);
  d.g[0].y2 = 0.1;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &d.g[0], 5, 0, 1, &l, pb, &err), 0);
  for (int k = 0; k < 3; k++) TU_GT(fabs(pa[k] - pb[k]), 1e-9);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* Label dropout (classifier-free guidance, config label_drop): a graph
 * whose label is dropped trains the denoisers on the null label (its
 * features zeroed), so with label_drop 1 their losses are the same for
 * any label, and equal to those of a model whose label weights in the
 * denoisers are zero; the stop and size heads keep the label.  With
 * label_drop 0 the label reaches every head.  Validation (no backward)
 * never drops. */
static void test_label_drop(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m = toy_model(&d);
  etsim_error_t err = {0};
  etsim_synth_dag_t g = d.g[0];
  double l, pa[3], pb[3], pv[3];
  /* No dropout: another label changes every part. */
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 1, 1, &l, pa, &err), 0);
  g.y = 0.9;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 1, 1, &l, pb, &err), 0);
  for (int k = 0; k < 3; k++) TU_GT(fabs(pa[k] - pb[k]), 1e-9);
  /* Always dropped: the denoisers' parts no longer see the label. */
  m->cfg.label_drop = 1;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 1, 1, &l, pb, &err), 0);
  g.y = d.g[0].y;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 1, 1, &l, pa, &err), 0);
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 0, 1, &l, pv, &err), 0);
  print_message("dropped label: attr %.9g / %.9g, edge %.9g / %.9g; count %.9g / %.9g\n", pa[1],
                pb[1], pa[2], pb[2], pa[0], pb[0]);
  TU_EQ(pa[1], pb[1]);
  TU_EQ(pa[2], pb[2]);
  TU_GT(fabs(pa[0] - pb[0]), 1e-9);
  /* Without backward (validation) the label is kept. */
  TU_GT(fabs(pa[1] - pv[1]), 1e-9);
  /* The null label is the label features at zero: the same losses as a
   * model that never reads them in the denoisers (rows 3H + SY_FEAT.. of
   * the first attribute and edge layers, after the node parts). */
  int H = m->cfg.hidden, r0 = 3 * H + SY_FEAT;
  for (int r = r0; r < r0 + SY_DY; r++) {
    memset(m->a1.w + (size_t)r * m->a1.out, 0, sizeof(float) * m->a1.out);
    memset(m->ed.w + (size_t)r * m->ed.out, 0, sizeof(float) * m->ed.out);
  }
  m->cfg.label_drop = 0;
  assert_int_equal(etsim_synth__graph_loss(m, &d, &g, 5, 1, 1, &l, pb, &err), 0);
  assert_float_equal(pa[1], pb[1], 1e-6 * fabs(pa[1]));
  assert_float_equal(pa[2], pb[2], 1e-6 * fabs(pa[2]));
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* m1 is m0 with parameters appended (an option's), all zero: the shared
 * ones are m0's, and on every graph of d the loss and its three parts are
 * m0's bit for bit, their gradients m0's (bit for bit with rel_tol 0, else
 * within rel_tol relative: an option that sums per-step gradients apart)
 * while more than half of the new ones get a gradient. */
static void zero_extension_learns(etsim_synth_model_t *m0, etsim_synth_model_t *m1,
                                  const etsim_synth_data_t *d, double rel_tol) {
  etsim_error_t err = {0};
  size_t n0 = m0->n_params, nv = m1->n_params - n0;
  assert_memory_equal(m1->w, m0->w, sizeof(float) * n0);
  for (size_t i = n0; i < m1->n_params; i++) TU_EQ(m1->w[i], 0.0f);
  for (size_t gi = 0; gi < d->n_graphs; gi++) {
    double l0, l1, p0[3], p1[3];
    memset(m0->g, 0, sizeof(float) * n0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    assert_int_equal(etsim_synth__graph_loss(m0, d, &d->g[gi], 11, 1, 1, &l0, p0, &err), 0);
    assert_int_equal(etsim_synth__graph_loss(m1, d, &d->g[gi], 11, 1, 1, &l1, p1, &err), 0);
    TU_EQ(l0, l1);
    for (int k = 0; k < 3; k++) TU_EQ(p0[k], p1[k]);
    if (rel_tol == 0) assert_memory_equal(m1->g, m0->g, sizeof(float) * n0);
    double worst = 0;
    for (size_t i = 0; i < n0; i++)
      worst = fmax(worst, fabs(m1->g[i] - m0->g[i]) / (1e-3 + fabs(m0->g[i])));
    print_message("zero extension, graph %zu: shared gradients off by %.3g at most\n", gi, worst);
    TU_LE(worst, rel_tol);
    size_t nz = 0;
    for (size_t i = n0; i < m1->n_params; i++) nz += m1->g[i] != 0;
    TU_GT(nz * 2, nv); /* zero weights, yet they learn */
  }
}

/* Ten samples of m0 and of m1 (seed 4, no labels) are the same DAGs:
 * sizes, categories of n_ch channels, and parents. */
static void same_sample_sets(etsim_synth_model_t *m0, etsim_synth_model_t *m1, uint32_t n_ch) {
  etsim_error_t err = {0};
  etsim_synth_data_t s0, s1;
  assert_int_equal(etsim_synth_sample(m0, 10, NULL, 4, &s0, &err), 0);
  assert_int_equal(etsim_synth_sample(m1, 10, NULL, 4, &s1, &err), 0);
  TU_EQ(s0.n_graphs, s1.n_graphs);
  for (size_t i = 0; i < s0.n_graphs; i++) {
    TU_EQ(s0.g[i].n_nodes, s1.g[i].n_nodes);
    TU_EQ(s0.g[i].n_edges, s1.g[i].n_edges);
    assert_memory_equal(s0.g[i].x, s1.g[i].x, sizeof(uint32_t) * s0.g[i].n_nodes * n_ch);
    assert_memory_equal(s0.g[i].src, s1.g[i].src, sizeof(uint32_t) * s0.g[i].n_edges);
  }
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
}

/* Extension weights drawn N(0, 0.3^2) for m's parameters n0 onwards. */
static void ext_random(etsim_synth_model_t *m, size_t n0, etsim_rng_t *r) {
  for (size_t i = n0; i < m->n_params; i++) m->w[i] = (float)(etsim_rng_normal(r) * 0.3);
}

/* m1 is m0 with an extension of n_ext parameters after all others: (1)
 * at zero it trains and samples as m0 (zero_extension_learns,
 * same_sample_sets); then (2) its weights are set at random (seed 42). */
static void ext_zero_then_random(etsim_synth_model_t *m0, etsim_synth_model_t *m1,
                                 const etsim_synth_data_t *d, size_t n_ext) {
  TU_EQ(m1->n_params, m0->n_params + n_ext);
  zero_extension_learns(m0, m1, d, 0);
  same_sample_sets(m0, m1, d->n_ch);
  etsim_rng_t r;
  etsim_rng_seed(&r, 42);
  ext_random(m1, m0->n_params, &r);
}

/* The gradients m's loss on graph gi gave its parameters n0 onwards (an
 * extension's, just computed into m->g) match central finite differences
 * (within 3 %, seed 11); with nz_den, more than 1/nz_den of them are
 * non-zero (a unit idle on a graph has none). */
static void ext_grads_match(etsim_synth_model_t *m, const etsim_synth_data_t *d, size_t gi,
                            size_t n0, const char *what, size_t nz_den) {
  size_t bad = 0, nz = 0;
  for (size_t i = n0; i < m->n_params; i++) {
    double num = num_grad(m, d, &d->g[gi], 11, i), ana = m->g[i];
    nz += ana != 0;
    if (fabs(num - ana) / (1e-3 + fabs(num) + fabs(ana)) > 0.03) {
      bad++;
      print_message("%s param %zu: analytic %.6g numeric %.6g\n", what, i - n0, ana, num);
    }
  }
  TU_EQ(bad, 0);
  if (nz_den) TU_GT(nz * nz_den, m->n_params - n0);
}

/* FiLM label conditioning of the attribute denoiser (cfg.label_film).
 * (1) Its parameters come after all others, which keep their initial
 *     values; at their zero initialisation the losses and the other
 *     parameters' gradients equal those of the model without FiLM bit for
 *     bit, and so do its samples.
 * (2) With FiLM weights set, the attribute loss depends on them and their
 *     gradients match central finite differences; the count and edge
 *     losses do not depend on them. */
static void test_film(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1;
  etsim_synth_config_t c = m0->cfg;
  c.label_film = 1;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  int H = c.hidden;
  size_t n0 = m0->n_params, nf = 2 * ((size_t)SY_DY * 2 * H + 2 * (size_t)H);
  ext_zero_then_random(m0, m1, &d, nf);
  double l0, l1, p0[3], p1[3];
  assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[0], 11, 0, 1, &l0, p0, &err), 0);
  memset(m1->g, 0, sizeof(float) * m1->n_params);
  assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[0], 11, 1, 1, &l1, p1, &err), 0);
  print_message("FiLM set: attr loss %.9g (without %.9g)\n", p1[1], p0[1]);
  TU_EQ(p1[0], p0[0]);
  TU_EQ(p1[2], p0[2]);
  TU_GT(fabs(p1[1] - p0[1]), 1e-4);
  ext_grads_match(m1, &d, 0, n0, "FiLM", 0);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
}

/* The edge label scale's parameters (cfg.label_edge) against central
 * finite differences in graph gi of d (seed 11); all of them learn. */
static void check_edge_scale_grad(etsim_synth_model_t *m, const etsim_synth_data_t *d, size_t gi,
                                  size_t n0) {
  etsim_error_t err = {0};
  double l;
  memset(m->g, 0, sizeof(float) * m->n_params);
  assert_int_equal(etsim_synth__graph_loss(m, d, &d->g[gi], 11, 1, 1, &l, NULL, &err), 0);
  ext_grads_match(m, d, gi, n0, "edge scale", 3);
}

/* The edge denoiser's label scale (cfg.label_edge).
 * (1) Its parameters come after all others, which keep their initial
 *     values; at their zero initialisation the losses and the other
 *     parameters' gradients equal those of the model without it bit for
 *     bit, its own gradients are not zero, and the samples (unguided and
 *     at w = 2) are the same.
 * (2) With its weights set, the edge loss depends on them (the count and
 *     attribute losses do not), and their gradients match central finite
 *     differences, with every pair scored and with sampled candidates. */
static void test_edge_scale(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1;
  etsim_synth_config_t c = m0->cfg;
  c.label_edge = 1;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  size_t n0 = m0->n_params, ne = (size_t)(SY_DY + 1) * c.pair_hidden;
  TU_EQ(m1->n_params, n0 + ne);
  zero_extension_learns(m0, m1, &d, 0);
  for (int w = 0; w <= 2; w += 2) {
    assert_int_equal(etsim_synth_model_set_guidance(m0, w, &err), 0);
    assert_int_equal(etsim_synth_model_set_guidance(m1, w, &err), 0);
    same_sample_sets(m0, m1, d.n_ch);
  }
  /* (2) */
  etsim_rng_t r;
  etsim_rng_seed(&r, 42);
  ext_random(m1, n0, &r);
  double l0, l1, p0[3], p1[3];
  assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[0], 11, 0, 1, &l0, p0, &err), 0);
  assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[0], 11, 0, 1, &l1, p1, &err), 0);
  print_message("edge scale set: edge loss %.9g (without %.9g)\n", p1[2], p0[2]);
  TU_EQ(p1[0], p0[0]);
  TU_EQ(p1[1], p0[1]);
  TU_GT(fabs(p1[2] - p0[2]), 1e-4);
  check_edge_scale_grad(m1, &d, 0, n0);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
  /* Sampled candidates (prefixes above exact_candidates). */
  deep_data(&d, 400);
  m0 = toy_model(&d);
  c = m0->cfg;
  c.label_edge = 1;
  c.exact_candidates = 16;
  m1 = toy_with(&d, &c);
  n0 = m1->n_params - ne;
  ext_random(m1, n0, &r);
  check_edge_scale_grad(m1, &d, 0, n0);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
}

/* Node-count conditioning of the stop and size heads (cfg.size_cond).
 * (1) Its parameters (SY_NCF x H into the stop head, SY_NCF + 1 x H into
 *     the size head, no bias) come after all others, which keep their
 *     initial values; at their zero initialisation the losses and the
 *     other parameters' gradients equal those of the model without it bit
 *     for bit, and so do its samples.
 * (2) With its weights set, the count loss depends on them (the attribute
 *     and edge losses do not), and their gradients match central finite
 *     differences on both graphs of the toy. */
static void test_size_cond(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1;
  etsim_synth_config_t c = m0->cfg;
  c.size_cond = 1;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  size_t n0 = m0->n_params, nc = (size_t)(2 * SY_NCF + 1) * c.hidden;
  assert_ptr_equal(m1->ncs.w, m1->w + n0);
  ext_zero_then_random(m0, m1, &d, nc);
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double l0, l1, p0[3], p1[3];
    assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[gi], 11, 0, 1, &l0, p0, &err), 0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[gi], 11, 1, 1, &l1, p1, &err), 0);
    print_message("graph %zu, count weights set: count loss %.9g (without %.9g)\n", gi, p1[0],
                  p0[0]);
    TU_EQ(p1[1], p0[1]);
    TU_EQ(p1[2], p0[2]);
    TU_GT(fabs(p1[0] - p0[0]), 1e-4);
    ext_grads_match(m1, &d, gi, n0, "count", 2);
  }
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
}

/* Node-count conditioning of the stop head alone (cfg.size_cond
 * ETSIM_SYNTH_SIZE_COND_STOP).
 * (1) Its parameters are the stop head's map only (SY_NCF x H, no bias),
 *     after all others; at zero the losses, gradients and samples are
 *     those of the model without it.
 * (2) With its weights set, the count loss and the gradients of every
 *     parameter equal those of the two-head model (size_cond 1) whose stop
 *     map holds the same weights and whose size-head map is zero: the stop
 *     head reads the count as there, the size head not at all.  And the
 *     count loss differs from the model without it (the weights act).
 * (3) Those gradients match central finite differences on both graphs. */
static void test_size_cond_stop(void **state) {
  (void)state;
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1, *mh;
  etsim_synth_config_t c = m0->cfg;
  c.size_cond = ETSIM_SYNTH_SIZE_COND_STOP;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  c.size_cond = ETSIM_SYNTH_SIZE_COND_HEADS;
  mh = toy_with(&d, &c);
  size_t n0 = m0->n_params, nc = (size_t)SY_NCF * c.hidden;
  assert_ptr_equal(m1->ncs.w, m1->w + n0);
  ext_zero_then_random(m0, m1, &d, nc);
  memcpy(mh->w + n0, m1->w + n0, sizeof(float) * nc); /* mh's ncs; its ncc stays 0 */
  for (size_t i = n0 + nc; i < mh->n_params; i++) TU_EQ(mh->w[i], 0.0f);
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double l0, l1, lh, p0[3], p1[3], ph[3];
    assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[gi], 11, 0, 1, &l0, p0, &err), 0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    memset(mh->g, 0, sizeof(float) * mh->n_params);
    assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[gi], 11, 1, 1, &l1, p1, &err), 0);
    assert_int_equal(etsim_synth__graph_loss(mh, &d, &d.g[gi], 11, 1, 1, &lh, ph, &err), 0);
    print_message(
        "graph %zu, stop count weights set: count loss %.9g (two heads %.9g, without "
        "%.9g)\n",
        gi, p1[0], ph[0], p0[0]);
    TU_EQ(l1, lh);
    TU_EQ(p1[0], ph[0]);
    assert_memory_equal(m1->g, mh->g, sizeof(float) * m1->n_params);
    TU_EQ(p1[1], p0[1]);
    TU_EQ(p1[2], p0[2]);
    TU_GT(fabs(p1[0] - p0[0]), 1e-4);
    /* (3) */
    ext_grads_match(m1, &d, gi, n0, "stop count", 2);
  }
  /* Only 0, 1 and 2 are settings. */
  etsim_synth_model_t *mx = NULL;
  c.size_cond = 3;
  assert_int_equal(etsim_synth__model_new(&d, &c, &mx, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "size_cond 3");
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_model_free(mh);
  etsim_synth_data_free(&d);
}

/* The step contexts that sampling builds (recorded through m->ctx_log)
 * for n DAGs drawn with seed `seed` equal, step by step, those training
 * builds for the same DAGs (etsim_synth__contexts), within float rounding,
 * and so do the edge denoiser's candidate and parent parts of every step
 * (m->parts_log, etsim_synth__step_parts); every DAG is valid.  Returns
 * the steps compared; *nparts the part floats compared. */
static size_t sample_ctx_match(etsim_synth_model_t *m, size_t n, uint64_t seed, size_t *nparts) {
  etsim_error_t err = {0};
  int Dc = etsim_synth__dim_ctx(m);
  size_t cap = (size_t)64 * Dc, steps = 0, pcap = (size_t)1 << 16;
  float *log_ = malloc(sizeof(float) * cap), *ctx = malloc(sizeof(float) * cap);
  float *plog = malloc(sizeof(float) * pcap), *parts = malloc(sizeof(float) * pcap);
  assert_non_null(log_);
  assert_non_null(ctx);
  assert_non_null(plog);
  assert_non_null(parts);
  *nparts = 0;
  for (size_t i = 0; i < n; i++) {
    etsim_synth_data_t out;
    m->ctx_log = log_, m->ctx_log_cap = cap, m->ctx_log_n = 0;
    m->parts_log = plog, m->parts_log_cap = pcap, m->parts_log_n = 0;
    assert_int_equal(etsim_synth_sample(m, 1, NULL, seed + i, &out, &err), 0);
    m->ctx_log = NULL;
    m->parts_log = NULL;
    int np = etsim_synth__step_parts(m, &out.g[0], parts, pcap, &err);
    TU_GE(np, 0);
    /* Sampling's last step is the stop's, or none at the deepest depth. */
    size_t kp = m->parts_log_n < (size_t)np ? m->parts_log_n : (size_t)np;
    TU_GE(kp * 2, (size_t)np);
    for (size_t q = 0; q < kp; q++)
      assert_float_equal(plog[q], parts[q], 1e-4 * (1 + fabs(parts[q])));
    *nparts += kp;
    const etsim_synth_dag_t *g = &out.g[0];
    assert_int_equal(etsim_synth_dag_valid(&out, g), 1);
    int ns = etsim_synth__contexts(m, g, ctx, cap, &err);
    TU_GE(ns, 2);
    /* The last step is recorded when a stop ended the DAG, not when the
     * deepest training depth did. */
    size_t k = m->ctx_log_n;
    TU_LE(k, (size_t)ns);
    TU_GE(k + 1, (size_t)ns);
    for (size_t q = 0; q < k * Dc; q++)
      assert_float_equal(log_[q], ctx[q], 2e-5 * (1 + fabs(ctx[q])));
    steps += k;
    etsim_synth_data_free(&out);
  }
  free(log_);
  free(ctx);
  free(plog);
  free(parts);
  return steps;
}

/* The gradients of every parameter of m below n_end (every `stride`-th)
 * on graph gi of d match central finite differences (seed 11) but for at
 * most one in `den` (ReLU kinks of the pair scorer, as check_gradient). */
static void all_grads_match(etsim_synth_model_t *m, const etsim_synth_data_t *d, size_t gi,
                            size_t n_end, size_t stride, size_t den, const char *what) {
  etsim_error_t err = {0};
  double l;
  memset(m->g, 0, sizeof(float) * m->n_params);
  assert_int_equal(etsim_synth__graph_loss(m, d, &d->g[gi], 11, 1, 1, &l, NULL, &err), 0);
  size_t bad = 0, checked = 0;
  for (size_t i = 0; i < n_end; i += stride) {
    double num = num_grad(m, d, &d->g[gi], 11, i), ana = m->g[i];
    checked++;
    if (fabs(num - ana) / (1e-3 + fabs(num) + fabs(ana)) > 0.03 && ++bad < 5)
      print_message("%s param %zu: analytic %.6g numeric %.6g\n", what, i, ana, num);
  }
  print_message("%s, graph %zu: %zu of %zu params off\n", what, gi, bad, checked);
  TU_LE(bad * den, checked);
}

/* The per-step encoder options (cfg.succ_msg, cfg.bidir), whose n_ext
 * parameters come after all others and start at zero.  Checks:
 * (1) the other parameters keep their initial values; at the zero
 *     initialisation the losses and the contexts equal those of the causal
 *     model bit for bit, the other gradients equal its gradients within
 *     rel_tol (each step's gradients are summed apart, then added), the
 *     extension learns, and the samples are the same DAGs;
 * (2) with the extension set, the attribute and edge losses change (the
 *     count heads never read embeddings), and the gradients of every
 *     parameter match central finite differences on both toy graphs;
 * (3) sampling's step contexts and edge parts equal training's for the
 *     DAGs it draws (the hooks agree without the option too), and they
 *     differ from the causal model's;
 * (4) with sampled candidates (prefixes above exact_candidates) on a chain
 *     of deep_n nodes, every third parameter and all of the extension. */
static void check_step_option(int bidir, const char *what, double rel_tol, uint32_t deep_n) {
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1;
  etsim_synth_config_t c = m0->cfg;
  c.succ_msg = !bidir;
  c.bidir = bidir;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  int H = c.hidden, K = c.mp_layers, Dc = etsim_synth__dim_ctx(m1);
  size_t n0 = m0->n_params, n_ext = (size_t)(bidir ? K : 1) * H * H;
  char shared[64]; /* the label of the other parameters' checks */
  snprintf(shared, sizeof shared, "with %s, shared", what);
  TU_GE(K, 1);
  TU_EQ(m1->n_params, n0 + n_ext);
  assert_ptr_equal(bidir ? m1->mp_rev[0].w : m1->succ.w, m1->w + n0);
  zero_extension_learns(m0, m1, &d, rel_tol); /* (1) */
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    float c0[64 * 128], c1[64 * 128];
    int s0 = etsim_synth__contexts(m0, &d.g[gi], c0, 64 * 128, &err);
    TU_EQ(etsim_synth__contexts(m1, &d.g[gi], c1, 64 * 128, &err), s0);
    assert_memory_equal(c0, c1, sizeof(float) * (size_t)s0 * Dc);
  }
  same_sample_sets(m0, m1, d.n_ch);
  etsim_rng_t r; /* (2) */
  etsim_rng_seed(&r, 42);
  ext_random(m1, n0, &r);
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double l0, l1, p0[3], p1[3];
    assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[gi], 11, 0, 1, &l0, p0, &err), 0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[gi], 11, 1, 1, &l1, p1, &err), 0);
    print_message("%s set, graph %zu: attr %.9g (causal %.9g), edge %.9g (causal %.9g)\n", what, gi,
                  p1[1], p0[1], p1[2], p0[2]);
    TU_EQ(p1[0], p0[0]);
    TU_GT(fabs(p1[1] - p0[1]), 1e-4);
    TU_GT(fabs(p1[2] - p0[2]), 1e-4);
    ext_grads_match(m1, &d, gi, n0, what, 3);
    all_grads_match(m1, &d, gi, n0, 1, 200, shared);
  }
  size_t nparts, nsteps = sample_ctx_match(m1, 12, 21, &nparts); /* (3) */
  print_message("sampling and training agree on %zu steps' contexts and %zu edge part floats\n",
                nsteps, nparts);
  TU_GE(nsteps, 24);
  TU_GE(nparts, 500);
  TU_GE(sample_ctx_match(m0, 4, 21, &nparts), 8);
  {
    etsim_synth_data_t out;
    assert_int_equal(etsim_synth_sample(m1, 1, NULL, 21, &out, &err), 0);
    float c0[64 * 128], c1[64 * 128];
    int s0 = etsim_synth__contexts(m0, &out.g[0], c0, 64 * 128, &err);
    TU_EQ(etsim_synth__contexts(m1, &out.g[0], c1, 64 * 128, &err), s0);
    double diff = 0;
    for (size_t q = 0; q < (size_t)s0 * Dc; q++) diff = fmax(diff, fabs(c0[q] - c1[q]));
    TU_GT(diff, 1e-3);
    etsim_synth_data_free(&out);
  }
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
  deep_data(&d, deep_n); /* (4) */
  m0 = toy_model(&d);
  c = m0->cfg;
  c.succ_msg = !bidir;
  c.bidir = bidir;
  c.exact_candidates = 16;
  m1 = toy_with(&d, &c);
  n0 = m0->n_params;
  ext_random(m1, n0, &r);
  double l;
  memset(m1->g, 0, sizeof(float) * m1->n_params);
  assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[0], 11, 1, 1, &l, NULL, &err), 0);
  ext_grads_match(m1, &d, 0, n0, what, 3);
  all_grads_match(m1, &d, 0, n0, 3, 100, shared);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
}

/* Successor messages (cfg.succ_msg, issue 25): at layer step l a prefix
 * node's embedding is Z(u) + W_succ (its children's Z summed) / (1 + k);
 * W_succ is H x H, no bias.  The checks of check_step_option, the
 * shared gradients at zero within 1e-6, sampled candidates on a chain of
 * 400. */
static void test_succ(void **state) {
  (void)state;
  check_step_option(0, "W_succ", 1e-6, 400);
}

/* Bidirectional encoder per layer step (cfg.bidir, issue 25): at step l
 * the K message-passing layers run again over the prefix with each row's
 * children in the prefix as well as its parents (mp_rev[k], K of H x H,
 * no bias, on their sum).  The checks of check_step_option (each step's
 * pass gone back through apart: the shared gradients at zero within
 * 1e-4; sampling knows only the prefix, so a pass that let later children
 * in would fail its (3)), sampled candidates on a chain of 60; and with
 * succ_msg as well the model is refused. */
static void test_bidir(void **state) {
  (void)state;
  check_step_option(1, "mp_rev", 1e-4, 60);
  etsim_synth_data_t d;
  toy_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *mx = NULL;
  etsim_synth_config_t c = m0->cfg;
  c.bidir = 1;
  c.succ_msg = 1;
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth__model_new(&d, &c, &mx, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "bidir");
  etsim_synth_model_free(m0);
  etsim_synth_data_free(&d);
  /* A chain of 2,100 nodes (2,100 layers: 4.4 M > 2^22) is refused with
   * the option, by name, and taken without it. */
  deep_data(&d, 2100);
  m0 = toy_model(&d);
  c = m0->cfg;
  c.bidir = 1;
  etsim_synth_model_t *mb = toy_with(&d, &c);
  double l;
  assert_int_equal(etsim_synth__graph_loss(mb, &d, &d.g[0], 11, 0, 1, &l, NULL, &err),
                   ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "2100 layers and 2100 nodes");
  TU_CONTAINS(err.msg, "--bidir");
  assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[0], 11, 0, 1, &l, NULL, &err), 0);
  etsim_synth_model_free(mb);
  etsim_synth_model_free(m0);
  etsim_synth_data_free(&d);
}

static int same_dag(const etsim_synth_dag_t *a, const etsim_synth_dag_t *b, uint32_t n_ch) {
  return a->n_nodes == b->n_nodes && a->n_edges == b->n_edges &&
         !memcmp(a->x, b->x, sizeof(uint32_t) * a->n_nodes * n_ch) &&
         !memcmp(a->src, b->src, sizeof(uint32_t) * a->n_edges) &&
         !memcmp(a->dst, b->dst, sizeof(uint32_t) * a->n_edges);
}

/* Size matching (etsim_synth_sample_sized): graph i is the closest in node
 * count to nodes[i] of the first K draws, the earliest on ties.  So
 * (1) K = 1 samples exactly as etsim_synth_sample_ex with the same seed;
 * (2) as K grows, each graph's distance to its target never grows, and the
 *     graph changes exactly when it falls (a later draw that ties, or any
 *     draw after an exact match, does not replace it);
 * (3) on the toy model, whose single draws hold 2 to 7 nodes, 16 draws
 *     cut the total distance to targets of 2 and 6 nodes from 31 to 3
 *     (14 replacements over the 12 graphs). */
static void test_size_match(void **state) {
  (void)state;
  etsim_synth_data_t d, ex, s[17];
  toy_data(&d);
  etsim_synth_model_t *m = toy_model(&d);
  etsim_error_t err = {0};
  enum { N = 12 };
  uint32_t target[N];
  for (int i = 0; i < N; i++) target[i] = i % 2 ? 6 : 2;
  assert_int_equal(etsim_synth_sample_ex(m, N, NULL, 1, 9, 1, NULL, &ex, &err), 0);
  for (uint32_t k = 1; k <= 16; k++)
    assert_int_equal(etsim_synth_sample_sized(m, N, NULL, 1, target, k, 9, 1, NULL, &s[k], &err),
                     0);
  uint32_t d1 = 0, d16 = 0, lo = 99, hi = 0, changed = 0;
  for (int i = 0; i < N; i++) {
    assert_true(same_dag(&s[1].g[i], &ex.g[i], d.n_ch)); /* (1) */
    uint32_t prev = 1000;
    for (uint32_t k = 1; k <= 16; k++) { /* (2) */
      const etsim_synth_dag_t *g = &s[k].g[i];
      uint32_t dist = g->n_nodes > target[i] ? g->n_nodes - target[i] : target[i] - g->n_nodes;
      assert_true(dist <= prev);
      if (k > 1) assert_int_equal(!same_dag(g, &s[k - 1].g[i], d.n_ch), dist < prev);
      changed += k > 1 && dist < prev;
      prev = dist;
    }
    d16 += prev;
    uint32_t n1 = s[1].g[i].n_nodes;
    d1 += n1 > target[i] ? n1 - target[i] : target[i] - n1;
    lo = n1 < lo ? n1 : lo, hi = n1 > hi ? n1 : hi;
  }
  assert_int_equal(lo, 2); /* (3) */
  assert_int_equal(hi, 7);
  assert_int_equal(d1, 31);
  assert_int_equal(d16, 3);
  assert_int_equal(changed, 14);
  assert_int_equal(etsim_synth_sample_sized(m, N, NULL, 1, NULL, 4, 9, 1, NULL, &s[0], &err),
                   ETSIM_EINVAL);
  assert_int_equal(etsim_synth_sample_sized(m, N, NULL, 1, target, 0, 9, 1, NULL, &s[0], &err),
                   ETSIM_EINVAL);
  for (uint32_t k = 1; k <= 16; k++) etsim_synth_data_free(&s[k]);
  etsim_synth_data_free(&ex);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

/* toy_data and a third, wider graph (labels 1.6): layers {0, 8},
 * {1, 2, 3, 4}, {5, 6, 7}, so the attention has layers of several nodes. */
static void wide_data(etsim_synth_data_t *d) {
  toy_data(d);
  uint32_t x[18], s[10] = {0, 0, 0, 0, 1, 2, 3, 4, 0, 8}, t[10] = {1, 2, 3, 4, 5, 5, 6, 7, 7, 6};
  for (uint32_t i = 0; i < 9; i++) x[2 * i] = i % 3, x[2 * i + 1] = (i * 3) % 4;
  etsim_synth_dag_t g = {9, 10, x, s, t, 1.6, 0};
  assert_int_equal(etsim_synth_data_add(d, &g), 0);
}

/* Any of ten samples of m0 and m1 (seed 4, no labels) differ. */
static int samples_differ(etsim_synth_model_t *m0, etsim_synth_model_t *m1, uint32_t n_ch) {
  etsim_error_t err = {0};
  etsim_synth_data_t s0, s1;
  assert_int_equal(etsim_synth_sample(m0, 10, NULL, 4, &s0, &err), 0);
  assert_int_equal(etsim_synth_sample(m1, 10, NULL, 4, &s1, &err), 0);
  int diff = s0.n_graphs != s1.n_graphs;
  for (size_t i = 0; !diff && i < s0.n_graphs; i++)
    diff = s0.g[i].n_nodes != s1.g[i].n_nodes ||
           memcmp(s0.g[i].x, s1.g[i].x, sizeof(uint32_t) * s0.g[i].n_nodes * n_ch) != 0;
  etsim_synth_data_free(&s0);
  etsim_synth_data_free(&s1);
  return diff;
}

/* Attention within the new layer in the attribute denoiser (cfg.attn).
 * (1) Its 4 H x H maps come after all other parameters, which keep their
 *     initial values; Wq, Wk, Wv start random (a stream of their own) and
 *     Wo at zero, where the losses and the other parameters' gradients
 *     equal those of the model without it bit for bit, Wo gets gradients
 *     (Wq, Wk, Wv none yet, behind Wo), and the samples are the same,
 *     unguided and at w = 2 (both passes of guidance).
 * (2) With Wo set, only the attribute loss changes; the whole model's
 *     gradient (every parameter, the four maps included) matches central
 *     finite differences on each graph, and the samples change.
 * (3) With FiLM as well, FiLM's and the block's gradients match too. */
static void test_attn(void **state) {
  (void)state;
  etsim_synth_data_t d;
  wide_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m1;
  etsim_synth_config_t c = m0->cfg;
  c.attn = 1;
  etsim_error_t err = {0};
  m1 = toy_with(&d, &c);
  int H = c.hidden;
  size_t n0 = m0->n_params, hh = (size_t)H * H;
  TU_EQ(m1->n_params, n0 + 4 * hh);
  assert_ptr_equal(m1->aq.w, m1->w + n0);
  assert_ptr_equal(m1->ao.w, m1->w + n0 + 3 * hh);
  assert_memory_equal(m1->w, m0->w, sizeof(float) * n0);
  size_t nzw = 0;
  for (size_t i = n0; i < n0 + 3 * hh; i++) nzw += m1->w[i] != 0;
  TU_EQ(nzw, 3 * hh);
  for (size_t i = n0 + 3 * hh; i < m1->n_params; i++) TU_EQ(m1->w[i], 0.0f);
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double l0, l1, p0[3], p1[3];
    memset(m0->g, 0, sizeof(float) * n0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[gi], 11, 1, 1, &l0, p0, &err), 0);
    assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[gi], 11, 1, 1, &l1, p1, &err), 0);
    TU_EQ(l0, l1);
    assert_memory_equal(m1->g, m0->g, sizeof(float) * n0);
    size_t nzo = 0, nzq = 0;
    for (size_t i = n0; i < n0 + 3 * hh; i++) nzq += m1->g[i] != 0;
    for (size_t i = n0 + 3 * hh; i < m1->n_params; i++) nzo += m1->g[i] != 0;
    TU_EQ(nzq, 0);
    TU_GT(nzo * 2, hh);
  }
  for (int w = 0; w <= 2; w += 2) {
    assert_int_equal(etsim_synth_model_set_guidance(m0, w, &err), 0);
    assert_int_equal(etsim_synth_model_set_guidance(m1, w, &err), 0);
    same_sample_sets(m0, m1, d.n_ch);
  }
  /* (2) */
  etsim_rng_t r;
  etsim_rng_seed(&r, 42);
  ext_random(m1, n0 + 3 * hh, &r);
  for (size_t gi = 0; gi < d.n_graphs; gi++) {
    double l0, l1, p0[3], p1[3];
    assert_int_equal(etsim_synth__graph_loss(m0, &d, &d.g[gi], 11, 0, 1, &l0, p0, &err), 0);
    memset(m1->g, 0, sizeof(float) * m1->n_params);
    assert_int_equal(etsim_synth__graph_loss(m1, &d, &d.g[gi], 11, 1, 1, &l1, p1, &err), 0);
    print_message("graph %zu, Wo set: attr loss %.9g (without %.9g)\n", gi, p1[1], p0[1]);
    TU_EQ(p1[0], p0[0]);
    TU_EQ(p1[2], p0[2]);
    TU_GT(fabs(p1[1] - p0[1]), 1e-4);
    size_t bad = 0, nz = 0;
    for (size_t i = 0; i < n0; i++) {
      double num = num_grad(m1, &d, &d.g[gi], 11, i), ana = m1->g[i];
      nz += fabs(ana) > 1e-6;
      bad += fabs(num - ana) / (1e-3 + fabs(num) + fabs(ana)) > 0.03;
    }
    print_message("graph %zu: %zu other params, %zu nonzero grads, %zu off\n", gi, n0, nz, bad);
    TU_LE(bad * 200, n0); /* ReLU kinks of the pair scorer, as in check_gradient */
    TU_GT(nz * 2, n0);
    ext_grads_match(m1, &d, gi, n0, "attention", gi == 2 ? 2 : 0);
  }
  /* The toy model draws layers of several nodes: the samples change. */
  TU_EQ(samples_differ(m0, m1, d.n_ch), 1);
  assert_int_equal(etsim_synth_model_set_guidance(m0, 0, &err), 0);
  assert_int_equal(etsim_synth_model_set_guidance(m1, 0, &err), 0);
  TU_EQ(samples_differ(m0, m1, d.n_ch), 1);
  /* (3) With FiLM too (its output feeds the block): the gradients of
   * FiLM's and the block's parameters on the wide graph. */
  c.label_film = 1;
  etsim_synth_model_t *m2 = toy_with(&d, &c);
  size_t nf = 2 * ((size_t)SY_DY * 2 * H + 2 * (size_t)H);
  TU_EQ(m2->n_params, n0 + nf + 4 * hh);
  ext_random(m2, n0, &r);
  memset(m2->g, 0, sizeof(float) * m2->n_params);
  double l2;
  assert_int_equal(etsim_synth__graph_loss(m2, &d, &d.g[2], 11, 1, 1, &l2, NULL, &err), 0);
  ext_grads_match(m2, &d, 2, n0, "FiLM and attention", 2);
  etsim_synth_model_free(m2);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m1);
  etsim_synth_data_free(&d);
}

/* The attention block itself (etsim_synth__attn_fwd, which training and
 * sampling share), Wo set: rows attend within their own block only (a
 * one-row block gives h + (h Wv) Wo, each block alone gives the rows of
 * the joint call, a change in one block leaves the others as they were
 * and does change its own block's other rows), and permuting a block's
 * rows permutes its outputs. */
static void test_attn_block(void **state) {
  (void)state;
  etsim_synth_data_t d;
  wide_data(&d);
  etsim_synth_model_t *m0 = toy_model(&d), *m;
  etsim_synth_config_t c = m0->cfg;
  c.attn = 1;
  m = toy_with(&d, &c);
  etsim_rng_t r;
  etsim_rng_seed(&r, 42);
  int H = c.hidden;
  ext_random(m, m0->n_params + 3 * (size_t)H * H, &r);
  enum { N = 7 };
  const uint32_t bs[4] = {1, 2, 5, 8}; /* rows {0}, {1, 2, 3}, {4, 5, 6}, base 1 */
  float h[N * 64], h2[N * 64], Q[N * 64], K[N * 64], V[N * 64], A[N * 64], S[NN_ATTN_CHUNK * N];
  float out[N * 64], o2[N * 64], want[64], vv[64];
  TU_LE(H, 64);
  for (int i = 0; i < N * H; i++) h[i] = (float)etsim_rng_normal(&r);
  etsim_synth__attn_fwd(m, N, 3, bs, 1, h, Q, K, V, A, S, out);
  /* One row: softmax over one key is 1, A = V. */
  for (int j = 0; j < H; j++) {
    double v = 0;
    for (int i = 0; i < H; i++) v += (double)h[i] * m->av.w[i * H + j];
    vv[j] = (float)v;
  }
  for (int j = 0; j < H; j++) {
    double v = h[j];
    for (int i = 0; i < H; i++) v += (double)vv[i] * m->ao.w[i * H + j];
    want[j] = (float)v;
  }
  for (int j = 0; j < H; j++) assert_float_equal(out[j], want[j], 1e-5);
  double moved = 0;
  for (int b = 0; b < 3; b++) { /* each block alone */
    uint32_t one[2] = {0, bs[b + 1] - bs[b]};
    size_t r0 = (size_t)(bs[b] - 1) * H;
    etsim_synth__attn_fwd(m, (int)one[1], 1, one, 0, h + r0, Q, K, V, A, S, o2);
    for (size_t i = 0; i < one[1] * (size_t)H; i++) assert_float_equal(o2[i], out[r0 + i], 1e-5);
  }
  /* A change in row 5 (the last block) moves rows 4 and 6, not 0 to 3. */
  memcpy(h2, h, sizeof h);
  for (int j = 0; j < H; j++) h2[5 * H + j] += 1.0f;
  etsim_synth__attn_fwd(m, N, 3, bs, 1, h2, Q, K, V, A, S, o2);
  for (int i = 0; i < 4 * H; i++) assert_float_equal(o2[i], out[i], 1e-6);
  for (int j = 0; j < H; j++) moved += fabs(o2[4 * H + j] - out[4 * H + j]);
  print_message("row 5 changed: row 4 moved by %.4g (sum over units)\n", moved);
  TU_GT(moved, 1e-2);
  /* Permuted within blocks: rows 1 2 3 -> 3 1 2, rows 4 5 6 -> 6 5 4. */
  const int perm[N] = {0, 3, 1, 2, 6, 5, 4};
  for (int i = 0; i < N; i++) memcpy(h2 + i * H, h + perm[i] * H, sizeof(float) * H);
  etsim_synth__attn_fwd(m, N, 3, bs, 1, h2, Q, K, V, A, S, o2);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < H; j++) assert_float_equal(o2[i * H + j], out[perm[i] * H + j], 1e-5);
  etsim_synth_model_free(m0);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layers),
      cmocka_unit_test(test_schedule),
      cmocka_unit_test(test_model_gradient),
      cmocka_unit_test(test_count_reads_structure_only),
      cmocka_unit_test(test_sampled_gradient),
      cmocka_unit_test(test_sampled_unbiased),
      cmocka_unit_test(test_progress),
      cmocka_unit_test(test_two_labels),
      cmocka_unit_test(test_recency),
      cmocka_unit_test(test_label_drop),
      cmocka_unit_test(test_film),
      cmocka_unit_test(test_edge_scale),
      cmocka_unit_test(test_size_match),
      cmocka_unit_test(test_size_cond),
      cmocka_unit_test(test_size_cond_stop),
      cmocka_unit_test(test_succ),
      cmocka_unit_test(test_bidir),
      cmocka_unit_test(test_attn),
      cmocka_unit_test(test_attn_block),
  };
  return TU_RUN(tests, NULL, NULL);
}
