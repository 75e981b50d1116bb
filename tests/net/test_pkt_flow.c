/*
 * test_pkt_flow.c — the flow-level model against closed forms: one flow at
 * line rate (same picoseconds as the packet level on an unloaded path), N
 * flows into one port get exactly 1/N each, a parking lot gets its max-min
 * shares, a start elsewhere does not re-rate an unrelated group, and on a
 * contention-free ring the flow and packet levels agree within 5 %; both
 * levels answer through the one level table.
 */
#include "test_util.h"

#include "etsim/netpkt.h"

#include <math.h>

static const int64_t US = 1000000;
static const uint64_t G100 = 100000000000ull;

static etsim_netflow_t *mkf(const etsim_netpkt_topo_t *t, etsim_netpkt_cfg_t *c) {
  etsim_netflow_t *n = NULL;
  etsim_error_t err = {0};
  int rc = etsim_netflow_create(&n, t, c, &err);
  TU_OK(rc, err);
  return n;
}

static uint64_t sendf(etsim_netflow_t *n, uint32_t s, uint32_t d, uint64_t b, int64_t start) {
  etsim_netpkt_msg_t m = {s, d, b, start, 3, 100, NULL, NULL};
  uint64_t id;
  etsim_error_t err = {0};
  assert_int_equal(etsim_netflow_send(n, &m, &id, &err), 0);
  return id;
}

static void runf(etsim_netflow_t *n, int64_t t) {
  etsim_error_t err = {0};
  assert_int_equal(etsim_netflow_run_until(n, t, &err), 0);
}

static void test_one_flow_line_rate(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  etsim_netflow_t *n = mkf(&t, &c);
  uint64_t id = sendf(n, 0, 1, 1000000, 0);
  runf(n, 10);
  TU_EQ(etsim_netflow_msg_rate(n, id), 1e11);
  runf(n, INT64_MAX);
  etsim_netpkt_msg_stat_t s;
  assert_int_equal(etsim_netflow_msg_stat(n, id, &s), 0);
  /* the packet level's closed form: 1000 x 82.88 ns + one more hop + 2 us */
  assert_int_equal(s.delivered_ps, 1000 * 82880 + 82880 + 2 * US);
  assert_int_equal(s.acked_ps, s.delivered_ps + 2 * (3840 + US));
  etsim_netflow_free(n);

  /* and the packet level gives the same picoseconds */
  etsim_netpkt_t *p;
  etsim_error_t err = {0};
  assert_int_equal(etsim_netpkt_create(&p, &t, &c, &err), 0);
  etsim_netpkt_msg_t m = {0, 1, 1000000, 0, 3, 100, NULL, NULL};
  assert_int_equal(etsim_netpkt_send(p, &m, &id, &err), 0);
  assert_int_equal(etsim_netpkt_run_until(p, INT64_MAX, &err), 0);
  etsim_netpkt_msg_stat_t ps;
  assert_int_equal(etsim_netpkt_msg_stat(p, id, &ps), 0);
  assert_int_equal(ps.delivered_ps, s.delivered_ps);
  assert_int_equal(ps.acked_ps, s.acked_ps);
  assert_int_equal(ps.standalone_ps, s.standalone_ps);
  etsim_netpkt_free(p);
  etsim_netpkt_topo_free(&t);
}

/* SIMULATOR_STOP_TIME at the flow level, as at the packet level (ns-3's
 * Simulator::Stop): the events before it run, not those at it.  The flow
 * of test_one_flow_line_rate delivers at deliv: a stop there leaves it
 * undelivered, one picosecond later delivers it. */
static void test_stop_instant(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  const int64_t deliv = 1000 * 82880 + 82880 + 2 * US;
  for (int k = 0; k < 2; k++) {
    c.stop_ps = deliv + k;
    etsim_netflow_t *n = mkf(&t, &c);
    uint64_t id = sendf(n, 0, 1, 1000000, 0);
    runf(n, INT64_MAX);
    etsim_netpkt_msg_stat_t s;
    assert_int_equal(etsim_netflow_msg_stat(n, id, &s), 0);
    assert_int_equal(s.delivered_ps, k ? deliv : -1);
    assert_int_equal(s.acked_ps, -1);
    assert_int_equal(etsim_netflow_next_time(n), INT64_MAX);
    etsim_netflow_free(n);
  }
  etsim_netpkt_topo_free(&t);
}

