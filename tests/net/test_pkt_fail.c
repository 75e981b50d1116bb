/*
 * test_pkt_fail.c — cables failing while the packet- and flow-level
 * networks run (etsim_netpkt_links_down, etsim_netflow_links_down): the
 * closed forms of docs/sim.md ("Failures") through the library, messages
 * held for want of a route, and the refusals.
 *
 * The fabric is clos2 with 2 leaves of 4 hosts and 2 spines (hosts 0-7,
 * leaves 8 and 9, spines 10 and 11), 100 Gb/s and 1 us everywhere: a 1 MB
 * message is 1000 packets of 1036 wire bytes, s = 82.88 ns each.
 */
#include "test_util.h"

#include "etsim/netpkt.h"

#define S_PS 82880 /* one packet's serialisation */
#define D_PS 1000000
#define T_PS 40000000 /* the failure */

typedef struct net {
  etsim_netpkt_t *pkt;
  etsim_netflow_t *flow;
} net_t;

static void make(net_t *n, int packet, etsim_netpkt_topo_t *t) {
  etsim_netpkt_cfg_t c;
  etsim_error_t err = {0};
  etsim_netpkt_cfg_default(&c);
  c.allow_disconnected = 1;
  assert_int_equal(etsim_netpkt_topo_clos2(t, 2, 4, 2, 100000000000ull, 100000000000ull, D_PS), 0);
  n->pkt = NULL;
  n->flow = NULL;
  if (packet) assert_int_equal(etsim_netpkt_create(&n->pkt, t, &c, &err), 0);
  else assert_int_equal(etsim_netflow_create(&n->flow, t, &c, &err), 0);
}

static void send(net_t *n, uint32_t src, uint32_t dst, int64_t at) {
  etsim_netpkt_msg_t m = {src, dst, 1000000, at, 3, 100, NULL, NULL};
  etsim_error_t err = {0};
  int rc = n->pkt ? etsim_netpkt_send(n->pkt, &m, NULL, &err)
                  : etsim_netflow_send(n->flow, &m, NULL, &err);
  assert_int_equal(rc, 0);
}

static int run(net_t *n, int64_t t) {
  etsim_error_t err = {0};
  return n->pkt ? etsim_netpkt_run_until(n->pkt, t, &err)
                : etsim_netflow_run_until(n->flow, t, &err);
}

static int down(net_t *n, uint32_t a, uint32_t b, int64_t t, etsim_error_t *err) {
  const uint32_t ab[2] = {a, b};
  return n->pkt ? etsim_netpkt_links_down(n->pkt, ab, 1, t, err)
                : etsim_netflow_links_down(n->flow, ab, 1, t, err);
}

static etsim_netpkt_msg_stat_t stat(net_t *n, uint64_t id) {
  etsim_netpkt_msg_stat_t o;
  int rc = n->pkt ? etsim_netpkt_msg_stat(n->pkt, id, &o) : etsim_netflow_msg_stat(n->flow, id, &o);
  assert_int_equal(rc, 0);
  return o;
}

static void done(net_t *n, etsim_netpkt_topo_t *t) {
  etsim_netpkt_free(n->pkt);
  etsim_netflow_free(n->flow);
  etsim_netpkt_topo_free(t);
}

/* 0->4 and 1->5 on different spines; leaf 8's uplink to spine 10 fails at
 * 40 us.  Flow level: both end at 2000 s - T + 3 s + 4 d.  Packet level:
 * k = floor((T - d) / s) = 470 packets begun per uplink, the last arrives
 * at (2003 - k) s + 4 d and the other a packet before. */
static void test_reroute(void **state) {
  (void)state;
  for (int packet = 0; packet < 2; packet++) {
    net_t n;
    etsim_netpkt_topo_t t;
    etsim_error_t err = {0};
    make(&n, packet, &t);
    send(&n, 0, 4, 0);
    send(&n, 1, 5, 0);
    assert_int_equal(run(&n, T_PS - 1), 0);
    assert_int_equal(down(&n, 8, 10, T_PS, &err), 0);
    assert_int_equal(run(&n, INT64_MAX), 0);
    int64_t a = stat(&n, 0).delivered_ps, b = stat(&n, 1).delivered_ps;
    int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    if (packet) {
      int64_t k = (T_PS - D_PS) / S_PS;
      assert_int_equal(k, 470);
      assert_int_equal(hi, (2003 - k) * S_PS + 4 * D_PS);
      assert_int_equal(lo, hi - S_PS);
    } else { /* fluid: to the ps, up to rounding of the rates */
      int64_t want = 2000 * S_PS - T_PS + 3 * S_PS + 4 * D_PS;
      TU_LE(llabs(a - want), 1);
      TU_LE(llabs(b - want), 1);
    }
    assert_false(stat(&n, 0).held || stat(&n, 1).held);
    done(&n, &t);
  }
}

/* Host 0's only cable fails at 40 us: 0->4 is held (never delivered),
 * 1->5 is untouched; a message sent after it, into the cut, is held at
 * once; a message between hosts that still reach each other goes. */
