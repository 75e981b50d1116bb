/*
 * pkt_engine.c — the packet-level RoCE network: event loop, switches with
 * a shared-buffer MMU, PFC and ECN, RDMA NICs with round-robin queue pairs,
 * rate pacing, windows, per-packet ACKs and go-back-N.
 *
 * The rules follow the ns-3 RDMA model (HPCC repository) as described in
 * /work/shared/notes/roce-model.md and docs/netsim.md: ingress admission and
 * XOFF on enqueue, ECN/INT/XON on dequeue, pause frames queued in the
 * strict-priority queue of the port facing the upstream (no preemption),
 * "paused until resume".  Time is int64 picoseconds; each packet costs two
 * events per hop (end of serialisation, arrival at the far end).
 */
#include "pkt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PK_RESERVE 4096u
#define PK_RESUME_OFFSET 3072u
/* A pause frame on the wire as ns-3 builds it: PPP 2 + IPv4 20 + pause
 * header 9 (time, queue length, class).  A real 802.1Qbb frame is 64 B;
 * the 3 ns difference at 100 Gb/s shifts every pause, and on the 16-host
 * all-to-all it changed the count by 14 %. */
#define PK_PFC_BYTES 31u
#define PK_DATA_HDR 36u /* PPP 2 + IP 20 + UDP 8 + seq/pg 6 */
#define PK_STANDALONE_HDR 48u

/* ------------------------------------------------------------------ heap */

/* Branch-free (t, seq) order: the loop below picks among 4 children with
 * conditional moves instead of hard-to-predict jumps. */
