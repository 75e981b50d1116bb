/*
 * test_mpi.c — etsim-replay under mpirun (2 and 4 ranks, oversubscribed):
 * collectives and messages checked by their data (--check), sizes against
 * comm_size, send/recv pairs by source and tag, GEMM flops against the
 * closed form, dependency order in the measured times, the fidelity report
 * against the per-node CSV, and every bad input ending in a clear error and
 * a non-zero exit instead of a hang.  Skips when mpirun or etsim-replay is
 * absent.
 */
#include "replay_util.h"

#include "etsim/replay.h"

#include <jansson.h>
#include <math.h>
#include <sys/wait.h>

static char runner[4096], etsim_bin[4096];

static int have_mpi(void) {
  if (!runner[0]) {
    const char *bin = getenv("ETSIM_BIN");
    if (!bin) return 0;
    snprintf(etsim_bin, sizeof etsim_bin, "%s", bin);
    snprintf(runner, sizeof runner, "%s", bin);
    char *slash = strrchr(runner, '/');
    if (!slash) return 0;
    snprintf(slash, sizeof runner - (size_t)(slash - runner), "/etsim-replay");
  }
  return access(runner, X_OK) == 0 && system("command -v mpirun >/dev/null 2>&1") == 0;
}

#define NEED_MPI()                                   \
  if (!have_mpi()) {                                 \
    TU_SKIP("mpirun or etsim-replay not available"); \
  }

/* Environment that lets Open MPI run as root in a container on a fresh
 * machine: no ssh, shared memory without CMA, leak checks off for MPI's
 * own allocations under ASan. */
static void mpi_env(void) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
  /* One host: shared memory and self only (no UCX/OFI probing). */
  setenv("OMPI_MCA_pml", "ob1", 1);
  setenv("OMPI_MCA_btl", "self,vader", 1);
  const char *a = getenv("ASAN_OPTIONS");
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%sdetect_leaks=0", a ? a : "", a && *a ? ":" : "");
  setenv("ASAN_OPTIONS", buf, 1);
}

/* Run `mpirun -np N etsim-replay ARGS` (or a full command when np == 0)
 * with a hard timeout; stdout and stderr go to tmp/out and tmp/err.
 * Returns the exit status (124 on timeout). */
static int run(int np, const char *args) {
  mpi_env();
  char cmd[16384];
  if (np)
    snprintf(cmd, sizeof cmd,
             "timeout 120 mpirun --oversubscribe %s -np %d '%s' %s >'%s/out' "
             "2>'%s/err'",
             geteuid() == 0 ? "--allow-run-as-root" : "", np, runner, args, tmp, tmp);
  else snprintf(cmd, sizeof cmd, "timeout 120 %s >'%s/out' 2>'%s/err'", args, tmp, tmp);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *name) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", tmp, name);
  size_t n;
  return (char *)tu_read(p, &n);
}

/* stderr must contain `want`. */
static void err_has(const char *want) {
  char *e = slurp("err");
  assert_non_null(e);
  if (!strstr(e, want)) print_message("stderr: %s\nwant: %s\n", e, want);
  TU_CONTAINS(e, want);
  free(e);
}

/* ------------------------------------------------------------ CSV */

typedef struct {
  int rank;
  uint64_t id;
  char name[64], kind[16], coll[32], check[16];
  int peer, tag;
  uint64_t sb, rb;
  double flops, rec_us, meas_us, start_us, end_us;
} row_t;

