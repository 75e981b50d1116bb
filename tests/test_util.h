/*
 * test_util.h — small helpers shared by the cmocka tests: where the shared
 * data lives, skips that ctest reports as skips, assertions that print what
 * they compared, temporary folders, whole-file reads.
 *
 * A test binary ends with `return TU_RUN(tests, setup, teardown);`: it
 * exits 0 when every test passed, 77 (ctest's SKIP_RETURN_CODE) when none
 * failed but some called TU_SKIP, and 1 when any failed.  With the
 * environment variable ETSIM_NO_SKIP set (CI, which has ../shared) a skip
 * is a failure.
 */
#ifndef ETSIM_TEST_UTIL_H
#define ETSIM_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "etsim/base.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ skips */

static int tu_skipped; /* tests that called TU_SKIP */

/* Skip the current test with a reason (printf-style), counted for TU_RUN. */
#define TU_SKIP(...)                                                             \
  do {                                                                           \
    print_message("SKIP: " __VA_ARGS__);                                         \
    print_message("\n");                                                         \
    if (getenv("ETSIM_NO_SKIP")) fail_msg("ETSIM_NO_SKIP is set: a skip fails"); \
    tu_skipped++;                                                                \
    skip();                                                                      \
  } while (0)

static inline int tu_exit(int failed) { return failed ? 1 : tu_skipped ? 77 : 0; }
#define TU_RUN(tests, setup, teardown) tu_exit(cmocka_run_group_tests(tests, setup, teardown))

/* ------------------------------------------------------------ assertions */

/* A library call that must succeed: on failure print the expression, the
 * code and the error message, then fail.  `err` is an etsim_error_t. */
