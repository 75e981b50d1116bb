/*
 * fuzz_pytorch.c — libFuzzer target for `convert --from pytorch`: any bytes
 * as a host trace must convert to a trace that loads and validates clean,
 * or fail with a message — never crash, hang, leak or leave a file.
 */
#include "etsim/convpt.h"
#include "etsim/etcheck.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(void *user, int severity, const char *line) {
  (void)line;
  if (severity == ETSIM_CHECK_PROBLEM) (*(long *)user)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *in, *out; /* fz_path's slots 2 and 3, used by nothing else here */
  if (!in) {
    in = fz_path(2, "in.json");
    out = fz_path(3, "in.json.et");
  }
  FILE *fp = fopen(in, "wb");
  if (!fp) return 0;
  fwrite(data, 1, size, fp);
  fclose(fp);
  etsim_error_t err = {0};
  etsim_convpt_opts_t o = {0};
  o.rank = 0;
  o.groups_path = "";
  if (etsim_convpt_convert(in, out, &o, NULL, &err) == 0) {
    etsim_et_trace_t *t;
    if (etsim_et_trace_load(&t, out, 0, &err) != 0) __builtin_trap();
    long problems = 0;
    etsim_et_validate(t, count, &problems);
    if (problems) __builtin_trap(); /* converted output is always valid */
    etsim_et_trace_free(t);
    remove(out);
  } else if (!err.msg[0] || access(out, F_OK) == 0) {
    __builtin_trap(); /* failures explain themselves and write nothing */
  }
  return 0;
}