static size_t read_csv(const char *name, row_t *rows, size_t cap) {
  char *s = slurp(name);
  assert_non_null(s);
  size_t n = 0;
  char *save = NULL;
  char *line = strtok_r(s, "\n", &save); /* header */
  TU_CONTAINS(line, "rank,id,name,kind");
  while ((line = strtok_r(NULL, "\n", &save)) && n < cap) {
    row_t *r = &rows[n];
    memset(r, 0, sizeof *r);
    char *f[16] = {0};
    int nf = 0;
    for (char *p = line; nf < 16;) {
      f[nf++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = 0;
      p = c + 1;
    }
    assert_int_equal(nf, 15);
    r->rank = atoi(f[0]);
    r->id = strtoull(f[1], NULL, 10);
    snprintf(r->name, sizeof r->name, "%s", f[2]);
    snprintf(r->kind, sizeof r->kind, "%s", f[3]);
    snprintf(r->coll, sizeof r->coll, "%s", f[4]);
    r->peer = atoi(f[5]);
    r->tag = atoi(f[6]);
    r->sb = strtoull(f[7], NULL, 10);
    r->rb = strtoull(f[8], NULL, 10);
    r->flops = strtod(f[9], NULL);
    r->rec_us = strtod(f[10], NULL);
    r->meas_us = strtod(f[11], NULL);
    r->start_us = strtod(f[12], NULL);
    r->end_us = strtod(f[13], NULL);
    snprintf(r->check, sizeof r->check, "%s", f[14]);
    n++;
  }
  free(s);
  return n;
}

static const row_t *find_row(const row_t *rows, size_t n, int rank, uint64_t id) {
  for (size_t i = 0; i < n; i++)
    if (rows[i].rank == rank && rows[i].id == id) return &rows[i];
  fail_msg("no CSV row for rank %d node %llu", rank, (unsigned long long)id);
  return NULL;
}

static void set_path(char *out, size_t cap, const char *prefix, int r) {
  snprintf(out, cap, "%s/%s.%d.et", tmp, prefix, r);
}

/* ------------------------------------------------------------ tests */

/* Every collective kind on 4 ranks, chained, checked by data. */
static void test_collectives(void **state) {
  (void)state;
  NEED_MPI();
  const ru_node_t sp[] = {
      {0, "ar", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 0, {"comm_type=0", "comm_size=65536"}},
      {1, "ag", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 1, {"comm_type=2", "comm_size=65536"}},
      {2, "rs", ETSIM_ET_COMM_COLL_NODE, 0, {1}, 1, {"comm_type=7", "comm_size=65536"}},
      {3, "a2a", ETSIM_ET_COMM_COLL_NODE, 0, {2}, 1, {"comm_type=6", "comm_size=65536"}},
      {4,
       "bc",
       ETSIM_ET_COMM_COLL_NODE,
       0,
       {3},
       1,
       {"comm_type=5", "comm_size=4096", "comm_src:i32=2"}},
      {5,
       "red",
       ETSIM_ET_COMM_COLL_NODE,
       0,
       {4},
       1,
       {"comm_type=1", "comm_size=4096", "comm_src:i32=1"}},
      {6, "gat", ETSIM_ET_COMM_COLL_NODE, 0, {5}, 1, {"comm_type=3", "comm_size=4096"}},
      {7,
       "sca",
       ETSIM_ET_COMM_COLL_NODE,
       0,
       {6},
       1,
       {"comm_type=4", "comm_size=4096", "comm_src:i32=3"}},
      {8, "bar", ETSIM_ET_COMM_COLL_NODE, 0, {7}, 1, {"comm_type=9", "comm_size=0"}},
      {9, "ar2", ETSIM_ET_COMM_COLL_NODE, 0, {8}, 1, {"comm_type=0", "comm_size=1000"}},
  };
  char p[4200];
  for (int r = 0; r < 4; r++) {
    set_path(p, sizeof p, "coll", r);
    ru_write(p, sp, sizeof sp / sizeof sp[0]);
  }
  char args[8400];
  snprintf(args, sizeof args,
           "--check --iterations 2 --warmup 1 --timeout 30 --csv '%s/c.csv' "
           "'%s/coll'",
           tmp, tmp);
  int rc = run(4, args);
  if (rc) {
    char *e = slurp("err");
    print_message("%s\n", e);
    free(e);
  }
  assert_int_equal(rc, 0);
  row_t rows[64];
  size_t n = read_csv("c.csv", rows, 64);
  assert_int_equal(n, 40);
  for (int r = 0; r < 4; r++) {
    for (uint64_t id = 0; id <= 9; id++) {
      const row_t *w = find_row(rows, n, r, id);
      assert_string_equal(w->kind, "coll");
      /* Only buffers this rank receives into are checked. */
      if (w->rb) assert_string_equal(w->check, "ok");
      if (id > 0) /* the chain: each starts after its parent ended */
        TU_GE(w->start_us, find_row(rows, n, r, id - 1)->end_us);
    }
    const row_t *w = find_row(rows, n, r, 0);
    assert_string_equal(w->coll, "ALL_REDUCE");
    assert_int_equal(w->sb, 65536);
    assert_int_equal(w->rb, 65536);
    w = find_row(rows, n, r, 1); /* all-gather: size is each rank's input (ASTRA-sim) */
    assert_int_equal(w->sb, 65536);
    assert_int_equal(w->rb, 4 * 65536);
    w = find_row(rows, n, r, 2); /* reduce-scatter: size is the input */
    assert_int_equal(w->sb, 65536);
    assert_int_equal(w->rb, 16384);
    w = find_row(rows, n, r, 3);
    assert_int_equal(w->sb, 65536);
    assert_int_equal(w->rb, 65536);
    w = find_row(rows, n, r, 4); /* broadcast from rank 2 */
    assert_int_equal(w->sb, r == 2 ? 4096 : 0);
    assert_int_equal(w->rb, r == 2 ? 0 : 4096);
    assert_string_equal(w->check, r == 2 ? "-" : "ok");
    w = find_row(rows, n, r, 5); /* reduce to rank 1 */
    assert_int_equal(w->rb, r == 1 ? 4096 : 0);
    w = find_row(rows, n, r, 6); /* gather to rank 0 */
    assert_int_equal(w->sb, 1024);
    assert_int_equal(w->rb, r == 0 ? 4096 : 0);
    w = find_row(rows, n, r, 7); /* scatter from rank 3 */
    assert_int_equal(w->sb, r == 3 ? 4096 : 0);
    assert_int_equal(w->rb, 1024);
    w = find_row(rows, n, r, 9); /* 1000 B: 250 whole floats */
    assert_int_equal(w->rb, 1000);
  }
  /* The same run with a flipped bit on rank 0 must fail verification. */
  setenv("ETSIM_REPLAY_CORRUPT", "1", 1);
  rc = run(4, args);
  unsetenv("ETSIM_REPLAY_CORRUPT");
  assert_int_equal(rc, 1);
  n = read_csv("c.csv", rows, 64);
  assert_string_equal(find_row(rows, n, 0, 0)->check, "MISMATCH");
  assert_string_equal(find_row(rows, n, 1, 0)->check, "ok");
  err_has("differ from what the senders sent");
}

/* The ASTRA-sim microbenchmarks: 1 MiB collectives on 4 ranks. */
static void test_microbenchmarks(void **state) {
  (void)state;
  NEED_MPI();
  static const char *const colls[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  static const char *const types[] = {"ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL"};
  for (int c = 0; c < 4; c++) {
    char rel[256];
    snprintf(rel, sizeof rel, "traces/astra-sim/microbenchmarks/%s/4npus_1MB/%s.0.et", colls[c],
             colls[c]);
    TU_NEED_SHARED(f, rel);
    f[strlen(f) - 5] = 0; /* drop ".0.et": the prefix */
    char args[8400];
    snprintf(args, sizeof args, "--check --json --iterations 1 --warmup 0 --timeout 30 '%s'", f);
    assert_int_equal(run(4, args), 0);
    char *out = slurp("out");
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    if (!j) print_message("%s\n", out);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 4);
    json_t *ck = json_object_get(j, "check");
    assert_int_equal(json_integer_value(json_object_get(ck, "verified")), 4);
    assert_int_equal(json_integer_value(json_object_get(ck, "mismatches")), 0);
    json_t *cm = json_object_get(j, "communication");
    assert_int_equal(json_array_size(cm), 4);
    for (size_t i = 0; i < 4; i++) {
      json_t *o = json_array_get(cm, i);
      assert_string_equal(json_string_value(json_object_get(o, "type")), types[c]);
      /* nccl-tests' size: the all-gather's is its output, 4 ranks x the
       * 1 MiB each contributes (ASTRA-sim's comm_size). */
      assert_int_equal(json_integer_value(json_object_get(o, "bytes")), c == 1 ? 4194304 : 1048576);
      /* busbw = algbw x the nccl-tests factor */
      double alg = json_real_value(json_object_get(o, "algbw_gbps"));
      double bus = json_real_value(json_object_get(o, "busbw_gbps"));
      TU_GT(alg, 0);
      assert_true(fabs(bus - alg * etsim_replay_busbw_factor(etsim_coll_type_parse(types[c]), 4)) <=
                  1e-6 * alg);
    }
    json_decref(j);
    free(out);
    free(f);
  }
}

/* A ring on 4 ranks: sends to r+1, receives from r-1 (tag = step), a
 * duration-only reduction between; plus the real 8-rank ring refused on 4. */
static void test_send_recv(void **state) {
  (void)state;
  NEED_MPI();
  char p[4200];
  for (int r = 0; r < 4; r++) {
    char dst[32], src[32], tag0[32], tag1[32];
    snprintf(dst, sizeof dst, "comm_dst:i32=%d", (r + 1) % 4);
    snprintf(src, sizeof src, "comm_src:i32=%d", (r + 3) % 4);
    snprintf(tag0, sizeof tag0, "comm_tag:i32=%d", 10);
    snprintf(tag1, sizeof tag1, "comm_tag:i32=%d", 11);
    const ru_node_t sp[] = {
        {0,
         "s0",
         ETSIM_ET_COMM_SEND_NODE,
         0,
         {0},
         0,
         {"comm_type=5", "comm_size=262144", dst, tag0}},
        {1,
         "r0",
         ETSIM_ET_COMM_RECV_NODE,
         0,
         {0},
         1,
         {"comm_type=6", "comm_size=262144", src, tag0}},
        {2, "red", ETSIM_ET_COMP_NODE, 300, {1}, 1, {NULL}},
        {3, "s1", ETSIM_ET_COMM_SEND_NODE, 0, {2}, 1, {"comm_type=5", "comm_size=8192", dst, tag1}},
        {4, "r1", ETSIM_ET_COMM_RECV_NODE, 0, {3}, 1, {"comm_type=6", "comm_size=8192", src, tag1}},
    };
    set_path(p, sizeof p, "ring", r);
    ru_write(p, sp, 5);
  }
  char args[8400];
  snprintf(args, sizeof args, "--check --iterations 2 --timeout 30 --csv '%s/r.csv' '%s/ring'", tmp,
           tmp);
  assert_int_equal(run(4, args), 0);
  row_t rows[32];
  size_t n = read_csv("r.csv", rows, 32);
  assert_int_equal(n, 20);
  for (int r = 0; r < 4; r++) {
    const row_t *s0 = find_row(rows, n, r, 0), *r0 = find_row(rows, n, r, 1);
    const row_t *c = find_row(rows, n, r, 2), *r1 = find_row(rows, n, r, 4);
    assert_string_equal(s0->kind, "send");
    assert_int_equal(s0->peer, (r + 1) % 4);
    assert_int_equal(s0->tag, 10);
    assert_int_equal(s0->sb, 262144);
    assert_string_equal(r0->kind, "recv");
    assert_int_equal(r0->peer, (r + 3) % 4);
    assert_int_equal(r0->rb, 262144);
    /* The receiver verified source, tag, byte count and content. */
    assert_string_equal(r0->check, "ok");
    assert_string_equal(r1->check, "ok");
    assert_int_equal(r1->tag, 11);
    assert_string_equal(c->kind, "busy");
    TU_GE(c->meas_us, 300.0);
    TU_GE(c->start_us, r0->end_us);
    TU_GE(r1->start_us, find_row(rows, n, r, 3)->end_us);
  }

  TU_NEED_SHARED(f,
                 "traces/astra-sim/custom_ring_allreduce_8npus_1MB/"
                 "custom_allreduce.0.et");
  f[strlen(f) - 5] = 0;
  snprintf(args, sizeof args, "--timeout 30 '%s'", f);
  assert_int_equal(run(4, args), 2);
  err_has("the trace set has 8 rank(s) but mpirun started 4");
  free(f);
}

/* GEMM sized from num_ops and from gemm_m/n/k: the CSV reports 2mnk flops;
 * the report's per-node statistics agree with the CSV. */
static void test_compute(void **state) {
  (void)state;
  NEED_MPI();
  const ru_node_t sp[] = {
      {0, "mm", ETSIM_ET_COMP_NODE, 200, {0}, 0, {"gemm_m=96", "gemm_n=64", "gemm_k=32"}},
      {1, "ops", ETSIM_ET_COMP_NODE, 100, {0}, 1, {"num_ops=2000000", "tensor_size:u64=4096"}},
      {2, "mem", ETSIM_ET_COMP_NODE, 50, {1}, 1, {"num_ops=100", "tensor_size:u64=1200000"}},
      {3, "wait", ETSIM_ET_COMP_NODE, 1500, {2}, 1, {NULL}},
      {4, "ar", ETSIM_ET_COMM_COLL_NODE, 0, {3}, 1, {"comm_type=0", "comm_size=4096"}},
  };
  char p[4200];
  for (int r = 0; r < 2; r++) {
    set_path(p, sizeof p, "comp", r);
    ru_write(p, sp, 5);
  }
  char args[8400];
  snprintf(args, sizeof args,
           "--ridge 10 --json --iterations 3 --timeout 30 --csv '%s/k.csv' "
           "'%s/comp'",
           tmp, tmp);
  assert_int_equal(run(2, args), 0);
  row_t rows[16];
  size_t n = read_csv("k.csv", rows, 16);
  assert_int_equal(n, 10);
  double rec[10], mea[10];
  for (size_t i = 0; i < n; i++) rec[i] = rows[i].rec_us, mea[i] = rows[i].meas_us;
  for (int r = 0; r < 2; r++) {
    const row_t *w = find_row(rows, n, r, 0);
    assert_string_equal(w->kind, "gemm");
    TU_EQ(w->flops, 2.0 * 96 * 64 * 32);
    w = find_row(rows, n, r, 1); /* 2e6 flop over 4 KiB: above the ridge */
    assert_string_equal(w->kind, "gemm");
    TU_EQ(w->flops, 2e6); /* 100 x 100 x 100 */
    w = find_row(rows, n, r, 2);
    assert_string_equal(w->kind, "stream");
    assert_int_equal(w->sb, 1200000);
    w = find_row(rows, n, r, 3);
    assert_string_equal(w->kind, "busy");
    TU_GE(w->meas_us, 1500.0);
    TU_EQ(w->rec_us, 1500.0);
    for (uint64_t id = 1; id <= 4; id++)
      TU_GE(find_row(rows, n, r, id)->start_us, find_row(rows, n, r, id - 1)->end_us);
  }
  etsim_replay_fidelity_t f;
  assert_int_equal(etsim_replay_fidelity(rec, mea, n, &f), 0);
  assert_int_equal(f.n, 8); /* the all-reduces have no recorded time */
  char *out = slurp("out");
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  json_t *pn = json_object_get(j, "per_node");
  assert_int_equal(json_integer_value(json_object_get(pn, "compared")), 8);
  /* CSV times are rounded to 1 ns, the report used exact ns: same inputs. */
  TU_NEAR(json_real_value(json_object_get(pn, "mdape")), f.mdape, 1e-6);
  TU_NEAR(json_real_value(json_object_get(pn, "weighted_error")), f.wape, 1e-6);
  TU_NEAR(json_real_value(json_object_get(pn, "spearman")), f.spearman, 1e-6);
  TU_NEAR(json_real_value(json_object_get(pn, "within25")), f.within25, 1e-9);
  /* The busy node alone takes 1500 us, so the iteration cannot be faster;
   * the dry run is the recorded chain 200+100+50+1500. */
  json_t *it = json_object_get(j, "iteration");
  TU_GE(json_real_value(json_object_get(it, "measured_median_us")), 1500.0);
  TU_EQ(json_real_value(json_object_get(it, "dry_run_us")), 1850.0);
  TU_EQ(json_real_value(json_object_get(it, "critical_path_us")), 1850.0);
  json_t *cat = json_object_get(json_object_get(j, "categories"), "busy");
  TU_EQ(json_real_value(json_object_get(cat, "recorded_us")), 3000.0);
  json_decref(j);
  free(out);
}

static void write_set(const char *prefix, int ranks, const ru_node_t *const *sp, const size_t *n) {
  char p[4200];
  for (int r = 0; r < ranks; r++) {
    set_path(p, sizeof p, prefix, r);
    ru_write(p, sp[r], n[r]);
  }
}

static void test_bad_input(void **state) {
  (void)state;
  NEED_MPI();
  char args[8400], p[4200];
  const ru_node_t ar[] = {
      {1, "ar", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 0, {"comm_type=0", "comm_size=64"}}};
  /* Missing rank 2 of 4. */
  for (int r = 0; r < 4; r++) {
    if (r == 2) continue;
    set_path(p, sizeof p, "hole", r);
    ru_write(p, ar, 1);
  }
  snprintf(args, sizeof args, "--timeout 10 '%s/hole'", tmp);
  assert_int_equal(run(4, args), 2);
  err_has("has 2 rank(s) but mpirun started 4 (a rank's file is missing)");

  /* Unknown collective on rank 1. */
  const ru_node_t bad[] = {
      {7, "weird", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 0, {"comm_type=42", "comm_size=64"}}};
  const ru_node_t *s1[] = {ar, bad};
  size_t n1[] = {1, 1};
  write_set("unk", 2, s1, n1);
  snprintf(args, sizeof args, "--timeout 10 '%s/unk'", tmp);
  assert_int_equal(run(2, args), 2);
  err_has("unk.1.et: node 7 (weird): unknown collective comm_type 42");

  /* Collectives in a different order. */
  const ru_node_t o0[] = {
      {1, "a", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 0, {"comm_type=0", "comm_size=64"}},
      {2, "b", ETSIM_ET_COMM_COLL_NODE, 0, {1}, 1, {"comm_type=2", "comm_size=64"}}};
  const ru_node_t o1[] = {
      {1, "b", ETSIM_ET_COMM_COLL_NODE, 0, {0}, 0, {"comm_type=2", "comm_size=64"}},
      {2, "a", ETSIM_ET_COMM_COLL_NODE, 0, {1}, 1, {"comm_type=0", "comm_size=64"}}};
  const ru_node_t *s2[] = {o0, o1};
  size_t n2[] = {2, 2};
  write_set("order", 2, s2, n2);
  snprintf(args, sizeof args, "--timeout 10 '%s/order'", tmp);
  assert_int_equal(run(2, args), 2);
  err_has(
      "collective #1 on process group (all ranks) is ALL_GATHER of 64 B "
      "(root -1) on rank 1 but ALL_REDUCE of 64 B (root -1) on rank 0");

  /* A send nobody receives. */
  const ru_node_t snd[] = {{1,
                            "s",
                            ETSIM_ET_COMM_SEND_NODE,
                            0,
                            {0},
                            0,
                            {"comm_type=5", "comm_size=64", "comm_dst:i32=1"}}};
  const ru_node_t idle[] = {{1, "c", ETSIM_ET_COMP_NODE, 1, {0}, 0, {NULL}}};
  const ru_node_t *s3[] = {snd, idle};
  size_t n3[] = {1, 1};
  write_set("lone", 2, s3, n3);
  snprintf(args, sizeof args, "--timeout 10 '%s/lone'", tmp);
  assert_int_equal(run(2, args), 2);
  err_has("rank 1 posts 0 receive(s) from rank 0, which sends it 1 message(s)");

  /* Matched pairs that wait for each other: each rank's send waits for its
   * own receive.  The checks pass; the timeout ends it with MPI_Abort. */
  const ru_node_t w0[] = {{1,
                           "r",
                           ETSIM_ET_COMM_RECV_NODE,
                           0,
                           {0},
                           0,
                           {"comm_type=6", "comm_size=64", "comm_src:i32=1"}},
                          {2,
                           "s",
                           ETSIM_ET_COMM_SEND_NODE,
                           0,
                           {1},
                           1,
                           {"comm_type=5", "comm_size=64", "comm_dst:i32=1"}}};
  const ru_node_t w1[] = {{1,
                           "r",
                           ETSIM_ET_COMM_RECV_NODE,
                           0,
                           {0},
                           0,
                           {"comm_type=6", "comm_size=64", "comm_src:i32=0"}},
                          {2,
                           "s",
                           ETSIM_ET_COMM_SEND_NODE,
                           0,
                           {1},
                           1,
                           {"comm_type=5", "comm_size=64", "comm_dst:i32=0"}}};
  const ru_node_t *s4[] = {w0, w1};
  size_t n4[] = {2, 2};
  write_set("wait", 2, s4, n4);
  snprintf(args, sizeof args, "--timeout 1 '%s/wait'", tmp);
  int rc = run(2, args);
  TU_NE(rc, 0);
  TU_NE(rc, 124);
  err_has("did not complete within 1 s");

  /* Usage errors. */
  snprintf(args, sizeof args, "--iterations 0 '%s/order'", tmp);
  assert_int_equal(run(2, args), 2);
  err_has("--iterations must be >= 1");
  snprintf(args, sizeof args, "'%s/order' --csv", tmp);
  assert_int_equal(run(2, args), 2);
  err_has("--csv needs a value");
  snprintf(args, sizeof args, "--deps both '%s/order'", tmp);
  assert_int_equal(run(2, args), 2);
  err_has("--deps: expected data, ctrl or all, got 'both'");
}

/* Process groups from a communicator-group file: pairs {0,1} and {2,3}
 * all-reduce apart (the check expects sums over the pair only), then an
 * all-gather on a group listed out of order, then one on all ranks. */
static void test_groups(void **state) {
  (void)state;
  NEED_MPI();
  char p[4200];
  snprintf(p, sizeof p, "%s/groups.json", tmp);
  const char *js =
      "{\"pair0\": [0, 1], \"pair1\": [2, 3], "
      "\"perm\": [3, 1, 0, 2]}";
  assert_int_equal(tu_write(p, js, strlen(js)), 0);
  for (int r = 0; r < 4; r++) {
    const ru_node_t sp[] = {
        {0,
         "pair",
         ETSIM_ET_COMM_COLL_NODE,
         0,
         {0},
         0,
         {"comm_type=0", "comm_size=8192", r < 2 ? "pg_name:s=pair0" : "pg_name:s=pair1"}},
        {1,
         "perm",
         ETSIM_ET_COMM_COLL_NODE,
         0,
         {0},
         1,
         {"comm_type=2", "comm_size=8192", "pg_name:s=perm"}},
        {2,
         "bc",
         ETSIM_ET_COMM_COLL_NODE,
         0,
         {1},
         1,
         {"comm_type=5", "comm_size=512", "pg_name:s=perm", "comm_src:i32=0"}},
        {3, "world", ETSIM_ET_COMM_COLL_NODE, 0, {2}, 1, {"comm_type=0", "comm_size=8192"}},
    };
    set_path(p, sizeof p, "pg", r);
    ru_write(p, sp, 4);
  }
  char args[8400];
  snprintf(args, sizeof args,
           "--check --json --iterations 1 --timeout 30 --comm-group "
           "'%s/groups.json' --csv '%s/g.csv' '%s/pg'",
           tmp, tmp, tmp);
  int rc = run(4, args);
  if (rc) {
    char *e = slurp("err");
    print_message("%s\n", e);
    free(e);
  }
  assert_int_equal(rc, 0);
  row_t rows[16];
  size_t n = read_csv("g.csv", rows, 16);
  assert_int_equal(n, 16);
  for (size_t i = 0; i < n; i++)
    if (rows[i].rb) assert_string_equal(rows[i].check, "ok");
  /* Broadcast root is world rank 0, group rank 2 of "perm". */
  assert_int_equal(find_row(rows, n, 0, 2)->sb, 512);
  assert_int_equal(find_row(rows, n, 3, 2)->rb, 512);
  char *out = slurp("out");
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  json_t *cm = json_object_get(j, "communication");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(cm, 0), "ranks")), 2);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(cm, 1), "ranks")), 4);
  json_decref(j);
  free(out);
  /* A pg_name the file does not list. */
  snprintf(p, sizeof p, "%s/groups.json", tmp);
  js = "{\"pair0\": [0, 1], \"pair1\": [2, 3]}";
  assert_int_equal(tu_write(p, js, strlen(js)), 0);
  assert_int_equal(run(4, args), 2);
  err_has(
      "pg.0.et: node 1 (perm): pg_name \"perm\" is not in the "
      "communicator-group file");
}

