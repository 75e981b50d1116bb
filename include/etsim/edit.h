/*
 * etsim/edit.h — changing Chakra traces: select, scale, retarget, compose
 * and anonymize a file or a whole rank set, and tell two sets apart.
 *
 * An edit is a list of operations applied in the order given (Mystique's
 * composability, Chakra's obfuscation and what-if editing).  Each
 * operation is named as on the command line ("keep", "scale-time",
 * "concat", ...) and takes one argument string; etsim_edit_ops() lists
 * them with their syntax, so the CLI builds its options and help from the
 * same table.  docs/edit.md describes every operation and the pipeline.
 *
 * The edit streams: each distinct input file is read with the streaming
 * reader, never held whole in memory — once when the operations only
 * change content, else twice (once to learn the graph's skeleton — ids,
 * types and dependencies, about 14 bytes a node and 4 an edge — and once
 * to write).  Dropped nodes are bridged: a kept node that
 * depended on a dropped one depends on that node's nearest kept ancestors
 * instead, so the order of what remains is kept.  The output always has
 * unique ids and closed dependencies, and the cross-rank collectives and
 * sends/receives are checked to still match before anything is renamed
 * into place.
 *
 * etsim_diff_* compares two traces or rank sets: nodes and edges added and
 * removed by type, per-type totals, collective sizes, critical path and
 * the first differing node.
 */
#ifndef ETSIM_EDIT_H
#define ETSIM_EDIT_H

#include "etsim/et.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- operations */

/* What an operation does, for grouping the help. */
typedef enum {
  ETSIM_EDIT_GROUP_SELECT = 0,
  ETSIM_EDIT_GROUP_SCALE = 1,
  ETSIM_EDIT_GROUP_RETARGET = 2,
  ETSIM_EDIT_GROUP_COMPOSE = 3,
  ETSIM_EDIT_GROUP_OBFUSCATE = 4,
  ETSIM_EDIT_GROUP_COUNT = 5
} etsim_edit_group_t;

/* One operation as the CLI shows it: "--<name> <metavar>". */
typedef struct etsim_edit_op_info {
  const char *name;    /* "keep", "scale-time", ... */
  const char *metavar; /* "PRED", "F[@PRED]"; NULL: takes no argument */
  const char *help;    /* one or more lines ('\n') */
  int group;           /* etsim_edit_group_t */
} etsim_edit_op_info_t;

/* The operations, in help order; *n gets their count. */
const etsim_edit_op_info_t *etsim_edit_ops(size_t *n);

/* Settings that are not steps of the pipeline. */
typedef struct etsim_edit_opts {
  const char *comm_group;  /* input communicator groups (NULL: PREFIX.comm_group.json if present) */
  const char *iter_marker; /* POSIX ERE naming iteration markers (NULL: "^ProfilerStep#") */
  const char *salt;        /* key for --anonymize hash (NULL: none) */
  const char *dp_sharded;  /* ERE: compute nodes whose work a DP retarget divides (NULL: none) */
  size_t dp_stride;        /* rank distance between replicas for a DP retarget (0: inferred) */
  int out_format;          /* ETSIM_EDIT_OUT_* */
  int renumber;            /* ids 0, 1, ... in output order */
  int gzip;                /* write .et.gz files */
} etsim_edit_opts_t;

enum {
  ETSIM_EDIT_OUT_AUTO = 0,     /* like the input: a file, per-rank files or a manifest */
  ETSIM_EDIT_OUT_MANIFEST = 1, /* class files + PREFIX.manifest.json */
  ETSIM_EDIT_OUT_ET = 2        /* PREFIX.<rank>.et */
};

typedef struct etsim_edit etsim_edit_t;

/* A new, empty edit (*out owned; free with etsim_edit_free).  opts may be
 * NULL; the strings it points to are copied. */
int etsim_edit_new(etsim_edit_t **out, const etsim_edit_opts_t *opts, etsim_error_t *err);
void etsim_edit_free(etsim_edit_t *e);

/*
 * Append operation `name` with argument `arg` (NULL for operations that
 * take none).  The argument is parsed here: a bad one fails with
 * ETSIM_EINVAL and a message naming the operation and what was expected;
 * files named by the argument (profiles, traces to compose) are read when
 * the edit runs.
 */
int etsim_edit_add(etsim_edit_t *e, const char *name, const char *arg, etsim_error_t *err);

