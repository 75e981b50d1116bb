/* What-if scenarios against closed forms: per-NPU compute speed,
 * --compute-scale, --comm-scale and per-dimension link degradation, with
 * and without the classes of equivalent NPUs (docs/sim.md, "What-if"). */
#include "sim_util.h"

typedef struct wi {
  const char *speed;   /* --npu-speed spec, or NULL */
  const char *degrade; /* --link-degrade spec, or NULL */
  double compute_scale, comm_scale;
  const char *backend;
} wi_t;

static etsim_sim_result_t *run_exact(const char *w, const char *net, const char *sys, const wi_t *o,
                                     int exact) {
  etsim_topo_t topo;
  etsim_sys_config_t cfg;
  etsim_et_set_t *set;
  etsim_error_t err = {0};
  assert_int_equal(etsim_topo_load_yaml(net, &topo, &err), 0);
  if (o->degrade && etsim_sim_link_degrade(o->degrade, "--link-degrade", &topo, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(etsim_sys_config_load(sys, &cfg, &err), 0);
  assert_int_equal(etsim_et_set_load(&set, w, 0, &err), 0);
  if (set->n_ranks == 1) assert_int_equal(etsim_et_set_broadcast(set, topo.total, &err), 0);
  double *sp = NULL;
  if (o->speed) {
    sp = test_malloc(topo.total * sizeof *sp);
    if (etsim_sim_speed_parse(o->speed, "--npu-speed", topo.total, sp, &err))
      fail_msg("%s", err.msg);
  }
  etsim_sim_opts_t so = {.backend = o->backend ? o->backend : "analytical",
                         .exact = exact,
                         .compute_scale = o->compute_scale,
                         .comm_scale = o->comm_scale,
                         .npu_speed = sp};
  etsim_sim_result_t *r = NULL;
  if (etsim_sim_run(set, &topo, &cfg, &so, &r, &err)) fail_msg("%s", err.msg);
  if (sp) test_free(sp);
  etsim_et_set_free(set);
  etsim_sys_config_free(&cfg);
  return r;
}

/* Both ways (every NPU; classes where they apply): every NPU's finish, the
 * straggler's price and the last NPU agree.  Returns the exact result. */
static etsim_sim_result_t *run_both(const char *w, const char *net, const char *sys,
                                    const wi_t *o) {
  etsim_sim_result_t *a = run_exact(w, net, sys, o, 1), *b = run_exact(w, net, sys, o, 0);
  assert_int_equal(a->n_npus, b->n_npus);
  for (uint32_t i = 0; i < a->n_npus; i++) {
    if (a->npu[i].finish_ps != b->npu[i].finish_ps)
      fail_msg("NPU %u: --exact %lld ps, default %lld ps", i, (long long)a->npu[i].finish_ps,
               (long long)b->npu[i].finish_ps);
    assert_int_equal(a->npu[i].exposed_ps, b->npu[i].exposed_ps);
    assert_int_equal(a->npu[i].gpu_comp_ps, b->npu[i].gpu_comp_ps);
  }
  assert_int_equal(a->straggler, b->straggler);
  assert_int_equal(a->straggler_npu, b->straggler_npu);
  assert_int_equal(a->straggler_cost_ps, b->straggler_cost_ps);
  assert_int_equal(a->last_npu, b->last_npu);
  etsim_sim_result_free(b);
  return a;
}

static const char *SYS1 =
    "{\"preferred-dataset-splits\": 1, \"endpoint-delay\": 7, "
    "\"local-mem-bw\": 100, \"collective-optimization\": \"baseline\", "
    "\"scheduling-policy\": \"FIFO\"}";

/* Three chained compute nodes: 100 + 37 + 250 us. */
static void compute_chain(const char *path) {
  su_node_t n[3] = {{.type = ETSIM_ET_COMP_NODE, .dur_us = 100},
                    {.type = ETSIM_ET_COMP_NODE, .dur_us = 37, .ndeps = 1, .deps = {0}},
                    {.type = ETSIM_ET_COMP_NODE, .dur_us = 250, .ndeps = 1, .deps = {1}}};
  su_trace(path, n, 3);
}

static void test_half_speed_twice_as_long(void **state) {
  (void)state;
  const char *dir = tmp;
  compute_chain(su_p(0, dir, "w.et"));
  su_net(su_p(1, dir, "net.yml"), "Ring", 8, 50, 500);
  su_put(su_p(2, dir, "sys.json"), SYS1);
  const int64_t T = 387000000; /* ps */
  wi_t o = {.speed = "{\"3\": 0.5}"};
  etsim_sim_result_t *r =
      run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  for (uint32_t i = 0; i < 8; i++) {
    assert_int_equal(r->npu[i].finish_ps, i == 3 ? 2 * T : T);
    assert_int_equal(r->npu[i].gpu_comp_ps, i == 3 ? 2 * T : T);
  }
  assert_int_equal(r->total_ps, 2 * T);
  assert_true(r->straggler);
  assert_int_equal(r->straggler_npu, 3);
  assert_int_equal(r->straggler_nominal_ps, T);
  assert_int_equal(r->straggler_cost_ps, T);
  assert_int_equal(r->last_npu, 3);
  etsim_sim_result_free(r);
  /* --compute-scale 2 with no straggler: everyone twice as long, nothing
   * to price; with speed 1.25 for all, 4/5 of the time (to the ps) */
  wi_t o2 = {.compute_scale = 2};
  r = run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o2);
  for (uint32_t i = 0; i < 8; i++) assert_int_equal(r->npu[i].finish_ps, 2 * T);
  assert_false(r->straggler);
  assert_int_equal(r->representative, 0); /* --exact ran last: the result is exact's */
  etsim_sim_result_free(r);
  wi_t o3 = {.speed = "{\"0-7\": 1.25}"};
  r = run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o3);
  for (uint32_t i = 0; i < 8; i++) assert_int_equal(r->npu[i].finish_ps, T * 4 / 5);
  /* nobody below nominal: nothing to price */
  assert_false(r->straggler);
  etsim_sim_result_free(r);
}

