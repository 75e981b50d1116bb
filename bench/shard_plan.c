/*
 * shard_plan.c — planner speed: 1,000 synthetic tables (rows log-uniform in
 * [1e3, 1e8), dims 32-256, heavy-tailed pooling; fixed seed) on 1,024 ranks
 * of 8 per host, every type allowed.  Issue 5 asks for under a second.
 *
 *   bench_shard_plan [TABLES] [RANKS]
 */
#include "etsim/shard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t T = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
  size_t P = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
  etsim_shard_model_t m;
  etsim_error_t err = {0};
  if (etsim_shard_model_preset("mlperf-dlrm", &m, &err)) return 1;
  etsim_free(m.tables);
  m.tables = etsim_calloc(T, sizeof *m.tables);
  m.n_tables = T;
  snprintf(m.name, sizeof m.name, "synthetic-%zu", T);
  etsim_rng_t r;
  etsim_rng_seed(&r, 7);
  for (size_t t = 0; t < T; t++) {
    snprintf(m.tables[t].name, sizeof m.tables[t].name, "t%zu", t);
    m.tables[t].rows = (uint64_t)pow(10.0, 3.0 + 5.0 * etsim_rng_uniform(&r));
    m.tables[t].dim = 128; /* dot interaction needs the bottom width */
    m.tables[t].pooling = floor(1.0 / pow(1.0 - etsim_rng_uniform(&r) * 0.99, 1 / 1.5));
    m.tables[t].elem_bytes = 4;
  }
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  o.ranks = P;
  o.ranks_per_host = 8;
  o.hbm_gb = 80;
  etsim_shard_plan_t p;
  double t0 = now_s();
  int rc = etsim_shard_plan(&m, &o, &p, &err);
  double dt = now_s() - t0;
  if (rc) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  printf(
      "shard: %zu tables on %zu ranks (8 per host): %zu shards, slowest "
      "rank %.3f ms, planned in %.3f s\n",
      T, P, p.n_shards, p.max_ms, dt);
  etsim_shard_plan_free(&p);
  etsim_shard_model_free(&m);
  return 0;
}
