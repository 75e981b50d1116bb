/*
 * writer.c — the Chakra writer.
 *
 * Nodes are encoded by the hand-written encoder in wire.c, which produces
 * exactly what protobuf-c's pack does (fields in number order, proto3
 * defaults omitted, repeated numbers packed, a set oneof always written):
 * the canonical encoding Chakra's own tools produce.  GlobalMetadata is
 * encoded there too, so the writer never builds protobuf-c messages
 * (protobuf-c's pack stays only as the reference the tests compare with).
 * Bytes collect in a 1 MiB buffer written out when full.  Output goes to a
 * temporary name renamed into place on commit; unless VERBATIM, the writer
 * refuses duplicate ids and checks at commit that every dependency names a
 * node of the file.  Ids written so far are kept as one run [run_lo, run_hi) while
 * they come in counting order (the common case: no hashing) and in a hash
 * map otherwise.
 */
#include "et_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Where a writer is: the metadata comes first, then the nodes; a failed
 * write is final, and commit then refuses to rename the file into place. */
typedef enum {
  W_WANT_META = 0, /* nothing written yet */
  W_NODES,         /* metadata written: nodes may follow */
  W_FAILED         /* a write to the file failed */
} wstate_t;

struct etsim_et_writer {
  char *path, *tmp_path;
  unsigned flags;
  FILE *fp;  /* plain output */
  gzFile gz; /* gzip output */
  wstate_t state;
  uint64_t nodes, bytes;
  unsigned char *buf; /* pending output: [0, fill) */
  size_t cap, fill;
  int have_run;
  uint64_t run_lo, run_hi; /* ids written in counting order (unless VERBATIM) */
  etsim_u64map_t ids;      /* other ids written (unless VERBATIM) */
  etsim_u64map_t pending;  /* referenced ids not yet written */
};

#define OUT_BUF (1u << 20)

uint64_t etsim_et_writer_nodes(const etsim_et_writer_t *w) { return w->nodes; }
uint64_t etsim_et_writer_bytes(const etsim_et_writer_t *w) { return w->bytes; }

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int etsim_et_writer_open(etsim_et_writer_t **out, const char *path, unsigned flags,
                         etsim_error_t *err) {
  etsim_et_writer_t *w = etsim_calloc(1, sizeof *w);
  if (!w) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  if (ends_with(path, ".gz")) flags |= ETSIM_ET_WRITE_GZIP;
  w->flags = flags;
  w->path = etsim_strdup(path);
  etsim_u64map_init(&w->ids);
  etsim_u64map_init(&w->pending);
  w->buf = etsim_malloc(OUT_BUF);
  w->cap = OUT_BUF;
  if (!w->path || !w->buf) goto oom;
  if (strcmp(path, "-") == 0) {
    if (flags & ETSIM_ET_WRITE_GZIP) w->gz = gzdopen(dup(1), "wb");
    else w->fp = stdout;
  } else {
    int rc = etsim_tmp_name(path, &w->tmp_path, err);
    if (rc) {
      etsim_et_writer_abort(w);
      return rc;
    }
    if (flags & ETSIM_ET_WRITE_GZIP) w->gz = gzopen(w->tmp_path, "wb6");
    else w->fp = fopen(w->tmp_path, "wb");
  }
  if (!w->fp && !w->gz) {
    int e = errno;
    etsim_error_set(err, ETSIM_EIO, "%s: cannot create: %s", path, strerror(e ? e : ENOMEM));
    etsim_et_writer_abort(w);
    return ETSIM_EIO;
  }
  *out = w;
  return 0;
oom:
  etsim_et_writer_abort(w);
  return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
}

/* Write out the buffered bytes. */
static int flush_out(etsim_et_writer_t *w, etsim_error_t *err) {
  if (!w->fill) return 0;
  size_t put =
      w->gz ? (size_t)gzwrite(w->gz, w->buf, (unsigned)w->fill) : fwrite(w->buf, 1, w->fill, w->fp);
  if (put != w->fill) {
    w->state = W_FAILED;
    return etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", w->path, strerror(errno));
  }
  w->fill = 0;
  return 0;
}

/* Room for `need` more bytes at buf + fill. */
static int reserve(etsim_et_writer_t *w, size_t need, etsim_error_t *err) {
  if (w->fill + need <= w->cap) return 0;
  int rc = flush_out(w, err);
  if (rc) return rc;
  if (need > w->cap && etsim_grow((void **)&w->buf, &w->cap, need, 1))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", w->path);
  return 0;
}

