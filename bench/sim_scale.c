/*
 * sim_scale.c — etsim sim against ASTRA-sim 2.0 at scale, side by side.
 *
 *   build/bench_sim_scale [--cases a,b,...] [--no-exact] [--big] [--ref FILE]
 *
 * Cases (issue 15's table; inputs as /work/ref/astra_measure.sh builds them):
 *   ar64m_rfs_8x8x16      64 MiB all-reduce, 1,024 per-rank copies of one .et
 *   ar64m_rfs_8x8x128     the same on 8,192 NPUs
 *   ar64m_rfs_8x8x256     the same on 16,384 NPUs
 *   gpt3_175b_dp16_tp8_pp8  `etsim gen llm --preset gpt3-175b --dp 16 --tp 8
 *                         --pp 8 --microbatches 8 --out-format et` (1,024 files
 *                         + communicator groups), network 8 x 8 x 16
 *   load_8192             loading 8,192 one-node files: identical and distinct
 *   gpt3_175b_dp512_tp8_pp16  (--big) 65,536 per-rank files, 5.1 GB on disk,
 *                         network 8 x 8 x 1024; default path only
 * Network [Ring, FullyConnected, Switch] 8 x 8 x Z at 200/100/50 GB/s and
 * 50/500/2000 ns; system: ASTRA-sim's Ring_4chunks.json with three ring
 * entries (LIFO, 4 splits, 1 active chunk, localBWAware, 1600 GB/s).
 *
 * Each simulator runs as a child process; its CPU time (user + system) and
 * peak RSS come from wait4(); a run under 0.5 s of CPU is made 5 times and
 * its median CPU time reported (spawn_median).  etsim runs by default (classes of
 * equivalent NPUs) and with --exact (message by message); on the GPT-3
 * cases with --duration-micros, so that it reads exactly what ASTRA-sim
 * reads.  Every NPU's "sys[N] finished, T cycles, exposed communication E
 * cycles." line must agree between the runs.
 *
 * ASTRA-sim: with ASTRA_SIM_BIN set (its congestion-unaware binary), it
 * runs on the same inputs in the same invocation (ASTRA_TIMEOUT seconds,
 * default 900, then killed) and the ratio is measured here; without it the
 * figures stored in bench/astra_ref.tsv are printed, marked "stored".
 * ETSIM_BIN names etsim (default: etsim next to this program); BENCH_DIR
 * the scratch folder's parent (default /tmp).
 */
#include "etsim/et.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct run {
  double cpu_s, rss_mb;
  int ok;      /* exited 0 */
  int killed;  /* timed out */
  char *lines; /* sorted "sys[...]" lines, malloc'd */
  size_t n_lines;
  long long npu0; /* NPU 0's finish cycles, or -1 */
  char summary[160];
} run_t;

static char scratch[4096], etsim_bin[8400];

static void die(const char *what) {
  fprintf(stderr, "bench_sim_scale: %s: %s\n", what, strerror(errno));
  exit(3);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) == EOF || fclose(f)) die(path);
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keep the "sys[N] finished ..." lines of `path`, sorted, and the first
 * "reduction" line of etsim's summary. */
static void read_lines(const char *path, run_t *r) {
  FILE *f = fopen(path, "r");
  r->npu0 = -1;
  if (!f) return;
  char buf[512], **v = NULL;
  size_t n = 0, cap = 0, bytes = 0;
  while (fgets(buf, sizeof buf, f)) {
    char *p = strstr(buf, "sys[");
    if (p && strstr(p, " finished, ")) {
      if (n == cap) {
        cap = cap ? 2 * cap : 1024;
        v = realloc(v, cap * sizeof *v);
      }
      v[n++] = strdup(p);
      bytes += strlen(p);
      if (strncmp(p, "sys[0] ", 7) == 0) r->npu0 = atoll(p + 17);
    } else if (strncmp(buf, "reduction     ", 14) == 0 && !r->summary[0]) {
      snprintf(r->summary, sizeof r->summary, "%.150s", buf + 14);
      r->summary[strcspn(r->summary, "\n")] = 0;
    }
  }
  fclose(f);
  qsort(v, n, sizeof *v, cmp_line);
  r->lines = malloc(bytes + 1);
  size_t w = 0;
  for (size_t k = 0; k < n; k++) {
    size_t l = strlen(v[k]);
    memcpy(r->lines + w, v[k], l);
    w += l;
    free(v[k]);
  }
  if (r->lines) r->lines[w] = 0;
  r->n_lines = n;
  free(v);
}

