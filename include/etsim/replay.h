/*
 * etsim/replay.h — turn a Chakra trace into a runnable benchmark.
 *
 * A rank's trace becomes a *plan*: one operation per node, each mapped to
 * something a CPU cluster can really do.  Compute nodes become BLAS GEMMs
 * (shapes from gemm_m/n/k, PyTorch input shapes, or num_ops), streaming
 * kernels (tensor_size bytes, when the arithmetic intensity is below the
 * machine's ridge point) or calibrated busy loops (duration only);
 * communication nodes become MPI collectives and point-to-point messages.
 * The scheduler issues the plan in dependency order through a small method
 * table, so the same code drives the real MPI runner (`etsim-replay`, the
 * only part that links MPI) and the virtual-clock dry run used by tests and
 * for critical-path reports.  Fidelity statistics compare what was measured
 * with what the trace recorded.  See docs/replay.md.
 *
 * Nothing here needs MPI: the MPI runner lives in src/replay/mpi_runner.c and
 * is built as its own executable.
 */
#ifndef ETSIM_REPLAY_H
#define ETSIM_REPLAY_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ the plan */

typedef enum {
  ETSIM_REPLAY_NOP = 0,    /* metadata, zero-work nodes */
  ETSIM_REPLAY_GEMM = 1,   /* cblas_sgemm m x n x k, `batch` times */
  ETSIM_REPLAY_STREAM = 2, /* triad over `bytes` bytes */
  ETSIM_REPLAY_BUSY = 3,   /* spin for busy_ns */
  ETSIM_REPLAY_COLL = 4,   /* collective `coll` of `bytes` on `group` */
  ETSIM_REPLAY_SEND = 5,   /* to `peer` with `tag`, `bytes` */
  ETSIM_REPLAY_RECV = 6,   /* from `peer` with `tag`, `bytes` */
  ETSIM_REPLAY_KIND_COUNT = 7
} etsim_replay_kind_t;

/* Time categories of the fidelity report. */
typedef enum {
  ETSIM_REPLAY_CAT_GEMM = 0,
  ETSIM_REPLAY_CAT_MEMORY = 1, /* streaming kernels */
  ETSIM_REPLAY_CAT_BUSY = 2,   /* duration-only compute */
  ETSIM_REPLAY_CAT_COMM = 3,
  ETSIM_REPLAY_CAT_OTHER = 4, /* NOP */
  ETSIM_REPLAY_CAT_COUNT = 5
} etsim_replay_cat_t;

/* "nop", "gemm", ...; "?" when out of range. */
const char *etsim_replay_kind_name(int kind);
const char *etsim_replay_cat_name(int cat);
int etsim_replay_kind_cat(int kind);
/* 1 for COLL, SEND and RECV. */
static inline int etsim_replay_kind_is_comm(int kind) {
  return kind >= ETSIM_REPLAY_COLL && kind <= ETSIM_REPLAY_RECV;
}

typedef struct etsim_replay_op {
  uint64_t id;
  const char *name;  /* borrowed from the trace */
  uint8_t kind;      /* etsim_replay_kind_t */
  uint8_t coll;      /* etsim_coll_type_t when kind is COLL */
  uint8_t mapped;    /* 0: the node had nothing to map (ran as NOP/BUSY) */
  uint8_t node_type; /* the trace's etsim_et_node_type_t */
  int32_t peer;      /* SEND: destination, RECV: source, rooted COLL: root */
  int32_t tag;
  int32_t group;          /* index into the plan's groups, -1: all ranks */
  uint64_t bytes;         /* COLL/SEND/RECV: size as recorded (after
                             --comm-scale); STREAM: bytes moved */
  int64_t m, n, k, batch; /* GEMM shape */
  double flops;           /* GEMM: 2*m*n*k*batch exactly; 0 otherwise */
  int64_t rec_ns;         /* recorded duration (duration_micros * 1000), times
                             comm_scale for communication, compute_scale else */
  int64_t busy_ns;        /* BUSY: time to spin (rec_ns * compute_scale) */
  int64_t rec_start_ns;   /* start_time_micros * 1000 */
  /* Uneven ALL_TO_ALL: n_split (= group size) bytes sent to each group
   * rank at plan->splits[split_off ..], received from each at
   * plan->splits[split_off + n_split ..] (attributes in_split/out_split,
   * after --comm-scale); n_split 0 for even ones. */
  uint32_t n_split;
  uint32_t split_off;
} etsim_replay_op_t;

/* A process group: `pg_name` value -> world ranks (from the communicator
 * group JSON).  Groups are listed in the order of the file. */
typedef struct etsim_replay_group {
  char *name;
  size_t n_ranks;
  int *ranks; /* world ranks, group rank i is ranks[i] */
} etsim_replay_group_t;

typedef struct etsim_replay_groups {
  size_t n;
  etsim_replay_group_t *g;
} etsim_replay_groups_t;

