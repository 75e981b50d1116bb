/*
 * fuzz_reader.c — libFuzzer target for the Chakra reader: any bytes, plain
 * or gzip, must load or fail with a message, never crash, hang or leak.
 * The input goes through a file because the reader's contract is a path.
 */
#include "etsim/et.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0])
    snprintf(path, sizeof path, "/tmp/etsim-fuzz-%ld.et", (long)getpid());
  FILE *fp = fopen(path, "wb");
  if (!fp)
    return 0;
  fwrite(data, 1, size, fp);
  fclose(fp);
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, path, 0, &err) == 0) {
    /* A loaded trace must also write back and reload to the same count. */
    char out[80];
    snprintf(out, sizeof out, "%s.out", path);
    if (etsim_et_trace_write(t, out, 0, &err) == 0) {
      etsim_et_trace_t *t2;
      if (etsim_et_trace_load(&t2, out, 0, &err) != 0 ||
          t2->n_nodes != t->n_nodes)
        __builtin_trap();
      etsim_et_trace_free(t2);
      remove(out);
    }
    etsim_et_trace_free(t);
  } else if (!err.msg[0]) {
    __builtin_trap(); /* every failure must explain itself */
  }
  return 0;
}
