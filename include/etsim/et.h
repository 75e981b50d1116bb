/*
 * etsim/et.h — Chakra execution traces: read, write, hold, look up.
 *
 * A Chakra `.et` file is a stream of varint-length-prefixed protobuf
 * messages: one GlobalMetadata, then Nodes until end of file, plain or gzip.
 * A rank set is one file per rank, `<prefix>.<rank>.et`, or a manifest
 * `<prefix>.manifest.json` that lets ranks share a file (see docs/traces.md).
 *
 * Three ways in, one shape out:
 *   - the streaming reader (etsim_et_reader_*) yields one node view at a
 *     time with memory bounded by the largest node, for one-pass consumers;
 *   - the in-memory trace (etsim_et_trace_t) holds a whole file in flat
 *     arrays: ids, names in an arena, attributes as compact records, data
 *     and control dependencies as CSR in both directions, an id -> index map;
 *   - the writer (etsim_et_writer_*) takes node views and writes them in
 *     the canonical encoding (the one Chakra's Python tools produce), to a
 *     temporary name renamed on commit; etsim_et_enc_* encode the same
 *     bytes into memory, and the set writer (etsim_et_set_writer_*) writes
 *     whole rank sets from them.
 * Node views (etsim_et_node_t) are what readers produce and writers consume,
 * so converters and generators never see protobuf types.
 */
#ifndef ETSIM_ET_H
#define ETSIM_ET_H

#include "etsim/base.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ vocabulary */

typedef enum {
  ETSIM_ET_INVALID_NODE = 0,
  ETSIM_ET_METADATA_NODE = 1,
  ETSIM_ET_MEM_LOAD_NODE = 2,
  ETSIM_ET_MEM_STORE_NODE = 3,
  ETSIM_ET_COMP_NODE = 4,
  ETSIM_ET_COMM_SEND_NODE = 5,
  ETSIM_ET_COMM_RECV_NODE = 6,
  ETSIM_ET_COMM_COLL_NODE = 7,
  ETSIM_ET_NODE_TYPE_COUNT = 8
} etsim_et_node_type_t;

typedef enum {
  ETSIM_COLL_ALL_REDUCE = 0,
  ETSIM_COLL_REDUCE = 1,
  ETSIM_COLL_ALL_GATHER = 2,
  ETSIM_COLL_GATHER = 3,
  ETSIM_COLL_SCATTER = 4,
  ETSIM_COLL_BROADCAST = 5,
  ETSIM_COLL_ALL_TO_ALL = 6,
  ETSIM_COLL_REDUCE_SCATTER = 7,
  ETSIM_COLL_REDUCE_SCATTER_BLOCK = 8,
  ETSIM_COLL_BARRIER = 9,
  ETSIM_COLL_TYPE_COUNT = 10
} etsim_coll_type_t;

/* "COMP_NODE", "ALL_REDUCE", ...; "?" for values out of range. */
const char *etsim_et_node_type_name(int type);
const char *etsim_coll_type_name(int coll);
/* Reverse lookups; -1 when unknown.  Accept the enum spelling. */
int etsim_et_node_type_parse(const char *s);
int etsim_coll_type_parse(const char *s);

/*
 * Attribute value kinds.  The numbers are the oneof field numbers of
 * AttributeProto, so a kind is also its wire tag.  Scalars are odd, the
 * matching list kind is the next even number.
 */
