/* The flow- and packet-level RoCE networks (netpkt.h) behind the
 * simulator's network interface.
 *
 * They run their own event engines; the simulation loop asks for the time
 * of their next event and lets them run up to it before it pops an event
 * of its own at a later time.  A delivery callback pushes the simulator's
 * delivery event at the delivery time, so both clocks stay ordered.
 * Messages use priority group 3, as ASTRA-sim's ns-3 backend does.
 */
#include "etsim/net.h"
#include "etsim/netpkt.h"

#include "net_int.h"

#include <math.h>
#include <string.h>

typedef struct rdma rdma_t;

/* A message sent and not yet delivered: the simulator's token and the
 * message's NPU pair (in `inflight`).  The level hands its slot back to
 * the done callback as the message's context, so no map from message ids
 * is needed; slots live in blocks that never move, and a delivered
 * message's slot goes on the free list, so they follow the messages in
 * flight (a long run sends millions). */
typedef struct rdma_slot {
  rdma_t *r;
  uint64_t token;
  uint32_t pair;
  uint32_t idx; /* its own number, for the free list */
  uint8_t live; /* sent and not yet delivered */
} rdma_slot_t;

#define RDMA_BLOCK_SHIFT 12 /* 4,096 slots a block */
#define RDMA_BLOCK (1u << RDMA_BLOCK_SHIFT)

struct rdma {
  etsim_net_t base;
  const etsim_netpkt_level_t *lv; /* the level it drives: packet or flow */
  void *eng;                      /* that level's network */
  rdma_slot_t **block;
  uint32_t *free_slot; /* room for every slot */
  size_t n_slot, n_block, cap_block, n_free, cap_free;
  etsim_u64map_t pairs; /* (src << 32 | dst) -> slot */
  uint32_t *inflight;   /* messages sent and not yet delivered, per pair */
  size_t n_pairs, cap_pairs;
  uint32_t *host; /* NPU -> host node of the packet topology */
  uint64_t n_tok; /* message ids the level has given (0 .. n_tok - 1) */
  int fail;
  /* failures from a time on (--fail ...@T, T > 0): cables given as node
   * pairs fail_ab[2k], fail_ab[2k+1] at fail_t[k], sorted by time */
  int64_t *fail_t;
  uint32_t *fail_ab;
  size_t n_fail, next_fail;
  char failed[192];         /* what has failed so far, for the report */
  etsim_outfile_t fct, pfc; /* fp NULL when not asked for */
  /* --net-timeline: the recorder (packet level), the topology it names
   * ports by, and where the file goes */
  etsim_netpkt_tl_t *tl;
  etsim_netpkt_topo_t pt;
  const char *tl_path;
};

static rdma_slot_t *slot_at(const rdma_t *r, uint32_t s) {
  return &r->block[s >> RDMA_BLOCK_SHIFT][s & (RDMA_BLOCK - 1)];
}

static void on_done(void *ctx, uint64_t id, int what, int64_t t_ps) {
  rdma_slot_t *x = ctx;
  rdma_t *r = x->r;
  (void)id;
  if (what != ETSIM_NETPKT_DELIVERED || r->fail) return;
  if (!x->live) {
    r->fail = ETSIM_EINTERNAL; /* delivered twice */
    return;
  }
  x->live = 0;
  r->inflight[x->pair]--;
  r->free_slot[r->n_free++] = x->idx;
  if (etsim_des_push(r->base.q, t_ps, r->base.ev_deliver, 0, x->token)) r->fail = ETSIM_ENOMEM;
}

/* A free slot for the next message (taken by the caller once the level
 * has the message), or NULL out of memory. */
static rdma_slot_t *slot_reserve(rdma_t *r) {
  if (r->n_free) return slot_at(r, r->free_slot[r->n_free - 1]);
  if (r->n_slot >= UINT32_MAX - 1 ||
      etsim_grow((void **)&r->free_slot, &r->cap_free, r->n_slot + 1, sizeof *r->free_slot))
    return NULL;
  if (r->n_slot == r->n_block * RDMA_BLOCK) {
    if (etsim_grow((void **)&r->block, &r->cap_block, r->n_block + 1, sizeof *r->block))
      return NULL;
    if (!(r->block[r->n_block] = etsim_calloc(RDMA_BLOCK, sizeof **r->block))) return NULL;
    r->n_block++;
  }
  rdma_slot_t *x = slot_at(r, (uint32_t)r->n_slot);
  x->r = r;
  x->idx = (uint32_t)r->n_slot;
  return x;
}

