/* Several jobs on one network (docs/sim.md, "Several jobs") against closed
 * forms: a job alone equals the same job beside another on a disjoint
 * placement to the picosecond; two messages of two jobs meeting on one
 * link of the congestion backend delay the second by exactly one
 * serialization; a job that is the whole network in id order is the plain
 * run; placements and bad specs. */
#include "sim_util.h"

static const char *SYS1 =
    "{\"preferred-dataset-splits\": 2, \"endpoint-delay\": 7, "
    "\"local-mem-bw\": 100, \"collective-optimization\": \"baseline\", "
    "\"scheduling-policy\": \"FIFO\", \"all-reduce-implementation\": [\"ring\", \"ring\"]}";

typedef struct ld {
  etsim_topo_t topo;
  etsim_sys_config_t sys;
} ld_t;

static void load_platform(ld_t *p, const char *net, const char *sys) {
  etsim_error_t err = {0};
  if (etsim_topo_load_yaml(net, &p->topo, &err)) fail_msg("%s", err.msg);
  if (etsim_sys_config_load(sys, &p->sys, &err)) fail_msg("%s", err.msg);
}

static etsim_et_set_t *load_set(const char *prefix) {
  etsim_et_set_t *s = NULL;
  etsim_error_t err = {0};
  if (etsim_et_set_load(&s, prefix, ETSIM_ET_SET_SHARE, &err)) fail_msg("%s", err.msg);
  return s;
}

static etsim_sim_result_t *run_jobs(const etsim_sim_job_t *jobs, uint32_t n, const ld_t *p,
                                    const char *backend) {
  etsim_sim_opts_t o = {.backend = backend, .record_nodes = 1};
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  if (etsim_sim_run_jobs(jobs, n, &p->topo, &p->sys, &o, &r, &err)) fail_msg("%s", err.msg);
  return r;
}

/* A compute node, then an all-reduce on the job's world, then a send from
 * rank 0 to rank 3 (the others' ring and a receive on rank 3). */
static void write_job(const char *dir, const char *name, int ranks) {
  for (int r = 0; r < ranks; r++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s.%d.et", dir, name, r);
    su_node_t n[3] = {
        {.type = ETSIM_ET_COMP_NODE, .dur_us = 10 + (uint64_t)r},
        {.type = ETSIM_ET_COMM_COLL_NODE,
         .comm_type = ETSIM_COLL_ALL_REDUCE,
         .size = 1 << 20,
         .ndeps = 1,
         .deps = {0}},
        {.type = r == 0 ? ETSIM_ET_COMM_SEND_NODE : ETSIM_ET_COMM_RECV_NODE,
         .size = 65536,
         .src = 0,
         .dst = ranks - 1,
         .tag = 9,
         .ndeps = 1,
         .deps = {1}},
    };
    /* ranks between the two ends have no third node */
    su_trace(path, n, r == 0 || r == ranks - 1 ? 3 : 2);
  }
}

