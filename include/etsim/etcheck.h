/*
 * etsim/etcheck.h — what is in a trace, and what is wrong with it.
 *
 * etsim_et_stats summarises one in-memory trace (counts, edges, depth,
 * critical path, compute time, bytes per collective, attribute kinds);
 * etsim_et_validate / etsim_et_validate_set report problems one line at a
 * time through a callback, so the CLI decides how to print them.  All graph
 * walks are iterative (Kahn's algorithm over the CSR arrays): O(N + E), no
 * recursion on graph depth.
 */
#ifndef ETSIM_ETCHECK_H
#define ETSIM_ETCHECK_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etsim_et_attr_use {
  const char *name; /* borrowed from the trace */
  int kind;
  size_t count;
} etsim_et_attr_use_t;

typedef struct etsim_et_stats {
  size_t n_nodes;
  size_t by_type[ETSIM_ET_NODE_TYPE_COUNT];
  size_t by_coll[ETSIM_COLL_TYPE_COUNT];
  uint64_t coll_bytes[ETSIM_COLL_TYPE_COUNT];
  size_t data_edges, ctrl_edges; /* as written, dangling included */
  size_t dangling_data, dangling_ctrl;
  size_t sources, sinks;                  /* over resolved data edges */
  size_t depth;                           /* nodes on the longest path */
  uint64_t critical_path_ns;              /* heaviest duration-weighted path */
  uint64_t critical_first, critical_last; /* ids at its ends */
  uint64_t compute_ns;                    /* sum of COMP durations */
  int cyclic;                             /* depth/critical path undefined */
  etsim_et_attr_use_t *attrs;             /* owned; sorted by name, kind */
  size_t n_attr_uses;
} etsim_et_stats_t;

/* Fill *st (owned arrays freed by etsim_et_stats_free).  0 or ENOMEM. */
int etsim_et_stats(const etsim_et_trace_t *t, etsim_et_stats_t *st);
void etsim_et_stats_free(etsim_et_stats_t *st);

enum { ETSIM_CHECK_PROBLEM = 1, ETSIM_CHECK_NOTE = 0 };

/* One finding: severity PROBLEM (counts towards exit 1) or NOTE. */
typedef void (*etsim_et_finding_fn)(void *user, int severity, const char *line);

/* Check one trace.  Returns the number of problems (>= 0) or ENOMEM. */
long etsim_et_validate(const etsim_et_trace_t *t, etsim_et_finding_fn fn, void *user);
/* Check every distinct trace of a set, then across ranks: per communicator
 * (pg_name) the same collectives in the same order, type and size on every
 * member; every send matched by a receive.  Returns the problem count. */
long etsim_et_validate_set(const etsim_et_set_t *s, etsim_et_finding_fn fn, void *user);

/* Dependencies a consumer enforces: data_deps, ctrl_deps or both (etsim
 * sim and ASTRA-sim: both; replay --deps chooses). */
enum { ETSIM_ET_DEPS_DATA = 1u, ETSIM_ET_DEPS_CTRL = 2u };

/*
 * Run the set as etsim sim issues it, without time: eager sends, receives
 * matched by (src, dst, tag, size), network collectives (all-reduce,
 * all-gather, reduce-scatter, all-to-all) completing when every rank with a
 * collective on the communicator reached the same one, each holding its
 * rank's communication slot (or CPU) until then.  Reports one PROBLEM
 * naming up to three ranks, the node each is stuck on and what it waits
 * for, when some cannot finish.  Returns the problem count or ENOMEM.  A
 * set of more than 2^28 nodes (summed over ranks) is skipped with a NOTE.
 */
long etsim_et_check_deadlock(const etsim_et_set_t *s, unsigned deps, etsim_et_finding_fn fn,
                             void *user);

#ifdef __cplusplus
}
#endif
#endif