static inline int ev_less(const pk_ev_t *a, const pk_ev_t *b) {
  return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

int etsim_net__pkt_heap_push_ev(pk_heap_t *h, const pk_ev_t *e) {
  if (h->n == h->cap) {
    size_t nc = h->cap ? h->cap * 2 : 1024;
    pk_ev_t *nv = etsim_realloc(h->v, nc * sizeof *nv);
    if (!nv) return ETSIM_ENOMEM;
    h->v = nv;
    h->cap = nc;
  }
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 4;
    if (!ev_less(e, &h->v[p])) break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = *e;
  return 0;
}

int etsim_net__pkt_heap_push(pk_heap_t *h, int64_t t, uint32_t kind, uint32_t a, uint64_t b) {
  pk_ev_t e = {t, h->next_seq++, kind, a, b};
  return etsim_net__pkt_heap_push_ev(h, &e);
}

void etsim_net__pkt_heap_pop(pk_heap_t *h, pk_ev_t *out) {
  *out = h->v[0];
  pk_ev_t last = h->v[--h->n];
  size_t n = h->n, i = 0;
  if (!n) return;
  for (;;) {
    size_t c = 4 * i + 1;
    if (c >= n) break;
    size_t best;
    if (c + 3 < n) {
      size_t b01 = ev_less(&h->v[c + 1], &h->v[c]) ? c + 1 : c;
      size_t b23 = ev_less(&h->v[c + 3], &h->v[c + 2]) ? c + 3 : c + 2;
      best = ev_less(&h->v[b23], &h->v[b01]) ? b23 : b01;
    } else {
      best = c;
      for (size_t k = c + 1; k < n; k++)
        if (ev_less(&h->v[k], &h->v[best])) best = k;
    }
    if (!ev_less(&h->v[best], &last)) break;
    h->v[i] = h->v[best];
    i = best;
  }
  h->v[i] = last;
}

/* ------------------------------------------------------------- small bits */

uint32_t etsim_netpkt_host_ip(uint32_t node) {
  return 0x0b000001u + (node / 256u) * 0x00010000u + (node % 256u) * 0x100u;
}

/* MurmurHash3 (x86, 32-bit) over 12 bytes, as the ns-3 switches use. */
static uint32_t murmur12(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed) {
  uint32_t h = seed, w[3] = {w0, w1, w2};
  for (int i = 0; i < 3; i++) {
    uint32_t k = w[i] * 0xcc9e2d51u;
    k = (k << 15) | (k >> 17);
    k *= 0x1b873593u;
    h ^= k;
    h = (h << 13) | (h >> 19);
    h = h * 5u + 0xe6546b64u;
  }
  h ^= 12u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static int64_t tx_time(const pk_net_t *n, uint64_t bytes, uint64_t rate) {
  uint64_t num = bytes * 8000000000000ull;
  uint64_t r = n->cfg.tx_round_ps > 1 ? (uint64_t)n->cfg.tx_round_ps : 1;
  /* One rounding, straight to the step, as ns-3 rounds bits / rate to whole
   * ns: rounding to ps first turned e.g. 606.4996 ns into 607.  A step too
   * large for that product (over 7 us at 2.4 Tb/s) rounds in two steps. */
  if (rate <= UINT64_MAX / r) {
    uint64_t den = rate * r;
    return (int64_t)((num + den / 2) / den * r);
  }
  uint64_t t = (num + rate / 2) / rate;
  return (int64_t)((t + r / 2) / r * r);
}

/* Serialisation time on port p: full data packets and ACKs are nearly all
 * the traffic, so their times are worked out once per port (a 64-bit
 * division each, twice with rounding, is the dearest step of a hop). */
static inline int64_t port_tx_time(const pk_net_t *n, const pk_port_t *p, uint32_t bytes) {
  if (bytes == n->mtu_wire) return p->tx_mtu_ps;
  if (bytes == n->ack_size) return p->tx_ack_ps;
  return tx_time(n, bytes, p->rate_bps);
}

static int oom(pk_net_t *n) {
  n->stopped = 2;
  return ETSIM_ENOMEM;
}

static uint32_t pkt_alloc(pk_net_t *n) {
  if (n->free_pkt != PK_NONE) {
    uint32_t i = n->free_pkt;
    n->free_pkt = n->pkts[i].next;
    return i;
  }
  if (n->n_pkts == n->cap_pkts) {
    if (n->n_pkts >= PK_NONE - 1 ||
        etsim_grow((void **)&n->pkts, &n->cap_pkts, n->n_pkts + 1, sizeof *n->pkts))
      return PK_NONE;
    if (n->cc->int_bytes == 42) {
      size_t want = n->cap_pkts * PK_MAX_HOPS;
      if (etsim_grow((void **)&n->hops, &n->cap_hops, want, sizeof *n->hops)) return PK_NONE;
    }
  }
  return (uint32_t)n->n_pkts++;
}

static void pkt_free(pk_net_t *n, uint32_t i) {
  n->pkts[i].next = n->free_pkt;
  n->free_pkt = i;
}

/* Egress queue qi of port p; qmask keeps one bit per non-empty queue so
 * the scheduler finds the next priority without looking at all eight. */
static void fifo_push(pk_net_t *n, pk_port_t *p, int qi, uint32_t i) {
  pk_fifo_t *f = &p->q[qi];
  p->qmask |= (uint8_t)(1u << qi);
  n->pkts[i].next = PK_NONE;
  if (f->n) n->pkts[f->tail].next = i;
  else f->head = i;
  f->tail = i;
  f->n++;
  f->bytes += n->pkts[i].size;
}

static uint32_t fifo_pop(pk_net_t *n, pk_port_t *p, int qi) {
  pk_fifo_t *f = &p->q[qi];
  uint32_t i = f->head;
  f->head = n->pkts[i].next;
  f->n--;
  /* long queues are cold: fetch the next head while this one is sent */
  if (f->n) __builtin_prefetch(&n->pkts[f->head]);
  else p->qmask &= (uint8_t) ~(1u << qi);
  f->bytes -= n->pkts[i].size;
  return i;
}

/* ------------------------------------------------------------ transmit */

static int port_kick(pk_net_t *n, uint32_t gp);

/* ns-3 schedules a port's end of serialisation and then the packet's
 * arrival at the far end when the serialisation starts, and runs events of
 * equal time in the order they were scheduled.  etsim pushes those events
 * later (the arrival when the packet reaches the head of its wire, the end
 * event only when another packet waits), so it takes their sequence numbers
 * now: ties then break as in ns-3, e.g. a packet arriving at a switch port
 * at the very time the port finishes a packet is queued before the port
 * picks its next one, which is what the next packet's INT queue length
 * shows. */
static inline uint64_t pk_tie_mark(pk_net_t *n, pk_port_t *p) {
  p->done_seq = n->evq.next_seq++;
  return n->evq.next_seq++; /* the packet's arrival */
}

/* Double a port's wire ring (only while traffic first builds up). */
static int wire_grow(pk_port_t *p) {
  uint32_t cap = p->wire_cap ? 2 * p->wire_cap : 16;
  pk_wire_slot_t *v = etsim_malloc(cap * sizeof *v);
  if (!v) return ETSIM_ENOMEM;
  for (uint32_t i = 0; i < p->wire_n; i++) v[i] = p->wire[(p->wire_head + i) & (p->wire_cap - 1)];
  etsim_free(p->wire);
  p->wire = v;
  p->wire_head = 0;
  p->wire_cap = cap;
  return 0;
}

static inline int transmit(pk_net_t *n, uint32_t gp, uint32_t pi) {
  pk_port_t *p = &n->ports[gp];
  pk_pkt_t *k = &n->pkts[pi];
  int64_t t = port_tx_time(n, p, k->size);
  p->busy_until = n->now + t;
  p->tx_bytes += k->size;
  if (k->type == PK_DATA) n->st.data_pkts++;
  else if (k->type == PK_PFC) n->st.pfc_frames++;
  else n->st.ack_pkts++;
  /* A switch port with nothing left to send needs no end-of-transmission
   * event: whoever queues the next packet sees busy_until and asks for one
   * (port_busy).  NICs always look for their next packet. */
  int more = !p->is_switch || p->qbytes_total > 0;
  p->tx_gen++; /* an older end event (same-instant race) is now stale */
  p->done_pending = (uint8_t)more;
  uint64_t arr_seq = pk_tie_mark(n, p);
  if (more && pk_evq_push_seq(&n->evq, n->now + t, p->done_seq, EV_TX_DONE, gp, p->tx_gen))
    return oom(n);
  /* The wire is a FIFO (constant delay, in-order serialisation): only its
   * head has an arrival event, so the queue holds one per busy link.  It
   * is a ring of (packet, arrival time, sequence): the next head's time is
   * read from memory just used, not from a packet record sent a delay ago. */
  int64_t arr_t = n->now + t + p->delay_ps;
  if (p->wire_n == p->wire_cap && wire_grow(p)) return oom(n);
  pk_wire_slot_t *w = &p->wire[(p->wire_head + p->wire_n) & (p->wire_cap - 1)];
  w->pkt = pi;
  w->arr_t = arr_t;
  w->arr_seq = arr_seq;
  if (!p->wire_n++ && pk_evq_push_seq(&n->evq, arr_t, arr_seq, EV_ARRIVE, gp, 0)) return oom(n);
  return 0;
}

/* 1 when the port is still serialising (an end event is then pending).
 * At the very end of a serialisation the port is still busy for events that
 * ns-3 would run before its end event (see pk_tie_mark). */
static int port_busy(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  if (p->busy_until < n->now || (p->busy_until == n->now && p->done_seq <= n->cur_seq)) return 0;
  if (!p->done_pending) {
    p->done_pending = 1;
    if (pk_evq_push_seq(&n->evq, p->busy_until, p->done_seq, EV_TX_DONE, gp, ++p->tx_gen)) oom(n);
  }
  return 1;
}

/* ---------------------------------------------------------------- MMU */

static uint64_t pfc_thresh(const pk_node_t *s, const pk_port_t *p) {
  uint64_t used = s->total_hdrm + s->total_rsrv + s->shared_used;
  uint64_t free_ = s->buffer > used ? s->buffer - used : 0;
  return free_ >> p->pfc_shift;
}

static uint64_t shared_used(const pk_port_t *p, int q) {
  return p->ing_bytes[q] > PK_RESERVE ? p->ing_bytes[q] - PK_RESERVE : 0;
}

static int send_pfc(pk_net_t *n, uint32_t gp, int q, int pause) {
  uint32_t pi = pkt_alloc(n);
  if (pi == PK_NONE) return oom(n);
  pk_pkt_t *k = &n->pkts[pi];
  memset(k, 0, sizeof *k);
  k->type = PK_PFC;
  k->pg = (uint8_t)q;
  k->pfc_pause = (uint8_t)pause;
  k->size = n->pfc_size;
  k->flow = PK_NONE;
  pk_port_t *p = &n->ports[gp];
  fifo_push(n, p, 0, pi);
  p->qbytes_total += k->size;
  return port_kick(n, gp);
}

/* ----------------------------------------------------------- switches */

static int switch_dequeue(pk_net_t *n, uint32_t gp);

/* Start the port's next packet unless it is serialising one.  The busy
 * case (about half the calls) is kept apart from the dequeue so it does
 * not pay for the larger function's setup. */
static inline int switch_kick(pk_net_t *n, uint32_t gp) {
  if (port_busy(n, gp)) return n->stopped == 2 ? ETSIM_ENOMEM : 0;
  return switch_dequeue(n, gp);
}

static int switch_dequeue(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  int qi;
  if (p->qmask & 1u) qi = 0;
  else {
    /* round robin over 1..7: the first ready queue after rr, else the
     * first from the bottom (rr itself comes last) */
    unsigned ready = p->qmask & ~p->paused & 0xfeu;
    if (!ready) return 0;
    unsigned after = ready & (0xffu << (p->rr + 1));
    qi = __builtin_ctz(after ? after : ready);
    p->rr = (uint8_t)qi;
  }
  uint32_t pi = fifo_pop(n, p, qi);
  pk_pkt_t *k = &n->pkts[pi];
  p->qbytes_total -= k->size;
  if (qi) {
    pk_node_t *s = &n->nodes[p->node];
    pk_port_t *in = &n->ports[s->port0 + k->in_port];
    uint32_t sz = k->size;
    uint32_t from_hdrm = in->hdrm_bytes[qi] < sz ? in->hdrm_bytes[qi] : sz;
    uint64_t sh = shared_used(in, qi);
    uint64_t from_shared = sz - from_hdrm < sh ? sz - from_hdrm : sh;
    in->hdrm_bytes[qi] -= from_hdrm;
    in->ing_bytes[qi] -= sz - from_hdrm;
    s->shared_used -= from_shared;
    if (n->cfg.enable_qcn && k->type == PK_DATA) {
      uint64_t e = p->q[qi].bytes;
      if (e > p->kmax) k->ecn = 1;
      else if (e > p->kmin && p->kmax > p->kmin) {
        double pr = p->pmax * (double)(e - p->kmin) / (double)(p->kmax - p->kmin);
        if (etsim_rng_uniform(&n->rng) < pr) k->ecn = 1;
      }
      if (k->ecn) n->st.ecn_marks++;
    }
    if ((in->ing_paused & (1u << qi)) && in->hdrm_bytes[qi] == 0) {
      uint64_t su = shared_used(in, qi);
      if (su == 0 || su + PK_RESUME_OFFSET <= pfc_thresh(s, in)) {
        in->ing_paused &= (uint8_t) ~(1u << qi);
        int rc = send_pfc(n, s->port0 + k->in_port, qi, 0);
        if (rc) return rc;
        k = &n->pkts[pi];
      }
    }
  }
  if (n->cc == &etsim_net__pkt_cc_hpcc && k->type == PK_DATA && k->nhop < PK_MAX_HOPS) {
    /* ns-3's IntHop keeps time in ns, bytes in 128 B units and queue
     * length in 80 B units (times INT_MULTI); the HPCC rate law sees those
     * steps, so they are kept here too. */
    pk_hop_t *h = n->hops + (size_t)pi * PK_MAX_HOPS + k->nhop++;
    uint64_t bu = 128ull * n->cfg.int_multi, qu = 80ull * n->cfg.int_multi;
    h->ts_ps = n->now / 1000 * 1000;
    h->tx_bytes = p->tx_bytes / bu * bu;
    h->qlen_bytes = p->qbytes_total / qu * qu;
    h->rate_bps = p->rate_bps;
  }
  return transmit(n, gp, pi);
}

static int switch_receive(pk_net_t *n, uint32_t gp, uint32_t pi) {
  pk_port_t *inp = &n->ports[gp];
  uint32_t node = inp->node;
  pk_node_t *s = &n->nodes[node];
  pk_pkt_t *k = &n->pkts[pi];
  pk_qp_t *q = &n->qps[k->flow];
  uint32_t route = k->type == PK_DATA ? q->route_data : q->route_ack;
  uint32_t out;
  k->hop++;
  if (route != PK_NONE) out = n->routes[route + k->hop];
  else {
    uint32_t dst = k->type == PK_DATA ? q->dst : q->src;
    uint32_t hd = n->nodes[dst].host_idx;
    uint32_t lo = s->rt_off[hd], cnt = s->rt_off[hd + 1] - lo;
    if (!cnt) { /* cannot happen: create() checked connectivity */
      pkt_free(n, pi);
      n->st.drops_buffer++;
      return 0;
    }
    uint32_t pick = 0;
    if (cnt > 1) {
      uint32_t sip = k->type == PK_DATA ? q->sip : q->dip;
      uint32_t dip = k->type == PK_DATA ? q->dip : q->sip;
      uint32_t sp = k->type == PK_DATA ? q->sport : q->dport;
      uint32_t dp = k->type == PK_DATA ? q->dport : q->sport;
      pick = murmur12(sip, dip, sp | (dp << 16), node) % cnt;
    }
    out = s->port0 + s->rt_port[lo + pick];
  }
  int qi = (k->type != PK_DATA && n->cfg.ack_high_prio) ? 0 : k->pg;
  k->in_port = (uint16_t)(gp - s->port0);
  if (qi) {
    uint32_t sz = k->size;
    uint64_t th = pfc_thresh(s, inp);
    if (sz + inp->hdrm_bytes[qi] > inp->headroom && sz + shared_used(inp, qi) > th) {
      pkt_free(n, pi);
      n->st.drops_buffer++;
      return 0;
    }
    uint64_t nb = (uint64_t)inp->ing_bytes[qi] + sz;
    if (nb <= PK_RESERVE) inp->ing_bytes[qi] += sz;
    else if (nb - PK_RESERVE > th) inp->hdrm_bytes[qi] += sz;
    else {
      inp->ing_bytes[qi] += sz;
      s->shared_used += sz < nb - PK_RESERVE ? sz : nb - PK_RESERVE;
    }
    uint64_t occ = s->shared_used;
    if (occ > s->peak_used) s->peak_used = occ;
  }
  pk_port_t *op = &n->ports[out];
  fifo_push(n, op, qi, pi);
  op->qbytes_total += k->size;
  if (op->qbytes_total > op->qbytes_peak) op->qbytes_peak = op->qbytes_total;
  if (qi && !(inp->ing_paused & (1u << qi)) &&
      (inp->hdrm_bytes[qi] > 0 || shared_used(inp, qi) >= pfc_thresh(s, inp))) {
    inp->ing_paused |= (uint8_t)(1u << qi);
    int rc = send_pfc(n, gp, qi, 1);
    if (rc) return rc;
  }
  return switch_kick(n, out);
}

/* ---------------------------------------------------------------- NICs */

static int win_bound(const pk_net_t *n, pk_qp_t *q) {
  if (!q->win) return 0;
  uint64_t w = q->win;
  if (n->cfg.var_win) {
    /* the scaled window changes only with the rate (or window): keep the
     * last one */
    if (q->rate != q->var_win_rate || q->win != q->var_win_base) {
      w = (uint64_t)((double)q->win * (double)q->rate / (double)q->max_rate);
      q->var_win = w ? w : 1;
      q->var_win_rate = q->rate;
      q->var_win_base = q->win;
    }
    w = q->var_win;
  }
  return q->snd_nxt - q->snd_una >= w;
}

/* Send the NIC's next packet if it is idle: an ACK, else the next queue
 * pair in round-robin order that may send now; otherwise a wake-up by
 * ns-3's rule (see the end of nic_send).  qps_same: the caller changed no queue pair and no
 * pause state since the last call (the end of a transmission, an ACK
 * queued), so a previous finding that every queue pair is blocked until
 * such a change (done, window-bound or paused) still holds and the scan
 * is skipped.  Any other call forgets that finding. */
static int nic_send(pk_net_t *n, uint32_t gp);

static inline int nic_kick_(pk_net_t *n, uint32_t gp, int qps_same) {
  if (!qps_same) n->ports[gp].qps_blocked = 0;
  if (port_busy(n, gp)) return n->stopped == 2 ? ETSIM_ENOMEM : 0;
  return nic_send(n, gp);
}

static int nic_send(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  int ack_prio = n->cfg.ack_high_prio ? 0 : 3;
  if (p->q[0].n && !(p->paused & (1u << ack_prio))) {
    uint32_t pi = fifo_pop(n, p, 0);
    p->qbytes_total -= n->pkts[pi].size;
    return transmit(n, gp, pi);
  }
  size_t cnt = p->n_qps;
  int64_t min_next = INT64_MAX; /* earliest pacing time of a queue pair that
                                   only waits for it */
  if (p->qps_blocked) goto wake;
  for (size_t i = 1; i <= cnt; i++) {
    size_t idx = (p->qp_rr + i) % cnt;
    pk_qp_t *q = &n->qps[p->qps[idx]];
    /* cheapest and most often decisive tests first; pg only if paused */
    if (q->snd_nxt >= q->size || (p->paused && (p->paused & (1u << q->pg))) || win_bound(n, q))
      continue;
    if (q->next_avail > n->now) {
      if (q->next_avail < min_next) min_next = q->next_avail;
      continue;
    }
    p->qp_rr = idx;
    uint32_t pi = pkt_alloc(n);
    if (pi == PK_NONE) return oom(n);
    pk_pkt_t *k = &n->pkts[pi];
    uint64_t left = q->size - q->snd_nxt;
    uint32_t pay = left < n->cfg.payload_bytes ? (uint32_t)left : n->cfg.payload_bytes;
    memset(k, 0, sizeof *k);
    k->type = PK_DATA;
    k->flow = (uint32_t)(q - n->qps);
    k->seq = q->snd_nxt;
    k->payload = (uint16_t)pay;
    k->size = pay + n->data_hdr;
    k->pg = q->pg;
    k->ts_ps = n->now;
    q->snd_nxt += pay;
    q->last_pkt_size = k->size;
    uint64_t pace = n->cfg.rate_bound ? q->rate : q->max_rate;
    q->next_avail =
        n->now + (pace == p->rate_bps ? port_tx_time(n, p, k->size) : tx_time(n, k->size, pace));
    n->last_progress = n->now;
    return transmit(n, gp, pi);
  }
  /* No queue pair can send until one of them changes (all done, paused
   * or window-bound, none only waiting for its pacing time): later kicks
   * that change no queue pair skip the scan (nic_kick_). */
  if (min_next == INT64_MAX) p->qps_blocked = 1;
wake:
  /* As ns-3's QbbNetDevice::DequeueAndTransmit: with nothing to send, wake
   * at the earliest pacing time of all the NIC's queue pairs (window-bound
   * and paused ones too), and only when no wake-up is pending and that time
   * is still ahead; etsim_net__pkt_change_rate moves a pending one earlier. */
  if (p->wake_t >= 0) return 0;
  int64_t t_wake = INT64_MAX;
  for (size_t i = 0; i < cnt; i++) {
    int64_t t = n->qps[p->qps[i]].next_avail;
    if (t < t_wake) t_wake = t;
  }
  if (t_wake != INT64_MAX && t_wake > n->now) {
    p->wake_gen++;
    p->wake_t = t_wake;
    if (pk_evq_push(&n->evq, t_wake, EV_NIC_WAKE, gp, p->wake_gen)) return oom(n);
  }
  return 0;
}

static int nic_kick(pk_net_t *n, uint32_t gp) { return nic_kick_(n, gp, 0); }

static int port_kick(pk_net_t *n, uint32_t gp) {
  return n->ports[gp].is_switch ? switch_kick(n, gp) : nic_kick(n, gp);
}

static void qp_detach(pk_net_t *n, pk_qp_t *q) {
  pk_port_t *p = &n->ports[q->gport];
  uint32_t id = (uint32_t)(q - n->qps);
  for (size_t i = 0; i < p->n_qps; i++)
    if (p->qps[i] == id) {
      memmove(p->qps + i, p->qps + i + 1, (p->n_qps - i - 1) * sizeof *p->qps);
      p->n_qps--;
      if (p->qp_rr >= i && p->qp_rr > 0) p->qp_rr--;
      break;
    }
}

static void qp_complete(pk_net_t *n, pk_qp_t *q) {
  q->finished = 1;
  q->acked_ps = n->now;
  for (int i = 0; i < 3; i++) q->tgen[i]++;
  qp_detach(n, q);
  n->n_active--;
  n->st.msgs_done++;
  n->st.last_done_ps = n->now;
  if (n->fct)
    fprintf(n->fct, "%08x %08x %u %u %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", q->sip,
            q->dip, q->sport, q->dport, q->size, q->start_ps / 1000, (n->now - q->start_ps) / 1000,
            q->standalone_ps / 1000);
  if (q->fn) q->fn(q->ctx, (uint64_t)(q - n->qps), ETSIM_NETPKT_ACKED, n->now);
}

void etsim_net__pkt_change_rate(pk_net_t *n, pk_qp_t *q, uint64_t new_rate) {
  if (q->last_pkt_size) {
    int64_t old_t = tx_time(n, q->last_pkt_size, q->rate);
    int64_t new_t = tx_time(n, q->last_pkt_size, new_rate);
    q->next_avail += new_t - old_t;
    /* ns-3's QbbNetDevice::UpdateNextAvail: a pending wake-up later than
     * the new pacing time is moved to it (at once if that has passed). */
    pk_port_t *p = &n->ports[q->gport];
    if (p->wake_t >= 0 && q->next_avail < p->wake_t) {
      p->wake_gen++;
      p->wake_t = q->next_avail > n->now ? q->next_avail : n->now;
      if (pk_evq_push(&n->evq, p->wake_t, EV_NIC_WAKE, q->gport, p->wake_gen)) n->stopped = 2;
    }
  }
  q->rate = new_rate;
}

void etsim_net__pkt_timer(pk_net_t *n, pk_qp_t *q, int id, int64_t after_ps) {
  if (pk_evq_push(&n->evq, n->now + after_ps, EV_CC_TIMER, (uint32_t)(q - n->qps),
                  ((uint64_t)q->tgen[id] << 8) | (uint64_t)id))
    n->stopped = 2;
}

void etsim_net__pkt_timer_cancel(pk_qp_t *q, int id) { q->tgen[id]++; }

static int host_receive(pk_net_t *n, uint32_t gp, uint32_t pi) {
  (void)gp;
  pk_pkt_t *k = &n->pkts[pi];
  pk_qp_t *q = &n->qps[k->flow];
  if (k->type == PK_DATA) {
    int x;
    uint32_t chunk = n->cfg.l2_chunk_size;
    if (k->seq == q->rcv_nxt) {
      q->rcv_nxt += k->payload;
      n->last_progress = n->now;
      if (q->rcv_nxt >= q->milestone) {
        /* one step per ACK, as ns-3: a milestone far behind (interval 1)
         * means an ACK for every packet */
        q->milestone += n->cfg.l2_ack_interval;
        x = 1;
      } else if (chunk && q->rcv_nxt % chunk == 0) x = 1;
      else x = 5;
    } else if (k->seq > q->rcv_nxt) {
      if (n->now >= q->nack_timer || q->last_nack != q->rcv_nxt) {
        q->nack_timer = n->now + (int64_t)(n->cfg.nack_interval_us * 1e6);
        q->last_nack = q->rcv_nxt;
        if (n->cfg.l2_back_to_zero && chunk) q->rcv_nxt = q->rcv_nxt / chunk * chunk;
        x = 2;
      } else x = 4;
    } else x = 3;
    if (!q->delivered && q->rcv_nxt >= q->size) {
      q->delivered = 1;
      q->delivered_ps = n->now;
      if (q->fn) {
        uint32_t fid = k->flow;
        q->fn(q->ctx, fid, ETSIM_NETPKT_DELIVERED, n->now);
        q = &n->qps[fid]; /* the callback may have grown the arrays */
      }
      k = &n->pkts[pi];
    }
    if (x == 1 || x == 2) {
      /* Reuse the data packet as its ACK: same flow, INT stack and stamp. */
      k->type = x == 1 ? PK_ACK : PK_NACK;
      k->seq = q->rcv_nxt;
      k->cnp = k->ecn;
      if (k->ecn) n->st.cnps++;
      k->ecn = 0;
      k->size = n->ack_size;
      k->payload = 0;
      k->hop = 0;
      pk_port_t *rp = &n->ports[q->rx_gport];
      fifo_push(n, rp, 0, pi);
      rp->qbytes_total += k->size;
      return nic_kick_(n, q->rx_gport, 1);
    }
    pkt_free(n, pi);
    return 0;
  }
  /* ACK or NACK at the sender */
  if (q->finished) {
    pkt_free(n, pi);
    return 0;
  }
  uint64_t seq = k->seq;
  if (n->cfg.l2_back_to_zero && n->cfg.l2_chunk_size)
    seq = seq / n->cfg.l2_chunk_size * n->cfg.l2_chunk_size;
  if (seq > q->snd_una) {
    q->snd_una = seq;
    n->last_progress = n->now;
  }
  if (q->snd_una >= q->size) {
    uint32_t gport = q->gport;
    pkt_free(n, pi);
    qp_complete(n, q); /* q may move: its callback can send */
    return nic_kick(n, gport);
  }
  if (k->type == PK_NACK) q->snd_nxt = q->snd_una;
  if (n->cc->on_ack) n->cc->on_ack(n, q, k);
  pkt_free(n, pi);
  if (n->stopped == 2) return ETSIM_ENOMEM;
  return nic_kick(n, q->gport);
}

static int on_arrive(pk_net_t *n, uint32_t gp, uint32_t pi) {
  pk_port_t *p = &n->ports[gp];
  pk_pkt_t *k = &n->pkts[pi];
  if (k->type == PK_PFC) {
    int q = k->pg;
    uint8_t bit = (uint8_t)(1u << q);
    int pause = k->pfc_pause;
    pkt_free(n, pi);
    if (pause) {
      if (!(p->paused & bit)) {
        p->paused |= bit;
        p->paused_since[q] = n->now;
      }
      p->pauses_rx++;
      n->st.pauses++;
    } else {
      if (p->paused & bit) {
        p->paused &= (uint8_t)~bit;
        p->paused_ps += n->now - p->paused_since[q];
        n->st.paused_ps += n->now - p->paused_since[q];
      }
      n->st.resumes++;
    }
    if (n->pfc)
      fprintf(n->pfc, "%" PRId64 " %u %u %u %u\n", n->now / 1000, p->node,
              n->nodes[p->node].is_switch ? 1u : 0u, p->ifindex, pause ? 1u : 0u);
    return pause ? 0 : port_kick(n, gp);
  }
  double er = p->err;
  if (er > 0 && etsim_rng_uniform(&n->rng) < er) {
    pkt_free(n, pi);
    n->st.drops_error++;
    return 0;
  }
  if (p->is_switch) return switch_receive(n, gp, pi);
  return host_receive(n, gp, pi);
}

/* ------------------------------------------------------------- deadlock */

static int stall_report(pk_net_t *n, etsim_error_t *err) {
  /* Waits-for graph: node A waits on B when A's port towards B is paused
   * on a priority that still holds packets. */
  uint32_t nn = n->n_nodes;
  uint8_t *color = etsim_calloc(nn, 1);
  uint32_t *parent = etsim_malloc(nn * sizeof *parent);
  uint32_t *stack = etsim_malloc(nn * sizeof *stack);
  uint32_t *pit = etsim_malloc(nn * sizeof *pit);
  char cyc[512] = "";
  if (color && parent && stack && pit) {
    for (uint32_t s0 = 0; s0 < nn && !cyc[0]; s0++) {
      if (color[s0]) continue;
      size_t sp = 0;
      stack[sp++] = s0;
      pit[s0] = 0;
      color[s0] = 1;
      while (sp && !cyc[0]) {
        uint32_t u = stack[sp - 1];
        pk_node_t *nd = &n->nodes[u];
        if (pit[u] >= nd->nports) {
          color[u] = 2;
          sp--;
          continue;
        }
        pk_port_t *p = &n->ports[nd->port0 + pit[u]++];
        int waits = 0;
        for (int q = 1; q < PK_NPRIO; q++)
          if ((p->paused & (1u << q)) && p->q[q].n) waits = 1;
        if (!waits) continue;
        uint32_t v = p->peer;
        if (color[v] == 1) {
          int len = 0;
          uint32_t path[64];
          size_t k = sp;
          while (k > 0 && len < 63) {
            path[len++] = stack[--k];
            if (stack[k] == v) break;
          }
          size_t off = 0;
          for (int i = len - 1; i >= 0 && off < sizeof cyc - 16; i--)
            off += (size_t)snprintf(cyc + off, sizeof cyc - off, "%u -> ", path[i]);
          snprintf(cyc + off, sizeof cyc - off, "%u", v);
        } else if (!color[v]) {
          color[v] = 1;
          pit[v] = 0;
          parent[v] = u;
          stack[sp++] = v;
        }
      }
    }
  }
  etsim_free(color);
  etsim_free(parent);
  etsim_free(stack);
  etsim_free(pit);
  size_t stuck = 0, first = SIZE_MAX;
  for (size_t i = 0; i < n->n_qps; i++)
    if (n->qps[i].started && !n->qps[i].finished) {
      stuck++;
      if (first == SIZE_MAX) first = i;
    }
  if (cyc[0])
    return etsim_error_set(err, ETSIM_EDEADLOCK,
                           "PFC deadlock at %.3f us: pause cycle %s; %zu "
                           "flow(s) can never finish",
                           (double)n->now / 1e6, cyc, stuck);
  if (first != SIZE_MAX) {
    pk_qp_t *q = &n->qps[first];
    return etsim_error_set(err, ETSIM_EDEADLOCK,
                           "no progress for %.3f us at %.3f us: %zu flow(s) unfinished, e.g. "
                           "flow %zu (%u -> %u) acked %" PRIu64 " of %" PRIu64
                           " bytes (lost packet and no retransmission timeout?)",
                           (double)n->cfg.stall_ps / 1e6, (double)n->now / 1e6, stuck, first,
                           q->src, q->dst, q->snd_una, q->size);
  }
  return 0;
}

/* ------------------------------------------------------------ run loop */

static int qlen_sample(pk_net_t *n) {
  for (uint32_t i = 0; i < n->n_ports; i++) {
    pk_port_t *p = &n->ports[i];
    if (!n->nodes[p->node].is_switch) continue;
    uint64_t eb = 0;
    for (int q = 1; q < PK_NPRIO; q++) eb += p->q[q].bytes;
    size_t kb = (size_t)(eb / 1000);
    if (kb >= p->n_hist) {
      size_t cap = p->n_hist;
      if (etsim_grow((void **)&p->hist, &cap, kb + 1, sizeof *p->hist)) return oom(n);
      memset(p->hist + p->n_hist, 0, (cap - p->n_hist) * sizeof *p->hist);
      p->n_hist = cap;
    }
    p->hist[kb]++;
  }
  int64_t nt = n->now + n->cfg.qlen_interval_ns * 1000;
  if (nt <= n->cfg.qlen_mon_end_ns * 1000 && pk_evq_push(&n->evq, nt, EV_QLEN, 0, 0)) return oom(n);
  return 0;
}

static int on_event(pk_net_t *n, const pk_ev_t *e, etsim_error_t *err) {
  switch (e->kind) {
    case EV_TX_DONE:
      if ((uint32_t)e->b != n->ports[e->a].tx_gen) return 0;
      n->ports[e->a].done_pending = 0;
      return n->ports[e->a].is_switch ? switch_kick(n, e->a) : nic_kick_(n, e->a, 1);
    case EV_ARRIVE: {
      pk_port_t *p = &n->ports[e->a];
      uint32_t pi = p->wire[p->wire_head].pkt;
      p->wire_head = (p->wire_head + 1) & (p->wire_cap - 1);
      if (--p->wire_n && pk_evq_push_seq(&n->evq, p->wire[p->wire_head].arr_t,
                                         p->wire[p->wire_head].arr_seq, EV_ARRIVE, e->a, 0))
        return oom(n);
      return on_arrive(n, p->peer_gport, pi);
    }
    case EV_NIC_WAKE: {
      pk_port_t *p = &n->ports[e->a];
      if ((uint32_t)e->b != p->wake_gen) return 0;
      p->wake_t = -1;
      return nic_kick(n, e->a);
    }
    case EV_FLOW_START: {
      pk_qp_t *q = &n->qps[e->a];
      pk_port_t *p = &n->ports[q->gport];
      q->started = 1;
      if (etsim_grow((void **)&p->qps, &p->cap_qps, p->n_qps + 1, sizeof *p->qps)) return oom(n);
      p->qps[p->n_qps++] = e->a;
      if (!n->watchdog_on) {
        n->watchdog_on = 1;
        n->last_progress = n->now;
        if (pk_evq_push(&n->evq, n->now + n->cfg.stall_ps, EV_WATCHDOG, 0, 0)) return oom(n);
      }
      return nic_kick(n, q->gport);
    }
    case EV_CC_TIMER: {
      pk_qp_t *q = &n->qps[e->a];
      int id = (int)(e->b & 0xff);
      if (q->finished || (uint32_t)(e->b >> 8) != q->tgen[id]) return 0;
      if (n->cc->on_timer) n->cc->on_timer(n, q, id);
      if (n->stopped == 2) return ETSIM_ENOMEM;
      return nic_kick(n, q->gport);
    }
    case EV_QLEN:
      return qlen_sample(n);
    case EV_WATCHDOG: {
      if (!n->n_active) {
        n->watchdog_on = 0;
        return 0;
      }
      int running = 0;
      for (size_t i = 0; i < n->n_qps && !running; i++)
        running = n->qps[i].started && !n->qps[i].finished;
      if (!running) n->last_progress = n->now;
      else if (n->now - n->last_progress >= n->cfg.stall_ps) {
        int rc = stall_report(n, err);
        if (rc) return rc;
      }
      if (pk_evq_push(&n->evq, n->now + n->cfg.stall_ps, EV_WATCHDOG, 0, 0)) return oom(n);
      return 0;
    }
  }
  return etsim_error_set(err, ETSIM_EINTERNAL, "unknown event kind %u", e->kind);
}

int etsim_netpkt_run_until(etsim_netpkt_t *net, int64_t t_ps, etsim_error_t *err) {
  pk_net_t *n = (pk_net_t *)net;
  if (n->stopped == 2) return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  int64_t t_max = t_ps < n->cfg.stop_ps ? t_ps : n->cfg.stop_ps;
  for (;;) {
    pk_ev_t e;
    if (!pk_evq_pop_until(&n->evq, t_max, &e)) {
      int64_t t = pk_evq_peek_t(&n->evq);
      if (t != INT64_MAX && t <= t_ps && t > n->cfg.stop_ps) n->stopped = 1;
      return 0;
    }
    if (e.kind == EV_WATCHDOG && !n->n_active) {
      n->watchdog_on = 0; /* idle: the clock stays at the last real event */
      continue;
    }
    n->now = e.t;
    n->cur_seq = e.seq;
    n->st.events++;
    int rc = on_event(n, &e, err);
    if (rc) {
      if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "network: out of memory");
      return rc;
    }
  }
}

int64_t etsim_netpkt_next_time(const etsim_netpkt_t *net) {
  const pk_net_t *n = (const pk_net_t *)net;
  int64_t t = pk_evq_peek_t(&n->evq);
  if (n->stopped || t > n->cfg.stop_ps) return INT64_MAX;
  return t;
}

int64_t etsim_netpkt_now(const etsim_netpkt_t *net) { return ((const pk_net_t *)net)->now; }

/* --------------------------------------------------------------- setup */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int build_routes(pk_net_t *n, const etsim_netpkt_topo_t *t, etsim_error_t *err) {
  uint32_t nn = n->n_nodes, nh = n->n_hosts;
  int rc = 0;
  int32_t *dist = etsim_malloc(nn * sizeof *dist);
  uint32_t *order = etsim_malloc(nn * sizeof *order);
  uint32_t *rank = etsim_malloc(nn * sizeof *rank);
  int64_t *dly = etsim_malloc(nn * sizeof *dly);
  int64_t *txd = etsim_malloc(nn * sizeof *txd);
  uint64_t *bw = etsim_malloc(nn * sizeof *bw);
  /* per node, per host: candidate lists built host by host */
  uint32_t **lists = etsim_calloc(nn, sizeof *lists);
  size_t *lens = etsim_calloc(nn, sizeof *lens), *caps = etsim_calloc(nn, sizeof *caps);
  uint64_t *nbr = etsim_malloc((n->n_ports ? n->n_ports : 1) * sizeof *nbr);
  if (nbr) {
    for (uint32_t i = 0; i < n->n_ports; i++) nbr[i] = ((uint64_t)n->ports[i].peer << 32) | i;
    for (uint32_t v = 0; v < nn; v++)
      etsim_qsort(nbr + n->nodes[v].port0, n->nodes[v].nports, sizeof *nbr, cmp_u64);
  }
  n->pair_rtt_ps = etsim_calloc((size_t)nh * nh, sizeof *n->pair_rtt_ps);
  n->pair_bw = etsim_calloc((size_t)nh * nh, sizeof *n->pair_bw);
  for (uint32_t v = 0; v < nn; v++) {
    n->nodes[v].rt_off = etsim_calloc(nh + 1, sizeof(uint32_t));
    if (!n->nodes[v].rt_off) rc = ETSIM_ENOMEM;
  }
  if (!nbr || !dist || !order || !rank || !dly || !txd || !bw || !lists || !lens || !caps ||
      !n->pair_rtt_ps || !n->pair_bw || rc) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t hi = 0; hi < nh; hi++) {
    uint32_t h = n->hosts[hi];
    for (uint32_t v = 0; v < nn; v++) dist[v] = -1;
    size_t qh = 0, qt = 0;
    order[qt++] = h;
    dist[h] = 0;
    dly[h] = txd[h] = 0;
    bw[h] = UINT64_MAX;
    while (qh < qt) {
      uint32_t u = order[qh];
      rank[u] = (uint32_t)qh++;
      if (u != h && !n->nodes[u].is_switch) continue; /* hosts are endpoints, never transit */
      pk_node_t *nu = &n->nodes[u];
      /* neighbours in increasing node id, as ns-3's per-node map orders them */
      const uint64_t *cand = nbr + nu->port0;
      uint32_t nc = nu->nports;
      for (uint32_t c = 0; c < nc; c++) {
        pk_port_t *p = &n->ports[(uint32_t)cand[c]];
        uint32_t v = p->peer;
        if (dist[v] < 0) {
          dist[v] = dist[u] + 1;
          dly[v] = dly[u] + p->delay_ps / 1000;
          txd[v] =
              txd[u] + (int64_t)((uint64_t)n->cfg.payload_bytes * 1000000000ull * 8 / p->rate_bps);
          bw[v] = bw[u] < p->rate_bps ? bw[u] : p->rate_bps;
          order[qt++] = v;
        }
        if (dist[v] == dist[u] + 1) {
          /* v reaches h through u: v's port facing u */
          uint32_t back = p->peer_gport;
          if (etsim_grow((void **)&lists[v], &caps[v], lens[v] + 1, sizeof(uint32_t))) {
            rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
            goto done;
          }
          lists[v][lens[v]++] = back - n->nodes[v].port0;
        }
      }
    }
    for (uint32_t hj = 0; hj < nh; hj++) {
      uint32_t s = n->hosts[hj];
      if (s == h) continue;
      if (dist[s] < 0) {
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: topology is disconnected: host %u cannot "
                             "reach host %u",
                             t->name ? t->name : "topology", s, h);
        goto done;
      }
      /* ns-3: pairRtt[s][h] = 2 * delay + tx delay of one payload per hop */
      n->pair_rtt_ps[(size_t)hj * nh + hi] = (2 * dly[s] + txd[s]) * 1000;
      n->pair_bw[(size_t)hj * nh + hi] = bw[s];
    }
    /* fold the lists for destination hi into the CSR arrays */
    for (uint32_t v = 0; v < nn; v++) {
      pk_node_t *nd = &n->nodes[v];
      nd->rt_off[hi + 1] = (uint32_t)lens[v];
    }
  }
  /* rt_off[hi+1] currently holds the cumulative list length after host hi */
  for (uint32_t v = 0; v < nn; v++) {
    pk_node_t *nd = &n->nodes[v];
    nd->rt_port = etsim_malloc((lens[v] ? lens[v] : 1) * sizeof(uint16_t));
    if (!nd->rt_port) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    for (size_t k = 0; k < lens[v]; k++) nd->rt_port[k] = (uint16_t)lists[v][k];
  }
  (void)rank;
