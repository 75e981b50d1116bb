/*
 * flow_model.c — the flow-level network: every message is one fluid flow
 * over the route the packet level would give it, link capacity shared
 * max-min fairly (progressive filling).  A start or a finish re-rates only
 * the connected group of flows and links it touches: the allocation of
 * other groups cannot change, so they keep their rates and their pending
 * finish events (which carry a version number, so stale ones are skipped).
 *
 * Routing, per-pair RTT/bandwidth and the ns-3 "standalone" FCT come from a
 * packet-level network built on the same topology (no packet is ever sent
 * on it), so both levels route identically.
 *
 * With FLOW_ACK_LOAD 1, a flow's ACKs load the links of its return route
 * as the packet level's do: a flow at rate r puts r * ack_w on each of
 * them, ack_w being ACK bytes per data wire byte (48 / 1036 with one ACK
 * per 1000-byte packet).  Data shares what ACKs leave of a link (see
 * rerate), so a host that receives while it sends (every member of a ring)
 * gets the packet level's few percent less, not line rate.  It costs
 * speed: ACKs tie groups together (a ring becomes one group) and the
 * filling repeats; the MoE step of examples/roce_study runs 12x slower.
 * So it is off by default, as flow-level models usually leave ACKs out.
 * Link lists hold (flow << 1 | is_ack).
 */
#include "pkt_int.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { FL_START = 1, FL_XFER, FL_DELIVER, FL_ACKED };

typedef struct fl_flow {
  uint32_t src, dst;
  uint16_t sport, dport;
  uint32_t path_off, nhop, nrev;              /* nhop data hops, then nrev ACK hops */
  uint64_t bytes, wire_bytes;                 /* wire: with every packet's header */
  double bits_left, rate, new_rate, est, cap; /* est: rate while re-rating */
  int64_t start_ps, last_ps, delivered_ps, acked_ps, standalone_ps, base_rtt_ps;
  uint64_t win_bytes;
  int64_t tail_deliver_ps, tail_ack_ps;
  uint32_t version, mark; /* version lives on when the record is reused */
  uint32_t path_cap;      /* entries of paths from path_off it may fill, kept on reuse */
  uint8_t active, frozen, finished;
  uint8_t held; /* no route left (a failure): never delivered */
  uint64_t id;  /* its message (etsim_netflow_t.msgs) */
  etsim_netpkt_done_fn fn;
  void *ctx;
} fl_flow_t;

typedef struct fl_link {
  uint32_t *flows; /* flow << 1 | is_ack */
  size_t n, cap;
  double capacity, rem;
  uint32_t nun, mark; /* nun: unfrozen data flows while filling */
  /* sent by flows that finished here: data wire bytes (whole), ACK load
   * (fractional); flows still on the link add their share when asked */
  uint64_t tx_data;
  double tx_ack;
} fl_link_t;

struct etsim_netflow {
  pk_net_t *pk;
  fl_flow_t *f; /* records: a finished flow's is reused (fl_release) */
  size_t n_f, cap_f;
  uint32_t *free_f; /* released records */
  size_t n_free_f, cap_free_f;
  pk_msgs_t msgs; /* by message id, as the packet level's */
  fl_link_t *links;
  uint32_t *paths;
  size_t n_paths, cap_paths;
  uint32_t *cf, *cl; /* scratch: component flows and links */
  size_t cap_cf, cap_cl;
  pk_heap_t heap;
  uint64_t next_seq; /* of the events pushed, for ties */
  int64_t now;
  uint32_t stamp;
  double ack_w; /* ACK bytes per data wire byte */
  FILE *fct;
  etsim_netflow_stats_t st;
};

