/*
 * edit_int.h — private furniture of the trace editor.
 *
 * An edit runs in three layers:
 *   - the set plan (plan.c, retarget.c): which output ranks exist, which
 *     input files ("segments") each one is made of and with which per-rank
 *     parameters (a replica index, a side of a --beside); ranks whose
 *     segments and parameters are equal share one job and one output file;
 *   - the job (job.c, graph.c, iter.c): one output file.  A scan pass
 *     streams every segment through the operation chain and keeps a
 *     skeleton of the graph (ids, types, dependencies as stream indices);
 *     the resolve step applies the selections, joins and insertions to the
 *     skeleton in operation order and bridges dropped nodes; a write pass
 *     streams the segments again, applies the content operations and
 *     writes the kept nodes with their final dependencies;
 *   - the node (node.c, content.c): one node's mutable copy, changed by
 *     the content operations in order.
 * The stream of a job is every segment's nodes in file order with the
 * nodes inserted by --insert-before/after next to their anchors; scan and
 * write produce it identically, so a stream index names the same node in
 * both passes.
 */
#ifndef ETSIM_EDIT_INT_H
#define ETSIM_EDIT_INT_H

#include "etsim/edit.h"

#include <regex.h>

/* ------------------------------------------------------------ operations */

typedef enum {
  /* select */
  ED_KEEP,
  ED_DROP,
  ED_IDS,
  ED_ITER,
  ED_ITER_ONLY,
  ED_RANKS,
  ED_KEEP_DEPS,
  /* scale */
  ED_SCALE_TIME,
  ED_SCALE_FLOPS,
  ED_SCALE_TENSOR,
  ED_SCALE_COMM,
  ED_PROFILE,
  /* retarget */
  ED_DP,
  ED_NPUS,
  ED_REMAP,
  /* compose */
  ED_CONCAT,
  ED_REPEAT,
  ED_BESIDE,
  ED_INSERT_BEFORE,
  ED_INSERT_AFTER,
  /* obfuscate */
  ED_ANONYMIZE,
  ED_ROUND_SIZES,
  ED_ROUND_TIMES,
  ED_STRIP_ATTRS,
  ED_KIND_COUNT
} ed_kind_t;

/* Closure of a selection. */
enum { ED_CLOSE_NONE = 0, ED_CLOSE_ANCESTORS = 1, ED_CLOSE_DESCENDANTS = 2, ED_CLOSE_BOTH = 3 };

/* A node predicate: every term given must hold. */
typedef struct ed_pred {
  int any;     /* no term: matches every node */
  int closure; /* ED_CLOSE_* (keep/drop only) */
  int has_re;  /* name=REGEX */
  regex_t re;
  unsigned types; /* type=...: bit per node type, 0 = any */
  int has_ids;    /* id=A-B */
  uint64_t id_lo, id_hi;
  unsigned colls; /* coll=...: bit per comm_type, 0 = any */
  int cpu;        /* cpu=0|1, -1 = any */
  char *attr;     /* attr=NAME: the node has it */
} ed_pred_t;

enum { ED_ANON_HASH = 0, ED_ANON_STRIP = 1 };
enum { ED_ROUND_POW2 = 0, ED_ROUND_MULTIPLE = 1 };

/* A profile: node name -> duration in ns. */
typedef struct ed_profile {
  etsim_intern_t names; /* name ids */
  uint64_t *ns;         /* by name id; UINT64_MAX = not in the profile */
  size_t n, cap;
  uint64_t matched; /* nodes whose duration it set */
} ed_profile_t;

typedef struct ed_op {
  int kind; /* ed_kind_t */
  char *arg;
  ed_pred_t pred;
  double factor;   /* scale-* */
  uint64_t lo, hi; /* ids, iter: inclusive range */
  uint64_t n;      /* repeat count, dp degree, npus */
  int mode;        /* anonymize: ED_ANON_*; round: ED_ROUND_* */
  uint64_t bucket; /* round: bytes or ns */
  char *path;      /* profile, concat, beside */
  uint32_t *list;  /* ranks / remap list */
  size_t n_list;
  ed_profile_t *profile;
  /* insert: the node to insert */
  int ins_type;       /* COMP_NODE or COMM_COLL_NODE */
  int ins_coll;       /* comm_type */
  uint64_t ins_value; /* ns (COMP) or bytes (COLL) */
  char *ins_name;
  char *ins_pg; /* NULL: world */
  int bit;      /* slot in the skeleton's per-op bitsets, -1 none */
  int cut;      /* a cut that records the dependencies it removes */
} ed_op_t;

