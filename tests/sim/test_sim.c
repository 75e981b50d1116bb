/* The simulator against ASTRA-sim's published numbers and closed forms.
 *
 * Reference points (issue 3; ASTRA-sim 2.0 at 518bd51, system
 * Ring_4chunks.json, Ring networks of 50 GB/s and 500 ns, one collective
 * per rank): all-reduce 1 MiB Ring(8) 64,440 cycles; all-reduce 64 MiB
 * Ring(8) 2,326,112; all-to-all 1 MiB Ring(16) 391,240; all-gather 1 MiB
 * Ring(16) 323,560; reduce-scatter 1 MiB Ring(4) 22,240.
 */
#include "sim_util.h"

#include "etsim/report.h"
#include "etsim/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RING4CHUNKS                                                         \
  "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,"               \
  " \"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4,"   \
  " \"all-reduce-implementation\": [\"ring\"],"                             \
  " \"all-gather-implementation\": [\"ring\"],"                             \
  " \"reduce-scatter-implementation\": [\"ring\"],"                         \
  " \"all-to-all-implementation\": [\"ring\"],"                             \
  " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600," \
  " \"boost-mode\": 0, \"roofline-enabled\": 0, \"peak-perf\": 900}"

/* Load a set from a prefix, or one file for all NPUs. */
static int run_x(const char *workload, const char *net, const char *sys, const char *backend,
                 int exact, etsim_sim_result_t **res, etsim_error_t *err) {
  etsim_topo_t topo;
  etsim_sys_config_t cfg;
  etsim_et_set_t *set;
  int rc = etsim_topo_load_yaml(net, &topo, err);
  if (rc) return rc;
  if ((rc = etsim_sys_config_load(sys, &cfg, err))) return rc;
  if ((rc = etsim_et_set_load(&set, workload, 0, err))) {
    etsim_sys_config_free(&cfg);
    return rc;
  }
  if (set->n_ranks == 1 && topo.total > 1 && (rc = etsim_et_set_broadcast(set, topo.total, err))) {
    etsim_et_set_free(set);
    etsim_sys_config_free(&cfg);
    return rc;
  }
  etsim_sim_opts_t o = {.backend = backend, .record_nodes = 1, .exact = exact};
  rc = etsim_sim_run(set, &topo, &cfg, &o, res, err);
  etsim_et_set_free(set);
  etsim_sys_config_free(&cfg);
  return rc;
}

/* Run twice, with and without the one-for-all shortcut; both must agree
 * on every NPU to the picosecond. */
static int run(const char *workload, const char *net, const char *sys, const char *backend,
               etsim_sim_result_t **res, etsim_error_t *err) {
  etsim_sim_result_t *a = NULL;
  int rc = run_x(workload, net, sys, backend, 1, &a, err);
  if (rc) return rc;
  rc = run_x(workload, net, sys, backend, 0, res, err);
  if (rc) {
    etsim_sim_result_free(a);
    return rc;
  }
  assert_int_equal(a->n_npus, (*res)->n_npus);
  for (uint32_t i = 0; i < a->n_npus; i++) {
    if (a->npu[i].finish_ps != (*res)->npu[i].finish_ps)
      fail_msg("NPU %u: exact %lld ps, representative %lld ps", i, (long long)a->npu[i].finish_ps,
               (long long)(*res)->npu[i].finish_ps);
    assert_int_equal(a->npu[i].exposed_ps, (*res)->npu[i].exposed_ps);
    assert_int_equal(a->npu[i].gpu_comp_ps, (*res)->npu[i].gpu_comp_ps);
  }
  assert_int_equal(a->net.bytes, (*res)->net.bytes);
  etsim_sim_result_free(a);
  return 0;
}

static int64_t ns_of(const etsim_sim_result_t *r, uint32_t npu) {
  return r->npu[npu].finish_ps / 1000;
}

