/*
 * pkt_fail.c — cables that fail while the packet-level network runs
 * (etsim sim --fail link:A-B@T or npu:N@T, docs/sim.md "Failures").
 *
 * At the failure instant the routes are searched again over the cables
 * left (pkt_route.c) and everything that would cross a failed cable is
 * moved off it once, here, so the per-packet code never asks whether a
 * port is up:
 *   - a queue pair whose data or ACK route crosses one gets new routes
 *     (the others keep theirs, as a switch with resilient ECMP hashing
 *     keeps the flows of its surviving next hops); with none left it is
 *     held: it leaves its NIC's round robin and never completes;
 *   - packets on a failed cable's wire arrive (they left the port before
 *     the cut); packets queued at its ports are re-routed at that node and
 *     moved to the port of their new route; packets anywhere else whose
 *     remaining route crosses a failed cable are re-routed from the next
 *     node they reach (their headers are rewritten in place);
 *   - a packet with no route left from where it is is dropped where it is
 *     queued (its buffer given back, so no pause is left behind); one on a
 *     wire goes on to the failed port, which holds it: a failed port stays
 *     paused on every priority and sends nothing more.
 * No packet is lost on a path that survives, so no message needs the
 * go-back-N recovery that has no timeout in this model.
 */
#include "pkt_int.h"

#include <string.h>

/* 1 when route r, from its k-th port on at node v, crosses a failed cable
 * before it reaches host `to`. */
static int crosses(const pk_net_t *n, uint32_t v, uint32_t r, uint32_t k, uint32_t to) {
  while (v != to) {
    uint32_t gp = n->nodes[v].port0 + n->routes[r + k++];
    if (n->ports[gp].down) return 1;
    v = n->ports[gp].peer;
  }
  return 0;
}

/* A new route: the first k ports of route r (the links crossed so far),
 * then queue pair q's path from node v on (its data's, or its ACKs' when
 * ack).  Its offset in n->routes, PK_NONE when v has no path left; *rc
 * gets ETSIM_ENOMEM. */
static uint32_t reroute(pk_net_t *n, const pk_qp_t *q, int ack, uint32_t r, uint32_t k, uint32_t v,
                        int *rc) {
  uint32_t to = ack ? q->src : q->dst;
  if (etsim_net__pkt_route_ready(n, to)) {
    *rc = ETSIM_ENOMEM;
    return PK_NONE;
  }
  uint32_t h = etsim_net__pkt_hops(n, v, to);
  if (!h || h == UINT32_MAX || (size_t)k + h > 65535) return PK_NONE;
  if (etsim_grow((void **)&n->path_buf, &n->cap_path_buf, h, sizeof *n->path_buf) ||
      n->n_routes + k + h + PK_HDR_OUT >= PK_NONE ||
      etsim_grow((void **)&n->routes, &n->cap_routes, n->n_routes + k + h + PK_HDR_OUT,
                 sizeof *n->routes)) {
    *rc = ETSIM_ENOMEM;
    return PK_NONE;
  }
  if (etsim_net__pkt_path_from(n, v, q->src, q->dst, q->sport, q->dport, ack, n->path_buf, h) != h)
    return PK_NONE;
  uint16_t *rt = n->routes + n->n_routes;
  for (uint32_t i = 0; i < k; i++) rt[i] = n->routes[r + i];
  for (uint32_t i = 0; i < h; i++) rt[k + i] = n->rlink[n->path_buf[i]].local;
  for (uint32_t i = 0; i < PK_HDR_OUT; i++) rt[k + h + i] = 0; /* spare, as send */
  uint32_t off = (uint32_t)n->n_routes;
  n->n_routes += k + h;
  return off;
}

static void set_route(const pk_net_t *n, pk_hdr_t *h, uint32_t r) {
  h->route = r;
  memcpy(h->out, n->routes + r + 1, sizeof h->out);
}

/* A started queue pair leaves (or joins) its NIC port's round robin. */
static void nic_del(pk_net_t *n, pk_qp_t *q) {
  pk_port_t *p = &n->ports[q->gport];
  uint32_t id = (uint32_t)(q - n->qps);
  if (q->rr_pos != PK_NONE) {
    size_t i = q->rr_pos;
    size_t m = p->n_qps - i - 1;
    memmove(p->qps + i, p->qps + i + 1, m * sizeof *p->qps);
    memmove(p->rr_key + i, p->rr_key + i + 1, m * sizeof *p->rr_key);
    memmove(p->rrs + i, p->rrs + i + 1, m * sizeof *p->rrs);
    p->n_qps--;
    for (; i < p->n_qps; i++) n->qps[p->qps[i]].rr_pos = (uint32_t)i;
    q->rr_pos = PK_NONE;
    pk_pg_sub(p, q->pg);
  }
  if (p->ready_qp == id) p->ready_qp = PK_NONE;
  p->wake_min_ok = 0;
  p->qps_blocked = 0;
}

