/*
 * reader.c — the streaming Chakra reader.
 *
 * Plain files are read with read() in 256 KiB blocks; gzip files (detected by
 * their magic bytes) and standard input go through zlib's gzread.  Offsets
 * are positions in the uncompressed stream.  Each node message is decoded by
 * the hand-written wire decoder (wire.c) into views whose strings live in
 * an arena reset before the next message; messages the fast path does not
 * take (unknown fields, unusual encodings, errors) are unpacked by
 * protobuf-c into the same arena, which keeps protobuf-c's semantics and the
 * strict checks.  Steady-state reading allocates nothing and memory is
 * bounded by the largest message.  Problems are reported with the file, the
 * byte offset of the message, the node's index and, when it can be
 * recovered, its id.
 */
#include "et_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The largest node message read: real nodes take kilobytes, and a length
 * prefix is the one number that decides an allocation before the bytes are
 * seen (a 1 GiB string in a 5 MB .et.gz cost 2.1 GB). */
#define MAX_MESSAGE_BYTES (64u << 20)
/* A gzip stream may expand at most this much past its first 4 MiB: traces
 * compress about 10:1, while a file of one repeated 3-byte node does 1000:1
 * and would decode to hundreds of millions of nodes. */
#define MAX_GZIP_RATIO 256
#define GZIP_RATIO_FREE (4u << 20)

struct etsim_et_reader {
  char *path;
  int fd;              /* plain input, or -1 */
  gzFile gz;           /* gzip input or standard input, or NULL */
  uint64_t file_bytes; /* size of a plain file; 0 when unknown */
  int slow;            /* protobuf-c for every node (tests) */
  unsigned flags;
  unsigned char *buf; /* buffered input: [pos, end) is unread */
  size_t cap, pos, end;
  int borrowed;        /* buf is the caller's (a file already in memory) */
  uint64_t buf_offset; /* stream offset of buf[0] */
  int eof;             /* gzread has returned 0 */
  uint64_t node_index; /* index of the next node */
  uint32_t last_len;
  ProtobufCAllocator alloc;
  etsim_arena_t arena; /* current message */
  etsim_arena_t meta_arena;
  ChakraProtoMsg__GlobalMetadata *meta_msg;
  etsim_et_meta_t meta;
  etsim_et_node_t view;
  etsim_ioinfo_t in, out;
  etsim_attr_t *attrs;
  size_t attrs_cap;
  et_wnode_t wn;
};

void etsim_et__reader_set_slow(etsim_et_reader_t *r, int slow) { r->slow = slow; }
void etsim_et__reader_count_node(etsim_et_reader_t *r) { r->node_index++; }

uint32_t etsim_et__reader_last_len(const etsim_et_reader_t *r) { return r->last_len; }
const etsim_et_meta_t *etsim_et_reader_meta(const etsim_et_reader_t *r) { return &r->meta; }
const char *etsim_et_reader_path(const etsim_et_reader_t *r) { return r->path; }
uint64_t etsim_et_reader_offset(const etsim_et_reader_t *r) { return r->buf_offset + r->pos; }

/* Make at least `need` bytes available at buf+pos unless the stream ends.
 * Returns bytes available, or a negative code on a read/gzip error. */
/* zlib's message without the "<fd:N>: " it prefixes for gzdopen'ed
 * streams (the path is already in our message, and the descriptor number
 * would make equal errors read differently). */
static const char *gz_message(gzFile gz, int *zerr) {
  const char *m = gzerror(gz, zerr);
  if (m && m[0] == '<') {
    const char *p = strstr(m, ">: ");
    if (p) return p + 3;
  }
  return m ? m : "";
}

