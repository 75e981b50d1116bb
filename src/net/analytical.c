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
  return etsim_des_push(net->q, etsim_des_at_ns(net->q, ns), net->ev_deliver, 0, token);
}

static void cu_destroy(etsim_net_t *net) { etsim_free(net); }

static const etsim_net_ops_t cu_ops = {"analytical", cu_send, NULL, cu_destroy, NULL, NULL, NULL};

int etsim_net__analytical_create(etsim_net_t **out, const etsim_topo_t *topo, etsim_error_t *err) {
  (void)topo;
  etsim_net_t *n = etsim_calloc(1, sizeof *n);
  if (!n) return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  n->ops = &cu_ops;
  *out = n;
  return 0;
}
