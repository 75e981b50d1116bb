/*
 * etsim/coll.h — the system layer: collectives as chunked streams of
 * per-dimension phases.
 *
 * This is ASTRA-sim 2.0's system layer, re-derived: a collective of S bytes
 * on an NPU becomes `preferred-dataset-splits` streams (chunks); each stream
 * carries an ordered list of phases, one per logical dimension (baseline:
 * the same collective on every dimension, all-gather descending;
 * localBWAware all-reduce: reduce-scatter up, all-reduce on the last
 * dimension, all-gather down).  Each dimension has a queue that runs at most
 * `active-chunks-per-dimension` streams at once, in priority order (LIFO,
 * FIFO or EXPLICIT).  A phase runs an algorithm (ring, direct,
 * halving-doubling, double binary tree, or their one-dimension "one*"
 * variants over all NPUs) that exchanges messages through the network;
 * every step pays the endpoint delay, and reducing steps pay three passes
 * over local memory.
 *
 * The layer also matches point-to-point messages (ASTRA-sim's front end):
 * a send meets the receive with the same (tag, source, destination, size),
 * in order; a receive posted after the arrival completes at once.
 *
 * All NPUs live in one etsim_coll_t; state is in pooled arrays indexed by
 * small integers, so nothing is allocated per message.
 */
#ifndef ETSIM_COLL_H
#define ETSIM_COLL_H

#include "etsim/base.h"
#include "etsim/des.h"
#include "etsim/net.h"
#include "etsim/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ETSIM_COP_ALL_REDUCE = 0,
  ETSIM_COP_REDUCE_SCATTER = 1,
  ETSIM_COP_ALL_GATHER = 2,
  ETSIM_COP_ALL_TO_ALL = 3,
  /* Rooted collectives and the barrier (an etsim extension: ASTRA-sim
   * replays BROADCAST's trace duration and rejects the rest).  They run
   * through the network when the system file says "rooted-collectives":
   * "network"; comm_size is the buffer for broadcast and reduce, and one
   * rank's share for gather and scatter (as for all-gather). */
  ETSIM_COP_BROADCAST = 4,
  ETSIM_COP_REDUCE = 5,
  ETSIM_COP_GATHER = 6,
  ETSIM_COP_SCATTER = 7,
  ETSIM_COP_BARRIER = 8,
  ETSIM_COP_N = 9
} etsim_cop_t;

/* The collectives ASTRA-sim simulates (the first ETSIM_COP_ASTRA_N). */
#define ETSIM_COP_ASTRA_N 4

const char *etsim_coll_op_name(etsim_cop_t t);

typedef enum {
  ETSIM_ALGO_RING = 0,
  ETSIM_ALGO_DIRECT,
  ETSIM_ALGO_HALVING_DOUBLING,
  ETSIM_ALGO_DOUBLE_BINARY_TREE,
  ETSIM_ALGO_ONE_RING,
  ETSIM_ALGO_ONE_DIRECT,
  ETSIM_ALGO_ONE_HALVING_DOUBLING,
  /* etsim's own: a binomial tree (rooted collectives and the barrier), and
   * the switch of a dimension reducing in the network (chosen per
   * dimension by "in-network-collectives", not by name) */
  ETSIM_ALGO_TREE,
  ETSIM_ALGO_IN_NETWORK,
  ETSIM_ALGO_N
} etsim_algo_kind_t;

typedef struct etsim_coll_impl {
  etsim_algo_kind_t kind;
  int32_t window; /* direct: outstanding sends, -1 = all peers */
} etsim_coll_impl_t;

/* Parse ASTRA-sim's algorithm names: ring, direct, directN, halvingDoubling,
 * doubleBinaryTree, oneRing, oneDirect, oneDirectN, oneHalvingDoubling; and
 * etsim's tree (binomial, for rooted collectives and the barrier).  0, or
 * ETSIM_EINVAL for any other name (the registry, src/coll/algo.c, holds
 * them all). */
int etsim_coll_impl_parse(const char *s, etsim_coll_impl_t *out);
/* The name of kind k ("?" for none); inNetwork for the switch's. */
const char *etsim_algo_name(etsim_algo_kind_t k);

