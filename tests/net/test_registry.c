/*
 * test_registry.c — the network's registries (src/net/net.c): every backend
 * name and ASTRA-sim alias builds that backend, an unknown name is refused
 * with the list of names, link names follow each backend's numbering, and
 * congestion-control names map to ns-3's CC_MODE numbers and back.
 */
#include "test_util.h"

#include "etsim/net.h"
#include "etsim/netpkt.h"

/* One Switch dimension of 8 NPUs at 25 GB/s and 1,000 ns. */
static etsim_topo_t switch8(void) {
  etsim_topo_t t;
  etsim_topo_kind_t k = ETSIM_TOPO_SWITCH;
  uint32_t n = 8;
  double bw = 25, lat = 1000;
  etsim_error_t err = {0};
  assert_int_equal(etsim_topo_init(&t, 1, &k, &n, &bw, &lat, "test", &err), 0);
  return t;
}

static void test_names_and_aliases(void **state) {
  (void)state;
  static const struct {
    const char *asked, *built;
    int engine;
  } cases[] = {{"analytical", "analytical", 0},
               {"congestion-unaware", "analytical", 0},
               {"congestion", "congestion", 0},
               {"congestion-aware", "congestion", 0},
               {"flow", "flow", 1},
               {"packet", "packet", 1}};
  etsim_topo_t t = switch8();
  etsim_des_t q;
  etsim_des_init(&q);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    etsim_net_t *n = NULL;
    etsim_error_t err = {0};
    int rc = etsim_net_create(&n, cases[i].asked, &t, &q, 1, 2, NULL, &err);
    if (rc) print_error("%s: %s\n", cases[i].asked, err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(n->ops->name, cases[i].built);
    assert_int_equal(etsim_net_has_engine(n), cases[i].engine);
    assert_ptr_equal(n->q, &q);
    assert_int_equal(n->ev_deliver, 1);
    assert_int_equal(n->ev_internal, 2);
    etsim_net_destroy(n);
  }
  /* The names list is the registry's, in its order. */
  const char *want[] = {"analytical", "congestion", "flow", "packet"};
  for (size_t i = 0; i < 4; i++) assert_string_equal(etsim_net_backend_names[i], want[i]);
  assert_null(etsim_net_backend_names[4]);
  etsim_des_free(&q);
}

static void test_unknown_backend(void **state) {
  (void)state;
  etsim_topo_t t = switch8();
  etsim_net_t *n = NULL;
  etsim_error_t err = {0};
  assert_int_equal(etsim_net_create(&n, "pkt", &t, NULL, 1, 2, NULL, &err), ETSIM_EINVAL);
  assert_null(n);
  assert_string_equal(err.msg,
                      "unknown network backend \"pkt\" (expected analytical, congestion, flow or "
                      "packet)");
}

/* The analytical backend built through the registry answers in closed
 * form: floor(hops * latency + bytes / bandwidth) ns, with 2 hops (up to
 * the switch and down) on a Switch dimension. */
static void test_analytical_closed_form(void **state) {
  (void)state;
  etsim_topo_t t = switch8();
  etsim_des_t q;
  etsim_des_init(&q);
  etsim_net_t *n = NULL;
  etsim_error_t err = {0};
  assert_int_equal(etsim_net_create(&n, "congestion-unaware", &t, &q, 7, 8, NULL, &err), 0);
  uint64_t bytes = 1 << 20;
  /* 1 MiB at 25 * 2^30 B/s is 39,062.5 ns; plus 2 x 1,000 ns, truncated */
  int64_t want_ns = 2 * 1000 + (int64_t)(bytes * 1e9 / (25 * 1073741824.0));
  assert_int_equal(want_ns, 41062);
  assert_int_equal(etsim_net_analytical_ns(&t, 0, 5, bytes), want_ns);
  assert_int_equal(etsim_net_send(n, 0, 5, bytes, 42), 0);
  etsim_des_event_t ev;
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.type, 7);
  assert_int_equal(ev.b, 42);
  assert_int_equal(ev.t_ps, want_ns * 1000);
  etsim_net_destroy(n);
  etsim_des_free(&q);
}

