/* Topology-aware communicators ("group-phases": "hierarchical"): a group
 * whose members form a grid over several dimensions runs one phase per
 * dimension it spans, with that dimension's links and latency; without
 * the key (or for a group that is not a grid) ASTRA-sim's flat ring stays.
 *
 * Network: FullyConnected(4) x Switch(4), 200 and 50 GB/s, 100 and
 * 1000 ns; endpoint delay 10; local-mem-bw 100 (reduction d(b) =
 * 3 floor(b / 100)).  T0(b) = floor(100 + b/beta0) (one hop),
 * T1(b) = floor(2 x 1000 + b/beta1) (a switch: two hops, analytical).
 */
#include "sim_util.h"

#define S ((uint64_t)1 << 20)
#define EPS 10

static int64_t T0(uint64_t b) { return su_t(1, 100, 200, b); }
static int64_t T1(uint64_t b) { return su_t(2, 1000, 50, b); }
static int64_t L1(uint64_t b) { return su_t(1, 1000, 50, b); } /* one link to the switch */
static int64_t dl(uint64_t b) { return 3 * (int64_t)((double)b / 100e9 * 1e9); }

/* Members run one collective on group 1; the others one compute of 1 us. */
static void group_traces(const char *dir, const uint32_t *mem, int n_mem, int64_t ct, uint64_t size,
                         int root) {
  for (int r = 0; r < 16; r++) {
    int in = 0;
    for (int k = 0; k < n_mem; k++)
      if (mem[k] == (uint32_t)r) in = 1;
    su_node_t nd = in ? (su_node_t){.type = ETSIM_ET_COMM_COLL_NODE,
                                    .comm_type = ct,
                                    .size = (int64_t)size,
                                    .pg = "1",
                                    .root = root,
                                    .root_set = root >= 0}
                      : (su_node_t){.type = ETSIM_ET_COMP_NODE, .dur_us = 1};
    char name[32];
    snprintf(name, sizeof name, "g.%d.et", r);
    su_trace(su_p(0, dir, name), &nd, 1);
  }
  char buf[256];
  int len = snprintf(buf, sizeof buf, "{\"1\": [");
  for (int k = 0; k < n_mem; k++)
    len += snprintf(buf + len, sizeof buf - len, "%s%u", k ? ", " : "", mem[k]);
  snprintf(buf + len, sizeof buf - len, "]}");
  su_put(su_p(3, dir, "cg.json"), buf);
  su_put(su_p(1, dir, "net.yml"),
         "topology: [ FullyConnected, Switch ]\nnpus_count: [ 4, 4 ]\nbandwidth: [ 200, 50 ]\n"
         "latency: [ 100, 1000 ]\n");
}