/* Speed is part of equivalence: on Ring(4) x Ring(2), NPUs 0-3 at half
 * speed keep dimension 0's shift (classes of 4) and lose dimension 1's;
 * one slow NPU leaves no symmetry at all. */
static void test_speed_breaks_symmetry(void **state) {
  (void)state;
  const char *dir = tmp;
  su_node_t n[2] = {{.type = ETSIM_ET_COMP_NODE, .dur_us = 100},
                    {.type = ETSIM_ET_COMM_COLL_NODE,
                     .comm_type = ETSIM_COLL_ALL_REDUCE,
                     .size = 1 << 20,
                     .ndeps = 1,
                     .deps = {0}}};
  su_trace(su_p(0, dir, "w.et"), n, 2);
  su_put(su_p(1, dir, "net.yml"),
         "topology: [ Ring, Ring ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 25 ]\n"
         "latency: [ 500, 700 ]\n");
  su_put(su_p(2, dir, "sys.json"),
         "{\"preferred-dataset-splits\": 2, \"endpoint-delay\": 10, "
         "\"all-reduce-implementation\": [\"ring\", \"ring\"]}");
  wi_t o = {.speed = "{\"0-3\": 0.5}"};
  etsim_sim_result_t *r =
      run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o, 0);
  assert_int_equal(r->representative, 1);
  assert_int_equal(r->class_size, 4);
  etsim_sim_result_free(r);
  r = run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  /* the half-speed row computes 200 us: nobody finishes before */
  for (uint32_t i = 0; i < 8; i++) assert_true(r->npu[i].finish_ps > 200000000);
  assert_int_equal(r->straggler_npu, 0);
  etsim_sim_result_free(r);
  wi_t o1 = {.speed = "{\"5\": 0.9}"};
  r = run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o1, 0);
  assert_int_equal(r->representative, 0);
  assert_non_null(strstr(r->reduction_why, "--npu-speed"));
  etsim_sim_result_free(r);
  etsim_sim_result_free(
      run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o1));
  /* without a spec: the usual classes of 8 */
  wi_t o0 = {0};
  r = run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o0, 0);
  assert_int_equal(r->class_size, 8);
  etsim_sim_result_free(r);
}

