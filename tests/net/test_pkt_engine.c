/*
 * test_pkt_engine.c — the packet-level network against closed forms and the
 * ns-3 reference numbers quoted in issue 9: one flow at line rate (exact
 * picoseconds), FCT = serialisation + pipeline fill + propagation on an
 * unloaded path, N-to-1 incast with PFC only (no loss, >= 99 % utilisation,
 * fair finish), pause propagation hop by hop and head-of-line blocking of a
 * victim flow, HPCC / DCTCP / DCQCN steady states, determinism, and stall
 * and PFC-deadlock reports instead of hangs.
 */
#include "test_util.h"

#include "etsim/netpkt.h"
#include "net/pkt_int.h"

#include <math.h>

static const int64_t US = 1000000; /* ps */

static etsim_netpkt_t *mk(const etsim_netpkt_topo_t *t, const etsim_netpkt_cfg_t *c) {
  etsim_netpkt_t *n = NULL;
  etsim_error_t err = {0};
  int rc = etsim_netpkt_create(&n, t, c, &err);
  TU_OK(rc, err);
  return n;
}

static uint64_t snd(etsim_netpkt_t *n, uint32_t s, uint32_t d, uint64_t bytes, int64_t start) {
  etsim_netpkt_msg_t m = {s, d, bytes, start, 3, 100, NULL, NULL};
  uint64_t id;
  etsim_error_t err = {0};
  int rc = etsim_netpkt_send(n, &m, &id, &err);
  TU_OK(rc, err);
  return id;
}

static void run(etsim_netpkt_t *n) {
  etsim_error_t err = {0};
  int rc = etsim_netpkt_run_until(n, INT64_MAX, &err);
  TU_OK(rc, err);
}

static etsim_netpkt_msg_stat_t stat_of(etsim_netpkt_t *n, uint64_t id) {
  etsim_netpkt_msg_stat_t s;
  assert_int_equal(etsim_netpkt_msg_stat(n, id, &s), 0);
  return s;
}

static void cfg_pfc_only(etsim_netpkt_cfg_t *c) {
  etsim_netpkt_cfg_default(c);
  c->cc_mode = ETSIM_NETPKT_CC_NONE;
}

/* One 1 MB flow host - switch - host, 100 Gb/s, 1 us links: every data
 * packet is 1036 B (82.88 ns), the ACK 48 B (3.84 ns). */
static void test_single_flow_exact(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t id = snd(n, 0, 1, 1000000, 0);
  run(n);
  etsim_netpkt_msg_stat_t s = stat_of(n, id);
  const int64_t tp = 82880, ta = 3840, d = US;
  int64_t deliv = 1000 * tp + tp + 2 * d; /* n pkts + pipeline + propagation */
  assert_int_equal(s.delivered_ps, deliv);
  assert_int_equal(s.acked_ps, deliv + 2 * (ta + d));
  /* ns-3's standalone FCT: base RTT + (size + 48 B per packet) / rate */
  assert_int_equal(s.standalone_ps, (4160 + 83840) * 1000ll);
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  assert_int_equal(st.data_pkts, 1000 * 2);
  assert_int_equal(st.pauses, 0);
  assert_int_equal(st.drops_buffer, 0);
  etsim_netpkt_free(n);

  /* Rounded to whole ns as ns-3 keeps time: the reference 87,091 ns. */
  c.tx_round_ps = 1000;
  n = mk(&t, &c);
  id = snd(n, 0, 1, 1000000, 0);
  run(n);
  assert_int_equal(stat_of(n, id).acked_ps, 87091000);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* SIMULATOR_STOP_TIME as ns-3's Simulator::Stop: every event before it
 * runs, and at that very instant only those queued at set-up.  The flow of
 * test_single_flow_exact delivers its last byte at deliv exactly: a stop
 * there leaves it undelivered, one picosecond later delivers it; a
 * queue-length sample due at the stop instant was queued at set-up and is
 * taken. */
static void test_stop_instant(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  const int64_t tp = 82880, d = US, deliv = 1000 * tp + tp + 2 * d;
  for (int k = 0; k < 2; k++) {
    c.stop_ps = deliv + k;
    etsim_netpkt_t *n = mk(&t, &c);
    uint64_t id = snd(n, 0, 1, 1000000, 0);
    run(n);
    etsim_netpkt_msg_stat_t s = stat_of(n, id);
    assert_int_equal(s.delivered_ps, k ? deliv : -1);
    assert_int_equal(s.acked_ps, -1);
    if (k) assert_int_equal(etsim_netpkt_now(n), deliv);
    else assert_true(etsim_netpkt_now(n) < deliv);
    assert_int_equal(etsim_netpkt_next_time(n), INT64_MAX); /* stopped */
    etsim_netpkt_free(n);
  }
  /* no traffic; samples every us from 5 us, the stop at 5 us: one event */
  c.qlen_mon_start_ns = 5000;
  c.qlen_mon_end_ns = 20000;
  c.qlen_interval_ns = 1000;
  c.stop_ps = 5 * US;
  etsim_netpkt_t *n = mk(&t, &c);
  assert_int_equal(etsim_netpkt_next_time(n), 5 * US);
  run(n);
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  assert_int_equal(st.events, 1);
  assert_int_equal(etsim_netpkt_now(n), 5 * US);
  assert_int_equal(etsim_netpkt_next_time(n), INT64_MAX); /* the next sample, at 6 us */
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* ACK every L2_ACK_INTERVAL bytes, as ns-3's receiver: its milestone moves
 * one interval per ACK.  1 MB in 1000-byte packets over one switch (two
 * hops for every packet): interval 1 acks each of the 1,000 packets;
 * 4,000 (chunks larger than the flow) acks every fourth, 250; with 4,000-byte
 * chunks as well an ACK closes each chunk, the same 250; interval 10,000
 * with 4,000-byte chunks acks at each chunk end and at each milestone
 * (250 + 100 - the 50 multiples of 20,000 they share = 300), without chunks
 * every tenth packet (100).  Without a window the data never waits for them. */
static void test_ack_interval(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, 100000000000ull, US), 0);
  static const struct {
    uint32_t interval, chunk;
    uint64_t acks;
  } k[] = {{1, 4000, 1000},
           {4000, 2000000, 250},
           {4000, 4000, 250},
           {10000, 4000, 300},
           {10000, 2000000, 100}};
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    etsim_netpkt_cfg_t c;
    cfg_pfc_only(&c);
    c.l2_ack_interval = k[i].interval;
    c.l2_chunk_size = k[i].chunk;
    c.has_win = 0; /* fewer ACKs would otherwise hold the window back */
    etsim_netpkt_t *n = mk(&t, &c);
    uint64_t id = snd(n, 0, 1, 1000000, 0);
    run(n);
    etsim_netpkt_stats_t st;
    etsim_netpkt_get_stats(n, &st);
    assert_int_equal(st.data_pkts, 1000 * 2);
    assert_int_equal(st.ack_pkts, k[i].acks * 2);
    assert_int_equal(stat_of(n, id).delivered_ps, 1001 * 82880 + 2 * US);
    etsim_netpkt_free(n);
  }
  etsim_netpkt_topo_free(&t);
}

