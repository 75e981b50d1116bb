/*
 * et_int.h — private furniture of the trace library: protobuf-c glue shared
 * by the reader, the writer and the in-memory trace.
 */
#ifndef ETSIM_ET_INT_H
#define ETSIM_ET_INT_H

#include "etsim/et.h"
#include "et_def.pb-c.h"

/* The attribute kinds by their proto spelling, once: kind K's scalar field is
 * "<name>_val" (JSON "<name>Val") and its list "<name>_list" ("<name>List");
 * the enum is ETSIM_ATTR_K and ETSIM_ATTR_K_LIST (et.h).  names.c and json.c
 * build their tables from it. */
#define ETSIM_ET_KINDS(X) \
  X(DOUBLE, double)       \
  X(FLOAT, float)         \
  X(INT32, int32)         \
  X(INT64, int64)         \
  X(UINT32, uint32)       \
  X(UINT64, uint64)       \
  X(SINT32, sint32)       \
  X(SINT64, sint64)       \
  X(FIXED32, fixed32)     \
  X(FIXED64, fixed64)     \
  X(SFIXED32, sfixed32)   \
  X(SFIXED64, sfixed64)   \
  X(BOOL, bool)           \
  X(STRING, string)       \
  X(BYTES, bytes)

/* Length-prefixed list payload in an arena: n elements follow the header. */
typedef struct etsim_et_blob {
  uint64_t n;
  uint64_t elem_size;
} etsim_et_blob_t;

static inline void *et_blob_data(const etsim_et_blob_t *b) { return (void *)(b + 1); }

/* Element size of a list kind's elements in views (etsim_attr_t docs). */
size_t etsim_et__list_elem_size(int kind);

/* A protobuf-c allocator that bumps in `arena` and never frees. */
void etsim_et__arena_allocator(ProtobufCAllocator *out, etsim_arena_t *arena);

/* Fill a view attribute from a decoded AttributeProto (pointers alias it). */
void etsim_et__attr_from_proto(etsim_attr_t *out, const ChakraProtoMsg__AttributeProto *a);
/* Build an AttributeProto in `arena` from a view; NULL on OOM. */
ChakraProtoMsg__AttributeProto *etsim_et__attr_to_proto(const etsim_attr_t *a,
                                                        etsim_arena_t *arena);

/* ------------------------------------------------------- fast wire path */

/* Bytes inside a message buffer (not NUL-terminated). */
typedef struct et_span {
  const uint8_t *p;
  size_t n;
} et_span_t;

/* One AttributeProto as found on the wire (wire.c). */
typedef struct et_wattr {
  et_span_t name, doc;
  int kind;      /* etsim_attr_kind_t; NONE when no oneof member */
  uint64_t u;    /* scalar: varint value (bool: 0/1) or fixed-width bits */
  et_span_t raw; /* STRING/BYTES: the bytes; numeric list: packed payload;
                    STRING/BYTES list: the list message body */
  size_t count;  /* list elements */
} et_wattr_t;

/* One Node as found on the wire: spans into the message buffer. */
typedef struct et_wnode {
  uint64_t id, start_us, dur_us;
  int type;
  et_span_t name;
  et_span_t deps[2]; /* packed payloads: [0] data_deps, [1] ctrl_deps */
  unsigned io_flags; /* bit 0 inputs present, bit 1 outputs present */
  et_span_t io[6];   /* inputs values/shapes/types, outputs the same */
  size_t n_attrs;
  et_wattr_t *attrs; /* owned, reused across calls */
  size_t attrs_cap;
} et_wnode_t;

/* Returned by the fast path for messages it leaves to protobuf-c. */
#define ET_WIRE_BAIL 1

/* Decode one Node message: 0, ET_WIRE_BAIL, or ETSIM_ENOMEM.  Spans point
 * into p, which must outlive w's use.  Packed deps are not yet checked. */
int etsim_et__wire_node(const uint8_t *p, size_t n, et_wnode_t *w);
/* Decode a packed uint64 run into dst (room for s.n values): the count, or
 * -1 when a varint is unterminated or longer than 10 bytes. */
long etsim_et__wire_deps(et_span_t s, uint64_t *dst);
/* Scalar value of a decoded attribute into out->v. */
void etsim_et__wire_scalar(const et_wattr_t *a, etsim_attr_t *out);
/* Numeric list values in view element types (etsim_et__list_elem_size). */
void etsim_et__wire_list_values(const et_wattr_t *a, void *dst);
/* Next entry of a string/bytes list body: 1 and *out, 0 at the end. */
int etsim_et__wire_list_entry(et_span_t *cursor, et_span_t *out);
/* A node view of w, strings NUL-terminated in arena `a`: 0, ET_WIRE_BAIL
 * (bad packed deps) or ETSIM_ENOMEM. */
