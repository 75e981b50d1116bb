/*
 * test_base.c — the ground floor: error table, u64 map, interner, arena,
 * growth, size parsing, seeded RNG and atomic output files.
 */
#include "test_util.h"

#include "etsim/base.h"

#include <math.h>
#include <sys/stat.h>

static void test_errors(void **s) {
  (void)s;
  assert_string_equal(etsim_errname(ETSIM_EFORMAT), "ETSIM_EFORMAT");
  assert_string_equal(etsim_strerror(ETSIM_ENOMEM), "out of memory");
  etsim_error_t e = {0};
  assert_int_equal(etsim_error_set(&e, ETSIM_EIO, "f.et: %s %d", "x", 3), ETSIM_EIO);
  etsim_error_prefix(&e, "run %d", 7);
  assert_string_equal(e.msg, "run 7: f.et: x 3");
  assert_int_equal(etsim_error_set(NULL, ETSIM_EINVAL, "ignored"), ETSIM_EINVAL);
}

static void test_u64map(void **s) {
  (void)s;
  etsim_u64map_t m;
  etsim_u64map_init(&m);
  for (uint64_t k = 0; k < 100000; k++)
    assert_int_equal(etsim_u64map_put(&m, k * 2654435761u, (uint32_t)k, NULL), 1);
  uint32_t old = 0, v = 0;
  assert_int_equal(etsim_u64map_put(&m, (uint64_t)5 * 2654435761u, 9, &old), 0);
  assert_int_equal(old, 5);
  for (uint64_t k = 0; k < 100000; k += 997) {
    assert_int_equal(etsim_u64map_get(&m, k * 2654435761u, &v), 1);
    assert_int_equal(v, k);
  }
  assert_int_equal(etsim_u64map_get(&m, 3, &v), 0);
  assert_int_equal(m.count, 100000);
  TU_LE(m.count * 10, m.cap * 7);
  etsim_u64map_free(&m);
}

/* Deletion against a plain array over a small key set (long probe runs in
 * a map of at most 64 slots: every wrap-around case), then churn: 100,000
 * keys through a map of at most 40 live ones stays at its size. */
static void test_u64map_del(void **s) {
  (void)s;
  etsim_u64map_t m;
  etsim_u64map_init(&m);
  uint32_t ref[40];
  for (int i = 0; i < 40; i++) ref[i] = UINT32_MAX;
  uint64_t x = 12345;
  for (int step = 0; step < 200000; step++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t k = (x >> 33) % 40;
    uint32_t v = (uint32_t)(x >> 20) & 0xffff;
    if ((x >> 13) & 1) {
      assert_int_equal(etsim_u64map_del(&m, k * 7919), ref[k] != UINT32_MAX);
      ref[k] = UINT32_MAX;
    } else if (ref[k] == UINT32_MAX) {
      assert_int_equal(etsim_u64map_put(&m, k * 7919, v, NULL), 1);
      ref[k] = v;
    }
    size_t live = 0;
    for (uint64_t j = 0; j < 40; j++) {
      uint32_t got = UINT32_MAX;
      int hit = etsim_u64map_get(&m, j * 7919, &got);
      assert_int_equal(hit, ref[j] != UINT32_MAX);
      if (hit) assert_int_equal(got, ref[j]);
      live += hit;
    }
    assert_int_equal(m.count, live);
  }
  TU_LE(m.cap, 64);
  for (uint64_t k = 0; k < 100000; k++) {
    assert_int_equal(etsim_u64map_put(&m, (1ull << 40) + k, (uint32_t)k, NULL), 1);
    if (k >= 30) assert_int_equal(etsim_u64map_del(&m, (1ull << 40) + k - 30), 1);
  }
  TU_LE(m.cap, 128);
  assert_int_equal(etsim_u64map_del(&m, 1ull << 40), 0);
  etsim_u64map_free(&m);
  assert_int_equal(etsim_u64map_del(&m, 1), 0);
}

static void test_intern(void **s) {
  (void)s;
  etsim_intern_t t;
  assert_int_equal(etsim_intern_init(&t), 0);
  assert_int_equal(etsim_intern_find(&t, ""), 0);
  int64_t a = etsim_intern_put(&t, "comm_type", 9);
  int64_t b = etsim_intern_put(&t, "comm_size_extra", 9); /* prefix "comm_size" */
  assert_int_equal(a, 1);
  assert_int_equal(b, 2);
  assert_int_equal(etsim_intern_put(&t, "comm_type", 9), 1);
  assert_string_equal(etsim_intern_str(&t, 2), "comm_size");
  assert_int_equal(etsim_intern_find(&t, "comm_size"), 2);
  assert_int_equal(etsim_intern_find(&t, "nope"), -1);
  char buf[16];
  for (int i = 0; i < 1000; i++) {
    snprintf(buf, sizeof buf, "k%d", i);
    assert_int_equal(etsim_intern_put(&t, buf, strlen(buf)), 3 + i);
  }
  assert_int_equal(etsim_intern_find(&t, "k999"), 1002);
  etsim_intern_free(&t);
}