static etsim_sim_result_t *run_group(const char *dir, const char *phases, const char *extra) {
  char buf[512];
  snprintf(buf, sizeof buf,
           "{\"preferred-dataset-splits\": 1, \"local-mem-bw\": 100, \"rooted-collectives\": "
           "\"network\"%s%s%s%s}",
           phases ? ", \"group-phases\": \"" : "", phases ? phases : "", phases ? "\"" : "",
           extra ? extra : "");
  su_put(su_p(2, dir, "sys.json"), buf);
  su_run_t o = {.groups = su_p(3, dir, "cg.json")};
  return su_run(su_p(0, dir, "g"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
}

static void test_hierarchical_all_reduce(void **state) {
  (void)state;
  const char *dir = tmp;
  /* a 2 x 2 grid, and a strided one: both span dimension 0 in pairs and
   * dimension 1 in pairs */
  static const uint32_t grid[4] = {0, 1, 4, 5}, strided[4] = {0, 2, 8, 10};
  const uint32_t *sets[2] = {grid, strided};
  /* reduce-scatter over dimension 0 (2 NPUs, pieces of S/2), all-reduce
   * over dimension 1 on S/2 (pieces of S/4), all-gather back over 0 */
  int64_t want = (T0(S / 2) + dl(S / 2) + 2 * EPS) + (2 * T1(S / 4) + dl(S / 4) + 3 * EPS) +
                 (T0(S / 2) + 2 * EPS);
  for (int k = 0; k < 2; k++) {
    group_traces(dir, sets[k], 4, ETSIM_COLL_ALL_REDUCE, S, -1);
    etsim_sim_result_t *r = run_group(dir, "hierarchical", NULL);
    for (int m = 0; m < 4; m++)
      if (su_ns(r, sets[k][m]) != want)
        fail_msg("set %d member %u: %lld, want %lld", k, sets[k][m],
                 (long long)su_ns(r, sets[k][m]), (long long)want);
    assert_int_equal(su_ns(r, 3), 1000); /* not a member: its compute only */
    etsim_sim_result_free(r);
  }
  /* flat (the default, and ASTRA-sim's): one ring of 4 in file order with
   * the 10 ns local delay; the analytical model charges each hop in the
   * lowest dimension where the NPUs differ (dimension 0 here even for
   * 1 -> 4), so it is not the hierarchical time */
  group_traces(dir, grid, 4, ETSIM_COLL_ALL_REDUCE, S, -1);
  etsim_sim_result_t *a = run_group(dir, NULL, NULL), *b = run_group(dir, "flat", NULL);
  int64_t flat = 2 * 3 * T0(S / 4) + 3 * dl(S / 4) + 7 * 10;
  assert_int_equal(su_ns(a, 0), flat);
  assert_int_equal(su_ns(b, 0), flat);
  etsim_sim_result_free(a);
  etsim_sim_result_free(b);
  /* a group that is no grid keeps the flat ring even when asked */
  static const uint32_t odd[3] = {0, 1, 5};
  group_traces(dir, odd, 3, ETSIM_COLL_ALL_REDUCE, S, -1);
  a = run_group(dir, NULL, NULL);
  b = run_group(dir, "hierarchical", NULL);
  for (int m = 0; m < 3; m++) assert_int_equal(su_ns(a, odd[m]), su_ns(b, odd[m]));
  etsim_sim_result_free(a);
  etsim_sim_result_free(b);
}

static void test_hierarchical_others(void **state) {
  (void)state;
  const char *dir = tmp;
  static const uint32_t grid[4] = {0, 1, 4, 5};
  /* reduce-scatter: dimension 0 then 1 */
  group_traces(dir, grid, 4, ETSIM_COLL_REDUCE_SCATTER, S, -1);
  etsim_sim_result_t *r = run_group(dir, "hierarchical", NULL);
  assert_int_equal(su_ns(r, 5),
                   (T0(S / 2) + dl(S / 2) + 2 * EPS) + (T1(S / 4) + dl(S / 4) + 2 * EPS));
  etsim_sim_result_free(r);
  /* all-gather of S per rank: dimension 1 first, then 0 with 2S each */
  group_traces(dir, grid, 4, ETSIM_COLL_ALL_GATHER, S, -1);
  r = run_group(dir, "hierarchical", NULL);
  assert_int_equal(su_ns(r, 4), (T1(S) + 2 * EPS) + (T0(2 * S) + 2 * EPS));
  etsim_sim_result_free(r);
  /* broadcast from position 3 (NPU 5): over dimension 0 to NPU 4, then
   * down dimension 1 from NPUs 4 and 5 */
  group_traces(dir, grid, 4, ETSIM_COLL_BROADCAST, S, 3);
  r = run_group(dir, "hierarchical", NULL);
  assert_int_equal(su_ns(r, 5), EPS + T0(S) + EPS + T1(S));
  assert_int_equal(su_ns(r, 4), 3 * EPS + T0(S) + T1(S));
  assert_int_equal(su_ns(r, 0), 4 * EPS + T0(S) + T1(S));
  assert_int_equal(su_ns(r, 1), 3 * EPS + T0(S) + T1(S));
  etsim_sim_result_free(r);
}

/* The communicator's part of a switch dimension reduces in the switch. */
static void test_hierarchical_in_network(void **state) {
  (void)state;
  const char *dir = tmp;
  static const uint32_t grid[4] = {0, 1, 4, 5};
  group_traces(dir, grid, 4, ETSIM_COLL_ALL_REDUCE, S, -1);
  etsim_sim_result_t *r =
      run_group(dir, "hierarchical", ", \"in-network-collectives\": [false, true]");
  int64_t want =
      (T0(S / 2) + dl(S / 2) + 2 * EPS) + (2 * EPS + 2 * L1(S / 2)) + (T0(S / 2) + 2 * EPS);
  for (int m = 0; m < 4; m++) assert_int_equal(su_ns(r, grid[m]), want);
  etsim_sim_result_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hierarchical_all_reduce, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_hierarchical_others, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_hierarchical_in_network, tu_setup, tu_teardown),
  };
  return TU_RUN(tests, NULL, NULL);
}