int etsim_netflow_create(etsim_netflow_t **out, const etsim_netpkt_topo_t *topo,
                         const etsim_netpkt_cfg_t *cfg, etsim_error_t *err) {
  etsim_netflow_t *n = etsim_calloc(1, sizeof *n);
  if (!n) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  etsim_netpkt_cfg_t c = *cfg;
  c.qlen_mon_end_ns = 0; /* no sampling on the routing-only network */
  etsim_netpkt_t *pk;
  int rc = etsim_netpkt_create(&pk, topo, &c, err);
  if (rc) {
    etsim_free(n);
    return rc;
  }
  n->pk = (pk_net_t *)pk;
  n->msgs.forget = cfg->forget_done != 0;
  n->links = etsim_calloc(n->pk->n_ports ? n->pk->n_ports : 1, sizeof *n->links);
  if (!n->links) {
    etsim_netflow_free(n);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (uint32_t i = 0; i < n->pk->n_ports; i++)
    n->links[i].capacity = (double)n->pk->ports[i].rate_bps;
  /* ACKs per data packet: every packet while the milestone lags (interval
   * up to one payload), else one per interval plus one per chunk end */
  double pay = c.payload_bytes, per = 1.0;
  if (c.l2_ack_interval > c.payload_bytes) {
    per = pay / c.l2_ack_interval + (c.l2_chunk_size ? pay / c.l2_chunk_size : 0);
    if (per > 1) per = 1;
  }
  n->ack_w = c.flow_ack_load ? per * n->pk->ack_size / (pay + n->pk->data_hdr) : 0;
  *out = n;
  return 0;
}

void etsim_netflow_free(etsim_netflow_t *n) {
  if (!n) return;
  if (n->links && n->pk)
    for (uint32_t i = 0; i < n->pk->n_ports; i++) etsim_free(n->links[i].flows);
  etsim_free(n->links);
  etsim_free(n->f);
  etsim_free(n->free_f);
  pk_msgs_free(&n->msgs);
  etsim_free(n->paths);
  etsim_free(n->cf);
  etsim_free(n->cl);
  pk_heap_free(&n->heap);
  etsim_netpkt_free((etsim_netpkt_t *)n->pk);
  etsim_free(n);
}

void etsim_netflow_set_outputs(etsim_netflow_t *n, FILE *fct) { n->fct = fct; }

/* Events of equal time run in the order they were pushed. */
static int fl_push(etsim_netflow_t *n, int64_t t, uint32_t kind, uint32_t a, uint64_t b) {
  pk_ev_t e = {t, n->next_seq++, kind, a, b, 0};
  return pk_heap_push(&n->heap, &e);
}

static int64_t txt(const pk_net_t *pk, uint64_t bytes, uint64_t rate) {
  int64_t t = (int64_t)((bytes * 8000000000000ull + rate / 2) / rate);
  int64_t r = pk->cfg.tx_round_ps;
  if (r > 1) t = (t + r / 2) / r * r;
  return t;
}

/* What a flow's route gives it: the tail a packet adds after the last
 * byte leaves (propagation, one MTU of store-and-forward per extra hop,
 * the ACK's return) and the cap (its NIC's rate, or window / base RTT). */
static void path_costs(etsim_netflow_t *n, fl_flow_t *f) {
  const pk_net_t *pk = n->pk;
  const uint32_t *path = n->paths + f->path_off;
  uint32_t pay = pk->cfg.payload_bytes;
  uint32_t mtu = (f->bytes < pay ? (uint32_t)f->bytes : pay) + pk->data_hdr;
  f->tail_deliver_ps = f->tail_ack_ps = 0;
  for (uint32_t h = 0; h < f->nhop; h++) {
    const pk_port_t *p = &pk->ports[path[h]];
    f->tail_deliver_ps += p->delay_ps + (h ? txt(pk, mtu, p->rate_bps) : 0);
    f->tail_ack_ps += p->delay_ps + txt(pk, pk->ack_size, p->rate_bps);
  }
  f->cap = (double)pk->ports[path[0]].rate_bps;
  if (pk->cfg.has_win) {
    double win = (double)f->win_bytes;
    double t = (double)f->base_rtt_ps * 1e-12;
    if (t > 0 && win > 0 && win * 8 / t < f->cap) f->cap = win * 8 / t;
  }
}

/* Record fi (the released one on top of the free list, or the next new
 * one) now carries message n->msgs.n. */
static void fl_take(etsim_netflow_t *n, uint32_t fi, uint64_t *out_id) {
  if (fi < n->n_f) n->n_free_f--;
  else n->n_f++;
  uint64_t id = pk_msgs_add(&n->msgs, fi);
  if (out_id) *out_id = id;
}

/* A message refused after its record was filled in: a released record is
 * as it was; a new one is simply not taken. */
static void fl_untake(etsim_netflow_t *n, uint32_t fi, const fl_flow_t *old) {
  if (fi < n->n_f) n->f[fi] = *old;
}

/* What etsim_netflow_msg_stat reports of the message flow f carries. */
static void fl_stat(const fl_flow_t *f, etsim_netpkt_msg_stat_t *o) {
  o->src = f->src;
  o->dst = f->dst;
  o->sport = f->sport;
  o->dport = f->dport;
  o->bytes = f->bytes;
  o->start_ps = f->start_ps;
  o->delivered_ps = f->delivered_ps;
  o->acked_ps = f->acked_ps;
  o->standalone_ps = f->standalone_ps;
  o->win_bytes = f->win_bytes;
  o->base_rtt_ps = f->base_rtt_ps;
  o->held = f->held;
}

/* Flow fi is acknowledged: it has left its links (at its end of transfer)
 * and only stale finish events, which its version voids, still name it, so
 * its record takes a later message; what etsim_netflow_msg_stat reports
 * moves to its message.  A full free list only costs memory. */
static void fl_release(etsim_netflow_t *n, uint32_t fi) {
  fl_flow_t *f = &n->f[fi];
  if (etsim_grow((void **)&n->free_f, &n->cap_free_f, n->n_free_f + 1, sizeof *n->free_f)) return;
  etsim_netpkt_msg_stat_t o;
  fl_stat(f, &o);
  pk_msgs_release(&n->msgs, f->id, &o);
  n->free_f[n->n_free_f++] = fi;
}

int etsim_netflow_send(etsim_netflow_t *n, const etsim_netpkt_msg_t *m, uint64_t *out_id,
                       etsim_error_t *err) {
  pk_net_t *pk = n->pk;
  if (m->src >= pk->n_nodes || pk->nodes[m->src].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow source %u is not a host", m->src);
  if (m->dst >= pk->n_nodes || pk->nodes[m->dst].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow destination %u is not a host", m->dst);
  if (m->src == m->dst)
    return etsim_error_set(err, ETSIM_EINVAL, "flow from host %u to itself", m->src);
  if (!m->bytes) return etsim_error_set(err, ETSIM_EINVAL, "flow of 0 bytes");
  if (m->start_ps < n->now) return etsim_error_set(err, ETSIM_EINVAL, "flow starts before now");
  if (etsim_net__pkt_route_ready(pk, m->dst) || etsim_net__pkt_route_ready(pk, m->src))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* routes of any length: the search gives the hop counts */
  uint32_t nf = etsim_net__pkt_hops(pk, m->src, m->dst),
           nr = etsim_net__pkt_hops(pk, m->dst, m->src);
  int held = !nf || nf == UINT32_MAX || !nr || nr == UINT32_MAX;
  if (held && !pk->cfg.allow_disconnected)
    return etsim_error_set(err, ETSIM_EINVAL, "no route from %u to %u", m->src, m->dst);
  if (held) nf = nr = 0;
  /* a released record if there is one, else a new one (as the packet
   * level's queue pairs) */
  uint32_t fi = n->n_free_f ? n->free_f[n->n_free_f - 1] : (uint32_t)n->n_f;
  int reused = fi < n->n_f;
  uint32_t np = nf + (n->ack_w > 0 ? nr : 0);  /* path entries (ACK routes only with their load) */
  int own = reused && np <= n->f[fi].path_cap; /* in the released record's own entries */
  if (n->msgs.n >= UINT32_MAX - 1 || (!reused && n->n_f >= UINT32_MAX / 2) ||
      pk_msgs_room(&n->msgs) || etsim_grow((void **)&n->f, &n->cap_f, n->n_f + 1, sizeof *n->f) ||
      (!own && etsim_grow((void **)&n->paths, &n->cap_paths, n->n_paths + np, sizeof *n->paths)))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* source port: per host pair from 10000, as the packet level */
  uint32_t pair = etsim_net__pkt_pair_index(pk, m->src, m->dst);
  if (pair == PK_NONE) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  fl_flow_t *f = &n->f[fi];
  fl_flow_t old; /* a released record: what it keeps, and what a refusal restores */
  if (reused) old = *f;
  memset(f, 0, sizeof *f);
  if (reused) {
    f->version = old.version;
    f->path_off = old.path_off;
    f->path_cap = old.path_cap;
  }
  f->id = n->msgs.n;
  f->src = m->src;
  f->dst = m->dst;
  f->sport = (uint16_t)pk->pairs[pair].sport++;
  f->dport = m->dport;
  f->bytes = m->bytes;
  f->start_ps = m->start_ps;
  f->delivered_ps = f->acked_ps = -1;
  f->fn = m->fn;
  f->ctx = m->ctx;
  if (held) { /* cut off by a failure: never starts (etsim_netflow_links_down) */
    f->held = 1;
    fl_take(n, fi, out_id);
    n->st.msgs++;
    return 0;
  }
  if (!own) {
    f->path_off = (uint32_t)n->n_paths;
    f->path_cap = np;
  }
  f->nhop = etsim_net__pkt_path(pk, m->src, m->dst, f->sport, f->dport, n->paths + f->path_off, nf);
  if (f->nhop != nf) {
    fl_untake(n, fi, &old);
    return etsim_error_set(err, ETSIM_EINVAL, "no route from %u to %u", m->src, m->dst);
  }
  f->nrev = n->ack_w > 0 ? etsim_net__pkt_ack_path(pk, m->src, m->dst, f->sport, f->dport,
                                                   n->paths + f->path_off + f->nhop, nr)
                         : 0;
  if (f->nrev != nr && n->ack_w > 0) {
    fl_untake(n, fi, &old);
    return etsim_error_set(err, ETSIM_EINVAL, "no route from %u to %u", m->dst, m->src);
  }
  uint32_t pay = pk->cfg.payload_bytes;
  uint64_t pkts = (m->bytes - 1) / pay + 1;
  f->wire_bytes = m->bytes + pkts * pk->data_hdr;
  f->bits_left = 8.0 * (double)f->wire_bytes;
  int64_t rtt;
  uint64_t bw;
  etsim_net__pkt_pair(pk, m->src, m->dst, pair, &rtt, &bw);
  f->standalone_ps = (rtt / 1000 + (int64_t)((m->bytes + pkts * 48) * 8000000000ull / bw)) * 1000;
  f->base_rtt_ps = pk->cfg.global_t ? pk->max_rtt_ps : rtt;
  if (pk->cfg.has_win) {
    uint64_t bdp = (uint64_t)(rtt / 1000) * bw / 1000000000ull / 8;
    f->win_bytes = pk->cfg.global_t ? pk->max_bdp : bdp;
  }
  path_costs(n, f);
  if (fl_push(n, m->start_ps, FL_START, fi, 0)) {
    fl_untake(n, fi, &old);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  if (!own) n->n_paths += np;
  fl_take(n, fi, out_id);
  if (!n->st.msgs || m->start_ps < n->st.first_start_ps) n->st.first_start_ps = m->start_ps;
  n->st.msgs++;
  return 0;
}

static int component_links(etsim_netflow_t *n, size_t *nf, size_t *nl);

/* Collect the connected group (flows sharing links, transitively) reached
 * from the links of flow `seed`; the seed itself is included only when it
 * is active. */
static int component(etsim_netflow_t *n, uint32_t seed, size_t *nf, size_t *nl) {
  uint32_t st = ++n->stamp;
  size_t ll = 0;
  fl_flow_t *s = &n->f[seed];
  for (uint32_t h = 0; h < s->nhop + s->nrev; h++) {
    uint32_t l = n->paths[s->path_off + h];
    if (n->links[l].mark == st) continue;
    n->links[l].mark = st;
    if (etsim_grow((void **)&n->cl, &n->cap_cl, ll + 1, sizeof *n->cl)) return ETSIM_ENOMEM;
    n->cl[ll++] = l;
  }
  *nl = ll;
  return component_links(n, nf, nl);
}

/* Bring the group's remaining bits to now at the old rates. */
static void advance(etsim_netflow_t *n, size_t nf) {
  for (size_t i = 0; i < nf; i++) {
    fl_flow_t *f = &n->f[n->cf[i]];
    f->bits_left -= f->rate * (double)(n->now - f->last_ps) * 1e-12;
    if (f->bits_left < 0) f->bits_left = 0;
    f->last_ps = n->now;
  }
}

/* Progressive filling of the group's data routes over what the ACKs leave
 * of each link: ACK load is the group's estimated rates times ack_w. */
static void fill(etsim_netflow_t *n, size_t nf, size_t nl) {
  for (size_t i = 0; i < nl; i++) {
    fl_link_t *l = &n->links[n->cl[i]];
    l->rem = l->capacity;
    l->nun = 0;
    for (size_t k = 0; k < l->n; k++) {
      if (l->flows[k] & 1) l->rem -= n->ack_w * n->f[l->flows[k] >> 1].est;
      else l->nun++;
    }
    if (l->rem < 0) l->rem = 0;
  }
  for (size_t i = 0; i < nf; i++) {
    fl_flow_t *f = &n->f[n->cf[i]];
    f->new_rate = 0;
    f->frozen = 0;
  }
  size_t left = nf;
  while (left) {
    double delta = INFINITY;
    for (size_t i = 0; i < nl; i++) {
      fl_link_t *l = &n->links[n->cl[i]];
      if (l->nun && l->rem / l->nun < delta) delta = l->rem / l->nun;
    }
    for (size_t i = 0; i < nf; i++) {
      fl_flow_t *f = &n->f[n->cf[i]];
      if (!f->frozen && f->cap - f->new_rate < delta) delta = f->cap - f->new_rate;
    }
    if (delta < 0) delta = 0;
    for (size_t i = 0; i < nf; i++) {
      fl_flow_t *f = &n->f[n->cf[i]];
      if (f->frozen) continue;
      f->new_rate += delta;
      for (uint32_t h = 0; h < f->nhop; h++) n->links[n->paths[f->path_off + h]].rem -= delta;
    }
    size_t before = left;
    for (size_t i = 0; i < nf; i++) {
      fl_flow_t *f = &n->f[n->cf[i]];
      if (f->frozen) continue;
      int stop = f->cap - f->new_rate <= 1e-9 * f->cap;
      for (uint32_t h = 0; h < f->nhop && !stop; h++) {
        fl_link_t *l = &n->links[n->paths[f->path_off + h]];
        stop = l->rem <= 1e-9 * l->capacity;
      }
      if (stop) {
        f->frozen = 1;
        left--;
        for (uint32_t h = 0; h < f->nhop; h++) n->links[n->paths[f->path_off + h]].nun--;
      }
    }
    if (left == before) /* numerically stuck: freeze everyone */
      break;
  }
}

/* Max-min rates for the group, then new finish events.  ACKs ride ahead
 * of data (the packet level queues them first at NICs), so they are not
 * shared fairly: they take their load off each link and the data shares
 * the rest.  Their load depends on the rates being computed, so the
 * filling repeats from the previous rates until no rate moves by more
 * than 1e-7 of its cap; each round shrinks the error by about ack_w
 * (under 5 %), so six rounds at most (usually two). */
static int rerate(etsim_netflow_t *n, size_t nf, size_t nl) {
  n->st.recomputes++;
  for (size_t i = 0; i < nf; i++) n->f[n->cf[i]].est = n->f[n->cf[i]].rate;
  for (int round = 0; round < 6; round++) {
    fill(n, nf, nl);
    double moved = 0;
    for (size_t i = 0; i < nf; i++) {
      fl_flow_t *f = &n->f[n->cf[i]];
      double d = fabs(f->new_rate - f->est) / f->cap;
      if (d > moved) moved = d;
      f->est = f->new_rate;
    }
    if (moved < 1e-7 || n->ack_w == 0) break;
  }
  for (size_t i = 0; i < nf; i++) {
    uint32_t fi = n->cf[i];
    fl_flow_t *f = &n->f[fi];
    n->st.flows_rated++;
    if (f->new_rate == f->rate && f->version)
      continue; /* unchanged: its finish event still holds */
    f->rate = f->new_rate;
    f->version++;
    if (f->rate > 0) {
      double dt = f->bits_left / f->rate * 1e12;
      int64_t t = n->now + (int64_t)llround(dt);
      if (fl_push(n, t, FL_XFER, fi, f->version)) return ETSIM_ENOMEM;
    }
  }
  return 0;
}

static int link_add(fl_link_t *l, uint32_t entry) {
  if (etsim_grow((void **)&l->flows, &l->cap, l->n + 1, sizeof *l->flows)) return ETSIM_ENOMEM;
  l->flows[l->n++] = entry;
  return 0;
}

static void link_del(fl_link_t *l, uint32_t entry) {
  for (size_t i = 0; i < l->n; i++)
    if (l->flows[i] == entry) {
      memmove(l->flows + i, l->flows + i + 1, (l->n - i - 1) * sizeof *l->flows);
      l->n--;
      return;
    }
}

static int on_event(etsim_netflow_t *n, const pk_ev_t *e) {
  fl_flow_t *f = &n->f[e->a];
  size_t nf, nl;
  int rc;
  switch (e->kind) {
    case FL_START:
      if (f->held) return 0; /* lost its route before it started */
      f->active = 1;
      f->last_ps = n->now;
      for (uint32_t h = 0; h < f->nhop + f->nrev; h++)
        if (link_add(&n->links[n->paths[f->path_off + h]], e->a << 1 | (h >= f->nhop)))
          return ETSIM_ENOMEM;
      if ((rc = component(n, e->a, &nf, &nl))) return rc;
      advance(n, nf);
      return rerate(n, nf, nl);
    case FL_XFER:
      if ((uint32_t)e->b != f->version || !f->active) return 0;
      if ((rc = component(n, e->a, &nf, &nl))) return rc;
      advance(n, nf);
      f->active = 0;
      f->rate = 0;
      f->bits_left = 0;
      for (uint32_t h = 0; h < f->nhop + f->nrev; h++) {
        fl_link_t *l = &n->links[n->paths[f->path_off + h]];
        link_del(l, e->a << 1 | (h >= f->nhop));
        if (h < f->nhop) l->tx_data += f->wire_bytes;
        else l->tx_ack += n->ack_w * (double)f->wire_bytes;
      }
      if (fl_push(n, n->now + f->tail_deliver_ps, FL_DELIVER, e->a, 0) ||
          fl_push(n, n->now + f->tail_deliver_ps + f->tail_ack_ps, FL_ACKED, e->a, 0))
        return ETSIM_ENOMEM;
      /* the group without this flow: drop it from the scratch list */
      {
        size_t k = 0;
        for (size_t i = 0; i < nf; i++)
          if (n->cf[i] != e->a) n->cf[k++] = n->cf[i];
        nf = k;
      }
      return nf ? rerate(n, nf, nl) : 0;
    case FL_DELIVER:
      f->delivered_ps = n->now;
      if (f->fn) f->fn(f->ctx, f->id, ETSIM_NETPKT_DELIVERED, n->now);
      return 0;
    case FL_ACKED:
      f->acked_ps = n->now;
      f->finished = 1;
      n->st.msgs_done++;
      n->st.last_done_ps = n->now;
      if (n->fct)
        fprintf(n->fct, "%08x %08x %u %u %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                etsim_netpkt_host_ip(f->src), etsim_netpkt_host_ip(f->dst), f->sport, f->dport,
                f->bytes, f->start_ps / 1000, (n->now - f->start_ps) / 1000,
                f->standalone_ps / 1000);
      if (f->fn) f->fn(f->ctx, f->id, ETSIM_NETPKT_ACKED, n->now);
      fl_release(n, e->a); /* after the callback, whose sends may move n->f */
      return 0;
  }
  return ETSIM_EINTERNAL;
}

/* ---------------------------------------------------------- failures */

/* 1 when a hop of the flow's data or ACK route is a failed cable. */
static int crosses_down(const etsim_netflow_t *n, const fl_flow_t *f) {
  for (uint32_t h = 0; h < f->nhop + f->nrev; h++)
    if (n->pk->ports[n->paths[f->path_off + h]].down) return 1;
  return 0;
}

/* Flow f has no route left: it stops where it is and is never delivered
 * (its pending finish event is made void). */
static void hold(fl_flow_t *f) {
  f->held = 1;
  f->active = 0;
  f->rate = 0;
  f->version++;
}

/* A new route for flow fi over the cables left (its links not yet joined),
 * or it is held.  0 or ETSIM_ENOMEM. */
static int flow_reroute(etsim_netflow_t *n, uint32_t fi) {
  pk_net_t *pk = n->pk;
  fl_flow_t *f = &n->f[fi];
  if (etsim_net__pkt_route_ready(pk, f->dst) || etsim_net__pkt_route_ready(pk, f->src))
    return ETSIM_ENOMEM;
  uint32_t nf = etsim_net__pkt_hops(pk, f->src, f->dst);
  uint32_t nr = etsim_net__pkt_hops(pk, f->dst, f->src);
  if (!nf || nf == UINT32_MAX || !nr || nr == UINT32_MAX) {
    hold(f);
    return 0;
  }
  if (etsim_grow((void **)&n->paths, &n->cap_paths, n->n_paths + nf + nr, sizeof *n->paths))
    return ETSIM_ENOMEM;
  uint32_t off = (uint32_t)n->n_paths;
  uint32_t got = etsim_net__pkt_path(pk, f->src, f->dst, f->sport, f->dport, n->paths + off, nf);
  uint32_t rev = n->ack_w > 0 ? etsim_net__pkt_ack_path(pk, f->src, f->dst, f->sport, f->dport,
                                                        n->paths + off + nf, nr)
                              : 0;
  if (got != nf || (n->ack_w > 0 && rev != nr)) {
    hold(f);
    return 0;
  }
  f->path_off = off;
  f->path_cap = nf + rev; /* the record's entries are these now */
  f->nhop = nf;
  f->nrev = rev;
  n->n_paths += nf + rev;
  path_costs(n, f);
  return 0;
}

/* The connected group reached from links cl[0..*nl) (already listed and
 * marked with the current stamp); component() seeds it from a flow. */
static int component_links(etsim_netflow_t *n, size_t *nf, size_t *nl) {
  uint32_t st = n->stamp;
  size_t fl = 0, ll = *nl, head = 0;
  while (head < ll) {
    fl_link_t *lk = &n->links[n->cl[head++]];
    for (size_t i = 0; i < lk->n; i++) {
      uint32_t fi = lk->flows[i] >> 1;
      fl_flow_t *f = &n->f[fi];
      if (f->mark == st) continue;
      f->mark = st;
      if (etsim_grow((void **)&n->cf, &n->cap_cf, fl + 1, sizeof *n->cf)) return ETSIM_ENOMEM;
      n->cf[fl++] = fi;
      for (uint32_t h = 0; h < f->nhop + f->nrev; h++) {
        uint32_t l = n->paths[f->path_off + h];
        if (n->links[l].mark == st) continue;
        n->links[l].mark = st;
        if (etsim_grow((void **)&n->cl, &n->cap_cl, ll + 1, sizeof *n->cl)) return ETSIM_ENOMEM;
        n->cl[ll++] = l;
      }
    }
  }
  *nf = fl;
  *nl = ll;
  return 0;
}

/* List link l in the seeds of component_links (once). */
static int seed_link(etsim_netflow_t *n, uint32_t l, size_t *nl) {
  if (n->links[l].mark == n->stamp) return 0;
  n->links[l].mark = n->stamp;
  if (etsim_grow((void **)&n->cl, &n->cap_cl, *nl + 1, sizeof *n->cl)) return ETSIM_ENOMEM;
  n->cl[(*nl)++] = l;
  return 0;
}

int etsim_netflow_links_down(etsim_netflow_t *n, const uint32_t *ab, size_t n_pairs, int64_t t_ps,
                             etsim_error_t *err) {
  if (t_ps < n->now)
    return etsim_error_set(err, ETSIM_EINVAL, "flow network: a failure at %lld ps is in the past",
                           (long long)t_ps);
  /* the routing network marks the ports and searches again */
  int rc = etsim_netpkt_links_down((etsim_netpkt_t *)n->pk, ab, n_pairs, t_ps, err);
  if (rc) return rc;
  n->now = t_ps;
  /* Flows that have bytes left to send and cross a failed cable: off their
   * links, onto new routes (or held); the groups of their old and new
   * links are then rated again at t_ps. */
  size_t nl = 0, nf = 0;
  n->stamp++;
  for (size_t i = 0; i < n->n_f; i++) {
    fl_flow_t *f = &n->f[i];
    if (f->held || (!f->active && f->bits_left <= 0) || !crosses_down(n, f)) continue;
    if (f->active) {
      /* bits sent up to now, at the rate it had */
      f->bits_left -= f->rate * (double)(n->now - f->last_ps) * 1e-12;
      if (f->bits_left < 0) f->bits_left = 0;
      f->last_ps = n->now;
      for (uint32_t h = 0; h < f->nhop + f->nrev; h++) {
        uint32_t l = n->paths[f->path_off + h];
        fl_link_t *lk = &n->links[l];
        link_del(lk, (uint32_t)i << 1 | (h >= f->nhop));
        /* what it sent on a link it leaves stays counted there */
        double sent = 8.0 * (double)f->wire_bytes - f->bits_left;
        if (h < f->nhop) lk->tx_data += (uint64_t)llround(sent / 8);
        else lk->tx_ack += n->ack_w * sent / 8;
        if ((rc = seed_link(n, l, &nl))) goto oom;
      }
    }
    int was_active = f->active;
    if ((rc = flow_reroute(n, (uint32_t)i))) goto oom;
    f = &n->f[i];
    if (!was_active || f->held) continue;
    /* the bytes already sent are not sent again on the new route */
    f->wire_bytes = (uint64_t)llround(f->bits_left / 8);
    for (uint32_t h = 0; h < f->nhop + f->nrev; h++) {
      uint32_t l = n->paths[f->path_off + h];
      if (link_add(&n->links[l], (uint32_t)i << 1 | (h >= f->nhop)) ||
          (rc = seed_link(n, l, &nl))) {
        rc = ETSIM_ENOMEM;
        goto oom;
      }
    }
  }
  if (!nl) return 0;
  if ((rc = component_links(n, &nf, &nl))) goto oom;
  advance(n, nf);
  if (nf && (rc = rerate(n, nf, nl))) goto oom;
  return 0;
oom:
  return etsim_error_set(err, rc, "flow network: out of memory");
}

int etsim_netflow_run_until(etsim_netflow_t *n, int64_t t_ps, etsim_error_t *err) {
  int64_t stop = n->pk->cfg.stop_ps;
  while (n->heap.n) {
    int64_t t = n->heap.v[0].t;
    if (t > t_ps || t >= stop) return 0; /* as the packet level: before the stop */
    pk_ev_t e;
    pk_heap_pop(&n->heap, &e);
    n->now = e.t;
    n->st.events++;
    int rc = on_event(n, &e);
    if (rc) return etsim_error_set(err, rc, "flow network: %s", etsim_strerror(rc));
  }
  return 0;
}

int64_t etsim_netflow_next_time(const etsim_netflow_t *n) {
  if (!n->heap.n || n->heap.v[0].t >= n->pk->cfg.stop_ps) return INT64_MAX;
  return n->heap.v[0].t;
}

int64_t etsim_netflow_now(const etsim_netflow_t *n) { return n->now; }

int etsim_netflow_msg_stat(const etsim_netflow_t *n, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  uint32_t slot = pk_msgs_slot(&n->msgs, id);
  if (slot == PK_NONE) return pk_msgs_gone(&n->msgs, id, o); /* its record was released */
  fl_stat(&n->f[slot], o);
  return 0;
}

double etsim_netflow_msg_rate(const etsim_netflow_t *n, uint64_t id) {
  uint32_t slot = pk_msgs_slot(&n->msgs, id);
  if (slot == PK_NONE) return 0;
  const fl_flow_t *f = &n->f[slot];
  return f->active ? f->rate : 0;
}

void etsim_netflow_get_stats(const etsim_netflow_t *n, etsim_netflow_stats_t *s) {
  *s = n->st;
  s->records = n->n_f;
}

uint32_t etsim_netflow_port_count(const etsim_netflow_t *n, uint32_t node) {
  return node < n->pk->n_nodes ? n->pk->nodes[node].nports : 0;
}

/* Bits a flow on the link has sent by now: what it has left, brought to
 * now at its current rate, taken from its wire total. */
static double sent_bits(const etsim_netflow_t *n, const fl_flow_t *f) {
  double left = f->bits_left - f->rate * (double)(n->now - f->last_ps) * 1e-12;
  return 8.0 * (double)f->wire_bytes - (left > 0 ? left : 0);
}

int etsim_netflow_port_stat(const etsim_netflow_t *n, uint32_t node, uint32_t ifindex,
                            etsim_netpkt_port_stat_t *o) {
  const pk_net_t *pk = n->pk;
  if (node >= pk->n_nodes || ifindex < 1 || ifindex > pk->nodes[node].nports) return ETSIM_ERANGE;
  uint32_t gp = pk->nodes[node].port0 + ifindex - 1;
  const fl_link_t *l = &n->links[gp];
  double ack = l->tx_ack, data = 0;
  for (size_t i = 0; i < l->n; i++) {
    double b = sent_bits(n, &n->f[l->flows[i] >> 1]) / 8;
    if (l->flows[i] & 1) ack += n->ack_w * b;
    else data += b;
  }
  memset(o, 0, sizeof *o);
  o->peer = pk->ports[gp].peer;
  o->rate_bps = pk->ports[gp].rate_bps;
  o->tx_bytes = l->tx_data + (uint64_t)llround(data + ack);
  return 0;
}
