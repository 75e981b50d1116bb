/*
 * etsim/convpt.h — PyTorch execution traces to Chakra ET.
 *
 * Input: a PyTorch host execution trace (the JSON the ExecutionTraceObserver
 * writes, plain or gzip; schemas 1.0.1 with flat keys through
 * 1.1.1-chakra.x with nested inputs/outputs and an attrs list), optionally
 * joined with the Kineto (profiler) trace of the same run.  Output: one
 * Chakra `.et` for the rank, and the process groups of the
 * `## process_group:init ##` record as an ASTRA-sim communicator-group JSON.
 *
 * The host trace is a call tree; only its top-level operators are converted
 * (an operator is a node with an ATen schema, a `record_param_comms` record
 * or a Triton kernel; nothing below an operator is converted again, and
 * `c10d::` wrappers are looked through to their `record_param_comms`).
 * Communication becomes COMM_COLL / COMM_SEND / COMM_RECV nodes with
 * comm_type, comm_size (bytes of the input tensors) and pg_name even without
 * a Kineto trace; with one, GPU kernels become nodes of their own (the NCCL
 * kernel carries the communication), timed from Kineto.  See docs/pytorch.md.
 *
 * Both files are read as streams: one node (or event) is parsed at a time,
 * so memory follows what is converted, not the size of the JSON text.
 */
#ifndef ETSIM_CONVPT_H
#define ETSIM_CONVPT_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etsim_convpt_opts {
  const char *kineto_path; /* Kineto trace (.json or .json.gz), or NULL */
  int64_t rank;            /* rank of this trace; < 0: infer (default 0) */
  unsigned write_flags;    /* ETSIM_ET_WRITE_* for the .et */
  /* Where the communicator-group JSON goes: NULL derives it from the output
   * ("<prefix>.comm_groups.json"), "" writes none. */
  const char *groups_path;
} etsim_convpt_opts_t;

/* What a conversion did: every degraded case is counted here, and each kind
 * is also reported once through etsim_warn. */
typedef struct etsim_convpt_summary {
  char schema[64];        /* the host trace's schema string */
  int legacy;             /* 1 when read with the 1.0.1 (flat) layout */
  int schema_guessed;     /* unknown version read as the closest known */
  int64_t rank;           /* the rank written (given or inferred) */
  uint64_t host_nodes;    /* nodes in the host trace */
  uint64_t host_ops;      /* top-level operators converted */
  uint64_t nodes_written; /* nodes in the .et */
  uint64_t by_type[ETSIM_ET_NODE_TYPE_COUNT];
  uint64_t by_coll[ETSIM_COLL_TYPE_COUNT];
  uint64_t comm_bytes; /* sum of comm_size over communication nodes */
  uint64_t data_edges, ctrl_edges;
  uint64_t tensor_edges;       /* cross-thread producer -> consumer edges */
  uint64_t inter_thread_edges; /* after the last op of another thread */
  uint64_t wait_edges;         /* waits joined to their collective (seq) */
  uint64_t process_groups;     /* groups read from process_group:init */
  /* Degraded cases. */
  uint64_t missing_pg_init; /* 1 when comms exist but no pg record */
  uint64_t unknown_comm;    /* comm records of unknown kind, kept as COMP */
  uint64_t unmatched_waits; /* waits whose collective is not in the trace */
  uint64_t orphans;         /* nodes whose caller is not in the trace */
  uint64_t dropped_edges;   /* edges refused because they would go back */
  /* With a Kineto trace. */
  uint64_t kineto_events;       /* complete ('X') events read */
  uint64_t linked_ops;          /* converted host ops joined to a Kineto op */
  uint64_t unlinked_ops;        /* converted host ops without one (no timing) */
  uint64_t kernels;             /* GPU kernel / memcpy / memset nodes */
  uint64_t unlaunched_kernels;  /* kernels whose launch or op was not found */
  uint64_t unknown_kernels;     /* nccl-looking kernels under no comm op */
  uint64_t sync_edges;          /* host sync -> kernels launched before it */
  uint64_t profiler_steps;      /* ProfilerStep annotations seen */
  uint64_t join_by_external_id; /* Kineto ops joined on External id */
  char out_path[1024];          /* the .et written */
  char groups_path[1024];       /* the group JSON written, or "" */
} etsim_convpt_summary_t;

/*
 * Convert `host_path` into a Chakra trace.  `out` is a prefix (the file is
 * "<out>.<rank>.et") or, when it ends in ".et" or ".et.gz" or is "-"
 * (stdout), the exact file.
 * `opts` may be NULL (defaults); `sum` may be NULL.
 * Returns 0, or ETSIM_EIO (unreadable file), ETSIM_EFORMAT (malformed JSON
 * with line and column, wrong shape, repeated ids, bad node fields: the
 * message names file, line:column and node id), ETSIM_ENOMEM.  On failure
 * nothing is written.
 */
int etsim_convpt_convert(const char *host_path, const char *out, const etsim_convpt_opts_t *opts,
                         etsim_convpt_summary_t *sum, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_CONVPT_H */
