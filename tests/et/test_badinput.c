/*
 * test_badinput.c — malformed traces fail with one clear message that names
 * the file and the byte offset (and the node id when it can be read), never
 * a crash; the writer never leaves a half-written file behind.
 */
#include "test_util.h"

#include "etsim/et.h"

#include <zlib.h>

/* A valid two-node file: metadata version "1.0.0", node id 1 "a" COMP, node
 * id 2 "b" COMP depending on 1.  Built by hand so each test can break it. */
static const unsigned char good[] = {
    0x07, 0x0a, 0x05, '1',  '.',  '0', '.',  '0',                   /* GlobalMetadata */
    0x07, 0x08, 0x01, 0x12, 0x01, 'a', 0x18, 0x04,                  /* node 1 */
    0x0a, 0x08, 0x02, 0x12, 0x01, 'b', 0x18, 0x04, 0x2a, 0x01, 0x01 /* node 2 */
};

static char *put(const char *name, const void *data, size_t len) {
  size_t n = strlen(tmp) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", tmp, name);
  assert_int_equal(tu_write(p, data, len), 0);
  return p;
}

/* Load must fail with `code` and a message containing the path and each of
 * the given fragments. */
static void expect_fail(const char *path, int code, const char *frag1, const char *frag2) {
  etsim_error_t err = {0};
  etsim_et_trace_t *t = NULL;
  int rc = etsim_et_trace_load(&t, path, 0, &err);
  if (rc != code || !strstr(err.msg, path) || (frag1 && !strstr(err.msg, frag1)) ||
      (frag2 && !strstr(err.msg, frag2)))
    print_error("rc %d, message: %s\n", rc, err.msg);
  assert_int_equal(rc, code);
  assert_null(t);
  TU_CONTAINS(err.msg, path);
  if (frag1) TU_CONTAINS(err.msg, frag1);
  if (frag2) TU_CONTAINS(err.msg, frag2);
}

static void test_good_file_loads(void **s) {
  (void)s;
  char *p = put("good.et", good, sizeof good);
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, p, 0, &err), 0);
  assert_int_equal(t->n_nodes, 2);
  assert_string_equal(t->meta.version, "1.0.0");
  assert_int_equal(t->id[1], 2);
  assert_int_equal(t->data_off[2] - t->data_off[1], 1);
  assert_int_equal(t->data_par[t->data_off[1]], 0);
  assert_int_equal(t->data_chd[t->data_coff[0]], 1);
  /* And it writes back to the same bytes. */
  char out[4200];
  snprintf(out, sizeof out, "%s/good.out.et", tmp);
  assert_int_equal(etsim_et_trace_write(t, out, 0, &err), 0);
  size_t n = 0;
  unsigned char *back = tu_read(out, &n);
  assert_int_equal(n, sizeof good);
  assert_memory_equal(back, good, n);
  free(back);
  etsim_et_trace_free(t);
  free(p);
}

static void test_truncated(void **s) {
  (void)s;
  char *p = put("trunc.et", good, sizeof good - 3);
  /* The last message starts at byte 16 and claims 10 bytes; 7 remain. */
  expect_fail(p, ETSIM_EFORMAT, "offset 16", "past the end");
  free(p);
}

static void test_empty_file(void **s) {
  (void)s;
  char *p = put("empty.et", "", 0);
  expect_fail(p, ETSIM_EFORMAT, "offset 0", "no GlobalMetadata");
  free(p);
}

static void test_length_past_end(void **s) {
  (void)s;
  unsigned char b[sizeof good + 3];
  memcpy(b, good, sizeof good);
  b[sizeof good] = 0xff; /* 0x7fff = 32767 bytes claimed */
  b[sizeof good + 1] = 0xff;
  b[sizeof good + 2] = 0x01;
  char *p = put("past.et", b, sizeof b);
  expect_fail(p, ETSIM_EFORMAT, "offset 27", "past the end");
  free(p);
}

static void test_varint_too_long(void **s) {
  (void)s;
  unsigned char b[sizeof good + 11];
  memcpy(b, good, sizeof good);
  memset(b + sizeof good, 0x80, 11);
  char *p = put("varint.et", b, sizeof b);
  expect_fail(p, ETSIM_EFORMAT, "offset 27", "longer than 10 bytes");
  free(p);
}

static void test_huge_length(void **s) {
  (void)s;
  unsigned char b[sizeof good + 5];
  memcpy(b, good, sizeof good);
  memcpy(b + sizeof good, "\xff\xff\xff\xff\x0f", 5); /* 4 GiB */
  char *p = put("huge.et", b, sizeof b);
  expect_fail(p, ETSIM_EFORMAT, "offset 27", "beyond any valid node");
  free(p);
}