static void test_arena(void **s) {
  (void)s;
  etsim_arena_t a;
  etsim_arena_init(&a, 1024);
  char *p = etsim_arena_alloc(&a, 3);
  char *q = etsim_arena_alloc(&a, 5);
  assert_int_equal((uintptr_t)p % 8, 0);
  assert_int_equal(q - p, 8);
  char *big = etsim_arena_alloc(&a, 5000); /* own block */
  memset(big, 1, 5000);
  char *r = etsim_arena_alloc(&a, 8); /* continues in the head block */
  assert_int_equal(r - p, 16);
  assert_string_equal(etsim_arena_strndup(&a, "hello!", 5), "hello");
  etsim_arena_reset(&a);
  assert_int_equal(a.used_bytes, 0);
  assert_ptr_equal(etsim_arena_alloc(&a, 8), p); /* first block reused */
  etsim_arena_free(&a);
}

static void test_alloc_failure_injection(void **s) {
  (void)s;
  etsim_u64map_t m;
  etsim_u64map_init(&m);
  etsim_alloc_fail_after(1);
  assert_int_equal(etsim_u64map_put(&m, 1, 1, NULL), ETSIM_ENOMEM);
  assert_int_equal(etsim_u64map_put(&m, 1, 1, NULL), 1);
  etsim_u64map_free(&m);
}

/* Runs of consecutive ids become ranges; a list too long for the buffer
 * ends in ",..." and stays inside it. */
static void test_format_ranges(void **s) {
  (void)s;
  char b[64];
  const uint32_t a[] = {0, 1, 2, 3, 8, 10, 11};
  etsim_format_ranges(b, sizeof b, a, 7);
  assert_string_equal(b, "0-3,8,10-11");
  etsim_format_ranges(b, sizeof b, a, 0);
  assert_string_equal(b, "");
  etsim_format_ranges(b, sizeof b, a + 4, 1);
  assert_string_equal(b, "8");
  uint32_t odd[40];
  for (uint32_t i = 0; i < 40; i++) odd[i] = 1000000 + 2 * i;
  etsim_format_ranges(b, 48, odd, 40);
  TU_LT(strlen(b), 48);
  assert_string_equal(b + strlen(b) - 4, ",...");
  assert_memory_equal(b, "1000000,1000002,", 16);
}

static void test_parse_size(void **s) {
  (void)s;
  uint64_t b;
  assert_int_equal(etsim_parse_size("1048576", &b), 0);
  assert_int_equal(b, 1048576);
  assert_int_equal(etsim_parse_size("1MiB", &b), 0);
  assert_int_equal(b, 1048576);
  assert_int_equal(etsim_parse_size("64KB", &b), 0);
  assert_int_equal(b, 64000);
  assert_int_equal(etsim_parse_size("2GiB", &b), 0);
  assert_int_equal(b, 2147483648ull);
  assert_int_equal(etsim_parse_size("1.5KiB", &b), 0);
  assert_int_equal(b, 1536);
  assert_int_equal(etsim_parse_size("1.3B", &b), ETSIM_EINVAL);
  assert_int_equal(etsim_parse_size("-5", &b), ETSIM_EINVAL);
  assert_int_equal(etsim_parse_size("12 parsecs", &b), ETSIM_EINVAL);
}

static void test_rng(void **s) {
  (void)s;
  etsim_rng_t a, b;
  etsim_rng_seed(&a, 7);
  etsim_rng_seed(&b, 7);
  for (int i = 0; i < 100; i++) assert_int_equal(etsim_rng_next(&a), etsim_rng_next(&b));
  /* Uniform mean and normal variance within 4 standard errors. */
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int i = 0; i < n; i++) sum += etsim_rng_uniform(&a);
  TU_NEAR(sum / n, 0.5, 4 * 0.2887 / sqrt(n));
  sum = 0;
  for (int i = 0; i < n; i++) {
    double x = etsim_rng_normal(&a);
    sum += x;
    sq += x * x;
  }
  TU_LT(fabs(sum / n), 4 / sqrt(n));
  TU_NEAR(sq / n, 1.0, 4 * sqrt(2.0 / n));
  for (int i = 0; i < 1000; i++) TU_LT(etsim_rng_below(&a, 10), 10);
}

static void test_outfile(void **s) {
  (void)s;
  char *dir = tu_tmpdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  etsim_outfile_t o;
  etsim_error_t e = {0};
  assert_int_equal(etsim_outfile_open(&o, path, &e), 0);
  fputs("half", o.fp);
  assert_int_equal(access(path, F_OK), -1); /* not there until commit */
  etsim_outfile_abort(&o);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(etsim_outfile_open(&o, path, &e), 0);
  fputs("whole", o.fp);
  assert_int_equal(etsim_outfile_commit(&o, &e), 0);
  size_t n;
  unsigned char *d = tu_read(path, &n);
  assert_int_equal(n, 5);
  assert_memory_equal(d, "whole", 5);
  free(d);
  /* the whole-buffer form: over the old file, bytes with a NUL kept */
  snprintf(path, sizeof path, "%s/out.txt", dir);
  assert_int_equal(etsim_outfile_write_all(path, "ab\0cd", 5, &e), 0);
  d = tu_read(path, &n);
  assert_int_equal(n, 5);
  assert_memory_equal(d, "ab\0cd", 5);
  free(d);
  snprintf(path, sizeof path, "%s/no/such/dir/x", dir);
  assert_int_equal(etsim_outfile_open(&o, path, &e), ETSIM_EIO);
  TU_CONTAINS(e.msg, "cannot create");
  assert_int_equal(etsim_outfile_write_all(path, "x", 1, &e), ETSIM_EIO);
  TU_CONTAINS(e.msg, "cannot create");
  tu_rmdir(dir);
}

