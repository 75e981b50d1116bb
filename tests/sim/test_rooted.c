/* Rooted collectives and in-network reduction against their closed forms
 * (src/coll/rooted.c and src/coll/innet.c state them), and the checks that
 * refuse algorithms before a run instead of deadlocking in it.
 *
 * Message time T(b) = floor(H L + b / beta), beta = GB/s x 2^30 / 10^9
 * bytes/ns; e the endpoint delay; d(b) = 3 floor(b / local-mem-bw) the
 * reduction's three passes over local memory.
 */
#include "sim_util.h"

#define E 7                /* endpoint delay, ns */
#define MEMBW 100.0        /* local-mem-bw, 10^9 B/s */
#define BW 50.0            /* GB/s */
#define LAT 500.0          /* ns */
#define M ((uint64_t)3000) /* odd sizes: truncations show */

static int64_t delta(uint64_t b) { return 3 * (int64_t)((double)b / (MEMBW * 1e9) * 1e9); }
static int64_t T(uint64_t b) { return su_t(1, LAT, BW, b); }

static void sys_rooted(const char *path, const char *extra) {
  char buf[512];
  snprintf(buf, sizeof buf,
           "{\"preferred-dataset-splits\": 1, \"endpoint-delay\": %d, \"local-mem-bw\": %g,"
           " \"rooted-collectives\": \"network\"%s%s}",
           E, MEMBW, extra ? ", " : "", extra ? extra : "");
  su_put(path, buf);
}

/* One rooted collective on every NPU, rooted at `root`. */
static etsim_sim_result_t *one(const char *dir, const char *kind, int n, int64_t ct, uint64_t size,
                               int root, const char *extra) {
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                  .comm_type = ct,
                  .size = (int64_t)size,
                  .root = root,
                  .root_set = 1};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), kind, n, BW, LAT);
  sys_rooted(su_p(2, dir, "sys.json"), extra);
  su_run_t o = {0};
  return su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
}

/* relative position of NPU i from the root on a ring of n */
static uint32_t vr_of(uint32_t i, uint32_t root, uint32_t n) { return (i + n - root) % n; }

static void test_chain(void **state) {
  (void)state;
  const char *dir = tmp;
  uint32_t n = 5, root = 2;
  const char *list =
      "\"broadcast-implementation\": [\"ring\"], \"reduce-implementation\": "
      "[\"ring\"], \"gather-implementation\": [\"ring\"], "
      "\"scatter-implementation\": [\"ring\"]";
  /* broadcast: position v gets the data at v (T + e); it ends when its
   * forward is delivered, the last one e after receiving */
  etsim_sim_result_t *r = one(dir, "Ring", (int)n, ETSIM_COLL_BROADCAST, M, (int)root, list);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = vr_of(i, root, n);
    int64_t want = v == n - 1 ? (n - 1) * (T(M) + E) + E : (v + 1) * (T(M) + E);
    if (su_ns(r, i) != want)
      fail_msg("chain broadcast NPU %u (v=%u): %lld, want %lld", i, v, (long long)su_ns(r, i),
               (long long)want);
  }
  etsim_sim_result_free(r);
  /* reduce: it starts at the far end; the root reduces n-1 times */
  r = one(dir, "Ring", (int)n, ETSIM_COLL_REDUCE, M, (int)root, list);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = vr_of(i, root, n), j = n - 1 - v;
    int64_t want =
        v == 0 ? (n - 1) * (T(M) + E + delta(M)) + E : (j + 1) * (T(M) + E) + j * delta(M);
    if (su_ns(r, i) != want)
      fail_msg("chain reduce NPU %u (v=%u): %lld, want %lld", i, v, (long long)su_ns(r, i),
               (long long)want);
  }
  etsim_sim_result_free(r);
  /* gather and scatter: the message grows (shrinks) by one share a hop */
  int64_t sum = 0;
  for (uint32_t j = 1; j < n; j++) sum += T(j * M);
  r = one(dir, "Ring", (int)n, ETSIM_COLL_GATHER, M, (int)root, list);
  assert_int_equal(su_ns(r, root), sum + n * E);
  assert_int_equal(su_max_ns(r), sum + n * E);
  etsim_sim_result_free(r);
  r = one(dir, "Ring", (int)n, ETSIM_COLL_SCATTER, M, (int)root, list);
  assert_int_equal(su_ns(r, (root + n - 1) % n), sum + n * E);
  assert_int_equal(su_ns(r, root), T((n - 1) * M) + E);
  etsim_sim_result_free(r);
  /* the barrier's chain is a token all-gather: (n-1) T(0) + n e */
  r = one(dir, "Ring", (int)n, ETSIM_COLL_BARRIER, 0, 0, "\"barrier-implementation\": [\"ring\"]");
  for (uint32_t i = 0; i < n; i++) assert_int_equal(su_ns(r, i), (n - 1) * T(0) + n * E);
  etsim_sim_result_free(r);
}