static long fill(etsim_et_reader_t *r, size_t need, etsim_error_t *err) {
  while (r->end - r->pos < need && !r->eof) {
    if (r->pos > 0) {
      memmove(r->buf, r->buf + r->pos, r->end - r->pos);
      r->buf_offset += r->pos;
      r->end -= r->pos;
      r->pos = 0;
    }
    size_t want = need > r->cap ? need : r->cap;
    if (want > r->cap) {
      unsigned char *nb = etsim_realloc(r->buf, want);
      if (!nb) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
      r->buf = nb;
      r->cap = want;
    }
    size_t room = r->cap - r->end;
    if (room > (1u << 30)) room = 1u << 30;
    long n;
    if (!r->gz) {
      do n = (long)read(r->fd, r->buf + r->end, room);
      while (n < 0 && errno == EINTR);
      if (n < 0)
        return etsim_error_set(err, ETSIM_EIO, "%s: offset %llu: read error: %s", r->path,
                               (unsigned long long)(r->buf_offset + r->end), strerror(errno));
      if (n == 0) r->eof = 1;
      r->end += (size_t)n;
      continue;
    }
    n = gzread(r->gz, r->buf + r->end, (unsigned)room);
    uint64_t out_bytes = r->buf_offset + r->end + (n > 0 ? (uint64_t)n : 0);
    if (n > 0 && out_bytes > GZIP_RATIO_FREE) {
      z_off_t in = gzoffset(r->gz); /* -1 for a pipe: not checked */
      if (in > 0 && out_bytes / MAX_GZIP_RATIO > (uint64_t)in)
        return etsim_error_set(
            err, ETSIM_EFORMAT,
            "%s: offset %llu: the gzip stream expands more than %d:1 (%llu bytes "
            "from %lld): not a trace this tool reads",
            r->path, (unsigned long long)out_bytes, MAX_GZIP_RATIO, (unsigned long long)out_bytes,
            (long long)in);
    }
    if (n < 0) {
      int zerr;
      const char *m = gz_message(r->gz, &zerr);
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: gzip stream error: %s", r->path,
                             (unsigned long long)(r->buf_offset + r->end), m);
    }
    if (n == 0) {
      int zerr;
      const char *m = gz_message(r->gz, &zerr);
      if (zerr != Z_OK && zerr != Z_STREAM_END)
        return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: gzip stream error: %s",
                               r->path, (unsigned long long)(r->buf_offset + r->end), m);
      r->eof = 1;
    }
    r->end += (size_t)n;
  }
  return (long)(r->end - r->pos);
}

/* Read the varint length prefix.  1 ok, 0 clean EOF, <0 error. */
static int read_len(etsim_et_reader_t *r, uint32_t *len, etsim_error_t *err) {
  long avail = fill(r, 10, err);
  if (avail < 0) return (int)avail;
  if (avail == 0) return 0;
  uint64_t v = 0;
  uint64_t off = etsim_et_reader_offset(r);
  for (int i = 0; i < 10; i++) {
    if (i >= avail)
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: truncated length prefix",
                             r->path, (unsigned long long)off);
    unsigned char b = r->buf[r->pos + i];
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (v > MAX_MESSAGE_BYTES)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: offset %llu: message length %llu is beyond any valid node "
                               "(at most %u bytes are read)",
                               r->path, (unsigned long long)off, (unsigned long long)v,
                               MAX_MESSAGE_BYTES);
      /* A plain file says how much is left: no buffer for bytes it lacks. */
      if (r->file_bytes && off + (uint64_t)i + 1 + v > r->file_bytes)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: offset %llu: message of %llu bytes runs past the end of the "
                               "file (%llu bytes left)",
                               r->path, (unsigned long long)off, (unsigned long long)v,
                               (unsigned long long)(r->file_bytes - off - (uint64_t)i - 1));
      r->pos += (size_t)i + 1;
      *len = (uint32_t)v;
      return 1;
    }
  }
  return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: length varint longer than 10 bytes",
                         r->path, (unsigned long long)off);
}

/* Best effort: the id of a node whose message failed to decode (field 1 is
 * written first by every Chakra writer).  1 if found. */
static int peek_id(const unsigned char *p, size_t n, uint64_t *id) {
  if (n < 2 || p[0] != 0x08) return 0;
  uint64_t v = 0;
  for (size_t i = 1; i < n && i < 11; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * (i - 1));
    if (!(p[i] & 0x80)) {
      *id = v;
      return 1;
    }
  }
  return 0;
}

static size_t attrs_unknown(ChakraProtoMsg__AttributeProto **a, size_t n) {
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    u += a[i]->base.n_unknown_fields;
    if (etsim_attr_kind_is_list((int)a[i]->value_case) && a[i]->double_list)
      u += a[i]->double_list->base.n_unknown_fields;
  }
  return u;
}

/* Returns the unknown field's number, or 0 when there is none. */
static uint32_t first_unknown(const ProtobufCMessage *m) {
  return m->n_unknown_fields ? m->unknown_fields[0].tag : 0;
}