/* Parse `arg` into op (ops.c). */
int etsim_edit__op_parse(ed_op_t *op, int kind, const char *arg, etsim_error_t *err);
void etsim_edit__op_free(ed_op_t *op);
int etsim_edit__pred_parse(ed_pred_t *p, const char *s, int allow_closure, const char *what,
                           etsim_error_t *err);
void etsim_edit__pred_free(ed_pred_t *p);
/* Range "A-B", "A", "A-" (to the end): 0 or EINVAL. */
int etsim_edit__parse_range(const char *s, uint64_t *lo, uint64_t *hi);
/* A rank list "0-3,8": owned array in *out. */
int etsim_edit__parse_ranks(const char *s, uint32_t **out, size_t *n, const char *what,
                            etsim_error_t *err);
int etsim_edit__kind_is_content(int kind);
int etsim_edit__kind_is_rank(int kind);

/* ------------------------------------------------------------ the node */

/* A dependency while a node is being streamed: a raw id of the segment's
 * file, or (ED_DEP_IDX) a stream index already. */
enum { ED_DEP_CTRL = 1u, ED_DEP_IDX = 2u };
typedef struct ed_dep {
  uint64_t v;
  unsigned flags;
} ed_dep_t;

/* A node being streamed through the chain: a mutable copy of a reader view
 * (strings borrowed from the view or from `arena`). */
typedef struct ed_node {
  etsim_et_node_t n; /* n.attrs points at attrs */
  etsim_ioinfo_t io[2];
  etsim_attr_t *attrs;
  size_t cap_attrs;
  ed_dep_t *deps;
  size_t n_deps, cap_deps;
  int born;        /* op that inserted it, -1 for a node of a file */
  uint32_t anchor; /* inserted: the stream index of its anchor, else UINT32_MAX */
  uint64_t bits;   /* scan: predicate outcomes of the bit ops */
  uint64_t raw_id; /* the id in its file (file nodes) */
  uint64_t hash;   /* structural hash, taken at the first --iter */
  int changed;
  etsim_arena_t *arena;
} ed_node_t;

int etsim_edit__node_from_view(ed_node_t *x, const etsim_et_node_t *v);
void etsim_edit__node_free(ed_node_t *x);
/* Attribute helpers on the working copy. */
etsim_attr_t *etsim_edit__node_attr(ed_node_t *x, const char *name);
int etsim_edit__node_int(const ed_node_t *x, const char *name, int64_t *out);
/* Set an integer attribute, keeping its kind when present, else adding it
 * as `kind`.  0 or ENOMEM. */
int etsim_edit__node_set_int(ed_node_t *x, const char *name, int kind, int64_t v);
int etsim_edit__node_set_str(ed_node_t *x, const char *name, const char *v);
void etsim_edit__node_del(ed_node_t *x, const char *name);
int etsim_edit__node_add_attr(ed_node_t *x, const etsim_attr_t *a);
/* The node's time in ns (duration_ns when set, else duration_micros). */
uint64_t etsim_edit__node_ns(const ed_node_t *x);
/* Set the time: duration_micros rounded, duration_ns when that is off by
 * more than 0.1 % (as the generators write it). */
int etsim_edit__node_set_ns(ed_node_t *x, uint64_t ns);
int etsim_edit__pred_match(const ed_pred_t *p, const ed_node_t *x);

/* ------------------------------------------------------ communicators */

/* Communicator groups, ASTRA-sim's {"<id>": [ranks...]}: group k has id
 * id[k] and members mem[off[k] .. off[k+1]) (ascending). */
typedef struct ed_groups {
  size_t n;
  uint32_t *id;
  size_t *off; /* n + 1 */
  uint32_t *mem;
  size_t cap, cap_mem;
  etsim_u64map_t by_id;  /* id -> index */
  etsim_u64map_t by_set; /* hash of the member set -> index */
} ed_groups_t;

