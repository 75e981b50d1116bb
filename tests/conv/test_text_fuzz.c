/*
 * test_text_fuzz.c — the text parser under mutated input: every shared
 * ASTRA-sim 1.0 workload with seeded random byte flips, insertions,
 * deletions and truncations either converts or fails with a message that
 * starts with the file name and a line number; never crashes (run under
 * ASan/UBSan in CI) and never leaves files behind on failure.
 */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include "etsim/convtext.h"

#include <dirent.h>
#include <sys/stat.h>

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void clear(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4700];
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d) closedir(d);
}

static const char alphabet[] = " \t\r\n-0123456789ALNOEUDRTGSCMx:_";

static void test_mutations(void **state) {
  (void)state;
  TU_NEED_SHARED(dir, "traces/astra-sim/text_workloads");
  static const char *files[] = {"DLRM_HybridParallel", "MLP_ModelParallel",
                                "Transformer_HybridParallel", "microAllReduce",
                                "MLP_HybridParallel_Data_Model"};
  char sub[4200], prefix[4300];
  snprintf(sub, sizeof sub, "%s/fz", tmp);
  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(prefix, sizeof prefix, "%s/x", sub);
  etsim_rng_t rng;
  etsim_rng_seed(&rng, 42);
  size_t ok = 0, bad = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char in[4200];
    snprintf(in, sizeof in, "%s/%s.txt", dir, files[f]);
    size_t n = 0;
    char *orig = (char *)tu_read(in, &n);
    assert_non_null(orig);
    char *buf = malloc(n + 64);
    for (int it = 0; it < 300; it++) {
      size_t len = n;
      memcpy(buf, orig, n);
      int edits = 1 + (int)etsim_rng_below(&rng, 4);
      for (int e = 0; e < edits && len > 0; e++) {
        size_t at = etsim_rng_below(&rng, len);
        switch (etsim_rng_below(&rng, 4)) {
          case 0: /* replace */
            buf[at] = alphabet[etsim_rng_below(&rng, sizeof alphabet - 1)];
            break;
          case 1: /* delete */
            memmove(buf + at, buf + at + 1, len - at - 1);
            len--;
            break;
          case 2: /* insert */
            if (len < n + 60) {
              memmove(buf + at + 1, buf + at, len - at);
              buf[at] = alphabet[etsim_rng_below(&rng, sizeof alphabet - 1)];
              len++;
            }
            break;
          default: /* truncate */
            len = at;
            break;
        }
      }
      buf[len] = 0;
      etsim_conv_text_opts_t o = {4, 2, 0, 0, prefix, NULL};
      etsim_error_t err = {0};
      int rc = etsim_conv_text_mem("in.txt", buf, len, &o, NULL, &err);
      if (rc == 0) {
        ok++;
        clear(sub);
      } else {
        bad++;
        if (rc != ETSIM_EFORMAT && rc != ETSIM_EUNSUPPORTED) TU_EQ(rc, ETSIM_EINVAL);
        if (strncmp(err.msg, "in.txt:", 7) != 0)
          print_error("message without a location: %s\n", err.msg);
        assert_int_equal(strncmp(err.msg, "in.txt:", 7), 0);
        assert_int_equal(count_files(sub), 0);
      }
    }
    free(buf);
    free(orig);
  }
  /* Both outcomes occur: the mutations are neither all harmless nor all
   * fatal. */
  TU_GT(ok, 20);
  TU_GT(bad, 200);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mutations)};
  return TU_RUN(tests, tu_setup, tu_teardown);
}