done:
  if (lists)
    for (uint32_t v = 0; v < nn; v++) etsim_free(lists[v]);
  etsim_free(lists);
  etsim_free(nbr);
  etsim_free(lens);
  etsim_free(caps);
  etsim_free(dist);
  etsim_free(order);
  etsim_free(rank);
  etsim_free(dly);
  etsim_free(txd);
  etsim_free(bw);
  return rc;
}

/* Size the calendar from the fabric.  With the wires as FIFOs, an event
 * is rarely queued more than a packet time ahead, and a busy port has
 * about two pending, so one bucket per packet time / ports holds about
 * two events (no narrower than the serialisation rounding, which leaves
 * narrower buckets empty).  The window covers four link delays plus a
 * packet time, so a first arrival on an idle link and timers of a few
 * link delays stay in the calendar too.  Only speed depends on this,
 * never the order of events. */
static int evq_setup(pk_net_t *n, uint32_t mtu_wire) {
  int64_t span = 1, tx_min = INT64_MAX;
  for (uint32_t i = 0; i < n->n_ports; i++) {
    const pk_port_t *p = &n->ports[i];
    int64_t tx = tx_time(n, mtu_wire, p->rate_bps);
    if (p->delay_ps + tx > span) span = p->delay_ps + tx;
    if (tx < tx_min) tx_min = tx;
  }
  uint64_t width = (uint64_t)(tx_min > 0 ? tx_min : 1) / (n->n_ports + 1);
  if (n->cfg.tx_round_ps > 0 && width < (uint64_t)n->cfg.tx_round_ps)
    width = (uint64_t)n->cfg.tx_round_ps;
  uint32_t shift = 0, nb_log = 6;
  while (shift < 40 && ((uint64_t)2 << shift) <= width) shift++;
  while (nb_log < 20 && ((uint64_t)1 << (nb_log + shift)) < 4 * (uint64_t)span) nb_log++;
  return etsim_net__pkt_evq_init(&n->evq, shift, nb_log);
}

