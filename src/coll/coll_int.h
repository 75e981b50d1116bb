/* Private to src/coll: the engine's pooled records. */
#ifndef ETSIM_COLL_INT_H
#define ETSIM_COLL_INT_H

#include "etsim/coll.h"

#define NIL UINT32_MAX
/* Stream si's phase list (max_ph entries; the running one is copied into
 * the stream as `cur`). */
#define PHASES(c, si) (&(c)->phases[(size_t)(si) * (size_t)(c)->max_ph])
#define MAX_PHASES (2 * ETSIM_TOPO_MAX_DIMS)

/* How a logical ring maps positions to NPU ids. */
typedef struct ringmap {
  uint32_t n;              /* NPUs in the ring */
  uint32_t base;           /* id of position 0 (strided rings) */
  uint32_t stride;         /* id step between positions (strided rings) */
  const uint32_t *members; /* communicator rings: ids in ring order */
  uint32_t pos;            /* this NPU's position */
} ringmap_t;

typedef struct phase {
  ringmap_t ring;
  uint64_t size;    /* initial data size of the phase */
  uint8_t type;     /* etsim_cop_t */
  uint8_t algo;     /* etsim_algo_kind_t */
  int8_t dir;       /* +1 clockwise, -1 anticlockwise */
  uint8_t fast;     /* local ring: fixed 10 ns bus delay */
  int32_t window;   /* direct: outstanding sends, -1 = all peers */
  uint8_t tree_min; /* double binary tree: the root is the lowest id (else highest) */
  uint8_t dims;     /* dimensions this NPU's messages of the phase cross (bit d) */
  uint32_t tree_start, tree_stride; /* double binary tree: ids start + k*stride */
  uint32_t queue;
  uint32_t root; /* rooted phases (ext.c): the root's position in ring */
} phase_t;

/*
 * A stream (one chunk of a collective).  Laid out hot first: every message
 * touches the running phase (a copy of it, `cur`) and the algorithm state
 * in the first two cache lines; queue links and the rarely used states of
 * halving-doubling, trees and custom collectives follow.  The stream's
 * phase list lives outside, in etsim_coll's `phases` (max_ph per stream),
 * so a 3-D stream is ~280 bytes instead of 1,240.
 */
typedef struct stream {
  phase_t cur; /* the current phase: phases[...][next_phase - 1] */
  uint64_t msg, tag;
  int64_t stream_count;
  uint64_t n_sent;
  int32_t free_packets, zero_lat, nonzero_lat, parallel_reduce;
  int32_t middle_point, total_received, nonzero_per_round;
  uint32_t packets;  /* inserted, not yet sent */
  uint32_t inflight; /* --ring-window: sent, not yet delivered */
  uint32_t npu;
  uint8_t toggle, direct, hd, hd_double, dbt, initialized, in_queue, n_phases;
  uint8_t next_phase;
  int32_t cur_queue;   /* -1 before the first phase */
  uint32_t prev, next; /* queue list links */
  uint32_t dataset;
  int32_t priority;
  uint32_t next_free;
  /* halving-doubling: the next packet's peer offset and size, and the
   * packets inserted but not sent (peer, size) */
  int32_t hd_off;
  uint8_t pk_head;
  uint64_t hd_msg;
  uint32_t pk_peer[4];
  uint64_t pk_size[4];
  /* double binary tree: role, links (NPU ids, NIL = none), state */
  uint8_t dbt_role, dbt_state, dbt_reductions;
  uint32_t dbt_parent, dbt_left, dbt_right;
  /* custom collective */
  const etsim_coll_custom_rank_t *cu;
  uint32_t *cu_deps;
  uint32_t cu_left;
} stream_t;

typedef struct dataset {
  uint32_t npu, total, finished, next_free;
  uint32_t dims; /* union of its phases' dims */
  uint64_t token;
  int64_t t_create;
} dataset_t;

/* A message that needs more than its matching entry at delivery: a send
 * handler (point-to-point sends, --ring-window credits, custom
 * collectives) and the NPU that sent it.  Other messages travel as the
 * entry index alone (TOKEN_FAST). */
typedef struct msgrec {
  uint64_t send_token;
  union {
    uint32_t entry;     /* matching entry */
    uint32_t next_free; /* when free */
  };
  uint32_t sender; /* the NPU whose send this is */
  /* a message up to a switch (dst has ETSIM_COLL_SWITCH_BIT: in-network
   * collectives) is not matched: the switch takes it */
  uint32_t dst;
  uint64_t tag, bytes;
} msgrec_t;