static int nic_add(pk_net_t *n, pk_qp_t *q) {
  pk_port_t *p = &n->ports[q->gport];
  if (pk_rr_add(n, p, (uint32_t)(q - n->qps))) return ETSIM_ENOMEM;
  pk_pg_add(p, q->pg);
  p->wake_min_ok = 0;
  p->qps_blocked = 0;
  return 0;
}

/* New routes for a queue pair whose routes cross a failed cable, or it is
 * held.  *kick gets the NIC port to wake (PK_NONE: none). */
static int qp_reroute(pk_net_t *n, uint32_t id, uint32_t *kick) {
  pk_qp_t *q = &n->qps[id];
  *kick = PK_NONE;
  if (q->finished || q->held) return 0;
  int d = crosses(n, q->src, q->route_data, 0, q->dst);
  int a = crosses(n, q->dst, q->route_ack, 0, q->src);
  if (!d && !a) return 0;
  int rc = 0;
  uint32_t rd = d ? reroute(n, q, 0, 0, 0, q->src, &rc) : q->route_data;
  uint32_t ra = a && !rc && rd != PK_NONE ? reroute(n, q, 1, 0, 0, q->dst, &rc) : q->route_ack;
  if (rc) return rc;
  q = &n->qps[id];
  if (rd == PK_NONE || ra == PK_NONE) {
    q->held = 1;
    for (int i = 0; i < 3; i++) q->tgen[i]++; /* its CC timers are void */
    if (q->started) nic_del(n, q);
    n->n_active--;
    return 0;
  }
  uint32_t gp = n->nodes[q->src].port0 + n->routes[rd];
  if (gp != q->gport) { /* a host with several cables: another NIC port */
    if (q->started) nic_del(n, q);
    q->gport = gp;
    if (q->started && nic_add(n, q)) return ETSIM_ENOMEM;
  }
  q->route_data = rd;
  if (q->rr_pos != PK_NONE) n->ports[q->gport].rrs[q->rr_pos].route = rd;
  q->route_ack = ra;
  q->route_cap = 0; /* two appended pieces: none to fill when reused (never: a cut is lossy) */
  memcpy(q->ack_out, n->routes + ra + 1, sizeof q->ack_out);
  q->rx_gport = n->nodes[q->dst].port0 + n->routes[ra];
  if (q->started) *kick = q->gport;
  return 0;
}

typedef struct moved {
  uint32_t gp;
  int qi;
  pk_hdr_t h;
} moved_t;

/* The packets of port gp (see the top of the file); those that change
 * port are appended to *mv. */
static int fix_port(pk_net_t *n, uint32_t gp, moved_t **mv, size_t *n_mv, size_t *cap_mv) {
  pk_port_t *p = &n->ports[gp];
  uint32_t w = p->peer;
  int rc = 0;
  for (uint32_t i = 0; i < p->wire_n; i++) {
    pk_hdr_t *h = &p->wire[(p->wire_head + i) & (p->wire_cap - 1)];
    if (pk_hdr_type(h) == PK_PFC) continue;
    const pk_qp_t *q = &n->qps[h->flow];
    int ack = pk_hdr_type(h) != PK_DATA;
    uint32_t to = ack ? q->src : q->dst;
    if (w == to || !crosses(n, w, h->route, h->hop + 1u, to)) continue;
    uint32_t r = reroute(n, q, ack, h->route, h->hop + 1u, w, &rc);
    if (rc) return rc;
    if (r != PK_NONE) set_route(n, h, r); /* else the failed port will hold it */
  }
  for (int qi = 0; qi < PK_NPRIO; qi++) {
    pk_ring_t *f = &p->q[qi];
    uint32_t m = f->n, keep = 0;
    for (uint32_t j = 0; j < m; j++) {
      pk_hdr_t h = f->v[(f->head + j) & (f->cap - 1)];
      int stay = 1, drop = 0;
      if (pk_hdr_type(&h) == PK_PFC) {
        drop = p->down; /* a pause frame for a failed cable: lost */
      } else {
        const pk_qp_t *q = &n->qps[h.flow];
        int ack = pk_hdr_type(&h) != PK_DATA;
        uint32_t to = ack ? q->src : q->dst;
        uint32_t r = h.route;
        if (p->down) { /* re-routed at this node: it may leave by another port */
          r = reroute(n, q, ack, h.route, h.hop, p->node, &rc);
          stay = 0;
        } else if (w != to && crosses(n, w, h.route, h.hop + 1u, to)) {
          r = reroute(n, q, ack, h.route, h.hop + 1u, w, &rc);
        }
        if (rc) return rc;
        if (r == PK_NONE) drop = 1;
        else if (r != h.route) set_route(n, &h, r);
      }
      if (drop || !stay) {
        f->bytes -= h.size;
        p->qbytes_total -= h.size;
        if (drop && pk_hdr_type(&h) != PK_PFC && (rc = etsim_net__pkt_drop_queued(n, gp, qi, &h)))
          return rc;
        if (drop) continue;
        if (etsim_grow((void **)mv, cap_mv, *n_mv + 1, sizeof **mv)) return ETSIM_ENOMEM;
        (*mv)[(*n_mv)++] = (moved_t){n->nodes[p->node].port0 + n->routes[h.route + h.hop], qi, h};
        continue;
      }
      f->v[(f->head + keep++) & (f->cap - 1)] = h;
    }
    f->n = keep;
    if (!keep) p->qmask &= (uint8_t) ~(1u << qi);
  }
  return 0;
}

