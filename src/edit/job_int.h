/*
 * job_int.h — one job at run time: the skeleton of its graph and the state
 * shared by the streaming passes (job.c) and the graph work between them
 * (graph.c).
 *
 * Skeleton, per stream node s (a node of a file or an inserted one):
 * id[s] (the output id: the file's id plus its segment's offset, or a
 * fresh id for inserted nodes), type[s], seg[s], born[s] (the inserting
 * op, ED_ORIG for file nodes), dead[s] (the op that dropped it, ED_ALIVE),
 * dependencies dep[off[s] .. off[s+1]) as stream indices with ED_EDGE_CTRL
 * for control edges.  About 14 bytes a node and 4 an edge; the content
 * lives only in the files and is read again by the write pass.
 */
#ifndef ETSIM_EDIT_JOB_INT_H
#define ETSIM_EDIT_JOB_INT_H

#include "edit_int.h"

#define ED_ORIG 0xffffu
#define ED_ALIVE 0xffffu
#define ED_EDGE_CTRL 0x80000000u
#define ED_EDGE_GONE 0xffffffffu /* a dependency on an absent id, dropped */
#define ED_IDX(e) ((e) & ~ED_EDGE_CTRL)

typedef struct ed_segrt {
  uint32_t first, end; /* stream indices [first, end) */
  uint64_t offset;     /* added to the file's ids */
  uint64_t id_min, id_max;
  int have_range;
} ed_segrt_t;

typedef struct ed_xedge {
  uint32_t dst, src; /* dst depends on src */
  uint32_t ctrl;
} ed_xedge_t;

typedef struct ed_prov {
  uint32_t s; /* the node that carries it */
  uint32_t ctrl;
  uint64_t id; /* the id of the dependency that was cut */
} ed_prov_t;

typedef struct ed_syn {
  uint32_t s;      /* stream index of the synthetic node */
  uint32_t before; /* written just before this stream index */
} ed_syn_t;

typedef struct ed_jrt {
  etsim_edit_t *e;
  const ed_plan_t *p;
  const ed_job_t *j;
  size_t lo, hi;
  etsim_error_t *err;
  etsim_edit_report_t *rep;
  int writing;
  int direct; /* one pass: content operations only, dependencies as in the file */

  /* skeleton */
  size_t n, cap, n_scan;
  uint64_t *id;
  uint8_t *type;
  uint16_t *seg, *born, *dead;
  uint32_t *off, *dep;
  size_t n_dep, cap_dep;
  uint64_t *hash;    /* structural hashes (with an --iter) */
  uint64_t **bits;   /* per bit slot, a bitset over stream indices */
  size_t bits_words; /* words allocated per bitset */
  uint32_t *alias;   /* after-insert aliases (with an --insert-after) */
  uint32_t *anchor;  /* inserted nodes' anchors (with an --insert-*) */
  int need_hash, have_inserts;
  uint8_t *scan_content; /* per op: apply content ops in the scan (a later predicate reads) */

  /* the current segment while scanning */
  size_t cur_seg;
  uint64_t seg_pos;    /* nodes of the file seen */
  uint64_t dense_base; /* ids so far are dense_base, +1, ... */
  int dense;
  uint32_t *pos_idx; /* file position -> stream index (dense, with inserts) */
  size_t cap_pos;
  etsim_u64map_t idmap; /* raw id -> stream index (ids not dense) */
  struct ed_fwd {
    size_t pos;
    uint64_t raw;
  } * fwd;
  size_t n_fwd, cap_fwd;
  ed_segrt_t *segs;

  /* graph state */
  ed_prov_t *prov;
  size_t n_prov, cap_prov;
  uint8_t *prov_used; /* per stream node: bit 0 data, bit 1 ctrl provenance consumed */
  ed_xedge_t *xe;
  size_t n_xe, cap_xe;
  uint32_t *xoff, *xsrc; /* extra edges by dst (CSR), built by etsim_edit__graph_index */
  size_t x_built;
  uint32_t *coff, *chd; /* children over skeleton + extra edges */
  size_t c_built_n, c_built_xe;
  ed_syn_t *syn;
  size_t n_syn, cap_syn, next_syn;
  uint64_t fresh;  /* next fresh id */
  uint32_t *renum; /* --renumber: stream index -> output id */
  uint32_t *br_off, *br_len, *br_pool;
  size_t n_br, cap_br;
  uint8_t *br_state;
  uint32_t *br_stamp;
  uint32_t *stamp[2];

  /* traversal */
  ed_node_t *pool;
  size_t n_pool;
  etsim_arena_t arena;
  size_t stream; /* write pass: next stream index */

  /* writing */
  etsim_et_writer_t *w;
  uint64_t *odeps;
  size_t cap_odeps;
  uint64_t *ocut[2];
  size_t n_ocut[2], cap_ocut[2];
  etsim_attr_t *oattrs;
  size_t cap_oattrs;
  ed_jobout_t *out;
} ed_jrt_t;

/* graph.c: the selections, joins and insertions in op order, then the
 * output ids and the bridges.  0 or a negative code (err set). */
int etsim_edit__graph_resolve(ed_jrt_t *J);
/* Every per-node array grown to cap nodes (job.c); an error set in J->err. */
int etsim_edit__grow_node_arrays(ed_jrt_t *J, size_t cap);
/* The final dependencies of alive node s, as output ids, data then
 * control, into J->odeps (data first: *n_data of them); the ids of the
 * dependencies a cut removed go to J->ocut.  0 or ENOMEM. */
int etsim_edit__graph_deps(ed_jrt_t *J, uint32_t s, size_t *n_data, size_t *n_ctrl);
uint64_t etsim_edit__graph_out_id(const ed_jrt_t *J, uint32_t s);
void etsim_edit__graph_free(ed_jrt_t *J);

static inline int ed_bit(const ed_jrt_t *J, int slot, size_t s) {
  return (int)((J->bits[slot][s >> 6] >> (s & 63)) & 1);
}
static inline int ed_exists(const ed_jrt_t *J, size_t s, size_t k) {
  return J->born[s] == ED_ORIG || J->born[s] < k;
}
static inline int ed_alive(const ed_jrt_t *J, size_t s) { return J->dead[s] == ED_ALIVE; }

#endif