static void test_direct(void **state) {
  (void)state;
  const char *dir = tmp;
  uint32_t n = 6, root = 4;
  const char *list =
      "\"broadcast-implementation\": [\"direct\"], \"reduce-implementation\": "
      "[\"direct\"], \"gather-implementation\": [\"direct\"], "
      "\"scatter-implementation\": [\"direct\"]";
  /* FullyConnected: every peer one hop away */
  etsim_sim_result_t *r =
      one(dir, "FullyConnected", (int)n, ETSIM_COLL_BROADCAST, M, (int)root, list);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(su_ns(r, i), i == root ? T(M) + E : T(M) + 2 * E);
  etsim_sim_result_free(r);
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_REDUCE, M, (int)root, list);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(su_ns(r, i), i == root ? T(M) + 2 * E + delta(M) : T(M) + E);
  etsim_sim_result_free(r);
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_GATHER, M, (int)root, list);
  assert_int_equal(su_ns(r, root), T(M) + 2 * E);
  etsim_sim_result_free(r);
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_SCATTER, M, (int)root, list);
  assert_int_equal(su_ns(r, root), T(M) + E);
  assert_int_equal(su_ns(r, (root + 1) % n), T(M) + 2 * E);
  etsim_sim_result_free(r);
  /* direct2: two sends out at a time; the next pair leaves as the first
   * is delivered.  Positions 1, 2 get the data at e + T, 3, 4 at e + 2T,
   * 5 at e + 3T. */
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_BROADCAST, M, (int)root,
          "\"broadcast-implementation\": [\"direct2\"]");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = vr_of(i, root, n);
    int64_t want = v == 0 ? E + 3 * T(M) : 2 * E + (int64_t)((v + 1) / 2) * T(M);
    if (su_ns(r, i) != want)
      fail_msg("direct2 broadcast NPU %u: %lld, want %lld", i, (long long)su_ns(r, i),
               (long long)want);
  }
  etsim_sim_result_free(r);
}

static void test_tree(void **state) {
  (void)state;
  const char *dir = tmp;
  uint32_t n = 8, root = 3;
  const char *list =
      "\"broadcast-implementation\": [\"tree\"], \"reduce-implementation\": "
      "[\"tree\"], \"gather-implementation\": [\"tree\"], "
      "\"scatter-implementation\": [\"tree\"], \"barrier-implementation\": "
      "[\"tree\"]";
  /* binomial broadcast over 8: three rounds; odd positions are leaves */
  etsim_sim_result_t *r =
      one(dir, "FullyConnected", (int)n, ETSIM_COLL_BROADCAST, M, (int)root, list);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = vr_of(i, root, n);
    assert_int_equal(su_ns(r, i), 3 * (T(M) + E) + (v % 2 ? E : 0));
  }
  etsim_sim_result_free(r);
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_REDUCE, M, (int)root, list);
  assert_int_equal(su_ns(r, root), 3 * T(M) + 4 * E + 3 * delta(M));
  assert_int_equal(su_max_ns(r), su_ns(r, root));
  etsim_sim_result_free(r);
  /* gather: subtrees of 1, 2, 4 shares arrive one after another */
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_GATHER, M, (int)root, list);
  assert_int_equal(su_ns(r, root), 4 * E + T(M) + T(2 * M) + T(4 * M));
  etsim_sim_result_free(r);
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_SCATTER, M, (int)root, list);
  assert_int_equal(su_max_ns(r), 4 * E + T(M) + T(2 * M) + T(4 * M));
  assert_int_equal(su_ns(r, (root + 7) % n), 4 * E + T(M) + T(2 * M) + T(4 * M));
  etsim_sim_result_free(r);
  /* barrier: tokens up to position 0 (3 T(0) + 4 e), the release down */
  r = one(dir, "FullyConnected", (int)n, ETSIM_COLL_BARRIER, 0, 0, list);
  assert_int_equal(su_ns(r, 0), 6 * T(0) + 7 * E);
  assert_int_equal(su_ns(r, 7), 6 * T(0) + 8 * E);
  etsim_sim_result_free(r);
}

