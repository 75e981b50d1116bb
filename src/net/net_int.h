/* Private to src/net: backend constructors. */
#ifndef ETSIM_NET_INT_H
#define ETSIM_NET_INT_H

#include "etsim/net.h"

int etsim_net__analytical_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 etsim_error_t *err);
int etsim_net__congestion_create(etsim_net_t **out, const etsim_topo_t *topo,
                                 etsim_error_t *err);

#endif