static int decode_error(etsim_et_reader_t *r, uint64_t off, const char *what,
                        const unsigned char *p, size_t n, etsim_error_t *err) {
  uint64_t id;
  if (peek_id(p, n, &id))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: node %llu (id %llu): %s", r->path,
                           (unsigned long long)off, (unsigned long long)r->node_index,
                           (unsigned long long)id, what);
  return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %llu: node %llu: %s", r->path,
                         (unsigned long long)off, (unsigned long long)r->node_index, what);
}

static int read_message(etsim_et_reader_t *r, const unsigned char **data, uint32_t *len,
                        uint64_t *off, etsim_error_t *err) {
  *off = etsim_et_reader_offset(r);
  int rc = read_len(r, len, err);
  if (rc <= 0) return rc;
  long avail = fill(r, *len, err);
  if (avail < 0) return (int)avail;
  if ((size_t)avail < *len)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: offset %llu: message of %u bytes runs past the end of the file "
                           "(%ld bytes left)",
                           r->path, (unsigned long long)*off, *len, avail);
  *data = r->buf + r->pos;
  r->pos += *len;
  return 1;
}

static int read_meta(etsim_et_reader_t *r, etsim_et_reader_t **out, etsim_error_t *err);

/* A reader with no input yet; arenas sized for a file of `bytes` (0:
 * unknown), since one per rank file is opened and a 72-byte file should
 * not cost 64 KiB of message arena. */
static etsim_et_reader_t *reader_new(const char *path, unsigned flags, uint64_t bytes) {
  etsim_et_reader_t *r = etsim_calloc(1, sizeof *r);
  if (!r) return NULL;
  r->fd = -1;
  r->path = etsim_strdup(path);
  r->flags = flags;
  size_t blk = bytes && bytes < 64 * 1024 ? (size_t)bytes + 1024 : 64 * 1024;
  etsim_arena_init(&r->arena, blk);
  etsim_arena_init(&r->meta_arena, blk < 4 * 1024 ? blk : 4 * 1024);
  etsim_et__arena_allocator(&r->alloc, &r->arena);
  if (!r->path) {
    etsim_free(r);
    return NULL;
  }
  return r;
}

int etsim_et__reader_open_mem(etsim_et_reader_t **out, const char *path, const uint8_t *data,
                              size_t len, unsigned flags, etsim_error_t *err) {
  etsim_et_reader_t *r = reader_new(path, flags, len);
  if (!r) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  r->buf = (unsigned char *)data;
  r->borrowed = 1;
  r->cap = r->end = len;
  r->eof = 1;
  r->file_bytes = len;
  int rc = read_meta(r, out, err);
  if (rc) etsim_et_reader_close(r);
  return rc;
}

int etsim_et_reader_open(etsim_et_reader_t **out, const char *path, unsigned flags,
                         etsim_error_t *err) {
  etsim_et_reader_t *r = reader_new(path, flags, 0);
  if (!r) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  int rc0 = etsim_input_check(path, err);
  if (rc0) {
    etsim_et_reader_close(r);
    return rc0;
  }
  errno = 0;
  if (strcmp(path, "-") == 0) {
    r->gz = gzdopen(0, "rb");
  } else {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char magic[2] = {0, 0};
    struct stat st;
    int open_errno = errno;
    ssize_t got = fd >= 0 ? pread(fd, magic, 2, 0) : -1;
    int seekable = !(fd >= 0 && got < 0 && errno == ESPIPE);
    errno = open_errno;
    /* Pipes cannot be peeked at: zlib reads them, gzip or plain alike. */
    if (fd >= 0 && (!seekable || (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b))) {
      if (!(r->gz = gzdopen(fd, "rb"))) close(fd);
    } else if (fd >= 0) {
      r->fd = fd;
      if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) r->file_bytes = (uint64_t)st.st_size;
#ifdef POSIX_FADV_SEQUENTIAL
      posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    }
  }
  if (!r->gz && r->fd < 0) {
    int e = errno;
    etsim_et_reader_close(r);
    return etsim_error_set(err, e == ENOENT ? ETSIM_ENOTFOUND : ETSIM_EIO, "%s: cannot open: %s",
                           path, e ? strerror(e) : "out of memory");
  }
  if (r->gz) gzbuffer(r->gz, 256 * 1024);
  /* L2-sized (it grows for bigger messages), or the whole of a small file:
   * a 256 KiB block is above malloc's mmap threshold, which would cost two
   * system calls and fresh pages per rank file. */
  r->cap = 256u << 10;
  if (!r->gz && r->file_bytes && r->file_bytes + 16 < r->cap) r->cap = (size_t)r->file_bytes + 16;
  if (!(r->buf = etsim_malloc(r->cap))) {
    etsim_et_reader_close(r);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  int rc = read_meta(r, out, err);
  if (rc) etsim_et_reader_close(r);
  return rc;
}

