/*
 * fuzz_etjson.c — libFuzzer target for the JSON form of a Chakra trace
 * (`convert --from json`): any bytes must convert to a .et that loads, or
 * be refused with a message naming the object — never a crash, a leak or a
 * file left.
 */
#include "fuzz_util.h"

#include "etsim/etjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  const char *in = fz_write(0, "t.json", data, size);
  if (!in) return 0;
  const char *out = fz_path(1, "t.et");
  etsim_error_t err = {0};
  int rc = etsim_etjson_convert(in, out, 0, NULL, &err);
  if (rc) {
    fz_refused(rc, &err);
    if (access(out, F_OK) == 0) __builtin_trap();
    fz_no_tmp();
    return 0;
  }
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, out, 0, &err)) __builtin_trap(); /* what is written reads */
  etsim_et_trace_free(t);
  remove(out);
  return 0;
}