static volatile sig_atomic_t alarm_hit;
static void on_alarm(int sig) {
  (void)sig;
  alarm_hit = 1;
}

/* Run argv in `dir` with stdout to out_path; CPU and peak RSS of the child. */
static run_t spawn(const char *dir, char *const argv[], const char *out_path, int timeout_s) {
  run_t r;
  memset(&r, 0, sizeof r);
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(127);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int nul = open("/dev/null", O_WRONLY);
    if (fd < 0 || nul < 0) _exit(127);
    dup2(fd, 1);
    dup2(nul, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  alarm_hit = 0;
  alarm((unsigned)timeout_s);
  int status;
  struct rusage ru;
  for (;;) {
    pid_t w = wait4(pid, &status, 0, &ru);
    if (w == pid) break;
    if (w < 0 && errno == EINTR && alarm_hit) {
      kill(pid, SIGKILL);
      r.killed = 1;
      continue;
    }
    if (w < 0 && errno != EINTR) die("wait4");
  }
  alarm(0);
  r.cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
            ru.ru_stime.tv_usec / 1e6;
  r.rss_mb = (double)ru.ru_maxrss / 1024;
  r.ok = !r.killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  char full[8200];
  snprintf(full, sizeof full, "%s/%s", dir, out_path);
  read_lines(full, &r);
  return r;
}

/* spawn(), repeated when the run is short: a run under 0.5 s of CPU is
 * mostly process start and file opens, and one sample of it is noise on a
 * shared machine.  Such runs are made 5 times; the median CPU time is
 * reported (with the first run's output and peak RSS). */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static run_t spawn_median(const char *dir, char *const argv[], const char *out_path,
                          int timeout_s) {
  run_t r = spawn(dir, argv, out_path, timeout_s);
  if (!r.ok || r.cpu_s >= 0.5) return r;
  double cpu[5] = {r.cpu_s};
  for (int k = 1; k < 5; k++) {
    run_t again = spawn(dir, argv, out_path, timeout_s);
    cpu[k] = again.ok ? again.cpu_s : r.cpu_s;
    free(again.lines);
  }
  qsort(cpu, 5, sizeof *cpu, cmp_double);
  r.cpu_s = cpu[2];
  return r;
}

/* The case folder: network, system, memory. */
static void platform(const char *dir, unsigned z) {
  char p[8400], t[400];
  mkdir(dir, 0755);
  snprintf(p, sizeof p, "%s/network.yml", dir);
  snprintf(t, sizeof t,
           "topology: [ Ring, FullyConnected, Switch ]\nnpus_count: [ 8, 8, %u ]\n"
           "bandwidth: [ 200.0, 100.0, 50.0 ]\nlatency: [ 50.0, 500.0, 2000.0 ]\n",
           z);
  put(p, t);
  snprintf(p, sizeof p, "%s/system.json", dir);
  put(p,
      "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10, \"active-chunks-per-dimension\": "
      "1,\n"
      " \"preferred-dataset-splits\": 4, \"all-reduce-implementation\": [\"ring\", \"ring\", "
      "\"ring\"],\n \"all-gather-implementation\": [\"ring\", \"ring\", \"ring\"],\n"
      " \"reduce-scatter-implementation\": [\"ring\", \"ring\", \"ring\"],\n"
      " \"all-to-all-implementation\": [\"ring\", \"ring\", \"ring\"],\n"
      " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600, \"boost-mode\": 0,\n"
      " \"roofline-enabled\": 0, \"peak-perf\": 900}\n");
  snprintf(p, sizeof p, "%s/memory.json", dir);
  put(p, "{\"memory-type\": \"NO_MEMORY_EXPANSION\"}\n");
}

/* One all-reduce node of `bytes` into path. */
static void ar_file(const char *path, long long bytes) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  etsim_attr_t a[3] = {{.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL, .v.b = 0},
                       {.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = 0},
                       {.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = bytes}};
  etsim_et_node_t node = {.id = 0,
                          .name = "all_reduce_64MiB",
                          .type = ETSIM_ET_COMM_COLL_NODE,
                          .n_attrs = 3,
                          .attrs = a};
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  if (etsim_et_writer_open(&w, path, 0, &err) || etsim_et_writer_meta(w, &meta, &err) ||
      etsim_et_writer_node(w, &node, &err) || etsim_et_writer_commit(w, &err)) {
    fprintf(stderr, "bench_sim_scale: %s\n", err.msg);
    exit(3);
  }
}