typedef enum {
  ETSIM_ATTR_NONE = 0, /* oneof not set */
  ETSIM_ATTR_DOUBLE = 3,
  ETSIM_ATTR_DOUBLE_LIST = 4,
  ETSIM_ATTR_FLOAT = 5,
  ETSIM_ATTR_FLOAT_LIST = 6,
  ETSIM_ATTR_INT32 = 7,
  ETSIM_ATTR_INT32_LIST = 8,
  ETSIM_ATTR_INT64 = 9,
  ETSIM_ATTR_INT64_LIST = 10,
  ETSIM_ATTR_UINT32 = 11,
  ETSIM_ATTR_UINT32_LIST = 12,
  ETSIM_ATTR_UINT64 = 13,
  ETSIM_ATTR_UINT64_LIST = 14,
  ETSIM_ATTR_SINT32 = 15,
  ETSIM_ATTR_SINT32_LIST = 16,
  ETSIM_ATTR_SINT64 = 17,
  ETSIM_ATTR_SINT64_LIST = 18,
  ETSIM_ATTR_FIXED32 = 19,
  ETSIM_ATTR_FIXED32_LIST = 20,
  ETSIM_ATTR_FIXED64 = 21,
  ETSIM_ATTR_FIXED64_LIST = 22,
  ETSIM_ATTR_SFIXED32 = 23,
  ETSIM_ATTR_SFIXED32_LIST = 24,
  ETSIM_ATTR_SFIXED64 = 25,
  ETSIM_ATTR_SFIXED64_LIST = 26,
  ETSIM_ATTR_BOOL = 27,
  ETSIM_ATTR_BOOL_LIST = 28,
  ETSIM_ATTR_STRING = 29,
  ETSIM_ATTR_STRING_LIST = 30,
  ETSIM_ATTR_BYTES = 31,
  ETSIM_ATTR_BYTES_LIST = 32,
  ETSIM_ATTR_KIND_MAX = 32
} etsim_attr_kind_t;

/* "int64_val", "bool_list", ... (the proto field names); "none" for 0. */
const char *etsim_attr_kind_name(int kind);
int etsim_attr_kind_parse(const char *s); /* -1 when unknown */
/* Scalar integer kinds (int32 ... sfixed64, not bool). */
int etsim_attr_kind_is_int(int kind);
int etsim_attr_kind_is_list(int kind);

typedef struct etsim_bytes {
  size_t len;
  const uint8_t *data;
} etsim_bytes_t;

/*
 * One attribute.  For list kinds, v.list.v points at n elements of:
 * double (DOUBLE_LIST), float, int32_t (INT32, SINT32, SFIXED32 lists),
 * int64_t (INT64, SINT64, SFIXED64), uint32_t (UINT32, FIXED32), uint64_t
 * (UINT64, FIXED64), int (BOOL_LIST, 0/1), const char * (STRING_LIST),
 * etsim_bytes_t (BYTES_LIST).  Strings are NUL-terminated; a view's
 * pointers are borrowed from whoever produced it.
 */
typedef struct etsim_attr {
  const char *name;
  const char *doc; /* doc_string; "" when absent */
  int kind;        /* etsim_attr_kind_t */
  union {
    double d;
    float f;
    int32_t i32;  /* INT32, SINT32, SFIXED32 */
    int64_t i64;  /* INT64, SINT64, SFIXED64 */
    uint32_t u32; /* UINT32, FIXED32 */
    uint64_t u64; /* UINT64, FIXED64 */
    int b;
    const char *s;
    etsim_bytes_t bytes;
    struct {
      size_t n;
      const void *v;
    } list;
  } v;
} etsim_attr_t;

/* Integer value of a scalar integer or bool attribute: 0 and *out, or
 * ETSIM_EFORMAT when the kind is not an integer, ETSIM_ERANGE when a uint64
 * does not fit int64. */
int etsim_attr_as_int(const etsim_attr_t *a, int64_t *out);

typedef struct etsim_ioinfo {
  const char *values, *shapes, *types; /* "" when unset */
} etsim_ioinfo_t;

