/*
 * edit.c — how fast `etsim edit` changes a big trace, in CPU seconds.
 *
 *   bench_edit [NODES] [DIR]        (default 10,000,000 nodes in /tmp)
 *   ETSIM_BENCH_KEEP=1 keeps the generated trace.
 *
 * Generates a trace of NODES nodes in 10 iterations, each opened by a
 * ProfilerStep#k marker: node i depends on i-1, i-2 and i-7 (3 data
 * dependencies, 30 M edges at the default size), names repeat every 1,000
 * nodes, every 100th node is an all-reduce (comm_type, comm_size), the
 * others are COMP nodes with is_cpu_op and num_ops.  Then, each in its own
 * child process (so CPU time and peak RSS are the phase's own, from
 * wait4), it runs:
 *   - the floors: one streaming read of the trace, and the in-memory way
 *     of editing (etsim_et_trace_load + etsim_et_trace_write, a copy);
 *   - etsim_edit_run with no operation (a copy: two streaming reads and
 *     a write), with scale + anonymize + round (content), with a drop of
 *     the 1 % all-reduces (every bridge rebuilt), with --iter 3 (a cut by
 *     the markers), with a closure (--keep descendants:) and with
 *     --repeat 2 (twice the output).
 * Each edit's output is checked to hold the expected node count.
 */
#include "etsim/edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t g_nodes;
static const char *g_in, *g_out;

static void fail(const etsim_error_t *err) {
  fprintf(stderr, "bench_edit: %s\n", err->msg);
  exit(1);
}

static int gen(void) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  if (etsim_et_writer_open(&w, g_in, 0, &err)) fail(&err);
  etsim_et_meta_t meta = {"1.0.0", 0, NULL};
  if (etsim_et_writer_meta(w, &meta, &err)) fail(&err);
  etsim_attr_t attrs[3];
  memset(attrs, 0, sizeof attrs);
  char name[48];
  uint64_t deps[3];
  uint64_t per_iter = g_nodes / 10 ? g_nodes / 10 : 1;
  for (uint64_t i = 0; i < g_nodes; i++) {
    etsim_et_node_t n = {.id = i, .name = name, .attrs = attrs, .data_deps = deps};
    attrs[0] = (etsim_attr_t){.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL};
    if (i % per_iter == 0) {
      snprintf(name, sizeof name, "ProfilerStep#%llu", (unsigned long long)(i / per_iter));
      n.type = ETSIM_ET_COMP_NODE;
      n.n_attrs = 1;
    } else if (i % 100 == 50) {
      snprintf(name, sizeof name, "allreduce_%llu", (unsigned long long)(i % 1000));
      n.type = ETSIM_ET_COMM_COLL_NODE;
      attrs[1] = (etsim_attr_t){.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64};
      attrs[2] = (etsim_attr_t){.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64};
      attrs[2].v.i64 = (int64_t)(1000 + i % 1000) * 1024;
      n.n_attrs = 3;
    } else {
      snprintf(name, sizeof name, "op%llu", (unsigned long long)(i % 1000));
      n.type = ETSIM_ET_COMP_NODE;
      n.duration_micros = 1 + i % 97;
      attrs[1] = (etsim_attr_t){.name = "num_ops", .doc = "", .kind = ETSIM_ATTR_INT64};
      attrs[1].v.i64 = (int64_t)(i % 1000) * 1000;
      n.n_attrs = 2;
    }
    size_t k = 0;
    if (i >= 1) deps[k++] = i - 1;
    if (i >= 2) deps[k++] = i - 2;
    if (i >= 7) deps[k++] = i - 7;
    n.n_data_deps = k;
    if (etsim_et_writer_node(w, &n, &err)) fail(&err);
  }
  if (etsim_et_writer_commit(w, &err)) fail(&err);
  return 0;
}

static int floor_stream(void) {
  etsim_error_t err = {0};
  etsim_et_reader_t *r;
  if (etsim_et_reader_open(&r, g_in, 0, &err)) fail(&err);
  const etsim_et_node_t *n;
  uint64_t c = 0;
  int rc;
  while ((rc = etsim_et_reader_next(r, &n, &err)) == 1) c++;
  etsim_et_reader_close(r);
  if (rc < 0) fail(&err);
  return c == g_nodes ? 0 : 1;
}

static int floor_memory(void) {
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, g_in, 0, &err)) fail(&err);
  if (etsim_et_trace_write(t, g_out, 0, &err)) fail(&err);
  etsim_et_trace_free(t);
  return 0;
}