/* Two dimensions: the root's group along dimension 0 first, then every
 * group along dimension 1 from the NPU that agrees with the root there. */
static void test_multidim_broadcast(void **state) {
  (void)state;
  const char *dir = tmp;
  su_put(su_p(1, dir, "net.yml"),
         "topology: [ Switch, Switch ]\nnpus_count: [ 2, 4 ]\nbandwidth: [ 200, 50 ]\n"
         "latency: [ 100, 1000 ]\n");
  sys_rooted(su_p(2, dir, "sys.json"), NULL);
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                  .comm_type = ETSIM_COLL_BROADCAST,
                  .size = (int64_t)M,
                  .root = 5,
                  .root_set = 1};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_run_t o = {0};
  etsim_sim_result_t *r =
      su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  int64_t t0 = su_t(2, 100, 200, M), t1 = su_t(2, 1000, 50, M);
  /* NPU 4 (coordinates 0, 2) hears from the root over dimension 0 and
   * starts its column E later than the root's; the last of its column
   * (coordinate 1 of dimension 1) ends last */
  assert_int_equal(su_ns(r, 4), 2 * E + t0 + (t1 + E));
  assert_int_equal(su_ns(r, 1 * 2 + 0), 2 * E + t0 + 3 * (t1 + E) + E);
  assert_int_equal(su_max_ns(r), 2 * E + t0 + 3 * (t1 + E) + E);
  /* the root's own column runs without the dimension-0 wait */
  assert_int_equal(su_ns(r, 1 * 2 + 1), E + t0 + 3 * (t1 + E) + E);
  etsim_sim_result_free(r);
}

/* Without "rooted-collectives" a broadcast replays its trace duration, as
 * ASTRA-sim does. */
static void test_replay_default(void **state) {
  (void)state;
  const char *dir = tmp;
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                  .comm_type = ETSIM_COLL_BROADCAST,
                  .size = 1 << 20,
                  .dur_us = 33};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), "Ring", 4, BW, LAT);
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1}");
  su_run_t o = {0};
  etsim_sim_result_t *r =
      su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  assert_int_equal(su_ns(r, 0), 33000);
  etsim_sim_result_free(r);
}

/* ------------------------------------------------------- in-network */

#define RBW 100.0 /* in-network-reduction-bw, GB/s */

static int64_t red(uint64_t b) { return (int64_t)floor((double)b / (RBW * 1073741824.0 / 1e9)); }

static etsim_sim_result_t *innet(const char *dir, const char *backend, int64_t ct, uint64_t size,
                                 int root, int splits, int active) {
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                  .comm_type = ct,
                  .size = (int64_t)size,
                  .root = root,
                  .root_set = 1};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), "Switch", 8, BW, LAT);
  char buf[512];
  snprintf(buf, sizeof buf,
           "{\"preferred-dataset-splits\": %d, \"active-chunks-per-dimension\": %d,"
           " \"endpoint-delay\": %d, \"local-mem-bw\": %g, \"rooted-collectives\": \"network\","
           " \"in-network-collectives\": [true], \"in-network-reduction-bw\": [%g]}",
           splits, active, E, MEMBW, RBW);
  su_put(su_p(2, dir, "sys.json"), buf);
  su_run_t o = {.backend = backend};
  return su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
}

