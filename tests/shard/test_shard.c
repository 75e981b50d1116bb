/*
 * test_shard.c — DLRM models, the sharding planner and the iteration model.
 *
 * Presets hold the published facts (MLPerf DLRM: 26 tables, 204,184,588
 * rows, 4.92 MFLOP forward per sample; DCNv2: 214 lookups, 32.1 MFLOP;
 * Kaggle: 33,762,577 rows) and dlrm-1t its trillion parameters; shard
 * sizes are TorchRec's (RW: ceil(rows/P), empty tail shards at the end,
 * CW: multiple-of-4 blocks); costs equal the formulas of docs/shard.md;
 * placement is LPT under the memory cap; the estimate of a plan whose
 * compute is free is the sum of its chained collectives; the planner is
 * never worse than any single type by its own estimate; reduced precision
 * shrinks the wire bytes and FP8 adds its kernels; Zipf hit rates are
 * harmonic-number ratios and HBM is filled hottest-first; every bad value
 * of a model or plan is refused with its key named.
 */
#include "test_util.h"

#include "etsim/shard.h"

#include <math.h>

static void test_presets(void **state) {
  (void)state;
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  assert_int_equal(etsim_shard_model_preset("mlperf-dlrm", &m, &err), 0);
  assert_int_equal(m.n_tables, 26);
  uint64_t rows = 0;
  for (size_t t = 0; t < m.n_tables; t++) {
    rows += m.tables[t].rows;
    assert_int_equal(m.tables[t].dim, 128);
  }
  assert_int_equal(rows, 204184588);
  assert_int_equal(etsim_shard_top_inputs(&m), 479);
  /* 340,992 bottom + 186,624 interaction + 4,389,376 top. */
  assert_int_equal(etsim_shard_fwd_flops(&m), 340992 + 186624 + 4389376);
  assert_int_equal(etsim_shard_model_check(&m, &err), 0);
  etsim_shard_model_free(&m);

  assert_int_equal(etsim_shard_model_preset("mlperf-dlrm-dcnv2", &m, &err), 0);
  double hot = 0;
  for (size_t t = 0; t < m.n_tables; t++) hot += m.tables[t].pooling;
  TU_EQ(hot, 214);
  assert_int_equal(etsim_shard_top_inputs(&m), 3456);
  /* bottom 340,992 + 3 cross layers x 4 x 3456 x 512 + top 10,486,272 */
  assert_int_equal(etsim_shard_fwd_flops(&m), 340992 + 21233664 + 10486272);
  etsim_shard_model_free(&m);

  assert_int_equal(etsim_shard_model_preset("criteo-kaggle", &m, &err), 0);
  rows = 0;
  for (size_t t = 0; t < m.n_tables; t++) rows += m.tables[t].rows;
  assert_int_equal(rows, 33762577);
  assert_int_equal(etsim_shard_fwd_flops(&m), 310272 + 23328 + 638464);
  etsim_shard_model_free(&m);

  assert_int_equal(etsim_shard_model_preset("synthetic-large", &m, &err), 0);
  assert_int_equal(m.n_tables, 512);
  /* Mixed widths: the preset uses DCNv2 and passes the model check. */
  assert_int_equal(m.interaction, ETSIM_DLRM_DCN);
  assert_int_equal(etsim_shard_model_check(&m, &err), 0);
  etsim_shard_model_t m2;
  assert_int_equal(etsim_shard_model_preset("synthetic-large", &m2, &err), 0);
  assert_memory_equal(m.tables, m2.tables, 512 * sizeof *m.tables); /* seeded */
  etsim_shard_model_free(&m);
  etsim_shard_model_free(&m2);

  /* dlrm-1t: 400 tables of width 128 holding 1.0e12 weights; forward
   * FLOPs: bottom 2(1024*1024 + 1024*512 + 512*128) = 3,276,800, one
   * cross layer 4 * 51,328 * 256 = 52,559,872, top 2(51,328*1024 +
   * 1024*512 + 512*256 + 256) = 106,430,976. */
  assert_int_equal(etsim_shard_model_preset("dlrm-1t", &m, &err), 0);
  assert_int_equal(m.n_tables, 400);
  double w = 0;
  for (size_t t = 0; t < m.n_tables; t++) w += (double)m.tables[t].rows * m.tables[t].dim;
  TU_GE(w, 1.0e12);
  TU_LT(w, 1.1e12);
  assert_int_equal(etsim_shard_top_inputs(&m), 51328);
  assert_int_equal(etsim_shard_fwd_flops(&m), 3276800 + 52559872 + 106430976);
  assert_int_equal(etsim_shard_model_check(&m, &err), 0);
  etsim_shard_model_free(&m);

  assert_int_equal(etsim_shard_model_preset("dlrm-xl", &m, &err), ETSIM_ENOTFOUND);
  TU_CONTAINS(err.msg, "unknown DLRM preset 'dlrm-xl'");
}

