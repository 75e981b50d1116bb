/*
 * fuzz_shard.c — libFuzzer target for the sharding planner's files (and
 * so for `gen dlrm`'s): the first byte picks a model JSON (then planned on
 * 2 ranks when small), a plan JSON for the criteo-kaggle preset or a
 * collective calibration (--calib); the rest is the file.  Each must
 * load and check, or be refused with a message — never a crash, an
 * allocation the file does not justify, or a leak.
 */
#include "fuzz_util.h"

#include "etsim/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  int which = data[0] % 3;
  const char *p = fz_write(0, "shard.json", data + 1, size - 1);
  if (!p) return 0;
  etsim_error_t err = {0};
  etsim_shard_model_t m;
  etsim_shard_opts_t o;
  etsim_shard_plan_t plan;
  etsim_shard_defaults(&o);
  int rc;
  if (which == 2) {
    /* Curves of at most ETSIM_SHARD_CAL_POINTS points, bytes increasing,
     * times finite and not negative: what the planner interpolates in. */
    etsim_shard_calib_t c;
    if ((rc = etsim_shard_calib_load(p, &c, &err))) {
      fz_refused(rc, &err);
      return 0;
    }
    for (int k = 0; k < ETSIM_SHARD_N_COLLS; k++)
      for (int s = 0; s < ETSIM_SHARD_N_SCOPES; s++) {
        const etsim_shard_curve_t *v = &c.c[k][s];
        if (v->n > ETSIM_SHARD_CAL_POINTS) __builtin_trap();
        for (uint32_t i = 0; i < v->n; i++)
          if (!(v->ns[i] >= 0 && v->ns[i] < 1e300) || !(v->bytes[i] >= 0) ||
              (i && !(v->bytes[i] > v->bytes[i - 1])))
            __builtin_trap();
      }
    return 0;
  }
  if (!which) {
    if ((rc = etsim_shard_model_load(p, &m, &err))) {
      fz_refused(rc, &err);
      return 0;
    }
    if (m.n_tables <= 16) {
      o.ranks = 2;
      if ((rc = etsim_shard_plan(&m, &o, &plan, &err)) == 0) etsim_shard_plan_free(&plan);
      else fz_refused(rc, &err);
    }
    etsim_shard_model_free(&m);
    return 0;
  }
  if (etsim_shard_model_preset("criteo-kaggle", &m, &err)) __builtin_trap();
  if ((rc = etsim_shard_plan_read(p, &m, &o, &plan, &err)) == 0) {
    if (plan.n_ranks < 1 || plan.n_tables != m.n_tables) __builtin_trap();
    etsim_shard_plan_free(&plan);
  } else {
    fz_refused(rc, &err);
  }
  etsim_shard_model_free(&m);
  return 0;
}
