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
  etsim_net_opts_t no = {0};
  assert_int_equal(etsim_topo_load_yaml(net, &topo, &err), 0);
  if (o->degrade &&
      etsim_sim_link_degrade_npus(o->degrade, "--link-degrade", &topo, &no.npu_links, &err))
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
                         .npu_speed = sp,
                         .net = &no};
  etsim_sim_result_t *r = NULL;
  if (etsim_sim_run(set, &topo, &cfg, &so, &r, &err)) fail_msg("%s", err.msg);
  if (sp) test_free(sp);
  etsim_sim_npu_links_free(&no.npu_links);
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

/* The symmetry tests' inputs in dir: 100 us of compute, then a 1 MiB ring
 * all-reduce, on Ring(4) x Ring(2). */
static void ring4x2_files(const char *dir) {
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
}

/* Speed is part of equivalence: on Ring(4) x Ring(2), NPUs 0-3 at half
 * speed keep dimension 0's shift (classes of 4) and lose dimension 1's;
 * one slow NPU leaves no symmetry at all. */
static void test_speed_breaks_symmetry(void **state) {
  (void)state;
  const char *dir = tmp;
  ring4x2_files(dir);
  wi_t o = {.speed = "{\"0-3\": 0.5}"};
  etsim_sim_result_t *r =
      run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o, 0);
  assert_int_equal(r->representative, 1);
  assert_int_equal(r->class_size, 4);
  etsim_sim_result_free(r);
  r = run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  /* the half-speed row computes 200 us: nobody finishes before */
  for (uint32_t i = 0; i < 8; i++) TU_GT(r->npu[i].finish_ps, 200000000);
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

/* One NPU's links degraded (--link-degrade "0:k"), a one-chunk ring
 * all-reduce on Ring(n).  etsim's ring (ASTRA-sim's) is not lock-step:
 * NPU i sends its step-s message to i+1 once it has received the step
 * s-1 message from i-1 (plus epsilon, and delta on reducing steps), so
 * its finish is a chain of 2(n-1) consecutive link times ending at i:
 *   finish(i) = (2n-1)eps + (n-1)delta + sum_{s=1}^{2n-2} C_{i-s}
 *             = (2n-1)eps + (n-1)delta + 2 sum_j C_j - C_i - C_{i+1},
 * C_j the time of one message on the link j -> j+1 (indices mod n).  NPU
 * k's links are those of cables (k-1, k) and (k, k+1): C_{k-1} = C_k = T'
 * = floor(L*lat + m/(beta*bw)), the others T = floor(L + m/beta).  With
 * D = T' - T, on top of the nominal 2(n-1)T + (n-1)delta + (2n-1)eps:
 * NPU k-1 finishes 2D later, NPUs k and k-2 3D, every other NPU 4D (the
 * iteration is 4D longer for n >= 4, 3D for n = 3).  Messages are small
 * enough (m / (beta*bw) below a step's time) that no link ever queues on
 * the congestion backend, whose single-hop messages then cost what the
 * analytical ones do: the same numbers on both.  At bw x0.25 the slow
 * link's serialisation (4 m/beta = 894 ns) outlasts a step (T = 723 ns)
 * on Ring(5) and Ring(6):
 * analytically the closed form still holds (links are not shared there),
 * on the congestion backend messages queue behind it and NPUs finish
 * later, never earlier. */