/* With a timeline (packet level only), the recorder runs the engine
 * between its samples. */
static int run_until(rdma_t *r, int64_t t_ps, etsim_error_t *err) {
  return r->tl ? etsim_netpkt_tl_run_until(r->tl, r->eng, t_ps, err)
               : r->lv->run_until(r->eng, t_ps, err);
}

/* The engine's counters into the simulator's (0 where the level has none). */
static void engine_stats(const rdma_t *r, etsim_net_stats_t *s) {
  etsim_netpkt_stats_t st;
  r->lv->get_stats(r->eng, &st);
  s->pkt_events = st.events;
  s->data_pkts = st.data_pkts;
  s->pfc_pauses = st.pauses;
  s->ecn_marks = st.ecn_marks;
  s->cnps = st.cnps;
  s->drops = st.drops_buffer + st.drops_error;
  s->paused_ps = st.paused_ps;
  s->max_buffer_bytes = st.max_switch_buffer_bytes;
}

/* ---------------------------------------------------------------- what-if */

/* The what-if of opts applied to pt's link records (tn names the
 * topology): factors on every cable between the two nodes, or the cables
 * removed, keeping the others in file order (so ports keep their numbers
 * on the nodes the cable did not touch). */
static int apply_whatif(etsim_netpkt_topo_t *pt, const etsim_net_opts_t *o, const char *tn,
                        etsim_error_t *err) {
  for (size_t w = 0; w < o->n_link_whatif; w++) {
    const etsim_net_link_whatif_t *x = &o->link_whatif[w];
    size_t hits = 0, keep = 0;
    if (x->down) continue; /* the engine takes them (fail_plan) */
    for (size_t l = 0; l < pt->n_links; l++) {
      etsim_netpkt_link_t *k = &pt->links[l];
      int hit = (k->a == x->a && k->b == x->b) || (k->a == x->b && k->b == x->a);
      hits += hit;
      if (hit) {
        double r = llround((double)k->rate_bps * x->bw);
        k->rate_bps = r >= 1 ? (uint64_t)r : 1;
        k->delay_ps = llround((double)k->delay_ps * x->lat);
      }
      pt->links[keep++] = *k;
    }
    pt->n_links = keep;
    if (!hits)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: key \"%s\": %s has no cable between nodes %u and %u (nodes 0 "
                             "to %u)",
                             x->opt, x->key, tn, x->a, x->b, pt->n_nodes ? pt->n_nodes - 1 : 0);
  }
  return 0;
}

/* stats.held_msgs and stats.held, from id on (a failure can hold any
 * message in flight: then from 0).  Rare: at failures and on sends that
 * find no route. */
static void count_held(rdma_t *r, uint64_t from) {
  etsim_net_stats_t *st = &r->base.stats;
  if (from == 0) st->held_msgs = 0;
  for (uint64_t id = from; id < r->n_tok; id++) {
    etsim_netpkt_msg_stat_t o;
    if (r->lv->msg_stat(r->eng, id, &o) || !o.held) continue;
    if (st->held_msgs++) continue;
    uint32_t s = 0, d = 0;
    for (uint32_t i = 0; i < r->base.topo->total; i++) {
      if (r->host[i] == o.src) s = i;
      if (r->host[i] == o.dst) d = i;
    }
    snprintf(st->held, sizeof st->held, "%s: no route left for NPU %u -> NPU %u (%llu bytes)",
             r->failed[0] ? r->failed : "a topology cut apart", s, d, (unsigned long long)o.bytes);
  }
}

/* ------------------------------------------------- the network interface */

