/*
 * test_dag.c — DAG data for the generator: the TPU Tile text files give
 * the statistics their README states; malformed text names file:line;
 * Chakra traces become acyclic windows with the transitive edges removed;
 * a Chakra-category DAG written as a trace reads back with its structure.
 */
#include "test_util.h"

#include "synth/synth_int.h"

#include <math.h>

static void split_stats(const char *rel, size_t graphs, size_t nodes, size_t edges,
                        double mean_layers, int max_layers, uint32_t n_cls) {
  TU_NEED_SHARED(path, rel);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_data_load_text(&d, path, 0, &err), 0);
  assert_int_equal(d.n_graphs, graphs);
  size_t n = 0, e = 0, L = 0, one_source = 0;
  int maxL = 0;
  uint32_t lay[512];
  for (size_t i = 0; i < d.n_graphs; i++) {
    n += d.g[i].n_nodes;
    e += d.g[i].n_edges;
    TU_LE(d.g[i].n_nodes, 512);
    int l = etsim_synth_layers(&d.g[i], lay, &err);
    TU_GT(l, 0);
    L += (size_t)l;
    maxL = l > maxL ? l : maxL;
    int sources = 0;
    for (uint32_t v = 0; v < d.g[i].n_nodes; v++) sources += lay[v] == 1;
    one_source += sources == 1 && lay[0] == 1;
    assert_int_equal(etsim_synth_dag_valid(&d, &d.g[i]), 1);
  }
  assert_int_equal(n, nodes);
  assert_int_equal(e, edges);
  assert_float_equal((double)L / graphs, mean_layers, 0.005);
  assert_int_equal(maxL, max_layers);
  assert_int_equal(one_source, graphs); /* README: one source, node 0 */
  assert_int_equal(d.n_cls[0], n_cls);
  /* The first graph of val.txt: g 31 32 2.0838307544714674 */
  if (strstr(rel, "val")) {
    assert_int_equal(d.g[0].n_nodes, 31);
    TU_EQ(d.g[0].y, 2.0838307544714674);
    assert_int_equal(d.g[0].x[1], 45);
  }
  etsim_synth_data_free(&d);
  free(path);
}

static void test_tpu_val(void **state) {
  (void)state;
  /* README: 630 graphs, 26048 nodes, 27291 edges, layers mean 11.33 max 27,
   * attributes 0..46. */
  split_stats("datasets/tpu_tile/val.txt", 630, 26048, 27291, 11.33, 27, 47);
}

static void test_tpu_test(void **state) {
  (void)state;
  split_stats("datasets/tpu_tile/test.txt", 631, 25960, 27471, 11.53, 72, 47);
}

static void write_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

static void expect_text_error(const char *text, const char *needle) {
  char path[512];
  snprintf(path, sizeof path, "%s/bad.txt", tmp);
  write_file(path, text);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_data_load_text(&d, path, 0, &err), ETSIM_EFORMAT);
  assert_int_equal(d.n_graphs, 0);
  if (!strstr(err.msg, needle)) fail_msg("error '%s' lacks '%s'", err.msg, needle);
  etsim_synth_data_free(&d);
}

static void test_text_errors(void **state) {
  (void)state;
  const char *ok = "# c\ng 3 2 1.5\n0 1 2\n0 1\n1 2\n";
  expect_text_error("# c\nh 3 2 1.5\n", "bad.txt:2: expected 'g");
  expect_text_error("# c\ng 3 2 abc\n", "bad.txt:2: bad label");
  expect_text_error("# c\ng 3 2 1.5\n0 1\n", "bad.txt:3: node attribute 2");
  expect_text_error("# c\ng 3 2 1.5\n0 1 2 3\n", "bad.txt:3: more than 3");
  expect_text_error("# c\ng 3 2 1.5\n0 1 2\n0 1\n1 7\n",
                    "bad.txt:5: edge 1 -> 7: node index out of range");
  expect_text_error("# c\ng 3 2 1.5\n0 1 2\n0 1\n", "file ends after 1 of 2");
  expect_text_error("# c\ng 3 1 1.5\n0 1 2\n2 2\n", "bad.txt:4: self-loop");
  /* fuzz_synth: an edge given twice loaded, and dag_valid then failed */
  expect_text_error("g 3 3 1.5\n0 1 2\n0 1\n1 2\n0 1\n",
                    "bad.txt:1: graph: edge 0 -> 1 given twice");
  /* A cycle 1 -> 2 -> 1 names the graph's header line. */
  expect_text_error("# c\ng 2 1 1\n0 0\n0 1\ng 3 3 1.5\n0 1 2\n0 1\n1 2\n2 1\n",
                    "bad.txt:5: graph has a cycle");
  expect_text_error("# only comments\n", "no graphs");
  /* The good one round-trips through the writer. */
  char path[512], path2[512];
  snprintf(path, sizeof path, "%s/ok.txt", tmp);
  snprintf(path2, sizeof path2, "%s/ok2.txt", tmp);
  write_file(path, ok);
  etsim_synth_data_t d, d2;
  etsim_synth_data_init(&d);
  etsim_synth_data_init(&d2);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_data_load_text(&d, path, 0, &err), 0);
  assert_int_equal(etsim_synth_data_write_text(&d, path2, "t", &err), 0);
  assert_int_equal(etsim_synth_data_load_text(&d2, path2, 0, &err), 0);
  assert_int_equal(d2.n_graphs, 1);
  assert_int_equal(d2.g[0].n_nodes, 3);
  assert_int_equal(d2.g[0].n_edges, 2);
  TU_EQ(d2.g[0].y, 1.5);
  assert_int_equal(d2.g[0].dst[1], 2);
  etsim_synth_data_free(&d);
  etsim_synth_data_free(&d2);
}