typedef enum { ETSIM_SCHED_LIFO = 0, ETSIM_SCHED_FIFO, ETSIM_SCHED_EXPLICIT } etsim_sched_t;

/* Everything the system JSON says (ASTRA-sim's keys). */
/* The largest endpoint delay accepted (1000 s): far beyond any platform, and
 * small enough that delays summed with it stay inside the clock's horizon. */
#define ETSIM_COLL_MAX_DELAY_NS 1e12
/* The most preferred-dataset-splits and active-chunks-per-dimension: the
 * system layer's cost grows with the square of the splits (ASTRA-sim's own
 * configurations use 1 to 256). */
#define ETSIM_COLL_MAX_SPLITS 4096

typedef struct etsim_sys_config {
  etsim_sched_t scheduling;
  int local_bw_aware;        /* collective-optimization */
  uint32_t active_chunks;    /* active-chunks-per-dimension, default 1 */
  uint32_t splits;           /* preferred-dataset-splits (required) */
  int64_t endpoint_delay_ns; /* default 10; at most ETSIM_COLL_MAX_DELAY_NS */
  double local_mem_bw_gbps;  /* 10^9 bytes/s; 0 = no reduction cost */
  double peak_perf_tflops;   /* roofline */
  int roofline;              /* roofline-enabled */
  int replay_only;           /* replay-only */
  uint32_t queues_per_dim;   /* ASTRA-sim's --num-queues-per-dim, default 1 */
  /* etsim's --ring-window: a ring stream sends a piece only while fewer than
   * this many of its pieces are undelivered, and ends when all are
   * delivered (credits, as NCCL's slots); 0 = no limit, as ASTRA-sim */
  uint32_t ring_window;
  int n_impl[ETSIM_COP_N];
  etsim_coll_impl_t impl[ETSIM_COP_N][ETSIM_TOPO_MAX_DIMS];
  char *custom[ETSIM_COP_N]; /* *-implementation-custom prefix, or NULL */
  char *dir;                 /* folder of the system file (for relative paths) */
  /* etsim's extension keys (docs/sim.md, "Extensions"); when absent every
   * ASTRA-sim file keeps its meaning.  n_impl of a rooted type is 0 when
   * the file gives no list: ring on every dimension. */
  uint8_t in_network[ETSIM_TOPO_MAX_DIMS]; /* in-network-collectives */
  /* in-network-reduction-bw: the switch's reduction rate per dimension in
   * GB/s (2^30 bytes, as link bandwidth); 0 = as fast as its links */
  double in_network_bw_gbps[ETSIM_TOPO_MAX_DIMS];
  int rooted_network;     /* rooted-collectives: "network" 1, "replay" 0 (default) */
  int group_hierarchical; /* group-phases: "hierarchical" 1, "flat" 0 (default) */
} etsim_sys_config_t;

void etsim_sys_config_defaults(etsim_sys_config_t *c);
void etsim_sys_config_free(etsim_sys_config_t *c);
/* Read an ASTRA-sim system JSON.  Unknown keys warn; missing
 * preferred-dataset-splits, wrong types and unknown names are errors naming
 * the file and key.  Relative custom paths are kept as written. */
int etsim_sys_config_load(const char *path, etsim_sys_config_t *c, etsim_error_t *err);

/* Events the layer owns (types below ETSIM_COLL_EV_END); the owner of the
 * queue routes them to etsim_coll_event(). */
enum {
  ETSIM_COLL_EV_DELIVER = 1, /* network delivery of a message */
  ETSIM_COLL_EV_HOP = 2,     /* network-internal event */
  ETSIM_COLL_EV_GENERAL = 3, /* a stream's packet cleared the memory bus */
  ETSIM_COLL_EV_RECV = 4,    /* a late receive completes */
  ETSIM_COLL_EV_CUSTOM = 5,  /* a custom collective's compute node ends */
  ETSIM_COLL_EV_EXT = 6,     /* etsim's algorithms: a switch finished reducing */
  ETSIM_COLL_EV_END = 8
};

/* Called when work the upper layer issued finishes: a collective (token as
 * given to etsim_coll_issue) or a point-to-point send/receive. */
typedef void (*etsim_coll_done_fn)(void *user, uint32_t npu, uint64_t token);