/* A node as readers produce and writers consume it.  All pointers borrowed. */
typedef struct etsim_et_node {
  uint64_t id;
  const char *name; /* never NULL */
  int type;         /* etsim_et_node_type_t */
  uint64_t start_time_micros;
  uint64_t duration_micros;
  size_t n_data_deps;
  const uint64_t *data_deps;
  size_t n_ctrl_deps;
  const uint64_t *ctrl_deps;
  const etsim_ioinfo_t *inputs;  /* NULL when the message has none */
  const etsim_ioinfo_t *outputs; /* NULL when the message has none */
  size_t n_attrs;
  const etsim_attr_t *attrs;
} etsim_et_node_t;

typedef struct etsim_et_meta {
  const char *version; /* "" when unset */
  size_t n_attrs;
  const etsim_attr_t *attrs;
} etsim_et_meta_t;

/* First attribute called `name` in a node view, or NULL. */
const etsim_attr_t *etsim_et_node_attr(const etsim_et_node_t *n, const char *name);

/* -------------------------------------------------------- streaming reader */

enum {
  /* Skip fields the schema does not know instead of failing on them. */
  ETSIM_ET_READ_SKIP_UNKNOWN = 1u << 0,
};

typedef struct etsim_et_reader etsim_et_reader_t;

/*
 * Open `path` (plain or gzip, detected by magic) and read its GlobalMetadata.
 * On success *out is an owned reader.  Errors name the file and byte offset.
 */
int etsim_et_reader_open(etsim_et_reader_t **out, const char *path, unsigned flags,
                         etsim_error_t *err);
/* The file's metadata; valid until close. */
const etsim_et_meta_t *etsim_et_reader_meta(const etsim_et_reader_t *r);
/*
 * Next node: returns 1 with *out set (valid until the next call), 0 at a
 * clean end of file, or a negative code with err naming file, byte offset
 * of the message, node index and id when known.
 */
int etsim_et_reader_next(etsim_et_reader_t *r, const etsim_et_node_t **out, etsim_error_t *err);
/* Byte offset (in the uncompressed stream) of the next message. */
uint64_t etsim_et_reader_offset(const etsim_et_reader_t *r);
const char *etsim_et_reader_path(const etsim_et_reader_t *r);
void etsim_et_reader_close(etsim_et_reader_t *r);

/* ------------------------------------------------------------------ writer */

enum {
  ETSIM_ET_WRITE_GZIP = 1u << 0,
  /* Write what is given even if ids repeat or dependencies dangle (for
   * faithful rewriting of existing files).  Empty messages are refused
   * always: Python readers take a zero length for end of file. */
  ETSIM_ET_WRITE_VERBATIM = 1u << 1,
};

typedef struct etsim_et_writer etsim_et_writer_t;

/* Open for writing; the metadata must come first.  `path` "-" is stdout.
 * A path ending in ".gz" implies ETSIM_ET_WRITE_GZIP. */
int etsim_et_writer_open(etsim_et_writer_t **out, const char *path, unsigned flags,
                         etsim_error_t *err);
int etsim_et_writer_meta(etsim_et_writer_t *w, const etsim_et_meta_t *meta, etsim_error_t *err);
int etsim_et_writer_node(etsim_et_writer_t *w, const etsim_et_node_t *n, etsim_error_t *err);
/* Check closure (unless VERBATIM), flush, rename into place, free w.  On
 * failure nothing is left at the path and w is freed all the same. */
int etsim_et_writer_commit(etsim_et_writer_t *w, etsim_error_t *err);
/* Discard: remove the temporary file, free w. */
void etsim_et_writer_abort(etsim_et_writer_t *w);
uint64_t etsim_et_writer_nodes(const etsim_et_writer_t *w);
uint64_t etsim_et_writer_bytes(const etsim_et_writer_t *w);

/* ------------------------------------------------------- encoding to memory */

/*
 * Writers that build a rank's whole trace in memory (the generators, the
 * ASTRA-sim text converter) encode straight into a byte buffer, with the
 * writer's own encoder: the bytes are exactly those etsim_et_writer_* would
 * write.  No id or dependency checks are made here; such writers build
 * closed graphs by construction and their tests validate the output.
 */

