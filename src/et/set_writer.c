/*
 * set_writer.c — writing a rank set built in memory: per-rank files, or one
 * file per class of identical ranks plus a `<prefix>.manifest.json`
 * (docs/traces.md).  The generators and the text converter use it.
 *
 * Each rank's whole encoded trace is handed over as bytes.  In manifest
 * mode a rank whose bytes equal an earlier rank's joins that rank's class
 * instead of getting a file; equality is decided on the length and two
 * independent 64-bit hashes of the bytes (so the set never holds more than
 * one rank's bytes at a time; two different traces would have to collide
 * on 128 bits to be merged).  Every file goes to a temporary name first
 * and all are renamed into place by etsim_et_set_writer_commit, so a failed
 * run leaves nothing behind.
 */
#include "etsim/et.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  uint64_t h2;
  size_t len;
} class_t;

struct etsim_et_set_writer {
  char *prefix;
  int format;
  size_t n_ranks;
  uint32_t *rank_file;  /* rank -> file index, UINT32_MAX while unset */
  char **paths, **tmps; /* per file */
  size_t n_files, cap_files, cap_tmps;
  class_t *classes; /* per file (manifest mode) */
  size_t cap_classes;
  etsim_u64map_t by_hash; /* first hash -> file index */
  uint64_t bytes;
  FILE *stream; /* open rank file of the streaming form */
};

/* Two hashes over 8-byte words (murmur-style mixing), fast enough to be
 * lost in the cost of writing the bytes. */
static void hash2(const uint8_t *p, size_t n, uint64_t *a, uint64_t *b) {
  uint64_t h1 = 0x9e3779b97f4a7c15ULL ^ n, h2 = 0xc2b2ae3d27d4eb4fULL + n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h1 = (h1 ^ etsim_hash_u64(w)) * 0x87c37b91114253d5ULL;
    h2 = (h2 + w) * 0x4cf5ad432745937fULL;
    h2 ^= h2 >> 29;
  }
  uint64_t w = 0;
  memcpy(&w, p + i, n - i);
  h1 = etsim_hash_u64(h1 ^ etsim_hash_u64(w + 1));
  h2 = etsim_hash_u64(h2 ^ (w * 0x9e3779b97f4a7c15ULL));
  *a = h1;
  *b = h2;
}

