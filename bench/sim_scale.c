/* Benchmark: one 64 MiB all-reduce on 3-D [Ring, FullyConnected, Switch]
 * networks of 8 x 8 x N NPUs, the case the issue measures ASTRA-sim on
 * (congestion-unaware backend, this machine kind: 8x8x16 about 0.6 s,
 * 8x8x64 about 10 s, 8x8x128 about 64 s and 0.7 GB, 8x8x256 about 250 s and
 * 1.9 GB).  Prints wall time, events and peak RSS for etsim's default
 * (one NPU stands for all) and, up to a size, for --exact.
 *
 *   build/bench_sim_scale [max_third_dim=1024] [max_exact_third_dim=32]
 *
 * System: the Ring_4chunks.json settings with a ring per dimension.
 */
#include "etsim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

int main(int argc, char **argv) {
  uint32_t max_n = argc > 1 ? (uint32_t)atoi(argv[1]) : 1024;
  uint32_t max_exact = argc > 2 ? (uint32_t)atoi(argv[2]) : 32;
  char dir[] = "/tmp/etsim-bench-XXXXXX", path[256];
  if (!mkdtemp(dir)) return 3;
  snprintf(path, sizeof path, "%s/ar.et", dir);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  etsim_attr_t a[3] = {
      {.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL, .v.b = 0},
      {.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = 0},
      {.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = 64 << 20}};
  etsim_et_node_t node = {.id = 0,
                          .name = "all_reduce_64MiB",
                          .type = ETSIM_ET_COMM_COLL_NODE,
                          .n_attrs = 3,
                          .attrs = a};
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  if (etsim_et_writer_open(&w, path, 0, &err) || etsim_et_writer_meta(w, &meta, &err) ||
      etsim_et_writer_node(w, &node, &err) || etsim_et_writer_commit(w, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 3;
  }
  etsim_sys_config_t sys;
  etsim_sys_config_defaults(&sys);
  sys.splits = 4;
  sys.active_chunks = 1;
  sys.local_bw_aware = 1;
  sys.local_mem_bw_gbps = 1600;
  for (int t = 0; t < ETSIM_COP_N; t++) {
    sys.n_impl[t] = 3;
    for (int d = 0; d < 3; d++) sys.impl[t][d] = (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
  }
  printf("%-10s %7s %-14s %10s %10s %12s %14s\n", "network", "npus", "mode", "wall_s", "events",
         "peak_rss_mb", "finish_cycles");
  for (uint32_t n3 = 16; n3 <= max_n; n3 *= 2) {
    etsim_topo_kind_t kind[3] = {ETSIM_TOPO_RING, ETSIM_TOPO_FULLY_CONNECTED, ETSIM_TOPO_SWITCH};
    uint32_t npus[3] = {8, 8, n3};
    double bw[3] = {200, 100, 50}, lat[3] = {50, 500, 2000};
    etsim_topo_t topo;
    if (etsim_topo_init(&topo, 3, kind, npus, bw, lat, "bench", &err)) return 3;
    for (int exact = 0; exact < 2; exact++) {
      if (exact && n3 > max_exact) continue;
      etsim_et_set_t *set;
      if (etsim_et_set_load(&set, path, 0, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 3;
      }
      if (etsim_et_set_broadcast(set, topo.total, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 3;
      }
      etsim_sim_opts_t o = {.backend = "analytical", .exact = exact};
      etsim_sim_result_t *r;
      if (etsim_sim_run(set, &topo, &sys, &o, &r, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 3;
      }
      char name[32];
      snprintf(name, sizeof name, "8x8x%u", n3);
      printf("%-10s %7u %-14s %10.3f %10llu %12.1f %14lld\n", name, topo.total,
             exact ? "exact" : "representative", r->wall_s, (unsigned long long)r->events,
             (double)max_rss_kb() / 1024, (long long)(r->npu[topo.total - 1].finish_ps / 1000));
      fflush(stdout);
      etsim_sim_result_free(r);
      etsim_et_set_free(set);
    }
  }
  unlink(path);
  rmdir(dir);
  return 0;
}