/* A ring all-reduce, one chunk, on Ring(n): 2(n-1)T + (n-1)delta +
 * (2n-1)eps with T = floor(L + m / beta) (test_sim.c's closed form), and
 * with the dimension's bandwidth halved beta/2 (latency doubled: 2L);
 * --comm-scale 2 is the closed form at twice the size. */
static void test_ring_degraded_closed_form(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(2, dir, "sys.json"), SYS1);
  int ns[] = {3, 5};
  for (int k = 0; k < 2; k++) {
    int n = ns[k];
    su_net(su_p(1, dir, "net.yml"), "Ring", n, 50, 500);
    struct {
      const char *spec;
      double scale, bw, lat, size_f;
    } cases[] = {{NULL, 0, 50, 500, 1},
                 {"{\"0\": 0.5}", 0, 25, 500, 1},
                 {"{\"0\": {\"bw\": 0.5, \"latency\": 2}}", 0, 25, 1000, 1},
                 {NULL, 2, 50, 500, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      uint64_t size = (uint64_t)(3000000 * cases[c].size_f);
      su_node_t nd = {
          .type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 3000000};
      su_trace(su_p(0, dir, "w.et"), &nd, 1);
      uint64_t m = size / (uint64_t)n;
      int64_t T = su_t(1, cases[c].lat, cases[c].bw, m), eps = 7;
      int64_t delta = 3 * (int64_t)((double)m / (100 * 1e9) * 1e9);
      int64_t want = 2 * (n - 1) * T + (n - 1) * delta + (2 * n - 1) * eps;
      wi_t o = {.degrade = cases[c].spec, .comm_scale = cases[c].scale};
      etsim_sim_result_t *r =
          run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
      if (su_ns(r, 0) != want)
        fail_msg("Ring(%d) case %zu: got %lld ns, closed form %lld", n, c, (long long)su_ns(r, 0),
                 (long long)want);
      etsim_sim_result_free(r);
    }
  }
}

/* A data-parallel step: compute C, then an all-reduce.  With NPU 2 at
 * half speed the others wait at the all-reduce: the iteration grows by
 * exactly C (the straggler's extra compute), which is its price; the NPU
 * that finishes last (not the straggler) has its exposed communication
 * grown by exactly C, and every other one by C less at most the
 * all-reduce's nominal span A (ring steps that need not wait for NPU 2 go
 * ahead while it computes), so by C - A to C. */
static void test_dp_straggler(void **state) {
  (void)state;
  const char *dir = tmp;
  const int64_t C = 1000; /* us */
  su_node_t n[2] = {{.type = ETSIM_ET_COMP_NODE, .dur_us = (uint64_t)C},
                    {.type = ETSIM_ET_COMM_COLL_NODE,
                     .comm_type = ETSIM_COLL_ALL_REDUCE,
                     .size = 1 << 20,
                     .ndeps = 1,
                     .deps = {0}}};
  su_trace(su_p(0, dir, "w.et"), n, 2);
  su_net(su_p(1, dir, "net.yml"), "Ring", 4, 50, 500);
  su_put(su_p(2, dir, "sys.json"), SYS1);
  const char *backends[] = {"analytical", "congestion"};
  for (int b = 0; b < 2; b++) {
    wi_t o0 = {.backend = backends[b]}, o = {.speed = "{\"2\": 0.5}", .backend = backends[b]};
    etsim_sim_result_t *r0 =
        run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o0);
    etsim_sim_result_t *r =
        run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
    int64_t Cps = C * 1000000;
    assert_int_equal(r->total_ps, r0->total_ps + Cps);
    assert_int_not_equal(r->last_npu, 2);
    assert_int_equal(r->npu[r->last_npu].exposed_ps, r0->npu[r->last_npu].exposed_ps + Cps);
    for (uint32_t i = 0; i < 4; i++) {
      int64_t a = r0->npu[i].exposed_ps, grew = r->npu[i].exposed_ps - a;
      assert_int_equal(r0->npu[i].finish_ps, C * 1000000 + a); /* compute, then the AR */
      if (i == 2) {
        assert_int_equal(r->npu[i].gpu_comp_ps, 2 * Cps);
        assert_true(grew <= 0);
      } else {
        assert_true(grew >= Cps - a && grew <= Cps);
      }
    }
    assert_int_equal(r->straggler_npu, 2);
    assert_int_equal(r->straggler_nominal_ps, r0->total_ps);
    assert_int_equal(r->straggler_cost_ps, Cps);
    etsim_sim_result_free(r0);
    etsim_sim_result_free(r);
  }
}