/* Per-port bytes of the flow level (etsim netsim --ports): a flow still
 * running counts what it sent up to the last event, at its rate (100 Gb/s:
 * half its 82,880 ns of wire time is 518,000 of its 1,036,000 wire bytes),
 * on every port of its route at once (a fluid has no per-hop lag); with
 * FLOW_ACK_LOAD its ACK route carries 48/1036 of that.  A flow on other
 * links starting then gives the event. */
static void test_port_bytes(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 4, G100, US), 0); /* switch 4 */
  for (int ack = 0; ack < 2; ack++) {
    etsim_netpkt_cfg_t c;
    etsim_netpkt_cfg_default(&c);
    c.flow_ack_load = ack;
    etsim_netflow_t *n = mkf(&t, &c);
    sendf(n, 0, 1, 1000000, 3 * US);
    sendf(n, 2, 3, 1000000, 3 * US + 41440000);
    runf(n, 3 * US + 41440000);
    assert_int_equal(etsim_netflow_now(n), 3 * US + 41440000);
    assert_int_equal(etsim_netflow_port_count(n, 4), 4);
    etsim_netpkt_port_stat_t ps;
    assert_int_equal(etsim_netflow_port_stat(n, 0, 1, &ps), 0);
    assert_int_equal(ps.peer, 4);
    assert_int_equal(ps.rate_bps, G100);
    assert_int_equal(ps.tx_bytes, 518000);
    assert_int_equal(etsim_netflow_port_stat(n, 4, 2, &ps), 0); /* switch to host 1 */
    assert_int_equal(ps.peer, 1);
    assert_int_equal(ps.tx_bytes, 518000);
    assert_int_equal(etsim_netflow_port_stat(n, 1, 1, &ps), 0); /* host 1's ACKs */
    assert_int_equal(ps.tx_bytes, ack ? 24000 : 0);
    assert_int_equal(etsim_netflow_port_stat(n, 2, 1, &ps), 0); /* just started */
    assert_int_equal(ps.tx_bytes, 0);
    assert_int_equal(etsim_netflow_port_stat(n, 0, 2, &ps), ETSIM_ERANGE);
    assert_int_equal(etsim_netflow_port_stat(n, 9, 1, &ps), ETSIM_ERANGE);
    runf(n, INT64_MAX);
    uint32_t wire[][2] = {{0, 1}, {4, 2}, {2, 1}, {4, 4}};
    for (int i = 0; i < 4; i++) {
      assert_int_equal(etsim_netflow_port_stat(n, wire[i][0], wire[i][1], &ps), 0);
      assert_int_equal(ps.tx_bytes, 1036000);
      assert_int_equal(ps.pauses_rx + ps.qbytes_peak + (uint64_t)ps.paused_ps, 0);
    }
    assert_int_equal(etsim_netflow_port_stat(n, 4, 1, &ps), 0); /* ACKs to host 0 */
    assert_int_equal(ps.tx_bytes, ack ? 48000 : 0);
    etsim_netflow_stats_t st;
    etsim_netflow_get_stats(n, &st);
    assert_int_equal(st.first_start_ps, 3 * US);
    etsim_netflow_free(n);
  }
  etsim_netpkt_topo_free(&t);
}

/* Routes of any length: a chain host - S1 - ... - Sk - host of k = 100
 * switches (until December 2026 a path over 64 links gave "no route").  On
 * the empty path the flow level gives the packet level's closed form:
 * n t + k t + (k + 1) d, the ACK (k + 1)(t_ack + d) later. */
