/* The network interface: backend registry. */
#include "etsim/net.h"

#include "net_int.h"

#include <string.h>

const char *const etsim_net_backend_names[] = {"analytical", "congestion", "flow", "packet", NULL};

int etsim_net_create(etsim_net_t **out, const char *name, const etsim_topo_t *topo, etsim_des_t *q,
                     uint32_t ev_deliver, uint32_t ev_internal, const etsim_net_opts_t *opts,
                     etsim_error_t *err) {
  etsim_net_t *n = NULL;
  int rc;
  if (strcmp(name, "analytical") == 0 || strcmp(name, "congestion-unaware") == 0)
    rc = etsim_net__analytical_create(&n, topo, err);
  else if (strcmp(name, "congestion") == 0 || strcmp(name, "congestion-aware") == 0)
    rc = etsim_net__congestion_create(&n, topo, err);
  else if (strcmp(name, "flow") == 0 || strcmp(name, "packet") == 0)
    rc = etsim_net__rdma_create(&n, topo, q, ev_deliver, name[0] == 'p', opts, err);
  else
    return etsim_error_set(err, ETSIM_EINVAL,
                           "unknown network backend \"%s\" (expected analytical, "
                           "congestion, flow or packet)",
                           name);
  if (rc) return rc;
  n->topo = topo;
  n->q = q;
  n->ev_deliver = ev_deliver;
  n->ev_internal = ev_internal;
  *out = n;
  return 0;
}

void etsim_net_destroy(etsim_net_t *net) {
  if (net) net->ops->destroy(net);
}