static void test_in_network(void **state) {
  (void)state;
  const char *dir = tmp;
  uint64_t S = 1 << 20;
  const char *be[] = {"analytical", "congestion"};
  for (int b = 0; b < 2; b++) {
    /* all-reduce: up once, reduced, down once (one link each way) */
    etsim_sim_result_t *r = innet(dir, be[b], ETSIM_COLL_ALL_REDUCE, S, 0, 1, 1);
    for (uint32_t i = 0; i < 8; i++) assert_int_equal(su_ns(r, i), 2 * E + 2 * T(S) + red(S));
    assert_int_equal(r->net.bytes, 8 * 2 * S); /* each byte up once and down once */
    etsim_sim_result_free(r);
    r = innet(dir, be[b], ETSIM_COLL_REDUCE_SCATTER, S, 0, 1, 1);
    assert_int_equal(su_ns(r, 5), 2 * E + T(S) + red(S) + T(S / 8));
    etsim_sim_result_free(r);
    r = innet(dir, be[b], ETSIM_COLL_ALL_GATHER, S, 0, 1, 1);
    assert_int_equal(su_ns(r, 5), 2 * E + T(S) + T(7 * S));
    etsim_sim_result_free(r);
    r = innet(dir, be[b], ETSIM_COLL_BROADCAST, S, 6, 1, 1);
    for (uint32_t i = 0; i < 8; i++)
      assert_int_equal(su_ns(r, i), i == 6 ? E + T(S) : 2 * E + 2 * T(S));
    etsim_sim_result_free(r);
    r = innet(dir, be[b], ETSIM_COLL_REDUCE, S, 6, 1, 1);
    for (uint32_t i = 0; i < 8; i++)
      assert_int_equal(su_ns(r, i), i == 6 ? 2 * E + 2 * T(S) + red(S) : E + T(S));
    etsim_sim_result_free(r);
  }
  /* Two chunks at once: the analytical model lets them pass each other;
   * on the congestion backend they queue on the NPU's link up, at the
   * switch's reduction engine and on the link down. */
  uint64_t h = S / 2;
  int64_t fly = T(h), busy = (int64_t)floor((double)h / (BW * 1073741824.0 / 1e9)), rr = red(h);
  etsim_sim_result_t *r = innet(dir, "analytical", ETSIM_COLL_ALL_REDUCE, S, 0, 2, 2);
  assert_int_equal(su_ns(r, 3), 2 * E + 2 * fly + rr);
  etsim_sim_result_free(r);
  r = innet(dir, "congestion", ETSIM_COLL_ALL_REDUCE, S, 0, 2, 2);
  int64_t a1 = E + fly, a2 = E + busy + fly;
  int64_t e1 = a1 + rr, e2 = (a2 > e1 ? a2 : e1) + rr;
  int64_t d1 = e1 + fly, s2 = e2 > e1 + busy ? e2 : e1 + busy, d2 = s2 + fly;
  int64_t want = (d1 > d2 ? d1 : d2) + E;
  assert_int_equal(su_ns(r, 3), want);
  etsim_sim_result_free(r);
}

/* ----------------------------------------------------------- refusals */

static int try_run(const char *dir, const char *kind, int n, const char *sysjson, int64_t ct,
                   const char *backend, etsim_error_t *err) {
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ct, .size = 1 << 20};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), kind, n, BW, LAT);
  su_put(su_p(2, dir, "sys.json"), sysjson);
  etsim_sim_result_t *r = NULL;
  su_run_t o = {.backend = backend};
  int rc =
      su_run1(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o, &r, err);
  etsim_sim_result_free(r);
  return rc;
}