static void test_ring_npu_degraded_closed_form(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(2, dir, "sys.json"), SYS1);
  const char *backends[] = {"analytical", "congestion"};
  int ns[] = {3, 5, 6};
  for (int b = 0; b < 2; b++)
    for (int kn = 0; kn < 3; kn++) {
      int n = ns[kn];
      su_net(su_p(1, dir, "net.yml"), "Ring", n, 50, 500);
      uint64_t m = 12000, size = m * (uint64_t)n;
      su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                      .comm_type = ETSIM_COLL_ALL_REDUCE,
                      .size = (int64_t)size};
      su_trace(su_p(0, dir, "w.et"), &nd, 1);
      int64_t T = su_t(1, 500, 50, m), eps = 7;
      int64_t delta = 3 * (int64_t)((double)m / (100 * 1e9) * 1e9);
      int64_t nominal = 2 * (n - 1) * T + (n - 1) * delta + (2 * n - 1) * eps;
      struct {
        const char *spec;
        int k;
        double bw, lat;
      } cases[] = {{NULL, 0, 1, 1},
                   {"{\"0:2\": 0.5}", 2, 0.5, 1},
                   {"{\"dim0:npu0\": {\"bw\": 0.5, \"latency\": 3}}", 0, 0.5, 3},
                   {"{\"0:1\": {\"latency\": 2}}", 1, 1, 2},
                   {"{\"0:2-2\": 0.25}", 2, 0.25, 1}};
      for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int k = cases[c].k;
        if (cases[c].bw < 0.5 && n == 3) continue; /* Ring(3)'s longer steps do not queue */
        int64_t D = su_t(1, 500 * cases[c].lat, 50 * cases[c].bw, m) - T;
        if (c) TU_GT(D, 0);
        wi_t o = {.degrade = cases[c].spec, .backend = backends[b]};
        etsim_sim_result_t *r =
            run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
        int64_t last = 0;
        int queued = b == 1 && cases[c].bw < 0.5, later = 0;
        for (int i = 0; i < n; i++) {
          int64_t times = i == (k + n - 1) % n ? 2 : i == k || i == (k + n - 2) % n ? 3 : 4;
          int64_t want = nominal + times * D;
          last = want > last ? want : last;
          if (queued) {
            TU_GE(su_ns(r, (uint32_t)i), want);
            later += su_ns(r, (uint32_t)i) > want;
            continue;
          }
          if (su_ns(r, (uint32_t)i) != want)
            fail_msg("%s Ring(%d) %s: NPU %d got %lld ns, closed form %lld", backends[b], n,
                     cases[c].spec ? cases[c].spec : "nominal", i, (long long)su_ns(r, (uint32_t)i),
                     (long long)want);
        }
        if (queued) {
          TU_GT(later, 0);
        } else {
          assert_int_equal(su_max_ns(r), last);
          assert_int_equal(last, nominal + (n > 3 ? 4 : 3) * D);
        }
        etsim_sim_result_free(r);
      }
    }
}

/* Link factors are part of equivalence, as speeds are (E5): on Ring(4) x
 * Ring(2), NPUs 0-3's dimension-0 links at half bandwidth keep dimension
 * 0's shift (classes of 4) and lose dimension 1's; one degraded NPU
 * leaves no symmetry, and the reduction line says why.  Every NPU's
 * finish agrees with --exact either way. */
static void test_link_factors_break_symmetry(void **state) {
  (void)state;
  const char *dir = tmp;
  ring4x2_files(dir);
  wi_t o = {.degrade = "{\"0:0-3\": 0.5}"};
  etsim_sim_result_t *r =
      run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o, 0);
  assert_int_equal(r->representative, 1);
  assert_int_equal(r->class_size, 4);
  etsim_sim_result_free(r);
  r = run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  etsim_sim_result_t *r0 =
      run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &(wi_t){0});
  /* the slow row's all-reduce takes longer than the nominal one */
  for (uint32_t i = 0; i < 8; i++) TU_GT(r->npu[i].finish_ps, r0->npu[i].finish_ps);
  etsim_sim_result_free(r);
  etsim_sim_result_free(r0);
  wi_t o1 = {.degrade = "{\"dim1:npu6\": {\"latency\": 2}}"};
  r = run_exact(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o1, 0);
  assert_int_equal(r->representative, 0);
  if (!strstr(r->reduction_why, "NPU 6's at x1, x2 (--link-degrade)"))
    fail_msg("reduction: %s", r->reduction_why);
  etsim_sim_result_free(r);
  etsim_sim_result_free(
      run_both(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o1));
}

