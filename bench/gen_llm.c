/*
 * gen_llm.c — generation rate of `gen llm`.
 *
 *   bench_gen_llm [DIR] [--big]
 *
 * Writes a 1,024-rank GPT-3 175B set (dp 8 x tp 8 x pp 16, 16 micro-batches,
 * 1F1B) under DIR (default /tmp) and prints nodes/s and bytes/s; --big also
 * writes the 16,384-rank set of the issue (dp 128 x tp 8 x pp 16, 1.4 GB)
 * and prints its wall time.  Everything written is removed afterwards.
 * CPU time (user + system) is printed beside the wall time, since the
 * machine is shared.
 */
#include "etsim/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run(const char *dir, uint32_t dp, int keep) {
  etsim_gen_llm_opts_t o = {0};
  etsim_error_t err = {0};
  if (etsim_gen_llm_preset("gpt3-175b", &o.model, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  o.dp = dp;
  o.tp = 8;
  o.pp = 16;
  char sub[4096], prefix[4200], cmd[4300];
  snprintf(sub, sizeof sub, "%s/bench_gen_llm.%ld", dir, (long)getpid());
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sub);
  if (system(cmd) != 0) return 1;
  snprintf(prefix, sizeof prefix, "%s/gpt3", sub);
  o.prefix = prefix;
  etsim_et_set_report_t rep;
  double t0 = now_s(), c0 = cpu_s();
  int rc = etsim_gen_llm(&o, &rep, &err);
  double dt = now_s() - t0, dc = cpu_s() - c0;
  if (rc) fprintf(stderr, "%s\n", err.msg);
  else
    printf(
        "gen llm gpt3-175b dp %u tp 8 pp 16: %zu ranks, %zu files, %llu "
        "nodes, %.1f MB in %.2f s wall (%.2f s CPU) = %.2f M nodes/s, "
        "%.0f MB/s\n",
        dp, rep.n_ranks, rep.n_files, (unsigned long long)rep.n_nodes, rep.n_bytes / 1e6, dt, dc,
        rep.n_nodes / dt / 1e6, rep.n_bytes / dt / 1e6);
  if (!keep) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", sub);
  }
  return rc != 0;
}

int main(int argc, char **argv) {
  const char *dir = "/tmp";
  int big = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--big") == 0) big = 1;
    else dir = argv[i];
  }
  int keep = getenv("ETSIM_BENCH_KEEP") != NULL;
  if (run(dir, 8, keep)) return 1;
  if (big && run(dir, 128, keep)) return 1;
  return 0;
}
