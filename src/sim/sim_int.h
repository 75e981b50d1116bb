/* Private to src/sim: classes of equivalent NPUs (reduce.c). */
#ifndef ETSIM_SIM_INT_H
#define ETSIM_SIM_INT_H

#include "etsim/sim.h"

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
} sim_sym_t;

/* Look for NPU classes: 1 with *out filled (free with etsim_sim__sym_free),
 * 0 when none applies (why says what prevents it), or ETSIM_ENOMEM. */
int etsim_sim__find_symmetry(const etsim_et_set_t *set, const etsim_topo_t *topo,
                             const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                             sim_sym_t *out, char *why, size_t n_why);
void etsim_sim__sym_free(sim_sym_t *s);

/* Whether every message pair the reduced run used costs the same under
 * every element of the group (the analytical cost depends on the first
 * differing dimension and the hops in it): 1 yes, 0 no (why names the
 * pair). */
int etsim_sim__check_costs(const sim_sym_t *s, const etsim_topo_t *topo,
                           const etsim_u64map_t *pairs, char *why, size_t n_why);

#endif
