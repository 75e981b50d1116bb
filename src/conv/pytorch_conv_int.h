/*
 * pytorch_conv_int.h — the PyTorch converter's state, shared by
 * pytorch.c (host trace, driver), pytorch_kineto.c (Kineto join) and
 * pytorch_write.c (dependencies and output).  Calls go one way: the
 * driver calls the others, which call only the reader files (json, ptv)
 * and the inline helpers here, never back into the driver.
 */
#ifndef ETSIM_CONV_PYTORCH_CONV_INT_H
#define ETSIM_CONV_PYTORCH_CONV_INT_H

#include "conv/pytorch_int.h"
#include "etsim/convpt.h"

#include <math.h>

enum {
  PTC_F_HAS_PARENT = 1u << 0, /* caller id given and present */
  PTC_F_OPLIKE = 1u << 1,     /* an operator (et_replay's rule) */
  PTC_F_COMM = 1u << 2,       /* record_param_comms or nccl:* */
  PTC_F_PGINIT = 1u << 3,     /* ## process_group:init ## */
  PTC_F_KNOWN = 1u << 4,      /* INSIDE is settled */
  PTC_F_INSIDE = 1u << 5,     /* some ancestor is an operator */
  PTC_F_EMIT = 1u << 6,       /* converted */
  PTC_F_TIMED = 1u << 7,      /* ts / inclusive_dur from the host JSON */
  PTC_F_DEFER = 1u << 8,      /* operator read before its caller */
};

/* Communication kinds. */
enum { PTC_NONE = 0, PTC_COLL, PTC_SEND, PTC_RECV, PTC_WAIT, PTC_UNKNOWN };

typedef struct ptc_node {
  uint64_t id, parent;
  uint32_t name;  /* in names */
  uint32_t flags; /* PTC_F_* */
  uint32_t ext;   /* index into exts, or UINT32_MAX */
  int64_t rf_id;  /* kept for every node: the Kineto join needs it */
} ptc_node_t;     /* 40 bytes: one per host node, so kept small */

/* What a converted node needs beyond the record. */
typedef struct ptc_ext {
  int64_t fw_parent, seq_id, scope, tid, fw_tid;
  int64_t ts_ns, dur_ns; /* from the host JSON (ET+), when TIMED */
  int64_t itd;           /* ET+ inter_thread_dep (a host id), or -1 */
  const char *op_schema;
  const char *in_values, *in_shapes, *in_types;
  const char *out_values, *out_shapes, *out_types;
  uint32_t tin_off, tin_n, tout_off, tout_n; /* tensor keys in tkeys */
  uint64_t comm_bytes;                       /* bytes of the input tensors */
  int kind, coll;                            /* PTC_* and etsim_coll_type_t */
  int64_t seq, rank_arg, grs, grstride, backend_id;
  const char *pg_name; /* NULL when unknown */
  const char *coll_name;
} ptc_ext_t;

typedef struct ptc_pg {
  const char *name;
  int64_t backend_id, group_size;
  int64_t *ranks;
  size_t n_ranks;
} ptc_pg_t;

/* A Kineto complete event. */
enum { PTK_CPU = 1, PTK_RUNTIME, PTK_GPU };
typedef struct ptk_ev {
  int64_t ts_ns, dur_ns, tid, key, corr, stream;
  uint32_t name;    /* in names */
  uint32_t parent;  /* enclosing CPU event (after the sweep) */
  uint32_t host;    /* joined host node, or UINT32_MAX */
  uint32_t op;      /* position of the converted op it belongs to */
  uint64_t node_id; /* id of an ET+ GPU node in the host trace, else 0 */
  uint8_t cls, sync, by_ext;
} ptk_ev_t;

typedef struct ptc_kernel {
  uint32_t pos; /* the converted op that launched it */
  uint32_t ev;  /* index into evs */
  int64_t launch_ts_ns;
  int64_t ts_ns; /* the kernel's own start */
  int comm;      /* carries the op's communication */
} ptc_kernel_t;

typedef struct ptc_sync {
  uint32_t pos;
  int64_t ts_ns;
} ptc_sync_t;

/* Pass 2's scratch for its fast path, reused from node to node. */
typedef struct fast2 {
  ptr_buf_t text; /* the six repr texts */
  uint64_t *keys; /* tensor keys */
  size_t n_keys, cap_keys;
  uint64_t bytes; /* of the tensors collected so far */
} fast2_t;

typedef struct ptc {
  const char *host_path;
  uint64_t host_bytes;
  char schema[64], time[64];
  int have_schema;
  uint64_t pid, start_ts, finish_ts;
  size_t n_legacy;
  uint64_t host_profiler_steps;

  ptc_node_t *nodes;
  size_t n_nodes, cap_nodes;
  /* id -> index into nodes: ids are small and dense in practice, so a
   * direct table (index + 1, 0 = absent) for ids below PTC_DIRECT_IDS and a
   * hash map for the rest. */
  uint32_t *id_tab;
  size_t id_cap;
  etsim_u64map_t by_id;
  uint64_t max_id;
  ptc_ext_t *exts;
  size_t n_exts, cap_exts;
  uint64_t *tkeys;
  size_t n_tkeys, cap_tkeys;
  ptc_pg_t *pgs;
  size_t n_pgs, cap_pgs;
  etsim_intern_t names;
  etsim_arena_t arena;
  ptr_buf_t tmp;
  fast2_t f2;

  /* Operators read before their caller: where their text is, to read it
   * again (plain files) if they turn out converted. */
  struct ptc_defer {
    uint32_t node;
    uint32_t len;
    uint64_t off;
  } * defer;
  size_t n_defer, cap_defer;

  uint32_t *ops; /* converted nodes (indices into nodes), id order */
  size_t n_ops, cap_ops;
  uint32_t *op_pos; /* node index -> position in ops, or UINT32_MAX */
  int64_t rank;

  /* Kineto (all NULL without one). */
  ptk_ev_t *evs;
  size_t n_evs, cap_evs;
  int64_t *op_ts, *op_dur; /* per op position; -1 when unknown */
  uint8_t *op_comm_kernel; /* a kernel carries the op's communication */
  ptc_kernel_t *kern;
  size_t n_kern;
  ptc_sync_t *syncs;
  size_t n_syncs, cap_syncs;
  uint64_t bad_utf8; /* strings written with U+FFFD for bytes that were not UTF-8 */
} ptc_t;

