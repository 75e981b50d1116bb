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

/* memory.c: per-NPU live tensor bytes (docs/sim.md, "Memory"). */
typedef struct etsim_sim_mem etsim_sim_mem_t;
/* *out stays NULL when no trace of the set names tensors.  n_sim NPUs are
 * simulated; record: keep a sample at every change (the timeline). */
int etsim_sim__mem_create(const etsim_et_set_t *set, uint32_t n_sim, int record,
                          etsim_sim_mem_t **out, etsim_error_t *err);
void etsim_sim__mem_free(etsim_sim_mem_t *mm);
/* Node `node` of NPU npu starts (allocates what it writes) or ends (frees
 * what it was the last to read). */
int etsim_sim__mem_start(etsim_sim_mem_t *mm, uint32_t npu, uint32_t node, int64_t t_ps);
int etsim_sim__mem_end(etsim_sim_mem_t *mm, uint32_t npu, uint32_t node, int64_t t_ps);
uint64_t etsim_sim__mem_peak(const etsim_sim_mem_t *mm, uint32_t npu);
/* Hand the samples over (owned by the caller). */
void etsim_sim__mem_take_samples(etsim_sim_mem_t *mm, etsim_sim_mem_sample_t **out, size_t *n);
/* Capacity and offloading on a finished result. */
void etsim_sim__mem_offload(etsim_sim_result_t *r, const etsim_sim_opts_t *o);

/* pool.c: the hierarchical memory pool and its in-switch reduction. */
typedef struct etsim_sim_pool etsim_sim_pool_t;
int etsim_sim__pool_create(const etsim_mem_config_t *m, uint32_t n_npus, uint32_t ev_done,
                           etsim_sim_pool_t **out);
void etsim_sim__pool_free(etsim_sim_pool_t *p);
/* NPU npu's memory node `node` (its index in the trace) of `bytes`: a
 * store or a load, to the in-node pool (level 0) or the out-node pool (1);
 * reduce: a reducing store.  Pushes event ev_done (a = npu, b = node) for
 * its end, or for every NPU's once a reducing round is complete. */
int etsim_sim__pool_issue(etsim_sim_pool_t *p, etsim_des_t *q, uint32_t npu, uint32_t node,
                          uint64_t bytes, int store, int level, int reduce);

#endif