static void test_held(void **state) {
  (void)state;
  for (int packet = 0; packet < 2; packet++) {
    net_t n;
    etsim_netpkt_topo_t t;
    etsim_error_t err = {0};
    make(&n, packet, &t);
    send(&n, 0, 4, 0);
    send(&n, 1, 5, 0);
    assert_int_equal(run(&n, T_PS - 1), 0);
    assert_int_equal(down(&n, 0, 8, T_PS, &err), 0);
    send(&n, 4, 0, T_PS); /* id 2: into the cut */
    assert_true(stat(&n, 2).held);
    assert_int_equal(run(&n, INT64_MAX), 0); /* no stall report, no hang */
    assert_true(stat(&n, 0).held);
    assert_int_equal(stat(&n, 0).delivered_ps, -1);
    assert_int_equal(stat(&n, 2).delivered_ps, -1);
    assert_false(stat(&n, 1).held);
    assert_int_equal(stat(&n, 1).delivered_ps / 1000, 87128);
    /* refusals: no such cable (twice down counts as there), the past */
    assert_int_equal(down(&n, 0, 1, (int64_t)1 << 50, &err), ETSIM_EINVAL);
    TU_CONTAINS(err.msg, "no cable between nodes 0 and 1");
    assert_int_equal(down(&n, 8, 11, 1, &err), ETSIM_EINVAL);
    TU_CONTAINS(err.msg, "in the past");
    done(&n, &t);
  }
}

/* Two spines of different length between two leaves: hosts 0 and 1 on
 * leaves 2 and 3, spine 4 at 1 us and 100 Gb/s, spine 5 at 5 us and 25
 * Gb/s.  A message's base RTT and standalone time come from the path ns-3's
 * search finds first; once a cable of that path fails, a message sent after
 * it gets those of the new first path, as on a network whose cable was
 * down from the start (the pair's cached RTT is dropped with the routes). */
static void make_two_spines(net_t *n, int packet, etsim_netpkt_topo_t *t) {
  etsim_netpkt_cfg_t c;
  etsim_error_t err = {0};
  etsim_netpkt_cfg_default(&c);
  c.allow_disconnected = 1;
  c.global_t = 0;
  const uint64_t G100 = 100000000000ull, G25 = 25000000000ull;
  assert_int_equal(etsim_netpkt_topo_init(t, 6), 0);
  for (int i = 2; i < 6; i++) t->is_switch[i] = 1;
  TU_OK(etsim_netpkt_topo_add_link(t, 0, 2, G100, D_PS, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(t, 1, 3, G100, D_PS, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(t, 2, 4, G100, D_PS, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(t, 4, 3, G100, D_PS, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(t, 2, 5, G25, 5 * D_PS, 0, &err), err);
  TU_OK(etsim_netpkt_topo_add_link(t, 5, 3, G25, 5 * D_PS, 0, &err), err);
  n->pkt = NULL;
  n->flow = NULL;
  if (packet) TU_OK(etsim_netpkt_create(&n->pkt, t, &c, &err), err);
  else TU_OK(etsim_netflow_create(&n->flow, t, &c, &err), err);
}

static void test_rtt_after_cut(void **state) {
  (void)state;
  for (int packet = 0; packet < 2; packet++) {
    int changed = 0;
    for (uint32_t spine = 4; spine <= 5; spine++) {
      net_t n, f;
      etsim_netpkt_topo_t t, tf;
      etsim_error_t err = {0};
      make_two_spines(&n, packet, &t);
      send(&n, 0, 1, 0);
      assert_int_equal(run(&n, INT64_MAX), 0);
      etsim_netpkt_msg_stat_t before = stat(&n, 0);
      TU_OK(down(&n, 2, spine, before.acked_ps + 1, &err), err);
      send(&n, 0, 1, before.acked_ps + 1);
      assert_int_equal(run(&n, INT64_MAX), 0);
      etsim_netpkt_msg_stat_t after = stat(&n, 1);
      make_two_spines(&f, packet, &tf); /* the cable down from the start */
      TU_OK(down(&f, 2, spine, 0, &err), err);
      send(&f, 0, 1, 0);
      assert_int_equal(run(&f, INT64_MAX), 0);
      etsim_netpkt_msg_stat_t fresh = stat(&f, 0);
      assert_int_equal(after.base_rtt_ps, fresh.base_rtt_ps);
      assert_int_equal(after.standalone_ps, fresh.standalone_ps);
      assert_int_equal(after.acked_ps - after.start_ps, fresh.acked_ps - fresh.start_ps);
      /* the short path: 2 (4 d) + 4 s; the long one: 2 (12 d) + 2 s + 2 s' */
      assert_true(fresh.base_rtt_ps == 8 * D_PS + 4 * 80000 ||
                  fresh.base_rtt_ps == 24 * D_PS + 2 * 80000 + 2 * 320000);
      changed += after.base_rtt_ps != before.base_rtt_ps;
      done(&n, &t);
      done(&f, &tf);
    }
    assert_int_equal(changed, 1); /* the cut of the first path's spine */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reroute),
      cmocka_unit_test(test_held),
      cmocka_unit_test(test_rtt_after_cut),
  };
  return TU_RUN(tests, NULL, NULL);
}