typedef struct etsim_coll etsim_coll_t;

/* A communicator: members in ring order (borrowed while the run lasts). */
typedef struct etsim_comm {
  uint32_t id; /* group id from the communicator-group file */
  uint32_t n;
  const uint32_t *members;
} etsim_comm_t;

int etsim_coll_create(etsim_coll_t **out, const etsim_sys_config_t *cfg, const etsim_topo_t *topo,
                      etsim_net_t *net, etsim_des_t *q, etsim_coll_done_fn done, void *user,
                      etsim_error_t *err);
void etsim_coll_destroy(etsim_coll_t *c);

/* Start a collective on `npu` now.  involved: bit d set = dimension d takes
 * part (~0u for all).  comm NULL = all NPUs.  On completion done(user, npu,
 * token) is called.  Rooted types take their root from etsim_coll_issue_rooted
 * (this call uses root 0). */
int etsim_coll_issue(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                     uint32_t involved, const etsim_comm_t *comm, int32_t priority, uint64_t token,
                     etsim_error_t *err);
/* The same with a root: an NPU id for world collectives, a position in the
 * communicator's member list otherwise (ignored by unrooted types). */
int etsim_coll_issue_rooted(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                            uint32_t involved, const etsim_comm_t *comm, uint32_t root,
                            int32_t priority, uint64_t token, etsim_error_t *err);

/* Whether a collective of this type on this communicator (NULL = all NPUs)
 * can run with the configured algorithms, before anything runs: 0, or
 * ETSIM_EUNSUPPORTED with a message (halvingDoubling and doubleBinaryTree
 * need a power-of-two number of NPUs; in-network reduction needs a Switch
 * dimension and the analytical or congestion backend). */
int etsim_coll_check(const etsim_coll_t *c, etsim_cop_t type, const etsim_comm_t *comm,
                     etsim_error_t *err);

/* A communicator's grid: its members are exactly the NPUs whose coordinate
 * in each spanned physical dimension phys is c0, c0 + step, ... (count > 1
 * values) and which share every other coordinate.  Under group-phases
 * "hierarchical" such a communicator runs one ring per spanned dimension
 * (in dim[] order, lowest phys first) instead of ASTRA-sim's flat ring. */
typedef struct etsim_coll_grid_dim {
  int phys;
  uint32_t count, c0, step;
} etsim_coll_grid_dim_t;
typedef struct etsim_coll_grid {
  int n_dims;
  etsim_coll_grid_dim_t dim[ETSIM_TOPO_MAX_DIMS];
} etsim_coll_grid_t;
/* 1 and out filled when comm's members form a grid over topo, else 0. */
int etsim_coll_comm_grid(const etsim_topo_t *topo, const etsim_comm_t *comm,
                         etsim_coll_grid_t *out);

/* Point-to-point: send/receive `bytes` with a user tag; done() fires with
 * `token` at delivery (both sides).  0, or ETSIM_ENOMEM, or the network's
 * refusal (ETSIM_ERANGE: the message would end past the clock's horizon),
 * with a message naming the NPUs and tag in err. */
int etsim_coll_send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint32_t tag,
                    uint64_t token, etsim_error_t *err);
int etsim_coll_recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint32_t tag,
                    uint64_t token, etsim_error_t *err);

/*
 * Classes of equivalent NPUs (docs/sim.md, "Classes of equivalent NPUs").
 * A group G of NPU permutations is generated by n_gen commuting "shifts":
 * generator i splits the NPUs into cycles of len[i] (members[i] lists them
 * cycle after cycle, first[i][x] is the index of x's cycle there and
 * pos[i][x] x's position in it) and moves every NPU one step along its
 * cycle; a shift keeps every other generator's positions.  Each NPU x is
 * g_x(rep[x]) with g_x = product of shift i to the power pos[i][x], and
 * only representatives (all positions 0) are simulated.  A message a
 * representative r sends to a non-representative x is the image under g_x
 * of the one rep[x] receives from g_x^-1(r) at the same time: it is
 * delivered there, from there.  Valid when traces, communicators and
 * message costs are G-invariant (the caller checks the first two; the
 * pairs the run used give the third, see etsim_coll_pairs).
 */