/* Read the GlobalMetadata; on failure the caller closes r (its path names
 * the file in the message). */
static int read_meta(etsim_et_reader_t *r, etsim_et_reader_t **out, etsim_error_t *err) {
  const char *path = r->path;
  unsigned flags = r->flags;

  const unsigned char *data = NULL;
  uint32_t len = 0;
  uint64_t off;
  int rc = read_message(r, &data, &len, &off, err);
  if (rc == 0)
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: offset 0: empty file (no GlobalMetadata)", path);
  if (rc < 0) {
    return rc;
  }
  ProtobufCAllocator ma;
  etsim_et__arena_allocator(&ma, &r->meta_arena);
  size_t failures = r->meta_arena.failures;
  r->meta_msg = chakra_proto_msg__global_metadata__unpack(&ma, len, data);
  if (!r->meta_msg) {
    if (r->meta_arena.failures != failures)
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: offset 0: GlobalMetadata does not decode",
                           path);
  }
  ChakraProtoMsg__GlobalMetadata *m = r->meta_msg;
  size_t unk = m->base.n_unknown_fields + attrs_unknown(m->attr, m->n_attr);
  if (unk && !(flags & ETSIM_ET_READ_SKIP_UNKNOWN)) {
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: offset 0: GlobalMetadata has %zu field(s) the "
                           "Chakra schema does not define",
                           path, unk);
  }
  etsim_attr_t *ma_attrs =
      m->n_attr ? etsim_arena_alloc(&r->meta_arena, m->n_attr * sizeof *ma_attrs) : NULL;
  if (m->n_attr && !ma_attrs) {
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  for (size_t i = 0; i < m->n_attr; i++) etsim_et__attr_from_proto(&ma_attrs[i], m->attr[i]);
  r->meta.version = m->version ? m->version : "";
  r->meta.n_attrs = m->n_attr;
  r->meta.attrs = ma_attrs;
  *out = r;
  return 0;
}

static const etsim_ioinfo_t *io_view(etsim_ioinfo_t *v, const ChakraProtoMsg__IOInfo *io) {
  if (!io) return NULL;
  v->values = io->values ? io->values : "";
  v->shapes = io->shapes ? io->shapes : "";
  v->types = io->types ? io->types : "";
  return v;
}

int etsim_et__reader_raw(etsim_et_reader_t *r, const uint8_t **data, uint32_t *len, uint64_t *off,
                         etsim_error_t *err) {
  etsim_arena_reset(&r->arena);
  int rc = read_message(r, data, len, off, err);
  /* A zero length is no node: Chakra's Python readers stop there, no writer
   * emits one, and each such byte would cost a whole node (a 1 MB .et.gz of
   * zeros was a billion nodes, 7 GB). */
  if (rc == 1 && *len == 0)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: offset %llu: node %llu: empty message (a zero length; Chakra's "
                           "Python readers take it for the end of the file)",
                           r->path, (unsigned long long)*off, (unsigned long long)r->node_index);
  if (rc == 1) r->last_len = *len;
  return rc; /* an error message already names file and offset */
}