static int rdma_send(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t token) {
  rdma_t *r = (rdma_t *)net;
  int d = etsim_topo_first_diff_dim(net->topo, src, dst);
  net->stats.messages++;
  net->stats.bytes += bytes;
  if (d >= 0) net->stats.bytes_per_dim[d] += bytes;
  if (src == dst || bytes == 0)
    return etsim_des_push(net->q, net->q->now_ps, net->ev_deliver, 0, token);
  /* Messages in flight per NPU pair: ASTRA-sim's ring forwards each piece as
   * soon as it arrives, with no limit per link, so at flow and packet level
   * pieces can catch up and share a link (see docs/netsim.md).  The pair's
   * counter exists before the level takes the message, so that nothing can
   * fail after it has. */
  uint32_t slot = (uint32_t)r->n_pairs;
  int put = etsim_u64map_put(&r->pairs, (uint64_t)src << 32 | dst, slot, &slot);
  if (put < 0) return ETSIM_ENOMEM;
  if (put == 1) {
    if (etsim_grow((void **)&r->inflight, &r->cap_pairs, r->n_pairs + 1, sizeof *r->inflight)) {
      etsim_u64map_del(&r->pairs, (uint64_t)src << 32 | dst);
      return ETSIM_ENOMEM;
    }
    r->inflight[r->n_pairs++] = 0;
  }
  rdma_slot_t *x = slot_reserve(r);
  if (!x) return ETSIM_ENOMEM;
  etsim_netpkt_msg_t m = {r->host[src], r->host[dst], bytes, net->q->now_ps, 3, 100, on_done, x};
  uint64_t id;
  etsim_error_t e = {0};
  int rc = r->lv->send(r->eng, &m, &id, &e);
  if (rc) return rc;
  if (x->idx == r->n_slot) r->n_slot++;
  else r->n_free--;
  x->live = 1;
  x->token = token;
  x->pair = slot;
  if (++r->inflight[slot] > net->stats.max_inflight_pair) {
    net->stats.max_inflight_pair = r->inflight[slot];
    net->stats.max_inflight_src = src;
    net->stats.max_inflight_dst = dst;
  }
  if (id >= r->n_tok) r->n_tok = id + 1;
  { /* a failure, or a topology cut apart, holds it */
    etsim_netpkt_msg_stat_t o;
    if (!r->lv->msg_stat(r->eng, id, &o) && o.held) count_held(r, id);
  }
  return 0;
}

static int64_t rdma_next(const etsim_net_t *net) {
  const rdma_t *r = (const rdma_t *)net;
  int64_t t = r->lv->next_time(r->eng);
  if (r->next_fail < r->n_fail && r->fail_t[r->next_fail] < t) t = r->fail_t[r->next_fail];
  return t;
}

/* The network runs up to just before a failure, the cables go down, and it
 * runs on: a failure comes before every network event of its instant (and,
 * as the simulation loop lets the network catch up first, before the
 * simulator's). */
static int rdma_advance(etsim_net_t *net, int64_t t_ps, etsim_error_t *err) {
  rdma_t *r = (rdma_t *)net;
  int rc = 0;
  while (!rc && r->next_fail < r->n_fail && r->fail_t[r->next_fail] <= t_ps) {
    int64_t tf = r->fail_t[r->next_fail];
    size_t k = r->next_fail;
    while (k < r->n_fail && r->fail_t[k] == tf) k++;
    if (!(rc = run_until(r, tf - 1, err)) && !(rc = r->fail))
      rc = r->lv->links_down(r->eng, r->fail_ab + 2 * r->next_fail, k - r->next_fail, tf, err);
    r->next_fail = k;
    if (!rc) count_held(r, 0);
  }
  if (!rc) rc = run_until(r, t_ps, err);
  if (!rc) net->stats.last_ps = r->lv->now(r->eng);
  return rc ? rc : r->fail;
}