/* n per-rank files workload.<r>.et in dir: copies of one file, or (distinct)
 * each with its own size. */
static void ar_ranks(const char *dir, unsigned n, int distinct) {
  char p[8400], one[8400];
  snprintf(one, sizeof one, "%s/one.et", dir);
  ar_file(one, 64ll << 20);
  FILE *f = fopen(one, "rb");
  if (!f) die(one);
  char data[256];
  size_t len = fread(data, 1, sizeof data, f);
  fclose(f);
  unlink(one);
  for (unsigned r = 0; r < n; r++) {
    snprintf(p, sizeof p, "%s/workload.%u.et", dir, r);
    if (distinct) {
      ar_file(p, (64ll << 20) + r);
      continue;
    }
    FILE *o = fopen(p, "wb");
    if (!o || fwrite(data, 1, len, o) != len || fclose(o)) die(p);
  }
}

/* Stored ASTRA-sim figures: cpu_s, maxrss_mb, cycles of NPU 0. */
typedef struct stored {
  double cpu_s, rss_mb;
  char cycles[64];
  int found;
} stored_t;

static stored_t stored_for(const char *ref, const char *name) {
  stored_t s;
  memset(&s, 0, sizeof s);
  FILE *f = ref ? fopen(ref, "r") : NULL;
  if (!f) return s;
  char line[2048];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    char c[128];
    unsigned npus;
    if (sscanf(line, "%127s %u %lf %lf %63s", c, &npus, &s.cpu_s, &s.rss_mb, s.cycles) == 5 &&
        strcmp(c, name) == 0) {
      s.found = 1;
      break;
    }
  }
  fclose(f);
  return s;
}

static int same_lines(const run_t *a, const run_t *b) {
  return a->lines && b->lines && a->n_lines == b->n_lines && strcmp(a->lines, b->lines) == 0;
}

static void free_run(run_t *r) { free(r->lines); }

static void fmt_run(char *buf, size_t n, const run_t *r, double ref_cpu) {
  if (r->killed) snprintf(buf, n, "killed");
  else if (!r->ok) snprintf(buf, n, "failed");
  else if (ref_cpu > 0)
    snprintf(buf, n, "%.3f s, %.1f MB (%.0fx)", r->cpu_s, r->rss_mb,
             ref_cpu / (r->cpu_s > 0.001 ? r->cpu_s : 0.001));
  else snprintf(buf, n, "%.3f s, %.1f MB", r->cpu_s, r->rss_mb);
}