/* A small trace: 1 -> 2 -> 3 plus the implied 1 -> 3, and an all-reduce
 * after 3.  The reduction keeps 3 edges. */
static void test_trace_small(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/small.0.et", tmp);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, path, 0, &err), 0);
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  uint64_t p2[1] = {1}, p3[2] = {2, 1}, p4[1] = {3};
  etsim_attr_t coll[2] = {
      {.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = 0},
      {.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = 1 << 20}};
  etsim_et_node_t n[4] = {
      {.id = 1, .name = "aten::mm", .type = ETSIM_ET_COMP_NODE, .duration_micros = 100},
      {.id = 2,
       .name = "aten::add",
       .type = ETSIM_ET_COMP_NODE,
       .duration_micros = 3,
       .n_data_deps = 1,
       .data_deps = p2},
      {.id = 3,
       .name = "layer_norm",
       .type = ETSIM_ET_COMP_NODE,
       .duration_micros = 0,
       .n_data_deps = 2,
       .data_deps = p3},
      {.id = 4,
       .name = "allreduce",
       .type = ETSIM_ET_COMM_COLL_NODE,
       .duration_micros = 7,
       .n_data_deps = 1,
       .data_deps = p4,
       .n_attrs = 2,
       .attrs = coll}};
  for (int i = 0; i < 4; i++) assert_int_equal(etsim_et_writer_node(w, &n[i], &err), 0);
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_synth_trace_opts_t o;
  etsim_synth_trace_opts_default(&o);
  assert_int_equal(etsim_synth_data_load_trace(&d, path, &o, &err), 0);
  assert_int_equal(d.n_graphs, 1);
  assert_int_equal(d.kind, ETSIM_SYNTH_KIND_TRACE);
  assert_int_equal(d.g[0].n_nodes, 4);
  assert_int_equal(d.g[0].n_edges, 3); /* 1 -> 3 dropped */
  const uint32_t *x = d.g[0].x;
  /* Channels: class, collective type, duration bin, size bin. */
  assert_int_equal(d.n_ch, 4);
  assert_int_equal(x[0], ETSIM_SYNTH_OP_GEMM);
  assert_int_equal(x[1], 0); /* not a collective */
  assert_int_equal(x[2], 7); /* 100 us: 2^6 <= 100 < 2^7 -> bin 7 */
  assert_int_equal(x[3], 0); /* no size */
  assert_int_equal(x[4], ETSIM_SYNTH_OP_ELEMWISE);
  assert_int_equal(x[8], ETSIM_SYNTH_OP_NORM);
  assert_int_equal(x[10], 0); /* 0 us */
  assert_int_equal(x[12], ETSIM_SYNTH_OP_COLL);
  assert_int_equal(x[13], 1 + ETSIM_COLL_ALL_REDUCE);
  assert_int_equal(x[14], 3);  /* 7 us -> bin 3 */
  assert_int_equal(x[15], 21); /* 2^20 bytes -> bin 21 */
  for (int v = 0; v < 4; v++) assert_true(etsim_synth__attr_rule_ok(x + 4 * v));
  /* The rules: a collective type on a compute node, a collective without
   * one, a size on a compute node, a collective without a size. */
  uint32_t bad1[4] = {ETSIM_SYNTH_OP_GEMM, 1, 3, 0}, bad2[4] = {ETSIM_SYNTH_OP_COLL, 0, 3, 5};
  uint32_t bad3[4] = {ETSIM_SYNTH_OP_GEMM, 0, 3, 5}, bad4[4] = {ETSIM_SYNTH_OP_COLL, 1, 3, 0};
  assert_false(etsim_synth__attr_rule_ok(bad1));
  assert_false(etsim_synth__attr_rule_ok(bad2));
  assert_false(etsim_synth__attr_rule_ok(bad3));
  assert_false(etsim_synth__attr_rule_ok(bad4));
  /* With transitive edges kept: 4. Windows of 2 nodes: 2 DAGs. */
  o.keep_transitive = 1;
  etsim_synth_data_t d2;
  etsim_synth_data_init(&d2);
  assert_int_equal(etsim_synth_data_load_trace(&d2, path, &o, &err), 0);
  assert_int_equal(d2.g[0].n_edges, 4);
  etsim_synth_data_free(&d2);
  o.keep_transitive = 0;
  o.max_nodes = 2;
  etsim_synth_data_init(&d2);
  assert_int_equal(etsim_synth_data_load_trace(&d2, path, &o, &err), 0);
  assert_int_equal(d2.n_graphs, 2);
  assert_int_equal(d2.g[0].n_nodes + d2.g[1].n_nodes, 4);
  assert_int_equal(d2.g[1].n_edges, 1); /* 3 -> 4 inside the second window */
  etsim_synth_data_free(&d2);
  /* Written back as a trace: same types, sizes in the same bins, edges. */
  char out[512];
  snprintf(out, sizeof out, "%s/back.0.et", tmp);
  assert_int_equal(etsim_synth_write_trace(&d, 0, out, &err), 0);
  etsim_synth_data_t d3;
  etsim_synth_data_init(&d3);
  o.max_nodes = 400;
  assert_int_equal(etsim_synth_data_load_trace(&d3, out, &o, &err), 0);
  assert_int_equal(d3.g[0].n_nodes, 4);
  assert_int_equal(d3.g[0].n_edges, 3);
  assert_memory_equal(d3.g[0].x, d.g[0].x, sizeof(uint32_t) * 16);
  etsim_synth_data_free(&d3);
  /* Each bin keeps the sum and number of its real values (ns, bytes), and
   * a bin is written back at their mean: here the exact values.  Without
   * values it is written at its midpoint 1.5 * 2^(b-1). */
  TU_EQ(d.bin_n[7], 1);
  TU_EQ(d.bin_sum[7], 100000);
  TU_EQ(d.bin_n[3], 1);
  TU_EQ(d.bin_sum[3], 7000);
  TU_EQ(d.bin_n[0], 0);
  TU_EQ(d.bin_n[ETSIM_SYNTH_DUR_BINS + 21], 1);
  TU_EQ(d.bin_sum[ETSIM_SYNTH_DUR_BINS + 21], 1 << 20);
  for (int mid = 0; mid < 2; mid++) {
    if (mid) memset(d.bin_n, 0, sizeof d.bin_n);
    assert_int_equal(etsim_synth_write_trace(&d, 0, out, &err), 0);
    etsim_et_trace_t *t;
    assert_int_equal(etsim_et_trace_load(&t, out, 0, &err), 0);
    int seen = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
      int64_t sz = 0;
      if (t->type[i] == ETSIM_ET_COMM_COLL_NODE) {
        assert_int_equal(etsim_et_trace_attr_int(t, i, t->k_comm_size, &sz), 1);
        TU_EQ(sz, mid ? 3 << 19 : 1 << 20);
        TU_EQ(t->dur_us[i], mid ? 6 : 7);
        seen++;
      } else if (t->dur_us[i] >= 64) {
        TU_EQ(t->dur_us[i], mid ? 96 : 100);
        seen++;
      }
    }
    assert_int_equal(seen, 2);
    etsim_et_trace_free(t);
  }
  etsim_synth_data_free(&d);
}

