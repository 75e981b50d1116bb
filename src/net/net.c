/* The network interface: backend registry. */
#include "etsim/net.h"

#include "net_int.h"

#include <stdio.h>
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
  if (!net) return;
  etsim_net_links_free(&net->links);
  net->ops->destroy(net);
}

int etsim_net_links_enable(etsim_net_t *net) {
  if (net->links.n) return 0;
  return net->ops->links_enable ? net->ops->links_enable(net) : ETSIM_EUNSUPPORTED;
}

int etsim_net__links_alloc(etsim_net_t *net, size_t n) {
  net->links.bytes = etsim_calloc(n ? n : 1, sizeof *net->links.bytes);
  net->links.busy_ps = etsim_calloc(n ? n : 1, sizeof *net->links.busy_ps);
  if (!net->links.bytes || !net->links.busy_ps) {
    etsim_net_links_free(&net->links);
    return ETSIM_ENOMEM;
  }
  net->links.n = n;
  return 0;
}

void etsim_net_links_free(etsim_net_links_t *l) {
  etsim_free(l->bytes);
  etsim_free(l->busy_ps);
  memset(l, 0, sizeof *l);
}

/* Link numbering of the congestion backend (congestion.c): per dimension
 * in order, per NPU, 2 links for a Ring (+, -) or a Switch (up, down),
 * n for a FullyConnected group (one to each coordinate). */
void etsim_net_link_name(const char *backend, const etsim_topo_t *t, size_t k, char *buf,
                         size_t n) {
  if (strcmp(backend, "congestion") != 0 && strcmp(backend, "congestion-aware") != 0) {
    size_t nd = (size_t)t->ndims;
    int d = (int)(k % nd);
    snprintf(buf, n, "NPU %zu dim %d (%s) out", k / nd, d, etsim_topo_kind_name(t->kind[d]));
    return;
  }
  for (int d = 0; d < t->ndims; d++) {
    size_t per = t->kind[d] == ETSIM_TOPO_FULLY_CONNECTED ? t->npus[d] : 2;
    size_t span = (size_t)t->total * per;
    if (k >= span) {
      k -= span;
      continue;
    }
    uint32_t a = (uint32_t)(k / per), j = (uint32_t)(k % per);
    const char *kind = etsim_topo_kind_name(t->kind[d]);
    if (t->kind[d] == ETSIM_TOPO_SWITCH)
      snprintf(buf, n, j ? "switch -> NPU %u (dim %d %s)" : "NPU %u -> switch (dim %d %s)", a, d,
               kind);
    else if (t->kind[d] == ETSIM_TOPO_RING)
      snprintf(buf, n, "NPU %u -> NPU %u (dim %d %s)", a, etsim_topo_step(t, a, d, j ? -1 : 1), d,
               kind);
    else
      snprintf(buf, n, "NPU %u -> NPU %u (dim %d %s)", a,
               a + (j - etsim_topo_coord(t, a, d)) * t->stride[d], d, kind);
    return;
  }
  snprintf(buf, n, "link %zu", k);
}
