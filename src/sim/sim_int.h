/* Private to src/sim: helpers shared by the simulator's files. */
#ifndef ETSIM_SIM_INT_H
#define ETSIM_SIM_INT_H

#include "etsim/sim.h"

/* collcheck.c: the collective a rooted Chakra comm_type (BROADCAST,
 * REDUCE, GATHER, SCATTER, BARRIER, REDUCE_SCATTER_BLOCK) runs as through
 * the network, or -1 for any other comm_type. */
int etsim_sim__rooted_op(int comm_type);
/* The root of node i's rooted collective: its comm_root attribute (an
 * etsim extension: an NPU id, or a position in the communicator), 0 when
 * absent.  Errors name the file and node. */
int etsim_sim__root(etsim_error_t *err, const etsim_et_trace_t *t, size_t i,
                    const etsim_comm_t *comm, uint32_t n_npus, uint32_t *out);
/* Every collective of the set that the system layer would refuse (an
 * algorithm that needs a power of two, ...), found before the run: 0, or
 * the error naming the file and node. */
int etsim_sim__check_collectives(const etsim_et_set_t *set, const etsim_coll_t *coll,
                                 const etsim_sys_config_t *sys, const etsim_comm_groups_t *groups,
                                 etsim_error_t *err);

#endif