/* Uneven all-to-all on 4 ranks: rank r sends (r+1)(j+1)*4 + j bytes to
 * rank j (zero to itself when r is 2), checked byte by byte; a wrong
 * out_split is caught before running. */
static void split_set(const char *prefix, int bad) {
  char p[4200];
  for (int r = 0; r < 4; r++) {
    char in[256], out[256];
    size_t ki = 0, ko = 0;
    ki += (size_t)snprintf(in + ki, sizeof in - ki, "in_split:l64=");
    ko += (size_t)snprintf(out + ko, sizeof out - ko, "out_split:l64=");
    for (int j = 0; j < 4; j++) {
      int sb = r == 2 && j == 2 ? 0 : (r + 1) * (j + 1) * 4 + j;
      int rb = j == 2 && r == 2 ? 0 : (j + 1) * (r + 1) * 4 + r;
      if (bad && r == 1 && j == 0) rb += 4;
      ki += (size_t)snprintf(in + ki, sizeof in - ki, "%s%d", j ? "," : "", sb);
      ko += (size_t)snprintf(out + ko, sizeof out - ko, "%s%d", j ? "," : "", rb);
    }
    const ru_node_t sp[] = {{0,
                             "a2av",
                             ETSIM_ET_COMM_COLL_NODE,
                             0,
                             {0},
                             0,
                             {"comm_type=6", "comm_size=1000", in, out}}};
    set_path(p, sizeof p, prefix, r);
    ru_write(p, sp, 1);
  }
}