typedef struct etsim_coll_symmetry {
  uint32_t n_gen;
  const uint32_t *len;
  const uint32_t *const *pos;
  const uint32_t *const *first;
  const uint32_t *const *members;
  const uint32_t *rep;
} etsim_coll_symmetry_t;

/* Simulate representatives only (sym borrowed for the run; NULL: all).
 * Network messages then also record their (from, to) pairs. */
void etsim_coll_set_symmetry(etsim_coll_t *c, const etsim_coll_symmetry_t *sym);
/* The distinct (from << 32 | to) pairs of network messages sent while a
 * symmetry was set: the map's keys (vals nonzero mark used slots). */
const etsim_u64map_t *etsim_coll_pairs(const etsim_coll_t *c);
/* The NPU whose state an event of the layer touches, and a key naming the
 * handler it will run (a stream, a custom node, a workload token; 0 when
 * it only counts an early arrival): events with different keys may not
 * commute, events with one key do. */
void etsim_coll_event_key(const etsim_coll_t *c, const etsim_des_event_t *ev, uint32_t *npu,
                          uint64_t *key);

/* A custom collective (ASTRA-sim's *-implementation-custom): per rank a
 * graph of send, receive and compute nodes, built by the caller from the
 * rank's Chakra trace.  Peers are ranks of the communicator. */
enum { ETSIM_CUSTOM_COMP = 0, ETSIM_CUSTOM_SEND = 1, ETSIM_CUSTOM_RECV = 2, ETSIM_CUSTOM_NOP = 3 };
typedef struct etsim_coll_custom_rank {
  uint32_t n;     /* nodes */
  uint8_t *kind;  /* ETSIM_CUSTOM_* */
  uint32_t *peer; /* send: destination, receive: source */
  uint32_t *tag;
  uint64_t *bytes;
  int64_t *dur_ns;   /* compute */
  uint32_t *n_par;   /* parents per node */
  uint32_t *chd_off; /* n + 1 offsets into chd */
  uint32_t *chd;
} etsim_coll_custom_rank_t;
typedef struct etsim_coll_custom {
  uint32_t n_ranks;
  etsim_coll_custom_rank_t *rank;
} etsim_coll_custom_t;
/* Use `cu` (borrowed; must outlive the run) for every collective of type op. */
int etsim_coll_set_custom(etsim_coll_t *c, etsim_cop_t op, const etsim_coll_custom_t *cu);

/* Per-dimension accounting: the owner says when NPU npu's GPU compute
 * starts and stops; etsim_coll_dim_times gives, per dimension, the time
 * with at least one collective chunk running there (a chunk's phase counts
 * in every dimension its messages cross) and, of that, the time with no
 * compute running (ndims entries each). */
void etsim_coll_set_compute(etsim_coll_t *c, uint32_t npu, int active);
/* During a done() callback for a collective: the dimensions its messages
 * crossed (bit d), a phase on a communicator's ring charged to the first
 * differing dimension towards each peer it sends to. */
uint32_t etsim_coll_done_dims(const etsim_coll_t *c);
void etsim_coll_dim_times(etsim_coll_t *c, uint32_t npu, int64_t *busy_ps, int64_t *exposed_ps);

int etsim_coll_event(etsim_coll_t *c, const etsim_des_event_t *ev, etsim_error_t *err);

/* A hint that an event of the layer's (type, b) comes soon: start loading
 * what it will touch.  Stage 0 fetches the event's own record (a
 * delivery's matching entry, a stream); stage 1, given a few events later,
 * follows it to the stream a delivery will wake.  Changes nothing. */
void etsim_coll_prefetch(const etsim_coll_t *c, uint32_t type, uint64_t b, int stage);

/* After the queue drains: streams still running and messages unmatched.
 * Writes a description of the first few into err and returns
 * ETSIM_EDEADLOCK, or 0 when everything completed. */
int etsim_coll_check_idle(const etsim_coll_t *c, etsim_error_t *err);

typedef struct etsim_coll_stats {
  uint64_t collectives, streams, messages;
  uint64_t unmatched_arrivals, pending_recvs;
} etsim_coll_stats_t;
void etsim_coll_get_stats(const etsim_coll_t *c, etsim_coll_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