/* One simulation case. */
static void sim_case(const char *name, unsigned z, int gpt_dp, int gpt_pp, int mb, int exact,
                     int run_astra, const char *ref) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/%s", scratch, name);
  platform(dir, z);
  unsigned npus = 64 * z;
  int gpt = gpt_dp > 0;
  if (gpt) {
    char dp[16], pp[16], m[16], out[4300];
    snprintf(dp, sizeof dp, "%d", gpt_dp);
    snprintf(pp, sizeof pp, "%d", gpt_pp);
    snprintf(m, sizeof m, "%d", mb);
    snprintf(out, sizeof out, "%s/workload", dir);
    char *gen[] = {
        etsim_bin, "gen",  "llm", "--preset",   "gpt3-175b", "--dp",           dp, "--tp",
        "8",       "--pp", pp,    "--schedule", "1f1b",      "--microbatches", m,  "--out-format",
        "et",      "-o",   out,   "--quiet",    NULL};
    run_t g = spawn(dir, gen, "gen.out", 3600);
    if (!g.ok) {
      fprintf(stderr, "bench_sim_scale: gen llm for %s failed\n", name);
      exit(3);
    }
    free_run(&g);
  } else {
    ar_ranks(dir, npus, 0);
  }
  char *cg = gpt ? "--comm-group" : NULL;
  char *cgf = gpt ? "workload.comm_group.json" : NULL;
  char *dflt[] = {etsim_bin,
                  "sim",
                  "--workload",
                  "workload",
                  "--system",
                  "system.json",
                  "--network",
                  "network.yml",
                  "--memory",
                  "memory.json",
                  gpt ? "--duration-micros" : cg,
                  cg,
                  cgf,
                  NULL};
  run_t d = spawn_median(dir, dflt, "etsim.out", 3600);
  run_t e;
  memset(&e, 0, sizeof e);
  if (exact) {
    char *ex[] = {etsim_bin,  "sim",         "--workload", "workload",
                  "--system", "system.json", "--network",  "network.yml",
                  "--memory", "memory.json", "--exact",    gpt ? "--duration-micros" : cg,
                  cg,         cgf,           NULL};
    e = spawn_median(dir, ex, "exact.out", 3600);
  }
  run_t a;
  memset(&a, 0, sizeof a);
  const char *astra = getenv("ASTRA_SIM_BIN");
  stored_t st = stored_for(ref, name);
  double ref_cpu = 0;
  char astra_col[96] = "-";
  if (astra && *astra && run_astra) {
    const char *to = getenv("ASTRA_TIMEOUT");
    char cgarg[64] = "--comm-group-configuration=workload.comm_group.json";
    char *av[] = {(char *)astra,
                  "--workload-configuration=workload",
                  "--system-configuration=system.json",
                  "--network-configuration=network.yml",
                  "--remote-memory-configuration=memory.json",
                  gpt ? cgarg : NULL,
                  NULL};
    a = spawn_median(dir, av, "astra.out", to ? atoi(to) : 900);
    if (a.ok) {
      ref_cpu = a.cpu_s;
      snprintf(astra_col, sizeof astra_col, "%.2f s, %.1f MB (measured)", a.cpu_s, a.rss_mb);
    } else {
      snprintf(astra_col, sizeof astra_col, "%s after %.0f s CPU", a.killed ? "killed" : "failed",
               a.cpu_s);
    }
  } else if (st.found) {
    ref_cpu = st.cpu_s;
    if (st.cpu_s > 0)
      snprintf(astra_col, sizeof astra_col, "%.2f s, %.1f MB (stored)", st.cpu_s, st.rss_mb);
    else snprintf(astra_col, sizeof astra_col, "%s (stored)", st.cycles);
  }
  char dc[64], ec[64] = "-";
  fmt_run(dc, sizeof dc, &d, ref_cpu);
  if (exact) fmt_run(ec, sizeof ec, &e, ref_cpu);
  /* Cycles: every NPU's line, default vs --exact vs ASTRA-sim. */
  char check[160];
  const char *cmp_exact = !exact               ? ""
                          : same_lines(&d, &e) ? ", = --exact"
                                               : ", DIFFERS from --exact";
  const char *cmp_astra =
      a.ok ? (same_lines(&d, &a) ? ", = ASTRA-sim" : ", DIFFERS from ASTRA-sim")
      : st.found && strcmp(st.cycles, "-") && d.npu0 >= 0 && atoll(st.cycles) == d.npu0
          ? ", NPU 0 = stored ASTRA-sim"
          : "";
  snprintf(check, sizeof check, "%zu NPUs, NPU 0 at %lld%s%s", d.n_lines, d.npu0, cmp_exact,
           cmp_astra);
  printf("| %s | %u | %s | %s | %s | %s |\n", name, npus, astra_col, dc, ec, check);
  if (d.summary[0]) printf("|   | | | reduction: %.120s | | |\n", d.summary);
  fflush(stdout);
  free_run(&d);
  free_run(&e);
  free_run(&a);
  char cmd[8400];
  if (!getenv("BENCH_KEEP")) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
}

