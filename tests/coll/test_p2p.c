/*
 * test_p2p.c — the system layer's point-to-point calls on their own: a
 * send meets its receive (posted before or after the arrival) at the
 * analytical model's message time, and a failure comes back as a code
 * with a message naming the NPUs, the tag and the cause.
 */
#include "test_util.h"

#include "etsim/coll.h"
#include "etsim/net.h"

#include <math.h>

typedef struct world {
  etsim_topo_t topo;
  etsim_des_t q;
  etsim_net_t *net;
  etsim_coll_t *coll;
  etsim_sys_config_t sys;
  int64_t done_ps[8]; /* by token */
  uint32_t done_npu[8];
  int n_done;
} world_t;

static void on_done(void *user, uint32_t npu, uint64_t token) {
  world_t *w = user;
  TU_LT(token, 8);
  w->done_ps[token] = w->q.now_ps;
  w->done_npu[token] = npu;
  w->n_done++;
}

/* A 4-NPU ring, 50 GB/s, 500 ns a hop. */
static void world_init(world_t *w) {
  memset(w, 0, sizeof *w);
  etsim_error_t err = {0};
  static const etsim_topo_kind_t kind[1] = {ETSIM_TOPO_RING};
  static const uint32_t npus[1] = {4};
  static const double bw[1] = {50}, lat[1] = {500};
  TU_OK(etsim_topo_init(&w->topo, 1, kind, npus, bw, lat, "test", &err), err);
  etsim_des_init(&w->q);
  TU_OK(etsim_net_create(&w->net, "analytical", &w->topo, &w->q, ETSIM_COLL_EV_DELIVER,
                         ETSIM_COLL_EV_HOP, NULL, &err),
        err);
  etsim_sys_config_defaults(&w->sys);
  w->sys.splits = 1;
  TU_OK(etsim_coll_create(&w->coll, &w->sys, &w->topo, w->net, &w->q, on_done, w, &err), err);
}

/* Run the queue dry; returns etsim_coll_check_idle's verdict (in err). */
static int world_run(world_t *w, etsim_error_t *err) {
  etsim_des_event_t ev;
  while (etsim_des_pop(&w->q, &ev)) TU_OK(etsim_coll_event(w->coll, &ev, err), *err);
  return etsim_coll_check_idle(w->coll, err);
}

static void world_free(world_t *w) {
  etsim_coll_destroy(w->coll);
  etsim_net_destroy(w->net);
  etsim_des_free(&w->q);
  etsim_sys_config_free(&w->sys);
}

/* floor(hops * latency + bytes / bandwidth), bandwidth in 2^30 bytes/s */
static int64_t msg_ps(int hops, uint64_t bytes) {
  return (int64_t)floor(hops * 500.0 + (double)bytes / (50.0 * 1073741824.0 / 1e9)) * 1000;
}

static void test_send_meets_recv(void **state) {
  (void)state;
  world_t w;
  world_init(&w);
  etsim_error_t err = {0};
  /* receive first on NPU 2, then the send from NPU 0 (two hops away) */
  TU_OK(etsim_coll_recv(w.coll, 2, 0, 1 << 20, 7, 1, &err), err);
  TU_OK(etsim_coll_send(w.coll, 0, 2, 1 << 20, 7, 0, &err), err);
  /* a send whose receive comes after the arrival: NPU 1 to its neighbour 2 */
  TU_OK(etsim_coll_send(w.coll, 1, 2, 4096, 3, 2, &err), err);
  /* the arrival nobody has received yet keeps the layer busy */
  TU_EQ(world_run(&w, &err), ETSIM_EDEADLOCK);
  TU_CONTAINS(err.msg, "NPU 1 sent 4096 bytes to NPU 2 (tag 3) that were never received");
  etsim_error_clear(&err);
  TU_EQ(w.n_done, 3);
  TU_EQ(w.done_ps[0], msg_ps(2, 1 << 20));
  TU_EQ(w.done_ps[1], msg_ps(2, 1 << 20));
  TU_EQ(w.done_npu[0], 0);
  TU_EQ(w.done_npu[1], 2);
  TU_EQ(w.done_ps[2], msg_ps(1, 4096));
  /* the late receive completes at once, at the time it is posted (the
   * last delivery's) */
  TU_EQ(w.q.now_ps, msg_ps(2, 1 << 20));
  TU_OK(etsim_coll_recv(w.coll, 2, 1, 4096, 3, 3, &err), err);
  TU_OK(world_run(&w, &err), err);
  TU_EQ(w.n_done, 4);
  TU_EQ(w.done_ps[3], msg_ps(2, 1 << 20));
  TU_EQ(w.done_npu[3], 2);
  world_free(&w);
}

static void test_send_past_horizon(void **state) {
  (void)state;
  world_t w;
  world_init(&w);
  etsim_error_t err = {0};
  /* 2^62 bytes at 50 GB/s take ~3 years: beyond the clock's 53 days */
  uint64_t big = 1ull << 62;
  TU_EQ(etsim_coll_send(w.coll, 0, 2, big, 9, 0, &err), ETSIM_ERANGE);
  TU_EQ(err.code, ETSIM_ERANGE);
  TU_CONTAINS(err.msg, "a send of 4611686018427387904 bytes from NPU 0 to NPU 2 (tag 9)");
  TU_CONTAINS(err.msg, "beyond the simulated clock's horizon");
  /* a NULL err still returns the code */
  TU_EQ(etsim_coll_send(w.coll, 0, 2, big, 9, 0, NULL), ETSIM_ERANGE);
  world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_send_meets_recv),
      cmocka_unit_test(test_send_past_horizon),
  };
  return TU_RUN(tests, NULL, NULL);
}