/* Matching entry: (tag, src, dst, bytes) -> arrivals not yet received,
 * receives not yet arrived (FIFO of handler tokens), and messages still in
 * flight towards it (which keep it alive, so a delivery reaches it by
 * index without hashing).  Entries live in a dense pool; the hash table
 * holds 8-byte slots (32-bit hash, entry + 1), so probing stays in cache. */
typedef struct match {
  uint64_t tag, bytes; /* tag bit 40 set: collective namespace */
  uint64_t tok0;       /* the oldest waiting receive's token (n_recv > 0) */
  uint32_t src, dst;
  uint32_t arrived;
  uint32_t inflight; /* UINT32_MAX marks a free entry */
  uint32_t n_recv;   /* receives waiting: tok0, then the list head..tail in rq[] */
  uint32_t head;
  union {
    uint32_t tail;
    uint32_t next_free; /* when free */
  };
  uint8_t in_mbox; /* found through its receiver's mailbox, not the hash table */
} match_t;

/* Per NPU: its receive-side entries, one way per (tag, source) hash
 * (entry + 1, 0 = empty); keys that meet an occupied way go to the hash
 * table, and n_over counts them so the table is probed only when it may
 * hold one.  32 bytes: a ring's neighbours' mailboxes sit next to each
 * other, so the lock-step order of a collective walks them in order. */
#define MBOX_WAYS 7
typedef struct mbox {
  uint32_t way[MBOX_WAYS];
  uint32_t n_over;
} mbox_t;

typedef struct rqnode {
  uint64_t token;
  uint32_t next, next_free;
} rqnode_t;

struct etsim_coll {
  etsim_sys_config_t cfg; /* copy; custom strings borrowed */
  const etsim_topo_t *topo;
  etsim_net_t *net;
  etsim_des_t *q;
  etsim_coll_done_fn done;
  void *user;
  uint32_t n_npus;
  int n_queues; /* queues_per_dim per physical dimension */
  uint32_t qpd;
  uint16_t *alloc; /* per NPU x dimension: next queue (any, first half, second half) */
  uint32_t queue_threshold;
  int64_t reduce_ns_cache_bytes, reduce_ns_cache; /* memo of delta */
  /* per NPU */
  int64_t *prio_counter;
  uint64_t *stream_counter;
  /* per NPU x queue */
  uint32_t *qhead, *qtail, *qrunning;
  etsim_u64map_t group_counter; /* (npu << 32 | group) -> slot in gcount */
  uint64_t *gcount;             /* streams issued so far per (npu, group) */
  size_t n_gcount, cap_gcount;
  /* pools */
  stream_t *streams;
  size_t n_streams, cap_streams;
  uint32_t free_stream;
  phase_t *phases; /* max_ph per stream slot: stream si's at si * max_ph */
  size_t cap_phase_streams;
  int max_ph;
  dataset_t *datasets;
  size_t n_datasets, cap_datasets;
  uint32_t free_dataset;
  msgrec_t *msgs;
  size_t n_msgs, cap_msgs;
  uint32_t free_msg;
  match_t *match; /* entry pool */
  size_t n_match, cap_match;
  uint32_t free_match;  /* unused: entries are recycled through free_stack */
  uint32_t *free_stack; /* free entries, as a stack of indices: popping one
                           reads this array, not the entry (an intrusive
                           list would miss the cache on every message) */
  size_t n_free, cap_free;
  mbox_t *mbox;    /* per NPU */
  uint64_t *mslot; /* hash slots: hash32 << 32 | (entry + 1), 0 = empty */
  size_t mslot_cap, match_used;
  rqnode_t *rq;
  size_t n_rq, cap_rq;
  uint32_t free_rq;
  int warned_truncate[ETSIM_COP_N];
  int warned_clamp;
  const etsim_coll_symmetry_t *sym; /* reduced run, or NULL */
  etsim_u64map_t pairs;             /* reduced run: (from << 32 | to) used */
  const etsim_coll_custom_t *custom[ETSIM_COP_N];
  uint32_t *dbt_counter;
  /* per NPU x dimension: streams running, time with any running, and of
   * that, time with no compute running (the owner reports compute) */
  uint32_t *dim_run;
  int64_t *dim_last_ps, *dim_busy_ps, *dim_exposed_ps;
  uint8_t *comp_on; /* per NPU x collective type x dimension: trees handed out */
  etsim_coll_stats_t stats;
  uint64_t live_streams, live_datasets;
  uint32_t done_dims;   /* during a done callback: the finished collective's dims */
  struct coll_ext *ext; /* etsim's own algorithms (ext.c), created on first use */
};