/* What an edit did. */
typedef struct etsim_edit_report {
  size_t ranks_in, ranks_out;
  size_t files_in;     /* distinct input files read */
  size_t files_out;    /* trace files written */
  uint64_t nodes_in;   /* nodes read, over the distinct input files (and every pass of --repeat) */
  uint64_t nodes_out;  /* nodes written, over the files written */
  uint64_t dropped;    /* nodes removed by selections */
  uint64_t inserted;   /* nodes added by --insert-* (and concat join nodes) */
  uint64_t bridged;    /* dependencies added to bridge dropped nodes */
  uint64_t dangling;   /* input dependencies on absent ids, dropped */
  uint64_t join_edges; /* dependencies added by --concat / --repeat */
  uint64_t restored;   /* dependencies restored from cut_*_deps */
  uint64_t changed;    /* nodes whose content an operation changed */
  uint64_t bytes_out;  /* bytes written */
  char **notes;        /* owned lines worth telling the user */
  size_t n_notes;
} etsim_edit_report_t;

void etsim_edit_report_free(etsim_edit_report_t *r);

/*
 * Run the edit on `input` (a file, a prefix or a manifest prefix, as
 * etsim_et_set_resolve names them) and write `output`: a file when the
 * result is one rank and the input was one file, else a prefix (rank
 * files or class files + manifest, and PREFIX.comm_group.json when the set
 * has communicator groups).  Everything goes to temporary names first;
 * nothing is left at the output paths on failure.  0 or a negative code
 * with err naming the file and node.  *rep (may be NULL) is filled on
 * success and must be freed with etsim_edit_report_free.
 */
int etsim_edit_run(etsim_edit_t *e, const char *input, const char *output, etsim_edit_report_t *rep,
                   etsim_error_t *err);

/* ----------------------------------------------------------------- diff */

enum {
  ETSIM_DIFF_IGNORE_NAMES = 1u << 0,    /* node names, string attributes and doc strings */
  ETSIM_DIFF_IGNORE_METADATA = 1u << 1, /* GlobalMetadata */
  ETSIM_DIFF_IGNORE_IO = 1u << 2,       /* inputs / outputs IOInfo */
};

typedef struct etsim_diff_opts {
  unsigned flags;           /* ETSIM_DIFF_IGNORE_* */
  const char *const *attrs; /* attribute names to ignore */
  size_t n_attrs;
} etsim_diff_opts_t;

/* Totals of one side, over all its ranks. */
typedef struct etsim_diff_side {
  size_t ranks;
  uint64_t nodes, data_edges, ctrl_edges;
  uint64_t by_type[ETSIM_ET_NODE_TYPE_COUNT];
  uint64_t dur_us_by_type[ETSIM_ET_NODE_TYPE_COUNT];
  uint64_t num_ops; /* sum of num_ops */
  uint64_t coll_count[ETSIM_COLL_TYPE_COUNT];
  uint64_t coll_bytes[ETSIM_COLL_TYPE_COUNT];
  uint64_t p2p_bytes;        /* sends */
  uint64_t critical_path_ns; /* the longest over ranks (data edges, durations; duration_ns first) */
  size_t critical_rank;
  int cyclic; /* some rank's data graph has a cycle */
} etsim_diff_side_t;

typedef struct etsim_diff_report {
  etsim_diff_side_t a, b;
  /* Nodes matched by id, rank by rank (ranks present on both sides). */
  uint64_t added[ETSIM_ET_NODE_TYPE_COUNT];   /* in B only */
  uint64_t removed[ETSIM_ET_NODE_TYPE_COUNT]; /* in A only */
  uint64_t changed[ETSIM_ET_NODE_TYPE_COUNT]; /* same id, different content */
  uint64_t edges_added[2], edges_removed[2];  /* [0] data, [1] control */
  uint64_t coll_resized;                      /* collectives whose comm_size changed */
  int metadata_differs;
  int equal; /* nothing differs (given the ignore flags) */
  /* The first difference in file order: rank, node index, ids and what. */
  int have_first;
  size_t first_rank;
  uint64_t first_index;
  char first[512];
} etsim_diff_report_t;

/*
 * Compare rank sets (or files) a and b, loading both.  0 and *rep (equal
 * set when nothing differs), or a negative code for unreadable input.
 */
int etsim_diff(const char *a, const char *b, const etsim_diff_opts_t *opts,
               etsim_diff_report_t *rep, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_EDIT_H */
