/*
 * test_bounds.c — inputs that claim a huge cost through the library, where
 * the file must be crafted byte by byte (tests/e2e/bounds.sh covers what a
 * shell can write).  Each was gigabytes or minutes before (issue 16).
 */
#include "test_util.h"

#include "etsim/synth.h"

#include <string.h>

static char *path(const char *name) {
  static char buf[4][4200];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
  return buf[k];
}

/* A tiny trained model, saved; returns its bytes. */
static unsigned char *tiny_model(const char *file, size_t *len) {
  static const char dags[] = "g 3 2 1.0\n0 1 2\n0 1\n1 2\ng 4 3 2.0\n1 0 2 1\n0 1\n0 2\n2 3\n";
  assert_int_equal(tu_write(path("d.txt"), dags, sizeof dags - 1), 0);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_error_t err = {0};
  TU_OK(etsim_synth_data_load_text(&d, path("d.txt"), 0, &err), err);
  etsim_synth_config_t c;
  etsim_synth_config_default(&c);
  c.hidden = 8;
  c.pair_hidden = 4;
  c.t_attr = 4;
  c.t_edge = 2;
  c.epochs = 1;
  etsim_synth_model_t *m;
  TU_OK(etsim_synth_train(&d, &d, &c, NULL, NULL, &m, &err), err);
  TU_OK(etsim_synth_model_save(m, file, &err), err);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
  unsigned char *b = tu_read(file, len);
  assert_non_null(b);
  return b;
}

/* A model whose header claims DAGs of 10^7 nodes (checksum made right) is
 * refused: sampling from it took 6.9 GB. */
static void test_model_max_nodes(void **state) {
  (void)state;
  size_t len = 0;
  unsigned char *b = tiny_model(path("m.bin"), &len);
  etsim_error_t err = {0};
  etsim_synth_model_t *m = NULL;
  TU_OK(etsim_synth_model_load(&m, path("m.bin"), &err), err);
  etsim_synth_model_free(m);
  /* magic 8, version 4, byte order 4, then the u32 header fields: hidden,
   * mp_layers, pair_hidden, t_attr, t_edge, ctx_hist, kind, n_ch, the
   * ETSIM_SYNTH_MAX_CH class counts, max_size, max_layers, max_nodes. */
  uint32_t v = 10000000;
  memcpy(b + 16 + (8 + ETSIM_SYNTH_MAX_CH + 2) * 4, &v, 4);
  uint64_t h = etsim_hash_bytes(b, len - 8);
  memcpy(b + len - 8, &h, 8);
  assert_int_equal(tu_write(path("big.bin"), b, len), 0);
  assert_int_equal(etsim_synth_model_load(&m, path("big.bin"), &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "largest DAG has 10000000 nodes, more than the 1000000");
  free(b);
}

/* Not a model: refused at the magic, not read to the end (/dev/zero has
 * none). */
static void test_model_not_a_model(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_synth_model_t *m = NULL;
  assert_int_equal(etsim_synth_model_load(&m, "/dev/zero", &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "/dev/zero: not an etsim synth model (bad magic)");
}

/* A dataset header claiming 10^7 nodes and 10^8 edges gets no arrays for
 * them before its lines are read (it was 840 MB): the claim is checked
 * against the attribute line, and edges grow as they are read. */
static void test_dataset_claims(void **state) {
  (void)state;
  static const char big[] = "g 10000000 100000000 1.0\n0 1\n";
  assert_int_equal(tu_write(path("big.txt"), big, sizeof big - 1), 0);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_error_t err = {0};
  assert_int_equal(etsim_synth_data_load_text(&d, path("big.txt"), 0, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "big.txt:2: node attribute line too short for 10000000 values");
  static const char edges[] = "g 3 100000000 1.0\n0 1 2\n0 1\n";
  assert_int_equal(tu_write(path("edges.txt"), edges, sizeof edges - 1), 0);
  assert_int_equal(etsim_synth_data_load_text(&d, path("edges.txt"), 0, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "file ends after 1 of 100000000 edges");
  assert_int_equal(d.n_graphs, 0);
  etsim_synth_data_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_max_nodes),
      cmocka_unit_test(test_model_not_a_model),
      cmocka_unit_test(test_dataset_claims),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