#define TU_OK(expr, err)                                                      \
  do {                                                                        \
    long tu_rc_ = (long)(expr);                                               \
    if (tu_rc_ != 0) print_error("%s = %ld: %s\n", #expr, tu_rc_, (err).msg); \
    assert_int_equal(tu_rc_, 0);                                              \
  } while (0)

/* Comparisons that print both sides when they fail (cmocka's assert_true
 * prints only the expression).  The comparison is the operator's own on the
 * operands' own types; the values are printed as doubles (exact below 2^53). */
#define TU_CMP_(a, op, b)                                                                   \
  do {                                                                                      \
    if (!((a)op(b)))                                                                        \
      fail_msg("%s %s %s is false: %.17g vs %.17g", #a, #op, #b, (double)(a), (double)(b)); \
  } while (0)
#define TU_LT(a, b) TU_CMP_(a, <, b)
#define TU_LE(a, b) TU_CMP_(a, <=, b)
#define TU_GT(a, b) TU_CMP_(a, >, b)
#define TU_GE(a, b) TU_CMP_(a, >=, b)
#define TU_EQ(a, b) TU_CMP_(a, ==, b)
#define TU_NE(a, b) TU_CMP_(a, !=, b)
/* |a - b| < tol, printing both values and the difference. */
#define TU_NEAR(a, b, tol)                                                                     \
  do {                                                                                         \
    double tu_a_ = (double)(a), tu_b_ = (double)(b), tu_t_ = (double)(tol);                    \
    if (!(fabs(tu_a_ - tu_b_) < tu_t_))                                                        \
      fail_msg("%s ~ %s: %.17g vs %.17g differ by %.3g, not under %.3g", #a, #b, tu_a_, tu_b_, \
               fabs(tu_a_ - tu_b_), tu_t_);                                                    \
  } while (0)
/* `needle` occurs in the string `hay`; prints the string otherwise. */
#define TU_CONTAINS(hay, needle)                                                             \
  do {                                                                                       \
    const char *tu_h_ = (hay), *tu_n_ = (needle);                                            \
    if (!tu_h_ || !strstr(tu_h_, tu_n_))                                                     \
      fail_msg("%s does not contain \"%s\": \"%s\"", #hay, tu_n_, tu_h_ ? tu_h_ : "(null)"); \
  } while (0)

/* ---------------------------------------------------------- out of memory */

/* One run of an entry point under test: 0, or a negative ETSIM_E* code with
 * a message in err.  It must free what it allocated on every path. */
typedef int (*tu_oom_fn)(void *user, etsim_error_t *err);

static inline long tu_count_files(const char *dir) {
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  long n = -1;
  if (p && fscanf(p, "%ld", &n) != 1) n = -1;
  if (p) pclose(p);
  return n;
}

/*
 * Out-of-memory sweep: run fn with its 1st, 2nd, 3rd ... allocation failing
 * until a run gets through.  Every failed run must return ETSIM_ENOMEM
 * (any other code means an allocation failure was taken for something else)
 * with a message, and when `dir` is given must leave no file there that was
 * not there before (no half-written output, no temporary); ASan's leak check
 * at exit catches what a failed run forgot to free.  Returns the number of
 * allocations that were made to fail; the caller checks the last run's
 * results and that the count is plausible.
 */
static inline long tu_oom_sweep(const char *what, tu_oom_fn fn, void *user, const char *dir) {
  long before = dir ? tu_count_files(dir) : 0;
  for (long n = 1; n < 1000000; n++) {
    etsim_error_t err = {0};
    etsim_alloc_fail_after(n);
    int rc = fn(user, &err);
    etsim_alloc_fail_after(0);
    if (rc == 0) return n - 1;
    if (rc != ETSIM_ENOMEM)
      fail_msg("%s: allocation %ld failing gave %s, not ETSIM_ENOMEM: %s", what, n,
               etsim_errname(rc), err.msg);
    if (!err.msg[0]) fail_msg("%s: allocation %ld failing gave no message", what, n);
    if (dir && tu_count_files(dir) != before) {
      char cmd[4400];
      snprintf(cmd, sizeof cmd, "ls -A '%s' >&2", dir);
      if (system(cmd) != 0) print_error("cannot list %s\n", dir);
      fail_msg("%s: allocation %ld failing (%s) left a file in %s", what, n, err.msg, dir);
    }
  }
  fail_msg("%s: no run got through", what);
  return -1;
}

/* ------------------------------------------------------------- shared data */

/* Path of a file under the shared folder ($ETSIM_SHARED when set at test
 * time, else the folder CMake was configured with, $ETSIM_SHARED_DEFAULT),
 * or NULL when it is absent; the caller frees.  Tests that need it
 * TU_SKIP(). */
static inline char *tu_shared(const char *rel) {
  const char *root = getenv("ETSIM_SHARED");
  if (!root || !*root) root = getenv("ETSIM_SHARED_DEFAULT");
  if (!root || !*root) return NULL;
  size_t n = strlen(root) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", root, rel);
  if (access(p, R_OK) != 0) {
    free(p);
    return NULL;
  }
  return p;
}

#define TU_NEED_SHARED(var, rel) \
  char *var = tu_shared(rel);    \
  if (!var) TU_SKIP("shared %s is absent (set ETSIM_SHARED)", rel)

/* A fresh temporary folder (mkdtemp); the caller removes it with tu_rmdir. */
static inline char *tu_tmpdir(void) {
  char *p = strdup("/tmp/etsim-test-XXXXXX");
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  return p;
}

static inline void tu_rmdir(char *dir) {
  if (!dir) return;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  free(dir);
}

/* A temporary folder for a whole cmocka group: pass tu_setup / tu_teardown
 * to cmocka_run_group_tests and use `tmp` in the tests. */
static char *tmp;
static inline int tu_setup(void **state) {
  (void)state;
  tmp = tu_tmpdir();
  return tmp ? 0 : -1;
}
static inline int tu_teardown(void **state) {
  (void)state;
  tu_rmdir(tmp);
  return 0;
}

/* Whole file into memory (NUL-terminated); NULL if unreadable. */
static inline unsigned char *tu_read(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(fp);
  if (buf) {
    buf[n] = 0;
    *len = (size_t)n;
  }
  return buf;
}

static inline int tu_write(const char *path, const void *data, size_t len) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  size_t put = fwrite(data, 1, len, fp);
  return fclose(fp) == 0 && put == len ? 0 : -1;
}

/* Extract chakra.0.et from the shared tarball into dir; returns its path
 * (caller frees) or NULL when the shared folder is absent. */
static inline char *tu_chakra0(const char *dir) {
  char *tgz = tu_shared("traces/chakra/feeder_tests_trace.tar.gz");
  if (!tgz) return NULL;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "tar xzf '%s' -C '%s'", tgz, dir);
  free(tgz);
  if (system(cmd) != 0) return NULL;
  size_t n = strlen(dir) + 32;
  char *p = malloc(n);
  snprintf(p, n, "%s/tests/data/chakra.0.et", dir);
  return p;
}

#endif