static void check_point(const char *dir, int64_t ctype, int64_t size, int npus, int64_t want) {
  su_node_t n = {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ctype, .size = size};
  su_trace(su_p(0, dir, "w.et"), &n, 1);
  su_net(su_p(1, dir, "net.yml"), "Ring", npus, 50.0, 500.0);
  su_put(su_p(2, dir, "sys.json"), RING4CHUNKS);
  const char *backends[] = {"analytical", "congestion"};
  for (int b = 0; b < 2; b++) {
    etsim_sim_result_t *r = NULL;
    etsim_error_t err = {0};
    int rc = run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"),
                 backends[b], &r, &err);
    if (rc) fail_msg("%s", err.msg);
    for (int i = 0; i < npus; i++) {
      if (ns_of(r, (uint32_t)i) != want)
        fail_msg("%s coll %lld size %lld Ring(%d) NPU %d: got %lld cycles, ASTRA-sim %lld",
                 backends[b], (long long)ctype, (long long)size, npus, i,
                 (long long)ns_of(r, (uint32_t)i), (long long)want);
      assert_int_equal(r->npu[i].exposed_ps / 1000, want); /* no compute */
    }
    etsim_sim_result_free(r);
  }
}

static void test_astra_reference_points(void **state) {
  (void)state;
  const char *dir = tmp;
  check_point(dir, ETSIM_COLL_ALL_REDUCE, 1 << 20, 8, 64440);
  check_point(dir, ETSIM_COLL_ALL_REDUCE, 64 << 20, 8, 2326112);
  check_point(dir, ETSIM_COLL_ALL_TO_ALL, 1 << 20, 16, 391240);
  check_point(dir, ETSIM_COLL_ALL_GATHER, 1 << 20, 16, 323560);
  check_point(dir, ETSIM_COLL_REDUCE_SCATTER, 1 << 20, 4, 22240);
}

/* One chunk alone on a 1-D ring: the closed forms of the note. */
static int64_t t_msg(double hops, double lat, uint64_t bytes) {
  return (int64_t)floor(hops * lat + (double)bytes / (50.0 * 1073741824.0 / 1e9));
}

static void test_closed_forms(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(2, dir, "sys.json"),
         "{\"preferred-dataset-splits\": 1, \"endpoint-delay\": 7, \"local-mem-bw\": 100,"
         " \"collective-optimization\": \"baseline\", \"scheduling-policy\": \"FIFO\"}");
  int ps[] = {3, 5, 6};
  for (size_t k = 0; k < 3; k++) {
    int n = ps[k];
    uint64_t size = 3000000; /* not a multiple of n: integer division as ASTRA-sim */
    su_net(su_p(1, dir, "net.yml"), "Ring", n, 50.0, 500.0);
    struct {
      int64_t ct;
      uint64_t m;
      int64_t want_fn;
    } cases[3];
    uint64_t m = size / (uint64_t)n;
    int64_t T = t_msg(1, 500, m), eps = 7;
    int64_t delta = 3 * (int64_t)((double)m / (100 * 1e9) * 1e9);
    cases[0].ct = ETSIM_COLL_ALL_REDUCE;
    cases[0].want_fn = 2 * (n - 1) * T + (n - 1) * delta + (2 * n - 1) * eps;
    cases[1].ct = ETSIM_COLL_REDUCE_SCATTER;
    cases[1].want_fn = (n - 1) * T + (n - 1) * delta + n * eps;
    cases[2].ct = ETSIM_COLL_ALL_GATHER;
    cases[2].want_fn = (n - 1) * t_msg(1, 500, size) + n * eps;
    for (int c = 0; c < 3; c++) {
      su_node_t nd = {
          .type = ETSIM_ET_COMM_COLL_NODE, .comm_type = cases[c].ct, .size = (int64_t)size};
      su_trace(su_p(0, dir, "w.et"), &nd, 1);
      etsim_sim_result_t *r = NULL;
      etsim_error_t err = {0};
      if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical",
              &r, &err))
        fail_msg("%s", err.msg);
      if (ns_of(r, 0) != cases[c].want_fn)
        fail_msg("Ring(%d) coll %lld: got %lld, closed form %lld", n, (long long)cases[c].ct,
                 (long long)ns_of(r, 0), (long long)cases[c].want_fn);
      etsim_sim_result_free(r);
    }
  }
}

/* On a Switch the congestion backend stores and forwards at the switch:
 * 2*floor(L + m/b) per step against the analytical floor(2L + m/b). */
