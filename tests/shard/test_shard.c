/*
 * test_shard.c — DLRM models and the sharding planner.
 *
 * Presets hold the published facts (MLPerf DLRM: 26 tables, 204,184,588
 * rows, 4.92 MFLOP forward per sample; DCNv2: 214 lookups, 32.1 MFLOP;
 * Kaggle: 33,762,577 rows); shard sizes are TorchRec's (RW: ceil(rows/P)
 * with empty tail shards, CW: multiple-of-4 blocks); costs equal the
 * formulas of docs/shard.md; placement is LPT under the memory cap; the
 * search never does worse than uniform choices; bad input is refused.
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
  etsim_shard_model_t m2;
  assert_int_equal(etsim_shard_model_preset("synthetic-large", &m2, &err), 0);
  assert_memory_equal(m.tables, m2.tables, 512 * sizeof *m.tables); /* seeded */
  etsim_shard_model_free(&m);
  etsim_shard_model_free(&m2);

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
  /* The search is never worse than all-TW, all-RW or all-DP. */
  etsim_shard_plan_t best;
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), 0);
  for (int ty = 0; ty < 4; ty++) {
    int u[4] = {ty, ty, ty, ty};
    etsim_shard_plan_t q;
    assert_int_equal(etsim_shard_place(&m, &o, u, &q, &err), 0);
    TU_LE(best.max_ms, q.max_ms + 1e-12);
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
  /* ... but the planner finds a plan (row-wise) when it may. */
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), 0);
  TU_LE(best.max_bytes, 45000000);
  etsim_shard_plan_free(&best);
  /* Nothing fits at all. */
  o.hbm_gb = 0.001;
  assert_int_equal(etsim_shard_plan(&m, &o, &best, &err), ETSIM_ERANGE);
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
      for (size_t i = p.table_first[t]; i < p.table_first[t + 1]; i++)
        cells += p.shards[i].rows * p.shards[i].cols;
      uint64_t want = m.tables[t].rows * m.tables[t].dim;
      if (p.table_type[t] == ETSIM_SHARD_DP) want *= sizes[k];
      assert_int_equal(cells, want);
    }
    for (size_t r = 0; r < p.n_ranks; r++) TU_LE(p.rank_bytes[r], 32e9);
    char path[4200];
    snprintf(path, sizeof path, "%s/plan%zu.json", tmp, sizes[k]);
    assert_int_equal(etsim_shard_plan_write(&p, &m, path, &err), 0);
    size_t n;
    char *j = (char *)tu_read(path, &n);
    TU_CONTAINS(j, "\"etsim_shard_plan\": 1");
    TU_CONTAINS(j, "\"model\": \"mlperf-dlrm\"");
    free(j);
    etsim_shard_plan_free(&p);
  }
  etsim_shard_model_free(&m);
}

static void test_bad_input(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/bad.json", tmp);
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  write_model(path, "{\"rows\": 10, \"dim\": 0}");
  assert_int_equal(etsim_shard_model_load(path, &m, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "tables[0]: needs positive integers");
  write_model(path, "");
  assert_int_equal(etsim_shard_model_load(path, &m, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "non-empty array");
  tu_write(path, "{\"tables\": [", 12);
  assert_int_equal(etsim_shard_model_load(path, &m, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "bad.json:1:");
  m = load("{\"rows\": 10, \"dim\": 8}");
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = 10;
  o.ranks_per_host = 4;
  etsim_shard_plan_t p;
  assert_int_equal(etsim_shard_plan(&m, &o, &p, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "whole number of hosts");
  etsim_shard_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets),           cmocka_unit_test(test_shard_sizes),
      cmocka_unit_test(test_costs_closed_form), cmocka_unit_test(test_placement_and_search),
      cmocka_unit_test(test_mlperf_plans),      cmocka_unit_test(test_bad_input),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
