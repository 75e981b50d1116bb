/*
 * test_comm_order.c — a communicator of every NPU in another order than
 * 0..n-1 (issue 20): it runs over the network's dimensions, as ASTRA-sim's
 * CommunicatorGroup plans one of every NPU, but its positions are its own:
 * a broadcast's or reduce's root is a position in its member list, the
 * NPU members[root], not the NPU of that id.  So a rooted collective on it
 * is the world one rooted at that NPU, NPU for NPU to the picosecond, and
 * the root is the first (broadcast: it only sends) or last (reduce: it
 * only receives) to finish.  In id order it is the world itself.  A custom
 * collective's rank traces are positions too: rank r runs on members[r]
 * and its peers are ranks.
 */
#include "test_util.h"

#include "etsim/coll.h"
#include "etsim/net.h"

#include <math.h>

#define N 4

typedef struct world {
  etsim_topo_t topo;
  etsim_des_t q;
  etsim_net_t *net;
  etsim_coll_t *coll;
  etsim_sys_config_t sys;
  int64_t done_ps[N]; /* by NPU */
  int n_done;
} world_t;

static void on_done(void *user, uint32_t npu, uint64_t token) {
  world_t *w = user;
  (void)token;
  TU_LT(npu, N);
  w->done_ps[npu] = w->q.now_ps;
  w->n_done++;
}