/* A small model written as JSON, loaded back. */
static void write_model(const char *path, const char *tables) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fprintf(fp,
          "{\"name\": \"toy\", \"tables\": [%s], \"bottom_mlp\": [4, 16],"
          " \"top_mlp\": [8, 1], \"interaction\": \"dcn\", \"dcn_layers\":"
          " 1, \"dcn_rank\": 4, \"batch\": 64}",
          tables);
  fclose(fp);
}

static etsim_shard_model_t load(const char *tables) {
  char path[4200];
  snprintf(path, sizeof path, "%s/m.json", tmp);
  write_model(path, tables);
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  int rc = etsim_shard_model_load(path, &m, &err);
  TU_OK(rc, err);
  return m;
}

static void test_shard_sizes(void **state) {
  (void)state;
  etsim_shard_model_t m = load(
      "{\"name\": \"a\", \"rows\": 10, \"dim\": 256}, {\"name\": \"b\", \"rows\": 2, "
      "\"dim\": 96}, {\"name\": \"c\", \"rows\": 100, \"dim\": 512}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 3;
  o.ranks_per_host = 3;
  etsim_error_t err = {0};
  int types[3] = {ETSIM_SHARD_RW, ETSIM_SHARD_RW, ETSIM_SHARD_CW};
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_place(&m, &o, types, &p, &err), 0);
  /* RW: ceil(10/3) = 4 rows: 4, 4, 2; ceil(2/3) = 1: 1, 1, 0. */
  static const uint64_t a_rows[3] = {4, 4, 2}, b_rows[3] = {1, 1, 0};
  assert_int_equal(p.table_first[1] - p.table_first[0], 3);
  for (int r = 0; r < 3; r++) {
    const etsim_shard_t *s = &p.shards[p.table_first[0] + r];
    assert_int_equal(s->rank, r);
    assert_int_equal(s->row_off, 4 * r);
    assert_int_equal(s->rows, a_rows[r]);
    assert_int_equal(p.shards[p.table_first[1] + r].rows, b_rows[r]);
  }
  /* CW of 512 columns: blocks of 128, on the least-loaded ranks. */
  assert_int_equal(p.table_first[3] - p.table_first[2], 4);
  for (int k = 0; k < 4; k++) {
    assert_int_equal(p.shards[p.table_first[2] + k].cols, 128);
    assert_int_equal(p.shards[p.table_first[2] + k].col_off, 128 * k);
  }
  etsim_shard_plan_free(&p);
  /* A 3-row table row-wise on 8 ranks: 1 row each on ranks 0-2, then
   * empty shards that start at the end of the table (not past it). */
  etsim_shard_plan_free(&p);
  o.ranks = 8;
  o.ranks_per_host = 8;
  int rw3[3] = {ETSIM_SHARD_RW, ETSIM_SHARD_RW, ETSIM_SHARD_RW};
  etsim_shard_model_t m3 = load(
      "{\"rows\": 3, \"dim\": 8}, {\"rows\": 3, \"dim\": 8}, "
      "{\"rows\": 30, \"dim\": 8}");
  assert_int_equal(etsim_shard_place(&m3, &o, rw3, &p, &err), 0);
  for (int r = 0; r < 8; r++) {
    const etsim_shard_t *x = &p.shards[p.table_first[0] + r];
    assert_int_equal(x->row_off, r < 3 ? r : 3);
    assert_int_equal(x->rows, r < 3 ? 1 : 0);
  }
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m3);
  o.ranks = 3;
  o.ranks_per_host = 3;
  /* CW of 256 is 2 x 128; of 96 (no multiple-of-4 divisor >= 128) one. */
  int cw[3] = {ETSIM_SHARD_CW, ETSIM_SHARD_CW, ETSIM_SHARD_TW};
  assert_int_equal(etsim_shard_place(&m, &o, cw, &p, &err), 0);
  assert_int_equal(p.table_first[1] - p.table_first[0], 2);
  assert_int_equal(p.table_first[2] - p.table_first[1], 1);
  assert_int_equal(p.shards[p.table_first[1]].cols, 96);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static void test_costs_closed_form(void **state) {
  (void)state;
  etsim_shard_model_t m = load("{\"rows\": 1000, \"dim\": 64, \"pooling\": 3}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 2;
  o.ranks_per_host = 2;
  o.batch = 512;
  etsim_error_t err = {0};
  etsim_shard_plan_t p;
  int tw = ETSIM_SHARD_TW, dp = ETSIM_SHARD_DP;
  assert_int_equal(etsim_shard_place(&m, &o, &tw, &p, &err), 0);
  double P = 2, B = 512, L = 3, i = 8, e = 4, d = 64, oB = 4;
  double hbm = 897e6, intra = 600e6; /* bytes per ms */
  double fwd = (P * B * L * i + P * B * L * d * e + P * B * d * oB) * 1.15 / hbm;
  double comm = P * B * d * oB / intra;
  const etsim_shard_t *s = &p.shards[0];
  TU_NEAR(s->fwd_ms, fwd, 1e-12);
  TU_NEAR(s->bwd_ms, 2 * fwd, 1e-12);
  TU_NEAR(s->fwd_comm_ms, comm, 1e-12);
  TU_NEAR(p.max_ms, (3 * fwd + 2 * comm), 1e-12);
  assert_int_equal(s->hbm_bytes, 1000 * 64 * 4 + (uint64_t)(P * B * L * i + P * B * d * oB));
  etsim_shard_plan_free(&p);
  /* DP: local lookups, an all-reduce of the table and 9.22 x its bytes of
   * optimizer traffic in the backward pass. */
  assert_int_equal(etsim_shard_place(&m, &o, &dp, &p, &err), 0);
  assert_int_equal(p.n_shards, 2);
  double w = 1000 * 64 * 4, f2 = (B * L * i + B * L * d * e) * 1.15 / hbm;
  TU_NEAR(p.shards[1].fwd_ms, f2, 1e-12);
  TU_NEAR(p.shards[1].bwd_ms, (2 * f2 + 9.22 * w / hbm), 1e-12);
  TU_NEAR(p.shards[1].bwd_comm_ms, w / intra, 1e-12);
  TU_EQ(p.shards[1].fwd_comm_ms, 0);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static void test_placement_and_search(void **state) {
  (void)state;
  /* Four equal tables, TW on 2 ranks: two each (LPT). */
  etsim_shard_model_t m = load(
      "{\"rows\": 100000, \"dim\": 64}, {\"rows\": 100000, \"dim\": 64}, "
      "{\"rows\": 100000, \"dim\": 64}, {\"rows\": 100000, \"dim\": 64}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 2;
  o.ranks_per_host = 2;
  etsim_error_t err = {0};
  int tw[4] = {0, 0, 0, 0};
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  TU_NEAR(p.rank_ms[0], p.rank_ms[1], 1e-12);
  assert_int_equal(p.rank_bytes[0], p.rank_bytes[1]);
  /* The planner is never worse than a single type by its estimate. */
  etsim_shard_plan_t best;
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), 0);
  for (int ty = 0; ty < 4; ty++) {
    int u[4] = {ty, ty, ty, ty};
    etsim_shard_plan_t q;
    assert_int_equal(etsim_shard_place(&m, &o, u, &q, &err), 0);
    TU_LE(best.est.iter_ns, q.est.iter_ns * (1 + 1e-12));
    etsim_shard_plan_free(&q);
  }
  etsim_shard_plan_free(&best);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
  /* Three 25.6 MB tables under a 45 MB cap: table-wise, one rank would
   * need two (51.7 MB with buffers); row-wise each rank holds 39.2 MB. */
  m = load(
      "{\"rows\": 100000, \"dim\": 64}, {\"rows\": 100000, \"dim\": 64}, "
      "{\"rows\": 100000, \"dim\": 64}");
  o.hbm_gb = 0.045;
  int rc = etsim_shard_place(&m, &o, tw, &p, &err);
  assert_int_equal(rc, ETSIM_ERANGE);
  TU_CONTAINS(err.msg, "does not fit as tw");
  /* ... but the planner finds a plan when it may shard. */
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), 0);
  TU_LE(best.max_bytes, 45000000);
  etsim_shard_plan_free(&best);
  /* Nothing fits at all. */
  o.hbm_gb = 0.001;
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), ETSIM_ERANGE);
  TU_CONTAINS(err.msg, "does not fit");
  etsim_shard_model_free(&m);
}

