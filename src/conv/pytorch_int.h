/*
 * pytorch_int.h — private furniture of the PyTorch converter.
 *
 * ptj_*: a streaming reader for the shape both PyTorch traces have, one
 * top-level object whose big member is an array ("nodes" in the host
 * trace, "traceEvents" in Kineto).  The top level is scanned by hand; each
 * member value, and each element of the big array, is cut out of the byte
 * stream (a string-aware bracket match) and parsed on its own (ptv_*), so
 * only one element is ever in memory as a tree.  Locations are tracked
 * as byte offsets and turned into line:column only when needed.
 *
 * ptr_*: Python repr() of JSON values, the text Chakra's converter stores
 * in IOInfo (single-quoted strings, True/False/None), which ASTRA-sim
 * relies on for the process-group METADATA node.
 */
#ifndef ETSIM_CONV_PYTORCH_INT_H
#define ETSIM_CONV_PYTORCH_INT_H

#include "etsim/base.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * A parsed JSON value (one element of the big array, or one member).
 * Strings are decoded in place in the read buffer and NUL-terminated;
 * arrays and objects point into an arena reset for every element, so a
 * value is valid only during the callback that receives it.  Objects keep
 * their members in file order as key/value pairs (items[2k] is the key).
 */
typedef enum {
  PTV_NULL = 0,
  PTV_FALSE,
  PTV_TRUE,
  PTV_INT,
  PTV_REAL,
  PTV_STR,
  PTV_ARR,
  PTV_OBJ
} ptv_type_t;

typedef struct ptv {
  uint32_t t; /* ptv_type_t */
  uint32_t n; /* string bytes, array items, object members */
  union {
    int64_t i;
    double d;
    const char *s;
    struct ptv *items;
  } u;
} ptv_t;

/* Set *out to the JSON number whose text starts at `text` and whose
 * magnitude digits gave `v` (`overflow` when they did not fit): an integer
 * when it has no fraction or exponent and fits int64, else a double.  The
 * byte after the number must not continue it, so strtod stops where the
 * caller's grammar did.  Shared by the tree parser and the scanner so both
 * roads give the same value. */
static inline void ptv_set_number(ptv_t *out, const char *text, int neg, uint64_t v, int real,
                                  int overflow) {
  if (!real && !overflow && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX)) {
    out->t = PTV_INT;
    out->u.i = neg ? (int64_t)(0 - v) : (int64_t)v;
  } else {
    out->t = PTV_REAL;
    out->u.d = strtod(text, NULL);
  }
}
static inline int ptv_is_int(const ptv_t *v) { return v && v->t == PTV_INT; }
static inline int ptv_is_num(const ptv_t *v) { return v && (v->t == PTV_INT || v->t == PTV_REAL); }
static inline int ptv_is_str(const ptv_t *v) { return v && v->t == PTV_STR; }
static inline int ptv_is_arr(const ptv_t *v) { return v && v->t == PTV_ARR; }
static inline int ptv_is_obj(const ptv_t *v) { return v && v->t == PTV_OBJ; }
static inline size_t ptv_len(const ptv_t *v) {
  return v && (v->t == PTV_ARR || v->t == PTV_OBJ) ? v->n : 0;
}
/* Item i of an array, or NULL. */
static inline const ptv_t *ptv_at(const ptv_t *v, size_t i) {
  return ptv_is_arr(v) && i < v->n ? &v->u.items[i] : NULL;
}
static inline const char *ptv_str(const ptv_t *v) { return ptv_is_str(v) ? v->u.s : NULL; }
static inline int ptv_is_real(const ptv_t *v) { return v && v->t == PTV_REAL; }
static inline int ptv_is_true(const ptv_t *v) { return v && v->t == PTV_TRUE; }
static inline int ptv_is_false(const ptv_t *v) { return v && v->t == PTV_FALSE; }
static inline int ptv_is_null(const ptv_t *v) { return v && v->t == PTV_NULL; }
/* Value of an integer, 0 otherwise; of a real, 0.0 otherwise. */
static inline int64_t ptv_i(const ptv_t *v) { return ptv_is_int(v) ? v->u.i : 0; }
static inline double ptv_d(const ptv_t *v) {
  return ptv_is_real(v) ? v->u.d : ptv_is_int(v) ? (double)v->u.i : 0.0;
}
/* Items of an array (0 for anything else). */
static inline size_t ptv_arr_len(const ptv_t *v) { return ptv_is_arr(v) ? v->n : 0; }
/* Member `key` of an object (the first, if repeated), or NULL. */
const ptv_t *etsim_conv__pt_value_get(const ptv_t *obj, const char *key);
/* Integer value of an integer / real / bool, else dflt. */
int64_t etsim_conv__pt_value_int(const ptv_t *v, int64_t dflt);

