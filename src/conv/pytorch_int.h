/*
 * pytorch_int.h — private furniture of the PyTorch converter.
 *
 * ptj_*: a streaming reader for the shape both PyTorch traces have, one
 * top-level object whose big member is an array ("nodes" in the host
 * trace, "traceEvents" in Kineto).  The top level is scanned by hand; each
 * member value, and each element of the big array, is cut out of the byte
 * stream (a string-aware bracket match) and handed to jansson on its own,
 * so only one element is ever in memory as a tree.  Locations are tracked
 * as byte offsets and turned into line:column only when needed.
 *
 * ptr_*: Python repr() of JSON values, the text Chakra's converter stores
 * in IOInfo (single-quoted strings, True/False/None), which ASTRA-sim
 * relies on for the process-group METADATA node.
 */
#ifndef ETSIM_CONV_PYTORCH_INT_H
#define ETSIM_CONV_PYTORCH_INT_H

#include "etsim/base.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Where a value starts: 1-based line and column, and byte offset. */
typedef struct ptj_loc {
  uint64_t line, col, offset;
} ptj_loc_t;

/*
 * Called for each top-level member except the streamed array (`v` is
 * borrowed and freed after the call), and for each element of the member
 * named `array_key` (`index` counts from 0).  Return 0 to go on or a
 * negative code (with err filled) to stop.
 */
typedef int (*ptj_member_fn)(void *user, const char *key, json_t *v,
                             const ptj_loc_t *loc, etsim_error_t *err);
typedef int (*ptj_elem_fn)(void *user, json_t *v, uint64_t index,
                           const ptj_loc_t *loc, etsim_error_t *err);

/*
 * Stream `path` (plain or gzip).  Errors name the file and line:column:
 * malformed JSON, a top level that is not an object, `array_key` not an
 * array.  *out_bytes (may be NULL) gets the uncompressed size read.
 * *out_found is set to 1 when the array member was present.
 */
int ptj_stream(const char *path, const char *array_key, ptj_member_fn on_member,
               ptj_elem_fn on_elem, void *user, uint64_t *out_bytes,
               int *out_found, etsim_error_t *err);

/* Growable byte string (used for repr text and the group JSON). */
typedef struct ptr_buf {
  char *data;
  size_t len, cap;
} ptr_buf_t;

int ptr_putn(ptr_buf_t *b, const char *s, size_t n);
int ptr_puts(ptr_buf_t *b, const char *s);
void ptr_reset(ptr_buf_t *b);
void ptr_free(ptr_buf_t *b);
/* Append repr(v) as Python would print the parsed JSON value. */
int ptr_repr(ptr_buf_t *b, const json_t *v);

#endif