static void test_alone_equals_disjoint(void **state) {
  (void)state;
  const char *dir = tmp;
  write_job(dir, "a", 4);
  write_job(dir, "b", 4);
  su_put(su_p(0, dir, "net.yml"),
         "topology: [ Ring, Switch ]\nnpus_count: [ 4, 3 ]\nbandwidth: [ 50, 12.5 ]\n"
         "latency: [ 500, 1500 ]\n");
  su_put(su_p(1, dir, "sys.json"), SYS1);
  ld_t p;
  load_platform(&p, su_p(0, dir, "net.yml"), su_p(1, dir, "sys.json"));
  char pa[600], pb[600];
  snprintf(pa, sizeof pa, "%s/a", dir);
  snprintf(pb, sizeof pb, "%s/b", dir);
  etsim_et_set_t *sa = load_set(pa), *sb = load_set(pb);
  /* a in the first node (in reverse rank order), b in the third: their
   * rings stay on their own node's links */
  uint32_t na[4] = {3, 2, 1, 0}, nb[4] = {8, 9, 10, 11};
  const char *backends[] = {"analytical", "congestion"};
  for (int k = 0; k < 2; k++) {
    etsim_sim_job_t ja = {"a", sa, NULL, na}, jb = {"b", sb, NULL, nb};
    etsim_sim_job_t both[2] = {ja, jb};
    etsim_sim_result_t *ra = run_jobs(&ja, 1, &p, backends[k]);
    etsim_sim_result_t *rb = run_jobs(&jb, 1, &p, backends[k]);
    etsim_sim_result_t *r2 = run_jobs(both, 2, &p, backends[k]);
    assert_int_equal(r2->n_jobs, 2);
    assert_int_equal(r2->jobs_share_links, k == 1);
    for (uint32_t i = 0; i < 12; i++) {
      const etsim_sim_result_t *alone = i < 4 ? ra : rb;
      if (r2->npu[i].finish_ps != alone->npu[i].finish_ps)
        fail_msg("%s: NPU %u: alone %lld ps, beside the other job %lld ps", backends[k], i,
                 (long long)alone->npu[i].finish_ps, (long long)r2->npu[i].finish_ps);
      assert_int_equal(r2->npu[i].exposed_ps, alone->npu[i].exposed_ps);
      assert_int_equal(r2->npu[i].comm_bytes, alone->npu[i].comm_bytes);
    }
    /* the idle NPUs 4-7 did nothing, in every run */
    for (uint32_t i = 4; i < 8; i++) {
      assert_int_equal(r2->npu[i].finish_ps, 0);
      assert_int_equal(r2->npu_job[i], UINT32_MAX);
    }
    assert_int_equal(r2->jobs[0].finish_ps, ra->jobs[0].finish_ps);
    assert_int_equal(r2->jobs[1].finish_ps, rb->jobs[0].finish_ps);
    assert_int_equal(r2->npu_job[3], 0);
    assert_int_equal(r2->npu_rank[3], 0);
    assert_int_equal(r2->npu_rank[8], 0);
    /* ranks differ (compute 10 + r us), so the order matters: a's rank 3
     * sits on NPU 0 and receives a's send */
    TU_GT(r2->jobs[0].finish_ps, 10000000);
    assert_int_equal(r2->jobs[0].comm_bytes, 4u * (1u << 20) + 65536u);
    assert_string_equal(r2->reduction_why, "2 jobs share the network (--job)");
    etsim_sim_result_free(ra);
    etsim_sim_result_free(rb);
    etsim_sim_result_free(r2);
  }
  etsim_et_set_free(sa);
  etsim_et_set_free(sb);
  etsim_sys_config_free(&p.sys);
}

/* Rank 0 sends `bytes` to rank 1. */
static void write_p2p(const char *dir, const char *name, int64_t bytes) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.0.et", dir, name);
  su_node_t s = {.type = ETSIM_ET_COMM_SEND_NODE, .size = bytes, .src = 0, .dst = 1, .tag = 3};
  su_trace(path, &s, 1);
  snprintf(path, sizeof path, "%s/%s.1.et", dir, name);
  su_node_t r = {.type = ETSIM_ET_COMM_RECV_NODE, .size = bytes, .src = 0, .dst = 1, .tag = 3};
  su_trace(path, &r, 1);
}

/*
 * Ring(3) x Ring(4), congestion backend (dimension-ordered routes, FIFO
 * links, store and forward).  Job a: NPU 0 -> NPU 4, i.e. (0,0) -> (1,0)
 * -> (1,1).  Job b: NPU 2 -> NPU 7, (2,0) -> (1,0) the short way, then
 * (1,0) -> (1,1) -> (1,2) (a tie: clockwise).  Both reach NPU 1 at the same
 * instant and want link (1,0) -> (1,1); a was issued first and goes
 * first, b waits exactly one serialization floor(S / beta1) ns, a is
 * unchanged.  On the analytical backend they never meet.
 */