/* A growable byte buffer; zero-initialise, free with etsim_et_buf_free. */
typedef struct etsim_et_buf {
  uint8_t *p;
  size_t n, cap;
} etsim_et_buf_t;

void etsim_et_buf_free(etsim_et_buf_t *b);

/*
 * Append one length-prefixed GlobalMetadata (m may be NULL: an empty one)
 * or Node to b.  A node that would encode to nothing (id 0, no fields) is
 * refused, as the writer refuses it.  0, ETSIM_EINVAL (bad attribute kind,
 * empty node), ETSIM_ERANGE or ETSIM_ENOMEM; b is unchanged on failure.
 */
int etsim_et_enc_meta(etsim_et_buf_t *b, const etsim_et_meta_t *m, etsim_error_t *err);
int etsim_et_enc_node(etsim_et_buf_t *b, const etsim_et_node_t *n, etsim_error_t *err);

/*
 * A node builder: an etsim_et_node_t view with room for attributes and
 * dependencies, filled without allocating (names and string values are
 * borrowed), then handed to etsim_et_enc_node or etsim_et_writer_node as
 * &b->n.
 */
enum { ETSIM_ET_NB_MAX_ATTRS = 16, ETSIM_ET_NB_MAX_DEPS = 512 };

typedef struct etsim_et_nb {
  etsim_et_node_t n;
  etsim_attr_t attrs[ETSIM_ET_NB_MAX_ATTRS];
  uint64_t deps[ETSIM_ET_NB_MAX_DEPS];
  char name[256]; /* room for a name the caller formats */
} etsim_et_nb_t;

static inline void etsim_et_nb_start(etsim_et_nb_t *b, uint64_t id, int type, const char *name) {
  memset(&b->n, 0, sizeof b->n);
  b->n.id = id;
  b->n.type = type;
  b->n.name = name;
  b->n.attrs = b->attrs;
  b->n.data_deps = b->deps;
}