static void test_unknown_field(void **s) {
  (void)s;
  /* Node id 3 with field 11 (varint 5): 08 03 58 05. */
  unsigned char b[sizeof good + 5];
  memcpy(b, good, sizeof good);
  memcpy(b + sizeof good, "\x04\x08\x03\x58\x05", 5);
  char *p = put("unknown.et", b, sizeof b);
  expect_fail(p, ETSIM_EFORMAT, "offset 27", "(id 3): unknown field 11");
  /* With SKIP_UNKNOWN it loads. */
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, p, ETSIM_ET_READ_SKIP_UNKNOWN, &err), 0);
  assert_int_equal(t->n_nodes, 3);
  etsim_et_trace_free(t);
  free(p);
}

static void test_unknown_node_type(void **s) {
  (void)s;
  unsigned char b[sizeof good + 5];
  memcpy(b, good, sizeof good);
  memcpy(b + sizeof good, "\x04\x08\x09\x18\x0b", 5); /* id 9, type 11 */
  char *p = put("type.et", b, sizeof b);
  expect_fail(p, ETSIM_EFORMAT, "(id 9)", "unknown node type 11");
  free(p);
}

static void test_garbage(void **s) {
  (void)s;
  /* Deterministic pseudo-random bytes: must fail cleanly, never crash. */
  unsigned char b[4096];
  etsim_rng_t r;
  etsim_rng_seed(&r, 42);
  for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)etsim_rng_next(&r);
  b[0] = 0x05; /* a plausible first length */
  char *p = put("garbage.et", b, sizeof b);
  etsim_error_t err = {0};
  etsim_et_trace_t *t = NULL;
  int rc = etsim_et_trace_load(&t, p, 0, &err);
  assert_int_equal(rc, ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "offset ");
  free(p);
}

static void test_gzip_bad_crc(void **s) {
  (void)s;
  char path[4200];
  snprintf(path, sizeof path, "%s/crc.et.gz", tmp);
  gzFile gz = gzopen(path, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, good, sizeof good), (int)sizeof good);
  gzclose(gz);
  size_t n = 0;
  unsigned char *z = tu_read(path, &n);
  /* The gzip trailer is CRC32 then ISIZE: flip a CRC bit. */
  z[n - 8] ^= 0x01;
  assert_int_equal(tu_write(path, z, n), 0);
  free(z);
  expect_fail(path, ETSIM_EFORMAT, "gzip stream error", NULL);
}

static void test_gzip_good(void **s) {
  (void)s;
  char path[4200];
  snprintf(path, sizeof path, "%s/ok.et.gz", tmp);
  gzFile gz = gzopen(path, "wb");
  gzwrite(gz, good, sizeof good);
  gzclose(gz);
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, path, 0, &err), 0);
  assert_int_equal(t->n_nodes, 2);
  etsim_et_trace_free(t);
}

static void test_writer_refuses_and_leaves_nothing(void **s) {
  (void)s;
  char path[4200];
  snprintf(path, sizeof path, "%s/refused.et", tmp);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, path, 0, &err), 0);
  etsim_et_node_t n;
  memset(&n, 0, sizeof n);
  n.name = "x";
  n.id = 5;
  uint64_t dep = 77;
  n.data_deps = &dep;
  n.n_data_deps = 1;
  assert_int_equal(etsim_et_writer_node(w, &n, &err), 0);
  /* Duplicate id. */
  assert_int_equal(etsim_et_writer_node(w, &n, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "node id 5 written twice");
  /* Dangling dependency on 77 at commit: refused, and no file exists. */
  assert_int_equal(etsim_et_writer_commit(w, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "e.g. 77");
  assert_int_equal(access(path, F_OK), -1);
  /* An empty message (all defaults) is refused even verbatim. */
  assert_int_equal(etsim_et_writer_open(&w, path, ETSIM_ET_WRITE_VERBATIM, &err), 0);
  memset(&n, 0, sizeof n);
  n.name = "";
  assert_int_equal(etsim_et_writer_node(w, &n, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "empty message");
  etsim_et_writer_abort(w);
  assert_int_equal(access(path, F_OK), -1);
}

static void test_missing_file(void **s) {
  (void)s;
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, "/nonexistent/x.et", 0, &err), ETSIM_ENOTFOUND);
  TU_CONTAINS(err.msg, "/nonexistent/x.et: cannot open");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good_file_loads),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_empty_file),
      cmocka_unit_test(test_length_past_end),
      cmocka_unit_test(test_varint_too_long),
      cmocka_unit_test(test_huge_length),
      cmocka_unit_test(test_unknown_field),
      cmocka_unit_test(test_unknown_node_type),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_gzip_bad_crc),
      cmocka_unit_test(test_gzip_good),
      cmocka_unit_test(test_writer_refuses_and_leaves_nothing),
      cmocka_unit_test(test_missing_file),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