static void rdma_destroy(etsim_net_t *net) {
  rdma_t *r = (rdma_t *)net;
  if (r->fct.fp) etsim_outfile_abort(&r->fct); /* not committed: a failed run */
  if (r->pfc.fp) etsim_outfile_abort(&r->pfc);
  if (r->eng) r->lv->destroy(r->eng);
  etsim_netpkt_tl_free(r->tl);
  etsim_netpkt_topo_free(&r->pt);
  for (size_t b = 0; b < r->n_block; b++) etsim_free(r->block[b]);
  etsim_free(r->block);
  etsim_free(r->free_slot);
  etsim_free(r->inflight);
  etsim_u64map_free(&r->pairs);
  etsim_free(r->host);
  etsim_free(r->fail_t);
  etsim_free(r->fail_ab);
  etsim_free(r);
}

static int rdma_finish(etsim_net_t *net, etsim_error_t *err) {
  rdma_t *r = (rdma_t *)net;
  engine_stats(r, &net->stats);
  int rc = 0;
  if (r->tl_path) {
    /* The interval holding the network's last events, then the file. */
    if (r->tl && (rc = run_until(r, etsim_netpkt_tl_next(r->tl), err))) return rc;
    if ((rc = etsim_netpkt_tl_write(r->tl_path, r->tl, &r->pt, r->lv, r->eng, r->n_tok, err)))
      return rc;
  }
  if (r->fct.fp && (rc = etsim_outfile_commit(&r->fct, err))) return rc;
  r->fct.fp = NULL;
  if (r->pfc.fp && (rc = etsim_outfile_commit(&r->pfc, err))) return rc;
  r->pfc.fp = NULL;
  return 0;
}

/* no switch messages (in-network reduction) and no per-link counters: the
 * RoCE levels report ports through their timeline */
static const etsim_net_ops_t pkt_ops = {"packet",     rdma_send,   NULL, rdma_destroy, rdma_next,
                                        rdma_advance, rdma_finish, NULL, NULL};
static const etsim_net_ops_t flow_ops = {"flow",       rdma_send,   NULL, rdma_destroy, rdma_next,
                                         rdma_advance, rdma_finish, NULL, NULL};

/* The failures from a time on, as node pairs by time (an NPU's: every
 * cable of its host), and what failed for the report.  Cables named by a
 * failure must exist in pt (the topology after the failures at 0). */
static int fail_plan(rdma_t *r, const etsim_netpkt_topo_t *pt, const etsim_net_opts_t *o,
                     const char *tn, etsim_error_t *err) {
  size_t cap_t = 0, cap_ab = 0, u = 0;
  for (size_t w = 0; w < o->n_link_whatif; w++) {
    const etsim_net_link_whatif_t *x = &o->link_whatif[w];
    if (!x->down) continue;
    u += (size_t)snprintf(r->failed + u, u < sizeof r->failed ? sizeof r->failed - u : 0,
                          "%s%s %s at t=%lld ns", u ? ", " : "", x->key, x->npu ? "failed" : "down",
                          (long long)(x->t_ps / 1000));
    if (u >= sizeof r->failed) u = sizeof r->failed - 1;
    if (x->npu && x->a >= r->base.topo->total)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': NPU %u is outside the %u-NPU network",
                             x->opt, x->key, x->a, r->base.topo->total);
    size_t hits = 0;
    for (size_t l = 0; l < pt->n_links; l++) {
      const etsim_netpkt_link_t *k = &pt->links[l];
      int hit = x->npu ? k->a == r->host[x->a] || k->b == r->host[x->a]
                       : (k->a == x->a && k->b == x->b) || (k->a == x->b && k->b == x->a);
      if (!hit) continue;
      hits++;
      if (etsim_grow((void **)&r->fail_t, &cap_t, r->n_fail + 1, sizeof *r->fail_t) ||
          etsim_grow((void **)&r->fail_ab, &cap_ab, 2 * (r->n_fail + 1), sizeof *r->fail_ab))
        return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
      r->fail_t[r->n_fail] = x->t_ps;
      r->fail_ab[2 * r->n_fail] = k->a;
      r->fail_ab[2 * r->n_fail + 1] = k->b;
      r->n_fail++;
    }
    if (!hits && !x->npu)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: '%s': %s has no cable between nodes %u and %u (nodes 0 to %u; "
                             "or it is already down)",
                             x->opt, x->key, tn, x->a, x->b, pt->n_nodes ? pt->n_nodes - 1 : 0);
  }
  /* by time, in the order given on ties (insertion sort: a handful) */
  for (size_t i = 1; i < r->n_fail; i++)
    for (size_t j = i; j > 0 && r->fail_t[j - 1] > r->fail_t[j]; j--) {
      int64_t t = r->fail_t[j];
      r->fail_t[j] = r->fail_t[j - 1];
      r->fail_t[j - 1] = t;
      for (int e = 0; e < 2; e++) {
        uint32_t v = r->fail_ab[2 * j + e];
        r->fail_ab[2 * j + e] = r->fail_ab[2 * j - 2 + e];
        r->fail_ab[2 * j - 2 + e] = v;
      }
    }
  return 0;
}