/* An edit: "op", "arg" pairs, NULL-ended; the output must have `want`
 * nodes. */
typedef struct {
  const char *ops[12];
  uint64_t want;
} edit_t;

static const edit_t *g_edit;

static int run_edit(void) {
  etsim_error_t err = {0};
  etsim_edit_t *e;
  if (etsim_edit_new(&e, NULL, &err)) fail(&err);
  for (size_t k = 0; g_edit->ops[k]; k += 2)
    if (etsim_edit_add(e, g_edit->ops[k], g_edit->ops[k + 1], &err)) fail(&err);
  etsim_edit_report_t rep;
  if (etsim_edit_run(e, g_in, g_out, &rep, &err)) fail(&err);
  etsim_edit_free(e);
  int ok = rep.nodes_out == g_edit->want;
  if (!ok)
    fprintf(stderr, "bench_edit: %llu nodes written, %llu expected\n",
            (unsigned long long)rep.nodes_out, (unsigned long long)g_edit->want);
  etsim_edit_report_free(&rep);
  return ok ? 0 : 1;
}

/* Run fn in a child: its CPU seconds and peak RSS from wait4. */
static void phase(const char *label, int (*fn)(void)) {
  fflush(stdout);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
    fprintf(stderr, "bench_edit: %s failed\n", label);
    exit(1);
  }
  double wall = now_s() - t0;
  double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  double rss = ru.ru_maxrss * 1024.0;
  printf("%-34s %7.2f %7.2f %7.2f %7.2f %8.2f %9.1f %7.1f\n", label, wall, user + sys, user, sys,
         g_nodes / (user + sys) / 1e6, rss / 1e6, rss / (double)g_nodes);
}

int main(int argc, char **argv) {
  g_nodes = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ULL;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  if (g_nodes < 1000) g_nodes = 1000;
  char in[4096], out[4096];
  snprintf(in, sizeof in, "%s/etsim-bench-edit-%ld.et", dir, (long)getpid());
  snprintf(out, sizeof out, "%s/etsim-bench-edit-%ld.out.et", dir, (long)getpid());
  g_in = in;
  g_out = out;
  uint64_t per = g_nodes / 10, colls = 0;
  for (uint64_t i = 0; i < g_nodes; i++) colls += i % per != 0 && i % 100 == 50;
  printf("bench_edit: %llu nodes (%llu all-reduces), 10 iterations, 3 data dependencies a node\n",
         (unsigned long long)g_nodes, (unsigned long long)colls);
  printf("%-34s %7s %7s %7s %7s %8s %9s %7s\n", "phase", "wall s", "CPU s", "user", "sys",
         "M nod/s", "RSS MB", "B/node");
  phase("generate (et writer)", gen);
  phase("floor: stream read", floor_stream);
  phase("floor: load + write in memory", floor_memory);
  static const edit_t edits[] = {
      {{NULL}, 0},
      {{"scale-time", "0.5", "scale-comm", "0.5", "anonymize", "hash", "round-sizes", "pow2", NULL},
       0},
      {{"drop", "type=coll", NULL}, 1},
      {{"iter", "3", NULL}, 2},
      {{"keep", "descendants:id=9000000", NULL}, 3},
      {{"repeat", "2", NULL}, 4},
  };
  static const char *const labels[] = {
      "edit: copy (no operation)",       "edit: scale+anonymize+round",
      "edit: drop 1% (bridged)",         "edit: --iter 3 (markers)",
      "edit: --keep descendants: (10%)", "edit: --repeat 2 (2x output)",
  };
  for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
    edit_t e = edits[k];
    switch (e.want) {
      case 1:
        e.want = g_nodes - colls;
        break;
      case 2:
        e.want = per;
        break;
      case 3:
        e.want = g_nodes - g_nodes * 9 / 10;
        break;
      case 4:
        e.want = 2 * g_nodes;
        break;
      default:
        e.want = g_nodes;
    }
    if (k == 4) {
      /* descendants of node 9/10 of the way: the last 10 %. */
      static char arg[64];
      snprintf(arg, sizeof arg, "descendants:id=%llu", (unsigned long long)(g_nodes * 9 / 10));
      e.ops[1] = arg;
    }
    g_edit = &e;
    phase(labels[k], run_edit);
  }
  remove(out);
  if (getenv("ETSIM_BENCH_KEEP")) printf("kept %s\n", in);
  else remove(in);
  return 0;
}
