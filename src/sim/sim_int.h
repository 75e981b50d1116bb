/* Private to src/sim: helpers shared by the simulator's files. */
#ifndef ETSIM_SIM_INT_H
#define ETSIM_SIM_INT_H

#include "etsim/sim.h"

/* collcheck.c: the collective a rooted Chakra comm_type (BROADCAST,
 * REDUCE, GATHER, SCATTER, BARRIER, REDUCE_SCATTER_BLOCK) runs as through
 * the network, or -1 for any other comm_type. */
int etsim_sim__rooted_op(int comm_type);
/* The collective a Chakra comm_type runs as through the network under
 * sys (rooted ones only with "rooted-collectives": "network"), or -1 when
 * it is not simulated there (replayed, or not a collective). */
int etsim_sim__coll_op(int64_t comm_type, const etsim_sys_config_t *sys);
/* The root of node i's rooted collective: its comm_root attribute (an
 * etsim extension: an NPU id, or a position in the communicator), 0 when
 * absent.  Errors name the file and node. */
int etsim_sim__root(etsim_error_t *err, const etsim_et_trace_t *t, size_t i,
                    const etsim_comm_t *comm, uint32_t n_npus, uint32_t *out);
/* Every collective of the set that the system layer would refuse (an
 * algorithm that needs a power of two, ...), found before the run: 0, or
 * the error naming the file and node.  world: what a collective without a
 * communicator runs on (NULL: every NPU; a job's NPUs with --job). */
int etsim_sim__check_collectives(const etsim_et_set_t *set, const etsim_coll_t *coll,
                                 const etsim_sys_config_t *sys, const etsim_comm_groups_t *groups,
                                 const etsim_comm_t *world, etsim_error_t *err);

/* jobs.c: several jobs on one network (docs/sim.md, "Several jobs"). */
typedef struct sim_jobs {
  uint32_t n_jobs;
  const etsim_sim_job_t *jobs;
  /* The jobs' ranks as one set over the network's NPUs (arrays owned,
   * traces borrowed from the jobs' sets); idle NPUs run `idle`, a trace
   * of no nodes. */
  etsim_et_set_t view;
  etsim_et_trace_t idle;
  uint32_t *job_of, *rank_of; /* NPU -> job (UINT32_MAX idle), local rank */
  uint32_t *active;           /* the NPUs of some job, ascending */
  uint32_t n_active;
  /* Per job: its world (its NPUs in local-rank order, ids after every
   * group's).  A job on the whole network in id order runs its world
   * collectives as the network's own: coll sees that
   * (etsim_coll_comm_is_world); in any other order, roots are local ranks. */
  etsim_comm_t *world;
  /* Per job its groups in NPU ids with their own ids (for the checks
   * before the run), and all of them as one list with ids 1, 2, ... (the
   * run's opts.groups; members borrowed from the former). */
  etsim_comm_groups_t *job_groups;
  etsim_comm_groups_t all;
  uint32_t *group_base; /* per job: index of its first group in `all` */
} sim_jobs_t;

int etsim_sim__jobs_build(const etsim_sim_job_t *jobs, uint32_t n_jobs, uint32_t n_npus,
                          sim_jobs_t *out, etsim_error_t *err);
void etsim_sim__jobs_free(sim_jobs_t *j);
/* The job-aware lookup key of communicator `gid` named by NPU npu's trace
 * (job << 32 | gid; gid alone without jobs). */
static inline uint64_t etsim_sim__group_key(const sim_jobs_t *j, uint32_t npu, uint64_t gid) {
  return j ? (uint64_t)j->job_of[npu] << 32 | gid : gid;
}

/* memory.c: per-NPU live tensor bytes (docs/sim.md, "Memory"). */
typedef struct etsim_sim_mem etsim_sim_mem_t;
/* *out stays NULL when no trace of the set names tensors.  The n_sim NPUs
 * ids[] (of n_npus) are simulated; record: keep a sample at every change
 * (the timeline). */
int etsim_sim__mem_create(const etsim_et_set_t *set, uint32_t n_npus, const uint32_t *ids,
                          uint32_t n_sim, int record, etsim_sim_mem_t **out, etsim_error_t *err);
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

/* reduce.c: classes of equivalent NPUs. */
#define SYM_MAX_GEN 8

/* A symmetry group found for a run: its generators (commuting shifts along
 * cycles, see etsim_coll_symmetry_t), the class representatives and the
 * id each communicator carries in message tags (the smallest id of its
 * orbit, so images of one collective match without renaming). */
typedef struct sim_sym {
  etsim_coll_symmetry_t cs;
  uint32_t n_gen;
  uint32_t len[SYM_MAX_GEN];
  uint32_t *pos[SYM_MAX_GEN], *first[SYM_MAX_GEN], *members[SYM_MAX_GEN];
  uint32_t *rep;  /* NPU -> its representative */
  uint32_t *reps; /* the representatives, ascending */
  uint32_t n_reps;
  uint64_t order;   /* |G|: NPUs per class */
  uint32_t *tag_id; /* per communicator group (opts->groups order): id used in tags */
  char desc[240];   /* the generators, for the summary */
  /* per-NPU link factors the message costs depend on (opts->net's,
   * borrowed; {NULL, NULL}: nominal), for etsim_sim__check_costs */
  etsim_net_npu_links_t links;
} sim_sym_t;

/* Look for NPU classes: 1 with *out filled (free with etsim_sim__sym_free),
 * 0 when none applies (why says what prevents it), or ETSIM_ENOMEM. */
int etsim_sim__find_symmetry(const etsim_et_set_t *set, const etsim_topo_t *topo,
                             const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                             sim_sym_t *out, char *why, size_t n_why);
void etsim_sim__sym_free(sim_sym_t *s);

/* Whether every message pair the reduced run used costs the same under
 * every element of the group (the analytical cost depends on the first
 * differing dimension, the hops in it and, under per-NPU link factors,
 * those of the links on the route): 1 yes, 0 no (why names the pair). */
int etsim_sim__check_costs(const sim_sym_t *s, const etsim_topo_t *topo,
                           const etsim_u64map_t *pairs, char *why, size_t n_why);

/* A whole number in [0, 2^32) at *s (decimal, no sign); advances *s.
 * 0, or -1 when there is none or it is too large.  (whatif.c; the spec
 * parsers of whatif.c and jobs.c.) */
int etsim_sim__parse_u32(const char **s, uint32_t *out);

#endif