/* Point-to-point messages with NPU 5 of Ring(8) (NPU 3 of Switch(4) and
 * FullyConnected(4)) at bandwidth x0.5, latency x3; m = 1 MiB, L = 500,
 * s = m/beta.  A message between NPUs whose route avoids the degraded
 * NPU's links is unchanged.  One whose route uses them: analytically the
 * route's latencies add and its slowest link sets the rate (cut-through),
 * on the congestion backend every hop is stored and forwarded at its own
 * link's rate:
 *   Ring 4 -> 6 (via 5):  floor(2*3L + 2s)  vs  2 floor(3L + 2s);
 *   Ring 7 -> 2 (via 0, 1, nominal): floor(3L + s)  vs  3 floor(L + s);
 *   Switch 2 -> 3 (3's port down): floor(L + 3L + 2s) vs
 *                                  floor(L + s) + floor(3L + 2s);
 *   FullyConnected 2 -> 3: floor(3L + 2s) on both. */
static void test_p2p_npu_degraded(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(2, dir, "sys.json"), SYS1);
  const int64_t m = 1 << 20;
  const double L = 500, beta = 50 * 1073741824.0 / 1e9, s = (double)m / beta;
  /* pairs[kind]: src, dst of up to three messages; the others compute 1 us */
  struct {
    const char *kind;
    int n, slow, np;
    int pair[3][2];
    int64_t want_cu[3], want_ca[3];
  } nets[] = {
      {"Ring",
       8,
       5,
       3,
       {{0, 1}, {4, 6}, {7, 2}},
       {(int64_t)floor(L + s), (int64_t)floor(6 * L + 2 * s), (int64_t)floor(3 * L + s)},
       {(int64_t)floor(L + s), 2 * (int64_t)floor(3 * L + 2 * s), 3 * (int64_t)floor(L + s)}},
      {"Switch",
       4,
       3,
       2,
       {{0, 1}, {2, 3}},
       {(int64_t)floor(2 * L + s), (int64_t)floor(4 * L + 2 * s)},
       {2 * (int64_t)floor(L + s), (int64_t)floor(L + s) + (int64_t)floor(3 * L + 2 * s)}},
      {"FullyConnected",
       4,
       3,
       2,
       {{0, 1}, {2, 3}},
       {(int64_t)floor(L + s), (int64_t)floor(3 * L + 2 * s)},
       {(int64_t)floor(L + s), (int64_t)floor(3 * L + 2 * s)}},
  };
  for (size_t t = 0; t < sizeof nets / sizeof *nets; t++) {
    int n = nets[t].n;
    for (int r = 0; r < n; r++) {
      su_node_t nd = {.type = ETSIM_ET_COMP_NODE, .dur_us = 1};
      for (int j = 0; j < nets[t].np; j++) {
        int a = nets[t].pair[j][0], b = nets[t].pair[j][1];
        if (r == a || r == b)
          nd = (su_node_t){.type = r == a ? ETSIM_ET_COMM_SEND_NODE : ETSIM_ET_COMM_RECV_NODE,
                           .size = m,
                           .src = a,
                           .dst = b,
                           .tag = 3};
      }
      char name[32];
      snprintf(name, sizeof name, "p%zu.%d.et", t, r);
      su_trace(su_p(0, dir, name), &nd, 1);
    }
    su_net(su_p(1, dir, "net.yml"), nets[t].kind, n, 50, 500);
    char spec[64];
    snprintf(spec, sizeof spec, "{\"0:%d\": {\"bw\": 0.5, \"latency\": 3}}", nets[t].slow);
    for (int b = 0; b < 2; b++) {
      wi_t o0 = {.backend = b ? "congestion" : "analytical"}, o = o0;
      o.degrade = spec;
      char prefix[8];
      snprintf(prefix, sizeof prefix, "p%zu", t);
      etsim_sim_result_t *r0 =
          run_both(su_p(0, dir, prefix), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o0);
      etsim_sim_result_t *r1 =
          run_both(su_p(0, dir, prefix), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
      for (int j = 0; j < nets[t].np; j++) {
        int a = nets[t].pair[j][0], d = nets[t].pair[j][1];
        int64_t want = b ? nets[t].want_ca[j] : nets[t].want_cu[j];
        if (su_ns(r1, (uint32_t)d) != want || su_ns(r1, (uint32_t)a) != want)
          fail_msg("%s(%d) %s, %d -> %d: %lld / %lld ns, closed form %lld", nets[t].kind, n,
                   o.backend, a, d, (long long)su_ns(r1, (uint32_t)a),
                   (long long)su_ns(r1, (uint32_t)d), (long long)want);
        /* the first pair avoids the slow NPU: as without the what-if */
        if (j == 0) assert_int_equal(su_ns(r0, (uint32_t)d), want);
      }
      etsim_sim_result_free(r0);
      etsim_sim_result_free(r1);
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
        TU_LE(grew, 0);
      } else {
        TU_GE(grew, Cps - a);
        TU_LE(grew, Cps);
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
  TU_LT(rc, 0);
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
  TU_LT(rc, 0);
  if (!strstr(err.msg, want) || !strstr(err.msg, "--link-degrade"))
    fail_msg("'%s': message '%s' lacks '%s'", spec, err.msg, want);
}

static void test_specs(void **state) {
  (void)state;
  double sp[16];
  etsim_error_t err = {0};
  assert_int_equal(etsim_sim_speed_parse("{\"3\": 0.5, \"8-10\": 2}", "--npu-speed", 16, sp, &err),
                   0);
  for (int i = 0; i < 16; i++) TU_EQ(sp[i], (i == 3 ? 0.5 : i >= 8 && i <= 10 ? 2 : 1));
  /* a file */
  su_put(su_p(0, tmp, "speed.json"), "{\"15\": 0.25}");
  assert_int_equal(etsim_sim_speed_parse(su_p(0, tmp, "speed.json"), "--npu-speed", 16, sp, &err),
                   0);
  TU_EQ(sp[15], 0.25);
  TU_EQ(sp[14], 1);
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
  TU_GT(lo, 0.8); /* 4.5 sigma either way */
  TU_LT(hi, 1.25);
  TU_LT(lo, hi);
  TU_LT(fabs(sum / 16), 0.05);
  assert_int_equal(etsim_sim_speed_parse("lognormal:sigma=0,mu=0.5", "--npu-speed", 16, a, &err),
                   0);
  for (int i = 0; i < 16; i++) TU_EQ(a[i], exp(0.5));
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
  /* per NPU: both spellings, ranges, with a dimension key; others 1 */
  etsim_topo_t topo;
  etsim_topo_kind_t k[2] = {ETSIM_TOPO_RING, ETSIM_TOPO_SWITCH};
  uint32_t npus[2] = {4, 4};
  double bw[2] = {50, 25}, lat[2] = {500, 700};
  assert_int_equal(etsim_topo_init(&topo, 2, k, npus, bw, lat, "test", &err), 0);
  etsim_net_npu_links_t nl;
  assert_int_equal(etsim_sim_link_degrade_npus("{\"1\": 0.5, \"1:5\": {\"bw\": 0.5, \"latency\": "
                                               "3}, \"dim0:npu2-3\": 0.25}",
                                               "--link-degrade", &topo, &nl, &err),
                   0);
  TU_EQ(topo.bw_gbps[1], 12.5);
  TU_EQ(topo.bw_gbps[0], 50);
  for (uint32_t x = 0; x < 16; x++)
    for (int d = 0; d < 2; d++) {
      double wb = d == 1 && x == 5 ? 0.5 : d == 0 && (x == 2 || x == 3) ? 0.25 : 1;
      double wl = d == 1 && x == 5 ? 3 : 1;
      if (nl.bw[x * 2 + d] != wb || nl.lat[x * 2 + d] != wl)
        fail_msg("NPU %u dim %d: %g %g, want %g %g", x, d, nl.bw[x * 2 + d], nl.lat[x * 2 + d], wb,
                 wl);
    }
  etsim_sim_npu_links_free(&nl);
  assert_null(nl.bw);
  /* no NPU named: nothing allocated, the nominal path */
  assert_int_equal(etsim_sim_link_degrade_npus("{\"0\": 0.5}", "--link-degrade", &topo, &nl, &err),
                   0);
  assert_null(nl.bw);
  assert_null(nl.lat);
  static const char *const bad[][2] = {
      {"{\"1:16\": 0.5}", "key \"1:16\": NPU 16 is outside the 16-NPU network"},
      {"{\"2:1\": 0.5}", "key \"2:1\": the network has dimensions 0 to 1"},
      {"{\"0:5-2\": 0.5}", "key \"0:5-2\": the range runs backwards"},
      {"{\"0:1-3\": 0.5, \"dim0:npu3\": 1}", "NPU 3's links in dimension 0 are given twice"},
      {"{\"0:1\": {\"bw\": 0.5, \"lat\": 2}}", "unknown key \"lat\""},
      {"{\"0:1\": 1e4}", "key \"0:1\": factors must be in"},
      {"{\"dim0:1\": 0.5}", "key \"dim0:1\" is not a dimension number"},
      {"{\"0:npu1\": 0.5}", "key \"0:npu1\" is not a dimension number"},
      {"{\"link:0-1\": 0.5}", "need --backend flow or packet"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    etsim_topo_t t2 = topo;
    int rc = etsim_sim_link_degrade_npus(bad[i][0], "--link-degrade", &t2, &nl, &err);
    TU_LT(rc, 0);
    assert_null(nl.bw);
    if (!strstr(err.msg, bad[i][1]) || !strstr(err.msg, "--link-degrade"))
      fail_msg("'%s': message '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
  }
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
  TU_EQ(lw[0].a, 3);
  TU_EQ(lw[0].b, 17);
  TU_EQ(lw[0].bw, 0.5);
  TU_EQ(lw[0].lat, 1);
  assert_false(lw[0].down);
  TU_EQ(lw[1].a, 9);
  TU_EQ(lw[1].b, 2);
  TU_EQ(lw[1].bw, 0.25);
  TU_EQ(lw[1].lat, 3);
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
    TU_LT(rc, 0);
    assert_null(lw);
    if (!strstr(err.msg, bad[i][1]) || !strstr(err.msg, "--link-degrade"))
      fail_msg("'%s': message '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
  }
  /* per-NPU factors are the analytical and congestion backends' alone */
  etsim_topo_t topo;
  etsim_topo_kind_t kind = ETSIM_TOPO_SWITCH;
  uint32_t four = 4;
  double bw = 50, lat = 500, one[4] = {1, 1, 1, 1};
  assert_int_equal(etsim_topo_init(&topo, 1, &kind, &four, &bw, &lat, "test", &err), 0);
  etsim_net_opts_t no = {.npu_links = {one, one}};
  const char *be[] = {"flow", "packet"};
  for (int b = 0; b < 2; b++) {
    etsim_net_t *net = NULL;
    assert_int_equal(etsim_net_create(&net, be[b], &topo, NULL, 0, 1, &no, &err),
                     ETSIM_EUNSUPPORTED);
    assert_null(net);
    assert_non_null(strstr(err.msg, "need the analytical or congestion backend"));
  }
  etsim_net_link_whatif_t f;
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@0", "--fail", &f, &err), 0);
  TU_EQ(f.a, 4);
  TU_EQ(f.b, 10);
  assert_true(f.down);
  TU_EQ(f.bw, 1);
  TU_EQ(f.lat, 1);
  assert_string_equal(f.key, "link:4-10");
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@0us", "--fail", &f, &err), 0);
  assert_int_equal(f.t_ps, 0);
  /* from a time on: 1.5 us = 1,500,000 ps; 2 ms */
  assert_int_equal(etsim_sim_fail_link_parse("link:4-10@1.5us", "--fail", &f, &err), 0);
  TU_EQ(f.a, 4);
  TU_EQ(f.b, 10);
  assert_true(f.down);
  TU_EQ(f.t_ps, 1500000);
  assert_false(f.npu);
  assert_int_equal(etsim_sim_fail_link_parse("link:10-4@2ms", "--fail", &f, &err), 0);
  TU_EQ(f.a, 10);
  TU_EQ(f.b, 4);
  TU_EQ(f.t_ps, 2000000000);
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
      cmocka_unit_test_setup_teardown(test_ring_npu_degraded_closed_form, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_p2p_npu_degraded, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_link_factors_break_symmetry, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_dp_straggler, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_specs, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_npu_failure, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_link_specs, tu_setup, tu_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