static inline etsim_attr_t *etsim_et_nb_attr(etsim_et_nb_t *b, const char *name, int kind) {
  etsim_attr_t *a = &b->attrs[b->n.n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->doc = "";
  a->kind = kind;
  return a;
}

static inline void etsim_et_nb_bool(etsim_et_nb_t *b, const char *name, int v) {
  etsim_et_nb_attr(b, name, ETSIM_ATTR_BOOL)->v.b = v;
}
static inline void etsim_et_nb_i64(etsim_et_nb_t *b, const char *name, int64_t v) {
  etsim_et_nb_attr(b, name, ETSIM_ATTR_INT64)->v.i64 = v;
}
static inline void etsim_et_nb_i32(etsim_et_nb_t *b, const char *name, int32_t v) {
  etsim_et_nb_attr(b, name, ETSIM_ATTR_INT32)->v.i32 = v;
}
static inline void etsim_et_nb_u64(etsim_et_nb_t *b, const char *name, uint64_t v) {
  etsim_et_nb_attr(b, name, ETSIM_ATTR_UINT64)->v.u64 = v;
}
static inline void etsim_et_nb_str(etsim_et_nb_t *b, const char *name, const char *v) {
  etsim_et_nb_attr(b, name, ETSIM_ATTR_STRING)->v.s = v;
}

/* Add a data dependency; returns 0 or -1 when the builder is full. */
static inline int etsim_et_nb_dep(etsim_et_nb_t *b, uint64_t id) {
  if (b->n.n_data_deps >= ETSIM_ET_NB_MAX_DEPS) return -1;
  b->deps[b->n.n_data_deps++] = id;
  return 0;
}

/*
 * Compute times: duration_micros is what every reader knows, so it always
 * holds the time rounded to whole microseconds; the extension attribute
 * duration_ns (int64) adds the exact time when that rounding is off by
 * more than 0.1 % (docs/gen.md).  Sets both on b.
 */
static inline void etsim_et_nb_time_ns(etsim_et_nb_t *b, uint64_t ns) {
  uint64_t us = (ns + 500) / 1000;
  b->n.duration_micros = us;
  uint64_t back = us * 1000, diff = back > ns ? back - ns : ns - back;
  if (diff * 1000 > ns) etsim_et_nb_i64(b, "duration_ns", (int64_t)ns);
}

/* ---------------------------------------------------- in-memory trace */

/* A dependency entry in the CSR arrays: a node index, or (with this bit) an
 * index into `dangling` for an id that no node in the file carries. */
#define ETSIM_ET_DANGLING 0x80000000u

/* Compact attribute record; read it through etsim_et_trace_attr(). */
typedef struct etsim_et_attrrec {
  uint32_t name;     /* id in trace->strings */
  uint32_t kind_doc; /* kind in the low 8 bits, doc string id above */
  union {
    int64_t i;
    uint64_t u;
    double d;
    const void *p; /* STRING: char*; BYTES and lists: etsim_et_blob_t* */
  } v;
} etsim_et_attrrec_t;

typedef struct etsim_et_io {
  uint32_t flags; /* bit 0: inputs present, bit 1: outputs present */
  etsim_ioinfo_t in, out;
} etsim_et_io_t;

/*
 * A whole file in memory.  Fields are read-only for users; node i has:
 * id[i], name[i], type[i], start_us[i], dur_us[i]; attributes
 * attrs[attr_off[i] .. attr_off[i+1]); its data parents
 * data_par[data_off[i] .. data_off[i+1]) in file order, data children
 * data_chd[data_coff[i] .. data_coff[i+1]) (resolved edges only); the same
 * for control dependencies with ctrl_*; io[i] is 0 or an index into ios.
 */
typedef struct etsim_et_trace {
  char *path;
  etsim_et_meta_t meta; /* attrs owned by the trace */
  size_t n_nodes;
  uint64_t *id;
  uint64_t *start_us;
  uint64_t *dur_us;
  const char **name;
  uint8_t *type;
  uint32_t *io;
  uint32_t *attr_off;
  etsim_et_attrrec_t *attrs;
  size_t n_attrs;
  uint32_t *data_off, *data_par, *data_coff, *data_chd;
  uint32_t *ctrl_off, *ctrl_par, *ctrl_coff, *ctrl_chd;
  size_t n_data_edges, n_ctrl_edges;
  uint64_t *dangling; /* ids referenced but absent */
  size_t n_dangling;
  size_t n_dangling_data, n_dangling_ctrl; /* edges to absent ids */
  uint32_t *dup_idx;                       /* indices of nodes whose id repeats an earlier one */
  size_t n_dup;
  etsim_et_io_t *ios;
  size_t n_ios;
  etsim_u64map_t index;   /* id -> first node index (vals only: u32 slots
                             holding index + 1; keys are read from id[]) */
  int dense;              /* ids are id[0], id[0]+1, ...: no index needed */
  etsim_intern_t strings; /* attribute names, doc strings */
  etsim_arena_t arena;    /* node names, string values, lists */
  /* Well-known attribute name ids in `strings` (UINT32_MAX if absent). */
  uint32_t k_comm_type, k_comm_size, k_comm_src, k_comm_dst, k_comm_tag, k_comm_priority,
      k_is_cpu_op, k_tensor_size, k_pg_name, k_involved_dim, k_num_ops;
} etsim_et_trace_t;

/* Load a file into memory.  *out is owned; free with etsim_et_trace_free. */
int etsim_et_trace_load(etsim_et_trace_t **out, const char *path, unsigned read_flags,
                        etsim_error_t *err);
void etsim_et_trace_free(etsim_et_trace_t *t);

/* Index of the node with `id` (the first, if repeated): 1 and *idx, or 0. */
int etsim_et_trace_find(const etsim_et_trace_t *t, uint64_t id, size_t *idx);

/* Attribute k of node i as a view (pointers into the trace). */
void etsim_et_trace_attr(const etsim_et_trace_t *t, size_t k, etsim_attr_t *out);
/* Find attribute by interned name id in node i: the record index or -1. */
int64_t etsim_et_trace_attr_find(const etsim_et_trace_t *t, size_t i, uint32_t name_id);
/* Integer attribute `name_id` of node i, any integer kind or bool: 1 and *out
 * when present, 0 when absent, ETSIM_EFORMAT when not an integer. */
int etsim_et_trace_attr_int(const etsim_et_trace_t *t, size_t i, uint32_t name_id, int64_t *out);
/* By name (slower: interns lookup first). */
int etsim_et_trace_attr_int_by_name(const etsim_et_trace_t *t, size_t i, const char *name,
                                    int64_t *out);
/* String attribute (kind STRING) by name id: the string, or NULL. */
const char *etsim_et_trace_attr_str(const etsim_et_trace_t *t, size_t i, uint32_t name_id);

/* Reusable storage for building node views out of a trace. */
typedef struct etsim_et_viewbuf {
  etsim_et_node_t node;
  uint64_t *deps;
  size_t deps_cap;
  etsim_attr_t *attrs;
  size_t attrs_cap;
} etsim_et_viewbuf_t;

void etsim_et_viewbuf_free(etsim_et_viewbuf_t *b);
/* View of node i, valid until the next call on b or the trace is freed. */
int etsim_et_trace_view(const etsim_et_trace_t *t, size_t i, etsim_et_viewbuf_t *b,
                        const etsim_et_node_t **out);

/* Write the whole trace; VERBATIM is implied (it is what was read). */
int etsim_et_trace_write(const etsim_et_trace_t *t, const char *path, unsigned write_flags,
                         etsim_error_t *err);

/* Bytes the trace holds in its arrays, arena and maps (for benchmarks). */
size_t etsim_et_trace_memory(const etsim_et_trace_t *t);

/* ----------------------------------------------------------------- rank sets */

/* A label value: a pg_name string (s) or an NPU id (i, s NULL). */
typedef struct etsim_et_label {
  int64_t i;
  const char *s;
} etsim_et_label_t;

/* The most ranks a rank set may have (2^24, 16,777,216): a manifest's
 * "npus" above it is refused before anything is allocated for it. */
#define ETSIM_ET_MAX_RANKS ((size_t)1 << 24)

/*
 * A rank set: rank r's trace is ranks[r].  Several ranks may share one
 * trace (from a manifest, or files of identical content with
 * ETSIM_ET_SET_SHARE); `traces` lists each distinct trace once.
 */
typedef struct etsim_et_set {
  size_t n_ranks;
  etsim_et_trace_t **ranks; /* borrowed pointers into traces[] */
  size_t n_traces;
  etsim_et_trace_t **traces; /* owned */
  char **paths;              /* per distinct trace: the first file read into it */
  uint32_t *rank_trace;      /* rank -> index into traces */
  /* Every file the set names, and the file each rank reads (files[k] is
   * paths[k] unless ETSIM_ET_SET_SHARE merged files). */
  size_t n_files;
  char **files;
  uint32_t *rank_file;
  size_t n_shared_files; /* files found identical to an earlier one */
  /* ETSIM_ET_SET_SHARE_LABELS: files equal to an earlier one but for their
   * labels (pg_name values, comm_src / comm_dst ids) share its trace.
   * Then attr_label[k] (per distinct trace, NULL when it has no labels)
   * gives attribute record k's label slot or UINT32_MAX, and file f's
   * values are labels[label_off[f] ...].  Read attributes through
   * etsim_et_set_attr_int / _str, which apply them. */
  size_t n_label_files; /* files that share a trace this way */
  uint32_t **attr_label;
  size_t *label_off;
  etsim_et_label_t *labels;
  etsim_intern_t *label_strs; /* pg_name strings the labels point to */
} etsim_et_set_t;

/* etsim_et_set_load flag (with the ETSIM_ET_READ_* flags): files whose
 * bytes are identical share one loaded trace.  Decided by a 64-bit content
 * hash and confirmed by comparing the bytes, so 16 K per-rank copies of
 * one collective cost one parse and one trace in memory. */
#define ETSIM_ET_SET_SHARE (1u << 8)
/* ... and files equal but for their labels share one trace too (implies
 * ETSIM_ET_SET_SHARE).  For readers that apply labels (etsim sim). */
#define ETSIM_ET_SET_SHARE_LABELS (1u << 9)

/* The file rank r was read from. */
static inline const char *etsim_et_set_rank_path(const etsim_et_set_t *s, size_t r) {
  return s->files[s->rank_file[r]];
}
/* Rank r's value for the label of attribute record k of its trace, or
 * NULL when the record is not a label (read the trace then). */
static inline const etsim_et_label_t *etsim_et_set_label(const etsim_et_set_t *s, size_t r,
                                                         size_t k) {
  const uint32_t *al = s->attr_label ? s->attr_label[s->rank_trace[r]] : NULL;
  if (!al || al[k] == UINT32_MAX) return NULL;
  return &s->labels[s->label_off[s->rank_file[r]] + al[k]];
}
/* Attribute `name_id` of rank r's node i with r's labels: as
 * etsim_et_trace_attr_int / etsim_et_trace_attr_str. */
int etsim_et_set_attr_int(const etsim_et_set_t *s, size_t r, size_t i, uint32_t name_id,
                          int64_t *out);
const char *etsim_et_set_attr_str(const etsim_et_set_t *s, size_t r, size_t i, uint32_t name_id);

/*
 * Resolve `name` to files: an existing file is a set of one; else
 * `<name>.manifest.json`; else `<name>.<r>.et` (or `.et.gz`) for r = 0, 1, ...
 * until the first missing rank.  Fills paths without loading anything.
 * On success *out_paths (owned, n entries) and *out_rank_file (owned,
 * n_ranks entries mapping rank -> path index).
 */
int etsim_et_set_resolve(const char *name, char ***out_paths, size_t *out_n_paths,
                         uint32_t **out_rank_file, size_t *out_n_ranks, etsim_error_t *err);
void etsim_et_free_paths(char **paths, size_t n);

/* Resolve and load every distinct file once. */
int etsim_et_set_load(etsim_et_set_t **out, const char *name, unsigned read_flags,
                      etsim_error_t *err);
/* The same, calling progress(user, files read, files) about twice a second
 * of wall time while it reads (for a progress line on big sets). */
int etsim_et_set_load_progress(etsim_et_set_t **out, const char *name, unsigned read_flags,
                               void (*progress)(void *user, size_t done, size_t total), void *user,
                               etsim_error_t *err);
void etsim_et_set_free(etsim_et_set_t *s);
/* Give a one-rank set n ranks that all run its one trace (one file named
 * for an n-NPU platform: no copies, no re-parsing).  0, ETSIM_EINVAL when
 * the set has more than one rank, or ETSIM_ENOMEM (set unchanged). */
int etsim_et_set_broadcast(etsim_et_set_t *s, size_t n, etsim_error_t *err);

/*
 * Write a manifest for a rank set whose ranks share files: rank r reads
 * files[rank_file[r]] (paths relative to the manifest's folder).
 */
int etsim_et_manifest_write(const char *prefix, size_t n_ranks, const char *const *files,
                            size_t n_files, const uint32_t *rank_file, etsim_error_t *err);

/* ------------------------------------------------------ writing rank sets */

/*
 * A set writer takes each rank's whole encoded trace (etsim_et_enc_*) and
 * writes the set: one `<prefix>.<rank>.et` per rank, or one file per class
 * of byte-identical ranks `<prefix>.c<k>.et` and `<prefix>.manifest.json`.
 * Every file goes to a temporary name; etsim_et_set_writer_commit renames
 * them all into place, so a failed run leaves nothing behind.
 */
enum {
  ETSIM_ET_OUT_MANIFEST = 0,  /* identical ranks share a class file */
  ETSIM_ET_OUT_RANK_FILES = 1 /* one <prefix>.<rank>.et per rank */
};

typedef struct etsim_et_set_writer etsim_et_set_writer_t;

/* Start writing a set of n_ranks ranks at `prefix` in format
 * ETSIM_ET_OUT_*.  RANK_FILES removes a stale manifest at commit. */
int etsim_et_set_writer_open(etsim_et_set_writer_t **out, const char *prefix, size_t n_ranks,
                             int format, etsim_error_t *err);
/* Rank `rank`'s whole file (metadata + nodes); each rank exactly once.
 * The bytes are written (to a temporary name) before the call returns. */
int etsim_et_set_writer_rank(etsim_et_set_writer_t *s, size_t rank, const uint8_t *data, size_t len,
                             etsim_error_t *err);
/* Rank `rank` has the same trace as `like` (given earlier): MANIFEST puts
 * it in like's class without hashing; RANK_FILES writes data again. */
int etsim_et_set_writer_rank_like(etsim_et_set_writer_t *s, size_t rank, size_t like,
                                  const uint8_t *data, size_t len, etsim_error_t *err);
/*
 * Streaming form for traces too large to hold: rank `rank` gets its own
 * file (no sharing by content; use etsim_et_set_writer_rank_like for ranks
 * known to be equal), written chunk by chunk.  Between begin and end no
 * other rank may be given.
 */
int etsim_et_set_writer_begin_rank(etsim_et_set_writer_t *s, size_t rank, etsim_error_t *err);
int etsim_et_set_writer_write(etsim_et_set_writer_t *s, const uint8_t *data, size_t len,
                              etsim_error_t *err);
int etsim_et_set_writer_end_rank(etsim_et_set_writer_t *s, etsim_error_t *err);
size_t etsim_et_set_writer_n_files(const etsim_et_set_writer_t *s);
uint64_t etsim_et_set_writer_bytes(const etsim_et_set_writer_t *s);
/* Rename everything into place (and write the manifest); frees s. */
int etsim_et_set_writer_commit(etsim_et_set_writer_t *s, etsim_error_t *err);
/* Remove the temporary files; frees s.  NULL is allowed. */
void etsim_et_set_writer_abort(etsim_et_set_writer_t *s);

/* What a writer of a rank set wrote (generators, the text converter). */
typedef struct etsim_et_set_report {
  size_t n_ranks;
  size_t n_files;      /* trace files written */
  uint64_t n_nodes;    /* nodes over all files written */
  uint64_t n_bytes;    /* bytes over all files written */
  uint64_t rank_nodes; /* nodes over all ranks (shared files counted per rank) */
} etsim_et_set_report_t;

/*
 * Write an ASTRA-sim communicator-group file, `{"<id>": [ranks...], ...}`:
 * group g (id first_id + g) holds ranks[off[g] .. off[g+1]).  Written to a
 * temporary name and renamed into place.
 */
int etsim_et_comm_groups_write(const char *path, size_t n_groups, uint32_t first_id,
                               const size_t *off, const uint32_t *ranks, etsim_error_t *err);

/*
 * The communicator-group file that goes with the trace set `name`:
 * NAME.comm_group.json for a set prefix; with strip_et, `name` is a single
 * trace's file and a trailing .et or .et.gz is dropped first
 * (x.et -> x.comm_group.json).  *out for the caller to etsim_free.
 */
int etsim_et_comm_groups_path(const char *name, int strip_et, char **out, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_ET_H */