static void test_uneven_all_to_all(void **state) {
  (void)state;
  NEED_MPI();
  split_set("a2av", 0);
  char args[8400];
  snprintf(args, sizeof args, "--check --iterations 1 --timeout 30 --csv '%s/v.csv' '%s/a2av'", tmp,
           tmp);
  assert_int_equal(run(4, args), 0);
  row_t rows[8];
  size_t n = read_csv("v.csv", rows, 8);
  assert_int_equal(n, 4);
  for (int r = 0; r < 4; r++) {
    const row_t *w = find_row(rows, n, r, 0);
    uint64_t sb = 0, rb = 0;
    for (int j = 0; j < 4; j++) {
      sb += r == 2 && j == 2 ? 0 : (uint64_t)((r + 1) * (j + 1) * 4 + j);
      rb += j == 2 && r == 2 ? 0 : (uint64_t)((j + 1) * (r + 1) * 4 + r);
    }
    assert_int_equal(w->sb, sb);
    assert_int_equal(w->rb, rb);
    assert_string_equal(w->check, "ok");
  }
  split_set("a2avbad", 1);
  snprintf(args, sizeof args, "--timeout 10 '%s/a2avbad'", tmp);
  assert_int_equal(run(4, args), 2);
  err_has(
      "a2avbad.1.et: node 0 (a2av): all-to-all: rank 0 sends 9 B to "
      "rank 1 but out_split[0] expects 13 B");
}