/* The timestamps and durations the converter takes, in us: +-2^61 ns
 * (73 years) either side of zero, so that differences and sums of two stay
 * inside int64.  Epoch-based PyTorch and Kineto times (about 1.7e15 us in
 * 2024) are well inside. */
#define PTC_MAX_US 2305843009213693.0

/* 1 when v is a number of microseconds inside +-PTC_MAX_US. */
static inline int ptc_us_ok(const ptv_t *v) {
  if (ptv_is_int(v)) return ptv_i(v) >= -(int64_t)PTC_MAX_US && ptv_i(v) <= (int64_t)PTC_MAX_US;
  return ptv_is_real(v) && ptv_d(v) >= -PTC_MAX_US && ptv_d(v) <= PTC_MAX_US;
}

/* A JSON real as an integer, or dflt when it is not finite or not inside
 * int64 (a double cast there is undefined). */
static inline int64_t ptc_real_i64(double d, int64_t dflt) {
  return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : dflt;
}

/* The global rank of group rank r in a group that starts at global rank
 * `start` with stride `stride` (record_param_comms' global_rank_start and
 * global_rank_stride), or r itself when the group is not described; -1
 * when r is negative or the result is not a rank a set may have
 * (ETSIM_ET_MAX_RANKS), instead of a product that wraps. */
static inline int64_t ptc_global_rank(int64_t start, int64_t stride, int64_t r) {
  const int64_t max = (int64_t)ETSIM_ET_MAX_RANKS;
  if (r < 0 || r >= max) return -1;
  if (start < 0 || stride <= 0) return r;
  if (start >= max || stride >= max || start + stride * r >= max) return -1;
  return start + stride * r;
}

/* Microseconds (JSON number, ptc_us_ok) to integer nanoseconds without going
 * through a double product for integers. */
static inline int64_t ptc_us_to_ns(const ptv_t *v) {
  if (ptv_is_int(v)) return ptv_i(v) * 1000;
  double d = ptv_d(v);
  double whole = floor(d);
  return (int64_t)whole * 1000 + (int64_t)llround((d - whole) * 1000.0);
}

#define PTC_DIRECT_IDS (1u << 28)
/* 1 and *idx when a node has `id`, else 0. */
static inline int ptc_find(const ptc_t *c, uint64_t id, uint32_t *idx) {
  if (id < PTC_DIRECT_IDS) {
    if (id >= c->id_cap || !c->id_tab[id]) return 0;
    *idx = c->id_tab[id] - 1;
    return 1;
  }
  return etsim_u64map_get(&c->by_id, id, idx);
}

/* The converted operator a node belongs to (itself, or its outermost
 * operator ancestor), or UINT32_MAX.  Here rather than in pytorch.c so
 * that the Kineto join and the writer, which pytorch.c calls, do not call
 * back into it. */
static inline uint32_t ptc_top_op(const ptc_t *c, uint32_t i) {
  for (int guard = 0; guard < 1 << 20; guard++) {
    const ptc_node_t *h = &c->nodes[i];
    if (h->flags & PTC_F_EMIT) return i;
    if (!(h->flags & PTC_F_INSIDE) || !(h->flags & PTC_F_HAS_PARENT)) return UINT32_MAX;
    uint32_t pi;
    if (!ptc_find(c, h->parent, &pi)) return UINT32_MAX;
    i = pi;
  }
  return UINT32_MAX;
}

/* Tests only: 1 reads every host node as a tree (no etsim_conv__pt_scan_host_node fast
 * path), to check that both paths convert a file to the same bytes. */
extern int etsim_conv__pt_no_fast;

int etsim_conv__pt_comm_kind(const char *name, int *coll);
int etsim_conv__pt_kineto_read(ptc_t *c, const char *path, etsim_convpt_summary_t *s,
                               etsim_error_t *err);
void etsim_conv__pt_kineto_free(ptc_t *c);
/* Sort kernels and pick the one carrying each op's communication. */
void etsim_conv__pt_kineto_order_kernels(ptc_t *c, etsim_convpt_summary_t *s);
/* Kernels from the GPU nodes of a linked (ET+) host trace. */
int etsim_conv__pt_kineto_host_gpu(ptc_t *c, etsim_convpt_summary_t *s);
int etsim_conv__pt_write(ptc_t *c, const char *path, const char *groups_path, unsigned write_flags,
                         etsim_convpt_summary_t *s, etsim_error_t *err);
void etsim_conv__pt_free(ptc_t *c);

#endif
