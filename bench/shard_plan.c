/*
 * shard_plan.c — planner speed: synthetic tables (rows log-uniform in
 * [1e3, 1e7), dims 32-256, heavy-tailed pooling, DCNv2 interaction; fixed
 * seed) on ranks of 8 per host, every type allowed.  Issue 24 asks for
 * 100,000 tables on 4,096 ranks in seconds (the planner before it took
 * over 5 minutes: a fallback loop re-placed every table).  Prints CPU
 * seconds (getrusage) and peak RSS.
 *
 *   bench_shard_plan [TABLES] [RANKS]      (default 100000 4096)
 */
#include "etsim/shard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
  size_t T = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  size_t P = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  if (etsim_shard_model_preset("synthetic-large", &m, &err)) return 1;
  etsim_free(m.tables);
  m.tables = etsim_calloc(T, sizeof *m.tables);
  m.n_tables = T;
  snprintf(m.name, sizeof m.name, "synthetic-%zu", T);
  etsim_rng_t r;
  etsim_rng_seed(&r, 7);
  static const uint32_t dims[4] = {32, 64, 128, 256};
  for (size_t t = 0; t < T; t++) {
    snprintf(m.tables[t].name, sizeof m.tables[t].name, "t%zu", t);
    m.tables[t].rows = (uint64_t)pow(10.0, 3.0 + 4.0 * etsim_rng_uniform(&r));
    m.tables[t].dim = dims[etsim_rng_below(&r, 4)];
    m.tables[t].pooling = floor(1.0 / pow(1.0 - etsim_rng_uniform(&r) * 0.99, 1 / 1.5));
    m.tables[t].elem_bytes = 4;
  }
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = P;
  o.ranks_per_host = 8;
  o.hbm_gb = 80;
  etsim_shard_plan_t p;
  double t0 = cpu_s();
  int rc = etsim_shard_plan(&m, &o, &p, &err);
  double dt = cpu_s() - t0;
  if (rc) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  size_t by[ETSIM_SHARD_N_TYPES] = {0};
  for (size_t t = 0; t < T; t++) by[p.table_type[t]]++;
  printf(
      "shard: %zu tables on %zu ranks (8 per host): %zu shards (tw %zu, rw %zu, cw %zu, dp %zu, "
      "twrw %zu, twcw %zu), estimated iteration %.1f ms, planned in %.2f s of CPU, max RSS %ld "
      "MB\n",
      T, P, p.n_shards, by[0], by[1], by[2], by[3], by[4], by[5], p.est.iter_ns / 1e6, dt,
      u.ru_maxrss / 1024);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
  return 0;
}