/* A 4-NPU ring, 50 GB/s, 500 ns a hop, one chunk per collective. */
static void world_init(world_t *w) {
  memset(w, 0, sizeof *w);
  etsim_error_t err = {0};
  static const etsim_topo_kind_t kind[1] = {ETSIM_TOPO_RING};
  static const uint32_t npus[1] = {N};
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

static void world_free(world_t *w) {
  etsim_coll_destroy(w->coll);
  etsim_net_destroy(w->net);
  etsim_des_free(&w->q);
  etsim_sys_config_free(&w->sys);
}

/* Every NPU issues one `type` of 1 MiB on comm (NULL: the world) with
 * root; the queue runs dry; each NPU's finish time into done_ps. */
static void run_rooted(etsim_cop_t type, const etsim_comm_t *comm, uint32_t root,
                       int64_t done_ps[N]) {
  world_t w;
  world_init(&w);
  etsim_error_t err = {0};
  for (uint32_t n = 0; n < N; n++)
    TU_OK(etsim_coll_issue_rooted(w.coll, n, type, 1 << 20, ~0u, comm, root, 0, n, &err), err);
  etsim_des_event_t ev;
  while (etsim_des_pop(&w.q, &ev)) TU_OK(etsim_coll_event(w.coll, &ev, &err), err);
  TU_OK(etsim_coll_check_idle(w.coll, &err), err);
  TU_EQ(w.n_done, N);
  memcpy(done_ps, w.done_ps, sizeof w.done_ps);
  world_free(&w);
}

/* members: a permutation of 0..3 that moves every position's NPU. */
static const uint32_t perm[N] = {2, 0, 3, 1};

static void test_root_is_a_position(void **state) {
  (void)state;
  const etsim_comm_t comm = {7, N, perm};
  static const etsim_cop_t types[2] = {ETSIM_COP_BROADCAST, ETSIM_COP_REDUCE};
  for (int t = 0; t < 2; t++) {
    for (uint32_t root = 0; root < N; root++) {
      int64_t on_comm[N], on_world[N];
      run_rooted(types[t], &comm, root, on_comm);
      run_rooted(types[t], NULL, perm[root], on_world);
      for (uint32_t n = 0; n < N; n++)
        if (on_comm[n] != on_world[n])
          fail_msg(
              "%s, root position %u (NPU %u): NPU %u finishes at %lld ps on the "
              "communicator, %lld ps rooted at NPU %u in the world",
              etsim_coll_op_name(types[t]), root, perm[root], n, (long long)on_comm[n],
              (long long)on_world[n], perm[root]);
      /* the root only sends (broadcast) or only receives (reduce) */
      uint32_t r = perm[root];
      for (uint32_t n = 0; n < N; n++) {
        if (n == r) continue;
        if (types[t] == ETSIM_COP_BROADCAST) TU_LT(on_comm[r], on_comm[n]);
        else TU_GT(on_comm[r], on_comm[n]);
      }
    }
  }
}

/* In id order the communicator is the world: the root is the NPU id. */
static void test_id_order_is_the_world(void **state) {
  (void)state;
  static const uint32_t ident[N] = {0, 1, 2, 3};
  const etsim_comm_t comm = {7, N, ident};
  int64_t on_comm[N], on_world[N];
  run_rooted(ETSIM_COP_BROADCAST, &comm, 3, on_comm);
  run_rooted(ETSIM_COP_BROADCAST, NULL, 3, on_world);
  for (uint32_t n = 0; n < N; n++) TU_EQ(on_comm[n], on_world[n]);
  for (uint32_t n = 0; n < 3; n++) TU_LT(on_comm[3], on_comm[n]);
}

/* A root past the member list is refused as a position. */
static void test_root_out_of_range(void **state) {
  (void)state;
  world_t w;
  world_init(&w);
  const etsim_comm_t comm = {7, N, perm};
  etsim_error_t err = {0};
  TU_EQ(etsim_coll_issue_rooted(w.coll, 0, ETSIM_COP_BROADCAST, 1 << 20, ~0u, &comm, N, 0, 0, &err),
        ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "broadcast: root 4 is not a position in the communicator");
  world_free(&w);
}

/* floor(hops * latency + bytes / bandwidth), bandwidth in 2^30 bytes/s
 * (the analytical model's message time, as test_p2p.c checks it) */
static int64_t msg_ps(int hops, uint64_t bytes) {
  return (int64_t)floor(hops * 500.0 + (double)bytes / (50.0 * 1073741824.0 / 1e9)) * 1000;
}

/* A custom all-reduce where rank 0 sends 1 MiB to rank 1 and ranks 2 and 3
 * do nothing: on {2,0,3,1} NPU 2 sends to NPU 0 (two hops of the ring),
 * and NPUs 3 and 1 finish at once. */
static void test_custom_ranks_are_positions(void **state) {
  (void)state;
  uint8_t k_send = ETSIM_CUSTOM_SEND, k_recv = ETSIM_CUSTOM_RECV;
  uint32_t to1 = 1, from0 = 0, tag = 5, zero = 0, off[2] = {0, 0};
  uint64_t bytes = 1 << 20;
  int64_t dur = 0;
  etsim_coll_custom_rank_t rank[N] = {
      {1, &k_send, &to1, &tag, &bytes, &dur, &zero, off, NULL},
      {1, &k_recv, &from0, &tag, &bytes, &dur, &zero, off, NULL},
      {0, NULL, NULL, NULL, NULL, NULL, NULL, off, NULL},
      {0, NULL, NULL, NULL, NULL, NULL, NULL, off, NULL},
  };
  const etsim_coll_custom_t cu = {N, rank};
  const etsim_comm_t comm = {7, N, perm};
  world_t w;
  world_init(&w);
  etsim_error_t err = {0};
  TU_OK(etsim_coll_set_custom(w.coll, ETSIM_COP_ALL_REDUCE, &cu), err);
  for (uint32_t n = 0; n < N; n++)
    TU_OK(etsim_coll_issue(w.coll, n, ETSIM_COP_ALL_REDUCE, bytes, ~0u, &comm, 0, n, &err), err);
  etsim_des_event_t ev;
  while (etsim_des_pop(&w.q, &ev)) TU_OK(etsim_coll_event(w.coll, &ev, &err), err);
  TU_OK(etsim_coll_check_idle(w.coll, &err), err);
  TU_EQ(w.n_done, N);
  TU_EQ(w.done_ps[2], msg_ps(2, bytes)); /* rank 0 */
  TU_EQ(w.done_ps[0], msg_ps(2, bytes)); /* rank 1 */
  TU_EQ(w.done_ps[3], 0);                /* rank 2 */
  TU_EQ(w.done_ps[1], 0);                /* rank 3 */
  world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_root_is_a_position),
      cmocka_unit_test(test_id_order_is_the_world),
      cmocka_unit_test(test_root_out_of_range),
      cmocka_unit_test(test_custom_ranks_are_positions),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
