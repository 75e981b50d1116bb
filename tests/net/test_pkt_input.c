/*
 * test_pkt_input.c — the ns-3 scenario readers: units, topology, config and
 * flow files, and the errors they give (file:line and the key), plus the
 * network-level refusals (disconnected topology, buffer too small for its
 * headroom, missing ECN map entry).
 */
#include "test_util.h"

#include "etsim/netpkt.h"

static void test_units(void **state) {
  (void)state;
  uint64_t r;
  int64_t t;
  assert_int_equal(etsim_netpkt_parse_rate("100Gbps", &r), 0);
  assert_int_equal(r, 100000000000ull);
  assert_int_equal(etsim_netpkt_parse_rate("50Mb/s", &r), 0);
  assert_int_equal(r, 50000000ull);
  assert_int_equal(etsim_netpkt_parse_rate("25000000000", &r), 0);
  assert_int_equal(r, 25000000000ull);
  assert_int_equal(etsim_netpkt_parse_rate("2.5Gbps", &r), 0);
  assert_int_equal(r, 2500000000ull);
  assert_int_equal(etsim_netpkt_parse_rate("100Gbit", &r), ETSIM_EINVAL);
  assert_int_equal(etsim_netpkt_parse_rate("-1Gbps", &r), ETSIM_EINVAL);
  assert_int_equal(etsim_netpkt_parse_rate("0bps", &r), ETSIM_EINVAL);
  assert_int_equal(etsim_netpkt_parse_time("0.001ms", &t), 0);
  assert_int_equal(t, 1000000);
  assert_int_equal(etsim_netpkt_parse_time("0.0005ms", &t), 0);
  assert_int_equal(t, 500000);
  assert_int_equal(etsim_netpkt_parse_time("500ns", &t), 0);
  assert_int_equal(t, 500000);
  assert_int_equal(etsim_netpkt_parse_time("2", &t), 0);
  assert_int_equal(t, 2000000000000ll);
  assert_int_equal(etsim_netpkt_parse_time("1 us", &t), ETSIM_EINVAL);
  assert_int_equal(etsim_netpkt_host_ip(0), 0x0b000001u);
  assert_int_equal(etsim_netpkt_host_ip(9), 0x0b000901u);
  assert_int_equal(etsim_netpkt_host_ip(257), 0x0b010101u);
}

static void test_topology_reader(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  etsim_error_t err = {0};
  /* ASTRA-sim's 8-host example, with a trailing space after the ids */
  const char *ok =
      "9 1 8\n8 \n0 8 400Gbps 0.0005ms 0\n1 8 400Gbps 0.0005ms 0\n"
      "2 8 400Gbps 0.0005ms 0\n3 8 400Gbps 0.0005ms 0\n"
      "4 8 400Gbps 0.0005ms 0\n5 8 400Gbps 0.0005ms 0\n"
      "6 8 400Gbps 0.0005ms 0\n7 8 400Gbps 0.0005ms 0.01\n";
  assert_int_equal(etsim_netpkt_topo_parse(&t, ok, "t.txt", &err), 0);
  assert_int_equal(t.n_nodes, 9);
  assert_int_equal(t.n_links, 8);
  assert_true(t.is_switch[8] && !t.is_switch[0]);
  assert_int_equal(t.links[7].rate_bps, 400000000000ull);
  assert_int_equal(t.links[7].delay_ps, 500000);
  TU_EQ(t.links[7].error_rate, 0.01);
  assert_int_equal(t.links[7].line, 10);
  etsim_netpkt_topo_free(&t);

  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"", "t.txt:1: missing node count"},
      {"3 1 x\n", "t.txt:1: link count 'x' is not a non-negative integer"},
      {"3 1 2\n7\n", "t.txt:2: switch id 7 out of range (3 nodes)"},
      {"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbit 0.001ms 0\n",
       "t.txt:4: bad link rate '100Gbit' (e.g. 100Gbps)"},
      {"3 1 2\n2\n0 2 100Gbps 1parsec 0\n", "t.txt:3: bad link delay '1parsec'"},
      {"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n", "t.txt:3: missing link source"},
      {"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n2 0 100Gbps 0.001ms 0\n",
       "t.txt:4: second link between 2 and 0 (first on line 3)"},
      {"3 1 2\n2\n0 1 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n", "t.txt:3: link joins two hosts"},
      {"3 1 1\n2\n0 2 100Gbps 0.001ms 1.5\n", "t.txt:3: link 0-2: error rate 1.5"},
      {"3 1 1\n2\n0 2 100Gbps 0.001ms 0\n9\n", "t.txt:4: unexpected '9' after 1 links"},
      {"3 1 1\n2\n2 2 100Gbps 0.001ms 0\n", "t.txt:3: link 2-2: a node linked to itself"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = etsim_netpkt_topo_parse(&t, bad[i].text, "t.txt", &err);
    if (!rc || !strstr(err.msg, bad[i].msg))
      print_message("case %zu: rc %d msg '%s', want '%s'\n", i, rc, err.msg, bad[i].msg);
    TU_LT(rc, 0);
    TU_CONTAINS(err.msg, bad[i].msg);
  }
}