int etsim_et__wire_view(const et_wnode_t *w, etsim_arena_t *a, etsim_et_node_t *v,
                        etsim_ioinfo_t io[2], etsim_attr_t **attrs, size_t *attrs_cap);

/* Canonical encoding of a node view (byte-identical to protobuf-c's pack of
 * the same view): size first, then the bytes into out (room for the size). */
int etsim_et__wire_attr_ok(const etsim_attr_t *a);
size_t etsim_et__wire_node_size(const etsim_et_node_t *n);
size_t etsim_et__wire_encode_node(const etsim_et_node_t *n, uint8_t *out);
/* The same for a GlobalMetadata (m NULL: the empty one, 0 bytes). */
size_t etsim_et__wire_meta_size(const etsim_et_meta_t *m);
size_t etsim_et__wire_encode_meta(const etsim_et_meta_t *m, uint8_t *out);
size_t etsim_et__wire_put_varint(uint8_t *out, uint64_t v);

/* The protobuf-c reference path (kept for GlobalMetadata, for messages the
 * fast path leaves alone, and for tests).  Pack a node view with protobuf-c
 * into a buffer grown as needed: the length, or a negative code. */
long etsim_et__pbc_pack_node(const etsim_et_node_t *n, etsim_arena_t *scratch, uint8_t **buf,
                             size_t *cap);
/* The same for a GlobalMetadata (tests compare the hand encoder with it). */
long etsim_et__pbc_pack_meta(const etsim_et_meta_t *m, etsim_arena_t *scratch, uint8_t **buf,
                             size_t *cap);

/* ------------------------------------------------------ reader internals */

uint32_t etsim_et__reader_last_len(const etsim_et_reader_t *r);
/* Next raw message: 1 with data, len and offset (valid until the next call),
 * 0 at a clean end of file, or a negative code with err set. */
int etsim_et__reader_raw(etsim_et_reader_t *r, const uint8_t **data, uint32_t *len, uint64_t *off,
                         etsim_error_t *err);
/* Decode a raw node message with protobuf-c, strictly (unknown fields and
 * bad node types are errors unless the reader skips unknown fields): 0 and
 * *out, or a negative code with err naming file, offset, node index and id. */
int etsim_et__reader_slow(etsim_et_reader_t *r, const uint8_t *data, uint32_t len, uint64_t off,
                          const etsim_et_node_t **out, etsim_error_t *err);
/* Count a node taken from the last raw message (error messages number
 * nodes). */
void etsim_et__reader_count_node(etsim_et_reader_t *r);
/* Upper estimate of the nodes still to come, from the file size and the
 * messages buffered so far; 0 when unknown. */
size_t etsim_et__reader_estimate_nodes(const etsim_et_reader_t *r);
/* Bytes of a plain (not gzip) regular file: all the trace can hold; 0
 * when unknown. */
uint64_t etsim_et__reader_file_bytes(const etsim_et_reader_t *r);
/* A reader over a whole file already in memory (data borrowed: it must
 * outlive the reader); errors name `path`. */
int etsim_et__reader_open_mem(etsim_et_reader_t **out, const char *path, const uint8_t *data,
                              size_t len, unsigned flags, etsim_error_t *err);
/* etsim_et_trace_load on a file already in memory (data borrowed during the
 * call only). */
int etsim_et__trace_load_mem(etsim_et_trace_t **out, const char *path, const uint8_t *data,
                             size_t len, unsigned read_flags, etsim_error_t *err);
/* ------------------------------------------------- traces up to labels */

/* 64-bit hash of bytes, 8 at a time (share.c): the set loader's file
 * contents and the shape hash's strings; equal hashes are always confirmed
 * by comparing, so quality only affects speed. */
uint64_t etsim_et__hash_mem(const void *p, size_t n);

/* A trace's labels (share.c): each distinct pg_name string and comm_src /
 * comm_dst value gets a slot in order of first appearance. */
typedef struct et_labels {
  uint32_t *attr_slot;    /* per attribute record: its slot, or UINT32_MAX */
  etsim_et_label_t *vals; /* per slot: the value */
  uint32_t n;             /* slots */
  uint64_t shape_hash;    /* the trace with labels replaced by slot numbers */
} et_labels_t;

/* Extract t's labels and shape hash; pg_name strings are interned in strs
 * (vals point there).  0 or ETSIM_ENOMEM. */
int etsim_et__labels_extract(const etsim_et_trace_t *t, etsim_intern_t *strs, et_labels_t *out);
void etsim_et__labels_free(et_labels_t *l);
/* 1 when a and b are equal but for their label values (compared field by
 * field, slot structure included), else 0. */
int etsim_et__same_shape(const etsim_et_trace_t *a, const et_labels_t *la,
                         const etsim_et_trace_t *b, const et_labels_t *lb);

/* Force the protobuf-c path for every node (tests compare both paths). */
void etsim_et__reader_set_slow(etsim_et_reader_t *r, int slow);

#endif