/* ------------------------------------------------------------------------
 * The algorithm registry (algo.c): one row per etsim_algo_kind_t.
 */

/* Issue time: the algorithm's part of phase p, which the engine has filled
 * (type, size, ring, queue, dims) for NPU npu in a collective of type
 * coll_type, on logical dimension `level` (last: the highest one).
 * Returns the data size the collective's next phase starts from. */
typedef uint64_t (*etsim_coll__phase_fn)(etsim_coll_t *c, uint32_t npu, etsim_cop_t coll_type,
                                         int level, int last, phase_t *p);
/* Phase start: the stream's algorithm state for its current phase. */
typedef void (*etsim_coll__setup_fn)(stream_t *s);

enum {
  AF_ASTRA = 1,     /* ASTRA-sim's name: any of its four lists takes it */
  AF_ONE = 2,       /* one ring over all NPUs instead of one per dimension */
  AF_POW2 = 4,      /* needs a power-of-two number of NPUs on its ring */
  AF_WHOLE_DIM = 8, /* a tree over a whole dimension: no communicator, 2^k NPUs */
  AF_IMPLIED = 16   /* chosen by another key, never named in a list */
};

typedef struct etsim_coll__algo {
  const char *name;        /* as the system file spells it */
  const char *window_name; /* "directN": name + N is a window of N sends; NULL: none */
  etsim_algo_kind_t kind;
  etsim_algo_kind_t base; /* what a one* name runs on its ring; kind otherwise */
  uint8_t flags;          /* AF_* */
  uint16_t ops;           /* bit t: runs collectives of type t */
  etsim_coll__phase_fn phase;
  etsim_coll__setup_fn setup; /* NULL: ext.c runs its phases */
} etsim_coll__algo_t;

extern const etsim_coll__algo_t etsim_coll__algos[ETSIM_ALGO_N];

/* The row of kind k (< ETSIM_ALGO_N: a custom collective's phase has no row). */
static inline const etsim_coll__algo_t *etsim_coll__algo(int k) {
  ETSIM_ASSERT((unsigned)k < ETSIM_ALGO_N);
  return &etsim_coll__algos[k];
}
/* The row a list entry names (a row's name, or its name and a window N > 0
 * when it takes one), with *window N or -1; NULL for no algorithm. */
const etsim_coll__algo_t *etsim_coll__algo_find(const char *s, int32_t *window);
/* Whether a list for collectives of type t may name a: the collectives it
 * runs, and any of ASTRA-sim's four for ASTRA-sim's names (an impossible
 * pair is refused when it runs, as ASTRA-sim does). */
int etsim_coll__algo_allowed(const etsim_coll__algo_t *a, int t);
/* "ring, direct, directN, ... or tree": the names a list for collectives of
 * type t may give (t < 0: every name), for error messages. */
void etsim_coll__algo_names(int t, char *buf, size_t n);

/* The hooks (coll.c): the ring family (ring, direct, halving-doubling and
 * their one* forms) and the double binary tree. */
uint64_t etsim_coll__ring_phase(etsim_coll_t *c, uint32_t npu, etsim_cop_t coll_type, int level,
                                int last, phase_t *p);
uint64_t etsim_coll__dbt_phase(etsim_coll_t *c, uint32_t npu, etsim_cop_t coll_type, int level,
                               int last, phase_t *p);
void etsim_coll__ring_setup(stream_t *s);
void etsim_coll__dbt_setup(stream_t *s);

/* The endpoint delay around a phase's messages: ASTRA-sim's fixed 10 ns on
 * a communicator's flat ring, else the system file's endpoint-delay. */
static inline int64_t etsim_coll__eps(const etsim_coll_t *c, const phase_t *p) {
  return p->fast ? 10 : c->cfg.endpoint_delay_ns;
}