static void test_switch_store_and_forward(void **state) {
  (void)state;
  const char *dir = tmp;
  int n = 4;
  uint64_t size = 1 << 20;
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1, \"endpoint-delay\": 10}");
  su_net(su_p(1, dir, "net.yml"), "Switch", n, 50.0, 500.0);
  su_node_t nd = {
      .type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_GATHER, .size = (int64_t)size};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  int64_t cu = (n - 1) * t_msg(2, 500, size) + n * 10;
  int64_t ca = (n - 1) * 2 * t_msg(1, 500, size) + n * 10;
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical", &r,
          &err))
    fail_msg("%s", err.msg);
  assert_int_equal(ns_of(r, 3), cu);
  etsim_sim_result_free(r);
  if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "congestion", &r,
          &err))
    fail_msg("%s", err.msg);
  assert_int_equal(ns_of(r, 3), ca);
  etsim_sim_result_free(r);
}

/* Compute overlaps an independent collective; exposed = finish - compute. */
static void test_overlap_and_deps(void **state) {
  (void)state;
  const char *dir = tmp;
  su_net(su_p(1, dir, "net.yml"), "Ring", 4, 50.0, 500.0);
  su_put(su_p(2, dir, "sys.json"), RING4CHUNKS);
  su_node_t ns[3] = {
      {.type = ETSIM_ET_COMP_NODE, .dur_us = 20},
      {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 1 << 20},
      {.type = ETSIM_ET_COMP_NODE, .dur_us = 5, .ndeps = 2, .deps = {0, 1}},
  };
  su_trace(su_p(0, dir, "w.et"), ns, 3);
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical", &r,
          &err))
    fail_msg("%s", err.msg);
  /* The all-reduce alone takes 43,000 ns (4 chunks x 10,750); the 20 us
   * compute runs beside it; the last compute starts when both are done. */
  assert_int_equal(ns_of(r, 0), 43000 + 5000);
  assert_int_equal(r->npu[0].gpu_comp_ps / 1000, 25000);
  assert_int_equal(r->npu[0].exposed_ps / 1000, 48000 - 25000);
  assert_int_equal(r->npu[0].exposed_true_ps / 1000, 43000 - 20000);
  /* per dimension: the all-reduce's chunks ran on dimension 0 for 43 us,
   * 20 of them beside compute */
  assert_int_equal(r->npu[0].coll_busy_by_dim[0] / 1000, 43000);
  assert_int_equal(r->npu[0].coll_exposed_by_dim[0] / 1000, 43000 - 20000);
  etsim_sim_result_free(r);
}

/* A send meets its receive: one message time on the first differing
 * dimension; a send nobody receives is a deadlock naming the NPUs. */