static char *write_tmp(const char *dir, const char *name, const char *text) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
  return p;
}

static void test_config_reader(void **state) {
  (void)state;
  char *dir = tu_tmpdir();
  etsim_netpkt_cfg_t c;
  etsim_error_t err = {0};
  char *p = write_tmp(dir, "config.txt",
                      "ENABLE_QCN 1\nUSE_DYNAMIC_PFC_THRESHOLD 1\n\n"
                      "PACKET_PAYLOAD_SIZE 9000\nTOPOLOGY_FILE topo.txt\n"
                      "FLOW_FILE /abs/flow.txt\nTRACE_FILE trace.txt\n"
                      "FCT_OUTPUT_FILE out/fct.txt\nSIMULATOR_STOP_TIME 4.00\n"
                      "CC_MODE 1\nRP_TIMER 300 \nRATE_AI 20Mb/s\nMIN_RATE 1000Mb/s\n"
                      "EWMA_GAIN 0.00390625\nLINK_DOWN 0 0 0\nNIC_TOTAL_PAUSE_TIME 0\n"
                      "KMAX_MAP 2 25000000000 400 100000000000 1600\n"
                      "KMIN_MAP 2 100000000000 400 25000000000 100\n"
                      "PMAX_MAP 2 25000000000 0.2 100000000000 0.5\n"
                      "BUFFER_SIZE 16\nQLEN_MON_START 2000\nQLEN_MON_END 3000\n"
                      "FLOW_ACK_LOAD 1\n");
  etsim_netpkt_cfg_default(&c);
  assert_int_equal(c.flow_ack_load, 0);
  int rc = etsim_netpkt_cfg_load(&c, p, &err);
  TU_OK(rc, err);
  assert_int_equal(c.payload_bytes, 9000);
  assert_int_equal(c.cc_mode, ETSIM_NETPKT_CC_DCQCN);
  TU_EQ(c.rp_timer_us, 300);
  assert_int_equal(c.rate_ai_bps, 20000000);
  assert_int_equal(c.min_rate_bps, 1000000000);
  assert_int_equal(c.stop_ps, 4000000000000ll);
  assert_int_equal(c.buffer_mb, 16);
  assert_int_equal(c.flow_ack_load, 1);
  assert_int_equal(c.n_ecn, 2); /* the file's maps replace the defaults */
  assert_int_equal(c.ecn_rate_bps[1], 100000000000ull);
  assert_int_equal(c.kmin_kb[1], 400);
  assert_int_equal(c.kmax_kb[1], 1600);
  TU_EQ(c.pmax[1], 0.5);
  assert_int_equal(c.kmin_kb[0], 100);
  char want[2048];
  snprintf(want, sizeof want, "%s/topo.txt", dir);
  assert_string_equal(c.topology_file, want);
  assert_string_equal(c.flow_file, "/abs/flow.txt");
  snprintf(want, sizeof want, "%s/out/fct.txt", dir);
  assert_string_equal(c.fct_file, want);
  free(p);

  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"CC_MODE 3\nRATE_AIX 5Mb/s\n", ":2: unknown key 'RATE_AIX'"},
      {"CC_MODE 5\n", ":1: CC_MODE 5 unknown"},
      {"CC_MODE 10\n", ":1: CC_MODE 10 (HPCC-PINT) is not implemented"},
      {"RATE_AI fast\n", ":1: RATE_AI: bad rate 'fast'"},
      {"KMAX_MAP 2 25000000000 400\n", ":1: KMAX_MAP: count 2 needs 4 values, found 2"},
      {"KMAX_MAP 1 25000000000 400\nKMIN_MAP 1 25000000000 100\n",
       "rate 25000000000 b/s is in one ECN map but not in all"},
      {"PMAX_MAP 1 25000000000 1.5\n", ":1: PMAX_MAP: probability 1.5 above 1"},
      {"MULTI_RATE 1\n", ":1: MULTI_RATE 1 (per-hop HPCC rates) is not implemented"},
      {"HAS_WIN 2\n", ":1: HAS_WIN: expected 0 or 1, not '2'"},
      {"LINK_DOWN 100 1 2\n", ":1: LINK_DOWN: taking links down is not modelled"},
      {"U_TARGET 1.5\n", ":1: U_TARGET: 1.5 not in (0, 1]"},
      {"BUFFER_SIZE\n", ":1: BUFFER_SIZE: expected one value, found 0"},
      {"PACKET_PAYLOAD_SIZE 0\n", ":1: PACKET_PAYLOAD_SIZE: 0 not in 1..65000"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = write_tmp(dir, "bad.txt", bad[i].text);
    etsim_netpkt_cfg_default(&c);
    rc = etsim_netpkt_cfg_load(&c, p, &err);
    if (!rc || !strstr(err.msg, bad[i].msg) || strncmp(err.msg, p, strlen(p)))
      print_message("case %zu: rc %d msg '%s', want '%s'\n", i, rc, err.msg, bad[i].msg);
    TU_LT(rc, 0);
    TU_CONTAINS(err.msg, bad[i].msg);
    assert_memory_equal(err.msg, p, strlen(p)); /* starts with the file name */
    free(p);
  }
  tu_rmdir(dir);
}

