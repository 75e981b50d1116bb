/*
 * fuzz_text.c — libFuzzer target for ASTRA-sim 1.0 text workloads
 * (`convert --from text`): any bytes, converted for 2 ranks and 2 passes,
 * must give a rank set that loads and validates clean, or be refused with
 * FILE:LINE:COLUMN and nothing written — never a crash or a leak.
 */
#include "fuzz_util.h"

#include "etsim/convtext.h"
#include "etsim/etcheck.h"

static void count(void *user, int severity, const char *line) {
  (void)line;
  if (severity == ETSIM_CHECK_PROBLEM) (*(long *)user)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0;
  const char *prefix = fz_path(0, "w");
  etsim_conv_text_opts_t o = {
      .npus = 2, .passes = 2, .format = ETSIM_ET_OUT_RANK_FILES, .prefix = prefix};
  etsim_error_t err = {0};
  int rc = etsim_conv_text_mem("in.txt", (const char *)data, size, &o, NULL, &err);
  if (rc) {
    fz_refused(rc, &err);
    if (strncmp(err.msg, "in.txt:", 7) != 0) __builtin_trap(); /* the place is named */
    if (access(fz_path(1, "w.0.et"), F_OK) == 0) __builtin_trap();
    return 0;
  }
  etsim_et_set_t *s;
  if (etsim_et_set_load(&s, prefix, 0, &err)) __builtin_trap();
  long problems = 0;
  if (etsim_et_validate_set(s, count, &problems) < 0 || problems) __builtin_trap();
  etsim_et_set_free(s);
  remove(fz_path(1, "w.0.et"));
  remove(fz_path(1, "w.1.et"));
  remove(fz_path(1, "w.comm_group.json"));
  fz_no_tmp();
  return 0;
}
