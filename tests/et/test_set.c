/*
 * test_set.c — rank sets that share traces by content: identical files load
 * once (hash, then a byte comparison), files that differ by one byte or only
 * in length do not, and a small file costs a few KiB, not a megabyte.
 */
#include "test_util.h"

#include "etsim/et.h"

#include <sys/stat.h>

/* One all-reduce node of `size` bytes into tmp/name. */
static void one_node(const char *name, int64_t size, const char *node_name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", tmp, name);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  etsim_attr_t a[2];
  memset(a, 0, sizeof a);
  a[0].name = "comm_type", a[0].doc = "", a[0].kind = ETSIM_ATTR_INT64, a[0].v.i64 = 0;
  a[1].name = "comm_size", a[1].doc = "", a[1].kind = ETSIM_ATTR_INT64, a[1].v.i64 = size;
  etsim_et_node_t nd;
  memset(&nd, 0, sizeof nd);
  nd.name = node_name;
  nd.type = ETSIM_ET_COMM_COLL_NODE;
  nd.attrs = a;
  nd.n_attrs = 2;
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  assert_int_equal(etsim_et_writer_open(&w, path, 0, &err), 0);
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  assert_int_equal(etsim_et_writer_node(w, &nd, &err), 0);
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
}

static off_t file_size(const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", tmp, name);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return st.st_size;
}

static void test_identical_files_share(void **state) {
  (void)state;
  /* Ranks 0, 1, 3 and 5 hold the same bytes; rank 2 a different size;
   * rank 4 the same length as rank 0 but one byte differs (the node name),
   * which a hash alone must not merge. */
  one_node("s.0.et", 1 << 20, "ar");
  one_node("s.1.et", 1 << 20, "ar");
  one_node("s.2.et", 1 << 10, "ar");
  one_node("s.3.et", 1 << 20, "ar");
  one_node("s.4.et", 1 << 20, "as");
  one_node("s.5.et", 1 << 20, "ar");
  assert_int_equal(file_size("s.0.et"), file_size("s.4.et"));
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/s", tmp);
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  assert_int_equal(etsim_et_set_load(&set, prefix, ETSIM_ET_SET_SHARE, &err), 0);
  assert_int_equal(set->n_ranks, 6);
  assert_int_equal(set->n_files, 6);
  assert_int_equal(set->n_traces, 3);
  assert_int_equal(set->n_shared_files, 3);
  const uint32_t want[6] = {0, 0, 1, 0, 2, 0};
  for (int r = 0; r < 6; r++) {
    assert_int_equal(set->rank_trace[r], want[r]);
    assert_ptr_equal(set->ranks[r], set->traces[want[r]]);
    char tail[16];
    snprintf(tail, sizeof tail, "/s.%d.et", r);
    const char *p = etsim_et_set_rank_path(set, (size_t)r);
    assert_string_equal(p + strlen(p) - strlen(tail), tail);
  }
  int64_t v = 0;
  const etsim_et_trace_t *t2 = set->traces[1], *t4 = set->traces[2];
  assert_int_equal(etsim_et_trace_attr_int(t2, 0, t2->k_comm_size, &v), 1);
  assert_int_equal(v, 1 << 10);
  assert_string_equal(t4->name[0], "as");
  etsim_et_set_free(set);
  /* Without the flag every file is its own trace, as before. */
  assert_int_equal(etsim_et_set_load(&set, prefix, 0, &err), 0);
  assert_int_equal(set->n_traces, 6);
  assert_int_equal(set->n_shared_files, 0);
  for (int r = 0; r < 6; r++) assert_int_equal(set->rank_trace[r], r);
  etsim_et_set_free(set);
}