int etsim_edit__groups_load(ed_groups_t *g, const char *path, size_t n_ranks, etsim_error_t *err);
void etsim_edit__groups_free(ed_groups_t *g);
/* Index of group id, or -1. */
long etsim_edit__groups_find(const ed_groups_t *g, uint32_t id);
/* Add a group (members sorted here); an equal member set reuses its id
 * unless `id` is given (UINT32_MAX: choose, reusing an equal set or taking
 * max id + 1).  The id in *out. */
int etsim_edit__groups_add(ed_groups_t *g, uint32_t id, uint32_t *mem, size_t n, uint32_t *out);
int etsim_edit__groups_write(const ed_groups_t *g, const char *path, etsim_error_t *err);
/* The group indices in id order (ties in index order): an owned array of
 * g->n (at least one slot), or NULL when out of memory. */
size_t *etsim_edit__groups_by_id(const ed_groups_t *g);
uint32_t etsim_edit__groups_max_id(const ed_groups_t *g);
/* "", "0" or NULL: all ranks.  Else the decimal id in *id (1), or 0 when
 * the name is not a number. */
int etsim_edit__pg_world(const char *pg);
int etsim_edit__pg_id(const char *pg, uint32_t *id);

/* Per-rank context of a rank operation, applied to each node. */
typedef struct ed_pgpair {
  uint32_t from, to;
} ed_pgpair_t;

typedef struct ed_pgmap {
  ed_pgpair_t *pair; /* sorted by from (etsim_edit__pgmap_sort) */
  size_t n, cap;
  uint32_t world_to; /* world collectives move to this group (UINT32_MAX: stay) */
} ed_pgmap_t;

int etsim_edit__pgmap_put(ed_pgmap_t *m, uint32_t from, uint32_t to);
void etsim_edit__pgmap_sort(ed_pgmap_t *m);
/* 1 and *to when from is mapped. */
int etsim_edit__pgmap_get(const ed_pgmap_t *m, uint32_t from, uint32_t *to);
void etsim_edit__pgmap_free(ed_pgmap_t *m);

/* ------------------------------------------------------------ the plan */

/* One input file of a job, streamed through ops[entry ..]. */
typedef struct ed_seg {
  uint32_t file;       /* index into the plan's files */
  uint32_t entry;      /* first operation its nodes go through */
  uint32_t created_by; /* the op that added it (UINT32_MAX: the input) */
  uint32_t *copy;      /* per op: copy index of a --repeat (0 elsewhere); owned */
} ed_seg_t;

/* The retarget of a data-parallel degree (retarget.c). */
typedef struct ed_dp {
  size_t inner, d, outer; /* old ranks: inner + inner_n*(j + d*outer) */
  size_t d_new;
  /* Old group k: its class (copies of one group across replicas share a
   * class) and replica (intra-replica groups) or -1 (spanning). */
  long *cls;
  long *rep;
  size_t n_cls;
  uint32_t *cls_base;  /* intra class c in new replica j' gets id cls_base[c] + j' */
  uint32_t *span_new;  /* spanning old group k -> its new id (by k) */
  size_t old_n;        /* ranks before */
  ed_groups_t old;     /* the groups before (owned) */
  double shard;        /* d / d_new: sharded compute and all-gather factor */
  int world_intra;     /* one replica read: world collectives stay in a replica */
  uint32_t world_base; /* ... on group world_base + j' */
} ed_dp_t;

/* What a rank operation needs at run time (one per op of the plan). */
typedef struct ed_rankop {
  int kind;
  size_t n_before, n_after;
  int32_t *peer;     /* old rank -> new rank (-1 dropped); NULL: identity */
  ed_pgmap_t map[2]; /* [0] kept / A side, [1] B side (beside, concat) */
  size_t b_offset;   /* beside: B's ranks start here */
  ed_dp_t dp;        /* dp, npus */
  int have_dp;
} ed_rankop_t;

typedef struct ed_job {
  ed_seg_t *segs;
  size_t n_segs;
  int64_t *param; /* per op: per-rank parameter (replica, side), -1 none */
  size_t first_rank;
  size_t out_file; /* index of the written file */
} ed_job_t;

typedef struct ed_file {
  char *path;
  int is_b; /* a --concat/--beside trace: pg names go through map[1] */
} ed_file_t;