int etsim_netpkt_create(etsim_netpkt_t **out, const etsim_netpkt_topo_t *t,
                        const etsim_netpkt_cfg_t *cfg, etsim_error_t *err) {
  const char *tn = t->name ? t->name : "topology";
  pk_net_t *n = etsim_calloc(1, sizeof *n);
  if (!n) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int rc = 0;
  n->cfg = *cfg;
  switch (cfg->cc_mode) {
    case ETSIM_NETPKT_CC_NONE:
      n->cc = &etsim_net__pkt_cc_none;
      break;
    case ETSIM_NETPKT_CC_DCQCN:
      n->cc = &etsim_net__pkt_cc_dcqcn;
      break;
    case ETSIM_NETPKT_CC_HPCC:
      n->cc = &etsim_net__pkt_cc_hpcc;
      break;
    case ETSIM_NETPKT_CC_TIMELY:
      n->cc = &etsim_net__pkt_cc_timely;
      break;
    case ETSIM_NETPKT_CC_DCTCP:
      n->cc = &etsim_net__pkt_cc_dctcp;
      break;
    default:
      etsim_free(n);
      return etsim_error_set(err, ETSIM_EINVAL, "CC_MODE %d unknown", cfg->cc_mode);
  }
  if (cfg->payload_bytes < 1 || cfg->payload_bytes > 65000) {
    etsim_free(n);
    return etsim_error_set(err, ETSIM_EINVAL, "PACKET_PAYLOAD_SIZE %u not in 1..65000",
                           cfg->payload_bytes);
  }
  /* Every host needs a link; checked before the per-node tables are
   * allocated, so a header that claims millions of nodes and gives no links
   * costs a byte per node, not the tables' hundreds of MB. */
  uint8_t *linked = etsim_calloc(t->n_nodes ? t->n_nodes : 1, 1);
  if (!linked) {
    etsim_free(n);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < t->n_links; i++) linked[t->links[i].a] = linked[t->links[i].b] = 1;
  for (uint32_t v = 0; v < t->n_nodes; v++)
    if (!t->is_switch[v] && !linked[v]) {
      etsim_free(linked);
      etsim_free(n);
      return etsim_error_set(err, ETSIM_EINVAL, "%s: host %u has no link", tn, v);
    }
  etsim_free(linked);
  n->free_pkt = PK_NONE;
  n->n_nodes = t->n_nodes;
  n->data_hdr = PK_DATA_HDR + n->cc->int_bytes;
  uint32_t qbb = 12 + n->cc->int_bytes;
  n->ack_size = (qbb < 26 ? 26 - qbb : 0) + qbb + 22;
  n->pfc_size = PK_PFC_BYTES;
  etsim_rng_seed(&n->rng, cfg->seed);
  etsim_u64map_init(&n->sport_map);
  n->nodes = etsim_calloc(t->n_nodes ? t->n_nodes : 1, sizeof *n->nodes);
  n->ports = etsim_calloc(2 * t->n_links + 1, sizeof *n->ports);
  n->hosts = etsim_calloc(t->n_nodes ? t->n_nodes : 1, sizeof *n->hosts);
  if (!n->nodes || !n->ports || !n->hosts) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  for (uint32_t v = 0; v < t->n_nodes; v++) {
    n->nodes[v].is_switch = t->is_switch[v];
    n->nodes[v].host_idx = PK_NONE;
    if (!t->is_switch[v]) {
      n->nodes[v].host_idx = n->n_hosts;
      n->hosts[n->n_hosts++] = v;
    }
  }
  if (n->n_hosts == 0) {
    rc = etsim_error_set(err, ETSIM_EINVAL, "%s: no hosts", tn);
    goto fail;
  }
  /* ports: count per node, then assign in link order (ns-3 ifindex) */
  for (size_t i = 0; i < t->n_links; i++) {
    n->nodes[t->links[i].a].nports++;
    n->nodes[t->links[i].b].nports++;
  }
  uint32_t acc = 0;
  for (uint32_t v = 0; v < t->n_nodes; v++) {
    if (n->nodes[v].nports > 65535) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: node %u has more than 65535 links", tn, v);
      goto fail;
    }
    n->nodes[v].port0 = acc;
    acc += n->nodes[v].nports;
    n->nodes[v].nports = 0;
  }
  n->n_ports = acc;
  for (size_t i = 0; i < t->n_links; i++) {
    const etsim_netpkt_link_t *l = &t->links[i];
    uint32_t ga = n->nodes[l->a].port0 + n->nodes[l->a].nports++;
    uint32_t gb = n->nodes[l->b].port0 + n->nodes[l->b].nports++;
    double er = l->error_rate > 0 ? l->error_rate : cfg->error_rate_per_link;
    pk_port_t *pa = &n->ports[ga], *pb = &n->ports[gb];
    pa->node = l->a;
    pa->is_switch = t->is_switch[l->a];
    pb->is_switch = t->is_switch[l->b];
    pa->peer = l->b;
    pa->peer_gport = gb;
    pb->node = l->b;
    pb->peer = l->a;
    pb->peer_gport = ga;
    pa->ifindex = (uint16_t)(ga - n->nodes[l->a].port0 + 1);
    pb->ifindex = (uint16_t)(gb - n->nodes[l->b].port0 + 1);
    pa->rate_bps = pb->rate_bps = l->rate_bps;
    pa->delay_ps = pb->delay_ps = l->delay_ps;
    pa->err = pb->err = er;
    pa->wake_t = pb->wake_t = -1;
  }
  /* NIC rate: the first host's first port (ns-3 get_nic_rate) */
  n->nic_rate = n->ports[n->nodes[n->hosts[0]].port0].rate_bps;
  uint32_t mtu_wire = cfg->payload_bytes + n->data_hdr;
  n->mtu_wire = mtu_wire;
  for (uint32_t i = 0; i < n->n_ports; i++) {
    n->ports[i].tx_mtu_ps = tx_time(n, mtu_wire, n->ports[i].rate_bps);
    n->ports[i].tx_ack_ps = tx_time(n, n->ack_size, n->ports[i].rate_bps);
  }
  for (uint32_t v = 0; v < t->n_nodes; v++) {
    pk_node_t *s = &n->nodes[v];
    if (!s->is_switch) continue;
    s->buffer = (uint64_t)cfg->buffer_mb * 1024 * 1024;
    for (uint32_t k = 0; k < s->nports; k++) {
      pk_port_t *p = &n->ports[s->port0 + k];
      uint64_t rate = p->rate_bps;
      if (cfg->enable_qcn) {
        uint32_t e;
        for (e = 0; e < cfg->n_ecn; e++)
          if (cfg->ecn_rate_bps[e] == rate) break;
        if (e == cfg->n_ecn) {
          rc = etsim_error_set(err, ETSIM_EINVAL,
                               "KMIN_MAP/KMAX_MAP/PMAX_MAP: no entry for link "
                               "rate %" PRIu64 " b/s (switch %u port %u)",
                               rate, v, p->ifindex);
          goto fail;
        }
        p->kmin = (uint64_t)cfg->kmin_kb[e] * 1000;
        p->kmax = (uint64_t)cfg->kmax_kb[e] * 1000;
        p->pmax = cfg->pmax[e];
      }
      p->headroom = rate * (uint64_t)(p->delay_ps / 1000) / 8 / 1000000000ull * 3;
      p->pfc_shift = 3;
      while (rate > n->nic_rate && p->pfc_shift > 0) {
        p->pfc_shift--;
        rate /= 2;
      }
      s->total_hdrm += p->headroom;
      s->total_rsrv += PK_RESERVE;
    }
    if (s->buffer < s->total_hdrm + s->total_rsrv + mtu_wire) {
      rc =
          etsim_error_set(err, ETSIM_EINVAL,
                          "BUFFER_SIZE: %u MiB is too small for switch %u "
                          "(headroom %" PRIu64 " + reserve %" PRIu64 " bytes + one %u-byte packet)",
                          cfg->buffer_mb, v, s->total_hdrm, s->total_rsrv, mtu_wire);
      goto fail;
    }
  }
  if ((rc = build_routes(n, t, err))) goto fail;
  /* ns-3: BDP and RTT over all host pairs */
  for (size_t i = 0; i < (size_t)n->n_hosts * n->n_hosts; i++) {
    int64_t rtt = n->pair_rtt_ps[i];
    uint64_t bdp = (uint64_t)(rtt / 1000) * (n->pair_bw[i] == UINT64_MAX ? 0 : n->pair_bw[i]) /
                   1000000000ull / 8;
    if (bdp > n->max_bdp) n->max_bdp = bdp;
    if (rtt > n->max_rtt_ps) n->max_rtt_ps = rtt;
  }
  if ((rc = evq_setup(n, mtu_wire))) {
    rc = etsim_error_set(err, rc, "out of memory");
    goto fail;
  }
  if (cfg->qlen_mon_end_ns > cfg->qlen_mon_start_ns && cfg->qlen_interval_ns > 0) {
    n->qlen_on = 1;
    if (pk_evq_push(&n->evq, cfg->qlen_mon_start_ns * 1000, EV_QLEN, 0, 0)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto fail;
    }
  }
  *out = (etsim_netpkt_t *)n;
  return 0;