/* A calibration where every collective takes `ns` whatever its size. */
static void flat_calib(etsim_shard_calib_t *c, size_t P, size_t Pl, double ns) {
  memset(c, 0, sizeof *c);
  c->ranks = (uint32_t)P;
  c->ranks_per_host = (uint32_t)Pl;
  for (int k = 0; k < ETSIM_SHARD_N_COLLS; k++)
    for (int s = 0; s < ETSIM_SHARD_N_SCOPES; s++) {
      c->c[k][s].n = 2;
      c->c[k][s].bytes[0] = 1;
      c->c[k][s].bytes[1] = 1e12;
      c->c[k][s].ns[0] = c->c[k][s].ns[1] = ns;
    }
}

static const etsim_shard_node_t *find_node(const etsim_shard_dag_t *d, const char *name) {
  for (size_t i = 0; i < d->n; i++)
    if (strcmp(d->v[i].name, name) == 0) return &d->v[i];
  return NULL;
}

static void test_estimate_closed_form(void **state) {
  (void)state;
  /* With compute made free (1e6 TFLOPS, 1e6 GB/s), an iteration is its
   * chained collectives: TW on 2 ranks has the input, output and
   * gradient all-to-alls and one dense all-reduce bucket. */
  etsim_shard_model_t m = load("{\"rows\": 1000, \"dim\": 4}, {\"rows\": 1000, \"dim\": 4}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 2;
  o.ranks_per_host = 2;
  o.step.peak_tflops = 1e6;
  o.step.mem_gbps = 1e6;
  etsim_shard_calib_t cal;
  flat_calib(&cal, 2, 2, 1000);
  o.calib = &cal;
  etsim_error_t err = {0};
  int tw[2] = {ETSIM_SHARD_TW, ETSIM_SHARD_TW}, dp[2] = {ETSIM_SHARD_DP, ETSIM_SHARD_DP};
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  TU_NEAR(p.est.total_ns, 4000, 1);
  TU_NEAR(p.est.coll_ns[ETSIM_SHARD_COLL_A2A], 3000, 1);
  TU_NEAR(p.est.coll_ns[ETSIM_SHARD_COLL_AR], 1000, 1);
  etsim_shard_plan_free(&p);
  /* Data-parallel: no all-to-all; the dense bucket and one bucket of both
   * tables' gradients. */
  assert_int_equal(etsim_shard_place(&m, &o, dp, &p, &err), 0);
  TU_NEAR(p.est.total_ns, 2000, 1);
  TU_EQ(p.est.coll_ns[ETSIM_SHARD_COLL_A2A], 0);
  etsim_shard_plan_free(&p);
  /* Three iterations: three times the collectives, pipelined or not. */
  o.step.iterations = 3;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  TU_NEAR(p.est.total_ns, 12000, 1);
  TU_NEAR(p.est.iter_ns, 4000, 1);
  etsim_shard_plan_free(&p);
  o.step.pipeline = 1;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  TU_NEAR(p.est.total_ns, 12000, 1);
  etsim_shard_plan_free(&p);
  /* Without compute the closed forms: one host of 2 ranks at 600 GB/s, an
   * all-to-all of S bytes takes S * (2-1)/2 / 600 ns. */
  o.calib = NULL;
  o.step.iterations = 1;
  o.step.pipeline = 0;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  etsim_shard_flow_t *f;
  assert_int_equal(etsim_shard_flow_make(&m, &p, &f, &err), 0);
  etsim_shard_dag_t d = {0};
  assert_int_equal(etsim_shard_flow_dag(f, SIZE_MAX, &d, &err), 0);
  const etsim_shard_node_t *out = find_node(&d, "emb_output_alltoall");
  assert_non_null(out);
  /* Each rank owns one table and sends B = 64 samples x 4 fp32 to both
   * ranks; the ids, 8 bytes each, go the other way.  Output and gradient
   * exchanges have the same size. */
  const etsim_shard_node_t *in = find_node(&d, "input_dist_alltoall");
  assert_non_null(in);
  assert_int_equal(out->bytes, 2 * 64 * 4 * 4);
  assert_int_equal(in->bytes, 2 * 64 * 8);
  double want = (2.0 * out->bytes + in->bytes) * 0.5 / 600;
  assert_true(p.est.coll_ns[ETSIM_SHARD_COLL_A2A] > want * 0.999 &&
              p.est.coll_ns[ETSIM_SHARD_COLL_A2A] < want * 1.001);
  etsim_shard_dag_free(&d);
  etsim_shard_flow_free(f);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static void test_precision(void **state) {
  (void)state;
  etsim_shard_model_t m = load("{\"rows\": 1000, \"dim\": 64}, {\"rows\": 1000, \"dim\": 64}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 2;
  o.ranks_per_host = 2;
  etsim_error_t err = {0};
  int tw[2] = {ETSIM_SHARD_TW, ETSIM_SHARD_TW};
  uint64_t size[ETSIM_SHARD_N_PRECS], ar[ETSIM_SHARD_N_PRECS];
  for (int pr = 0; pr < ETSIM_SHARD_N_PRECS; pr++) {
    o.step.a2a_prec = o.step.ar_prec = pr;
    etsim_shard_plan_t p;
    assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
    etsim_shard_flow_t *f;
    assert_int_equal(etsim_shard_flow_make(&m, &p, &f, &err), 0);
    etsim_shard_dag_t d = {0};
    assert_int_equal(etsim_shard_flow_dag(f, 0, &d, &err), 0);
    const etsim_shard_node_t *o1 = find_node(&d, "emb_output_alltoall");
    const etsim_shard_node_t *g = find_node(&d, "emb_grad_alltoall");
    const etsim_shard_node_t *a = find_node(&d, "dense_grad_allreduce_0");
    const etsim_shard_node_t *q = find_node(&d, "emb_output_quantize");
    const etsim_shard_node_t *dq = find_node(&d, "emb_grad_dequantize");
    assert_non_null(o1);
    assert_non_null(g);
    assert_non_null(a);
    size[pr] = o1->bytes;
    ar[pr] = a->bytes;
    assert_int_equal(g->bytes, o1->bytes);
    if (etsim_shard_prec_quantized(pr)) {
      /* Rank 0 sends B = 64 samples x 64 values to each of 2 ranks: 8,192
       * elements, quantized reading fp32 twice and writing 1 byte each. */
      assert_non_null(q);
      assert_non_null(dq);
      assert_int_equal(q->bytes, 8192 * 9);
      assert_int_equal(q->flops, 8192 * 4);
      assert_non_null(find_node(&d, "dense_grad_allreduce_0_quantize"));
    } else {
      assert_null(q);
      assert_null(dq);
    }
    etsim_shard_dag_free(&d);
    etsim_shard_flow_free(f);
    etsim_shard_plan_free(&p);
  }
  assert_int_equal(size[ETSIM_SHARD_PREC_FP32], 2 * 64 * 64 * 4);
  assert_int_equal(size[ETSIM_SHARD_PREC_FP16], size[0] / 2);
  assert_int_equal(size[ETSIM_SHARD_PREC_BF16], size[0] / 2);
  assert_int_equal(size[ETSIM_SHARD_PREC_FP8], size[0] / 4);
  assert_int_equal(size[ETSIM_SHARD_PREC_INT8], size[0] / 4);
  assert_int_equal(ar[ETSIM_SHARD_PREC_FP16], ar[0] / 2);
  assert_int_equal(ar[ETSIM_SHARD_PREC_INT8], ar[0] / 4);
  etsim_shard_model_free(&m);
}

static void test_tiers(void **state) {
  (void)state;
  /* Zipf hit rates: H(5)/H(10) with a = 1 is 2.283333/2.928968. */
  etsim_shard_model_t m = load("{\"rows\": 10, \"dim\": 4}, {\"rows\": 2000000, \"dim\": 4}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.tiers.zipf_alpha = 1;
  double h = etsim_shard_hit_fraction(&o.tiers, &m, 0, 0.5);
  TU_NEAR(h, (137.0 / 60) / (7381.0 / 2520), 1e-12);
  /* The integral tail of the harmonic number agrees with the sum. */
  o.tiers.zipf_alpha = 1.05;
  double exact = 0;
  for (int i = 1; i <= 2000000; i++) exact += pow(i, -1.05);
  double part = 0;
  for (int i = 1; i <= 200000; i++) part += pow(i, -1.05);
  h = etsim_shard_hit_fraction(&o.tiers, &m, 1, 0.1);
  TU_NEAR(h, part / exact, 1e-9);
  etsim_shard_model_free(&m);
  /* Two 64 MB tables on one rank with 80 MB of HBM and 100 MB of DDR: the
   * one looked up ten times as often has every row hotter per byte than
   * the other's tail, so it stays whole in HBM and the other fills the
   * rest; HBM stays within its cap; everything fits HBM + DDR. */
  m = load(
      "{\"rows\": 250000, \"dim\": 64, \"pooling\": 10}, "
      "{\"rows\": 250000, \"dim\": 64, \"pooling\": 1}");
  etsim_shard_defaults(&o);
  o.ranks = 1;
  o.ranks_per_host = 1;
  o.batch = 64;
  o.hbm_gb = 0.08;
  o.tiers.ddr_gb = 0.1;
  etsim_error_t err = {0};
  int tw[2] = {ETSIM_SHARD_TW, ETSIM_SHARD_TW};
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), 0);
  assert_true(p.tiered);
  const etsim_shard_t *a = &p.shards[0], *b = &p.shards[1];
  assert_int_equal(a->hbm_rows, 250000);
  TU_GT(b->hbm_rows, 0);
  TU_LT(b->hbm_rows, 250000);
  TU_EQ(a->hbm_hit, 1);
  TU_GT(b->hbm_hit, 0.5);
  TU_LT(b->hbm_hit, 1);
  /* b's cached share hits H(h)/H(250000) of its lookups (Zipf 1.05). */
  double hb = 0, hall = 0;
  for (int i = 1; i <= 250000; i++) {
    double v = pow(i, -1.05);
    hall += v;
    if (i <= (int)b->hbm_rows) hb += v;
  }
  TU_NEAR(b->hbm_hit, hb / hall, 1e-6);
  TU_LE(p.rank_bytes[0], 80000000);
  TU_GT(p.rank_bytes[0], 79000000);
  assert_int_equal(a->hbm_rows + a->ddr_rows, 250000);
  assert_int_equal(b->hbm_rows + b->ddr_rows, 250000);
  TU_EQ(a->ddr_hit, 1);
  TU_EQ(b->ddr_hit, 1);
  /* The fetch of the misses: latency + bytes / bandwidth, rows of 256 B
   * (above the 64 B granule); ids: 64 x 10 and 64 x 1 per iteration. */
  etsim_shard_flow_t *f;
  assert_int_equal(etsim_shard_flow_make(&m, &p, &f, &err), 0);
  etsim_shard_dag_t d = {0};
  assert_int_equal(etsim_shard_flow_dag(f, 0, &d, &err), 0);
  const etsim_shard_node_t *fe = find_node(&d, "emb_fetch");
  assert_non_null(fe);
  double bytes = (640 * (1 - a->hbm_hit) + 64 * (1 - b->hbm_hit)) * 256;
  TU_LE(fabs((double)fe->bytes - bytes), 1);
  TU_LE(fabs((double)fe->dur_ns - (5000 + bytes / 25)), 1);
  assert_non_null(find_node(&d, "emb_writeback"));
  etsim_shard_dag_free(&d);
  etsim_shard_flow_free(f);
  etsim_shard_plan_free(&p);
  /* Too little of everything. */
  o.tiers.ddr_gb = 0.01;
  assert_int_equal(etsim_shard_place(&m, &o, tw, &p, &err), ETSIM_ERANGE);
  /* Counts from an access trace: table 1's row 7 takes 3 of 4 lookups. */
  char path[4200];
  snprintf(path, sizeof path, "%s/acc.txt", tmp);
  tu_write(path, "# table row count\n1 7 3\n1 9\n0 1 2\n", 34);
  etsim_shard_access_t *acc;
  assert_int_equal(etsim_shard_access_load(path, &m, &acc, &err), 0);
  o.tiers.access = acc;
  TU_NEAR(etsim_shard_hit_fraction(&o.tiers, &m, 1, 1.0 / 250000), 0.75, 1e-12);
  TU_NEAR(etsim_shard_hit_fraction(&o.tiers, &m, 1, 2.0 / 250000), 1, 1e-12);
  etsim_shard_access_free(acc);
  tu_write(path, "1 250000\n", 9); /* row out of range */
  assert_int_equal(etsim_shard_access_load(path, &m, &acc, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "acc.txt:1:");
  etsim_shard_model_free(&m);
}

static void test_mlperf_plans(void **state) {
  (void)state;
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  assert_int_equal(etsim_shard_model_preset("mlperf-dlrm", &m, &err), 0);
  size_t sizes[3] = {8, 64, 128};
  for (int k = 0; k < 3; k++) {
    etsim_shard_opts_t o;
    etsim_shard_defaults(&o);
    o.ranks = sizes[k];
    o.ranks_per_host = 8;
    etsim_shard_plan_t p;
    assert_int_equal(etsim_shard_plan(&m, &o, &p, &err), 0);
    /* Every table's rows are covered exactly once per column block (or
     * once per rank for DP). */
    for (size_t t = 0; t < m.n_tables; t++) {
      uint64_t cells = 0;
      for (size_t i = p.table_first[t]; i < p.table_first[t + 1]; i++) {
        cells += p.shards[i].rows * p.shards[i].cols;
        TU_LE(p.shards[i].row_off + p.shards[i].rows, m.tables[t].rows);
      }
      uint64_t want = m.tables[t].rows * m.tables[t].dim;
      if (p.table_type[t] == ETSIM_SHARD_DP) want *= sizes[k];
      assert_int_equal(cells, want);
    }
    for (size_t r = 0; r < p.n_ranks; r++) TU_LE(p.rank_bytes[r], 32e9);
    TU_GT(p.est.iter_ns, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/plan%zu.json", tmp, sizes[k]);
    assert_int_equal(etsim_shard_plan_write(&p, &m, path, &err), 0);
    size_t n;
    char *j = (char *)tu_read(path, &n);
    TU_CONTAINS(j, "\"etsim_shard_plan\": 2");
    TU_CONTAINS(j, "\"model\": \"mlperf-dlrm\"");
    free(j);
    /* Read back: same shards, same estimate. */
    etsim_shard_opts_t ro;
    etsim_shard_defaults(&ro);
    etsim_shard_plan_t q;
    assert_int_equal(etsim_shard_plan_read(path, &m, &ro, &q, &err), 0);
    assert_int_equal(q.n_shards, p.n_shards);
    TU_NEAR(q.est.iter_ns, p.est.iter_ns, 1e-6 * p.est.iter_ns);
    etsim_shard_plan_free(&q);
    etsim_shard_plan_free(&p);
  }
  etsim_shard_model_free(&m);
}

/* Load `tables` as a model and expect `code` with `msg` in the error. */
static void expect_model_error(const char *json, const char *msg) {
  char path[4200];
  snprintf(path, sizeof path, "%s/bad.json", tmp);
  tu_write(path, json, strlen(json));
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  int rc = etsim_shard_model_load(path, &m, &err);
  if (rc == 0 || !strstr(err.msg, msg)) print_error("%s\n  want: %s\n", err.msg, msg);
  assert_int_not_equal(rc, 0);
  TU_CONTAINS(err.msg, msg);
  TU_CONTAINS(err.msg, "bad.json");
}

static void test_bad_input(void **state) {
  (void)state;
#define TOP                                                                  \
  "\"bottom_mlp\": [4, 16], \"top_mlp\": [8, 1], \"interaction\": \"dcn\", " \
  "\"dcn_layers\": 1, \"dcn_rank\": 4"
  expect_model_error("{\"tables\": [{\"rows\": 10, \"dim\": 0}], " TOP "}",
                     "tables[0].dim: must be an integer in 1..65536");
  expect_model_error("{\"tables\": [{\"rows\": 10, \"dim\": 8, \"pooling\": 1e308}], " TOP "}",
                     "tables[0].pooling: must be a number in (0, 1e+06]");
  expect_model_error("{\"tables\": [{\"rows\": 10, \"dim\": 8, \"pooling\": \"many\"}], " TOP "}",
                     "tables[0].pooling");
  expect_model_error("{\"tables\": [{\"rows\": 9223372036854775807, \"dim\": 8}], " TOP "}",
                     "tables[0].rows: must be an integer in 1..1099511627776");
  expect_model_error("{\"tables\": [{\"rows\": -5, \"dim\": 8}], " TOP "}", "tables[0].rows");
  expect_model_error("{\"tables\": [{\"rows\": 5, \"dim\": 8, \"elem_bytes\": 3}], " TOP "}",
                     "tables[0].elem_bytes: must be 1, 2, 4 or 8");
  expect_model_error("{\"tables\": [{\"rows\": 5, \"dim\": 8, \"rowz\": 3}], " TOP "}",
                     "tables[0].rowz: unknown key");
  expect_model_error("{\"tables\": [{\"rows\": 5, \"dim\": 8}], \"batch\": 0, " TOP "}",
                     "batch: must be an integer in 1..16777216");
  expect_model_error(
      "{\"tables\": [{\"rows\": 5, \"dim\": 8}], \"bottom_mlp\": [4, 16], "
      "\"top_mlp\": [0]}",
      "top_mlp[0]: must be an integer in 1..65536");
  expect_model_error(
      "{\"tables\": [{\"rows\": 5, \"dim\": 8}], \"bottom_mlp\": [4, 16], "
      "\"top_mlp\": [1]}",
      "dot interaction needs every table at the bottom MLP's output width 16");
  expect_model_error("{\"tables\": []}", "an array of 1 to 4194304 tables");
  expect_model_error("{\"tables\": [", "bad.json:1:");
#undef TOP
  etsim_shard_model_t m = load("{\"rows\": 10, \"dim\": 8}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  etsim_error_t err = {0};
  o.ranks = 10;
  o.ranks_per_host = 4;
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_plan(&m, &o, &p, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "whole number of hosts");
  o.ranks_per_host = 10;
  o.step.iterations = 1;
  o.step.pipeline = 1;
  assert_int_equal(etsim_shard_plan(&m, &o, &p, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "pipelining needs 2 or more");
  etsim_shard_model_free(&m);
}

/* Write a good 4-rank plan (2 hosts) and rewrite one part of it. */
static void expect_plan_error(const char *from, const char *to, const char *msg) {
  etsim_shard_model_t m = load(
      "{\"rows\": 1000, \"dim\": 8}, {\"rows\": 3, \"dim\": 8}, "
      "{\"rows\": 1000, \"dim\": 8}, {\"rows\": 1000, \"dim\": 8}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 4;
  o.ranks_per_host = 2;
  etsim_error_t err = {0};
  int types[4] = {ETSIM_SHARD_RW, ETSIM_SHARD_RW, ETSIM_SHARD_TWRW, ETSIM_SHARD_DP};
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_place(&m, &o, types, &p, &err), 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/plan.json", tmp);
  assert_int_equal(etsim_shard_plan_write(&p, &m, path, &err), 0);
  etsim_shard_plan_free(&p);
  size_t n = 0;
  char *j = (char *)tu_read(path, &n);
  char *at = strstr(j, from);
  if (!at) print_error("'%s' not in %s\n", from, j);
  assert_non_null(at);
  size_t fl = strlen(from), tl = strlen(to);
  char *k = malloc(n + tl + 1);
  memcpy(k, j, (size_t)(at - j));
  memcpy(k + (at - j), to, tl);
  memcpy(k + (at - j) + tl, at + fl, n - (size_t)(at - j) - fl);
  tu_write(path, k, n - fl + tl);
  free(j);
  free(k);
  etsim_shard_opts_t ro;
  etsim_shard_defaults(&ro);
  int rc = etsim_shard_plan_read(path, &m, &ro, &p, &err);
  if (!msg) { /* the plan as written must read */
    TU_OK(rc, err);
    assert_int_equal(p.n_shards, 4 + 4 + 2 + 4);
    etsim_shard_plan_free(&p);
  } else {
    if (rc == 0 || !strstr(err.msg, msg)) print_error("%s\n  want: %s\n", err.msg, msg);
    assert_int_not_equal(rc, 0);
    TU_CONTAINS(err.msg, msg);
  }
  etsim_shard_model_free(&m);
}

static void test_bad_plans(void **state) {
  (void)state;
  /* The unchanged plan reads (3-row table row-wise on 4 ranks included). */
  expect_plan_error("\"ranks\": 4", "\"ranks\": 4", NULL);
  /* ...so the errors below come from the edits alone. */
  expect_plan_error("\"rows\": [0, 250]", "\"rows\": [-1, 250]",
                    "tables[0].shards[0].rows: must be [offset, count]");
  expect_plan_error("\"rows\": [0, 250]", "\"rows\": [\"0\", 250]",
                    "tables[0].shards[0].rows: must be [offset, count]");
  expect_plan_error("\"rows\": [0, 250]", "\"rows\": [18446744073709551615, 250]",
                    "plan.json:4:"); /* beyond 64 bits: the JSON reader refuses it */
  expect_plan_error("\"rows\": [0, 250]", "\"rows\": [9223372036854775807, 250]",
                    "tables[0].shards[0].rows: must be [offset, count]");
  expect_plan_error("\"rows\": [0, 250]", "\"rows\": [0, 251]",
                    "tables[0].shards: the row ranges must cover the table's rows once");
  expect_plan_error("\"rank\": 1, \"rows\": [250", "\"rank\": 0, \"rows\": [250",
                    "tables[0].shards: a rank holds two shards of this table");
  expect_plan_error("\"rank\": 0, \"rows\": [0, 250]", "\"rank\": 9, \"rows\": [0, 250]",
                    "tables[0].shards[0].rank: must be an integer in 0..3");
  expect_plan_error("\"rank\": 0, \"rows\": [0, 250]", "\"rank\": 0.5, \"rows\": [0, 250]",
                    "tables[0].shards[0].rank");
  expect_plan_error("\"type\": \"rw\"", "\"type\": \"(null)\"",
                    "tables[0].type: must be one of tw, rw, cw, dp, twrw, twcw");
  expect_plan_error("\"type\": \"dp\"", "\"type\": \"tw\"",
                    "tables[3].shards: a tw table needs exactly 1 shards");
  expect_plan_error("\"cols\": [0, 8]", "\"cols\": [0, 0]",
                    "tables[0].shards[0].cols: a shard needs at least one column");
  expect_plan_error("\"ranks_per_host\": 2", "\"ranks_per_host\": 3",
                    "ranks_per_host: must divide");
  expect_plan_error("\"iterations\": 1", "\"iterations\": 0",
                    "step.iterations: must be an integer in 1..64");
  expect_plan_error("\"a2a_precision\": \"fp32\"", "\"a2a_precision\": \"fp4\"",
                    "step.a2a_precision: must be fp32, fp16, bf16, fp8 or int8");
  expect_plan_error("\"rows\": 1000, \"dim\": 8, \"pooling\": 1, \"type\": \"rw\"",
                    "\"rows\": 999, \"dim\": 8, \"pooling\": 1, \"type\": \"rw\"",
                    "tables[0].rows: the plan's table is not model toy's");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets),
      cmocka_unit_test(test_shard_sizes),
      cmocka_unit_test(test_costs_closed_form),
      cmocka_unit_test(test_placement_and_search),
      cmocka_unit_test(test_estimate_closed_form),
      cmocka_unit_test(test_precision),
      cmocka_unit_test(test_tiers),
      cmocka_unit_test(test_mlperf_plans),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_bad_plans),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
