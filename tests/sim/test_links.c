/* Per-link statistics: every byte an NPU sends is counted on the link (or,
 * analytically, the NPU and dimension) it leaves by, with its
 * serialization time; one NPU standing for all gives every NPU's counters.
 */
#include "sim_util.h"

#include "etsim/report.h"

static void run_ar(const char *dir, const char *kind, const char *backend, int exact,
                   etsim_sim_result_t **out) {
  su_node_t nd = {
      .type = ETSIM_ET_COMM_COLL_NODE, .comm_type = ETSIM_COLL_ALL_REDUCE, .size = 1 << 20};
  su_trace(su_p(0, dir, "w.et"), &nd, 1);
  su_net(su_p(1, dir, "net.yml"), kind, 4, 50, 500);
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1}");
  etsim_topo_t topo;
  etsim_sys_config_t cfg;
  etsim_et_set_t *set;
  etsim_error_t err = {0};
  assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "net.yml"), &topo, &err), 0);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "sys.json"), &cfg, &err), 0);
  assert_int_equal(etsim_et_set_load(&set, su_p(0, dir, "w.et"), 0, &err), 0);
  assert_int_equal(etsim_et_set_broadcast(set, 4, &err), 0);
  etsim_sim_opts_t o = {.backend = backend, .exact = exact, .link_stats = 1};
  if (etsim_sim_run(set, &topo, &cfg, &o, out, &err)) fail_msg("%s", err.msg);
  etsim_et_set_free(set);
  etsim_sys_config_free(&cfg);
}

static void test_link_counters(void **state) {
  (void)state;
  const char *dir = tmp;
  double beta = 50 * 1073741824.0 / 1e9;
  uint64_t m = (1 << 20) / 4;                            /* a ring step's message */
  int64_t ser = (int64_t)floor((double)m / beta * 1000); /* ps */
  /* analytical Ring(4): 2 (p - 1) = 6 messages out of each NPU in dim 0 */
  for (int exact = 0; exact < 2; exact++) {
    etsim_sim_result_t *r = NULL;
    run_ar(dir, "Ring", "analytical", exact, &r);
    assert_int_equal(r->representative, !exact);
    assert_int_equal(r->links.n, 4);
    for (int i = 0; i < 4; i++) {
      assert_int_equal(r->links.bytes[i], 6 * m);
      assert_int_equal(r->links.busy_ps[i], 6 * ser);
    }
    char name[96];
    etsim_net_link_name(r->links_backend, &r->topo, 2, name, sizeof name);
    assert_string_equal(name, "NPU 2 dim 0 (Ring) out");
    etsim_sim_result_free(r);
  }
  /* congestion Switch(4): each NPU's link up and the switch's link down
   * carry the same 6 messages, busy floor(m / beta) ns each */
  etsim_sim_result_t *r = NULL;
  run_ar(dir, "Switch", "congestion", 1, &r);
  assert_int_equal(r->links.n, 8);
  int64_t busy = (int64_t)floor((double)m / beta) * 1000;
  for (size_t k = 0; k < 8; k++) {
    assert_int_equal(r->links.bytes[k], 6 * m);
    assert_int_equal(r->links.busy_ps[k], 6 * busy);
  }
  char name[96];
  etsim_net_link_name(r->links_backend, &r->topo, 5, name, sizeof name);
  assert_string_equal(name, "switch -> NPU 2 (dim 0 Switch)");
  /* the CSV: one row per link, its busy fraction of the iteration */
  etsim_error_t err = {0};
  assert_int_equal(etsim_report_links_csv(su_p(3, dir, "l.csv"), r, &err), 0);
  FILE *f = fopen(su_p(3, dir, "l.csv"), "r");
  char line[256];
  assert_non_null(fgets(line, sizeof line, f));
  assert_string_equal(line, "link,bytes,busy_ns,busy_fraction\n");
  assert_non_null(fgets(line, sizeof line, f));
  char want[256];
  snprintf(want, sizeof want, "\"NPU 0 -> switch (dim 0 Switch)\",%llu,%lld,%.6f\n",
           (unsigned long long)(6 * m), (long long)(6 * busy / 1000),
           (double)(6 * busy) / (double)r->total_ps);
  assert_string_equal(line, want);
  fclose(f);
  etsim_sim_result_free(r);
  /* the flow backend keeps none: said, not silently empty */
  etsim_topo_t topo;
  etsim_sys_config_t cfg;
  etsim_et_set_t *set;
  assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "net.yml"), &topo, &err), 0);
  assert_int_equal(etsim_sys_config_load(su_p(2, dir, "sys.json"), &cfg, &err), 0);
  assert_int_equal(etsim_et_set_load(&set, su_p(0, dir, "w.et"), 0, &err), 0);
  assert_int_equal(etsim_et_set_broadcast(set, 4, &err), 0);
  etsim_sim_opts_t o = {.backend = "flow", .link_stats = 1};
  r = NULL;
  assert_int_equal(etsim_sim_run(set, &topo, &cfg, &o, &r, &err), ETSIM_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "per-link statistics: the flow backend keeps none"));
  assert_null(r);
  etsim_et_set_free(set);
  etsim_sys_config_free(&cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_link_counters, tu_setup, tu_teardown),
  };
  return TU_RUN(tests, NULL, NULL);
}