fail:
  etsim_netpkt_free((etsim_netpkt_t *)n);
  return rc;
}

void etsim_netpkt_free(etsim_netpkt_t *net) {
  pk_net_t *n = (pk_net_t *)net;
  if (!n) return;
  if (n->nodes)
    for (uint32_t v = 0; v < n->n_nodes; v++) {
      etsim_free(n->nodes[v].rt_off);
      etsim_free(n->nodes[v].rt_port);
    }
  if (n->ports)
    for (uint32_t i = 0; i < n->n_ports; i++) {
      etsim_free(n->ports[i].qps);
      etsim_free(n->ports[i].wire);
      etsim_free(n->ports[i].hist);
    }
  etsim_free(n->nodes);
  etsim_free(n->ports);
  etsim_free(n->hosts);
  etsim_free(n->pair_rtt_ps);
  etsim_free(n->pair_bw);
  etsim_free(n->pkts);
  etsim_free(n->hops);
  etsim_free(n->qps);
  etsim_free(n->routes);
  etsim_net__pkt_evq_free(&n->evq);
  etsim_u64map_free(&n->sport_map);
  etsim_free(n->sport_next);
  etsim_free(n);
}

void etsim_netpkt_set_outputs(etsim_netpkt_t *net, FILE *fct, FILE *pfc, FILE *qlen) {
  pk_net_t *n = (pk_net_t *)net;
  n->fct = fct;
  n->pfc = pfc;
  n->qlen = qlen;
}

