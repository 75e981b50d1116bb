/*
 * test_roundtrip.c — every real Chakra file under ../shared/traces reads
 * and writes back byte for byte, through the in-memory trace and through the
 * streaming reader + writer; the in-memory model holds the published facts
 * of chakra.0.et (3,664 nodes, 181,878 data edges, the feeder tests' nodes).
 */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include "etsim/et.h"

#include <ftw.h>

static void assert_same_file(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  unsigned char *da = tu_read(a, &na), *db = tu_read(b, &nb);
  assert_non_null(da);
  assert_non_null(db);
  if (na != nb) print_error("%s: %zu bytes, rewritten %zu bytes\n", a, na, nb);
  assert_int_equal(na, nb);
  size_t i = 0;
  while (i < na && da[i] == db[i]) i++;
  if (i < na) print_error("%s: first difference at byte %zu\n", a, i);
  assert_int_equal(i, na);
  free(da);
  free(db);
}

static int n_checked;

static void roundtrip_one(const char *path) {
  etsim_error_t err = {0};
  char out[4200], out2[4200];
  snprintf(out, sizeof out, "%s/rt.et", tmp);
  snprintf(out2, sizeof out2, "%s/rt2.et", tmp);

  etsim_et_trace_t *t;
  int rc = etsim_et_trace_load(&t, path, 0, &err);
  TU_OK(rc, err);
  rc = etsim_et_trace_write(t, out, 0, &err);
  assert_int_equal(rc, 0);
  assert_same_file(path, out);

  /* Streaming path: reader views straight into the writer. */
  etsim_et_reader_t *r;
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_reader_open(&r, path, 0, &err), 0);
  assert_int_equal(etsim_et_writer_open(&w, out2, ETSIM_ET_WRITE_VERBATIM, &err), 0);
  assert_int_equal(etsim_et_writer_meta(w, etsim_et_reader_meta(r), &err), 0);
  const etsim_et_node_t *n;
  size_t count = 0;
  while ((rc = etsim_et_reader_next(r, &n, &err)) == 1) {
    assert_int_equal(etsim_et_writer_node(w, n, &err), 0);
    count++;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(count, t->n_nodes);
  etsim_et_reader_close(r);
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
  assert_same_file(path, out2);
  etsim_et_trace_free(t);
  n_checked++;
}

static int visit(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  size_t n = strlen(p);
  if (flag == FTW_F && n > 3 && strcmp(p + n - 3, ".et") == 0) roundtrip_one(p);
  return 0;
}

static void test_all_shared_traces(void **state) {
  (void)state;
  TU_NEED_SHARED(root, "traces");
  n_checked = 0;
  nftw(root, visit, 16, FTW_PHYS);
  char *c0 = tu_chakra0(tmp);
  assert_non_null(c0);
  roundtrip_one(c0);
  free(c0);
  free(root);
  /* 16 microbenchmark files + 8 custom all-reduce files + chakra.0.et. */
  assert_int_equal(n_checked, 25);
}

static void test_chakra0_model(void **state) {
  (void)state;
  char *c0 = tu_chakra0(tmp);
  if (!c0) {
    TU_SKIP("../shared/traces is absent");
  }
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, c0, 0, &err), 0);
  assert_int_equal(t->n_nodes, 3664);
  assert_int_equal(t->n_data_edges, 181878);
  size_t comp = 0, coll = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    comp += t->type[i] == ETSIM_ET_COMP_NODE;
    coll += t->type[i] == ETSIM_ET_COMM_COLL_NODE;
  }
  assert_int_equal(comp, 3643);
  assert_int_equal(coll, 21);
  /* Feeder test facts: node 216 is a CPU COMP node with rf_id 2, node 432
   * a collective with rf_id 110; 216's first children are 217, 430, 435. */
  size_t i216, i432;
  assert_true(etsim_et_trace_find(t, 216, &i216));
  assert_true(etsim_et_trace_find(t, 432, &i432));
  assert_int_equal(t->type[i216], ETSIM_ET_COMP_NODE);
  assert_int_equal(t->type[i432], ETSIM_ET_COMM_COLL_NODE);
  int64_t v;
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, i216, "rf_id", &v), 1);
  assert_int_equal(v, 2);
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, i432, "rf_id", &v), 1);
  assert_int_equal(v, 110);
  assert_int_equal(etsim_et_trace_attr_int(t, i216, t->k_is_cpu_op, &v), 1);
  assert_int_equal(v, 1);
  uint32_t c0i = t->data_coff[i216];
  TU_GE(t->data_coff[i216 + 1] - c0i, 3);
  assert_int_equal(t->id[t->data_chd[c0i]], 217);
  assert_int_equal(t->id[t->data_chd[c0i + 1]], 430);
  assert_int_equal(t->id[t->data_chd[c0i + 2]], 435);
  /* Control dependencies on absent ids (validate's 1,277). */
  assert_int_equal(t->n_dangling_ctrl, 1277);
  assert_int_equal(t->n_dangling_data, 0);
  assert_int_equal(t->n_dup, 0);
  etsim_et_trace_free(t);
  free(c0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_shared_traces),
      cmocka_unit_test(test_chakra0_model),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
