/*
 * replay_overhead.c — what the replay costs besides the work it replays.
 *
 *   bench_replay_overhead [NODES]      (default 200000)
 *
 * 1. Scheduler overhead per node: a dry run (virtual clock, nothing
 *    executed) of a random DAG whose nodes all have zero duration, one in
 *    eight a communication node, each depending on up to three earlier
 *    nodes.  Target: under 2 us per node.
 * 2. Kernel rates against the machine's calibrated peak: sgemm at several
 *    sizes, the triad in and out of cache, and the busy loop's accuracy.
 */
#include "etsim/replay.h"

#include <cblas.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int make_trace(const char *path, size_t n) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  if (etsim_et_writer_open(&w, path, 0, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  etsim_et_writer_meta(w, &meta, &err);
  etsim_rng_t rng;
  etsim_rng_seed(&rng, 42);
  for (size_t i = 0; i < n; i++) {
    uint64_t deps[3];
    size_t nd = 0;
    for (int k = 0; k < 3 && i > 0; k++) {
      uint64_t d = i - 1 - etsim_rng_below(&rng, i < 64 ? i : 64);
      int dup = 0;
      for (size_t j = 0; j < nd; j++) dup |= deps[j] == d;
      if (!dup) deps[nd++] = d;
    }
    etsim_attr_t a[2];
    memset(a, 0, sizeof a);
    etsim_et_node_t nd_;
    memset(&nd_, 0, sizeof nd_);
    nd_.id = i;
    nd_.name = "n";
    nd_.data_deps = deps;
    nd_.n_data_deps = nd;
    if (i % 8 == 7) {
      nd_.type = ETSIM_ET_COMM_COLL_NODE;
      a[0].name = "comm_type", a[0].doc = "", a[0].kind = ETSIM_ATTR_INT64;
      a[0].v.i64 = ETSIM_COLL_ALL_REDUCE;
      a[1].name = "comm_size", a[1].doc = "", a[1].kind = ETSIM_ATTR_INT64;
      a[1].v.i64 = 1024;
      nd_.attrs = a;
      nd_.n_attrs = 2;
    } else {
      nd_.type = ETSIM_ET_COMP_NODE;
      a[0].name = "num_ops", a[0].doc = "", a[0].kind = ETSIM_ATTR_INT64;
      a[0].v.i64 = 1000000;
      nd_.attrs = a;
      nd_.n_attrs = 1;
    }
    if (etsim_et_writer_node(w, &nd_, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
  }
  if (etsim_et_writer_commit(w, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
  return 0;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
  /* As in etsim-replay: one BLAS thread, ranks are the parallelism. */
  openblas_set_num_threads(1);
  char path[256];
  snprintf(path, sizeof path, "/tmp/etsim-bench-replay-%d.et", (int)getpid());
  if (make_trace(path, n)) return 1;
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, path, 0, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  unlink(path);
  etsim_replay_opts_t o;
  etsim_replay_opts_init(&o);
  etsim_replay_plan_t *p;
  int64_t t0 = etsim_replay_clock_ns();
  if (etsim_replay_plan_build(&p, t, &o, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  int64_t t1 = etsim_replay_clock_ns();
  etsim_replay_sched_t s;
  if (etsim_replay_sched_init(&s, p)) return 1;
  int64_t best = INT64_MAX, mk = 0;
  for (int r = 0; r < 5; r++) {
    int64_t a = etsim_replay_clock_ns();
    if (etsim_replay_dry_run(&s, &mk, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    int64_t b = etsim_replay_clock_ns() - a;
    if (b < best) best = b;
  }
  printf("nodes %zu, edges %zu\n", p->n_ops, p->n_edges);
  printf("plan build      %8.1f ns/node\n", (double)(t1 - t0) / (double)n);
  printf("dry run         %8.1f ns/node (best of 5; target < 2000)\n", (double)best / (double)n);
  etsim_replay_sched_free(&s);
  etsim_replay_plan_free(p);
  etsim_et_trace_free(t);

  etsim_replay_machine_t m;
  etsim_replay_calibrate(&m);
  printf(
      "calibrated peak: sgemm %.2f GFLOP/s, triad %.2f GB/s, ridge %.2f "
      "flop/B\n",
      m.gemm_flops_per_s / 1e9, m.stream_bytes_per_s / 1e9, m.ridge_flop_per_byte);
  static const int sizes[] = {64, 128, 256, 512, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int g = sizes[i];
    float *a = calloc((size_t)g * g * 3, sizeof *a);
    if (!a) return 1;
    for (size_t k = 0; k < (size_t)g * g * 2; k++) a[k] = (float)(k % 7);
    int reps = g <= 128 ? 50 : g <= 512 ? 5 : 2;
    int64_t bt = INT64_MAX;
    for (int r = 0; r < reps; r++) {
      int64_t x = etsim_replay_clock_ns();
      etsim_replay_gemm(g, g, g, a, a + g * g, a + 2 * g * g);
      int64_t y = etsim_replay_clock_ns() - x;
      if (y < bt) bt = y;
    }
    double rate = 2.0 * g * g * g / ((double)bt * 1e-9);
    printf("sgemm %4d^3     %8.2f GFLOP/s (%5.1f%% of peak)\n", g, rate / 1e9,
           100 * rate / m.gemm_flops_per_s);
    free(a);
  }
  static const size_t tb[] = {96 * 1024, 12 << 20, 96 << 20};
  for (size_t i = 0; i < sizeof tb / sizeof tb[0]; i++) {
    size_t f = tb[i] / 12;
    float *a = calloc(f * 3, sizeof *a);
    if (!a) return 1;
    int64_t bt = INT64_MAX;
    for (int r = 0; r < 5; r++) {
      int64_t x = etsim_replay_clock_ns();
      etsim_replay_triad(a, a + f, a + 2 * f, f, 1.5f);
      int64_t y = etsim_replay_clock_ns() - x;
      if (y < bt) bt = y;
    }
    double rate = 12.0 * (double)f / ((double)bt * 1e-9);
    printf("triad %9zu B %8.2f GB/s (%5.1f%% of calibrated)\n", tb[i], rate / 1e9,
           100 * rate / m.stream_bytes_per_s);
    free(a);
  }
  static const int64_t bz[] = {1000, 10000, 100000};
  for (size_t i = 0; i < 3; i++) {
    int64_t worst = 0;
    for (int r = 0; r < 20; r++) {
      int64_t x = etsim_replay_clock_ns();
      etsim_replay_busy(bz[i]);
      int64_t y = etsim_replay_clock_ns() - x - bz[i];
      if (y > worst) worst = y;
    }
    printf("busy %7lld ns   overshoot at most %lld ns over 20 runs\n", (long long)bz[i],
           (long long)worst);
  }
  return 0;
}
