/*
 * fuzz_manifest.c — libFuzzer target for rank-set manifests
 * (PREFIX.manifest.json): any bytes as a manifest next to two small traces
 * must load as a set that validates without crashing, or be refused with a
 * message — never a crash, an allocation the file does not justify, or a
 * leak.
 */
#include "fuzz_util.h"

#include "etsim/etcheck.h"
#include "etsim/gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) { /* the files a manifest may name: a.et (2 ranks' worth) and b.et */
    static const int colls[] = {ETSIM_COLL_ALL_REDUCE};
    etsim_gen_micro_opts_t o = {.colls = colls, .n_colls = 1, .size_bytes = 4096, .npus = 1};
    etsim_error_t e = {0};
    o.prefix = fz_path(0, "a");
    o.format = ETSIM_ET_OUT_RANK_FILES;
    if (etsim_gen_micro(&o, NULL, &e)) __builtin_trap();
    o.prefix = fz_path(0, "b");
    if (etsim_gen_micro(&o, NULL, &e)) __builtin_trap();
    ready = 1;
  }
  if (size > 65536 || !fz_write(1, "f.manifest.json", data, size)) return 0;
  etsim_error_t err = {0};
  etsim_et_set_t *s = NULL;
  int rc = etsim_et_set_load(&s, fz_path(2, "f"), 0, &err);
  if (rc) {
    fz_refused(rc, &err);
    return 0;
  }
  if (s->n_ranks < 1 || s->n_traces < 1 || s->n_traces > s->n_ranks) __builtin_trap();
  for (size_t r = 0; r < s->n_ranks; r++)
    if (!s->ranks[r]) __builtin_trap();
  if (etsim_et_validate_set(s, NULL, NULL) < 0) __builtin_trap();
  etsim_et_set_free(s);
  return 0;
}