int etsim_netpkt_send(etsim_netpkt_t *net, const etsim_netpkt_msg_t *m, uint64_t *out_id,
                      etsim_error_t *err) {
  pk_net_t *n = (pk_net_t *)net;
  if (m->src >= n->n_nodes || n->nodes[m->src].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow source %u is not a host", m->src);
  if (m->dst >= n->n_nodes || n->nodes[m->dst].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow destination %u is not a host", m->dst);
  if (m->src == m->dst)
    return etsim_error_set(err, ETSIM_EINVAL, "flow from host %u to itself", m->src);
  if (!m->bytes) return etsim_error_set(err, ETSIM_EINVAL, "flow of 0 bytes");
  if (m->pg < 1 || m->pg > 7)
    return etsim_error_set(err, ETSIM_EINVAL, "priority group %u not in 1..7", m->pg);
  if (m->start_ps < n->now)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "flow starts at %" PRId64 " ps, before now (%" PRId64 ")", m->start_ps,
                           n->now);
  if (n->n_qps >= PK_NONE - 1 ||
      etsim_grow((void **)&n->qps, &n->cap_qps, n->n_qps + 1, sizeof *n->qps))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint64_t key = ((uint64_t)m->src << 32) | m->dst;
  uint32_t slot = (uint32_t)n->n_sport;
  int r = etsim_u64map_put(&n->sport_map, key, slot, &slot);
  if (r < 0) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (r == 1) {
    if (etsim_grow((void **)&n->sport_next, &n->cap_sport, n->n_sport + 1, sizeof *n->sport_next))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    n->sport_next[n->n_sport++] = 10000;
  }
  uint32_t sport = n->sport_next[slot]++;
  pk_qp_t *q = &n->qps[n->n_qps];
  memset(q, 0, sizeof *q);
  q->src = m->src;
  q->dst = m->dst;
  q->sip = etsim_netpkt_host_ip(m->src);
  q->dip = etsim_netpkt_host_ip(m->dst);
  q->sport = (uint16_t)sport;
  q->dport = m->dport;
  q->pg = m->pg;
  q->size = m->bytes;
  q->start_ps = m->start_ps;
  q->delivered_ps = q->acked_ps = -1;
  q->fn = m->fn;
  q->ctx = m->ctx;
  pk_node_t *sn = &n->nodes[m->src], *dn = &n->nodes[m->dst];
  uint32_t shi = sn->host_idx, dhi = dn->host_idx;
  uint32_t h = murmur12(q->sip, q->dip, q->sport | ((uint32_t)q->dport << 16), 0);
  uint32_t lo = sn->rt_off[dhi], c = sn->rt_off[dhi + 1] - lo;
  q->gport = sn->port0 + sn->rt_port[lo + h % c];
  lo = dn->rt_off[shi];
  c = dn->rt_off[shi + 1] - lo;
  q->rx_gport = dn->port0 + dn->rt_port[lo + h % c];
  q->max_rate = q->rate = n->ports[q->gport].rate_bps;
  /* Every packet of a flow takes the same route (the ECMP hash depends
   * only on its tuple), so the ports are worked out once here instead of
   * hashing at every switch. */
  q->route_data = q->route_ack = PK_NONE;
  uint32_t fwd[64], rev[64];
  uint32_t nf = etsim_net__pkt_path(n, q->src, q->dst, q->sport, q->dport, fwd, 64);
  uint32_t nr = etsim_net__pkt_ack_path(n, q->src, q->dst, q->sport, q->dport, rev, 64);
  if (nf && nr && fwd[0] == q->gport && rev[0] == q->rx_gport && n->n_routes + nf + nr < PK_NONE) {
    if (etsim_grow((void **)&n->routes, &n->cap_routes, n->n_routes + nf + nr, sizeof *n->routes))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    q->route_data = (uint32_t)n->n_routes;
    memcpy(n->routes + n->n_routes, fwd, nf * sizeof *fwd);
    n->n_routes += nf;
    q->route_ack = (uint32_t)n->n_routes;
    memcpy(n->routes + n->n_routes, rev, nr * sizeof *rev);
    n->n_routes += nr;
  }
  size_t pair = (size_t)shi * n->n_hosts + dhi;
  int64_t rtt = n->pair_rtt_ps[pair];
  uint64_t bw = n->pair_bw[pair];
  uint64_t bdp = (uint64_t)(rtt / 1000) * bw / 1000000000ull / 8;
  q->win = n->cfg.has_win ? (n->cfg.global_t ? n->max_bdp : bdp) : 0;
  q->var_win_rate = UINT64_MAX; /* no scaled window worked out yet */
  q->base_rtt_ps = n->cfg.global_t ? n->max_rtt_ps : rtt;
  uint64_t pkts = (q->size - 1) / n->cfg.payload_bytes + 1;
  uint64_t total = q->size + pkts * PK_STANDALONE_HDR;
  q->standalone_ps = (rtt / 1000 + (int64_t)(total * 8000000000ull / bw)) * 1000;
  q->milestone = n->cfg.l2_ack_interval;
  n->cc->init(n, q);
  if (pk_evq_push(&n->evq, m->start_ps, EV_FLOW_START, (uint32_t)n->n_qps, 0))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (out_id) *out_id = n->n_qps;
  n->n_qps++;
  n->n_active++;
  n->st.msgs++;
  return 0;
}

/* Walk from `from` to host `to`: switches hash the tuple `sw`, the NIC
 * (seed 0, as etsim_netpkt_send) the tuple `nic`: {sip, dip, ports}. */
static uint32_t walk(const pk_net_t *n, uint32_t from, uint32_t to, const uint32_t sw[3],
                     const uint32_t nic[3], uint32_t *out, uint32_t max) {
  uint32_t thi = n->nodes[to].host_idx, v = from, k = 0;
  while (v != to && k < max) {
    const pk_node_t *nd = &n->nodes[v];
    uint32_t lo = nd->rt_off[thi], c = nd->rt_off[thi + 1] - lo;
    if (!c) return 0;
    uint32_t h =
        nd->is_switch ? murmur12(sw[0], sw[1], sw[2], v) : murmur12(nic[0], nic[1], nic[2], 0);
    uint32_t gp = nd->port0 + nd->rt_port[lo + h % c];
    out[k++] = gp;
    v = n->ports[gp].peer;
  }
  return v == to ? k : 0;
}

uint32_t etsim_net__pkt_path(const pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                             uint16_t dport, uint32_t *out, uint32_t max) {
  const uint32_t t[3] = {etsim_netpkt_host_ip(src), etsim_netpkt_host_ip(dst),
                         sport | ((uint32_t)dport << 16)};
  return walk(n, src, dst, t, t, out, max);
}

uint32_t etsim_net__pkt_ack_path(const pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                                 uint16_t dport, uint32_t *out, uint32_t max) {
  const uint32_t fwd[3] = {etsim_netpkt_host_ip(src), etsim_netpkt_host_ip(dst),
                           sport | ((uint32_t)dport << 16)};
  const uint32_t rev[3] = {fwd[1], fwd[0], dport | ((uint32_t)sport << 16)};
  return walk(n, dst, src, rev, fwd, out, max);
}

void etsim_netpkt_finish(etsim_netpkt_t *net) {
  pk_net_t *n = (pk_net_t *)net;
  if (!n->qlen || !n->qlen_on) return;
  fprintf(n->qlen, "time: %" PRId64 "\n", n->now / 1000);
  for (uint32_t i = 0; i < n->n_ports; i++) {
    pk_port_t *p = &n->ports[i];
    if (!n->nodes[p->node].is_switch) continue;
    size_t last = p->n_hist;
    while (last > 0 && !p->hist[last - 1]) last--;
    fprintf(n->qlen, "%u %u", p->node, p->ifindex);
    for (size_t k = 0; k < last; k++) fprintf(n->qlen, " %u", p->hist[k]);
    fputc('\n', n->qlen);
  }
}

int etsim_netpkt_msg_stat(const etsim_netpkt_t *net, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  const pk_net_t *n = (const pk_net_t *)net;
  if (id >= n->n_qps) return ETSIM_ERANGE;
  const pk_qp_t *q = &n->qps[id];
  o->src = q->src;
  o->dst = q->dst;
  o->sport = q->sport;
  o->dport = q->dport;
  o->bytes = q->size;
  o->start_ps = q->start_ps;
  o->delivered_ps = q->delivered_ps;
  o->acked_ps = q->acked_ps;
  o->standalone_ps = q->standalone_ps;
  return 0;
}

uint64_t etsim_netpkt_msg_rate(const etsim_netpkt_t *net, uint64_t id) {
  const pk_net_t *n = (const pk_net_t *)net;
  if (id >= n->n_qps || n->qps[id].finished) return 0;
  return n->qps[id].rate;
}

void etsim_netpkt_get_stats(const etsim_netpkt_t *net, etsim_netpkt_stats_t *s) {
  const pk_net_t *n = (const pk_net_t *)net;
  *s = n->st;
  int64_t extra = 0;
  uint64_t peak = 0;
  for (uint32_t i = 0; i < n->n_ports; i++)
    for (int q = 0; q < PK_NPRIO; q++)
      if (n->ports[i].paused & (1u << q)) extra += n->now - n->ports[i].paused_since[q];
  for (uint32_t v = 0; v < n->n_nodes; v++)
    if (n->nodes[v].peak_used > peak) peak = n->nodes[v].peak_used;
  s->paused_ps += extra;
  s->max_switch_buffer_bytes = peak;
}

uint32_t etsim_netpkt_port_count(const etsim_netpkt_t *net, uint32_t node) {
  const pk_net_t *n = (const pk_net_t *)net;
  return node < n->n_nodes ? n->nodes[node].nports : 0;
}

int etsim_netpkt_port_stat(const etsim_netpkt_t *net, uint32_t node, uint32_t ifindex,
                           etsim_netpkt_port_stat_t *o) {
  const pk_net_t *n = (const pk_net_t *)net;
  if (node >= n->n_nodes || ifindex < 1 || ifindex > n->nodes[node].nports) return ETSIM_ERANGE;
  const pk_port_t *p = &n->ports[n->nodes[node].port0 + ifindex - 1];
  o->peer = p->peer;
  o->rate_bps = p->rate_bps;
  o->tx_bytes = p->tx_bytes;
  o->pauses_rx = p->pauses_rx;
  o->paused_ps = p->paused_ps;
  for (int q = 0; q < PK_NPRIO; q++)
    if (p->paused & (1u << q)) o->paused_ps += n->now - p->paused_since[q];
  o->qbytes = p->qbytes_total;
  o->qbytes_peak = p->qbytes_peak;
  o->paused_prios = p->paused;
  return 0;
}