static void test_small_file_is_small(void **state) {
  (void)state;
  /* A one-node rank file: its trace's arrays, arenas and maps take a few
   * KiB (they took over 1 MiB of reservations and ~48 KiB of touched
   * memory before arrays were sized by the file). */
  one_node("one.0.et", 4096, "x");
  one_node("one.1.et", 8192, "x");
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/one", tmp);
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  assert_int_equal(etsim_et_set_load(&set, prefix, ETSIM_ET_SET_SHARE, &err), 0);
  assert_int_equal(set->n_traces, 2);
  for (int k = 0; k < 2; k++) {
    size_t m = etsim_et_trace_memory(set->traces[k]);
    if (m > 4096)
      fail_msg("trace %d of a %lld-byte file holds %zu bytes", k, (long long)file_size("one.0.et"),
               m);
    assert_int_equal(set->traces[k]->n_nodes, 1);
  }
  etsim_et_set_free(set);
}

static void test_missing_rank_file_names_it(void **state) {
  (void)state;
  /* A manifest that names a file which is not there: the error names it. */
  char path[4200];
  snprintf(path, sizeof path, "%s/m.manifest.json", tmp);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(
      "{\"etsim_trace_set\": 1, \"npus\": 2, \"classes\": [{\"file\": \"gone.et\", \"ranks\": "
      "\"0-1\"}]}\n",
      f);
  fclose(f);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/m", tmp);
  etsim_error_t err = {0};
  etsim_et_set_t *set = NULL;
  assert_int_equal(etsim_et_set_load(&set, prefix, ETSIM_ET_SET_SHARE, &err), ETSIM_ENOTFOUND);
  assert_non_null(strstr(err.msg, "gone.et"));
  assert_null(set);
}

/* A rename that fails part-way (rank 1's final name became a folder after
 * the ranks were written) must
 * leave what it had not reached alone: rank 2's file from an earlier run
 * keeps its bytes, the folder stays, and the rank renamed before the
 * failure is taken back. */
static void test_writer_failure_keeps_unrenamed_files(void **state) {
  (void)state;
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/w", tmp);
  snprintf(path, sizeof path, "%s.2.et", prefix);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs("old", f);
  fclose(f);
  etsim_error_t err = {0};
  etsim_et_set_writer_t *w;
  assert_int_equal(etsim_et_set_writer_open(&w, prefix, 3, ETSIM_ET_OUT_RANK_FILES, &err), 0);
  const uint8_t data[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  for (size_t r = 0; r < 3; r++)
    assert_int_equal(etsim_et_set_writer_rank(w, r, data[r], 2, &err), 0);
  char dir[4300];
  snprintf(dir, sizeof dir, "%s.1.et", prefix);
  assert_int_equal(mkdir(dir, 0777), 0);
  assert_int_equal(etsim_et_set_writer_commit(w, &err), ETSIM_EIO);
  assert_non_null(strstr(err.msg, "w.1.et"));
  size_t len = 0;
  unsigned char *got = tu_read(path, &len);
  assert_non_null(got);
  assert_int_equal(len, 3);
  assert_memory_equal(got, "old", 3);
  free(got);
  struct stat st;
  assert_int_equal(stat(dir, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  snprintf(path, sizeof path, "%s.0.et", prefix);
  assert_int_not_equal(stat(path, &st), 0);
}

/* The group file's name beside a set prefix or a single trace file. */
static void test_comm_groups_path(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int strip;
    const char *want;
  } cases[] = {
      {"out/llm", 0, "out/llm.comm_group.json"},
      {"out/x.et", 0, "out/x.et.comm_group.json"}, /* a prefix keeps its name */
      {"out/x.et", 1, "out/x.comm_group.json"},
      {"out/x.et.gz", 1, "out/x.comm_group.json"},
      {"out/x.gz", 1, "out/x.gz.comm_group.json"},
      {".et", 1, ".et.comm_group.json"}, /* nothing before the extension */
      {"", 0, ".comm_group.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = NULL;
    etsim_error_t err = {0};
    assert_int_equal(etsim_et_comm_groups_path(cases[i].name, cases[i].strip, &got, &err), 0);
    assert_string_equal(got, cases[i].want);
    etsim_free(got);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical_files_share),
      cmocka_unit_test(test_small_file_is_small),
      cmocka_unit_test(test_missing_rank_file_names_it),
      cmocka_unit_test(test_writer_failure_keeps_unrenamed_files),
      cmocka_unit_test(test_comm_groups_path),
  };
  return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