/* A small data-parallel training step on 2 ranks: forward GEMMs, loss,
 * backward GEMMs with each layer's gradient all-reduced as soon as it is
 * ready, then the optimizer.  The first all-reduce overlaps the next
 * backward GEMM; no node starts before its parents end; the dry run is the
 * closed form; the timeline has one event per node and rank. */
static void test_training_step(void **state) {
  (void)state;
  NEED_MPI();
  const ru_node_t sp[] = {
      {1, "fwd1", ETSIM_ET_COMP_NODE, 100, {0}, 0, {"gemm_m=128", "gemm_n=128", "gemm_k=128"}},
      {2, "fwd2", ETSIM_ET_COMP_NODE, 100, {1}, 1, {"gemm_m=128", "gemm_n=128", "gemm_k=128"}},
      {3, "loss", ETSIM_ET_COMP_NODE, 50, {2}, 1, {NULL}},
      {4, "bwd2", ETSIM_ET_COMP_NODE, 200, {3}, 1, {"gemm_m=128", "gemm_n=128", "gemm_k=256"}},
      {5, "ar2", ETSIM_ET_COMM_COLL_NODE, 300, {4}, 1, {"comm_type=0", "comm_size=262144"}},
      {6, "bwd1", ETSIM_ET_COMP_NODE, 200, {4}, 1, {"gemm_m=128", "gemm_n=128", "gemm_k=256"}},
      {7, "ar1", ETSIM_ET_COMM_COLL_NODE, 300, {6}, 1, {"comm_type=0", "comm_size=262144"}},
      {8, "opt", ETSIM_ET_COMP_NODE, 40, {5, 7}, 2, {"num_ops=100", "tensor_size:u64=524288"}},
  };
  char p[4200];
  for (int r = 0; r < 2; r++) {
    set_path(p, sizeof p, "step", r);
    ru_write(p, sp, 8);
  }
  char args[8400];
  snprintf(args, sizeof args,
           "--check --json --ridge 10 --iterations 2 --timeout 30 --csv "
           "'%s/s.csv' --timeline '%s/s.json' '%s/step'",
           tmp, tmp, tmp);
  assert_int_equal(run(2, args), 0);
  row_t rows[16];
  size_t n = read_csv("s.csv", rows, 16);
  assert_int_equal(n, 16);
  for (int r = 0; r < 2; r++) {
    for (size_t i = 0; i < 8; i++)
      for (size_t d = 0; d < sp[i].nd; d++)
        assert_true(find_row(rows, n, r, sp[i].id)->start_us >=
                    find_row(rows, n, r, sp[i].deps[d])->end_us);
    const row_t *ar2 = find_row(rows, n, r, 5), *bwd1 = find_row(rows, n, r, 6);
    TU_LT(ar2->start_us, bwd1->end_us); /* overlap */
    assert_string_equal(ar2->check, "ok");
    assert_string_equal(find_row(rows, n, r, 7)->check, "ok");
    assert_string_equal(find_row(rows, n, r, 8)->kind, "stream");
    TU_EQ(find_row(rows, n, r, 4)->flops, 2.0 * 128 * 128 * 256);
  }
  char *out = slurp("out");
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  json_t *it = json_object_get(j, "iteration");
  /* host lane 100+100+50+200, then ar2 || bwd1 (200), ar1 300, opt 40 */
  TU_EQ(json_real_value(json_object_get(it, "dry_run_us")), 990.0);
  TU_EQ(json_real_value(json_object_get(it, "critical_path_us")), 990.0);
  json_t *cov = json_object_get(j, "coverage");
  assert_int_equal(json_integer_value(json_object_get(cov, "nodes_mapped")), 16);
  json_decref(j);
  free(out);
  char *tl = slurp("s.json");
  j = json_loads(tl, 0, NULL);
  assert_non_null(j);
  assert_int_equal(json_array_size(json_object_get(j, "traceEvents")), 16);
  json_decref(j);
  free(tl);
}