static void test_refused_before_running(void **state) {
  (void)state;
  const char *dir = tmp;
  etsim_error_t err = {0};
  /* halvingDoubling on 6 NPUs: said before the run, naming the node */
  assert_int_equal(try_run(dir, "Ring", 6,
                           "{\"preferred-dataset-splits\": 1, \"all-reduce-implementation\": "
                           "[\"halvingDoubling\"]}",
                           ETSIM_COLL_ALL_REDUCE, "analytical", &err),
                   ETSIM_EUNSUPPORTED);
  assert_non_null(strstr(err.msg,
                         "w.et: node 0: all-reduce: halvingDoubling needs a "
                         "power-of-two number of NPUs, not 6"));
  memset(&err, 0, sizeof err);
  assert_int_equal(try_run(dir, "Ring", 6,
                           "{\"preferred-dataset-splits\": 1, \"all-reduce-implementation\": "
                           "[\"doubleBinaryTree\"]}",
                           ETSIM_COLL_ALL_REDUCE, "analytical", &err),
                   ETSIM_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "doubleBinaryTree needs a power-of-two dimension, not 6"));
  /* ... but not when the collective that would use it never runs */
  memset(&err, 0, sizeof err);
  assert_int_equal(try_run(dir, "Ring", 6,
                           "{\"preferred-dataset-splits\": 1, \"all-reduce-implementation\": "
                           "[\"halvingDoubling\"]}",
                           ETSIM_COLL_ALL_GATHER, "analytical", &err),
                   0);
  /* in-network reduction needs a switch, and a backend that has them */
  memset(&err, 0, sizeof err);
  assert_int_equal(try_run(dir, "Ring", 8,
                           "{\"preferred-dataset-splits\": 1, \"in-network-collectives\": [true]}",
                           ETSIM_COLL_ALL_REDUCE, "analytical", &err),
                   ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "dimension 0 is a Ring; only a Switch dimension's switch"));
  memset(&err, 0, sizeof err);
  assert_int_equal(try_run(dir, "Switch", 8,
                           "{\"preferred-dataset-splits\": 1, \"in-network-collectives\": [true]}",
                           ETSIM_COLL_ALL_REDUCE, "flow", &err),
                   ETSIM_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "the flow backend does not model switches that reduce"));
  /* the keys themselves */
  etsim_sys_config_t cfg;
  su_put(su_p(2, dir, "bad.json"),
         "{\"preferred-dataset-splits\": 1, \"rooted-collectives\": \"netwrk\"}");
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "bad.json"), &cfg, &err), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "\"rooted-collectives\": expected \"replay\" or \"network\""));
  su_put(su_p(2, dir, "bad.json"),
         "{\"preferred-dataset-splits\": 1, \"all-reduce-implementation\": [\"tree\"]}");
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "bad.json"), &cfg, &err), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "tree is not an algorithm for all-reduce"));
  su_put(su_p(2, dir, "bad.json"),
         "{\"preferred-dataset-splits\": 1, \"in-network-collectives\": [1]}");
  memset(&err, 0, sizeof err);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "bad.json"), &cfg, &err), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "\"in-network-collectives\"[0]: expected true or false"));
  /* a root outside the network names the node */
  su_node_t nd = {.type = ETSIM_ET_COMM_COLL_NODE,
                  .comm_type = ETSIM_COLL_BROADCAST,
                  .size = 100,
                  .root = 9,
                  .root_set = 1};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), "Ring", 4, BW, LAT);
  sys_rooted(su_p(2, dir, "sys.json"), NULL);
  etsim_sim_result_t *r = NULL;
  su_run_t o = {0};
  memset(&err, 0, sizeof err);
  assert_int_equal(su_run1(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"),
                           &o, &r, &err),
                   ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "node 0: comm_root 9 is not an NPU of the network (0 to 3)"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_chain, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_direct, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_tree, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_multidim_broadcast, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_replay_default, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_in_network, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_refused_before_running, tu_setup, tu_teardown),
  };
  return TU_RUN(tests, NULL, NULL);
}