int etsim_et_writer_meta(etsim_et_writer_t *w, const etsim_et_meta_t *meta, etsim_error_t *err) {
  if (w->state == W_FAILED) return etsim_error_set(err, ETSIM_EIO, "%s: write error", w->path);
  if (w->state != W_WANT_META)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: metadata written twice", w->path);
  size_t na = meta ? meta->n_attrs : 0;
  for (size_t i = 0; i < na; i++)
    if (!etsim_et__wire_attr_ok(&meta->attrs[i]))
      return etsim_error_set(err, ETSIM_EINVAL, "%s: metadata attribute '%s': bad kind %d", w->path,
                             meta->attrs[i].name, meta->attrs[i].kind);
  size_t len = etsim_et__wire_meta_size(meta);
  if (len > UINT32_MAX)
    return etsim_error_set(err, ETSIM_ERANGE, "%s: metadata: message too large", w->path);
  int rc = reserve(w, len + 10, err);
  if (rc) return rc;
  size_t h = etsim_et__wire_put_varint(w->buf + w->fill, len);
  size_t put = etsim_et__wire_encode_meta(meta, w->buf + w->fill + h);
  ETSIM_ASSERT(put == len); /* the size pass and the encoding agree */
  w->fill += h + len;
  w->bytes += h + len;
  w->state = W_NODES;
  return 0;
}

/* Has `id` been written? */
static int id_written(const etsim_et_writer_t *w, uint64_t id) {
  uint32_t dummy;
  if (w->have_run && id >= w->run_lo && id < w->run_hi) return 1;
  return w->ids.count && etsim_u64map_get(&w->ids, id, &dummy);
}

/* Record `id` as written: 1, 0 when it was written before, or ETSIM_ENOMEM. */
static int id_add(etsim_et_writer_t *w, uint64_t id) {
  if (id_written(w, id)) return 0;
  if (!w->have_run) {
    w->have_run = 1;
    w->run_lo = id;
    w->run_hi = id + 1;
    return 1;
  }
  if (id == w->run_hi && id != UINT64_MAX) {
    w->run_hi++;
    return 1;
  }
  int rc = etsim_u64map_put(&w->ids, id, 0, NULL);
  return rc < 0 ? rc : 1;
}

/* Remember dependencies on ids not written yet; commit checks them. */
static int note_deps(etsim_et_writer_t *w, const uint64_t *deps, size_t n, etsim_error_t *err) {
  for (size_t i = 0; i < n; i++) {
    if (id_written(w, deps[i])) continue;
    int rc = etsim_u64map_put(&w->pending, deps[i], 0, NULL);
    if (rc < 0) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", w->path);
  }
  return 0;
}

int etsim_et_writer_node(etsim_et_writer_t *w, const etsim_et_node_t *n, etsim_error_t *err) {
  int rc;
  if (w->state == W_WANT_META && (rc = etsim_et_writer_meta(w, NULL, err)) != 0) return rc;
  if (n->type < 0 || n->type >= ETSIM_ET_NODE_TYPE_COUNT)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: node id %llu: bad type %d", w->path,
                           (unsigned long long)n->id, n->type);
  if (!(w->flags & ETSIM_ET_WRITE_VERBATIM)) {
    rc = id_add(w, n->id);
    if (rc == 0)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: node id %llu written twice", w->path,
                             (unsigned long long)n->id);
    if (rc < 0) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", w->path);
    if ((rc = note_deps(w, n->data_deps, n->n_data_deps, err)) ||
        (rc = note_deps(w, n->ctrl_deps, n->n_ctrl_deps, err)))
      return rc;
  }
  for (size_t i = 0; i < n->n_attrs; i++)
    if (!etsim_et__wire_attr_ok(&n->attrs[i]))
      return etsim_error_set(err, ETSIM_EINVAL, "%s: node id %llu: attribute '%s' has bad kind %d",
                             w->path, (unsigned long long)n->id, n->attrs[i].name,
                             n->attrs[i].kind);
  size_t len = etsim_et__wire_node_size(n);
  if (len == 0)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: node %llu would be an empty message (id 0, no "
                           "fields), which Chakra's Python readers take for "
                           "end of file",
                           w->path, (unsigned long long)w->nodes);
  if (len > UINT32_MAX)
    return etsim_error_set(err, ETSIM_ERANGE, "%s: node %llu: message too large", w->path,
                           (unsigned long long)w->nodes);
  if ((rc = reserve(w, len + 10, err)) != 0) return rc;
  size_t h = etsim_et__wire_put_varint(w->buf + w->fill, len);
  size_t put = etsim_et__wire_encode_node(n, w->buf + w->fill + h);
  if (put != len)
    return etsim_error_set(err, ETSIM_EINTERNAL, "%s: node id %llu: encoder wrote %zu of %zu bytes",
                           w->path, (unsigned long long)n->id, put, len);
  w->fill += h + len;
  w->bytes += h + len;
  w->nodes++;
  return 0;
}

