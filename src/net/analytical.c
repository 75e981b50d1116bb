/* The congestion-unaware analytical backend (ASTRA-sim's "CU").
 *
 * A message from a to b is charged only in the lowest dimension k where
 * their addresses differ: floor(H*L_k + bytes/beta_k) ns, H the hop count in
 * that dimension.  Concurrent messages never slow each other down, so a
 * send is answered by scheduling its delivery; nothing is stored.
 *
 * With per-NPU link factors (etsim_net_npu_links_t, --link-degrade "D:N")
 * the links of the route differ: the message pays every link's latency
 * and moves at its slowest link's bandwidth, floor(L_k * sum(lat_i) +
 * bytes / (beta_k * min(bw_i))) — cut-through, as the nominal formula is
 * (H latencies, one serialisation), so all factors 1 give it back to the
 * bit.  ASTRA-sim's congestion-unaware Topology::send has no route, only
 * hops times one latency and one bandwidth per dimension; it would need
 * its congestion-aware sibling's per-device links (Ring::route, the
 * bandwidth given to each connect()) to price a route this way.
 */
#include "etsim/net.h"

#include "net_int.h"

#include <math.h>

int64_t etsim_net_analytical_ns(const etsim_topo_t *topo, uint32_t src, uint32_t dst,
                                uint64_t bytes) {
  int d = etsim_topo_first_diff_dim(topo, src, dst);
  if (d < 0) return 0;
  double h = (double)etsim_topo_hops(topo, d, src, dst);
  double ns = floor(h * topo->lat_ns[d] + (double)bytes / topo->bw_bytes_per_ns[d]);
  return etsim_des_ns_ok(ns) ? (int64_t)ns : -1;
}

/* Factors of the directed link u -> v between two NPUs in dimension d:
 * the slower end's bandwidth, the slower end's latency. */
static inline void link_factors(const etsim_net_npu_links_t *f, size_t nd, int d, uint32_t u,
                                uint32_t v, double *bw, double *lat) {
  size_t a = (size_t)u * nd + (size_t)d, b = (size_t)v * nd + (size_t)d;
  *bw = f->bw[a] < f->bw[b] ? f->bw[a] : f->bw[b];
  *lat = f->lat[a] > f->lat[b] ? f->lat[a] : f->lat[b];
}

void etsim_net_route_factors(const etsim_topo_t *t, const etsim_net_npu_links_t *f, uint32_t src,
                             uint32_t dst, double *bw, double *lat) {
  int d = etsim_topo_first_diff_dim(t, src, dst);
  if (d < 0) {
    *bw = *lat = 0;
    return;
  }
  uint32_t h = etsim_topo_hops(t, d, src, dst);
  if (!f || !f->bw) {
    *bw = 1;
    *lat = (double)h;
    return;
  }
  size_t nd = (size_t)t->ndims;
  size_t s = (size_t)src * nd + (size_t)d, e = (size_t)dst * nd + (size_t)d;
  switch (t->kind[d]) {
    case ETSIM_TOPO_SWITCH: /* src's port up, dst's port down */
      *bw = f->bw[s] < f->bw[e] ? f->bw[s] : f->bw[e];
      *lat = f->lat[s] + f->lat[e];
      return;
    case ETSIM_TOPO_FULLY_CONNECTED:
      link_factors(f, nd, d, src, dst, bw, lat);
      return;
    case ETSIM_TOPO_RING: {
      /* the congestion backend's route: the shorter way, clockwise on a tie */
      uint32_t n = t->npus[d], cs = etsim_topo_coord(t, src, d), ce = etsim_topo_coord(t, dst, d);
      uint32_t fwd = (ce + n - cs) % n;
      int dir = fwd <= n - fwd ? 1 : -1;
      double b = 1e300, l = 0;
      for (uint32_t u = src, i = 0; i < h; i++) {
        uint32_t v = etsim_topo_step(t, u, d, dir);
        double hb, hl;
        link_factors(f, nd, d, u, v, &hb, &hl);
        b = hb < b ? hb : b;
        l += hl;
        u = v;
      }
      *bw = b;
      *lat = l;
      return;
    }
  }
  *bw = 1;
  *lat = (double)h;
}

/* With every dimension a power of two (8 x 8 x 128 ...), coordinates are
 * bit fields: the message-by-message path computes one per message, and
 * shifts cost less than the divisions of etsim_topo_coord. */
typedef struct cu {
  etsim_net_t base;
  etsim_net_npu_links_t f; /* per-NPU link factors, {NULL, NULL}: nominal */
  int pow2;
  uint8_t shift[ETSIM_TOPO_MAX_DIMS];
  uint32_t mask[ETSIM_TOPO_MAX_DIMS];
} cu_t;