/* ACKs queue with data at switches (ns-3: the switches' AckHighPrio is never
 * set; ACK_HIGH_PRIO only chooses which pause blocks a NIC's ACK queue).
 * Star of 4 hosts, 100 Gb/s, 1 us, exact ps, no window: hosts 1 and 3 send
 * to host 0 at line rate from t = 0, so the switch port to host 0 gets two
 * packets every 82.88 ns (at k tx + tx + d) and sends one: a queue grows.
 * Host 0 sends one 1000-byte packet to host 2 at t = 0; its ACK reaches the
 * switch at 2 (tx + d) + ta + d = 3,169,600 ps, after the data of k = 0..25
 * (52 packets).  In first-in-first-out order it leaves when those are sent,
 * at t0 + 52 tx (t0 = tx + d, the first start), and reaches host 0 ta + d
 * later: 6,396,480 ps.  Sent first (strict priority) it would wait only for
 * the packet on the wire, to 3,237,760: 4,241,600 ps. */
static void test_ack_fifo_at_switch(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 4, 100000000000ull, US), 0);
  const int64_t tp = 82880, ta = 3840, d = US;
  for (int high = 0; high <= 1; high++) {
    etsim_netpkt_cfg_t c;
    cfg_pfc_only(&c);
    c.has_win = 0;
    c.ack_high_prio = high; /* a NIC setting: the switch order is the same */
    etsim_netpkt_t *n = mk(&t, &c);
    snd(n, 1, 0, 200000, 0);
    snd(n, 3, 0, 200000, 0);
    uint64_t id = snd(n, 0, 2, 1000, 0);
    run(n);
    int64_t t0 = tp + d, ack_at_switch = 2 * (tp + d) + ta + d;
    assert_int_equal(ack_at_switch, 3169600);
    assert_int_equal((ack_at_switch - t0) / tp, 25); /* data of k = 0..25 ahead */
    assert_int_equal(stat_of(n, id).acked_ps, t0 + 52 * tp + ta + d);
    assert_int_equal(stat_of(n, id).acked_ps, 6396480);
    etsim_netpkt_free(n);
  }
  etsim_netpkt_topo_free(&t);
}

