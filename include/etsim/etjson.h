/*
 * etsim/etjson.h — the JSON form of a Chakra trace.
 *
 * The form is the protobuf JSON mapping that Chakra's `chakra_jsonizer`
 * produces with MessageToJson: the GlobalMetadata object, then one object
 * per Node, concatenated.  etsim writes one object per line (JSON Lines,
 * which is also valid concatenated JSON) and reads both that and
 * pretty-printed concatenated objects.  Field names are lowerCamelCase
 * (`ctrlDeps`, `startTimeMicros`, `docString`, `int64Val`, ...; the proto
 * names `ctrl_deps`, ... are accepted on input); node types are enum names;
 * 64-bit integers are JSON strings, 32-bit integers numbers, bytes base64,
 * NaN and infinities the strings "NaN", "Infinity", "-Infinity".  Default
 * (zero or empty) scalar fields are left out; oneof values, `inputs` and
 * `outputs` are written whenever present, even when empty, so that reading
 * the JSON back and writing it with the et writer gives the original `.et`
 * bytes.  Doubles and floats are written with the fewest significant digits
 * (at most 17 and 9) that read back to the same value.
 *
 * What does not survive: NaN sign and payload bits (every NaN becomes the
 * default quiet NaN), and the bytes of strings that are not valid UTF-8
 * (which protobuf's string fields forbid): jsonize writes each such byte
 * as U+FFFD and warns, so a trace with a bad name can still be read.
 */
#ifndef ETSIM_ETJSON_H
#define ETSIM_ETJSON_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- writing */

/* A growable text buffer: `data` (NUL-terminated when len > 0) is owned.
 * With `lossy` set, a byte of a string that is not valid UTF-8 is written as
 * U+FFFD and counted in `replaced` instead of failing. */
typedef struct etsim_etjson_buf {
  char *data;
  size_t len, cap;
  int lossy;
  uint64_t replaced;
} etsim_etjson_buf_t;

void etsim_etjson_buf_free(etsim_etjson_buf_t *b);

/*
 * Append the JSON object for the metadata / a node, on one line ending in
 * '\n', to b.  Returns 0, ETSIM_ENOMEM, or ETSIM_EFORMAT when a string is not
 * valid UTF-8 or the node's type or an attribute kind is out of range (err
 * names the node id and key).  `where` (may be NULL) prefixes the message.
 */
int etsim_etjson_format_meta(etsim_etjson_buf_t *b, const etsim_et_meta_t *m, const char *where,
                             etsim_error_t *err);
int etsim_etjson_format_node(etsim_etjson_buf_t *b, const etsim_et_node_t *n, const char *where,
                             etsim_error_t *err);

/*
 * Write `in_path` (a `.et`, plain or gzip) as JSON to `out_path` ("-" is
 * stdout) through the streaming reader, so memory stays bounded by the
 * largest node.  `read_flags` are ETSIM_ET_READ_*.  The output goes to a
 * temporary name renamed on success; on failure nothing is left behind.
 * *out_nodes (may be NULL) gets the number of nodes written.
 */
int etsim_etjson_jsonize(const char *in_path, const char *out_path, unsigned read_flags,
                         uint64_t *out_nodes, etsim_error_t *err);

/* ------------------------------------------------------------- reading */

typedef struct etsim_etjson_reader etsim_etjson_reader_t;

/*
 * Open a JSON trace (plain or gzip) and read its first object, the
 * GlobalMetadata.  The file is read in chunks; memory is bounded by the
 * largest object.  Errors name the file, line, object number (1 is the
 * metadata, 2 the first node), node id when known, and the key.
 */
int etsim_etjson_reader_open(etsim_etjson_reader_t **out, const char *path, etsim_error_t *err);
/* Valid until close. */
const etsim_et_meta_t *etsim_etjson_reader_meta(const etsim_etjson_reader_t *r);
/* Next node: 1 and *out (valid until the next call), 0 at end, or < 0. */
int etsim_etjson_reader_next(etsim_etjson_reader_t *r, const etsim_et_node_t **out,
                             etsim_error_t *err);
void etsim_etjson_reader_close(etsim_etjson_reader_t *r);

/*
 * Read the JSON form `in_path` and write it as a `.et` to `out_path` with
 * the et writer in VERBATIM mode (so faithful copies of files with dangling
 * dependencies round-trip), plus `write_flags` (ETSIM_ET_WRITE_GZIP).  On
 * failure nothing is left at out_path.
 */
int etsim_etjson_convert(const char *in_path, const char *out_path, unsigned write_flags,
                         uint64_t *out_nodes, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_ETJSON_H */