/* A parser's reusable storage. */
typedef struct ptv_parser {
  ptv_t *stack;
  size_t n, cap;
  etsim_arena_t arena;
} ptv_parser_t;

void etsim_conv__pt_value_parser_init(ptv_parser_t *p);
void etsim_conv__pt_value_parser_free(ptv_parser_t *p);
/*
 * Parse one JSON value from s[0..len) (modified in place: strings are
 * decoded there).  s[len] must be readable (a NUL).  Returns 0 with *out,
 * or ETSIM_EFORMAT with *err_pos (byte offset) and *err_what set, or
 * ETSIM_ENOMEM.  Trailing bytes after the value are an error.
 */
int etsim_conv__pt_value_parse(ptv_parser_t *p, char *s, size_t len, ptv_t *out, size_t *err_pos,
                               const char **err_what);

/* Where a value starts: 1-based line and column, and byte offset. */
typedef struct ptj_loc {
  uint64_t line, col, offset;
  uint64_t length; /* bytes of the value's text */
} ptj_loc_t;

/*
 * Called for each top-level member except the streamed array, and for each
 * element of the member named `array_key` (`index` counts from 0).  `v` is
 * valid during the call only.  Return 0 to go on or a negative code (with
 * err filled) to stop.
 */
typedef int (*ptj_member_fn)(void *user, const char *key, const ptv_t *v, const ptj_loc_t *loc,
                             etsim_error_t *err);
typedef int (*ptj_elem_fn)(void *user, const ptv_t *v, uint64_t index, const ptj_loc_t *loc,
                           etsim_error_t *err);

/*
 * Stream `path` (plain or gzip).  Errors name the file and line:column:
 * malformed JSON, a top level that is not an object, `array_key` not an
 * array.  *out_bytes (may be NULL) gets the uncompressed size read.
 * *out_found is set to 1 when the array member was present.
 */
typedef struct ptj_want {
  const uint8_t *bits; /* element i is parsed when bit i is set */
  uint64_t n;          /* bits available; later elements are skipped */
} ptj_want_t;

/* `want` NULL parses every element; otherwise only the wanted ones are
 * parsed (the rest are only delimited, which is much cheaper).  With
 * on_member NULL, member values are delimited, not parsed. */
int etsim_conv__pt_json_stream(const char *path, const char *array_key, ptj_member_fn on_member,
                               ptj_elem_fn on_elem, void *user, const ptj_want_t *want,
                               uint64_t *out_bytes, int *out_found, etsim_error_t *err);

/*
 * Optional fast path for the elements of the big array (etsim_conv__pt_json_stream_ex;
 * with `want`, for the wanted ones only): called with the element's first
 * byte at s, s[avail] readable and a NUL
 * (more of the file may follow beyond it).  Returns 0 with *used = the
 * element's length in bytes when it dealt with the element itself, or
 * PTJ_SLOW to have it delimited, parsed as a tree and passed to on_elem as
 * usual — for anything unusual or malformed (so every error message comes
 * from the tree path), or an element that is not wholly in s.  It must not
 * modify s, nor change any state before it is sure to return 0.  A
 * negative return (with err set) stops the stream.  `offset` is the
 * element's byte offset in the stream.
 */
enum { PTJ_SLOW = 1 };
typedef int (*ptj_fast_fn)(void *user, const char *s, size_t avail, uint64_t index, uint64_t offset,
                           size_t *used, etsim_error_t *err);
int etsim_conv__pt_json_stream_ex(const char *path, const char *array_key, ptj_member_fn on_member,
                                  ptj_elem_fn on_elem, ptj_fast_fn on_fast, void *user,
                                  const ptj_want_t *want, uint64_t *out_bytes, int *out_found,
                                  etsim_error_t *err);

/* 1 when the file starts with the gzip magic, 0 otherwise (or unreadable). */
int etsim_conv__pt_json_is_gzip(const char *path);
/* Read bytes [off, off + len) of a plain file into buf (len + 1 bytes,
 * NUL-terminated).  0 or ETSIM_EIO with err naming the file. */
int etsim_conv__pt_json_pread(const char *path, int fd, uint64_t off, size_t len, char *buf,
                              etsim_error_t *err);

/* Growable byte string (used for repr text and the group JSON). */
typedef struct ptr_buf {
  char *data;
  size_t len, cap;
} ptr_buf_t;

int etsim_conv__pt_repr_putn(ptr_buf_t *b, const char *s, size_t n);
int etsim_conv__pt_repr_puts(ptr_buf_t *b, const char *s);
void etsim_conv__pt_repr_reset(ptr_buf_t *b);
void etsim_conv__pt_repr_free(ptr_buf_t *b);
/* Append repr(v) as Python would print the parsed JSON value. */
int etsim_conv__pt_repr(ptr_buf_t *b, const ptv_t *v);
/* Append s as a JSON string literal. */
int etsim_conv__pt_repr_json_str(ptr_buf_t *b, const char *s);