static int64_t cu_ns(const cu_t *c, uint32_t src, uint32_t dst, uint64_t bytes, int *dim) {
  const etsim_topo_t *t = c->base.topo;
  if (!c->pow2) {
    *dim = etsim_topo_first_diff_dim(t, src, dst);
    return etsim_net_analytical_ns(t, src, dst, bytes);
  }
  uint32_t x = src ^ dst;
  int d = 0;
  while (d < t->ndims && !((x >> c->shift[d]) & c->mask[d])) d++;
  *dim = d < t->ndims ? d : -1;
  if (d == t->ndims) return 0;
  uint32_t h = t->kind[d] == ETSIM_TOPO_FULLY_CONNECTED ? 1 : 2;
  if (t->kind[d] == ETSIM_TOPO_RING) {
    uint32_t ca = (src >> c->shift[d]) & c->mask[d], cb = (dst >> c->shift[d]) & c->mask[d];
    uint32_t delta = ca > cb ? ca - cb : cb - ca, other = t->npus[d] - delta;
    h = delta < other ? delta : other;
  }
  double ns = floor((double)h * t->lat_ns[d] + (double)bytes / t->bw_bytes_per_ns[d]);
  return etsim_des_ns_ok(ns) ? (int64_t)ns : -1;
}

/* The message's time under per-NPU link factors; *bw_f the slowest
 * link's bandwidth factor (1 when nominal, for the counters). */
static int64_t cu_ns_degraded(const cu_t *c, uint32_t src, uint32_t dst, uint64_t bytes, int *dim,
                              double *bw_f) {
  const etsim_topo_t *t = c->base.topo;
  int d = etsim_topo_first_diff_dim(t, src, dst);
  *dim = d;
  *bw_f = 1;
  if (d < 0) return 0;
  double lat;
  etsim_net_route_factors(t, &c->f, src, dst, bw_f, &lat);
  double ns = floor(t->lat_ns[d] * lat + (double)bytes / (t->bw_bytes_per_ns[d] * *bw_f));
  return etsim_des_ns_ok(ns) ? (int64_t)ns : -1;
}

static int cu_send(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t token) {
  const etsim_topo_t *t = net->topo;
  const cu_t *c = (const cu_t *)net;
  int d;
  double bw_f = 1;
  int64_t ns =
      c->f.bw ? cu_ns_degraded(c, src, dst, bytes, &d, &bw_f) : cu_ns(c, src, dst, bytes, &d);
  if (ns < 0) return ETSIM_ERANGE;
  net->stats.messages++;
  net->stats.bytes += bytes;
  if (d >= 0) net->stats.bytes_per_dim[d] += bytes;
  if (net->links.n && d >= 0) {
    size_t k = (size_t)src * (size_t)t->ndims + (size_t)d;
    net->links.bytes[k] += bytes;
    net->links.busy_ps[k] +=
        (int64_t)floor((double)bytes / (t->bw_bytes_per_ns[d] * bw_f) * (double)ETSIM_PS_PER_NS);
  }
  return etsim_des_push(net->q, etsim_des_at_ns(net->q, ns), net->ev_deliver, 0, token);
}

/* One link between an NPU and its switch: floor(L + bytes/beta), as a
 * message's single hop (H = 1); counted on the NPU's injection up.  The
 * NPU's port factors scale L and beta (both ways). */
static int cu_send_switch(etsim_net_t *net, uint32_t npu, int d, int up, uint64_t bytes,
                          uint64_t token) {
  const etsim_topo_t *t = net->topo;
  const cu_t *c = (const cu_t *)net;
  double lat_f = 1, bw_f = 1;
  if (c->f.bw) {
    size_t k = (size_t)npu * (size_t)t->ndims + (size_t)d;
    lat_f = c->f.lat[k];
    bw_f = c->f.bw[k];
  }
  double ns = floor(t->lat_ns[d] * lat_f + (double)bytes / (t->bw_bytes_per_ns[d] * bw_f));
  if (!etsim_des_ns_ok(ns)) return ETSIM_ERANGE;
  net->stats.messages++;
  net->stats.bytes += bytes;
  net->stats.bytes_per_dim[d] += bytes;
  if (net->links.n && up) {
    size_t k = (size_t)npu * (size_t)t->ndims + (size_t)d;
    net->links.bytes[k] += bytes;
    net->links.busy_ps[k] +=
        (int64_t)floor((double)bytes / (t->bw_bytes_per_ns[d] * bw_f) * (double)ETSIM_PS_PER_NS);
  }
  return etsim_des_push(net->q, etsim_des_at_ns(net->q, (int64_t)ns), net->ev_deliver, 0, token);
}

static int cu_links_enable(etsim_net_t *net) {
  return etsim_net__links_alloc(net, (size_t)net->topo->total * (size_t)net->topo->ndims);
}

static void cu_destroy(etsim_net_t *net) { etsim_free((cu_t *)net); }

static const etsim_net_ops_t cu_ops = {"analytical", cu_send, NULL,           cu_destroy,     NULL,
                                       NULL,         NULL,    cu_send_switch, cu_links_enable};

int etsim_net__analytical_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 const etsim_net_npu_links_t *f, etsim_error_t *err) {
  cu_t *c = etsim_calloc(1, sizeof *c);
  if (!c) return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  c->base.ops = &cu_ops;
  if (f && f->bw) c->f = *f;
  c->pow2 = 1;
  for (int d = 0; d < topo->ndims; d++) {
    uint32_t n = topo->npus[d], st = topo->stride[d];
    if (!n || (n & (n - 1)) || (st & (st - 1))) c->pow2 = 0;
    uint8_t sh = 0;
    while (sh < 31 && (1u << sh) < st) sh++;
    c->shift[d] = sh;
    c->mask[d] = n - 1;
  }
  *out = &c->base;
  return 0;
}