/*
 * Load an ASTRA-sim communicator-group JSON: an object whose keys are the
 * `pg_name` values and whose values are lists of world ranks, e.g.
 * {"0": [0, 1], "1": [2, 3]}.  Every rank must lie in [0, world) and appear
 * once per group.  On success *out is filled (free with
 * etsim_replay_groups_free).
 */
int etsim_replay_groups_load(etsim_replay_groups_t *out, const char *path, int world,
                             etsim_error_t *err);
void etsim_replay_groups_free(etsim_replay_groups_t *g);

typedef struct etsim_replay_opts {
  int rank;             /* which rank this plan is for */
  int world;            /* number of ranks (peers and roots must be below it) */
  double compute_scale; /* work and durations of compute nodes; default 1 */
  double comm_scale;    /* bytes of communication nodes; default 1 */
  /* GEMM when num_ops / tensor_size >= ridge (flop per byte), else stream.
   * <= 0: every num_ops node is a GEMM. */
  double ridge_flop_per_byte;
  const etsim_replay_groups_t *groups; /* NULL: every collective on all */
  /* Which edges order the replay: ETSIM_REPLAY_DEPS_DATA, _CTRL or both
   * (the default).  Chakra traces converted from PyTorch use ctrl_deps for
   * the call tree, which can contradict the data edges: use DATA there. */
  unsigned deps;
} etsim_replay_opts_t;

enum { ETSIM_REPLAY_DEPS_DATA = 1u, ETSIM_REPLAY_DEPS_CTRL = 2u };

void etsim_replay_opts_init(etsim_replay_opts_t *o);

/*
 * A rank's plan.  Dependencies are data_deps together with ctrl_deps, as
 * CSR over op indices (parents par[par_off[i] .. par_off[i+1]), children
 * likewise); edges to ids absent from the file are dropped and counted.
 */
typedef struct etsim_replay_plan {
  const etsim_et_trace_t *trace; /* borrowed */
  int rank, world;
  size_t n_ops;
  etsim_replay_op_t *ops;
  uint32_t *par_off, *par;
  uint32_t *chd_off, *chd;
  size_t n_edges;
  size_t n_dangling;   /* dependency edges to absent ids (ignored) */
  size_t n_unmapped;   /* compute nodes with no work description */
  int64_t rec_span_ns; /* max(start+dur) - min(start) over nodes with a
                          recorded start, unscaled; 0 when none */
  size_t n_comm;       /* COLL + SEND + RECV ops */
  int64_t *splits;     /* all-to-all split sizes (see etsim_replay_op_t) */
  size_t n_splits, cap_splits;
} etsim_replay_plan_t;

/*
 * Map every node of `t` (rank o->rank of o->world).  Errors (code
 * ETSIM_EFORMAT, message "FILE: node ID: ...") for: an unknown comm_type,
 * a communication node without comm_size, a send without comm_dst or a
 * receive without comm_src, a peer or root outside [0, world), in_split /
 * out_split lists that are not integer lists of the group's size, a pg_name
 * not in o->groups (when given) or a group this rank is not in, an
 * unparsable shape, and a dependency cycle (one node on it named).
 * On success *out is owned (etsim_replay_plan_free).
 */
int etsim_replay_plan_build(etsim_replay_plan_t **out, const etsim_et_trace_t *t,
                            const etsim_replay_opts_t *o, etsim_error_t *err);
void etsim_replay_plan_free(etsim_replay_plan_t *p);

/* Square-ish GEMM doing about `flops` (= 2*m*n*k): m = n = round(cbrt(f/2)),
 * k = round(f / (2 m n)), all >= 1. */
void etsim_replay_gemm_dims(double flops, int64_t *m, int64_t *n, int64_t *k);

/* Parse a PyTorch-style shapes string "[[64,128],[128,256]]" into up to
 * max_t tensors of up to 8 dims: n_dims[t], dims[t][d].  Returns the tensor
 * count or ETSIM_EFORMAT. */
int etsim_replay_parse_shapes(const char *s, int64_t (*dims)[8], int *n_dims, int max_t);

/* ------------------------------------------------------------ scheduling */

/*
 * How ops are executed.  Compute ops (NOP, GEMM, STREAM, BUSY) are run to
 * completion one at a time (the host lane); communication ops are started
 * and complete later, so they overlap with compute and each other.
 */
typedef struct etsim_replay_exec {
  void *user;
  int64_t (*now_ns)(void *user);
  int (*run)(void *user, size_t op, etsim_error_t *err);
  int (*start)(void *user, size_t op, etsim_error_t *err);
  /* Put completed communication ops in done[0..max), and the now_ns time
   * each completed at in when[], and return how many (>= 0), or a negative
   * code.  With block set, wait until at least one has completed (there is
   * always one outstanding when block is set). */
  int (*poll)(void *user, int block, size_t *done, int64_t *when, size_t max, etsim_error_t *err);
} etsim_replay_exec_t;