static void expect_bad(const char *spec, const char *want) {
  double sp[16];
  etsim_error_t err = {0};
  int rc = etsim_sim_speed_parse(spec, "--npu-speed", 16, sp, &err);
  assert_true(rc < 0);
  if (!strstr(err.msg, want) || !strstr(err.msg, "--npu-speed"))
    fail_msg("'%s': message '%s' lacks '%s'", spec, err.msg, want);
}

static void expect_bad_degrade(const char *spec, const char *want) {
  etsim_topo_t topo;
  etsim_error_t err = {0};
  etsim_topo_kind_t k[2] = {ETSIM_TOPO_RING, ETSIM_TOPO_SWITCH};
  uint32_t npus[2] = {4, 4};
  double bw[2] = {50, 25}, lat[2] = {500, 700};
  assert_int_equal(etsim_topo_init(&topo, 2, k, npus, bw, lat, "test", &err), 0);
  int rc = etsim_sim_link_degrade(spec, "--link-degrade", &topo, &err);
  assert_true(rc < 0);
  if (!strstr(err.msg, want) || !strstr(err.msg, "--link-degrade"))
    fail_msg("'%s': message '%s' lacks '%s'", spec, err.msg, want);
}

static void test_specs(void **state) {
  (void)state;
  double sp[16];
  etsim_error_t err = {0};
  assert_int_equal(etsim_sim_speed_parse("{\"3\": 0.5, \"8-10\": 2}", "--npu-speed", 16, sp, &err),
                   0);
  for (int i = 0; i < 16; i++) assert_true(sp[i] == (i == 3 ? 0.5 : i >= 8 && i <= 10 ? 2 : 1));
  /* a file */
  su_put(su_p(0, tmp, "speed.json"), "{\"15\": 0.25}");
  assert_int_equal(etsim_sim_speed_parse(su_p(0, tmp, "speed.json"), "--npu-speed", 16, sp, &err),
                   0);
  assert_true(sp[15] == 0.25 && sp[14] == 1);
  /* lognormal: deterministic for a seed, another seed another draw, and
   * sigma 0 is everyone at exp(mu) */
  double a[16], b[16], c[16];
  assert_int_equal(etsim_sim_speed_parse("lognormal:sigma=0.05,seed=1", "--npu-speed", 16, a, &err),
                   0);
  assert_int_equal(etsim_sim_speed_parse("lognormal:seed=1,sigma=0.05", "--npu-speed", 16, b, &err),
                   0);
  assert_int_equal(etsim_sim_speed_parse("lognormal:sigma=0.05,seed=2", "--npu-speed", 16, c, &err),
                   0);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  double lo = 1e9, hi = 0, sum = 0;
  for (int i = 0; i < 16; i++) {
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
    sum += log(a[i]);
  }
  assert_true(lo > 0.8 && hi < 1.25 && lo < hi); /* 4.5 sigma either way */
  assert_true(fabs(sum / 16) < 0.05);
  assert_int_equal(etsim_sim_speed_parse("lognormal:sigma=0,mu=0.5", "--npu-speed", 16, a, &err),
                   0);
  for (int i = 0; i < 16; i++) assert_true(a[i] == exp(0.5));
  /* bad specs name the option and the key */
  expect_bad("{\"x\": 0.5}", "key \"x\"");
  expect_bad("{\"3-1\": 0.5}", "key \"3-1\"");
  expect_bad("{\"16\": 0.5}", "key \"16\"");
  expect_bad("{\"3\": 0}", "key \"3\"");
  expect_bad("{\"3\": \"fast\"}", "key \"3\"");
  expect_bad("{\"2-4\": 0.5, \"4\": 0.7}", "NPU 4 is given a speed twice");
  expect_bad("{\"3\": 0.5", "inline JSON");
  expect_bad("[0.5]", "[0.5]"); /* not '{': read as a file that is not there */
  expect_bad("lognormal:sigma=0.05,sede=1", "unknown key \"sede\"");
  expect_bad("lognormal:seed=1", "needs sigma");
  expect_bad("lognormal:sigma=-1", "key \"sigma\"");
  expect_bad("normal:sigma=1", "unknown distribution \"normal\"");
  expect_bad_degrade("{\"2\": 0.5}", "key \"2\"");
  expect_bad_degrade("{\"1:5\": 0.5}", "key \"1:5\"");
  expect_bad_degrade("{\"1\": {\"bandwidth\": 0.5}}", "unknown key \"bandwidth\"");
  expect_bad_degrade("{\"1\": 0}", "key \"1\"");
  expect_bad_degrade("{\"1\": [0.5]}", "key \"1\"");
  expect_bad_degrade("{\"sw\": 0.5}", "key \"sw\"");
}