/* The real PyTorch-derived chakra.0.et on one rank, scaled down 100x:
 * every mapped node runs, the 5 all-reduces are verified, the host-side
 * launchers are listed as unmapped. */
static void test_real_chakra(void **state) {
  (void)state;
  NEED_MPI();
  char *path = tu_chakra0(tmp);
  if (!path) {
    TU_SKIP("../shared/traces/chakra is absent");
  }
  char args[8400];
  snprintf(args, sizeof args,
           "--deps data --compute-scale 0.01 --comm-scale 0.01 --check --json "
           "--iterations 1 --timeout 60 '%s'",
           path);
  assert_int_equal(run(1, args), 0);
  char *out = slurp("out");
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  assert_int_equal(json_integer_value(json_object_get(j, "nodes")), 3664);
  json_t *ck = json_object_get(j, "check");
  assert_int_equal(json_integer_value(json_object_get(ck, "verified")), 5);
  assert_int_equal(json_integer_value(json_object_get(ck, "mismatches")), 0);
  json_t *cov = json_object_get(j, "coverage");
  json_t *um = json_object_get(cov, "unmapped");
  assert_int_equal(
      json_integer_value(json_object_get(cov, "nodes_mapped")) + (json_int_t)json_array_size(um),
      3664);
  /* The 14 c10d launchers are among the unmapped nodes. */
  size_t c10d = 0;
  for (size_t i = 0; i < json_array_size(um); i++)
    c10d += strncmp(json_string_value(json_object_get(json_array_get(um, i), "name")),
                    "c10d::", 6) == 0;
  assert_int_equal(c10d, 14);
  /* Scaled recorded times: the dry run is 1/100 of the unscaled one. */
  json_t *it = json_object_get(j, "iteration");
  TU_NEAR(json_real_value(json_object_get(it, "critical_path_us")), 461.4, 1.0);
  json_decref(j);
  free(out);
  free(path);
}