/*
 * pts_*: a validating scanner that reads the few fields pass 1 needs of a
 * host node straight from the bytes, without building a tree
 * (pytorch_scan.c).  It accepts a subset of what etsim_conv__pt_value_parse accepts: strict
 * RFC 8259 JSON with no backslash escape in any string and at most
 * PTS_MAX_DEPTH levels of nesting; on anything else it declines (returns
 * PTJ_SLOW) and the caller parses the element with etsim_conv__pt_value_parse, which then
 * also gives the error message.  It relies on a NUL after the bytes (no
 * JSON value contains one) instead of bounds checks.
 *
 * Fields are ptv_t values: scalars in full (a string points into the
 * input, is NOT NUL-terminated, and n is its length), arrays and objects
 * by type only (n = 0, no items).  `have` has a PTS_* bit per field found;
 * each field is the first occurrence of its key, as etsim_conv__pt_value_get finds it.
 */
enum { PTS_MAX_DEPTH = 64 };
enum {
  PTS_ID = 1u << 0,
  PTS_NAME = 1u << 1,
  PTS_CTRL_DEPS = 1u << 2,
  PTS_PARENT = 1u << 3,
  PTS_INPUTS = 1u << 4,
  PTS_OUTPUTS = 1u << 5,
  PTS_ATTRS = 1u << 6,
  PTS_TS = 1u << 7,
  PTS_DUR = 1u << 8, /* inclusive_dur */
  PTS_CAT = 1u << 9,
  PTS_IN_VALUES = 1u << 10, /* "values" of an "inputs" object */
  PTS_IN_TYPES = 1u << 11,
  PTS_OUT_VALUES = 1u << 12,
  PTS_OUT_TYPES = 1u << 13,
  /* attrs: the first {"name": N, "value": V} with that N and a value */
  PTS_RF_ID = 1u << 14,
  PTS_OP_SCHEMA = 1u << 15,
  PTS_KERNEL_BACKEND = 1u << 16,
  PTS_FW_PARENT = 1u << 17,
  PTS_SEQ_ID = 1u << 18,
  PTS_SCOPE = 1u << 19,
  PTS_TID = 1u << 20,
  PTS_FW_TID = 1u << 21,
  PTS_ITD = 1u << 22, /* inter_thread_dep */
};
typedef struct pts_node {
  uint32_t have; /* PTS_* */
  ptv_t id, name, ctrl_deps, parent, inputs, outputs, attrs, ts, dur, cat;
  ptv_t in_values, in_types, out_values, out_types;
  ptv_t rf_id, op_schema, kernel_backend;
  ptv_t fw_parent, seq_id, scope, tid, fw_tid, itd;
  /* The text of the "inputs" and "outputs" values (when present), for the
   * caller to parse as trees. */
  const char *inputs_at, *outputs_at;
  size_t inputs_len, outputs_len;
  /* Inside an "inputs" ([0]) / "outputs" ([1]) object, the text of its
   * "values", "shapes" and "types" ([0..2]); NULL when absent. */
  const char *io_at[2][3];
  size_t io_len[2][3];
} pts_node_t;

/* Scan one element at s: 0 with *out and *used (bytes of the element,
 * a JSON object), or PTJ_SLOW (not an object, or declined). */
int etsim_conv__pt_scan_host_node(const char *s, pts_node_t *out, size_t *used);

/* Append to b the text etsim_conv__pt_repr prints for the value at text[0..len) once
 * parsed (the value must fill the text; text[len] is not read).  0,
 * PTJ_SLOW (declined: escapes, too deep, malformed) or ETSIM_ENOMEM; b may
 * hold a partial text after a failure. */
int etsim_conv__pt_scan_repr(ptr_buf_t *b, const char *text, size_t len);

/*
 * The tensors of an IO block from its text, as pytorch.c's io_tensors
 * finds them in the trees: for item i of the values list whose type
 * (item i of the types list) is a string containing "Tensor", every tensor
 * tuple [id, storage, offset, numel, elem_bytes(, device)] in it, depth
 * first, nested lists up to 8 deep.  fn is called with the five integers.
 * values / types may be NULL (absent).  0, PTJ_SLOW (declined) or fn's
 * non-zero return.
 */
typedef int (*pts_tensor_fn)(void *ctx, const int64_t t[5]);
int etsim_conv__pt_scan_tensors(const char *values, size_t values_len, const char *types,
                                size_t types_len, pts_tensor_fn fn, void *ctx);

#endif