static void test_trace_real(void **state) {
  (void)state;
  TU_NEED_SHARED(tgz, "traces/chakra/feeder_tests_trace.tar.gz");
  char cmd[1200], path[600];
  snprintf(cmd, sizeof cmd, "tar xzf '%s' -C '%s'", tgz, tmp);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/tests/data/chakra.0.et", tmp);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_synth_trace_opts_t o;
  etsim_synth_trace_opts_default(&o);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_data_load_trace(&d, path, &o, &err), 0);
  size_t nodes = 0, edges = 0, coll = 0;
  for (size_t i = 0; i < d.n_graphs; i++) {
    const etsim_synth_dag_t *g = &d.g[i];
    TU_LE(g->n_nodes, 400);
    assert_int_equal(etsim_synth_dag_valid(&d, g), 1);
    nodes += g->n_nodes;
    edges += g->n_edges;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      assert_true(etsim_synth__attr_rule_ok(g->x + 4 * (size_t)v));
      coll += g->x[4 * (size_t)v] == ETSIM_SYNTH_OP_COLL;
    }
  }
  print_message(
      "chakra.0.et: %zu windows, %zu nodes, %zu edges after "
      "transitive reduction (181878 before)\n",
      d.n_graphs, nodes, edges);
  assert_int_equal(nodes, 3664); /* every node lands in one window */
  assert_int_equal(coll, 21);    /* README: 21 COMM_COLL_NODE */
  TU_LT(edges, 181878 / 4);
  TU_GE(d.n_graphs, 3664 / 400);
  etsim_synth_data_free(&d);
  free(tgz);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tpu_val),     cmocka_unit_test(test_tpu_test),
      cmocka_unit_test(test_text_errors), cmocka_unit_test(test_trace_small),
      cmocka_unit_test(test_trace_real),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