static void test_long_route(void **state) {
  (void)state;
  const uint32_t k = 100;
  etsim_netpkt_topo_t t;
  etsim_error_t err = {0};
  assert_int_equal(etsim_netpkt_topo_init(&t, k + 2), 0);
  const int64_t d = US / 10;
  for (uint32_t s = 2; s < k + 2; s++) {
    t.is_switch[s] = 1;
    assert_int_equal(etsim_netpkt_topo_add_link(&t, s == 2 ? 0 : s - 1, s, G100, d, 0, &err), 0);
  }
  assert_int_equal(etsim_netpkt_topo_add_link(&t, k + 1, 1, G100, d, 0, &err), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  etsim_netflow_t *n = mkf(&t, &c);
  uint64_t id = sendf(n, 0, 1, 100000, 0);
  runf(n, INT64_MAX);
  etsim_netpkt_msg_stat_t s;
  assert_int_equal(etsim_netflow_msg_stat(n, id, &s), 0);
  const int64_t tp = 82880, ta = 3840;
  assert_int_equal(s.delivered_ps, 100 * tp + k * tp + (k + 1) * d);
  assert_int_equal(s.acked_ps - s.delivered_ps, (k + 1) * (ta + d));
  etsim_netflow_free(n);
  etsim_netpkt_topo_free(&t);
}

static void test_n_to_one_fair(void **state) {
  (void)state;
  const uint32_t N = 7;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, N + 1, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.has_win = 0;
  etsim_netflow_t *n = mkf(&t, &c);
  uint64_t ids[7];
  for (uint32_t i = 0; i < N; i++) ids[i] = sendf(n, i + 1, 0, 2000000, 0);
  runf(n, 1);
  for (uint32_t i = 0; i < N; i++) TU_NEAR(etsim_netflow_msg_rate(n, ids[i]), 1e11 / N, 1e-3);
  runf(n, INT64_MAX);
  /* all finish together after N x wire bytes at B */
  double wire = N * 8.0 * (2000000 + 2000 * 36) / 1e11 * 1e12;
  for (uint32_t i = 0; i < N; i++) {
    etsim_netpkt_msg_stat_t s;
    etsim_netflow_msg_stat(n, ids[i], &s);
    TU_LE(llabs(s.delivered_ps - (int64_t)llround(wire) - 82880 - 2 * US), 1);
  }
  etsim_netflow_stats_t st;
  etsim_netflow_get_stats(n, &st);
  assert_int_equal(st.msgs_done, N);
  etsim_netflow_free(n);
  etsim_netpkt_topo_free(&t);
}

/*
 * Parking lot: switches 4-5-6-7 in a line, hosts 0 on 4, 1 on 5, 2 on 6,
 * 3 on 7 (100 Gb/s).  Long flow 0->3 crosses the three trunk links; two
 * flows 0->1 share trunk 4-5 with it, one flow 1->2 trunk 5-6, one 2->3
 * trunk 6-7.  The host link of 0 carries three flows: 1/3 each; then the
 * flows on 5-6 and 6-7 get the rest, 2/3.  ACKs (w = 48 / 1036 of the data
 * rate on the return route) never fill a link here, so they change nothing.
 */
static void test_parking_lot(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  /* hosts 8 and 9 on switch 4 make a pair that shares no link, either way */
  assert_int_equal(etsim_netpkt_topo_init(&t, 10), 0);
  for (uint32_t s = 4; s < 8; s++) t.is_switch[s] = 1;
  for (uint32_t h = 0; h < 4; h++)
    assert_int_equal(etsim_netpkt_topo_add_link(&t, h, h + 4, G100, US, 0, NULL), 0);
  for (uint32_t s = 4; s < 7; s++)
    assert_int_equal(etsim_netpkt_topo_add_link(&t, s, s + 1, G100, US, 0, NULL), 0);
  for (uint32_t h = 8; h < 10; h++)
    assert_int_equal(etsim_netpkt_topo_add_link(&t, h, 4, G100, US, 0, NULL), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.has_win = 0;
  c.cc_mode = ETSIM_NETPKT_CC_NONE;
  c.flow_ack_load = 1;
  etsim_netflow_t *n = mkf(&t, &c);
  uint64_t lng = sendf(n, 0, 3, 100000000, 0);
  uint64_t a1 = sendf(n, 0, 1, 100000000, 0);
  uint64_t a2 = sendf(n, 0, 1, 100000000, 0);
  uint64_t b = sendf(n, 1, 2, 100000000, 0);
  uint64_t d = sendf(n, 2, 3, 100000000, 0);
  runf(n, 1);
  const double third = 1e11 / 3;
  TU_NEAR(etsim_netflow_msg_rate(n, lng), third, 1);
  TU_NEAR(etsim_netflow_msg_rate(n, a1), third, 1);
  TU_NEAR(etsim_netflow_msg_rate(n, a2), third, 1);
  TU_NEAR(etsim_netflow_msg_rate(n, b), 2 * third, 1);
  TU_NEAR(etsim_netflow_msg_rate(n, d), 2 * third, 1);

  /* 8->9 shares no link with anyone, data or ACKs: its start re-rates just
   * itself, at line rate. */
  etsim_netflow_stats_t s0, s1;
  etsim_netflow_get_stats(n, &s0);
  uint64_t u = sendf(n, 8, 9, 1000000, 2);
  runf(n, 3);
  etsim_netflow_get_stats(n, &s1);
  assert_int_equal(s1.flows_rated - s0.flows_rated, 1);
  TU_EQ(etsim_netflow_msg_rate(n, u), 1e11);
  TU_NEAR(etsim_netflow_msg_rate(n, lng), third, 1);

  /* 3->0 runs on the reverse directions, which carry the ACKs of the
   * three flows from 0 (ACKs go first, data shares the rest), and its own
   * ACKs go 0->4 ahead of theirs.  Fixed point: x = (C - w r) / 3 for the
   * three, r = C - 3 w x, so r = C / (1 + w), x = C / (3 (1 + w)); 5-6 and
   * 6-7 leave C - x - w r = 2 C / (3 (1 + w)) to the short flows there. */
  uint64_t r = sendf(n, 3, 0, 1000000, 4);
  runf(n, 5);
  const double w = 48.0 / 1036.0, C = 1e11;
  const double rr = C / (1 + w), x = C / (3 * (1 + w)), tol = 1e-6 * C;
  TU_NEAR(etsim_netflow_msg_rate(n, r), rr, tol);
  TU_NEAR(etsim_netflow_msg_rate(n, lng), x, tol);
  TU_NEAR(etsim_netflow_msg_rate(n, a2), x, tol);
  TU_NEAR(etsim_netflow_msg_rate(n, b), 2 * x, tol);
  TU_NEAR(etsim_netflow_msg_rate(n, d), 2 * x, tol);
  runf(n, INT64_MAX);
  etsim_netflow_get_stats(n, &s1);
  assert_int_equal(s1.msgs_done, 7);
  etsim_netflow_free(n);
  etsim_netpkt_topo_free(&t);
}

/* Contention-free ring i -> i+1 on 16 hosts, 4 leaves x 2 spines: the
 * flow level's last completion is within 5 % of the packet level's. */
static void test_cross_level_ring(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_clos2(&t, 4, 4, 2, G100, G100, US), 0);
  /* Without ACK load the flow level misses the ACKs that share each host's
   * downlink with the data it receives (48 / 1036 of it): within 5 %.
   * With FLOW_ACK_LOAD it charges them, and the two agree to 0.1 %. */
  static const double tol[2] = {0.05, 0.001};
  for (int ack = 0; ack < 2; ack++) {
    etsim_netpkt_cfg_t c;
    etsim_netpkt_cfg_default(&c);
    c.flow_ack_load = ack;
    etsim_netflow_t *f = mkf(&t, &c);
    etsim_netpkt_t *p;
    etsim_error_t err = {0};
    assert_int_equal(etsim_netpkt_create(&p, &t, &c, &err), 0);
    for (uint32_t i = 0; i < 16; i++) {
      etsim_netpkt_msg_t m = {i, (i + 1) % 16, 1000000, 0, 3, 100, NULL, NULL};
      assert_int_equal(etsim_netpkt_send(p, &m, NULL, &err), 0);
      assert_int_equal(etsim_netflow_send(f, &m, NULL, &err), 0);
    }
    assert_int_equal(etsim_netpkt_run_until(p, INT64_MAX, &err), 0);
    runf(f, INT64_MAX);
    etsim_netpkt_stats_t ps;
    etsim_netflow_stats_t fs;
    etsim_netpkt_get_stats(p, &ps);
    etsim_netflow_get_stats(f, &fs);
    double rel = fabs((double)fs.last_done_ps - (double)ps.last_done_ps) / (double)ps.last_done_ps;
    print_message("ring, ACK load %d: packet %lld ps, flow %lld ps (%.4f)\n", ack,
                  (long long)ps.last_done_ps, (long long)fs.last_done_ps, rel);
    assert_int_equal(fs.msgs_done, 16);
    TU_LE(rel, tol[ack]);
    etsim_netpkt_free(p);
    etsim_netflow_free(f);
  }
  etsim_netpkt_topo_free(&t);
}

/* One 1000-byte packet on an empty path arrives after h x (t + d). */
static int64_t one_packet(const etsim_netpkt_topo_t *t, uint32_t s, uint32_t d) {
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.enable_qcn = 0;
  etsim_netpkt_t *n;
  etsim_error_t err = {0};
  assert_int_equal(etsim_netpkt_create(&n, t, &c, &err), 0);
  etsim_netpkt_msg_t m = {s, d, 1000, 0, 3, 100, NULL, NULL};
  uint64_t id;
  assert_int_equal(etsim_netpkt_send(n, &m, &id, &err), 0);
  assert_int_equal(etsim_netpkt_run_until(n, INT64_MAX, &err), 0);
  etsim_netpkt_msg_stat_t st;
  etsim_netpkt_msg_stat(n, id, &st);
  etsim_netpkt_free(n);
  return st.delivered_ps;
}

static void test_generators(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  /* k = 4 fat-tree: 16 hosts, 8 edge, 8 aggregation, 4 core switches */
  assert_int_equal(etsim_netpkt_topo_fattree(&t, 4, 2, G100, US), 0);
  assert_int_equal(t.n_nodes, 36);
  assert_int_equal(t.n_links, 48);
  const int64_t hop = 82880 + US;                   /* 1036 B at 100 Gb/s + 1 us */
  assert_int_equal(one_packet(&t, 0, 1), 2 * hop);  /* same edge */
  assert_int_equal(one_packet(&t, 0, 2), 4 * hop);  /* same pod */
  assert_int_equal(one_packet(&t, 0, 15), 6 * hop); /* across pods */
  etsim_netpkt_topo_free(&t);
  /* rail-optimised: 2 servers x 4 NPUs, NVLink 400 Gb/s, 1 spine */
  assert_int_equal(etsim_netpkt_topo_rail(&t, 2, 4, 1, G100, 4 * G100, G100, US), 0);
  assert_int_equal(t.n_nodes, 8 + 4 + 2 + 1);
  assert_int_equal(t.n_links, 16 + 4);
  const int64_t nv = 20720 + US;                   /* 1036 B at 400 Gb/s */
  assert_int_equal(one_packet(&t, 0, 1), 2 * nv);  /* same server: NVLink */
  assert_int_equal(one_packet(&t, 0, 4), 2 * hop); /* same rail */
  assert_int_equal(one_packet(&t, 0, 5), 4 * hop); /* other rail, via spine */
  etsim_netpkt_topo_free(&t);
  assert_int_equal(etsim_netpkt_topo_fattree(&t, 3, 2, G100, US), ETSIM_EINVAL);
}

/* Both levels through one table (etsim_netpkt_level_t): the same calls
 * give each level's own answers.  One 1 MB message on a 2-host star: the
 * closed form above at both levels, the stats both keep, the packet-only
 * counters (1,000 data packets and their ACKs over 2 hops: 2,000 each;
 * 0 at flow level), each level's
 * wire bytes on host 0's port (1,036,000: 1,000 packets of 1,000 + 36 B),
 * and flows_send naming file:line of a flow to a node that does not
 * exist. */
/*
 * Flow records are reused once their message is acknowledged.  Even rounds
 * are a 2-to-1 incast of 1 MB (sent first) and 2 MB: when the short flow
 * ends the long one speeds up, and its finish event for the slower rate
 * goes stale, due 40 us into the next round.  Odd rounds are one 1 MB flow,
 * which takes the long flow's record and keeps one rate, so only the
 * version that record carries on keeps the stale event from finishing it.
 * Sent round by round just before each starts, every message gets exactly
 * the times it gets when all are sent at t = 0, from two records.
 */
enum { FR_ROUNDS = 20, FR_MSGS = FR_ROUNDS / 2 * 3 };

static int64_t fr_start(int r) { return r * 280 * US + (r + 1) * 7; }

static etsim_netflow_t *fr_run_(int jit, int forget, etsim_netflow_stats_t *st, int64_t *start) {
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 3, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.flow_ack_load = 1;
  c.forget_done = forget;
  etsim_netflow_t *n = mkf(&t, &c);
  uint64_t k = 0;
  for (int r = 0; r < FR_ROUNDS; r++) {
    if (jit && r) runf(n, fr_start(r) - 1);
    if (forget && r) { /* the last round's messages are done and forgotten */
      etsim_netpkt_msg_stat_t o;
      assert_int_equal(etsim_netflow_msg_stat(n, k - 1, &o), ETSIM_ENOTFOUND);
    }
    start[k] = fr_start(r);
    assert_int_equal(sendf(n, 1, 0, 1000000, fr_start(r)), k++);
    if (r % 2) continue;
    start[k] = fr_start(r);
    assert_int_equal(sendf(n, 2, 0, 2000000, fr_start(r)), k++);
  }
  if (forget) { /* the latest message, not started: all there */
    etsim_netpkt_msg_stat_t o;
    assert_int_equal(etsim_netflow_msg_stat(n, k - 1, &o), 0);
    assert_int_equal(o.start_ps, start[k - 1]);
    assert_int_equal(o.acked_ps, -1);
  }
  runf(n, INT64_MAX);
  etsim_netflow_get_stats(n, st);
  etsim_netpkt_topo_free(&t);
  return n;
}

static etsim_netflow_t *fr_run(int jit, etsim_netflow_stats_t *st, int64_t *start) {
  return fr_run_(jit, 0, st, start);
}

/* forget_done at flow level: the same run (events, completions), every
 * acknowledged message forgotten (a message whose id still named its
 * reused record would be found, with another message's times). */
static void test_flow_forget_done(void **state) {
  (void)state;
  etsim_netflow_stats_t sa, sf;
  int64_t start[FR_MSGS];
  etsim_netflow_t *a = fr_run(1, &sa, start), *f = fr_run_(1, 1, &sf, start);
  assert_int_equal(sf.events, sa.events);
  assert_int_equal(sf.msgs_done, FR_MSGS);
  assert_int_equal(sf.last_done_ps, sa.last_done_ps);
  assert_int_equal(sf.records, sa.records);
  etsim_netpkt_msg_stat_t o;
  for (uint64_t id = 0; id < FR_MSGS; id++)
    assert_int_equal(etsim_netflow_msg_stat(f, id, &o), ETSIM_ENOTFOUND);
  assert_int_equal(etsim_netflow_msg_stat(f, FR_MSGS, &o), ETSIM_ERANGE);
  etsim_netflow_free(a);
  etsim_netflow_free(f);
}

static void test_flow_records_reused(void **state) {
  (void)state;
  etsim_netflow_stats_t sa, sj;
  int64_t start[FR_MSGS];
  etsim_netflow_t *a = fr_run(0, &sa, start), *j = fr_run(1, &sj, start);
  print_message("records: %llu at once, %llu just in time, for %llu messages\n",
                (unsigned long long)sa.records, (unsigned long long)sj.records,
                (unsigned long long)sj.msgs);
  assert_int_equal(sa.records, FR_MSGS);
  TU_LT(sj.records, 4);
  assert_int_equal(sj.msgs_done, FR_MSGS);
  assert_int_equal(sj.last_done_ps, sa.last_done_ps);
  for (uint64_t id = 0; id < FR_MSGS; id++) {
    etsim_netpkt_msg_stat_t x, y;
    assert_int_equal(etsim_netflow_msg_stat(a, id, &x), 0);
    assert_int_equal(etsim_netflow_msg_stat(j, id, &y), 0);
    assert_int_equal(y.src, x.src);
    assert_int_equal(y.sport, x.sport);
    assert_int_equal(y.bytes, y.src == 2 ? 2000000 : 1000000);
    assert_int_equal(y.start_ps, start[id]);
    assert_int_equal(y.delivered_ps, x.delivered_ps);
    assert_int_equal(y.acked_ps, x.acked_ps);
    assert_int_equal(y.standalone_ps, x.standalone_ps);
    TU_GT(y.acked_ps, y.start_ps + 80 * US); /* at most line rate */
  }
  etsim_netflow_free(a);
  etsim_netflow_free(j);
}

/*
 * The same with a cable cut while a round runs: rounds of 0->2 (1 MB) and
 * 1->3 (2 MB) across a two-leaf Clos; leaf 4's cable to spine 6 fails in
 * round 3, so flows on it move to spine 7 (new path entries) and every
 * later flow takes spine 7.  Sent round by round, the records of moved
 * flows are reused; every message gets the times it gets when all are sent
 * at t = 0 (whose future flows are moved at the cut).
 */
static etsim_netflow_t *fr_cut_run(int jit, etsim_netflow_stats_t *st) {
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_clos2(&t, 2, 2, 2, G100, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.flow_ack_load = 1;
  etsim_netflow_t *n = mkf(&t, &c);
  const uint32_t cut[2] = {4, 6};
  int64_t t_cut = fr_start(3) + 30 * US;
  etsim_error_t err = {0};
  for (int r = 0; r < FR_ROUNDS; r++) {
    if (jit && r == 4) {
      runf(n, t_cut - 1);
      TU_OK(etsim_netflow_links_down(n, cut, 1, t_cut, &err), err);
    }
    if (jit && r) runf(n, fr_start(r) - 1);
    assert_int_equal(sendf(n, 0, 2, 1000000, fr_start(r)), 2 * r);
    assert_int_equal(sendf(n, 1, 3, 2000000, fr_start(r)), 2 * r + 1);
  }
  if (!jit) {
    runf(n, t_cut - 1);
    TU_OK(etsim_netflow_links_down(n, cut, 1, t_cut, &err), err);
  }
  runf(n, INT64_MAX);
  etsim_netflow_get_stats(n, st);
  etsim_netpkt_topo_free(&t);
  return n;
}

static void test_flow_records_reused_cut(void **state) {
  (void)state;
  etsim_netflow_stats_t sa, sj;
  etsim_netflow_t *a = fr_cut_run(0, &sa), *j = fr_cut_run(1, &sj);
  int64_t fct[FR_ROUNDS];
  print_message("cut: records %llu at once, %llu just in time, for %llu messages\n",
                (unsigned long long)sa.records, (unsigned long long)sj.records,
                (unsigned long long)sj.msgs);
  assert_int_equal(sa.records, 2 * FR_ROUNDS);
  TU_LT(sj.records, 5);
  assert_int_equal(sj.msgs_done, 2 * FR_ROUNDS);
  assert_int_equal(sj.last_done_ps, sa.last_done_ps);
  for (uint64_t id = 0; id < 2 * FR_ROUNDS; id++) {
    etsim_netpkt_msg_stat_t x, y;
    assert_int_equal(etsim_netflow_msg_stat(a, id, &x), 0);
    assert_int_equal(etsim_netflow_msg_stat(j, id, &y), 0);
    assert_int_equal(y.sport, x.sport);
    assert_int_equal(y.start_ps, fr_start((int)id / 2));
    assert_int_equal(y.delivered_ps, x.delivered_ps);
    assert_int_equal(y.acked_ps, x.acked_ps);
    TU_GT(y.acked_ps, y.start_ps);
    if (id % 2) fct[id / 2] = y.acked_ps - y.start_ps;
  }
  /* the cut moved round 3's flows while they ran; later rounds, all on
   * spine 7, take as long as the ones before */
  assert_true(fct[3] != fct[2]);
  assert_int_equal(fct[FR_ROUNDS - 1], fct[2]);
  etsim_netflow_free(a);
  etsim_netflow_free(j);
}

static void test_level_table(void **state) {
  (void)state;
  assert_null(etsim_netpkt_level_find("packets"));
  assert_null(etsim_netpkt_level_find(NULL));
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, G100, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  static const char *names[] = {"packet", "flow"};
  for (int k = 0; k < 2; k++) {
    const etsim_netpkt_level_t *lv = etsim_netpkt_level_find(names[k]);
    assert_non_null(lv);
    assert_string_equal(lv->name, names[k]);
    TU_EQ(lv->queues, k == 0);
    void *net = NULL;
    etsim_error_t err = {0};
    int rc = lv->create(&net, &t, &c, &err);
    TU_OK(rc, err);
    lv->set_outputs(net, NULL, NULL, NULL);
    etsim_netpkt_msg_t m = {0, 1, 1000000, 0, 3, 100, NULL, NULL};
    uint64_t id = 9;
    assert_int_equal(lv->send(net, &m, &id, &err), 0);
    TU_EQ(id, 0);
    TU_EQ(lv->next_time(net), 0);
    assert_int_equal(lv->run_until(net, 10, &err), 0);
    TU_EQ(lv->msg_rate(net, id), 1e11);
    assert_int_equal(lv->run_until(net, INT64_MAX, &err), 0);
    lv->finish(net);
    TU_EQ(lv->next_time(net), INT64_MAX);
    etsim_netpkt_msg_stat_t s;
    assert_int_equal(lv->msg_stat(net, id, &s), 0);
    TU_EQ(s.delivered_ps, 1000 * 82880 + 82880 + 2 * US);
    TU_EQ(s.acked_ps, s.delivered_ps + 2 * (3840 + US));
    TU_EQ(lv->now(net), s.acked_ps);
    etsim_netpkt_stats_t st;
    lv->get_stats(net, &st);
    TU_EQ(st.msgs, 1);
    TU_EQ(st.msgs_done, 1);
    TU_EQ(st.first_start_ps, 0);
    TU_EQ(st.last_done_ps, s.acked_ps);
    TU_EQ(st.data_pkts, (k == 0 ? 2000 : 0)); /* packet hops: 1,000 packets x 2 */
    TU_EQ(st.ack_pkts, (k == 0 ? 2000 : 0));
    /* at least an arrival per packet hop (packet), a start and a finish (flow) */
    TU_GE(st.events, (k == 0 ? 4000u : 2u));
    TU_EQ(lv->port_count(net, 0), 1);
    TU_EQ(lv->port_count(net, 2), 2);
    etsim_netpkt_port_stat_t ps;
    assert_int_equal(lv->port_stat(net, 0, 1, &ps), 0);
    TU_EQ(ps.peer, 2);
    TU_EQ(ps.tx_bytes, 1036000);
    assert_int_equal(lv->port_stat(net, 0, 2, &ps), ETSIM_ERANGE);
    int64_t t1 = lv->now(net);
    const etsim_netpkt_flow_t bad[2] = {{0, 1, 3, 100, 1000, t1, 7}, {0, 5, 3, 100, 1000, t1, 8}};
    rc = etsim_netpkt_flows_send(lv, net, &t, bad, 2, "x.txt", &err);
    TU_EQ(rc, ETSIM_EINVAL);
    assert_string_equal(err.msg, "x.txt:8: flow 1: node 5 does not exist (3 nodes)");
    lv->get_stats(net, &st);
    TU_EQ(st.msgs, 2); /* the first was sent */
    lv->destroy(net);
  }
  etsim_netpkt_topo_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_flow_line_rate), cmocka_unit_test(test_stop_instant),
      cmocka_unit_test(test_n_to_one_fair),      cmocka_unit_test(test_parking_lot),
      cmocka_unit_test(test_cross_level_ring),   cmocka_unit_test(test_generators),
      cmocka_unit_test(test_long_route),         cmocka_unit_test(test_port_bytes),
      cmocka_unit_test(test_level_table),        cmocka_unit_test(test_flow_records_reused),
      cmocka_unit_test(test_flow_forget_done),   cmocka_unit_test(test_flow_records_reused_cut),
  };
  return TU_RUN(tests, NULL, NULL);
}