static void test_flow_reader(void **state) {
  (void)state;
  char *dir = tu_tmpdir();
  etsim_error_t err = {0};
  etsim_netpkt_flow_t *f;
  size_t n;
  char *p = write_tmp(dir, "flow.txt", "2\n0 1 3 100 1000000 2.000000001\n2 0 3 100 5 0\n");
  assert_int_equal(etsim_netpkt_flows_load(p, &f, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(f[0].dst, 1);
  assert_int_equal(f[0].pg, 3);
  assert_int_equal(f[0].dport, 100);
  assert_int_equal(f[0].size_bytes, 1000000);
  assert_int_equal(f[0].start_ps, 2000000001000ll);
  assert_int_equal(f[1].line, 3);
  etsim_free(f);
  free(p);
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"", ":1: missing flow count"},
      {"2\n0 1 3 100 10 0\n", "flow 2 of 2: missing source"},
      {"1\n0 1 3 100 10\n", ":2: flow 1: missing start time (line ends)"},
      {"1\n0 1 9 100 10 0\n", ":2: priority group 9 not in 1..7"},
      {"1\n0 1 3 100 0 0\n", ":2: flow of 0 bytes"},
      {"1\n0 1 3 100 10 -1\n", ":2: bad start time '-1'"},
      {"1\n0 1 3 100 10 0\n7\n", ":3: unexpected '7' after 1 flows"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = write_tmp(dir, "bad.txt", bad[i].text);
    int rc = etsim_netpkt_flows_load(p, &f, &n, &err);
    if (!rc || !strstr(err.msg, bad[i].msg))
      print_message("case %zu: rc %d msg '%s', want '%s'\n", i, rc, err.msg, bad[i].msg);
    TU_LT(rc, 0);
    TU_CONTAINS(err.msg, bad[i].msg);
    free(p);
  }
  tu_rmdir(dir);
}

static void test_network_refusals(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  etsim_netpkt_cfg_t c;
  etsim_netpkt_t *n = NULL;
  etsim_error_t err = {0};
  etsim_netpkt_cfg_default(&c);
  /* two islands: hosts 0,1 on switch 4; hosts 2,3 on switch 5 */
  assert_int_equal(
      etsim_netpkt_topo_parse(&t,
                              "6 2 4\n4 5\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n"
                              "2 5 100Gbps 0.001ms 0\n3 5 100Gbps 0.001ms 0\n",
                              "islands.txt", &err),
      0);
  assert_int_equal(etsim_netpkt_create(&n, &t, &c, &err), ETSIM_EINVAL);
  assert_non_null(
      strstr(err.msg, "islands.txt: topology is disconnected: host 2 cannot reach host 0"));
  etsim_netpkt_topo_free(&t);

  /* A header claiming 9.2 M hosts and no link (found by fuzz_netsim, which
   * timed out building the per-node tables first): both levels refuse it
   * naming the first host. */
  assert_int_equal(etsim_netpkt_topo_parse(&t, "9201920 0 0", "big.txt", &err), 0);
  assert_int_equal(etsim_netpkt_create(&n, &t, &c, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "big.txt: host 0 has no link");
  etsim_netflow_t *fl = NULL;
  assert_int_equal(etsim_netflow_create(&fl, &t, &c, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "big.txt: host 0 has no link");
  etsim_netpkt_topo_free(&t);

  assert_int_equal(etsim_netpkt_topo_star(&t, 64, 400000000000ull, 10 * 1000000ll), 0);
  c.buffer_mb = 1; /* 65 ports x 3 x BDP(400 Gb/s, 10 us) of headroom */
  assert_int_equal(etsim_netpkt_create(&n, &t, &c, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "BUFFER_SIZE: 1 MiB is too small for switch 64");
  c.buffer_mb = 1024;
  c.n_ecn = 1; /* only 25 Gb/s in the ECN maps */
  assert_int_equal(etsim_netpkt_create(&n, &t, &c, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "no entry for link rate 400000000000 b/s");
  c.enable_qcn = 0; /* without ECN the maps are not needed */
  assert_int_equal(etsim_netpkt_create(&n, &t, &c, &err), 0);
  etsim_netpkt_msg_t m = {0, 0, 10, 0, 3, 1, NULL, NULL};
  assert_int_equal(etsim_netpkt_send(n, &m, NULL, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "to itself");
  m.dst = 64;
  assert_int_equal(etsim_netpkt_send(n, &m, NULL, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "destination 64 is not a host");
  m.dst = 1;
  m.pg = 0;
  assert_int_equal(etsim_netpkt_send(n, &m, NULL, &err), ETSIM_EINVAL);
  /* host 2's cable cut: a message to it is an error unless the network
   * allows disconnected hosts (then it is held) */
  const uint32_t cut[2] = {2, 64};
  assert_int_equal(etsim_netpkt_links_down(n, cut, 1, 0, &err), 0);
  m.dst = 2;
  m.pg = 3;
  assert_int_equal(etsim_netpkt_send(n, &m, NULL, &err), ETSIM_EINTERNAL);
  TU_CONTAINS(err.msg, "no route between hosts 0 and 2");
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  assert_int_equal(st.msgs, 0);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_units),
      cmocka_unit_test(test_topology_reader),
      cmocka_unit_test(test_config_reader),
      cmocka_unit_test(test_flow_reader),
      cmocka_unit_test(test_network_refusals),
  };
  return TU_RUN(tests, NULL, NULL);
}