static double cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* Loading 8,192 one-node files in this process (identical, then distinct). */
static void load_case(void) {
  for (int distinct = 0; distinct < 2; distinct++) {
    char dir[4200], pre[4300];
    snprintf(dir, sizeof dir, "%s/load%d", scratch, distinct);
    mkdir(dir, 0755);
    ar_ranks(dir, 8192, distinct);
    snprintf(pre, sizeof pre, "%s/workload", dir);
    etsim_error_t err = {0};
    etsim_et_set_t *set;
    double c0 = cpu_now();
    if (etsim_et_set_load(&set, pre, ETSIM_ET_SET_SHARE_LABELS, &err)) {
      fprintf(stderr, "bench_sim_scale: %s\n", err.msg);
      exit(3);
    }
    double c1 = cpu_now();
    size_t mem = 0;
    for (size_t k = 0; k < set->n_traces; k++) mem += etsim_et_trace_memory(set->traces[k]);
    printf(
        "| load_8192 (%s) | 8192 | | %.3f s CPU, %zu distinct traces, %.1f KiB per file "
        "held by traces | | |\n",
        distinct ? "distinct files" : "identical files", c1 - c0, set->n_traces,
        (double)mem / 8192 / 1024);
    etsim_et_set_free(set);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
}

int main(int argc, char **argv) {
  const char *cases =
      "ar64m_rfs_8x8x16,ar64m_rfs_8x8x128,gpt3_175b_dp16_tp8_pp8,ar64m_rfs_8x8x256,"
      "load_8192";
  const char *ref = NULL;
  int exact = 1, big = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = argv[++i];
    else if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc) ref = argv[++i];
    else if (strcmp(argv[i], "--no-exact") == 0) exact = 0;
    else if (strcmp(argv[i], "--big") == 0) big = 1;
    else {
      fprintf(stderr,
              "usage: bench_sim_scale [--cases a,b,...] [--no-exact] [--big] [--ref FILE]\n");
      return 2;
    }
  }
  /* etsim and the stored figures: next to this program by default. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  const char *eb = getenv("ETSIM_BIN");
  snprintf(etsim_bin, sizeof etsim_bin, "%s", eb ? eb : "");
  if (!eb) snprintf(etsim_bin, sizeof etsim_bin, "%s/etsim", self);
  static char refbuf[4200];
  if (!ref) {
    snprintf(refbuf, sizeof refbuf, "%s/../bench/astra_ref.tsv", self);
    ref = refbuf;
  }
  const char *bd = getenv("BENCH_DIR");
  snprintf(scratch, sizeof scratch, "%s/etsim-sim-scale-XXXXXX", bd ? bd : "/tmp");
  if (!mkdtemp(scratch)) die("mkdtemp");
  const char *astra = getenv("ASTRA_SIM_BIN");
  printf("ASTRA-sim: %s\netsim: %s\n\n",
         astra && *astra ? astra : "(stored figures, bench/astra_ref.tsv)", etsim_bin);
  printf("| case | NPUs | ASTRA-sim CPU, max RSS | etsim default | etsim --exact | cycles |\n");
  printf("|---|---|---|---|---|---|\n");
  char list[1024];
  snprintf(list, sizeof list, "%s%s", cases, big ? ",gpt3_175b_dp512_tp8_pp16" : "");
  for (char *c = strtok(list, ","); c; c = strtok(NULL, ",")) {
    if (strncmp(c, "ar64m_rfs_8x8x", 14) == 0)
      sim_case(c, (unsigned)atoi(c + 14), 0, 0, 0, exact, 1, ref);
    else if (strcmp(c, "gpt3_175b_dp16_tp8_pp8") == 0) sim_case(c, 16, 16, 8, 8, exact, 1, ref);
    else if (strcmp(c, "gpt3_175b_dp512_tp8_pp16") == 0) sim_case(c, 1024, 512, 16, 16, 0, 0, ref);
    else if (strcmp(c, "load_8192") == 0) load_case();
    else fprintf(stderr, "bench_sim_scale: unknown case %s\n", c);
  }
  rmdir(scratch);
  return 0;
}