/*
 * Scratch state of the scheduler, reusable across iterations (nothing is
 * allocated per op while running).
 */
typedef struct etsim_replay_sched {
  const etsim_replay_plan_t *plan;
  uint32_t *pending;   /* parents not yet done */
  uint32_t *compute_q; /* ring of ready compute ops */
  uint32_t *comm_q;    /* ring of ready communication ops */
  size_t *done_buf;
  int64_t *when_buf;
  int64_t *start_ns, *end_ns; /* per op, relative to the run's start */
  uint32_t *order;            /* ops in completion order */
} etsim_replay_sched_t;

int etsim_replay_sched_init(etsim_replay_sched_t *s, const etsim_replay_plan_t *p);
void etsim_replay_sched_free(etsim_replay_sched_t *s);

/*
 * Run every op once, none before all its parents have ended.  Ready
 * communication ops are started first; then one ready compute op runs;
 * completions are polled in between, and waited for when nothing else can
 * proceed.  Fills s->start_ns/end_ns (ns since the run began) and s->order.
 * *makespan_ns is the time from start to the last completion.  Returns 0,
 * the first executor error, or ETSIM_EDEADLOCK.
 */
int etsim_replay_sched_run(etsim_replay_sched_t *s, const etsim_replay_exec_t *x,
                           int64_t *makespan_ns, etsim_error_t *err);

/*
 * Dry run: the same schedule on a virtual clock, nothing executed.  Each op
 * takes its recorded duration rec_ns; compute ops one at a time on the host
 * lane, communication ops concurrently with everything else.
 */
int etsim_replay_dry_run(etsim_replay_sched_t *s, int64_t *makespan_ns, etsim_error_t *err);

/*
 * Longest path through the plan with unlimited resources, each op taking
 * rec_ns: *len_ns, and when path is non-NULL (n_ops entries) the ops on it
 * in order (*path_len of them).
 */
int etsim_replay_critical_path(const etsim_replay_plan_t *p, int64_t *len_ns, uint32_t *path,
                               size_t *path_len);

/* ---------------------------------------------------------- kernels */

/* C = A * B (row-major, m x k times k x n) through cblas_sgemm. */
void etsim_replay_gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
/* a[i] = b[i] + s * c[i] for n floats (STREAM triad: 12 bytes a float). */
void etsim_replay_triad(float *a, const float *b, const float *c, size_t n, float s);
/* Spin on CLOCK_MONOTONIC for `ns` nanoseconds. */
void etsim_replay_busy(int64_t ns);
int64_t etsim_replay_clock_ns(void);

/*
 * Measure this machine's single-core sgemm rate and triad bandwidth with
 * short runs (a few ms); ridge = flops / bytes.
 */
typedef struct etsim_replay_machine {
  double gemm_flops_per_s;
  double stream_bytes_per_s;
  double ridge_flop_per_byte;
} etsim_replay_machine_t;

int etsim_replay_calibrate(etsim_replay_machine_t *m);

/* ---------------------------------------------------------- fidelity */

typedef struct etsim_replay_fidelity {
  size_t n;        /* pairs compared (recorded > 0) */
  double mdape;    /* median |m - r| / r, as a fraction */
  double wape;     /* sum |m - r| / sum r */
  double spearman; /* rank correlation (average ranks for ties); 0 if n<2 */
  double within10; /* fraction with |m - r| <= 0.10 r */
  double within25;
} etsim_replay_fidelity_t;

/*
 * Compare measured with recorded values over the pairs whose recorded value
 * is positive.  Returns 0 or ETSIM_ENOMEM.
 */
int etsim_replay_fidelity(const double *recorded, const double *measured, size_t n,
                          etsim_replay_fidelity_t *out);

/* nccl-tests bus-bandwidth factor for a collective on P ranks:
 * all-reduce 2(P-1)/P; all-gather, reduce-scatter, all-to-all, gather,
 * scatter (P-1)/P; broadcast, reduce, send/recv 1; barrier 0. */
double etsim_replay_busbw_factor(int coll, int P);

/*
 * Bytes a collective of recorded size S moves in and out of one rank's
 * buffers.  S means what it means to ASTRA-sim, etsim sim and the
 * generators: the all-reduce buffer, each rank's all-gather input (the
 * output is P x S), the reduce-scatter input, the all-to-all buffer; for
 * what ASTRA-sim does not simulate, nccl-tests' "size": the gather output
 * at the root, the scatter input at the root:
 * *send_bytes and *recv_bytes for a member with group rank `me` of P, root
 * `root`.  Sizes not divisible by P are rounded up to a multiple of P*4.
 */
void etsim_replay_coll_bytes(int coll, uint64_t S, int P, int me, int root, uint64_t *send_bytes,
                             uint64_t *recv_bytes);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_REPLAY_H */