static void test_shared_link_closed_form(void **state) {
  (void)state;
  const char *dir = tmp;
  const int64_t S = 1 << 20;
  const double bw1 = 1.0;
  write_p2p(dir, "p", S);
  su_put(su_p(0, dir, "net.yml"),
         "topology: [ Ring, Ring ]\nnpus_count: [ 3, 4 ]\nbandwidth: [ 4, 1 ]\n"
         "latency: [ 700, 900 ]\n");
  su_put(su_p(1, dir, "sys.json"), SYS1);
  ld_t p;
  load_platform(&p, su_p(0, dir, "net.yml"), su_p(1, dir, "sys.json"));
  char pp[600];
  snprintf(pp, sizeof pp, "%s/p", dir);
  etsim_et_set_t *sa = load_set(pp), *sb = load_set(pp);
  uint32_t na[2] = {0, 4}, nb[2] = {2, 7};
  etsim_sim_job_t ja = {"a", sa, NULL, na}, jb = {"b", sb, NULL, nb};
  etsim_sim_job_t both[2] = {ja, jb};
  const int64_t ser1_ps = su_t(0, 0, bw1, (uint64_t)S) * 1000;
  const char *backends[] = {"congestion", "analytical"};
  for (int k = 0; k < 2; k++) {
    etsim_sim_result_t *ra = run_jobs(&ja, 1, &p, backends[k]);
    etsim_sim_result_t *rb = run_jobs(&jb, 1, &p, backends[k]);
    etsim_sim_result_t *r2 = run_jobs(both, 2, &p, backends[k]);
    int64_t wait = k == 0 ? ser1_ps : 0;
    assert_int_equal(r2->jobs[0].finish_ps, ra->jobs[0].finish_ps);
    if (r2->jobs[1].finish_ps != rb->jobs[0].finish_ps + wait)
      fail_msg("%s: b alone %lld ps, beside a %lld ps, expected + %lld ps", backends[k],
               (long long)rb->jobs[0].finish_ps, (long long)r2->jobs[1].finish_ps, (long long)wait);
    assert_int_equal(r2->npu[7].finish_ps, rb->npu[7].finish_ps + wait);
    assert_int_equal(r2->npu[2].finish_ps, rb->npu[2].finish_ps + wait);
    assert_int_equal(r2->jobs[1].last_npu, 2); /* both ends at once: the lower id */
    if (k == 0) {
      /* b alone: three hops, store and forward: floor(L + S / beta) each */
      int64_t alone = (su_t(1, 700, 4, (uint64_t)S) + 2 * su_t(1, 900, bw1, (uint64_t)S)) * 1000;
      TU_GE(rb->jobs[0].finish_ps, alone);
      TU_LT(rb->jobs[0].finish_ps - alone, 100000); /* + endpoint overheads, < 100 ns */
    }
    etsim_sim_result_free(ra);
    etsim_sim_result_free(rb);
    etsim_sim_result_free(r2);
  }
  etsim_et_set_free(sa);
  etsim_et_set_free(sb);
  etsim_sys_config_free(&p.sys);
}

/* One job on every NPU in id order is the plain run, picosecond for
 * picosecond (its world collectives are the network's). */
static void test_whole_network_job_is_plain_run(void **state) {
  (void)state;
  const char *dir = tmp;
  write_job(dir, "w", 8);
  su_put(su_p(0, dir, "net.yml"),
         "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 12.5 ]\n"
         "latency: [ 500, 1500 ]\n");
  su_put(su_p(1, dir, "sys.json"), SYS1);
  ld_t p;
  load_platform(&p, su_p(0, dir, "net.yml"), su_p(1, dir, "sys.json"));
  char pw[600];
  snprintf(pw, sizeof pw, "%s/w", dir);
  etsim_et_set_t *s = load_set(pw);
  uint32_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  etsim_sim_job_t j = {"w", s, NULL, ids};
  for (int k = 0; k < 2; k++) {
    const char *be = k ? "congestion" : "analytical";
    etsim_sim_result_t *rj = run_jobs(&j, 1, &p, be);
    etsim_sim_opts_t o = {.backend = be, .exact = 1};
    etsim_sim_result_t *r = NULL;
    etsim_error_t err = {0};
    if (etsim_sim_run(s, &p.topo, &p.sys, &o, &r, &err)) fail_msg("%s", err.msg);
    for (uint32_t i = 0; i < 8; i++) assert_int_equal(rj->npu[i].finish_ps, r->npu[i].finish_ps);
    assert_int_equal(rj->jobs[0].finish_ps, r->total_ps);
    etsim_sim_result_free(rj);
    etsim_sim_result_free(r);
  }
  etsim_et_set_free(s);
  etsim_sys_config_free(&p.sys);
}