static void test_send_recv_and_deadlock(void **state) {
  (void)state;
  const char *dir = tmp;
  su_net(su_p(1, dir, "net.yml"), "Ring", 4, 50.0, 500.0);
  su_put(su_p(2, dir, "sys.json"), RING4CHUNKS);
  su_node_t s0 = {.type = ETSIM_ET_COMM_SEND_NODE, .size = 1 << 20, .src = 0, .dst = 2, .tag = 7};
  su_node_t r2 = {.type = ETSIM_ET_COMM_RECV_NODE, .size = 1 << 20, .src = 0, .dst = 2, .tag = 7};
  su_node_t c0 = {.type = ETSIM_ET_COMP_NODE, .dur_us = 1};
  su_trace(su_p(0, dir, "pp.0.et"), &s0, 1);
  su_trace(su_p(0, dir, "pp.1.et"), &c0, 1);
  su_trace(su_p(0, dir, "pp.2.et"), &r2, 1);
  su_trace(su_p(0, dir, "pp.3.et"), &c0, 1);
  etsim_sim_result_t *r = NULL;
  etsim_error_t err = {0};
  if (run(su_p(0, dir, "pp"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical", &r,
          &err))
    fail_msg("%s", err.msg);
  int64_t want = t_msg(2, 500, 1 << 20); /* two hops round a 4-ring */
  assert_int_equal(ns_of(r, 0), want);
  assert_int_equal(ns_of(r, 2), want);
  etsim_sim_result_free(r);
  /* Now the receive waits for tag 8: nothing matches. */
  r2.tag = 8;
  su_trace(su_p(0, dir, "pp.2.et"), &r2, 1);
  memset(&err, 0, sizeof err);
  int rc = run(su_p(0, dir, "pp"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical",
               &r, &err);
  assert_int_equal(rc, ETSIM_EDEADLOCK);
  TU_CONTAINS(err.msg, "NPU 2 waits on node 0 (COMM_RECV_NODE");
  /* The send itself completes at delivery (ASTRA-sim); the message stays. */
  assert_non_null(
      strstr(err.msg, "NPU 0 sent 1048576 bytes to NPU 2 (tag 7) that were never received"));
  TU_CONTAINS(err.msg, "1 of 4 NPUs never finished");
}

static void test_bad_input(void **state) {
  (void)state;
  const char *dir = tmp;
  etsim_error_t err = {0};
  etsim_sim_result_t *r = NULL;
  su_put(su_p(2, dir, "sys.json"), RING4CHUNKS);
  /* a 4-rank set on an 8-NPU network */
  su_node_t c0 = {.type = ETSIM_ET_COMP_NODE, .dur_us = 1};
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "four.%d.et", i);
    su_trace(su_p(0, dir, name), &c0, 1);
  }
  su_net(su_p(1, dir, "net.yml"), "Ring", 8, 50.0, 500.0);
  assert_int_equal(run(su_p(0, dir, "four"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"),
                       "analytical", &r, &err),
                   ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "4 ranks but the network has 8 NPUs");
  /* only a one-rank set can stand for all NPUs */
  etsim_et_set_t *four;
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_et_set_load(&four, su_p(0, dir, "four"), 0, &err), 0);
  assert_int_equal(etsim_et_set_broadcast(four, 8, &err), ETSIM_EINVAL);
  assert_int_equal(four->n_ranks, 4);
  etsim_et_set_free(four);
  /* a collective of size 0 names the file and node */
  su_node_t z = {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 0};
  su_trace(su_p(0, dir, "z.et"), &z, 1);
  memset(&err, 0, sizeof err);
  assert_int_equal(run(su_p(0, dir, "z.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"),
                       "analytical", &r, &err),
                   ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "z.et: node 0: all-reduce of size 0");
  /* system JSON: unknown algorithm, missing splits */
  su_put(su_p(2, dir, "bad.json"),
         "{\"preferred-dataset-splits\": 4, \"all-reduce-implementation\": [\"rign\"]}");
  etsim_sys_config_t cfg;
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "bad.json"), &cfg, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "\"all-reduce-implementation\"[0]: unknown algorithm \"rign\"");
  su_put(su_p(2, dir, "bad.json"), "{\"scheduling-policy\": \"LIFO\"}");
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "bad.json"), &cfg, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "missing required key \"preferred-dataset-splits\"");
  /* network YAML: lists of different lengths, with the line */
  su_put(su_p(1, dir, "bad.yml"),
         "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50 ]\n"
         "latency: [ 500, 500 ]\n");
  etsim_topo_t topo;
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "bad.yml"), &topo, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "bad.yml:3: \"bandwidth\" has 1 entries but \"topology\" has 2");
  su_put(su_p(1, dir, "bad.yml"),
         "topology: [ Torus ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "bad.yml"), &topo, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "unknown topology \"Torus\"");
  /* a communicator that names a rank outside the network */
  su_put(su_p(3, dir, "cg.json"), "{\"1\": [0, 1, 9]}");
  etsim_comm_groups_t cg;
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_comm_groups_load(su_p(3, dir, "cg.json"), 8, &cg, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "rank 9 is outside the 8-NPU network");
}

/* Multi-dimensional networks, several chunks in flight, mixed algorithms:
 * no closed form, but the one-for-all shortcut must equal the full
 * message-by-message run on every NPU (run() checks), and the finish time
 * can never be below the contention-free bound of its first phase. */