/* The etsim front end: --np execs mpirun; inside mpirun it execs the
 * runner; --dry-run runs alone. */
static void test_cli(void **state) {
  (void)state;
  NEED_MPI();
  const ru_node_t sp[] = {
      {1, "c", ETSIM_ET_COMP_NODE, 40, {0}, 0, {NULL}},
      {2, "ar", ETSIM_ET_COMM_COLL_NODE, 25, {1}, 1, {"comm_type=0", "comm_size=64"}},
      {3, "d", ETSIM_ET_COMP_NODE, 10, {1}, 1, {NULL}}};
  char p[4200];
  for (int r = 0; r < 2; r++) {
    set_path(p, sizeof p, "cli", r);
    ru_write(p, sp, 3);
  }
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "'%s' replay --check --timeout 30 '%s/cli'", etsim_bin, tmp);
  assert_int_equal(run(0, cmd), 0);
  char *out = slurp("out");
  TU_CONTAINS(out, "2 rank(s), 6 node(s)");
  assert_non_null(strstr(out,
                         "check: 2 communication node(s) verified, 0 "
                         "mismatch(es)"));
  free(out);
  snprintf(cmd, sizeof cmd, "mpirun --oversubscribe %s -np 2 '%s' replay --quiet '%s/cli'",
           geteuid() == 0 ? "--allow-run-as-root" : "", etsim_bin, tmp);
  assert_int_equal(run(0, cmd), 0);
  /* --np disagreeing with the set. */
  snprintf(cmd, sizeof cmd, "'%s' replay --np 3 --timeout 10 '%s/cli'", etsim_bin, tmp);
  assert_int_equal(run(0, cmd), 2);
  err_has("the trace set has 2 rank(s) but mpirun started 3");
  /* Dry run: compute lane 40 + 10, the all-reduce overlaps: 65 us. */
  snprintf(cmd, sizeof cmd, "'%s' replay --dry-run --json --path '%s/cli'", etsim_bin, tmp);
  assert_int_equal(run(0, cmd), 0);
  out = slurp("out");
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  TU_EQ(json_real_value(json_object_get(j, "dry_run_us")), 65.0);
  TU_EQ(json_real_value(json_object_get(j, "critical_path_us")), 65.0);
  assert_int_equal(json_integer_value(json_object_get(j, "nodes")), 6);
  /* c (40) then the all-reduce (25): the path 1 -> 2 on each rank. */
  json_t *cpath =
      json_object_get(json_array_get(json_object_get(j, "per_rank"), 1), "critical_path");
  assert_int_equal(json_array_size(cpath), 2);
  assert_int_equal(json_integer_value(json_array_get(cpath, 0)), 1);
  assert_int_equal(json_integer_value(json_array_get(cpath, 1)), 2);
  json_decref(j);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collectives),       cmocka_unit_test(test_microbenchmarks),
      cmocka_unit_test(test_send_recv),         cmocka_unit_test(test_compute),
      cmocka_unit_test(test_bad_input),         cmocka_unit_test(test_groups),
      cmocka_unit_test(test_uneven_all_to_all), cmocka_unit_test(test_training_step),
      cmocka_unit_test(test_real_chakra),       cmocka_unit_test(test_cli),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