/* A rooted collective's root is a local rank: a job on the whole Ring(4)
 * in rotated order (rank r on NPU r+1 mod 4) broadcasting from rank 0 is
 * the plain run broadcasting from NPU 1, NPU for NPU. */
static void write_bcast(const char *dir, const char *name, int root) {
  for (int r = 0; r < 4; r++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s.%d.et", dir, name, r);
    su_node_t n[2] = {{.type = ETSIM_ET_COMP_NODE, .dur_us = 5},
                      {.type = ETSIM_ET_COMM_COLL_NODE,
                       .comm_type = ETSIM_COLL_BROADCAST,
                       .size = 1 << 18,
                       .root = root,
                       .root_set = 1,
                       .ndeps = 1,
                       .deps = {0}}};
    su_trace(path, n, 2);
  }
}

static void test_rooted_local_root(void **state) {
  (void)state;
  const char *dir = tmp;
  write_bcast(dir, "local", 0);
  write_bcast(dir, "global", 1);
  su_net(su_p(0, dir, "net.yml"), "Ring", 4, 25, 700);
  su_put(su_p(1, dir, "sys.json"),
         "{\"preferred-dataset-splits\": 2, \"endpoint-delay\": 7, \"local-mem-bw\": 100, "
         "\"rooted-collectives\": \"network\"}");
  ld_t p;
  load_platform(&p, su_p(0, dir, "net.yml"), su_p(1, dir, "sys.json"));
  char pl[600], pg[600];
  snprintf(pl, sizeof pl, "%s/local", dir);
  snprintf(pg, sizeof pg, "%s/global", dir);
  etsim_et_set_t *sl = load_set(pl), *sg = load_set(pg);
  uint32_t rot[4] = {1, 2, 3, 0};
  etsim_sim_job_t j = {"rot", sl, NULL, rot};
  etsim_sim_result_t *rj = run_jobs(&j, 1, &p, "congestion");
  etsim_sim_opts_t o = {.backend = "congestion", .exact = 1};
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  if (etsim_sim_run(sg, &p.topo, &p.sys, &o, &r, &err)) fail_msg("%s", err.msg);
  for (uint32_t i = 0; i < 4; i++) {
    if (rj->npu[i].finish_ps != r->npu[i].finish_ps)
      fail_msg("NPU %u: job %lld ps, plain run %lld ps", i, (long long)rj->npu[i].finish_ps,
               (long long)r->npu[i].finish_ps);
  }
  /* the root (NPU 1) finishes first: it only sends */
  TU_LT(r->npu[1].finish_ps, r->npu[3].finish_ps);
  etsim_sim_result_free(rj);
  etsim_sim_result_free(r);
  etsim_et_set_free(sl);
  etsim_et_set_free(sg);
  etsim_sys_config_free(&p.sys);
}

static void expect_place_err(const char *place, uint32_t n, uint32_t n_npus, uint8_t *taken,
                             const char *needle) {
  uint32_t out[64];
  etsim_error_t err = {0};
  int rc = etsim_sim_job_place(place, "--job 'x@P'", n, n_npus, taken, out, &err);
  if (rc == 0) fail_msg("placement '%s' accepted", place);
  assert_int_equal(rc, ETSIM_EINVAL);
  if (!strstr(err.msg, needle) || !strstr(err.msg, "--job 'x@P'"))
    fail_msg("placement '%s': \"%s\" does not name \"%s\" and the option", place, err.msg, needle);
}

