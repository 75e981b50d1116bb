/*
 * test_dlrm.c — DLRM traces from a sharding plan.
 *
 * Forward FLOPs per rank of the dense part equal batch x the closed form
 * (MLPerf DLRM 4,916,992 per sample; DCNv2 32,060,928), backward twice
 * that; every all-to-all's splits agree across ranks (what r sends p is
 * what p receives from r; total sends = total receives) and its comm_size
 * is the largest of any rank's sent or received bytes; every rank issues
 * the same collectives in the same order; data-parallel tables' gradients
 * are all-reduced whole (in buckets); FP16 halves the pooled exchange and
 * FP8 adds its kernels; pipelined iterations issue the next batch's
 * exchange before this batch's backward; traces validate; a plan naming
 * absent ranks is refused.
 */
#include "test_util.h"

#include "etsim/etcheck.h"
#include "etsim/gen.h"
#include "etsim/shard.h"

#include <math.h>
#include <sys/stat.h>

static int64_t iattr(const etsim_et_trace_t *t, size_t i, const char *n) {
  int64_t v = -1;
  etsim_et_trace_attr_int_by_name(t, i, n, &v);
  return v;
}

static const int64_t *list(const etsim_et_trace_t *t, size_t i, const char *name, size_t *n) {
  for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++) {
    etsim_attr_t a;
    etsim_et_trace_attr(t, k, &a);
    if (strcmp(a.name, name) == 0 && a.kind == ETSIM_ATTR_INT64_LIST) {
      *n = a.v.list.n;
      return a.v.list.v;
    }
  }
  return NULL;
}

static void finding(void *user, int severity, const char *line) {
  (void)user;
  if (severity == ETSIM_CHECK_PROBLEM) print_error("problem: %s\n", line);
}

static etsim_et_set_t *make(const char *preset, size_t ranks, size_t rph, const char *name,
                            etsim_shard_model_t *m, etsim_shard_plan_t *p) {
  etsim_error_t err = {0};
  assert_int_equal(etsim_shard_model_preset(preset, m, &err), 0);
  etsim_shard_opts_t so;
  etsim_shard_defaults(&so);
  so.ranks = ranks;
  so.ranks_per_host = rph;
  so.batch = 256;
  assert_int_equal(etsim_shard_plan(m, &so, p, &err), 0);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/%s", tmp, name);
  etsim_gen_dlrm_opts_t o = {0};
  o.model = m;
  o.plan = p;
  o.prefix = prefix;
  int rc = etsim_gen_dlrm(&o, NULL, &err);
  TU_OK(rc, err);
  etsim_et_set_t *s;
  assert_int_equal(etsim_et_set_load(&s, prefix, 0, &err), 0);
  return s;
}

static void check_flops_n(const etsim_et_set_t *s, uint64_t per_sample, uint64_t iters) {
  for (size_t r = 0; r < s->n_ranks; r++) {
    const etsim_et_trace_t *t = s->ranks[r];
    uint64_t fwd = 0, bwd = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
      const char *n = t->name[i];
      int mlp = strncmp(n, "bot_mlp", 7) == 0 || strncmp(n, "top_mlp", 7) == 0 ||
                strncmp(n, "interaction", 11) == 0;
      if (!mlp) continue;
      if (strstr(n, "_fwd")) fwd += (uint64_t)iattr(t, i, "num_ops");
      else bwd += (uint64_t)iattr(t, i, "num_ops");
    }
    assert_int_equal(fwd, iters * 256 * per_sample);
    assert_int_equal(bwd, iters * 2 * 256 * per_sample);
  }
}

static void check_flops(const etsim_et_set_t *s, uint64_t per_sample) {
  check_flops_n(s, per_sample, 1);
}

static void check_a2a_and_order(const etsim_et_set_t *s) {
  size_t P = s->n_ranks;
  const etsim_et_trace_t *t0 = s->ranks[0];
  for (size_t i0 = 0; i0 < t0->n_nodes; i0++) {
    if (t0->type[i0] != ETSIM_ET_COMM_COLL_NODE) continue;
    /* The same collective at the same position on every rank. */
    for (size_t r = 1; r < P; r++) {
      const etsim_et_trace_t *t = s->ranks[r];
      TU_LT(i0, t->n_nodes);
      assert_string_equal(t->name[i0], t0->name[i0]);
    }
    if (iattr(t0, i0, "comm_type") != ETSIM_COLL_ALL_TO_ALL) continue;
    int64_t total_in = 0, total_out = 0, maxsent = 0, maxrecv = 0;
    for (size_t r = 0; r < P; r++) {
      const etsim_et_trace_t *t = s->ranks[r];
      size_t n1, n2;
      const int64_t *in = list(t, i0, "in_split", &n1);
      const int64_t *out = list(t, i0, "out_split", &n2);
      assert_non_null(in);
      assert_non_null(out);
      assert_int_equal(n1, P);
      assert_int_equal(n2, P);
      int64_t sent = 0, recv = 0;
      for (size_t q = 0; q < P; q++) {
        size_t m1;
        const int64_t *qout = list(s->ranks[q], i0, "out_split", &m1);
        assert_int_equal(in[q], qout[r]); /* r -> q as q sees it */
        sent += in[q];
        recv += out[q];
        total_in += in[q];
        total_out += out[q];
      }
      if (sent > maxsent) maxsent = sent;
      if (recv > maxrecv) maxrecv = recv;
    }
    assert_int_equal(total_in, total_out);
    int64_t want = maxsent > maxrecv ? maxsent : maxrecv;
    for (size_t r = 0; r < P; r++) assert_int_equal(iattr(s->ranks[r], i0, "comm_size"), want);
  }
}

