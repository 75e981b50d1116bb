/* Private to src/net: backend constructors. */
#ifndef ETSIM_NET_INT_H
#define ETSIM_NET_INT_H

#include "etsim/net.h"

/* f (may be NULL): per-NPU link factors, borrowed (net.h). */
int etsim_net__analytical_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 const etsim_net_npu_links_t *f, etsim_error_t *err);
int etsim_net__congestion_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 const etsim_net_npu_links_t *f, etsim_error_t *err);

/* Allocate net->links for n links (zeroed). */
int etsim_net__links_alloc(etsim_net_t *net, size_t n);

/* The RoCE backend on the level named `level` ("flow" or "packet",
 * netpkt.h's etsim_netpkt_level_find), with opts (may be NULL: defaults)
 * for its topology, config and congestion control. */
int etsim_net__rdma_create(etsim_net_t **out, const etsim_topo_t *topo, const char *level,
                           const etsim_net_opts_t *opts, etsim_error_t *err);

#endif