int etsim_et__reader_slow(etsim_et_reader_t *r, const uint8_t *data, uint32_t len, uint64_t off,
                          const etsim_et_node_t **out, etsim_error_t *err) {
  etsim_arena_reset(&r->arena); /* drop what a bailing fast path left */
  size_t failures = r->arena.failures;
  ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack(&r->alloc, len, data);
  if (!n && r->arena.failures != failures)
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  if (!n) return decode_error(r, off, "message does not decode as a Chakra Node", data, len, err);
  if (!(r->flags & ETSIM_ET_READ_SKIP_UNKNOWN)) {
    uint32_t tag = first_unknown(&n->base);
    size_t unk = attrs_unknown(n->attr, n->n_attr);
    if (!tag && n->inputs) tag = first_unknown(&n->inputs->base);
    if (!tag && n->outputs) tag = first_unknown(&n->outputs->base);
    if (tag || unk) {
      char what[128];
      if (tag) snprintf(what, sizeof what, "unknown field %u (not in the Chakra schema)", tag);
      else snprintf(what, sizeof what, "attribute has a field not in the Chakra schema");
      return decode_error(r, off, what, data, len, err);
    }
  }
  if ((int)n->type < 0 || (int)n->type >= ETSIM_ET_NODE_TYPE_COUNT) {
    char what[96];
    snprintf(what, sizeof what, "unknown node type %d", (int)n->type);
    return decode_error(r, off, what, data, len, err);
  }
  if (etsim_grow((void **)&r->attrs, &r->attrs_cap, n->n_attr, sizeof *r->attrs))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  for (size_t i = 0; i < n->n_attr; i++) etsim_et__attr_from_proto(&r->attrs[i], n->attr[i]);
  etsim_et_node_t *v = &r->view;
  v->id = n->id;
  v->name = n->name ? n->name : "";
  v->type = (int)n->type;
  v->start_time_micros = n->start_time_micros;
  v->duration_micros = n->duration_micros;
  v->n_data_deps = n->n_data_deps;
  v->data_deps = n->data_deps;
  v->n_ctrl_deps = n->n_ctrl_deps;
  v->ctrl_deps = n->ctrl_deps;
  v->inputs = io_view(&r->in, n->inputs);
  v->outputs = io_view(&r->out, n->outputs);
  v->n_attrs = n->n_attr;
  v->attrs = r->attrs;
  *out = v;
  return 0;
}

int etsim_et_reader_next(etsim_et_reader_t *r, const etsim_et_node_t **out, etsim_error_t *err) {
  const uint8_t *data;
  uint32_t len;
  uint64_t off;
  int rc = etsim_et__reader_raw(r, &data, &len, &off, err);
  if (rc <= 0) return rc;
  if (!r->slow && (rc = etsim_et__wire_node(data, len, &r->wn)) == 0) {
    etsim_ioinfo_t io[2];
    rc = etsim_et__wire_view(&r->wn, &r->arena, &r->view, io, &r->attrs, &r->attrs_cap);
    if (rc == 0) {
      r->in = io[0];
      r->out = io[1];
      if (r->view.inputs) r->view.inputs = &r->in;
      if (r->view.outputs) r->view.outputs = &r->out;
      r->node_index++;
      *out = &r->view;
      return 1;
    }
  }
  if (rc == ETSIM_ENOMEM) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", r->path);
  if ((rc = etsim_et__reader_slow(r, data, len, off, out, err)) != 0) return rc;
  r->node_index++;
  return 1;
}

size_t etsim_et__reader_estimate_nodes(const etsim_et_reader_t *r) {
  /* Average message size over what is buffered, extrapolated. */
  size_t p = r->pos, msgs = 0;
  while (p < r->end) {
    uint64_t v = 0;
    size_t i = 0;
    while (p + i < r->end && i < 10 && (r->buf[p + i] & 0x80))
      v |= (uint64_t)(r->buf[p + i] & 0x7f) << (7 * i), i++;
    if (p + i >= r->end || i >= 10) break;
    v |= (uint64_t)r->buf[p + i] << (7 * i);
    if (v > r->end - p - i - 1) break;
    p += i + 1 + v;
    msgs++;
  }
  if (!msgs) return 0;
  if (!r->file_bytes || r->eof) return r->eof ? msgs : 4 * msgs;
  double avg = (double)(p - r->pos) / (double)msgs;
  double left = (double)(r->file_bytes - (r->buf_offset + r->pos));
  /* A start of tiny messages must not make arrays for billions of nodes:
   * real nodes take well over 8 bytes, and arrays still grow if needed. */
  if (avg < 8) avg = 8;
  return (size_t)(left / avg * 1.05) + 16;
}

uint64_t etsim_et__reader_file_bytes(const etsim_et_reader_t *r) {
  return r->gz ? 0 : r->file_bytes;
}

void etsim_et_reader_close(etsim_et_reader_t *r) {
  if (!r) return;
  if (r->gz) gzclose(r->gz);
  else if (r->fd >= 0) close(r->fd);
  etsim_free(r->wn.attrs);
  etsim_arena_free(&r->arena);
  etsim_arena_free(&r->meta_arena);
  etsim_free(r->attrs);
  if (!r->borrowed) etsim_free(r->buf);
  etsim_free(r->path);
  etsim_free(r);
}
