/* The congestion-unaware analytical backend (ASTRA-sim's "CU").
 *
 * A message from a to b is charged only in the lowest dimension k where
 * their addresses differ: floor(H*L_k + bytes/beta_k) ns, H the hop count in
 * that dimension.  Concurrent messages never slow each other down, so a
 * send is answered by scheduling its delivery; nothing is stored.
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

static int cu_send(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t token) {
  const etsim_topo_t *t = net->topo;
  int d = etsim_topo_first_diff_dim(t, src, dst);
  int64_t ns = etsim_net_analytical_ns(t, src, dst, bytes);
  if (ns < 0) return ETSIM_ERANGE;
  net->stats.messages++;
  net->stats.bytes += bytes;
  if (d >= 0) net->stats.bytes_per_dim[d] += bytes;
  if (net->links.n && d >= 0) {
    size_t k = (size_t)src * (size_t)t->ndims + (size_t)d;
    net->links.bytes[k] += bytes;
    net->links.busy_ps[k] +=
        (int64_t)floor((double)bytes / t->bw_bytes_per_ns[d] * (double)ETSIM_PS_PER_NS);
  }
  return etsim_des_push(net->q, etsim_des_at_ns(net->q, ns), net->ev_deliver, 0, token);
}

/* One link between an NPU and its switch: floor(L + bytes/beta), as a
 * message's single hop (H = 1); counted on the NPU's injection up. */
static int cu_send_switch(etsim_net_t *net, uint32_t npu, int d, int up, uint64_t bytes,
                          uint64_t token) {
  const etsim_topo_t *t = net->topo;
  double ns = floor(t->lat_ns[d] + (double)bytes / t->bw_bytes_per_ns[d]);
  if (!etsim_des_ns_ok(ns)) return ETSIM_ERANGE;
  net->stats.messages++;
  net->stats.bytes += bytes;
  net->stats.bytes_per_dim[d] += bytes;
  if (net->links.n && up) {
    size_t k = (size_t)npu * (size_t)t->ndims + (size_t)d;
    net->links.bytes[k] += bytes;
    net->links.busy_ps[k] +=
        (int64_t)floor((double)bytes / t->bw_bytes_per_ns[d] * (double)ETSIM_PS_PER_NS);
  }
  return etsim_des_push(net->q, etsim_des_at_ns(net->q, (int64_t)ns), net->ev_deliver, 0, token);
}

static int cu_links_enable(etsim_net_t *net) {
  return etsim_net__links_alloc(net, (size_t)net->topo->total * (size_t)net->topo->ndims);
}

static void cu_destroy(etsim_net_t *net) { etsim_free(net); }

static const etsim_net_ops_t cu_ops = {"analytical", cu_send, NULL,           cu_destroy,     NULL,
                                       NULL,         NULL,    cu_send_switch, cu_links_enable};

int etsim_net__analytical_create(etsim_net_t **out, const etsim_topo_t *topo, etsim_error_t *err) {
  (void)topo; /* net.c sets net->topo */
  etsim_net_t *n = etsim_calloc(1, sizeof *n);
  if (!n) return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  n->ops = &cu_ops;
  *out = n;
  return 0;
}
