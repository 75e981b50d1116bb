/*
 * netsim_bench.c — speed of the packet-level and flow-level networks on
 * the issue-9 scenarios (100 Gb/s, 1 us links, 1000 B payload, 32 MB
 * buffers, PFC only unless CC is given):
 *   incast8   8-to-1 incast of 1 MB on one switch
 *   ring16    16 hosts on 4 leaves x 2 spines (2:1), ring i->i+1 of 4 MB
 *   a2a16     the same fabric, all-to-all of 4 MB per pair (240 flows)
 *   ar128     ring all-reduce of 64 MiB on 128 NPUs, 8 leaves x 16 hosts,
 *             8 spines (2:1): 2(N-1) dependent steps of 512 KiB
 *             (only with "all" or "ar128"; STEPS=k runs the first k steps)
 * Prints simulated completion, wall and CPU time, events/s and packets/s
 * (per CPU second: on a shared machine wall time mostly measures the
 * neighbours).
 *
 *   bench_netsim_bench [incast8|ring16|a2a16|ar128|all] [CC_MODE]
 * [KEY=VALUE...]
 */
#include "etsim/netpkt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint64_t G100 = 100000000000ull;
static const int64_t US = 1000000;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Ring all-reduce driver: NPU i sends step k+1 once step k from i-1 has
 * arrived (and its own step k was sent: steps go out in order). */
typedef struct {
  const etsim_netpkt_level_t *lv;
  void *net;
  uint32_t n, steps;
  uint64_t chunk;
  uint32_t *step_recv; /* steps received per NPU */
  uint32_t *step_sent;
  uint64_t *msg_src; /* message id -> sender */
  size_t n_msg, cap_msg;
} ring_t;

static void ring_send(ring_t *r, uint32_t i, int64_t t);

static void ring_cb(void *ctx, uint64_t id, int what, int64_t t) {
  ring_t *r = ctx;
  if (what != ETSIM_NETPKT_DELIVERED) return;
  uint32_t src = (uint32_t)r->msg_src[id], dst = (src + 1) % r->n;
  r->step_recv[dst]++;
  if (r->step_sent[dst] < r->steps && r->step_sent[dst] <= r->step_recv[dst]) ring_send(r, dst, t);
}

static void ring_send(ring_t *r, uint32_t i, int64_t t) {
  etsim_netpkt_msg_t m = {i, (i + 1) % r->n, r->chunk, t, 3, 100, ring_cb, r};
  uint64_t id;
  etsim_error_t err = {0};
  int rc = r->lv->send(r->net, &m, &id, &err);
  if (rc) {
    fprintf(stderr, "send: %s\n", err.msg);
    exit(3);
  }
  if (id >= r->cap_msg) {
    r->cap_msg = id * 2 + 1024;
    r->msg_src = realloc(r->msg_src, r->cap_msg * sizeof *r->msg_src);
  }
  r->msg_src[id] = i;
  r->step_sent[i]++;
}

static void run_one(const char *name, const etsim_netpkt_level_t *lv, const etsim_netpkt_topo_t *t,
                    const etsim_netpkt_cfg_t *c, int scenario) {
  etsim_error_t err = {0};
  void *net = NULL;
  int rc = lv->create(&net, t, c, &err);
  if (rc) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    exit(3);
  }
  ring_t ring = {0};
  uint32_t nh = 0;
  for (uint32_t v = 0; v < t->n_nodes; v++) nh += !t->is_switch[v];
  double t0 = now_s(), c0 = cpu_s();
  if (scenario == 3) {
    ring.lv = lv;
    ring.net = net;
    ring.n = nh;
    ring.steps = 2 * (nh - 1);
    const char *s = getenv("STEPS");
    if (s && atoi(s) > 0 && (uint32_t)atoi(s) < ring.steps) ring.steps = (uint32_t)atoi(s);
    ring.chunk = 64ull * 1024 * 1024 / nh;
    ring.step_recv = calloc(nh, sizeof *ring.step_recv);
    ring.step_sent = calloc(nh, sizeof *ring.step_sent);
    for (uint32_t i = 0; i < nh; i++) ring_send(&ring, i, 0);
  } else {
    for (uint32_t i = 0; i < nh; i++)
      for (uint32_t j = 0; j < nh; j++) {
        int on = scenario == 0   ? (j == 0 && i > 0 && i <= 8)
                 : scenario == 1 ? j == (i + 1) % nh
                                 : i != j;
        if (!on) continue;
        etsim_netpkt_msg_t m = {i, j, scenario == 0 ? 1000000 : 4000000, 0, 3, 100, NULL, NULL};
        rc = lv->send(net, &m, NULL, &err);
        if (rc) {
          fprintf(stderr, "%s: %s\n", name, err.msg);
          exit(3);
        }
      }
  }
  rc = lv->run_until(net, INT64_MAX, &err);
  double wall = now_s() - t0, cpu = cpu_s() - c0;
  if (rc) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    exit(1);
  }
  etsim_netpkt_stats_t st;
  lv->get_stats(net, &st);
  uint64_t pk = st.data_pkts + st.ack_pkts + st.pfc_frames;
  printf("%-8s %-7s done %6" PRIu64 "/%-6" PRIu64
         " last %12.3f us  wall %8.4f s  cpu %8.4f s  %10.0f events/s",
         name, lv->name, st.msgs_done, st.msgs, (double)st.last_done_ps / 1e6, wall, cpu,
         (double)st.events / cpu);
  if (lv->queues)
    printf("  %10.0f packets/s  (%" PRIu64 " events, %" PRIu64 " packet hops, %" PRIu64 " pauses)",
           (double)pk / cpu, st.events, pk, st.pauses);
  printf("\n");
  lv->destroy(net);
  free(ring.step_recv);
  free(ring.step_sent);
  free(ring.msg_src);
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "default";
  etsim_netpkt_cfg_t c;
  etsim_netpkt_cfg_default(&c);
  c.tx_round_ps = 1000; /* as ns-3 */
  for (int i = 2; i < argc; i++) {
    etsim_error_t err = {0};
    char key[128];
    const char *eq = strchr(argv[i], '=');
    int rc;
    if (eq && (size_t)(eq - argv[i]) < sizeof key) {
      memcpy(key, argv[i], (size_t)(eq - argv[i]));
      key[eq - argv[i]] = 0;
      rc = etsim_netpkt_cfg_set(&c, key, eq + 1, &err);
    } else rc = etsim_netpkt_cfg_set(&c, "CC_MODE", argv[i], &err);
    if (rc) {
      fprintf(stderr, "%s\n", err.msg);
      return 2;
    }
  }
  static const char *names[] = {"incast8", "ring16", "a2a16", "ar128"};
  for (int s = 0; s < 4; s++) {
    int want =
        !strcmp(which, names[s]) || !strcmp(which, "all") || (!strcmp(which, "default") && s < 3);
    if (!want) continue;
    etsim_netpkt_topo_t t;
    if (s == 0) etsim_netpkt_topo_star(&t, 9, G100, US);
    else if (s < 3) etsim_netpkt_topo_clos2(&t, 4, 4, 2, G100, G100, US);
    else etsim_netpkt_topo_clos2(&t, 8, 16, 8, G100, G100, US);
    run_one(names[s], etsim_netpkt_level_find("packet"), &t, &c, s);
    run_one(names[s], etsim_netpkt_level_find("flow"), &t, &c, s);
    etsim_netpkt_topo_free(&t);
  }
  return 0;
}