/* Write `text` to path as an output of the open batch. */
static void batch_write(const char *path, const char *text) {
  etsim_outfile_t o;
  etsim_error_t e = {0};
  assert_int_equal(etsim_outfile_open(&o, path, &e), 0);
  fputs(text, o.fp);
  assert_int_equal(etsim_outfile_commit(&o, &e), 0);
}

/* A batch's outputs appear together at batch_commit; a rename that fails
 * there leaves no temporary behind, and an abort leaves nothing at all. */
static void test_outfile_batch(void **s) {
  (void)s;
  char *dir = tu_tmpdir();
  char a[4200], b[4200], tmp_b[4300];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  etsim_error_t e = {0};

  etsim_outfile_batch_begin();
  batch_write(a, "A");
  batch_write(b, "B");
  assert_int_equal(access(a, F_OK), -1); /* waiting under its temporary name */
  assert_non_null(etsim_outfile_batched(a));
  assert_int_equal(access(etsim_outfile_batched(a), F_OK), 0);
  assert_int_equal(etsim_outfile_batch_commit(&e), 0);
  assert_null(etsim_outfile_batched(a));
  size_t n;
  unsigned char *d = tu_read(b, &n);
  assert_int_equal(n, 1);
  assert_memory_equal(d, "B", 1);
  free(d);

  etsim_outfile_batch_begin();
  batch_write(a, "A2");
  batch_write(b, "B2");
  snprintf(tmp_b, sizeof tmp_b, "%s", etsim_outfile_batched(b));
  assert_int_equal(remove(b), 0);
  assert_int_equal(mkdir(b, 0700), 0); /* b's rename now fails */
  assert_int_equal(etsim_outfile_batch_commit(&e), ETSIM_EIO);
  TU_CONTAINS(e.msg, "cannot rename into place");
  assert_int_equal(access(tmp_b, F_OK), -1);
  d = tu_read(a, &n);
  assert_int_equal(n, 2);
  assert_memory_equal(d, "A2", 2);
  free(d);

  etsim_outfile_batch_begin();
  batch_write(a, "A3");
  char tmp_a[4300];
  snprintf(tmp_a, sizeof tmp_a, "%s", etsim_outfile_batched(a));
  etsim_outfile_batch_abort();
  assert_int_equal(access(tmp_a, F_OK), -1);
  d = tu_read(a, &n);
  assert_int_equal(n, 2); /* as it was */
  free(d);
  tu_rmdir(dir);
}

/* Ranks with ties, and Pearson against closed forms. */
static void test_ranks_pearson(void **state) {
  (void)state;
  /* 3 once, 1 twice (ranks 1 and 2 -> 1.5), 5 three times (4, 5, 6 -> 5) */
  const double v[] = {5, 1, 3, 5, 1, 5};
  const double want[] = {5, 1.5, 3, 5, 1.5, 5};
  double r[6];
  assert_int_equal(etsim_ranks(v, 6, r), 0);
  for (int i = 0; i < 6; i++) assert_true(r[i] == want[i]);
  assert_int_equal(etsim_ranks(NULL, 0, r), 0);
  /* y = 2x + 1 is +1, y = -x is -1, a constant is 0 */
  const double x[] = {1, 2, 3, 4}, y[] = {3, 5, 7, 9}, z[] = {-1, -2, -3, -4}, c[] = {2, 2, 2, 2};
  assert_true(fabs(etsim_pearson(x, y, 4) - 1) < 1e-15);
  assert_true(fabs(etsim_pearson(x, z, 4) + 1) < 1e-15);
  assert_true(etsim_pearson(x, c, 4) == 0);
  assert_true(etsim_pearson(x, y, 0) == 0);
  /* x against {1, 3, 2, 4}: sum of products of deviations 4, of squares 5
   * each, so 0.8 */
  const double w[] = {1, 3, 2, 4};
  assert_true(fabs(etsim_pearson(x, w, 4) - 0.8) < 1e-15);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errors),        cmocka_unit_test(test_u64map),
      cmocka_unit_test(test_u64map_del),    cmocka_unit_test(test_intern),
      cmocka_unit_test(test_arena),         cmocka_unit_test(test_alloc_failure_injection),
      cmocka_unit_test(test_parse_size),    cmocka_unit_test(test_rng),
      cmocka_unit_test(test_outfile),       cmocka_unit_test(test_outfile_batch),
      cmocka_unit_test(test_format_ranges), cmocka_unit_test(test_ranks_pearson),
  };
  return TU_RUN(tests, NULL, NULL);
}
