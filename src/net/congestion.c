/* The congestion-aware backend: links as FIFO servers.
 *
 * Every directed link is a server with one queue.  A message that reaches a
 * link at time t starts at max(t, link free), occupies the link for
 * floor(bytes/beta) ns and reaches the next device floor(L + bytes/beta) ns
 * after it started (store-and-forward: each hop receives the whole message
 * before forwarding it).  Arrivals are processed in event order, so
 * "start = max(now, free)" is exactly FIFO service.
 *
 * Routes are dimension-ordered: the lowest differing dimension first.
 * Within a dimension a Ring goes the shorter way (clockwise on a tie), a
 * FullyConnected group has a direct link between every ordered pair, and a
 * Switch adds one switch per group: NPU -> switch -> NPU, two hops.
 * ASTRA-sim's congestion-aware backend supports one dimension only; on
 * one-dimensional networks the two agree.
 *
 * In-flight messages live in a pooled array (free list), so nothing is
 * allocated per message once the pool has grown to the peak in flight.
 *
 * Per-NPU link factors (etsim_net_npu_links_t, --link-degrade "D:N") give
 * every link object its own bandwidth and latency factor, from its ends
 * (net.h says which links are an NPU's): a hop then occupies its link for
 * floor(bytes/(beta*bw)) and arrives floor(L*lat + bytes/(beta*bw)) after
 * it started.  Since each hop is served on its own, a message's time is
 * set hop by hop, the slow link's hop included; no other rule is needed.
 * ASTRA-sim's congestion-aware backend would do the same by passing the
 * degraded bandwidth and latency to Topology::connect for those links.
 */
#include "etsim/net.h"

#include "net_int.h"

#include <math.h>
#include <string.h>

typedef struct msg {
  uint64_t token;
  uint64_t bytes;
  uint32_t cur, dst;
  uint32_t in_switch; /* 1 + dim when the message sits in a switch of dim */
  uint32_t next_free;
} msg_t;

typedef struct ca {
  etsim_net_t base;
  size_t link_base[ETSIM_TOPO_MAX_DIMS];
  int64_t *link_free_ps;
  size_t n_links;
  double *link_bw_f, *link_lat_f; /* per link, one allocation; NULL: all 1 */
  msg_t *msgs;
  size_t n_msgs, cap_msgs;
  uint32_t free_head; /* UINT32_MAX when empty */
} ca_t;

static int ca_alloc_msg(ca_t *c, uint32_t *out) {
  if (c->free_head != UINT32_MAX) {
    *out = c->free_head;
    c->free_head = c->msgs[*out].next_free;
    return 0;
  }
  if (c->n_msgs == c->cap_msgs) {
    int rc = etsim_grow((void **)&c->msgs, &c->cap_msgs, c->n_msgs + 1, sizeof *c->msgs);
    if (rc) return rc;
  }
  *out = (uint32_t)c->n_msgs++;
  return 0;
}

/* Choose the next link from the message's position; fills *link, *next,
 * *dim and whether the next device is a switch. */
static void next_hop(const ca_t *c, const msg_t *m, size_t *link, uint32_t *next, int *dim,
                     int *to_switch) {
  const etsim_topo_t *t = c->base.topo;
  if (m->in_switch) {
    int d = (int)m->in_switch - 1;
    *dim = d;
    *link = c->link_base[d] + (size_t)m->dst * 2 + 1; /* switch -> dst */
    *next = m->dst;
    *to_switch = 0;
    return;
  }
  int d = etsim_topo_first_diff_dim(t, m->cur, m->dst);
  *dim = d;
  uint32_t cc = etsim_topo_coord(t, m->cur, d), cd = etsim_topo_coord(t, m->dst, d);
  uint32_t n = t->npus[d];
  /* The destination of this dimension's leg: cur with coordinate d = cd. */
  uint32_t leg_dst = m->cur + (cd - cc) * t->stride[d];
  switch (t->kind[d]) {
    case ETSIM_TOPO_RING: {
      uint32_t fwd = (cd + n - cc) % n;
      int dir = fwd <= n - fwd ? 1 : -1;
      *link = c->link_base[d] + (size_t)m->cur * 2 + (dir > 0 ? 0 : 1);
      *next = etsim_topo_step(t, m->cur, d, dir);
      *to_switch = 0;
      break;
    }
    case ETSIM_TOPO_FULLY_CONNECTED:
      *link = c->link_base[d] + (size_t)m->cur * n + cd;
      *next = leg_dst;
      *to_switch = 0;
      break;
    case ETSIM_TOPO_SWITCH:
      *link = c->link_base[d] + (size_t)m->cur * 2; /* cur -> switch */
      *next = leg_dst;
      *to_switch = 1;
      break;
  }
}