int etsim_netpkt_links_down(etsim_netpkt_t *net, const uint32_t *ab, size_t n_pairs, int64_t t_ps,
                            etsim_error_t *err) {
  pk_net_t *n = (pk_net_t *)net;
  if (t_ps < n->now)
    return etsim_error_set(err, ETSIM_EINVAL, "network: a failure at %lld ps is in the past",
                           (long long)t_ps);
  for (size_t k = 0; k < n_pairs; k++) {
    uint32_t a = ab[2 * k], b = ab[2 * k + 1], hits = 0;
    for (uint32_t v = 0; v < 2; v++) {
      uint32_t x = v ? b : a, y = v ? a : b;
      if (x >= n->n_nodes) break;
      const pk_node_t *nd = &n->nodes[x];
      for (uint32_t j = 0; j < nd->nports; j++) {
        pk_port_t *p = &n->ports[nd->port0 + j];
        if (p->peer != y) continue;
        hits++;
        if (p->down) continue;
        /* held paused from now on; a pause already on is closed here so
         * the statistics count only PFC's own pauses */
        for (int q = 0; q < PK_NPRIO; q++)
          if (p->paused & (1u << q)) {
            p->paused_ps += t_ps - p->paused_since[q];
            n->st.paused_ps += t_ps - p->paused_since[q];
          }
        p->paused = 0xff;
        p->down = 1;
      }
    }
    if (!hits)
      return etsim_error_set(err, ETSIM_EINVAL, "network: no cable between nodes %u and %u", a, b);
  }
  n->now = t_ps;
  n->cur_seq = n->evq.next_seq++; /* after every event queued so far */
  n->lossy = 1;                   /* packets are dropped and moved: no queue pair is released */
  int rc = etsim_net__pkt_route_rebuild(n);
  /* GLOBAL_T's largest RTT and BDP, for the messages sent from now on */
  if (!rc && n->cfg.global_t) rc = etsim_net__pkt_route_global(n, &n->max_bdp, &n->max_rtt_ps);
  moved_t *mv = NULL;
  size_t n_mv = 0, cap_mv = 0;
  uint32_t *kicks = NULL;
  size_t n_k = 0, cap_k = 0;
  for (size_t i = 0; !rc && i < n->n_qps; i++) {
    uint32_t kp;
    if ((rc = qp_reroute(n, (uint32_t)i, &kp)) || kp == PK_NONE) continue;
    if (etsim_grow((void **)&kicks, &cap_k, n_k + 1, sizeof *kicks)) rc = ETSIM_ENOMEM;
    else kicks[n_k++] = kp;
  }
  for (uint32_t gp = 0; !rc && gp < n->n_ports; gp++) rc = fix_port(n, gp, &mv, &n_mv, &cap_mv);
  for (size_t i = 0; !rc && i < n_mv; i++)
    rc = etsim_net__pkt_enqueue(n, mv[i].gp, mv[i].qi, &mv[i].h);
  for (size_t i = 0; !rc && i < n_mv; i++) rc = etsim_net__pkt_port_kick(n, mv[i].gp);
  for (size_t i = 0; !rc && i < n_k; i++) rc = etsim_net__pkt_port_kick(n, kicks[i]);
  etsim_free(mv);
  etsim_free(kicks);
  if (rc) {
    n->stopped = PK_STOP_OOM;
    return etsim_error_set(err, rc, "network: out of memory");
  }
  return 0;
}