/* The plan of one stage: ops [op_lo, op_hi) on one input set. */
typedef struct ed_plan {
  ed_file_t *files;
  size_t n_files, cap_files;
  ed_job_t *jobs;
  size_t n_jobs, cap_jobs;
  uint32_t *rank_job; /* output rank -> job */
  size_t n_ranks;
  ed_groups_t groups; /* the output's communicators */
  int had_groups;
  ed_rankop_t *rank; /* by op index */
  int input_format;  /* ETSIM_EDIT_OUT_* the input had */
  int input_single;  /* the input was one file */
} ed_plan_t;

struct etsim_edit {
  etsim_edit_opts_t opts; /* strings owned */
  ed_op_t *ops;
  size_t n_ops, cap_ops;
  regex_t marker;
  int have_marker;
  regex_t sharded;
  int have_sharded;
  int n_bits;
  uint64_t anon_k0, anon_k1; /* SipHash key from --salt */
};

/* Build the plan of ops [lo, hi) over `input` (plan.c). */
int etsim_edit__plan(etsim_edit_t *e, size_t lo, size_t hi, const char *input,
                     const char *groups_path, ed_plan_t *p, etsim_edit_report_t *rep,
                     etsim_error_t *err);
void etsim_edit__plan_free(ed_plan_t *p, size_t n_ops);
/* The DP retarget of op k at the start of a stage (retarget.c): infers
 * the replicas of the input set (paths, rank_file, n_ranks; groups in
 * p->groups, replaced by the new ones), fills p->rank[k].dp and gives each
 * new rank its template (an old rank) and its parameter (owned arrays). */
int etsim_edit__retarget(etsim_edit_t *e, size_t k, ed_plan_t *p, char **paths, size_t n_paths,
                         const uint32_t *rank_file, size_t n_ranks, uint32_t **tmpl,
                         int64_t **param, size_t *n_new, etsim_edit_report_t *rep,
                         etsim_error_t *err);

/* --------------------------------------------------------- content ops */

/* Context of one job while streaming (job.c). */
typedef struct ed_ctx ed_ctx_t;

/* Apply content op k to x for this job; 0 or a negative code. */
int etsim_edit__content(etsim_edit_t *e, const ed_plan_t *p, const ed_job_t *j, size_t k,
                        int seg_is_b, ed_node_t *x, etsim_error_t *err);
/* Derive the SipHash key from the salt (once, when the edit is made). */
void etsim_edit__anon_key(etsim_edit_t *e);
/* Anonymize a string (hash or strip) into x's arena. */
const char *etsim_edit__anon(const etsim_edit_t *e, int mode, ed_node_t *x, const char *s);
int etsim_edit__meta(etsim_edit_t *e, size_t lo, size_t hi, const etsim_et_meta_t *in,
                     etsim_et_meta_t *out, etsim_attr_t **attrs, etsim_arena_t *arena);

/* ----------------------------------------------------------------- jobs */

/* Checks across ranks: each job's collectives per communicator and its
 * point-to-point messages, compared once all jobs are written. */
typedef struct ed_pgseq {
  char *pg;
  uint64_t count, hash;
} ed_pgseq_t;

typedef struct ed_p2p {
  int send;
  int64_t src, dst, tag, size; /* src/dst INT64_MIN: the rank's own */
  uint64_t id;
} ed_p2p_t;

typedef struct ed_jobout {
  ed_pgseq_t *seq;
  size_t n_seq, cap_seq;
  ed_p2p_t *p2p;
  size_t n_p2p, cap_p2p;
  uint64_t nodes, bytes;
} ed_jobout_t;

void etsim_edit__jobout_free(ed_jobout_t *o);

/* Scan, resolve and write job `ji` of plan p into `path`. */
int etsim_edit__job_run(etsim_edit_t *e, const ed_plan_t *p, size_t lo, size_t hi, size_t ji,
                        const char *path, ed_jobout_t *out, etsim_edit_report_t *rep,
                        etsim_error_t *err);

/* Add a note line to the report. */
void etsim_edit__note(etsim_edit_report_t *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ iterations */

/* Iteration of each of the n nodes given by their structural hashes h
 * (markers: marker[i] nonzero starts an iteration), into it[] (-1 outside
 * every iteration).  The count in *n_iter, how it was found in *how
 * ("markers", "repeating structure", "one iteration"). */
int etsim_edit__iterations(const uint64_t *h, const uint8_t *marker, size_t n, int32_t *it,
                           size_t *n_iter, const char **how);

#endif