/* Put message i on its next link at the current time. */
static int forward(ca_t *c, uint32_t i) {
  etsim_net_t *net = &c->base;
  const etsim_topo_t *t = net->topo;
  msg_t *m = &c->msgs[i];
  size_t link = 0;
  uint32_t next = 0;
  int d = 0, to_switch = 0;
  next_hop(c, m, &link, &next, &d, &to_switch);
  int64_t now = net->q->now_ps;
  int64_t start = c->link_free_ps[link] > now ? c->link_free_ps[link] : now;
  if (start - now > net->stats.max_queue_ps) net->stats.max_queue_ps = start - now;
  double bw_f = c->link_bw_f ? c->link_bw_f[link] : 1,
         lat_f = c->link_bw_f ? c->link_lat_f[link] : 1;
  double ser = (double)m->bytes / (t->bw_bytes_per_ns[d] * bw_f);
  double fly = floor(t->lat_ns[d] * lat_f + ser);
  if (!etsim_des_ns_ok(fly) || start > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  int64_t busy_ns = (int64_t)floor(ser);
  int64_t fly_ns = (int64_t)fly;
  c->link_free_ps[link] = start + busy_ns * ETSIM_PS_PER_NS;
  int64_t arrive = start + fly_ns * ETSIM_PS_PER_NS;
  net->stats.hops++;
  if (net->links.n) {
    net->links.bytes[link] += m->bytes;
    net->links.busy_ps[link] += busy_ns * ETSIM_PS_PER_NS;
  }
  if (to_switch) {
    m->in_switch = (uint32_t)d + 1;
  } else {
    m->in_switch = 0;
    m->cur = next;
  }
  if (!m->in_switch && m->cur == m->dst) {
    uint64_t token = m->token;
    m->next_free = c->free_head;
    c->free_head = i;
    return etsim_des_push(net->q, arrive, net->ev_deliver, 0, token);
  }
  return etsim_des_push(net->q, arrive, net->ev_internal, 0, i);
}

static int ca_send(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t token) {
  ca_t *c = (ca_t *)net;
  const etsim_topo_t *t = net->topo;
  int d = etsim_topo_first_diff_dim(t, src, dst);
  net->stats.messages++;
  net->stats.bytes += bytes;
  if (d < 0) return etsim_des_push(net->q, net->q->now_ps, net->ev_deliver, 0, token);
  net->stats.bytes_per_dim[d] += bytes;
  uint32_t i;
  int rc = ca_alloc_msg(c, &i);
  if (rc) return rc;
  c->msgs[i] = (msg_t){token, bytes, src, dst, 0, 0};
  return forward(c, i);
}

/* In-network collectives: one hop on the NPU's link to (up) or from
 * (down) the switch of its group in dimension d, FIFO like any other. */
static int ca_send_switch(etsim_net_t *net, uint32_t npu, int d, int up, uint64_t bytes,
                          uint64_t token) {
  ca_t *c = (ca_t *)net;
  const etsim_topo_t *t = net->topo;
  size_t link = c->link_base[d] + (size_t)npu * 2 + (up ? 0 : 1);
  int64_t now = net->q->now_ps;
  int64_t start = c->link_free_ps[link] > now ? c->link_free_ps[link] : now;
  if (start - now > net->stats.max_queue_ps) net->stats.max_queue_ps = start - now;
  double bw_f = c->link_bw_f ? c->link_bw_f[link] : 1,
         lat_f = c->link_bw_f ? c->link_lat_f[link] : 1;
  double ser = (double)bytes / (t->bw_bytes_per_ns[d] * bw_f);
  double fly = floor(t->lat_ns[d] * lat_f + ser);
  if (!etsim_des_ns_ok(fly) || start > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  int64_t busy_ns = (int64_t)floor(ser);
  c->link_free_ps[link] = start + busy_ns * ETSIM_PS_PER_NS;
  net->stats.messages++;
  net->stats.bytes += bytes;
  net->stats.bytes_per_dim[d] += bytes;
  net->stats.hops++;
  if (net->links.n) {
    net->links.bytes[link] += bytes;
    net->links.busy_ps[link] += busy_ns * ETSIM_PS_PER_NS;
  }
  return etsim_des_push(net->q, start + (int64_t)fly * ETSIM_PS_PER_NS, net->ev_deliver, 0, token);
}

static int ca_links_enable(etsim_net_t *net) {
  return etsim_net__links_alloc(net, ((ca_t *)net)->n_links);
}

static int ca_event(etsim_net_t *net, const etsim_des_event_t *ev) {
  return forward((ca_t *)net, (uint32_t)ev->b);
}

static void ca_destroy(etsim_net_t *net) {
  ca_t *c = (ca_t *)net;
  etsim_free(c->link_free_ps);
  etsim_free(c->link_bw_f);
  etsim_free(c->msgs);
  etsim_free(c);
}

static const etsim_net_ops_t ca_ops = {"congestion", ca_send, ca_event,       ca_destroy,     NULL,
                                       NULL,         NULL,    ca_send_switch, ca_links_enable};

/* Each link's factors from its ends' (link numbering: fifo_link_name in
 * net.c): a link between two NPUs the smaller bandwidth factor and the
 * larger latency factor of the two, a switch port its NPU's. */
static int link_factors(ca_t *c, const etsim_topo_t *t, const etsim_net_npu_links_t *f) {
  size_t n = c->n_links ? c->n_links : 1, nd = (size_t)t->ndims;
  c->link_bw_f = etsim_malloc(2 * n * sizeof *c->link_bw_f);
  if (!c->link_bw_f) return ETSIM_ENOMEM;
  c->link_lat_f = c->link_bw_f + n;
  for (int d = 0; d < t->ndims; d++) {
    int k = t->kind[d];
    size_t per = k == ETSIM_TOPO_FULLY_CONNECTED ? t->npus[d] : 2;
    for (uint32_t x = 0; x < t->total; x++) {
      size_t fx = (size_t)x * nd + (size_t)d;
      for (size_t j = 0; j < per; j++) {
        size_t l = c->link_base[d] + (size_t)x * per + j;
        uint32_t y = k == ETSIM_TOPO_RING ? etsim_topo_step(t, x, d, j ? -1 : 1)
                     : k == ETSIM_TOPO_FULLY_CONNECTED
                         ? x + ((uint32_t)j - etsim_topo_coord(t, x, d)) * t->stride[d]
                         : x; /* switch port: x's alone */
        size_t fy = (size_t)y * nd + (size_t)d;
        c->link_bw_f[l] = f->bw[fx] < f->bw[fy] ? f->bw[fx] : f->bw[fy];
        c->link_lat_f[l] = f->lat[fx] > f->lat[fy] ? f->lat[fx] : f->lat[fy];
      }
    }
  }
  return 0;
}

int etsim_net__congestion_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 const etsim_net_npu_links_t *f, etsim_error_t *err) {
  ca_t *c = etsim_calloc(1, sizeof *c);
  if (!c) return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  c->base.ops = &ca_ops;
  c->free_head = UINT32_MAX;
  size_t n = 0;
  for (int d = 0; d < topo->ndims; d++) {
    c->link_base[d] = n;
    size_t per = topo->kind[d] == ETSIM_TOPO_FULLY_CONNECTED ? topo->npus[d] : 2;
    n += (size_t)topo->total * per;
  }
  c->n_links = n;
  c->link_free_ps = etsim_calloc(n ? n : 1, sizeof *c->link_free_ps);
  if (!c->link_free_ps) {
    etsim_free(c);
    return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory for %zu links", n);
  }
  if (f && f->bw && link_factors(c, topo, f)) {
    ca_destroy(&c->base);
    return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory for %zu links", n);
  }
  *out = &c->base;
  return 0;
}