/* Cable what-ifs for the flow and packet backends: factors and the cable
 * as given (either order names it), a failure down from 0; bad keys and a
 * later failure named. */
static void test_link_specs(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_net_link_whatif_t *lw = NULL;
  size_t n = 0;
  assert_int_equal(etsim_sim_link_whatif_parse(
                       "{\"link:3-17\": 0.5, \"link:9-2\": {\"bw\": 0.25, \"latency\": 3}}",
                       "--link-degrade", &lw, &n, &err),
                   0);
  assert_int_equal(n, 2);
  assert_true(lw[0].a == 3 && lw[0].b == 17 && lw[0].bw == 0.5 && lw[0].lat == 1 && !lw[0].down);
  assert_true(lw[1].a == 9 && lw[1].b == 2 && lw[1].bw == 0.25 && lw[1].lat == 3);
  assert_string_equal(lw[1].key, "link:9-2");
  assert_string_equal(lw[1].opt, "--link-degrade");
  etsim_free(lw);
  static const char *const bad[][2] = {
      {"{\"1\": 0.5}", "key \"1\" is not a cable"},
      {"{\"link:3\": 0.5}", "key \"link:3\" is not a cable"},
      {"{\"link:3-3\": 0.5}", "two different nodes"},
      {"{\"link:3-4x\": 0.5}", "key \"link:3-4x\""},
      {"{\"link:3-4\": 0.5, \"link:4-3\": 1}", "the cable is given twice"},
      {"{\"link:3-4\": 2000}", "factors must be in"},
      {"{\"link:3-4\": {\"bw\": \"half\"}}", "expected a number"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = etsim_sim_link_whatif_parse(bad[i][0], "--link-degrade", &lw, &n, &err);
    assert_true(rc < 0);
    assert_null(lw);
    if (!strstr(err.msg, bad[i][1]) || !strstr(err.msg, "--link-degrade"))
      fail_msg("'%s': message '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
  }
  etsim_net_link_whatif_t f;
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@0", "--fail", &f, &err), 0);
  assert_true(f.a == 4 && f.b == 10 && f.down && f.bw == 1 && f.lat == 1);
  assert_string_equal(f.key, "link:4-10");
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@0us", "--fail", &f, &err), 0);
  assert_int_equal(f.t_ps, 0);
  /* from a time on: 1.5 us = 1,500,000 ps; 2 ms */
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@1.5us", "--fail", &f, &err), 0);
  assert_true(f.a == 4 && f.b == 10 && f.down && f.t_ps == 1500000 && !f.npu);
  assert_int_equal(etsim_sim_fail_link_parse("link:10-4@2ms", "--fail", &f, &err), 0);
  assert_true(f.a == 10 && f.b == 4 && f.t_ps == 2000000000);
  assert_string_equal(f.key, "link:10-4");
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10", "--fail", &f, &err), ETSIM_EINVAL);
  assert_int_equal(etsim_sim_fail_link_parse("link:4-4@0", "--fail", &f, &err), ETSIM_EINVAL);
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@-1", "--fail", &f, &err), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "--fail: 'link:4-10@-1': the time must be a number >= 0"));
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@0xs", "--fail", &f, &err), ETSIM_EINVAL);
}

/* An NPU failing at t: with communicators {0,1} and {2,3}, NPU 2 failing
 * while it computes blocks NPU 3's all-reduce and nothing else: NPUs 0 and
 * 1 finish exactly as without the failure; the report names the blocked
 * collective, its communicator and NPU 3.  Failing after the end changes
 * nothing; both backends; never a hang (the queue drains). */
static void test_npu_failure(void **state) {
  (void)state;
  const char *dir = tmp;
  su_node_t n[2] = {{.type = ETSIM_ET_COMP_NODE, .dur_us = 1000},
                    {.type = ETSIM_ET_COMM_COLL_NODE,
                     .comm_type = ETSIM_COLL_ALL_REDUCE,
                     .size = 1 << 20,
                     .ndeps = 1,
                     .deps = {0}}};
  n[1].pg = "1";
  su_trace(su_p(0, dir, "w.0.et"), n, 2);
  su_trace(su_p(0, dir, "w.1.et"), n, 2);
  n[1].pg = "2";
  su_trace(su_p(0, dir, "w.2.et"), n, 2);
  su_trace(su_p(0, dir, "w.3.et"), n, 2);
  su_net(su_p(1, dir, "net.yml"), "Switch", 4, 50, 500);
  su_put(su_p(2, dir, "sys.json"), SYS1);
  su_put(su_p(3, dir, "g.json"), "{\"1\": [0, 1], \"2\": [2, 3]}");
  const char *backends[] = {"analytical", "congestion"};
  for (int b = 0; b < 2; b++) {
    etsim_topo_t topo;
    etsim_sys_config_t cfg;
    etsim_et_set_t *set;
    etsim_comm_groups_t cg = {0};
    etsim_error_t err = {0};
    assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "net.yml"), &topo, &err), 0);
    assert_int_equal(etsim_sys_config_load(su_p(2, dir, "sys.json"), &cfg, &err), 0);
    assert_int_equal(etsim_comm_groups_load(su_p(3, dir, "g.json"), 4, &cg, &err), 0);
    assert_int_equal(etsim_et_set_load(&set, su_p(0, dir, "w"), 0, &err), 0);
    etsim_sim_opts_t o = {.backend = backends[b], .groups = &cg};
    etsim_sim_result_t *r0 = NULL, *r = NULL, *r2 = NULL;
    if (etsim_sim_run(set, &topo, &cfg, &o, &r0, &err)) fail_msg("%s", err.msg);
    assert_false(r0->failed);
    o.fail_set = 1;
    o.fail_npu = 2;
    o.fail_ps = 500000000;
    if (etsim_sim_run(set, &topo, &cfg, &o, &r, &err)) fail_msg("%s", err.msg);
    assert_true(r->failed);
    assert_int_equal(r->n_blocked, 2);
    assert_int_equal(r->npu[0].finish_ps, r0->npu[0].finish_ps);
    assert_int_equal(r->npu[1].finish_ps, r0->npu[1].finish_ps);
    assert_int_equal(r->npu[2].finish_ps, 0);
    assert_int_equal(r->npu[3].finish_ps, 0);
    if (!strstr(r->failure, "NPU 2 failed at t=500000 ns") || !strstr(r->failure, "(NPUs 2-3)") ||
        !strstr(r->failure, "ALL_REDUCE node 1 \"n\" (communicator 2) blocked on NPUs 3"))
      fail_msg("report: %s", r->failure);
    /* after the end: the nominal run, noted */
    o.fail_ps = r0->total_ps + 1;
    if (etsim_sim_run(set, &topo, &cfg, &o, &r2, &err)) fail_msg("%s", err.msg);
    assert_false(r2->failed);
    assert_true(r2->fail_after_end);
    for (uint32_t i = 0; i < 4; i++) assert_int_equal(r2->npu[i].finish_ps, r0->npu[i].finish_ps);
    etsim_sim_result_free(r0);
    etsim_sim_result_free(r);
    etsim_sim_result_free(r2);
    etsim_et_set_free(set);
    etsim_comm_groups_free(&cg);
    etsim_sys_config_free(&cfg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_half_speed_twice_as_long, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_speed_breaks_symmetry, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_ring_degraded_closed_form, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_dp_straggler, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_specs, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_npu_failure, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_link_specs, tu_setup, tu_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