long etsim_et__pbc_pack_node(const etsim_et_node_t *n, etsim_arena_t *scratch, uint8_t **buf,
                             size_t *cap) {
  etsim_arena_reset(scratch);
  ChakraProtoMsg__Node m = CHAKRA_PROTO_MSG__NODE__INIT;
  ChakraProtoMsg__IOInfo in = CHAKRA_PROTO_MSG__IOINFO__INIT;
  ChakraProtoMsg__IOInfo out = CHAKRA_PROTO_MSG__IOINFO__INIT;
  m.id = n->id;
  m.name = (char *)(n->name ? n->name : "");
  m.type = (ChakraProtoMsg__NodeType)n->type;
  m.n_ctrl_deps = n->n_ctrl_deps;
  m.ctrl_deps = (uint64_t *)n->ctrl_deps;
  m.n_data_deps = n->n_data_deps;
  m.data_deps = (uint64_t *)n->data_deps;
  m.start_time_micros = n->start_time_micros;
  m.duration_micros = n->duration_micros;
  if (n->inputs) {
    in.values = (char *)n->inputs->values;
    in.shapes = (char *)n->inputs->shapes;
    in.types = (char *)n->inputs->types;
    m.inputs = &in;
  }
  if (n->outputs) {
    out.values = (char *)n->outputs->values;
    out.shapes = (char *)n->outputs->shapes;
    out.types = (char *)n->outputs->types;
    m.outputs = &out;
  }
  ChakraProtoMsg__AttributeProto **attrs =
      n->n_attrs ? etsim_arena_alloc(scratch, n->n_attrs * sizeof *attrs) : NULL;
  if (n->n_attrs && !attrs) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n->n_attrs; i++)
    if (!(attrs[i] = etsim_et__attr_to_proto(&n->attrs[i], scratch))) return ETSIM_EINVAL;
  m.n_attr = n->n_attrs;
  m.attr = attrs;
  size_t len = protobuf_c_message_get_packed_size(&m.base);
  if (etsim_grow((void **)buf, cap, len + 1, 1)) return ETSIM_ENOMEM;
  protobuf_c_message_pack(&m.base, *buf);
  return (long)len;
}

long etsim_et__pbc_pack_meta(const etsim_et_meta_t *meta, etsim_arena_t *scratch, uint8_t **buf,
                             size_t *cap) {
  etsim_arena_reset(scratch);
  ChakraProtoMsg__GlobalMetadata m = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
  m.version = (char *)(meta && meta->version ? meta->version : "");
  size_t na = meta ? meta->n_attrs : 0;
  ChakraProtoMsg__AttributeProto **attrs =
      na ? etsim_arena_alloc(scratch, na * sizeof *attrs) : NULL;
  if (na && !attrs) return ETSIM_ENOMEM;
  for (size_t i = 0; i < na; i++)
    if (!(attrs[i] = etsim_et__attr_to_proto(&meta->attrs[i], scratch))) return ETSIM_EINVAL;
  m.n_attr = na;
  m.attr = attrs;
  size_t len = protobuf_c_message_get_packed_size(&m.base);
  if (etsim_grow((void **)buf, cap, len + 1, 1)) return ETSIM_ENOMEM;
  protobuf_c_message_pack(&m.base, *buf);
  return (long)len;
}

/* Every referenced id must have been written by now. */
static int check_closure(etsim_et_writer_t *w, etsim_error_t *err) {
  size_t missing = 0;
  uint64_t example = 0;
  for (size_t i = 0; i < w->pending.cap; i++) {
    if (!w->pending.vals[i]) continue;
    if (!id_written(w, w->pending.keys[i])) {
      if (!missing) example = w->pending.keys[i];
      missing++;
    }
  }
  if (missing)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: %zu dependency id(s) name no node in the file "
                           "(e.g. %llu); refusing to write a dangling trace",
                           w->path, missing, (unsigned long long)example);
  return 0;
}

static void writer_free(etsim_et_writer_t *w) {
  etsim_u64map_free(&w->ids);
  etsim_u64map_free(&w->pending);
  etsim_free(w->buf);
  etsim_free(w->path);
  etsim_tmp_release(w->tmp_path);
  etsim_free(w);
}

int etsim_et_writer_commit(etsim_et_writer_t *w, etsim_error_t *err) {
  int rc = 0;
  if (w->state == W_WANT_META) rc = etsim_et_writer_meta(w, NULL, err);
  if (!rc && !(w->flags & ETSIM_ET_WRITE_VERBATIM)) rc = check_closure(w, err);
  if (!rc && w->state != W_FAILED) rc = flush_out(w, err);
  if (!rc && w->state == W_FAILED) rc = etsim_error_set(err, ETSIM_EIO, "%s: write error", w->path);
  /* Only a writer whose metadata and nodes all reached the file is renamed. */
  ETSIM_ASSERT(rc || (w->state == W_NODES && w->fill == 0));
  int close_bad = 0;
  if (w->gz) close_bad = gzclose(w->gz) != Z_OK;
  else if (w->fp == stdout) close_bad = fflush(stdout) != 0;
  else if (w->fp) close_bad = fclose(w->fp) != 0;
  w->gz = NULL;
  w->fp = NULL;
  if (!rc && close_bad)
    rc = etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", w->path, strerror(errno));
  if (w->tmp_path) {
    if (rc) remove(w->tmp_path);
    else if (rename(w->tmp_path, w->path) != 0) {
      rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot rename into place: %s", w->path,
                           strerror(errno));
      remove(w->tmp_path);
    }
  }
  writer_free(w);
  return rc;
}

void etsim_et_writer_abort(etsim_et_writer_t *w) {
  if (!w) return;
  if (w->gz) gzclose(w->gz);
  else if (w->fp && w->fp != stdout) fclose(w->fp);
  if (w->tmp_path) remove(w->tmp_path);
  writer_free(w);
}