int etsim_et_set_writer_open(etsim_et_set_writer_t **out, const char *prefix, size_t n_ranks,
                             int format, etsim_error_t *err) {
  if (n_ranks == 0 || n_ranks >= UINT32_MAX)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: bad rank count %zu", prefix, n_ranks);
  etsim_et_set_writer_t *s = etsim_calloc(1, sizeof *s);
  if (!s) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  s->prefix = etsim_strdup(prefix);
  s->format = format;
  s->n_ranks = n_ranks;
  s->rank_file = etsim_malloc(n_ranks * sizeof *s->rank_file);
  etsim_u64map_init(&s->by_hash);
  if (!s->prefix || !s->rank_file) {
    etsim_et_set_writer_abort(s);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  memset(s->rank_file, 0xff, n_ranks * sizeof *s->rank_file);
  *out = s;
  return 0;
}

/* Register a new file and open its temporary name. */
static int open_file(etsim_et_set_writer_t *s, const char *path, FILE **out, etsim_error_t *err) {
  size_t k = s->n_files;
  if (etsim_grow((void **)&s->paths, &s->cap_files, k + 1, sizeof *s->paths))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (etsim_grow((void **)&s->tmps, &s->cap_tmps, k + 1, sizeof *s->tmps))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  char *dup = etsim_strdup(path);
  if (!dup) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  char *tmp;
  int rc = etsim_tmp_name(path, &tmp, err);
  if (rc) {
    etsim_free(dup);
    return rc;
  }
  s->paths[k] = dup;
  s->tmps[k] = tmp;
  s->n_files++;
  FILE *fp = fopen(tmp, "wb");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: cannot create: %s", path, strerror(errno));
  *out = fp;
  return 0;
}

static int write_file(etsim_et_set_writer_t *s, const char *path, const uint8_t *p, size_t n,
                      etsim_error_t *err) {
  FILE *fp = NULL;
  int rc = open_file(s, path, &fp, err);
  if (rc) return rc;
  size_t put = fwrite(p, 1, n, fp);
  int bad = put != n;
  if (fclose(fp) != 0) bad = 1;
  if (bad) return etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", path, strerror(errno));
  s->bytes += n;
  return 0;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

int etsim_et_set_writer_rank(etsim_et_set_writer_t *s, size_t rank, const uint8_t *data, size_t len,
                             etsim_error_t *err) {
  if (rank >= s->n_ranks || s->rank_file[rank] != UINT32_MAX)
    return etsim_error_set(err, ETSIM_EINTERNAL, "%s: rank %zu given twice or out of range",
                           s->prefix, rank);
  char path[4096];
  if (s->format == ETSIM_ET_OUT_RANK_FILES) {
    snprintf(path, sizeof path, "%s.%zu.et", s->prefix, rank);
    s->rank_file[rank] = (uint32_t)s->n_files;
    return write_file(s, path, data, len, err);
  }
  uint64_t h1, h2;
  hash2(data, len, &h1, &h2);
  uint32_t f;
  if (etsim_u64map_get(&s->by_hash, h1, &f) && s->classes[f].len == len && s->classes[f].h2 == h2) {
    s->rank_file[rank] = f;
    return 0;
  }
  f = (uint32_t)s->n_files;
  if (etsim_grow((void **)&s->classes, &s->cap_classes, f + 1, sizeof *s->classes))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  s->classes[f].h2 = h2;
  s->classes[f].len = len;
  if (etsim_u64map_put(&s->by_hash, h1, f, NULL) < 0)
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  s->rank_file[rank] = f;
  snprintf(path, sizeof path, "%s.c%u.et", s->prefix, f);
  return write_file(s, path, data, len, err);
}

int etsim_et_set_writer_begin_rank(etsim_et_set_writer_t *s, size_t rank, etsim_error_t *err) {
  if (s->stream || rank >= s->n_ranks || s->rank_file[rank] != UINT32_MAX)
    return etsim_error_set(err, ETSIM_EINTERNAL, "%s: rank %zu given twice or out of range",
                           s->prefix, rank);
  char path[4096];
  if (s->format == ETSIM_ET_OUT_RANK_FILES)
    snprintf(path, sizeof path, "%s.%zu.et", s->prefix, rank);
  else snprintf(path, sizeof path, "%s.c%zu.et", s->prefix, s->n_files);
  uint32_t f = (uint32_t)s->n_files;
  /* Streamed classes are never matched by content. */
  if (etsim_grow((void **)&s->classes, &s->cap_classes, f + 1, sizeof *s->classes))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  s->classes[f].len = SIZE_MAX;
  s->classes[f].h2 = 0;
  s->rank_file[rank] = f;
  return open_file(s, path, &s->stream, err);
}

int etsim_et_set_writer_write(etsim_et_set_writer_t *s, const uint8_t *data, size_t len,
                              etsim_error_t *err) {
  if (!s->stream) return etsim_error_set(err, ETSIM_EINTERNAL, "%s: no rank begun", s->prefix);
  if (fwrite(data, 1, len, s->stream) != len)
    return etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", s->paths[s->n_files - 1],
                           strerror(errno));
  s->bytes += len;
  return 0;
}

int etsim_et_set_writer_end_rank(etsim_et_set_writer_t *s, etsim_error_t *err) {
  if (!s->stream) return etsim_error_set(err, ETSIM_EINTERNAL, "%s: no rank begun", s->prefix);
  int bad = ferror(s->stream) != 0;
  if (fclose(s->stream) != 0) bad = 1;
  s->stream = NULL;
  if (bad)
    return etsim_error_set(err, ETSIM_EIO, "%s: write error: %s", s->paths[s->n_files - 1],
                           strerror(errno));
  return 0;
}

int etsim_et_set_writer_rank_like(etsim_et_set_writer_t *s, size_t rank, size_t like,
                                  const uint8_t *data, size_t len, etsim_error_t *err) {
  if (s->format == ETSIM_ET_OUT_RANK_FILES || like >= s->n_ranks ||
      s->rank_file[like] == UINT32_MAX)
    return etsim_et_set_writer_rank(s, rank, data, len, err);
  if (rank >= s->n_ranks || s->rank_file[rank] != UINT32_MAX)
    return etsim_error_set(err, ETSIM_EINTERNAL, "%s: rank %zu given twice or out of range",
                           s->prefix, rank);
  s->rank_file[rank] = s->rank_file[like];
  return 0;
}

int etsim_et_comm_groups_path(const char *name, int strip_et, char **out, etsim_error_t *err) {
  static const char ext[] = ".comm_group.json";
  size_t n = strlen(name);
  if (strip_et && n > 6 && strcmp(name + n - 6, ".et.gz") == 0) n -= 6;
  else if (strip_et && n > 3 && strcmp(name + n - 3, ".et") == 0) n -= 3;
  char *p = etsim_malloc(n + sizeof ext);
  if (!p) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  memcpy(p, name, n);
  memcpy(p + n, ext, sizeof ext);
  *out = p;
  return 0;
}

int etsim_et_comm_groups_write(const char *path, size_t n_groups, uint32_t first_id,
                               const size_t *off, const uint32_t *ranks, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *fp = o.fp;
  fputc('{', fp);
  for (size_t g = 0; g < n_groups; g++) {
    fprintf(fp, "%s\n  \"%lu\": [", g ? "," : "", (unsigned long)(first_id + g));
    for (size_t k = off[g]; k < off[g + 1]; k++)
      fprintf(fp, "%s%u", k > off[g] ? ", " : "", ranks[k]);
    fputc(']', fp);
  }
  fputs("\n}\n", fp);
  return etsim_outfile_commit(&o, err);
}

/* Rename every temporary file into place, in order; *renamed counts those
 * moved (their temporary names are gone). */
static int rename_all(etsim_et_set_writer_t *s, size_t *renamed, etsim_error_t *err) {
  for (size_t f = 0; f < s->n_files; f++, (*renamed)++)
    if (rename(s->tmps[f], s->paths[f]) != 0)
      return etsim_error_set(err, ETSIM_EIO, "%s: cannot rename into place: %s", s->paths[f],
                             strerror(errno));
  return 0;
}

int etsim_et_set_writer_commit(etsim_et_set_writer_t *s, etsim_error_t *err) {
  int rc = 0;
  size_t renamed = 0;
  if (s->stream) {
    rc = etsim_error_set(err, ETSIM_EINTERNAL, "%s: a rank is still open", s->prefix);
    goto fail;
  }
  for (size_t r = 0; r < s->n_ranks; r++)
    if (s->rank_file[r] == UINT32_MAX) {
      rc = etsim_error_set(err, ETSIM_EINTERNAL, "%s: rank %zu was not written", s->prefix, r);
      goto fail;
    }
  char mpath[4096];
  snprintf(mpath, sizeof mpath, "%s.manifest.json", s->prefix);
  if (s->format == ETSIM_ET_OUT_MANIFEST) {
    const char **names = etsim_malloc((s->n_files ? s->n_files : 1) * sizeof *names);
    if (!names) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto fail;
    }
    for (size_t f = 0; f < s->n_files; f++) names[f] = base_name(s->paths[f]);
    /* The manifest goes in last of the writes and first of the renames
     * would be wrong: a reader would see it before the class files.  So
     * class files are renamed first, then the manifest is written. */
    rc = rename_all(s, &renamed, err);
    if (!rc)
      rc = etsim_et_manifest_write(s->prefix, s->n_ranks, names, s->n_files, s->rank_file, err);
    etsim_free(names);
    if (rc) goto fail_renamed;
  } else {
    if ((rc = rename_all(s, &renamed, err))) goto fail_renamed;
    /* A manifest left by an earlier run would shadow the new files, and
     * ranks beyond this set's, left by a larger earlier run, would join it
     * (a prefix is read as ranks 0, 1, ... up to the first missing one). */
    remove(mpath);
    char stale[4096];
    for (size_t r = s->n_ranks;; r++) {
      snprintf(stale, sizeof stale, "%s.%zu.et", s->prefix, r);
      int gone = remove(stale) != 0;
      snprintf(stale, sizeof stale, "%s.%zu.et.gz", s->prefix, r);
      if (remove(stale) != 0 && gone) break;
    }
  }
  for (size_t f = 0; f < s->n_files; f++) {
    etsim_tmp_release(s->tmps[f]);
    s->tmps[f] = NULL;
  }
  etsim_et_set_writer_abort(s);
  return 0;
fail_renamed:
  /* Only the files already moved into place are ours to take back; the
   * final names not reached yet may hold an earlier run's files. */
  for (size_t f = 0; f < renamed; f++) remove(s->paths[f]);
fail:
  etsim_et_set_writer_abort(s);
  return rc;
}

size_t etsim_et_set_writer_n_files(const etsim_et_set_writer_t *s) { return s->n_files; }
uint64_t etsim_et_set_writer_bytes(const etsim_et_set_writer_t *s) { return s->bytes; }

void etsim_et_set_writer_abort(etsim_et_set_writer_t *s) {
  if (!s) return;
  if (s->stream) fclose(s->stream);
  for (size_t f = 0; f < s->n_files; f++) {
    if (s->tmps[f]) {
      remove(s->tmps[f]);
      etsim_tmp_release(s->tmps[f]);
    }
    etsim_free(s->paths[f]);
  }
  etsim_free(s->paths);
  etsim_free(s->tmps);
  etsim_free(s->classes);
  etsim_u64map_free(&s->by_hash);
  etsim_free(s->rank_file);
  etsim_free(s->prefix);
  etsim_free(s);
}
