/*
 * test_util.h — small helpers shared by the cmocka tests: where the shared
 * data lives, temporary folders, whole-file reads.
 */
#ifndef ETSIM_TEST_UTIL_H
#define ETSIM_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Path of a file under ../shared (env ETSIM_SHARED), or NULL when the
 * shared folder is absent; the caller frees.  Tests that need it skip(). */
static inline char *tu_shared(const char *rel) {
  const char *root = getenv("ETSIM_SHARED");
  if (!root) return NULL;
  size_t n = strlen(root) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", root, rel);
  if (access(p, R_OK) != 0) {
    free(p);
    return NULL;
  }
  return p;
}

#define TU_NEED_SHARED(var, rel)                                             \
  char *var = tu_shared(rel);                                                \
  if (!var) {                                                                \
    print_message("SKIP: ../shared/%s is absent (set ETSIM_SHARED)\n", rel); \
    skip();                                                                  \
  }

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