static void test_link_names(void **state) {
  (void)state;
  etsim_topo_t t = switch8();
  char buf[128];
  /* congestion: per NPU an up and a down link to the switch */
  etsim_net_link_name("congestion", &t, 6, buf, sizeof buf);
  assert_string_equal(buf, "NPU 3 -> switch (dim 0 Switch)");
  etsim_net_link_name("congestion-aware", &t, 7, buf, sizeof buf);
  assert_string_equal(buf, "switch -> NPU 3 (dim 0 Switch)");
  etsim_net_link_name("congestion", &t, 16, buf, sizeof buf);
  assert_string_equal(buf, "link 0");
  /* analytical: per NPU and dimension */
  etsim_net_link_name("analytical", &t, 3, buf, sizeof buf);
  assert_string_equal(buf, "NPU 3 dim 0 (Switch) out");
  etsim_net_link_name("no-such-backend", &t, 5, buf, sizeof buf);
  assert_string_equal(buf, "NPU 5 dim 0 (Switch) out");
}

static void test_cc_names(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int mode, number; /* ns-3's CC_MODE */
  } cases[] = {{"none", ETSIM_NETPKT_CC_NONE, 0},
               {"dcqcn", ETSIM_NETPKT_CC_DCQCN, 1},
               {"hpcc", ETSIM_NETPKT_CC_HPCC, 3},
               {"timely", ETSIM_NETPKT_CC_TIMELY, 7},
               {"dctcp", ETSIM_NETPKT_CC_DCTCP, 8}};
  size_t n = sizeof cases / sizeof *cases;
  for (size_t i = 0; i < n; i++) {
    int mode = -1;
    etsim_error_t err = {0};
    assert_int_equal(etsim_net_cc_mode(cases[i].name, &mode, &err), 0);
    assert_int_equal(mode, cases[i].mode);
    assert_int_equal(mode, cases[i].number);
    assert_string_equal(etsim_net_cc_name(mode), cases[i].name);
    assert_string_equal(etsim_net_cc_names[i], cases[i].name);
  }
  assert_null(etsim_net_cc_names[n]);
  int mode = -1;
  etsim_error_t err = {0};
  assert_int_equal(etsim_net_cc_mode("pfc", &mode, &err), 0);
  assert_int_equal(mode, ETSIM_NETPKT_CC_NONE);
  assert_null(etsim_net_cc_name(10)); /* HPCC-PINT: not a scheme etsim has */
  assert_int_equal(etsim_net_cc_mode("DCQCN", &mode, &err), ETSIM_EINVAL);
  assert_string_equal(err.msg,
                      "unknown congestion control \"DCQCN\" (expected none, dcqcn, hpcc, timely "
                      "or dctcp)");
}

/* The packet backend takes its scheme through the same table. */
static void test_packet_cc_option(void **state) {
  (void)state;
  etsim_topo_t t = switch8();
  etsim_net_opts_t o = {0};
  etsim_net_t *n = NULL;
  etsim_error_t err = {0};
  o.cc = "timely";
  assert_int_equal(etsim_net_create(&n, "packet", &t, NULL, 1, 2, &o, &err), 0);
  etsim_net_destroy(n);
  n = NULL;
  o.cc = "reno";
  assert_int_equal(etsim_net_create(&n, "packet", &t, NULL, 1, 2, &o, &err), ETSIM_EINVAL);
  assert_null(n);
  assert_non_null(strstr(err.msg, "unknown congestion control \"reno\""));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_names_and_aliases),
                                     cmocka_unit_test(test_unknown_backend),
                                     cmocka_unit_test(test_analytical_closed_form),
                                     cmocka_unit_test(test_link_names),
                                     cmocka_unit_test(test_cc_names),
                                     cmocka_unit_test(test_packet_cc_option)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
