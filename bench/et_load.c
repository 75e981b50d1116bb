/*
 * et_load.c — trace library speed and memory.
 *
 *   bench_et_load [NODES] [DIR]      (default 10,000,000 nodes in /tmp)
 *   ETSIM_BENCH_KEEP=1 keeps the generated file for profiling.
 *   bench_et_load --load FILE        one load in this process (for perf)
 *   bench_et_load --touch N          first touch of 1 GiB of fresh memory,
 *                                    N times, each in a new process
 *
 * Generates a trace of NODES nodes with 3 data dependencies each (30 M edges
 * at the default size: node i depends on i-1, i-2 and i-7) and two
 * attributes, then in separate child processes (so peak memory is each
 * phase's own): writes it, streams it, and loads it into memory.  Prints
 * nodes/s and peak RSS per node and per edge for each phase, and the load
 * time of ../shared chakra.0.et when ETSIM_SHARED is set (best of 5).
 *
 * A load mostly writes fresh memory, so its speed is bounded by how fast
 * the kernel hands out pages.  The bench measures that first-touch rate
 * (memset of fresh anonymous memory) and also times a "warm" load whose
 * memory was mapped by an earlier load in the same process (glibc told not
 * to give it back), which is the library's own speed.
 */
#include "etsim/et.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of this process (user + system): on a shared machine the
 * wall clock also counts time other processes held the core. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "op<i>" without printf, so the bench times the writer, not snprintf. */
static void op_name(char *out, uint64_t i) {
  char tmp[24];
  int k = 0;
  do {
    tmp[k++] = (char)('0' + i % 10);
    i /= 10;
  } while (i);
  out[0] = 'o';
  out[1] = 'p';
  for (int j = 0; j < k; j++) out[2 + j] = tmp[k - 1 - j];
  out[2 + k] = 0;
}