/* ------------------------------------------------------------------------
 * etsim's own algorithms (rooted collectives, binomial trees, in-network
 * reduction, topology-aware communicator phases) live in ext.c, rooted.c
 * and innet.c.  The engine (coll.c) hands a stream to them when its
 * current phase is theirs, and offers them the services below.
 */

/* Pseudo NPU ids of switches (in-network reduction): bit 31 set, the
 * dimension in bits 27..30, the lowest member id of the group below. */
#define ETSIM_COLL_SWITCH_BIT 0x80000000u
#define ETSIM_COLL_SWITCH_ID(d, base) (ETSIM_COLL_SWITCH_BIT | (uint32_t)(d) << 27 | (base))

/* Whether phase p runs on etsim's algorithms rather than the ring family. */
static inline int etsim_coll__ext_phase(const phase_t *p) {
  /* custom collectives mark their one phase with ETSIM_ALGO_N */
  return p->algo < ETSIM_ALGO_N && (p->algo >= ETSIM_ALGO_TREE || p->type >= ETSIM_COP_ASTRA_N);
}

/* Engine services (coll.c).  notify_si: a stream told when the message is
 * delivered (etsim_coll__ext_sent), or NIL. */
int etsim_coll__send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t tag,
                     uint32_t notify_si);
int etsim_coll__recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint64_t tag,
                     uint32_t si);
/* A message between an NPU and its switch of dimension d (up or down). */
int etsim_coll__send_switch(etsim_coll_t *c, uint32_t npu, int d, int up, uint64_t bytes,
                            uint64_t tag, uint32_t notify_si);
int etsim_coll__wake(etsim_coll_t *c, uint32_t si, int64_t delay_ns); /* a GENERAL event */
int etsim_coll__phase_end(etsim_coll_t *c, uint32_t si);              /* next phase or done */
int64_t etsim_coll__reduce_ns(etsim_coll_t *c, uint64_t bytes);
int32_t etsim_coll__priority(etsim_coll_t *c, uint32_t npu, int32_t explicit_pri);
uint32_t etsim_coll__queue(etsim_coll_t *c, uint32_t npu, int level, int mode, int *dir);
int etsim_coll__new_dataset(etsim_coll_t *c, uint32_t npu, uint32_t total, uint64_t token,
                            uint32_t *out);
int etsim_coll__new_stream(etsim_coll_t *c, uint32_t npu, uint32_t di, int32_t pri, int n_phases,
                           uint32_t *out);
/* Tag the stream (world counter, or the communicator's) and start it. */
int etsim_coll__launch(etsim_coll_t *c, uint32_t si, const etsim_comm_t *comm);
/* A collective that turned out to have nothing to do on this NPU. */
void etsim_coll__finish_empty(etsim_coll_t *c, uint32_t di, uint32_t npu, uint64_t token);

/* ext.c: hooks the engine calls. */
int etsim_coll__ext_wants(etsim_coll_t *c, etsim_cop_t type, const etsim_comm_t *comm);
int etsim_coll__ext_issue(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                          uint32_t involved, const etsim_comm_t *comm, uint32_t root,
                          int32_t priority, uint64_t token, etsim_error_t *err);
/* The algorithm of a phase of type t on physical dimension phys (-1: not
 * one dimension): inNetwork where the dimension's switch reduces. */
int etsim_coll__phase_algo(const etsim_coll_t *c, int t, int phys, int algo);
int etsim_coll__ext_start(etsim_coll_t *c, uint32_t si);
int etsim_coll__ext_general(etsim_coll_t *c, uint32_t si);
int etsim_coll__ext_recv(etsim_coll_t *c, uint32_t si);
int etsim_coll__ext_sent(etsim_coll_t *c, uint32_t si);
int etsim_coll__ext_event(etsim_coll_t *c, const etsim_des_event_t *ev);
/* Stream si's message reached switch sw (innet.c). */
int etsim_coll__ext_at_switch(etsim_coll_t *c, uint32_t si, uint32_t sw, uint64_t bytes,
                              uint64_t tag);
void etsim_coll__ext_destroy(etsim_coll_t *c);

/* The dimensions NPU npu's messages in phase p cross (bit d); phys is the
 * phase's physical dimension, or < 0 for a ring over a communicator or
 * all NPUs (coll.c). */
uint32_t etsim_coll__phase_dims(const etsim_coll_t *c, uint32_t npu, const phase_t *p, int phys);

#endif