static void test_placements(void **state) {
  (void)state;
  uint8_t taken[16] = {0};
  uint32_t out[16];
  etsim_error_t err = {0};
  assert_int_equal(etsim_sim_job_place("2,0,5-6", "o", 4, 16, taken, out, &err), 0);
  uint32_t e1[4] = {2, 0, 5, 6};
  for (int k = 0; k < 4; k++) assert_int_equal(out[k], e1[k]);
  /* contiguous: the first run of 3 free NPUs (1 and 3-4 are too short) */
  assert_int_equal(etsim_sim_job_place("contiguous", "o", 3, 16, taken, out, &err), 0);
  for (int k = 0; k < 3; k++) assert_int_equal(out[k], 7 + k);
  /* strided:4: offsets 1 (5 taken), 3 (7), 4 (8) fail; 10, 14 */
  assert_int_equal(etsim_sim_job_place("strided:4", "o", 2, 16, taken, out, &err), 0);
  assert_int_equal(out[0], 10);
  assert_int_equal(out[1], 14);
  /* random: the same seed gives the same free NPUs, ascending */
  uint8_t t1[16], t2[16];
  uint32_t o1[4], o2[4];
  memcpy(t1, taken, 16);
  memcpy(t2, taken, 16);
  assert_int_equal(etsim_sim_job_place("random:seed=7", "o", 4, 16, t1, o1, &err), 0);
  assert_int_equal(etsim_sim_job_place("random:seed=7", "o", 4, 16, t2, o2, &err), 0);
  assert_memory_equal(o1, o2, sizeof o1);
  for (int k = 0; k < 4; k++) {
    assert_false(taken[o1[k]]);
    assert_true(t1[o1[k]]);
    if (k) TU_GT(o1[k], o1[k - 1]);
  }
  /* the free ones left are 1, 3, 4, 11, 12, 13, 15: every seed draws from them */
  expect_place_err("0-3", 4, 16, taken, "NPU 0 is already another job's");
  expect_place_err("3,3", 2, 16, taken, "names NPU 3 twice");
  expect_place_err("20", 1, 16, taken, "NPU 20 is outside the 16-NPU network");
  expect_place_err("4-3", 2, 16, taken, "runs backwards");
  expect_place_err("1,3", 3, 16, taken, "names 2 NPUs but the job has 3 ranks");
  expect_place_err("1,3,4", 2, 16, taken, "more NPUs than the job's 2 ranks");
  expect_place_err("1,", 2, 16, taken, "is not a list of NPU ids");
  expect_place_err("strided:0", 2, 16, taken, "stride");
  expect_place_err("strided:8", 3, 16, taken, "no 3 free NPUs");
  expect_place_err("random:sed=1", 2, 16, taken, "random:seed=N");
  expect_place_err("packed", 2, 16, taken, "unknown placement 'packed'");
  expect_place_err("contiguous", 8, 16, taken, "only 7 of the network's 16 NPUs are free");
  expect_place_err("contiguous", 4, 16, taken, "no run of 4 free NPUs");
}

/* Placements a caller builds are checked too, naming the job. */
static void test_bad_jobs(void **state) {
  (void)state;
  const char *dir = tmp;
  write_p2p(dir, "p", 1000);
  su_net(su_p(0, dir, "net.yml"), "Ring", 4, 10, 100);
  su_put(su_p(1, dir, "sys.json"), SYS1);
  ld_t p;
  load_platform(&p, su_p(0, dir, "net.yml"), su_p(1, dir, "sys.json"));
  char pp[600];
  snprintf(pp, sizeof pp, "%s/p", dir);
  etsim_et_set_t *s = load_set(pp);
  uint32_t a[2] = {0, 1}, b[2] = {1, 2}, c[2] = {3, 4};
  etsim_sim_job_t jobs[2] = {{"first", s, NULL, a}, {"second", s, NULL, b}};
  etsim_sim_opts_t o = {.backend = "congestion"};
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  assert_int_equal(etsim_sim_run_jobs(jobs, 2, &p.topo, &p.sys, &o, &r, &err), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "job 1 (second): NPU 1 (its rank 0) is already job 0's"));
  jobs[1].npus = c;
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sim_run_jobs(jobs, 2, &p.topo, &p.sys, &o, &r, &err), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "job 1 (second): rank 1 is placed on NPU 4, outside"));
  /* groups name the job's ranks */
  etsim_comm_t g = {1, 3, (uint32_t[]){0, 1, 2}};
  etsim_comm_groups_t cg = {1, &g};
  etsim_sim_job_t j1 = {"grp", s, &cg, a};
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sim_run_jobs(&j1, 1, &p.topo, &p.sys, &o, &r, &err), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "group \"1\" names rank 2, but the job has 2 ranks"));
  etsim_et_set_free(s);
  etsim_sys_config_free(&p.sys);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_alone_equals_disjoint, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_shared_link_closed_form, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_whole_network_job_is_plain_run, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_rooted_local_root, tu_setup, tu_teardown),
      cmocka_unit_test(test_placements),
      cmocka_unit_test_setup_teardown(test_bad_jobs, tu_setup, tu_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
