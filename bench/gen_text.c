/*
 * gen_text.c — speed of the ASTRA-sim 1.0 text converter.
 *
 *   bench_gen_text [PASSES] [DIR]
 *
 * Converts ResNet-50 (data parallel, ../shared/traces/astra-sim/
 * text_workloads/Resnet50_DataParallel.txt when ETSIM_SHARED is set, else
 * an equivalent 54-layer file written here) over PASSES passes (default
 * 4,652: 215 nodes a pass, 1,000,180 nodes) for 64 NPUs, which share one
 * file through the manifest.  Prints nodes/s.  Chakra's Python converter
 * writes 180,000-280,000 nodes/s on this machine kind (issue 4).
 */
#include "etsim/convtext.h"

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

int main(int argc, char **argv) {
  size_t passes = argc > 1 ? strtoul(argv[1], NULL, 10) : 4652;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  char in[4200], prefix[4200], cmd[8600];
  const char *root = getenv("ETSIM_SHARED");
  int own = 1;
  if (root) {
    snprintf(in, sizeof in, "%s/traces/astra-sim/text_workloads/Resnet50_DataParallel.txt", root);
    own = access(in, R_OK) != 0;
  }
  if (own) {
    snprintf(in, sizeof in, "%s/bench_gen_text.%ld.txt", dir, (long)getpid());
    FILE *fp = fopen(in, "w");
    if (!fp) return 1;
    fprintf(fp, "DATA\n54\n");
    for (int l = 0; l < 54; l++)
      fprintf(fp, "layer_%d -1 %d NONE 0 %d NONE 0 %d ALLREDUCE %d 100\n", l, 3000 + l, 3100 + l,
              7000 + l, 65536 * (1 + l % 8));
    fclose(fp);
  }
  snprintf(prefix, sizeof prefix, "%s/bench_gen_text.%ld", dir, (long)getpid());
  etsim_conv_text_opts_t o = {64, passes, 0, ETSIM_ET_OUT_MANIFEST, prefix, NULL};
  etsim_error_t err = {0};
  etsim_et_set_report_t rep;
  /* Five runs: the machine is shared, so report the best and the CPU time
   * (user + system) next to the wall time. */
  double best = 1e30, best_cpu = 1e30;
  for (int run = 0; run < 5; run++) {
    double t0 = now_s(), c0 = cpu_s();
    int rc = etsim_conv_text(in, &o, &rep, &err);
    double dt = now_s() - t0, dc = cpu_s() - c0;
    if (rc) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    best = dt < best ? dt : best;
    best_cpu = dc < best_cpu ? dc : best_cpu;
  }
  printf(
      "convert --from text %s, %zu passes, 64 NPUs: %llu nodes (%.1f MB, "
      "%zu file); best of 5: %.3f s wall = %.2f M nodes/s, %.3f s CPU = "
      "%.2f M nodes/s\n",
      own ? "(generated ResNet-50-like input)" : "Resnet50_DataParallel.txt", passes,
      (unsigned long long)rep.n_nodes, rep.n_bytes / 1e6, rep.n_files, best,
      rep.n_nodes / best / 1e6, best_cpu, rep.n_nodes / best_cpu / 1e6);
  snprintf(cmd, sizeof cmd, "rm -f '%s'.* %s", prefix, own ? in : "");
  if (system(cmd) != 0) fprintf(stderr, "could not clean up %s\n", prefix);
  return 0;
}
