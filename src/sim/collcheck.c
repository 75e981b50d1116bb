/* Collectives looked at before the run: which ones run through the network,
 * their roots, and whether the configured algorithms can run them at all
 * (issue 19: halvingDoubling on 6 NPUs used to be reported as a deadlock
 * after the run instead of a clear error before it). */
#include "sim_int.h"

#include <stdlib.h>
#include <string.h>

int etsim_sim__rooted_op(int comm_type) {
  switch (comm_type) {
    case ETSIM_COLL_BROADCAST:
      return ETSIM_COP_BROADCAST;
    case ETSIM_COLL_REDUCE:
      return ETSIM_COP_REDUCE;
    case ETSIM_COLL_GATHER:
      return ETSIM_COP_GATHER;
    case ETSIM_COLL_SCATTER:
      return ETSIM_COP_SCATTER;
    case ETSIM_COLL_BARRIER:
      return ETSIM_COP_BARRIER;
    case ETSIM_COLL_REDUCE_SCATTER_BLOCK:
      return ETSIM_COP_REDUCE_SCATTER;
    default:
      return -1;
  }
}

int etsim_sim__root(etsim_error_t *err, const etsim_et_trace_t *t, size_t i,
                    const etsim_comm_t *comm, uint32_t n_npus, uint32_t *out) {
  int64_t v = 0;
  int rc = etsim_et_trace_attr_int_by_name(t, i, "comm_root", &v);
  if (rc < 0)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: node %llu: comm_root is not an integer",
                           t->path, (unsigned long long)t->id[i]);
  uint32_t n = comm ? comm->n : n_npus;
  if (v < 0 || (uint64_t)v >= n)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: node %llu: comm_root %lld is not %s (0 to %u)",
                           t->path, (unsigned long long)t->id[i], (long long)v,
                           comm ? "a position in its communicator" : "an NPU of the network",
                           n - 1);
  *out = (uint32_t)v;
  return 0;
}

int etsim_sim__coll_op(int64_t ct, const etsim_sys_config_t *sys) {
  switch (ct) {
    case ETSIM_COLL_ALL_REDUCE:
      return ETSIM_COP_ALL_REDUCE;
    case ETSIM_COLL_REDUCE_SCATTER:
      return ETSIM_COP_REDUCE_SCATTER;
    case ETSIM_COLL_ALL_GATHER:
      return ETSIM_COP_ALL_GATHER;
    case ETSIM_COLL_ALL_TO_ALL:
      return ETSIM_COP_ALL_TO_ALL;
    default:
      return sys->rooted_network ? etsim_sim__rooted_op((int)ct) : -1;
  }
}

int etsim_sim__check_collectives(const etsim_et_set_t *set, const etsim_coll_t *coll,
                                 const etsim_sys_config_t *sys, const etsim_comm_groups_t *groups,
                                 const etsim_comm_t *world, etsim_error_t *err) {
  for (size_t k = 0; k < set->n_traces; k++) {
    const etsim_et_trace_t *t = set->traces[k];
    if (t->k_comm_type == UINT32_MAX) continue;
    /* traces repeat the same few (type, communicator) pairs: check each
     * new pair once */
    int last_op = -1;
    const char *last_pg = NULL;
    for (size_t i = 0; i < t->n_nodes; i++) {
      if (t->type[i] != ETSIM_ET_COMM_COLL_NODE) continue;
      int64_t ct = -1;
      if (etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) != 1) continue;
      int op = etsim_sim__coll_op(ct, sys);
      if (op < 0) continue;
      const char *pg = etsim_et_trace_attr_str(t, i, t->k_pg_name);
      if (op == last_op && (pg == last_pg || (pg && last_pg && strcmp(pg, last_pg) == 0))) continue;
      last_op = op;
      last_pg = pg;
      const etsim_comm_t *comm = world;
      if (pg && *pg && strcmp(pg, "0") != 0) {
        comm = NULL;
        char *end;
        unsigned long gid = strtoul(pg, &end, 10);
        for (size_t g = 0; groups && *end == 0 && g < groups->n; g++)
          if (groups->g[g].id == gid) comm = &groups->g[g];
        if (!comm) continue; /* defined by a METADATA node, or an error the run reports */
      }
      etsim_error_t e = {0};
      int rc = etsim_coll_check(coll, (etsim_cop_t)op, comm, &e);
      if (rc)
        return etsim_error_set(err, rc, "%s: node %llu: %s", t->path, (unsigned long long)t->id[i],
                               e.msg);
    }
  }
  return 0;
}