static void test_mlperf_dlrm(void **state) {
  (void)state;
  etsim_shard_model_t m;
  etsim_shard_plan_t p;
  etsim_et_set_t *s = make("mlperf-dlrm", 8, 8, "d8", &m, &p);
  assert_int_equal(s->n_ranks, 8);
  check_flops(s, 4916992);
  check_a2a_and_order(s);
  for (size_t k = 0; k < s->n_traces; k++)
    assert_int_equal(etsim_et_validate(s->traces[k], finding, NULL), 0);
  assert_int_equal(etsim_et_validate_set(s, finding, NULL), 0);
  /* Data-parallel tables all-reduce their whole gradient, in buckets. */
  const etsim_et_trace_t *t = s->ranks[3];
  int64_t dp = 0, got = 0;
  for (size_t tb = 0; tb < m.n_tables; tb++)
    if (p.table_type[tb] == ETSIM_SHARD_DP) dp += (int64_t)m.tables[tb].rows * 128 * 4;
  for (size_t i = 0; i < t->n_nodes; i++)
    if (strncmp(t->name[i], "dp_tables_grad_allreduce_", 25) == 0) got += iattr(t, i, "comm_size");
  TU_GT(dp, 0);
  assert_int_equal(got, dp);
  etsim_et_set_free(s);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static void test_dcnv2_two_hosts(void **state) {
  (void)state;
  etsim_shard_model_t m;
  etsim_shard_plan_t p;
  etsim_et_set_t *s = make("mlperf-dlrm-dcnv2", 16, 8, "v2", &m, &p);
  check_flops(s, 32060928);
  for (size_t k = 0; k < s->n_traces; k++)
    assert_int_equal(etsim_et_validate(s->traces[k], finding, NULL), 0);
  /* Host groups in the communicator file. */
  char path[4300];
  snprintf(path, sizeof path, "%s/v2.comm_group.json", tmp);
  size_t n;
  char *j = (char *)tu_read(path, &n);
  assert_non_null(j);
  TU_CONTAINS(j, "\"1\": [0, 1, 2, 3, 4, 5, 6, 7]");
  TU_CONTAINS(j, "\"2\": [8, 9, 10, 11, 12, 13, 14, 15]");
  free(j);
  etsim_et_set_free(s);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static void test_plan_roundtrip_and_bad_plan(void **state) {
  (void)state;
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  assert_int_equal(etsim_shard_model_preset("criteo-kaggle", &m, &err), 0);
  etsim_shard_opts_t so;
  etsim_shard_defaults(&so);
  so.ranks = 4;
  so.ranks_per_host = 4;
  etsim_shard_plan_t p, q;
  assert_int_equal(etsim_shard_plan(&m, &so, &p, &err), 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/plan.json", tmp);
  assert_int_equal(etsim_shard_plan_write(&p, &m, path, &err), 0);
  etsim_shard_opts_t ro;
  etsim_shard_defaults(&ro);
  assert_int_equal(etsim_shard_plan_read(path, &m, &ro, &q, &err), 0);
  assert_int_equal(q.n_shards, p.n_shards);
  assert_int_equal(q.n_ranks, 4);
  TU_NEAR(q.max_ms, p.max_ms, 1e-9 * (1 + p.max_ms));
  for (size_t t = 0; t < m.n_tables; t++) assert_int_equal(q.table_type[t], p.table_type[t]);
  etsim_shard_plan_free(&q);
  /* A plan naming rank 9 of 4. */
  size_t len = 0;
  char *j = (char *)tu_read(path, &len);
  char *at = strstr(j, "{\"rank\": 0,");
  assert_non_null(at);
  at[9] = '9';
  tu_write(path, j, len);
  free(j);
  assert_int_equal(etsim_shard_plan_read(path, &m, &ro, &q, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "tables[0].shards[0].rank: must be an integer in 0..3");
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

static etsim_et_set_t *make_with(const char *preset, size_t ranks, size_t rph, const char *name,
                                 const etsim_shard_step_t *step, etsim_shard_model_t *m,
                                 etsim_shard_plan_t *p) {
  etsim_error_t err = {0};
  assert_int_equal(etsim_shard_model_preset(preset, m, &err), 0);
  etsim_shard_opts_t so;
  etsim_shard_defaults(&so);
  so.ranks = ranks;
  so.ranks_per_host = rph;
  so.batch = 256;
  so.step = *step;
  so.types = 1u << ETSIM_SHARD_TW;
  assert_int_equal(etsim_shard_plan(m, &so, p, &err), 0);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/%s", tmp, name);
  etsim_gen_dlrm_opts_t o = {0};
  o.model = m;
  o.plan = p;
  o.prefix = prefix;
  int rc = etsim_gen_dlrm(&o, NULL, &err);
  TU_OK(rc, err);
  etsim_et_set_t *s;
  assert_int_equal(etsim_et_set_load(&s, prefix, 0, &err), 0);
  for (size_t k = 0; k < s->n_traces; k++)
    assert_int_equal(etsim_et_validate(s->traces[k], finding, NULL), 0);
  assert_int_equal(etsim_et_validate_set(s, finding, NULL), 0);
  return s;
}

static ssize_t node_named(const etsim_et_trace_t *t, const char *name) {
  for (size_t i = 0; i < t->n_nodes; i++)
    if (strcmp(t->name[i], name) == 0) return (ssize_t)i;
  return -1;
}

static void test_techniques(void **state) {
  (void)state;
  etsim_shard_opts_t d;
  etsim_shard_defaults(&d);
  etsim_shard_model_t m;
  etsim_shard_plan_t p;
  int64_t a2a[3];
  static const int precs[3] = {ETSIM_SHARD_PREC_FP32, ETSIM_SHARD_PREC_FP16, ETSIM_SHARD_PREC_FP8};
  for (int k = 0; k < 3; k++) {
    etsim_shard_step_t st = d.step;
    st.a2a_prec = st.ar_prec = precs[k];
    char name[16];
    snprintf(name, sizeof name, "prec%d", k);
    etsim_et_set_t *s = make_with("criteo-kaggle", 4, 4, name, &st, &m, &p);
    const etsim_et_trace_t *t = s->ranks[0];
    ssize_t o = node_named(t, "emb_output_alltoall"), q = node_named(t, "emb_output_quantize");
    TU_GE(o, 0);
    a2a[k] = iattr(t, (size_t)o, "comm_size");
    assert_int_equal(q >= 0, k == 2);
    assert_int_equal(node_named(t, "dense_grad_allreduce_0_dequantize") >= 0, k == 2);
    check_a2a_and_order(s);
    etsim_et_set_free(s);
    etsim_shard_plan_free(&p);
    etsim_shard_model_free(&m);
  }
  assert_int_equal(a2a[1] * 2, a2a[0]);
  assert_int_equal(a2a[2] * 4, a2a[0]);
  /* Three pipelined iterations: the next batch's pooled exchange is issued
   * before this batch's gradient exchange, and its lookup waits for this
   * lookup, not this update. */
  etsim_shard_step_t st = d.step;
  st.pipeline = 1;
  st.iterations = 3;
  etsim_et_set_t *s = make_with("criteo-kaggle", 4, 4, "pipe", &st, &m, &p);
  const etsim_et_trace_t *t = s->ranks[1];
  ssize_t o1 = node_named(t, "emb_output_alltoall#1"), g0 = node_named(t, "emb_grad_alltoall");
  ssize_t l1 = node_named(t, "emb_lookup#1"), l0 = node_named(t, "emb_lookup");
  ssize_t u0 = node_named(t, "emb_bwd_update"), o2 = node_named(t, "dense_optimizer#2");
  TU_GE(o1, 0);
  TU_GE(g0, 0);
  TU_GE(l1, 0);
  TU_GE(u0, 0);
  TU_GE(o2, 0);
  TU_LT(o1, g0);
  int on_l0 = 0, on_u0 = 0;
  for (uint32_t e = t->data_off[l1]; e < t->data_off[l1 + 1]; e++) {
    on_l0 |= t->data_par[e] == (uint32_t)l0;
    on_u0 |= t->data_par[e] == (uint32_t)u0;
  }
  assert_true(on_l0 && !on_u0);
  check_a2a_and_order(s);
  check_flops_n(s, etsim_shard_fwd_flops(&m), 3);
  etsim_et_set_free(s);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlperf_dlrm),
      cmocka_unit_test(test_dcnv2_two_hosts),
      cmocka_unit_test(test_plan_roundtrip_and_bad_plan),
      cmocka_unit_test(test_techniques),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