/* Unloaded 4-link path in a two-tier Clos: FCT = n t + 3 t + 4 d (+ ACK). */
static void test_clos_path_fct(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  /* 2 leaves x 2 hosts, 2 spines, 100 Gb/s everywhere, 500 ns links */
  assert_int_equal(etsim_netpkt_topo_clos2(&t, 2, 2, 2, 100000000000ull, 100000000000ull, US / 2),
                   0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t id = snd(n, 0, 3, 250000, 5 * US); /* host 0 (leaf 0) -> 3 (leaf 1) */
  run(n);
  etsim_netpkt_msg_stat_t s = stat_of(n, id);
  const int64_t tp = 82880, ta = 3840, d = US / 2;
  assert_int_equal(s.delivered_ps - s.start_ps, 250 * tp + 3 * tp + 4 * d);
  assert_int_equal(s.acked_ps - s.delivered_ps, 4 * (ta + d));
  /* A last packet shorter than the payload: 1500 B = 1000 + 500. */
  uint64_t id2 = snd(n, 1, 2, 1500, etsim_netpkt_now(n) + US);
  run(n);
  s = stat_of(n, id2);
  const int64_t t1 = 82880, t2 = (536 * 8000000000000ll + 50000000000ll) / 100000000000ll;
  /* the short packet waits behind the full one at every store-and-forward
   * hop: 4 t1 + t2 + 4 d */
  assert_int_equal(t2, 42880);
  assert_int_equal(s.delivered_ps - s.start_ps, 4 * t1 + t2 + 4 * d);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* Two cables between switch 2 and host 1 (ports 2 and 3 of the switch):
 * the last hop takes the switch's first live one, as a scan of its ports
 * finds it (pkt_route.c looks it up from the host's side), so the data
 * leaves by port 2 only and the flow's FCT is that of one path. */
static void test_last_hop_parallel(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  etsim_error_t err = {0};
  const uint64_t G100 = 100000000000ull;
  assert_int_equal(etsim_netpkt_topo_init(&t, 3), 0);
  t.is_switch[2] = 1;
  TU_OK(etsim_netpkt_topo_add_link(&t, 0, 2, G100, US, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(&t, 1, 2, G100, US, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(&t, 2, 1, G100, US, 0, &err), err);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  etsim_netpkt_t *n = mk(&t, &c);
  assert_int_equal(etsim_netpkt_port_count(n, 2), 3);
  uint64_t id = snd(n, 0, 1, 250000, 0);
  run(n);
  const int64_t tp = 82880;
  assert_int_equal(stat_of(n, id).delivered_ps, 250 * tp + tp + 2 * US);
  etsim_netpkt_port_stat_t a, b;
  assert_int_equal(etsim_netpkt_port_stat(n, 2, 2, &a), 0);
  assert_int_equal(etsim_netpkt_port_stat(n, 2, 3, &b), 0);
  assert_int_equal(a.peer, 1);
  assert_int_equal(b.peer, 1);
  assert_int_equal(a.tx_bytes, 250 * 1036);
  assert_int_equal(b.tx_bytes, 0);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* A chain host - S1 - ... - Sk - host: FCT = n t + (k) t + (k + 1) d, ACK
 * (k + 1)(t_ack + d).  Flows keep their route from send time, of any length
 * (until December 2026 routes over 64 links fell back to hashing at every
 * switch, and the flow level found no route). */
static void test_long_chain_fct(void **state) {
  (void)state;
  static const uint32_t ks[] = {3, 62, 63, 70, 300};
  for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
    uint32_t k = ks[i];
    etsim_netpkt_topo_t t;
    assert_int_equal(etsim_netpkt_topo_init(&t, k + 2), 0);
    etsim_error_t err = {0};
    const int64_t d = US / 10;
    for (uint32_t s = 2; s < k + 2; s++) {
      t.is_switch[s] = 1;
      assert_int_equal(
          etsim_netpkt_topo_add_link(&t, s == 2 ? 0 : s - 1, s, 100000000000ull, d, 0, &err), 0);
    }
    assert_int_equal(etsim_netpkt_topo_add_link(&t, k + 1, 1, 100000000000ull, d, 0, &err), 0);
    etsim_netpkt_cfg_t c;
    cfg_pfc_only(&c);
    etsim_netpkt_t *n = mk(&t, &c);
    uint64_t id = snd(n, 0, 1, 100000, 0);
    run(n);
    etsim_netpkt_msg_stat_t s = stat_of(n, id);
    const int64_t tp = 82880, ta = 3840;
    assert_int_equal(s.delivered_ps, 100 * tp + k * tp + (k + 1) * d);
    assert_int_equal(s.acked_ps - s.delivered_ps, (k + 1) * (ta + d));
    etsim_netpkt_free(n);
    etsim_netpkt_topo_free(&t);
  }
}

/* A k = 32 fat-tree (8,192 hosts, 1,280 switches, 24,576 links): set-up
 * is linear in links (no table per host pair: it took 2.6 GB and 39 s), a
 * flow across pods crosses 6 links, and ns-3's base RTT for the pair is 2 x
 * 6 us + 6 x 80 ns (one 1000-byte payload per link), its window that times
 * 100 Gb/s, and the standalone FCT rtt + (size + 48 B per packet) / rate. */
static void test_fattree_k32(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  etsim_error_t err = {0};
  assert_int_equal(etsim_netpkt_topo_spec(&t, "fattree:k=32", &err), 0);
  assert_int_equal(t.n_nodes, 8192 + 1280);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t far = snd(n, 0, 8191, 10000, 0), near = snd(n, 2, 3, 10000, 0);
  run(n);
  const int64_t tp = 82880, d = US;
  /* unloaded: 10 packets, pipeline of 6 (2) links, 6 (2) delays, ACK back */
  etsim_netpkt_msg_stat_t a = stat_of(n, far), b = stat_of(n, near);
  assert_int_equal(a.base_rtt_ps, 12480000);
  assert_int_equal(a.win_bytes, 156000); /* 12,480 ns x 100 Gb/s */
  assert_int_equal(b.base_rtt_ps, 4160000);
  assert_int_equal(b.win_bytes, 52000);
  assert_int_equal(a.delivered_ps, 10 * tp + 5 * tp + 6 * d);
  assert_int_equal(a.standalone_ps, (12000 + 480 + (10000 + 10 * 48) * 8 / 100) * 1000ll);
  assert_int_equal(b.delivered_ps, 10 * tp + tp + 2 * d);
  assert_int_equal(b.standalone_ps, (4000 + 160 + (10000 + 10 * 48) * 8 / 100) * 1000ll);
  etsim_netpkt_free(n);
  /* GLOBAL_T: every flow takes the largest base RTT and BDP of all pairs
   * (the standalone FCT stays the pair's, as in ns-3) */
  c.global_t = 1;
  n = mk(&t, &c);
  near = snd(n, 2, 3, 10000, 0);
  run(n);
  b = stat_of(n, near);
  assert_int_equal(b.base_rtt_ps, 12480000);
  assert_int_equal(b.win_bytes, 156000);
  assert_int_equal(b.standalone_ps, (4000 + 160 + 10480 * 8 / 100) * 1000ll);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);

  /* A star with one slow host: hosts 0 and 1 on 1 us links, host 2 on a
   * 10 us link.  The largest pair is host 2 with another host: 2 x 11 us
   * + 2 x 80 ns = 22,160 ns and 277,000 bytes at 100 Gb/s (not host 2 with
   * itself, whose 2 x 20 us ns-3 counts as 0). */
  assert_int_equal(etsim_netpkt_topo_init(&t, 4), 0);
  t.is_switch[3] = 1;
  for (uint32_t h = 0; h < 3; h++)
    assert_int_equal(
        etsim_netpkt_topo_add_link(&t, h, 3, 100000000000ull, h == 2 ? 10 * US : US, 0, &err), 0);
  n = mk(&t, &c);
  near = snd(n, 0, 1, 10000, 0);
  run(n);
  assert_int_equal(stat_of(n, near).base_rtt_ps, 22160000);
  assert_int_equal(stat_of(n, near).win_bytes, 277000);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* N-to-1 incast with PFC only and no window.  With the reference 32 MB
 * buffer nothing pauses and all flows finish within 1 % of each other; with
 * a 1 MB buffer PFC must act: still no drop, >= 99 % of the bottleneck and
 * a Jain index of the per-flow throughputs >= 0.99. */
static void incast_run(uint32_t buffer_mb, double *util, double *spread, double *jain,
                       etsim_netpkt_stats_t *st) {
  const uint32_t N = 8;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, N + 1, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  c.has_win = 0;
  c.buffer_mb = buffer_mb;
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t ids[8];
  for (uint32_t i = 0; i < N; i++) ids[i] = snd(n, i + 1, 0, 1000000, 0);
  run(n);
  etsim_netpkt_get_stats(n, st);
  int64_t lo = INT64_MAX, hi = 0;
  double sx = 0, sxx = 0;
  for (uint32_t i = 0; i < N; i++) {
    etsim_netpkt_msg_stat_t s = stat_of(n, ids[i]);
    lo = s.delivered_ps < lo ? s.delivered_ps : lo;
    hi = s.delivered_ps > hi ? s.delivered_ps : hi;
    double x = 1.0 / (double)(s.delivered_ps - s.start_ps);
    sx += x;
    sxx += x * x;
  }
  /* wire bytes into host 0 over the time its port was needed */
  double wire_ps = N * (1000000.0 + 1000 * 36) * 8 / 100e9 * 1e12;
  *util = wire_ps / (double)(hi - 2 * US);
  *spread = (double)(hi - lo) / (double)hi;
  *jain = sx * sx / (N * sxx);
  /* the bottleneck port sent exactly the data and nothing else */
  etsim_netpkt_port_stat_t ps;
  assert_int_equal(etsim_netpkt_port_stat(n, N + 1, 1, &ps), 0);
  assert_int_equal(ps.peer, 0);
  assert_int_equal(ps.tx_bytes, (uint64_t)N * (1000000 + 1000 * 36));
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

static void test_incast_pfc_lossless(void **state) {
  (void)state;
  double util, spread, jain;
  etsim_netpkt_stats_t st;
  incast_run(32, &util, &spread, &jain, &st);
  print_message("incast 32 MB: util %.4f spread %.4f jain %.5f pauses %llu\n", util, spread, jain,
                (unsigned long long)st.pauses);
  assert_int_equal(st.drops_buffer, 0);
  assert_int_equal(st.msgs_done, 8);
  TU_GE(util, 0.99);
  TU_LT(spread, 0.01);
  incast_run(1, &util, &spread, &jain, &st);
  print_message(
      "incast 1 MB: util %.4f spread %.4f jain %.5f pauses %llu "
      "peak %llu\n",
      util, spread, jain, (unsigned long long)st.pauses,
      (unsigned long long)st.max_switch_buffer_bytes);
  assert_int_equal(st.drops_buffer, 0);
  TU_GT(st.pauses, 0);
  assert_int_equal(st.pauses, st.resumes);
  /* every pause and resume frame sent (counted by type at transmit) was
   * received: no loss, no failed link */
  assert_int_equal(st.pfc_frames, st.pauses + st.resumes);
  assert_int_equal(st.msgs_done, 8);
  TU_GE(util, 0.99);
  TU_GE(jain, 0.99);
}

/*
 * Hosts A=0, B=1, C=2 on switch S1=4; S1 - S2=5; R=3 on S2 at 50 Gb/s
 * (2:1 at S2).  A->R and B->R overload S2's port to R: S2 pauses S1 first,
 * then S1 pauses the hosts (one hop at a time).  A->C never crosses a
 * congested port but shares A's paused NIC: it loses throughput (HOL).
 */
static void test_pfc_propagation_and_hol(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_init(&t, 6), 0);
  t.is_switch[4] = t.is_switch[5] = 1;
  const uint64_t G100 = 100000000000ull;
  assert_int_equal(etsim_netpkt_topo_add_link(&t, 0, 4, G100, US, 0, NULL), 0);
  assert_int_equal(etsim_netpkt_topo_add_link(&t, 1, 4, G100, US, 0, NULL), 0);
  assert_int_equal(etsim_netpkt_topo_add_link(&t, 2, 4, G100, US, 0, NULL), 0);
  assert_int_equal(etsim_netpkt_topo_add_link(&t, 4, 5, G100, US, 0, NULL), 0);
  assert_int_equal(etsim_netpkt_topo_add_link(&t, 3, 5, G100 / 2, US, 0, NULL), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  c.has_win = 0;
  c.buffer_mb = 1;
  c.n_ecn = 1;
  c.ecn_rate_bps[1] = G100 / 2;
  c.n_ecn = 2;
  c.kmin_kb[1] = 200;
  c.kmax_kb[1] = 800;
  c.pmax[1] = 0.2;
  c.ecn_rate_bps[0] = G100;
  c.kmin_kb[0] = 400;
  c.kmax_kb[0] = 1600;
  c.pmax[0] = 0.2;
  c.enable_qcn = 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *pfc = open_memstream(&buf, &len);
  etsim_netpkt_t *n = mk(&t, &c);
  etsim_netpkt_set_outputs(n, NULL, pfc, NULL);
  snd(n, 0, 3, 4000000, 0);
  snd(n, 1, 3, 4000000, 0);
  uint64_t victim = snd(n, 0, 2, 2000000, 0);
  run(n);
  fclose(pfc);
  /* first pause received by S1 (node 5) and by a host (0 or 1) */
  int64_t t_s1 = -1, t_host = -1;
  long s1_pauses = 0, host_pauses = 0;
  char *line = buf;
  while (line && *line) {
    long long tm;
    unsigned node, type, ifx, what;
    assert_int_equal(sscanf(line, "%lld %u %u %u %u", &tm, &node, &type, &ifx, &what), 5);
    assert_int_equal(type, node >= 4 ? 1u : 0u);
    if (what == 1 && node == 4) {
      assert_int_equal(ifx, 4); /* S1's 4th link faces S2 */
      s1_pauses++;
      if (t_s1 < 0) t_s1 = tm;
    }
    if (what == 1 && node <= 1) {
      host_pauses++;
      if (t_host < 0) t_host = tm;
    }
    line = strchr(line, '\n');
    line = line ? line + 1 : NULL;
  }
  free(buf);
  print_message("pfc: S1 paused first at %lld ns (%ld), hosts at %lld ns (%ld)\n", (long long)t_s1,
                s1_pauses, (long long)t_host, host_pauses);
  TU_GT(t_s1, 0);
  TU_GT(t_host, 0);
  TU_LT(t_s1, t_host);
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  assert_int_equal(st.drops_buffer, 0);
  /* victim: with A's NIC shared round-robin it would get 50 Gb/s */
  etsim_netpkt_msg_stat_t s = stat_of(n, victim);
  double gbps = 2000000.0 * 8 / ((double)(s.delivered_ps - s.start_ps) * 1e-12) / 1e9;
  print_message("pfc: victim goodput %.2f Gb/s\n", gbps);
  TU_LT(gbps, 0.8 * 50);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* Sample the bottleneck (switch port 1 of a star, towards host 0) every
 * `step` between t0 and t1: utilisation and median queue. */
static void sample(etsim_netpkt_t *n, uint32_t sw, int64_t t0, int64_t t1, int64_t step,
                   double *util, double *qmed, double *qmax) {
  etsim_error_t err = {0};
  assert_int_equal(etsim_netpkt_run_until(n, t0, &err), 0);
  etsim_netpkt_port_stat_t a, b;
  assert_int_equal(etsim_netpkt_port_stat(n, sw, 1, &a), 0);
  size_t k = 0, cap = (size_t)((t1 - t0) / step) + 2;
  double *q = calloc(cap, sizeof *q);
  for (int64_t t = t0; t <= t1 && k < cap; t += step) {
    assert_int_equal(etsim_netpkt_run_until(n, t, &err), 0);
    etsim_netpkt_port_stat_t p;
    etsim_netpkt_port_stat(n, sw, 1, &p);
    q[k++] = (double)p.qbytes;
  }
  assert_int_equal(etsim_netpkt_port_stat(n, sw, 1, &b), 0);
  *util = (double)(b.tx_bytes - a.tx_bytes) * 8 / ((double)(t1 - t0) * 1e-12) / (double)a.rate_bps;
  for (size_t i = 1; i < k; i++) /* insertion sort, k is small */
    for (size_t j = i; j > 0 && q[j] < q[j - 1]; j--) {
      double x = q[j];
      q[j] = q[j - 1];
      q[j - 1] = x;
    }
  *qmed = q[k / 2];
  *qmax = q[k - 1];
  free(q);
}

/* HPCC: 4 long flows into one port settle near 95 % with an almost empty
 * queue (a few MTU). */
static void test_hpcc_steady_state(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 5, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.cc_mode = ETSIM_NETPKT_CC_HPCC;
  c.rate_ai_bps = 400000000; /* run.py: 10 b / 25 Mb/s at 100 Gb/s */
  etsim_netpkt_t *n = mk(&t, &c);
  for (uint32_t i = 1; i <= 4; i++) snd(n, i, 0, 50000000, 0);
  double u, qm, qx;
  sample(n, 5, 100 * US, 400 * US, US, &u, &qm, &qx);
  print_message("hpcc: utilisation %.4f, queue median %.0f B, max %.0f B\n", u, qm, qx);
  TU_LE(fabs(u - 0.95), 0.02);
  TU_LE(qm, 5 * 1078);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* DCTCP with Kmin = Kmax = K = 300 KB (30 KB x 100/10), Pmax 1, BDP
 * windows: 16 flows would hold ~780 KB of queue without CC; DCTCP keeps it
 * around K at full utilisation. */
static void test_dctcp_queue_near_k(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 17, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.cc_mode = ETSIM_NETPKT_CC_DCTCP;
  c.ewma_gain = 1.0 / 16;
  c.dctcp_rate_ai_bps = 615000000;
  c.n_ecn = 1;
  c.ecn_rate_bps[0] = 100000000000ull;
  c.kmin_kb[0] = c.kmax_kb[0] = 300;
  c.pmax[0] = 1;
  etsim_netpkt_t *n = mk(&t, &c);
  for (uint32_t i = 1; i <= 16; i++) snd(n, i, 0, 50000000, 0);
  double u, qm, qx;
  sample(n, 17, 300 * US, 1000 * US, US, &u, &qm, &qx);
  print_message("dctcp: utilisation %.4f, queue median %.0f B, max %.0f B\n", u, qm, qx);
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  print_message("dctcp: %llu marks\n", (unsigned long long)st.ecn_marks);
  TU_GT(st.ecn_marks, 0);
  TU_GE(u, 0.99);
  TU_GE(qm, 0.5 * 300000);
  TU_LE(qm, 1.5 * 300000);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* DCQCN (run.py parameters, no window): two flows converge to fair share. */
static void test_dcqcn_two_flows_fair(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 3, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.cc_mode = ETSIM_NETPKT_CC_DCQCN;
  c.has_win = 0;
  c.rp_timer_us = 300;
  c.rate_ai_bps = 20000000;
  c.rate_hai_bps = 200000000;
  c.min_rate_bps = 1000000000;
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t a = snd(n, 1, 0, 200000000, 0);
  uint64_t b = snd(n, 2, 0, 200000000, 0);
  etsim_error_t err = {0};
  double ra = 0, rb = 0;
  int k = 0;
  for (int64_t tt = 2000 * US; tt <= 4000 * US; tt += 20 * US, k++) {
    assert_int_equal(etsim_netpkt_run_until(n, tt, &err), 0);
    ra += (double)etsim_netpkt_msg_rate(n, a);
    rb += (double)etsim_netpkt_msg_rate(n, b);
  }
  ra /= k;
  rb /= k;
  print_message("dcqcn: mean rates %.2f and %.2f Gb/s\n", ra / 1e9, rb / 1e9);
  TU_LT(fabs(ra - rb) / (ra + rb), 0.05);
  TU_GT(ra + rb, 90e9);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* Same seed, same FCT bytes; ECN draws depend on the seed. */
static char *incast_fct(uint64_t seed, etsim_netpkt_stats_t *st) {
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 9, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.cc_mode = ETSIM_NETPKT_CC_DCQCN;
  c.has_win = 0;
  c.seed = seed;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  etsim_netpkt_t *n = mk(&t, &c);
  etsim_netpkt_set_outputs(n, f, NULL, NULL);
  for (uint32_t i = 1; i <= 8; i++) snd(n, i, 0, 300000, (int64_t)i * 1000);
  run(n);
  etsim_netpkt_get_stats(n, st);
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
  fclose(f);
  return buf;
}

static void test_determinism(void **state) {
  (void)state;
  etsim_netpkt_stats_t s1, s2, s3;
  char *a = incast_fct(7, &s1), *b = incast_fct(7, &s2), *c = incast_fct(8, &s3);
  assert_string_equal(a, b);
  assert_memory_equal(&s1, &s2, sizeof s1);
  assert_int_equal(s1.msgs_done, 8);
  TU_GT(s1.ecn_marks, 0);
  /* Another seed changes the FCTs or at least the marks. */
  if (!strcmp(a, c)) TU_NE(s1.ecn_marks, s3.ecn_marks);
  free(a);
  free(b);
  free(c);
}

/* Lossy link, no retransmission timeout (as ns-3): go-back-N recovers
 * losses in the middle, and a run that can no longer progress is reported
 * (ETSIM_EDEADLOCK with the flow) instead of hanging. */
static void test_loss_recovery_and_stall(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 2, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  c.error_rate_per_link = 0.001;
  c.nack_interval_us = 5;
  etsim_netpkt_t *n = mk(&t, &c);
  uint64_t id = snd(n, 0, 1, 500000, 0);
  run(n);
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(n, &st);
  print_message("loss: %llu drops, done %llu\n", (unsigned long long)st.drops_error,
                (unsigned long long)st.msgs_done);
  TU_GT(st.drops_error, 0);
  assert_int_equal(stat_of(n, id).bytes, 500000);
  etsim_netpkt_free(n);

  /* every 2nd packet lost: the tail is lost sooner or later */
  c.error_rate_per_link = 0.5;
  c.stall_ps = 200 * US;
  n = mk(&t, &c);
  snd(n, 0, 1, 100000, 0);
  etsim_error_t err = {0};
  int rc = etsim_netpkt_run_until(n, INT64_MAX, &err);
  print_message("stall: %s\n", err.msg);
  assert_int_equal(rc, ETSIM_EDEADLOCK);
  TU_CONTAINS(err.msg, "no progress");
  TU_CONTAINS(err.msg, "flow 0 (0 -> 1)");
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/*
 * Queue-pair records are reused once their message is done: rounds of a
 * 2-to-1 incast under DCQCN (ECN marks, CNPs and rate timers that outlive
 * their flows), each round's messages sent just before it starts, give
 * every message exactly the times they get when all are sent at t = 0 (no
 * record can be reused then), from a handful of records.  Start times keep
 * clear of each other's event instants (odd picoseconds) so the two runs'
 * different event numbering cannot reorder a tie.  After a loss nothing is
 * reused: a finished message may still have a resent copy on the wire.
 */
enum { RR_ROUNDS = 40 };

static int64_t rr_start(int r) { return r * 80 * US + (r + 1) * 7; }

/* Times of each message as its done callback reports them (forget_done
 * runs, whose statistics go with their records). */
typedef struct {
  int64_t delivered[2 * RR_ROUNDS], acked[2 * RR_ROUNDS];
} rr_times_t;

static void rr_done(void *ctx, uint64_t id, int what, int64_t t_ps) {
  rr_times_t *x = ctx;
  assert_true(id < 2 * RR_ROUNDS);
  if (what == ETSIM_NETPKT_DELIVERED) x->delivered[id] = t_ps;
  else x->acked[id] = t_ps;
}

static etsim_netpkt_t *rr_run_(int jit, double loss, rr_times_t *times, etsim_netpkt_stats_t *st) {
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_star(&t, 3, 100000000000ull, US), 0);
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.cc_mode = ETSIM_NETPKT_CC_DCQCN;
  c.tx_round_ps = 1000;
  c.error_rate_per_link = loss;
  /* ns-3 has no retransmission timeout, so a lost last packet (or the
   * NACK for it) stalls its message: with losses, a seed whose drops spare
   * every tail (seeds 1, 3, 5, 6 and 8 stall one) */
  if (loss > 0) c.seed = 2;
  c.nack_interval_us = 5;
  c.has_win = loss == 0; /* a lost NACK with the window full would stall */
  c.forget_done = times != NULL;
  for (int i = 0; i < ETSIM_NETPKT_MAX_ECN_RATES; i++) {
    c.kmin_kb[i] = 20;
    c.kmax_kb[i] = 60;
  }
  etsim_netpkt_t *n = mk(&t, &c);
  etsim_error_t err = {0};
  for (int r = 0; r < RR_ROUNDS; r++) {
    if (jit && r) assert_int_equal(etsim_netpkt_run_until(n, rr_start(r) - 1, &err), 0);
    for (uint32_t h = 1; h <= 2; h++) {
      etsim_netpkt_msg_t m = {h, 0, 150000, rr_start(r), 3, 100, times ? rr_done : NULL, times};
      uint64_t id;
      TU_OK(etsim_netpkt_send(n, &m, &id, &err), err);
      assert_int_equal(id, 2 * r + h - 1);
    }
  }
  run(n);
  etsim_netpkt_get_stats(n, st);
  etsim_netpkt_topo_free(&t);
  return n;
}

static etsim_netpkt_t *rr_run(int jit, double loss, etsim_netpkt_stats_t *st) {
  return rr_run_(jit, loss, NULL, st);
}

static void test_qp_records_reused(void **state) {
  (void)state;
  etsim_netpkt_stats_t sa, sj;
  etsim_netpkt_t *a = rr_run(0, 0, &sa), *j = rr_run(1, 0, &sj);
  print_message("records: %llu at once, %llu just in time, for %llu messages; %llu CNPs\n",
                (unsigned long long)sa.qp_records, (unsigned long long)sj.qp_records,
                (unsigned long long)sj.msgs, (unsigned long long)sj.cnps);
  assert_int_equal(sa.qp_records, 2 * RR_ROUNDS);
  TU_LT(sj.qp_records, 8);
  TU_GT(sj.cnps, 0);
  assert_int_equal(sj.msgs_done, 2 * RR_ROUNDS);
  assert_int_equal(sj.events, sa.events);
  assert_int_equal(sj.ecn_marks, sa.ecn_marks);
  assert_int_equal(sj.last_done_ps, sa.last_done_ps);
  for (uint64_t id = 0; id < 2 * RR_ROUNDS; id++) {
    etsim_netpkt_msg_stat_t x = stat_of(a, id), y = stat_of(j, id);
    assert_int_equal(y.src, x.src);
    assert_int_equal(y.sport, x.sport);
    assert_int_equal(y.bytes, 150000);
    assert_int_equal(y.start_ps, rr_start((int)id / 2));
    assert_int_equal(y.delivered_ps, x.delivered_ps);
    assert_int_equal(y.acked_ps, x.acked_ps);
    assert_int_equal(y.standalone_ps, x.standalone_ps);
    assert_int_equal(y.win_bytes, x.win_bytes);
    assert_int_equal(y.base_rtt_ps, x.base_rtt_ps);
    TU_GT(y.acked_ps, y.start_ps);
  }
  etsim_netpkt_free(a);
  etsim_netpkt_free(j);

  /* with losses: every message done, one record each */
  j = rr_run(1, 0.002, &sj);
  TU_GT(sj.drops_error, 0);
  assert_int_equal(sj.msgs_done, 2 * RR_ROUNDS);
  assert_int_equal(sj.qp_records, 2 * RR_ROUNDS);
  etsim_netpkt_free(j);
}

/*
 * forget_done: the same rounds give every message the times of the run
 * that keeps all statistics (through its done callback); a message whose
 * record was reused is not found any more, and the id map holds no more
 * messages than there are records.  With losses nothing is released, so
 * every message is still found.
 */
static void test_forget_done(void **state) {
  (void)state;
  etsim_netpkt_stats_t sa, sf;
  etsim_netpkt_t *a = rr_run(0, 0, &sa);
  static rr_times_t x;
  memset(&x, 0xff, sizeof x);
  etsim_netpkt_t *f = rr_run_(1, 0, &x, &sf);
  assert_int_equal(sf.msgs_done, 2 * RR_ROUNDS);
  assert_int_equal(sf.events, sa.events);
  TU_LT(sf.qp_records, 8);
  int gone = 0;
  for (uint64_t id = 0; id < 2 * RR_ROUNDS; id++) {
    etsim_netpkt_msg_stat_t e = stat_of(a, id), o;
    assert_int_equal(x.delivered[id], e.delivered_ps);
    assert_int_equal(x.acked[id], e.acked_ps);
    int rc = etsim_netpkt_msg_stat(f, id, &o);
    if (rc == ETSIM_ENOTFOUND) gone++;
    else {
      assert_int_equal(rc, 0); /* still in its NIC's list: all there */
      assert_int_equal(o.acked_ps, e.acked_ps);
      assert_int_equal(o.sport, e.sport);
    }
  }
  etsim_netpkt_msg_stat_t o;
  assert_int_equal(etsim_netpkt_msg_stat(f, 2 * RR_ROUNDS, &o), ETSIM_ERANGE);
  TU_GE(gone, 2 * RR_ROUNDS - (int)sf.qp_records);
  const pk_net_t *pf = (const pk_net_t *)f;
  TU_LE(pf->msgs.live.count, sf.qp_records);
  TU_LE(pf->msgs.live.cap, 16);
  assert_null(pf->msgs.v);
  etsim_netpkt_free(a);
  etsim_netpkt_free(f);

  memset(&x, 0xff, sizeof x);
  f = rr_run_(1, 0.002, &x, &sf);
  TU_GT(sf.drops_error, 0);
  assert_int_equal(sf.qp_records, 2 * RR_ROUNDS);
  for (uint64_t id = 0; id < 2 * RR_ROUNDS; id++) {
    assert_int_equal(etsim_netpkt_msg_stat(f, id, &o), 0);
    assert_int_equal(o.acked_ps, x.acked[id]);
    TU_GT(o.acked_ps, o.start_ps);
  }
  etsim_netpkt_free(f);
}

/*
 * Five switches in a ring, a host on each; host i sends to host i+2, whose
 * only shortest path turns clockwise through two inter-switch links.  With
 * small buffers the pauses close a cycle: PFC deadlock, reported with the
 * cycle of switches.
 */
static void test_pfc_deadlock_cycle(void **state) {
  (void)state;
  etsim_netpkt_topo_t t;
  assert_int_equal(etsim_netpkt_topo_init(&t, 10), 0);
  const uint64_t G = 100000000000ull;
  for (uint32_t i = 0; i < 5; i++) {
    t.is_switch[5 + i] = 1;
    assert_int_equal(etsim_netpkt_topo_add_link(&t, i, 5 + i, G, US, 0, NULL), 0);
  }
  for (uint32_t i = 0; i < 5; i++)
    assert_int_equal(etsim_netpkt_topo_add_link(&t, 5 + i, 5 + (i + 1) % 5, G, US, 0, NULL), 0);
  etsim_netpkt_cfg_t c;
  cfg_pfc_only(&c);
  c.has_win = 0;
  c.buffer_mb = 1;
  c.stall_ps = 100 * US;
  etsim_netpkt_t *n = mk(&t, &c);
  for (uint32_t i = 0; i < 5; i++) snd(n, i, (i + 2) % 5, 20000000, 0);
  etsim_error_t err = {0};
  int rc = etsim_netpkt_run_until(n, INT64_MAX, &err);
  print_message("deadlock: rc %d: %s\n", rc, err.msg);
  assert_int_equal(rc, ETSIM_EDEADLOCK);
  TU_CONTAINS(err.msg, "PFC deadlock");
  TU_CONTAINS(err.msg, "pause cycle");
  etsim_netpkt_free(n);
  etsim_netpkt_topo_free(&t);
}

/* Serialisation and pacing times in whole ns (TX_ROUND_PS 1000) are
 * ns-3's DataRate::CalculateBytesTxTime: bits / rate in 64.64 fixed point,
 * times 10^9, rounded half up, so an exact half rounds down unless
 * bits 2^64 / rate is whole.  The expected values are ns-3's own output
 * (a program printing DataRate(bps).CalculateBytesTxTime(bytes)
 * .GetTimeStep(), built against astra-network-ns3 8fd3604). */
static void test_tx_time_ns3(void **state) {
  (void)state;
  static pk_net_t n; /* only its config is read */
  n.cfg.tx_round_ps = 1000;
  static const struct {
    uint64_t bps, bytes;
    int64_t ns;
  } c[] = {
      {64000000000ull, 1036, 129}, /* 129.5: a half, rounded down */
      {8192, 1, 976563},           /* 976,562.5 with a whole quotient: up */
      {16000000000ull, 1, 0},      /* 0.5: down */
      {100000000000ull, 1036, 83}, {25000000000ull, 1048, 335}, {40000000000ull, 1000, 200},
      {64123456789ull, 1036, 129}, {1000000000ull, 64, 512},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    assert_int_equal(pk_tx_time(&n, c[i].bytes, c[i].bps), c[i].ns * 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tx_time_ns3),
      cmocka_unit_test(test_single_flow_exact),
      cmocka_unit_test(test_stop_instant),
      cmocka_unit_test(test_ack_interval),
      cmocka_unit_test(test_ack_fifo_at_switch),
      cmocka_unit_test(test_clos_path_fct),
      cmocka_unit_test(test_last_hop_parallel),
      cmocka_unit_test(test_long_chain_fct),
      cmocka_unit_test(test_fattree_k32),
      cmocka_unit_test(test_incast_pfc_lossless),
      cmocka_unit_test(test_pfc_propagation_and_hol),
      cmocka_unit_test(test_hpcc_steady_state),
      cmocka_unit_test(test_dctcp_queue_near_k),
      cmocka_unit_test(test_dcqcn_two_flows_fair),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_loss_recovery_and_stall),
      cmocka_unit_test(test_qp_records_reused),
      cmocka_unit_test(test_forget_done),
      cmocka_unit_test(test_pfc_deadlock_cycle),
  };
  return TU_RUN(tests, NULL, NULL);
}