static int phase_write(const char *path, uint64_t n) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  if (etsim_et_writer_open(&w, path, 0, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  etsim_et_meta_t meta = {"1.0.0", 0, NULL};
  etsim_et_writer_meta(w, &meta, &err);
  etsim_attr_t attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].name = "is_cpu_op";
  attrs[0].doc = "";
  attrs[0].kind = ETSIM_ATTR_BOOL;
  attrs[1].name = "num_ops";
  attrs[1].doc = "";
  attrs[1].kind = ETSIM_ATTR_INT64;
  char name[32];
  uint64_t deps[3];
  etsim_et_node_t node;
  memset(&node, 0, sizeof node);
  node.name = name;
  node.type = ETSIM_ET_COMP_NODE;
  node.attrs = attrs;
  node.n_attrs = 2;
  node.data_deps = deps;
  double t0 = now_s(), c0 = cpu_s();
  for (uint64_t i = 0; i < n; i++) {
    op_name(name, i);
    node.id = i;
    node.duration_micros = 1 + i % 97;
    attrs[1].v.i64 = (int64_t)(i * 1000);
    size_t k = 0;
    if (i >= 1) deps[k++] = i - 1;
    if (i >= 2) deps[k++] = i - 2;
    if (i >= 7) deps[k++] = i - 7;
    node.n_data_deps = k;
    if (etsim_et_writer_node(w, &node, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
  }
  uint64_t bytes = etsim_et_writer_bytes(w);
  if (etsim_et_writer_commit(w, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  double dt = now_s() - t0, dc = cpu_s() - c0;
  printf(
      "write:  %llu nodes, %.1f MB in %.2f s = %.2f M nodes/s (CPU %.2f s "
      "= %.2f M nodes/s)\n",
      (unsigned long long)n, bytes / 1e6, dt, n / dt / 1e6, dc, n / dc / 1e6);
  return 0;
}

static int phase_stream(const char *path) {
  etsim_error_t err = {0};
  etsim_et_reader_t *r;
  double t0 = now_s(), c0 = cpu_s();
  if (etsim_et_reader_open(&r, path, 0, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  const etsim_et_node_t *n;
  uint64_t count = 0, edges = 0;
  int rc;
  while ((rc = etsim_et_reader_next(r, &n, &err)) == 1) {
    count++;
    edges += n->n_data_deps;
  }
  etsim_et_reader_close(r);
  if (rc < 0) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  double dt = now_s() - t0, dc = cpu_s() - c0;
  printf(
      "stream: %llu nodes, %llu edges in %.2f s = %.2f M nodes/s (CPU %.2f "
      "s = %.2f M nodes/s)\n",
      (unsigned long long)count, (unsigned long long)edges, dt, count / dt / 1e6, dc,
      count / dc / 1e6);
  return 0;
}

static int phase_load(const char *path, const char *label, int warm, int best_of) {
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  if (warm) {
    /* Keep freed memory mapped so the timed load reuses the pages the
     * first one faulted in. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    if (etsim_et_trace_load(&t, path, 0, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    etsim_et_trace_free(t);
  }
  double dt = 1e30, dc = 1e30;
  for (int k = 0; k < best_of; k++) {
    double t0 = now_s(), c0 = cpu_s();
    if (etsim_et_trace_load(&t, path, 0, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    double d = now_s() - t0, c = cpu_s() - c0;
    if (d < dt) dt = d;
    if (c < dc) dc = c;
    if (k + 1 < best_of) etsim_et_trace_free(t);
  }
  printf(
      "%s: %zu nodes, %zu data + %zu ctrl edges in %.3f s = %.2f M "
      "nodes/s (CPU %.3f s = %.2f M nodes/s); held %.1f MB\n",
      label, t->n_nodes, t->n_data_edges, t->n_ctrl_edges, dt, t->n_nodes / dt / 1e6, dc,
      t->n_nodes / dc / 1e6, etsim_et_trace_memory(t) / 1e6);
  etsim_et_trace_free(t);
  return 0;
}

/* Run fn in a child; print its peak RSS against the budget. */
static int in_child(int (*fn)(void *), void *arg, const char *what, uint64_t nodes,
                    uint64_t edges) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int r = fn(arg);
    fflush(stdout);
    _exit(r);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return 1;
  double rss = ru.ru_maxrss * 1024.0;
  double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  if (nodes)
    printf(
        "        %s peak RSS %.1f MB = %.1f B/node; budget 80 B/node + 8 "
        "B/edge + attribute records (2 x %zu B/node) = %.1f MB; process "
        "user %.2f s, system %.2f s\n",
        what, rss / 1e6, rss / nodes, sizeof(etsim_et_attrrec_t),
        ((80.0 + 2 * sizeof(etsim_et_attrrec_t)) * nodes + 8.0 * edges) / 1e6, user, sys);
  return 0;
}

static const char *g_path;
static uint64_t g_n;
static int run_write(void *a) {
  (void)a;
  return phase_write(g_path, g_n);
}
static int run_stream(void *a) {
  (void)a;
  return phase_stream(g_path);
}
static int run_load(void *a) {
  (void)a;
  return phase_load(g_path, "load  ", 0, 1);
}
static int run_warm(void *a) {
  (void)a;
  return phase_load(g_path, "load (warm memory, best of 2)", 1, 2);
}
static int run_chakra(void *a) { return phase_load(a, "chakra.0.et load (fresh process)", 0, 1); }
static int run_chakra_warm(void *a) {
  return phase_load(a, "chakra.0.et load (warm memory, best of 5)", 1, 5);
}

/* First-touch rate of fresh anonymous memory (g_touch_bytes), MB/s. */
static size_t g_touch_bytes = 256u << 20;
static int run_touch(void *a) {
  (void)a;
  size_t n = g_touch_bytes;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  double t0 = now_s();
  memset(p, 1, n);
  double t1 = now_s();
  memset(p, 2, n);
  double t2 = now_s();
  printf("memory: first touch of fresh pages %.0f MB/s, rewrite %.0f MB/s\n", n / (t1 - t0) / 1e6,
         n / (t2 - t1) / 1e6);
  munmap(p, n);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--load") == 0) return phase_load(argv[2], "load", 0, 1);
  if (argc == 3 && strcmp(argv[1], "--touch") == 0) {
    g_touch_bytes = (size_t)1 << 30;
    for (long k = strtol(argv[2], NULL, 10); k > 0; k--)
      if (in_child(run_touch, NULL, "touch", 0, 0)) return 1;
    return 0;
  }
  g_n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  char path[4096];
  snprintf(path, sizeof path, "%s/etsim-bench-%ld.et", dir, (long)getpid());
  g_path = path;
  uint64_t edges = g_n >= 7 ? 3 * g_n - 10 : 0;
  in_child(run_touch, NULL, "touch", 0, 0);
  int rc = in_child(run_write, NULL, "write ", g_n, edges) ||
           in_child(run_stream, NULL, "stream", g_n, edges) ||
           in_child(run_load, NULL, "load  ", g_n, edges) ||
           in_child(run_warm, NULL, "warm  ", 0, 0);
  if (!getenv("ETSIM_BENCH_KEEP")) remove(path);
  else printf("kept %s\n", path);
  const char *shared = getenv("ETSIM_SHARED");
  if (shared) {
    char cmd[8192], c0[4200];
    snprintf(cmd, sizeof cmd, "tar xzf '%s/traces/chakra/feeder_tests_trace.tar.gz' -C '%s'",
             shared, dir);
    snprintf(c0, sizeof c0, "%s/tests/data/chakra.0.et", dir);
    if (system(cmd) == 0) {
      in_child(run_chakra, c0, "chakra", 0, 0);
      in_child(run_chakra_warm, c0, "chakra", 0, 0);
    }
  }
  return rc;
}