int etsim_net__rdma_create(etsim_net_t **out, const etsim_topo_t *topo, const char *level,
                           const etsim_net_opts_t *opts, etsim_error_t *err) {
  static const etsim_net_opts_t none = {0};
  if (!opts) opts = &none;
  const etsim_netpkt_level_t *lv = etsim_netpkt_level_find(level);
  if (!lv) return etsim_error_set(err, ETSIM_EINVAL, "network: no level named '%s'", level);
  etsim_netpkt_cfg_t cfg;
  etsim_netpkt_cfg_default(&cfg);
  int rc;
  if (opts->config_file && (rc = etsim_netpkt_cfg_load(&cfg, opts->config_file, err))) return rc;
  if (opts->cc && (rc = etsim_net_cc_mode(opts->cc, &cfg.cc_mode, err))) return rc;
  etsim_netpkt_topo_t pt;
  memset(&pt, 0, sizeof pt);
  if (opts->topology_file) {
    if ((rc = etsim_netpkt_topo_load(&pt, opts->topology_file, err))) return rc;
  } else if (topo->ndims == 1 && topo->kind[0] == ETSIM_TOPO_SWITCH) {
    uint64_t bps = (uint64_t)(topo->bw_gbps[0] * 1073741824.0 * 8.0);
    if ((rc = etsim_netpkt_topo_star(&pt, topo->total, bps, (int64_t)(topo->lat_ns[0] * 1000.0)))) {
      etsim_netpkt_topo_free(&pt);
      return etsim_error_set(err, rc, "%s network: cannot build a star of %u hosts", lv->name,
                             topo->total);
    }
  } else {
    return etsim_error_set(
        err, ETSIM_EINVAL,
        "the %s backend needs --net-topology FILE (etsim netsim's "
        "topology format, NPUs first) unless the network is one Switch dimension",
        lv->name);
  }
  const char *tn = opts->topology_file ? opts->topology_file : "the star network";
  if (opts->n_link_whatif && (rc = apply_whatif(&pt, opts, tn, err))) {
    etsim_netpkt_topo_free(&pt);
    return rc;
  }
  /* Link rates without an ECN threshold entry get one scaled from the
   * nearest configured rate (thresholds proportional to the rate, as the
   * ns-3 configurations are written). */
  for (size_t l = 0; l < pt.n_links; l++) {
    uint64_t bps = pt.links[l].rate_bps;
    uint32_t k, best = 0;
    for (k = 0; k < cfg.n_ecn && cfg.ecn_rate_bps[k] != bps; k++) {
      double dk = (double)cfg.ecn_rate_bps[k], db = (double)cfg.ecn_rate_bps[best];
      if (fabs(dk - (double)bps) < fabs(db - (double)bps)) best = k;
    }
    if (k < cfg.n_ecn || cfg.n_ecn == 0) continue;
    if (cfg.n_ecn == ETSIM_NETPKT_MAX_ECN_RATES) break;
    double f = (double)bps / (double)cfg.ecn_rate_bps[best];
    cfg.ecn_rate_bps[cfg.n_ecn] = bps;
    cfg.kmin_kb[cfg.n_ecn] = (uint32_t)(cfg.kmin_kb[best] * f + 0.5);
    cfg.kmax_kb[cfg.n_ecn] = (uint32_t)(cfg.kmax_kb[best] * f + 0.5);
    cfg.pmax[cfg.n_ecn] = cfg.pmax[best];
    cfg.n_ecn++;
  }
  uint32_t hosts = 0;
  for (uint32_t i = 0; i < pt.n_nodes; i++) hosts += !pt.is_switch[i];
  if (hosts < topo->total) {
    etsim_netpkt_topo_free(&pt);
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %u hosts for %u NPUs",
                           opts->topology_file ? opts->topology_file : "star", hosts, topo->total);
  }
  rdma_t *r = etsim_calloc(1, sizeof *r);
  if (!r) {
    etsim_netpkt_topo_free(&pt);
    return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  }
  r->host = etsim_malloc(topo->total * sizeof *r->host);
  if (!r->host) {
    etsim_netpkt_topo_free(&pt);
    etsim_free(r);
    return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  }
  for (uint32_t i = 0, k = 0; i < pt.n_nodes && k < topo->total; i++)
    if (!pt.is_switch[i]) r->host[k++] = i;
  /* Hosts a failure cuts apart are no input error here: a message that
   * needs a route that is gone is held, and the simulation reports the
   * collective it blocks (docs/sim.md, "Failures"). */
  cfg.allow_disconnected = 1;
  /* Only the timeline reads messages after they are done (its file lists
   * them all); otherwise their statistics go with their records. */
  cfg.forget_done = !opts->timeline_file;
  r->base.topo = topo;
  if ((rc = fail_plan(r, &pt, opts, tn, err))) {
    etsim_free(r->host);
    etsim_free(r->fail_t);
    etsim_free(r->fail_ab);
    etsim_free(r);
    etsim_netpkt_topo_free(&pt);
    return rc;
  }
  r->lv = lv;
  r->base.ops = lv->queues ? &pkt_ops : &flow_ops;
  /* The summary names what ran: a topology file replaces the YAML's
   * dimensions (which then only give the NPU count). */
  uint32_t n_sw = 0;
  for (uint32_t i = 0; i < pt.n_nodes; i++) n_sw += pt.is_switch[i];
  if (opts->topology_file)
    snprintf(r->base.stats.fabric, sizeof r->base.stats.fabric,
             "%s network %s: %u hosts (the first %u are the NPUs), %u switches, %zu links",
             lv->name, opts->topology_file, hosts, topo->total, n_sw, pt.n_links);
  rc = r->lv->create(&r->eng, &pt, &cfg, err);
  r->pt = pt; /* the timeline names nodes and ports by it; freed with r */
  if (rc) {
    rdma_destroy(&r->base);
    return rc;
  }
  /* Failures at 0 before any message: the routes are then those of the
   * fabric without the cables (ports keep their numbers). */
  size_t k0 = 0;
  while (k0 < r->n_fail && r->fail_t[k0] == 0) k0++;
  if (k0 && (rc = r->lv->links_down(r->eng, r->fail_ab, k0, 0, err))) {
    rdma_destroy(&r->base);
    return rc;
  }
  r->next_fail = k0;
  r->tl_path = opts->timeline_file;
  if (opts->timeline_file && lv->queues &&
      (rc = etsim_netpkt_tl_create(&r->tl, r->eng, &r->pt,
                                   opts->timeline_step_ps > 0 ? opts->timeline_step_ps : 1000000,
                                   ETSIM_NETPKT_TL_RATE_MSGS, err))) {
    rdma_destroy(&r->base);
    return rc;
  }
  if (opts->pfc_file && !lv->queues) {
    rdma_destroy(&r->base);
    return etsim_error_set(err, ETSIM_EINVAL,
                           "PFC events exist only at packet level (--backend packet)");
  }
  if ((opts->fct_file && (rc = etsim_outfile_open(&r->fct, opts->fct_file, err))) ||
      (opts->pfc_file && (rc = etsim_outfile_open(&r->pfc, opts->pfc_file, err)))) {
    rdma_destroy(&r->base);
    return rc;
  }
  r->lv->set_outputs(r->eng, r->fct.fp, r->pfc.fp, NULL);
  *out = &r->base;
  return 0;
}