static void test_multidim_symmetry(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(1, dir, "net.yml"),
         "topology: [ Ring, FullyConnected, Switch ]\nnpus_count: [ 4, 4, 2 ]\n"
         "bandwidth: [ 200, 100, 50 ]\nlatency: [ 50, 500, 2000 ]\n");
  const char *systems[] = {
      "{\"preferred-dataset-splits\": 4, \"active-chunks-per-dimension\": 2, \"local-mem-bw\": "
      "1600,"
      " \"collective-optimization\": \"localBWAware\","
      " \"all-reduce-implementation\": [\"ring\", \"direct\", \"ring\"],"
      " \"all-gather-implementation\": [\"ring\", \"ring\", \"direct\"],"
      " \"reduce-scatter-implementation\": [\"direct\", \"ring\", \"ring\"],"
      " \"all-to-all-implementation\": [\"direct\", \"direct\", \"direct\"]}",
      "{\"preferred-dataset-splits\": 3, \"active-chunks-per-dimension\": 1, \"local-mem-bw\": 50,"
      " \"collective-optimization\": \"baseline\", \"scheduling-policy\": \"FIFO\","
      " \"all-reduce-implementation\": [\"ring\", \"ring\", \"ring\"],"
      " \"all-gather-implementation\": [\"ring\", \"ring\", \"ring\"],"
      " \"reduce-scatter-implementation\": [\"ring\", \"ring\", \"ring\"],"
      " \"all-to-all-implementation\": [\"ring\", \"direct2\", \"ring\"]}"};
  su_node_t ns[6] = {
      {.type = ETSIM_ET_COMP_NODE, .dur_us = 30},
      {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 5 << 20},
      {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_GATHER, .size = 1 << 18},
      {.type = ETSIM_ET_COMP_NODE, .dur_us = 10, .ndeps = 1, .deps = {1}},
      {.type = ETSIM_ET_COMM_COLL_NODE,
       .comm_type = ETSIM_COLL_REDUCE_SCATTER,
       .size = 3 << 20,
       .ndeps = 1,
       .deps = {0}},
      {.type = ETSIM_ET_COMM_COLL_NODE,
       .comm_type = ETSIM_COLL_ALL_TO_ALL,
       .size = 1 << 20,
       .ndeps = 2,
       .deps = {3, 4}},
  };
  su_trace(su_p(0, dir, "w.et"), ns, 6);
  for (int k = 0; k < 2; k++) {
    su_put(su_p(2, dir, "sys.json"), systems[k]);
    etsim_sim_result_t *r = NULL;
    etsim_error_t err = {0};
    if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "analytical",
            &r, &err))
      fail_msg("%s", err.msg);
    TU_GT(r->npu[0].finish_ps, 40000 * 1000);
    assert_int_equal(r->npu[0].gpu_comp_ps, 40000 * 1000);
    etsim_sim_result_free(r);
  }
}

/* Same inputs, same cycles, node records in the same order. */
static void test_deterministic(void **state) {
  (void)state;
  const char *dir = tmp;
  su_net(su_p(1, dir, "net.yml"), "Ring", 8, 50.0, 500.0);
  su_put(su_p(2, dir, "sys.json"),
         "{\"preferred-dataset-splits\": 8, \"active-chunks-per-dimension\": 3,"
         " \"local-mem-bw\": 1600, \"all-reduce-implementation\": [\"direct\"]}");
  su_node_t ns[2] = {
      {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 3 << 20},
      {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 1 << 20}};
  su_trace(su_p(0, dir, "w.et"), ns, 2);
  etsim_sim_result_t *a = NULL, *b = NULL;
  etsim_error_t err = {0};
  if (run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "congestion", &a,
          &err) ||
      run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), "congestion", &b,
          &err))
    fail_msg("%s", err.msg);
  TU_GT(a->total_ps, 0);
  assert_int_equal(a->n_recs, b->n_recs);
  for (size_t k = 0; k < a->n_recs; k++) {
    assert_int_equal(a->recs[k].npu, b->recs[k].npu);
    assert_int_equal(a->recs[k].end_ps, b->recs[k].end_ps);
  }
  assert_int_equal(a->events, b->events);
  etsim_sim_result_free(a);
  etsim_sim_result_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_astra_reference_points, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_closed_forms, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_switch_store_and_forward, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_overlap_and_deps, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_send_recv_and_deadlock, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_bad_input, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_multidim_symmetry, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_deterministic, tu_setup, tu_teardown),
  };
  return TU_RUN(tests, NULL, NULL);
}
