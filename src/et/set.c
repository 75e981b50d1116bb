/*
 * set.c — rank sets: one trace per rank, `<prefix>.<r>.et`, or a manifest
 * `<prefix>.manifest.json` that lets many ranks share one file:
 *
 *   {"etsim_trace_set": 1, "npus": 16,
 *    "classes": [{"file": "llm.c0.et", "ranks": "0-7"},
 *                {"file": "llm.c1.et", "ranks": "8-15"}]}
 *
 * File names are relative to the manifest's folder; every rank in
 * [0, npus) must be covered exactly once.  Each distinct file is parsed
 * once, however many ranks read it.
 */
#include "et_int.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

void etsim_et_free_paths(char **paths, size_t n) {
  if (!paths) return;
  for (size_t i = 0; i < n; i++) etsim_free(paths[i]);
  etsim_free(paths);
}

static char *join_dir(const char *manifest, const char *file) {
  if (file[0] == '/') return etsim_strdup(file);
  const char *slash = strrchr(manifest, '/');
  size_t dl = slash ? (size_t)(slash - manifest + 1) : 0;
  size_t n = dl + strlen(file) + 1;
  char *p = etsim_malloc(n);
  if (p) {
    memcpy(p, manifest, dl);
    strcpy(p + dl, file);
  }
  return p;
}

/* Parse "0-7,16,20-23" marking ranks in rank_file; errors name the class. */
static int parse_ranks(const char *s, uint32_t file, uint32_t *rank_file, size_t npus,
                       const char *mpath, size_t cls, etsim_error_t *err) {
  const char *p = s;
  while (*p) {
    char *end;
    errno = 0;
    /* Digits only: strtoul takes "-1" as ULONG_MAX ("rank
     * 18446744073709551615 is outside 0..3") and skips spaces. */
    if (*p < '0' || *p > '9') goto bad;
    unsigned long a = strtoul(p, &end, 10), b = a;
    if (end == p || errno) goto bad;
    p = end;
    if (*p == '-') {
      if (p[1] < '0' || p[1] > '9') goto bad;
      b = strtoul(p + 1, &end, 10);
      if (end == p + 1 || errno || b < a) goto bad;
      p = end;
    }
    if (b >= npus)
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: classes[%zu].ranks: rank %lu is outside "
                             "0..%zu",
                             mpath, cls, b, npus - 1);
    for (unsigned long r = a; r <= b; r++) {
      if (rank_file[r] != UINT32_MAX)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: classes[%zu].ranks: rank %lu is listed "
                               "twice",
                               mpath, cls, r);
      rank_file[r] = file;
    }
    if (*p == ',') p++;
    else if (*p) goto bad;
  }
  return 0;
bad:
  return etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: classes[%zu].ranks: '%s' is not a list of ranks "
                         "like \"0-7,16\"",
                         mpath, cls, s);
}

static int read_manifest(const char *mpath, char ***out_paths, size_t *out_np, uint32_t **out_rf,
                         size_t *out_nr, etsim_error_t *err) {
  json_t *root;
  int rc0 = etsim_json_load(mpath, 0, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  char **paths = NULL;
  uint32_t *rf = NULL;
  size_t np = 0;
  /* Classes that name the same file share one entry, so the file is parsed
   * once (200,000 classes naming one file were 200,000 loads, 9.8 GB). */
  etsim_u64map_t by_name;
  etsim_u64map_init(&by_name);
  json_t *npus = json_object_get(root, "npus");
  json_t *classes = json_object_get(root, "classes");
  if (!json_is_object(root) || !json_is_integer(npus) || json_integer_value(npus) <= 0 ||
      !json_is_array(classes)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: a trace-set manifest needs \"npus\" (a positive "
                         "integer) and \"classes\" (an array)",
                         mpath);
    goto done;
  }
  if (json_integer_value(npus) > (json_int_t)ETSIM_ET_MAX_RANKS) {
    rc = etsim_error_set(err, ETSIM_ERANGE,
                         "%s: \"npus\" %lld is more than the %zu ranks a set may have", mpath,
                         (long long)json_integer_value(npus), ETSIM_ET_MAX_RANKS);
    goto done;
  }
  size_t n = (size_t)json_integer_value(npus);
  size_t nc = json_array_size(classes);
  rf = etsim_malloc(n * sizeof *rf);
  paths = etsim_calloc(nc ? nc : 1, sizeof *paths);
  if (!rf || !paths) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", mpath);
    goto done;
  }
  memset(rf, 0xff, n * sizeof *rf);
  for (size_t c = 0; c < nc; c++) {
    json_t *cl = json_array_get(classes, c);
    json_t *file = json_object_get(cl, "file");
    json_t *ranks = json_object_get(cl, "ranks");
    if (!json_is_string(file) || !json_is_string(ranks)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: classes[%zu] needs string keys \"file\" and "
                           "\"ranks\"",
                           mpath, c);
      goto done;
    }
    if (!json_string_value(ranks)[0]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: classes[%zu].ranks is empty", mpath, c);
      goto done;
    }
    if (!(paths[np] = join_dir(mpath, json_string_value(file)))) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", mpath);
      goto done;
    }
    uint32_t f = (uint32_t)np, seen;
    uint64_t h = etsim_hash_bytes(paths[np], strlen(paths[np]));
    if (etsim_u64map_get(&by_name, h, &seen) && strcmp(paths[seen], paths[np]) == 0) {
      etsim_free(paths[np]);
      paths[np] = NULL;
      f = seen;
    } else if (etsim_u64map_put(&by_name, h, (uint32_t)np, NULL) < 0) {
      etsim_free(paths[np]);
      paths[np] = NULL;
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", mpath);
      goto done;
    } else {
      np++;
    }
    if ((rc = parse_ranks(json_string_value(ranks), f, rf, n, mpath, c, err))) goto done;
  }
  for (size_t r = 0; r < n; r++)
    if (rf[r] == UINT32_MAX) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: rank %zu is in no class (npus is %zu)", mpath,
                           r, n);
      goto done;
    }
  *out_paths = paths;
  *out_np = np;
  *out_rf = rf;
  *out_nr = n;
  paths = NULL;
  rf = NULL;
done:
  etsim_u64map_free(&by_name);
  etsim_et_free_paths(paths, np);
  etsim_free(rf);
  json_decref(root);
  return rc;
}

/* The lowest rank r >= from with a file NAME.<r>.et or NAME.<r>.et.gz in
 * NAME's folder (a listing, for messages only), or SIZE_MAX; its file name
 * goes to buf. */
static size_t rank_file_after(const char *name, size_t from, char *buf, size_t cap) {
  const char *slash = strrchr(name, '/');
  char dir[4096];
  size_t dl = slash ? (size_t)(slash - name) : 0;
  if (dl >= sizeof dir) return SIZE_MAX;
  if (slash) {
    memcpy(dir, name, dl);
    dir[dl] = '\0';
    if (!dl) strcpy(dir, "/");
  } else {
    strcpy(dir, ".");
  }
  const char *base = slash ? slash + 1 : name;
  size_t bl = strlen(base), best = SIZE_MAX;
  DIR *d = opendir(dir);
  if (!d) return SIZE_MAX;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *s = e->d_name;
    if (strncmp(s, base, bl) != 0 || s[bl] != '.' || s[bl + 1] < '0' || s[bl + 1] > '9') continue;
    char *end;
    errno = 0;
    unsigned long long r = strtoull(s + bl + 1, &end, 10);
    if (errno || (strcmp(end, ".et") != 0 && strcmp(end, ".et.gz") != 0)) continue;
    if (r >= from && r < best) {
      best = (size_t)r;
      snprintf(buf, cap, "%s%s%s", slash ? dir : "", slash && dl ? "/" : "", s);
    }
  }
  closedir(d);
  return best;
}

int etsim_et_set_resolve(const char *name, char ***out_paths, size_t *out_n_paths,
                         uint32_t **out_rank_file, size_t *out_n_ranks, etsim_error_t *err) {
  size_t len = strlen(name) + 64;
  char *buf = etsim_malloc(len);
  if (!buf) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int rc = 0;
  char **paths = NULL;
  uint32_t *rf = NULL;
  size_t n = 0, cap = 0, rcap = 0;
  if (strcmp(name, "-") == 0 || is_file(name)) { /* "-": one trace on standard input */
    paths = etsim_malloc(sizeof *paths);
    rf = etsim_malloc(sizeof *rf);
    if (!paths || !rf || !(paths[0] = etsim_strdup(name))) goto oom;
    rf[0] = 0;
    n = 1;
    goto ok_n;
  }
  snprintf(buf, len, "%s.manifest.json", name);
  if (is_file(buf)) {
    rc = read_manifest(buf, out_paths, out_n_paths, out_rank_file, out_n_ranks, err);
    etsim_free(buf);
    return rc;
  }
  for (;; n++) {
    snprintf(buf, len, "%s.%zu.et", name, n);
    if (!is_file(buf)) {
      snprintf(buf, len, "%s.%zu.et.gz", name, n);
      if (!is_file(buf)) break;
    }
    if (n == ETSIM_ET_MAX_RANKS) {
      rc = etsim_error_set(err, ETSIM_ERANGE, "%s: more than %zu rank files", name,
                           ETSIM_ET_MAX_RANKS);
      goto fail;
    }
    if (etsim_grow((void **)&paths, &cap, n + 1, sizeof *paths) ||
        etsim_grow((void **)&rf, &rcap, n + 1, sizeof *rf) || !(paths[n] = etsim_strdup(buf)))
      goto oom;
    rf[n] = (uint32_t)n;
  }
  struct stat st;
  if (n == 0 && stat(name, &st) == 0 && S_ISDIR(st.st_mode)) {
    rc = etsim_error_set(err, ETSIM_EIO,
                         "%s: is a folder, not a trace file or a prefix (no %s.0.et or "
                         "%s.manifest.json)",
                         name, name, name);
    goto fail;
  }
  char later[4400];
  size_t r_later = rank_file_after(name, n + 1, later, sizeof later);
  if (n == 0 && r_later != SIZE_MAX) {
    /* convert --from pytorch -o f/resnet of rank 1 writes f/resnet.1.et. */
    rc = etsim_error_set(err, ETSIM_ENOTFOUND,
                         "%s: no %s.0.et or %s.manifest.json, but %s: a rank set starts at "
                         "rank 0 (name the file to use it alone)",
                         name, name, name, later);
    goto fail;
  }
  if (n == 0) {
    rc = etsim_error_set(err, ETSIM_ENOTFOUND,
                         "%s: no such file, and no %s.0.et or "
                         "%s.manifest.json",
                         name, name, name);
    goto fail;
  }
  if (r_later != SIZE_MAX)
    etsim_warn("%s: %s is left out: rank %zu has no file, so the set is ranks 0 to %zu", name,
               later, n, n - 1);
ok_n:
  *out_paths = paths;
  *out_n_paths = n;
  *out_rank_file = rf;
  *out_n_ranks = n;
  etsim_free(buf);
  return 0;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", name);
fail:
  etsim_et_free_paths(paths, n);
  etsim_free(rf);
  etsim_free(buf);
  return rc;
}

/* ------------------------------------------------------ content sharing */

/* Files up to this size are read whole, hashed and compared; bigger ones
 * (and gzip files) are loaded each on their own. */
#define SHARE_MAX_BYTES (256u << 20)
/* Small distinct files are kept in memory for comparisons (up to a total);
 * bigger ones are read again when a later file has the same hash, which
 * costs a read from the page cache but no memory while loading. */
#define SHARE_KEEP_FILE (4u << 10)
#define SHARE_KEEP_BYTES (8u << 20)

typedef struct share {
  etsim_u64map_t by_hash; /* content hash -> first file with it */
  uint32_t *next;         /* per file: next file with the same hash, or UINT32_MAX */
  uint64_t *size;         /* per file: its size (when read whole) */
  uint8_t **kept;         /* per file: its bytes, or NULL (re-read to compare) */
  size_t kept_bytes;
  uint8_t *buf, *buf2;
  size_t buf_cap, buf2_cap;
  /* up to labels: shape hash -> first trace with it, chained per trace */
  etsim_u64map_t by_shape;
  uint32_t *shape_next;
  et_labels_t *tl; /* per trace: its labels (attr_slot moves to the set) */
  size_t label_cap;
} share_t;

static void share_free(share_t *sh, const etsim_et_set_t *s) {
  etsim_u64map_free(&sh->by_hash);
  etsim_u64map_free(&sh->by_shape);
  for (size_t k = 0; sh->kept && k < s->n_files; k++) etsim_free(sh->kept[k]);
  for (size_t k = 0; sh->tl && k < s->n_traces; k++) {
    if (s->attr_label && sh->tl[k].attr_slot == s->attr_label[k]) sh->tl[k].attr_slot = NULL;
    etsim_et__labels_free(&sh->tl[k]);
  }
  etsim_free(sh->tl);
  etsim_free(sh->shape_next);
  etsim_free(sh->kept);
  etsim_free(sh->next);
  etsim_free(sh->size);
  etsim_free(sh->buf);
  etsim_free(sh->buf2);
}

/* Read a plain file whole into *buf (grown as needed): 1 with *len, 0 when
 * it is not a plain file of at most SHARE_MAX_BYTES (gzip, a pipe, too
 * big), or a negative code naming the file. */
static int read_whole(const char *path, uint8_t **buf, size_t *cap, size_t *len,
                      etsim_error_t *err) {
  /* Checked as an input like every file the reader opens (the output guard
   * must know it), by the one stat that also tells whether it is a plain
   * file: opening a FIFO here would block before the reader could take it
   * as a stream.  fstat after opening sees the file actually read. */
  struct stat st;
  if (strcmp(path, "-") == 0) return 0; /* standard input: the reader's */
  int rc0 = etsim_input_stat(path, &st, err);
  if (rc0) return rc0;
  if (!S_ISREG(st.st_mode)) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return etsim_error_set(err, e == ENOENT ? ETSIM_ENOTFOUND : ETSIM_EIO, "%s: cannot open: %s",
                           path, strerror(e));
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SHARE_MAX_BYTES) {
    close(fd);
    return 0;
  }
  size_t n = (size_t)st.st_size;
  if (n + 1 > *cap) {
    size_t c = *cap;
    if (etsim_grow((void **)buf, &c, n + 1, 1)) {
      close(fd);
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    }
    *cap = c;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, *buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      int e = k < 0 ? errno : EIO;
      close(fd);
      return etsim_error_set(err, ETSIM_EIO, "%s: read error: %s", path, strerror(e));
    }
    got += (size_t)k;
  }
  close(fd);
  if (n >= 2 && (*buf)[0] == 0x1f && (*buf)[1] == 0x8b) return 0; /* gzip: the reader's job */
  *len = n;
  return 1;
}

/* Whether file f holds exactly data[0..len). */
static int same_bytes(share_t *sh, const etsim_et_set_t *s, uint32_t f, const uint8_t *data,
                      size_t len, etsim_error_t *err) {
  if (sh->size[f] != len) return 0;
  if (sh->kept[f]) return memcmp(sh->kept[f], data, len) == 0;
  size_t n2;
  int rc = read_whole(s->files[f], &sh->buf2, &sh->buf2_cap, &n2, err);
  if (rc <= 0) return rc; /* changed under us: not shared */
  return n2 == len && memcmp(sh->buf2, data, len) == 0;
}

/* Append label values for file f (n values). */
static int add_labels(etsim_et_set_t *s, share_t *sh, size_t f, const etsim_et_label_t *v,
                      uint32_t n, size_t *n_labels) {
  if (*n_labels + n > sh->label_cap &&
      etsim_grow((void **)&s->labels, &sh->label_cap, *n_labels + n, sizeof *s->labels))
    return ETSIM_ENOMEM;
  s->label_off[f] = *n_labels;
  if (n) memcpy(s->labels + *n_labels, v, n * sizeof *v);
  *n_labels += n;
  return 0;
}

/* A freshly loaded trace t of file f: share an earlier trace of the same
 * shape (then t is freed and f gets only its label values), or become a
 * new distinct trace.  *k is the trace file f reads. */
static int place_by_shape(etsim_et_set_t *s, share_t *sh, size_t f, etsim_et_trace_t *t,
                          size_t *n_labels, uint32_t *k, etsim_error_t *err) {
  et_labels_t l;
  if (etsim_et__labels_extract(t, s->label_strs, &l)) {
    etsim_et_trace_free(t);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", s->files[f]);
  }
  uint32_t c;
  if (etsim_u64map_get(&sh->by_shape, l.shape_hash, &c))
    for (; c != UINT32_MAX; c = sh->shape_next[c])
      if (etsim_et__same_shape(s->traces[c], &sh->tl[c], t, &l)) {
        int rc = add_labels(s, sh, f, l.vals, l.n, n_labels);
        etsim_et__labels_free(&l);
        etsim_et_trace_free(t);
        if (rc) return etsim_error_set(err, rc, "%s: out of memory", s->files[f]);
        s->n_label_files++;
        *k = c;
        return 0;
      }
  size_t nt = s->n_traces;
  uint32_t first;
  int put = etsim_u64map_put(&sh->by_shape, l.shape_hash, (uint32_t)nt, &first);
  if (put < 0 || add_labels(s, sh, f, l.vals, l.n, n_labels) ||
      !(s->paths[nt] = etsim_strdup(s->files[f]))) {
    etsim_et__labels_free(&l);
    etsim_et_trace_free(t);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", s->files[f]);
  }
  sh->shape_next[nt] = UINT32_MAX;
  if (put == 0) {
    sh->shape_next[nt] = sh->shape_next[first];
    sh->shape_next[first] = (uint32_t)nt;
  }
  if (l.n) {
    s->attr_label[nt] = l.attr_slot; /* the set keeps the slot table */
    l.attr_slot = NULL;
  }
  etsim_free(l.vals);
  l.vals = NULL;
  sh->tl[nt] = l;
  /* Without labels, l's slot table (every attribute NONE) stays with the
   * share state for same_shape; with labels it is the set's. */
  if (s->attr_label[nt]) sh->tl[nt].attr_slot = s->attr_label[nt];
  s->traces[nt] = t;
  s->n_traces++;
  *k = (uint32_t)nt;
  return 0;
}

int etsim_et_set_load(etsim_et_set_t **out, const char *name, unsigned read_flags,
                      etsim_error_t *err) {
  return etsim_et_set_load_progress(out, name, read_flags, NULL, NULL, err);
}

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int etsim_et_set_load_progress(etsim_et_set_t **out, const char *name, unsigned read_flags,
                               void (*progress)(void *user, size_t done, size_t total), void *user,
                               etsim_error_t *err) {
  double t_next = progress ? mono_s() + 1.0 : 0;
  unsigned labels = read_flags & ETSIM_ET_SET_SHARE_LABELS;
  unsigned share = (read_flags & ETSIM_ET_SET_SHARE) || labels;
  read_flags &= ~(unsigned)(ETSIM_ET_SET_SHARE | ETSIM_ET_SET_SHARE_LABELS);
  etsim_et_set_t *s = etsim_calloc(1, sizeof *s);
  if (!s) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int rc = etsim_et_set_resolve(name, &s->files, &s->n_files, &s->rank_file, &s->n_ranks, err);
  if (rc) {
    etsim_free(s);
    return rc;
  }
  size_t nf = s->n_files ? s->n_files : 1, n_labels = 0;
  s->traces = etsim_calloc(nf, sizeof *s->traces);
  s->paths = etsim_calloc(nf, sizeof *s->paths);
  s->ranks = etsim_calloc(s->n_ranks ? s->n_ranks : 1, sizeof *s->ranks);
  s->rank_trace = etsim_malloc((s->n_ranks ? s->n_ranks : 1) * sizeof *s->rank_trace);
  uint32_t *file_trace = etsim_malloc(nf * sizeof *file_trace);
  share_t sh;
  memset(&sh, 0, sizeof sh);
  etsim_u64map_init(&sh.by_hash);
  etsim_u64map_init(&sh.by_shape);
  if (share) {
    sh.next = etsim_malloc(nf * sizeof *sh.next);
    sh.size = etsim_malloc(nf * sizeof *sh.size);
    sh.kept = etsim_calloc(nf, sizeof *sh.kept);
  }
  if (labels) {
    sh.shape_next = etsim_malloc(nf * sizeof *sh.shape_next);
    sh.tl = etsim_calloc(nf, sizeof *sh.tl);
    s->attr_label = etsim_calloc(nf, sizeof *s->attr_label);
    s->label_off = etsim_calloc(nf, sizeof *s->label_off);
    if ((s->label_strs = etsim_calloc(1, sizeof *s->label_strs)) &&
        etsim_intern_init(s->label_strs)) {
      etsim_free(s->label_strs);
      s->label_strs = NULL;
    }
  }
  if (!s->traces || !s->paths || !s->ranks || !s->rank_trace || !file_trace ||
      (share && (!sh.next || !sh.size || !sh.kept)) ||
      (labels && (!sh.shape_next || !sh.tl || !s->attr_label || !s->label_off || !s->label_strs))) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t f = 0; f < s->n_files; f++) {
    if (progress && !(f & 255) && mono_s() >= t_next) {
      progress(user, f, s->n_files);
      t_next = mono_s() + 0.5;
    }
    const char *path = s->files[f];
    size_t len = 0;
    int whole = 0;
    uint64_t h = 0;
    if (share) {
      sh.size[f] = UINT64_MAX;
      sh.next[f] = UINT32_MAX;
      if ((whole = read_whole(path, &sh.buf, &sh.buf_cap, &len, err)) < 0) {
        rc = whole;
        goto fail;
      }
      if (whole) {
        h = etsim_et__hash_mem(sh.buf, len);
        uint32_t g;
        int found = 0;
        if (etsim_u64map_get(&sh.by_hash, h, &g))
          for (; g != UINT32_MAX && !found; g = found ? g : sh.next[g]) {
            int same = same_bytes(&sh, s, g, sh.buf, len, err);
            if (same < 0) {
              rc = same;
              goto fail;
            }
            found = same;
          }
        if (found) {
          file_trace[f] = file_trace[g];
          if (labels) s->label_off[f] = s->label_off[g];
          s->n_shared_files++;
          continue;
        }
        sh.size[f] = len;
        uint32_t first;
        int put = etsim_u64map_put(&sh.by_hash, h, (uint32_t)f, &first);
        if (put < 0) {
          rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
          goto fail;
        }
        if (put == 0) { /* a different file with this hash: chain it */
          sh.next[f] = sh.next[first];
          sh.next[first] = (uint32_t)f;
        }
        if (len <= SHARE_KEEP_FILE && sh.kept_bytes + len <= SHARE_KEEP_BYTES &&
            (sh.kept[f] = etsim_malloc(len ? len : 1))) {
          memcpy(sh.kept[f], sh.buf, len);
          sh.kept_bytes += len;
        }
      }
    }
    etsim_et_trace_t *t = NULL;
    if (whole) rc = etsim_et__trace_load_mem(&t, path, sh.buf, len, read_flags, err);
    else rc = etsim_et_trace_load(&t, path, read_flags, err);
    if (rc) goto fail;
    if (labels) {
      uint32_t k = 0;
      if ((rc = place_by_shape(s, &sh, f, t, &n_labels, &k, err))) goto fail;
      file_trace[f] = k;
      continue;
    }
    size_t k = s->n_traces;
    if (!(s->paths[k] = etsim_strdup(path))) {
      etsim_et_trace_free(t);
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      goto fail;
    }
    s->traces[k] = t;
    s->n_traces++;
    file_trace[f] = (uint32_t)k;
  }
  for (size_t r = 0; r < s->n_ranks; r++) {
    s->rank_trace[r] = file_trace[s->rank_file[r]];
    s->ranks[r] = s->traces[s->rank_trace[r]];
  }
  if (labels && !n_labels) {
    /* No trace has labels: plain sharing, nothing to apply. */
    etsim_free(s->attr_label);
    s->attr_label = NULL;
  }
  share_free(&sh, s);
  etsim_free(file_trace);
  *out = s;
  return 0;
fail:
  share_free(&sh, s);
  etsim_free(file_trace);
  etsim_et_set_free(s);
  return rc;
}

int etsim_et_set_attr_int(const etsim_et_set_t *s, size_t r, size_t i, uint32_t name_id,
                          int64_t *out) {
  const etsim_et_trace_t *t = s->ranks[r];
  if (s->attr_label && name_id != UINT32_MAX) {
    int64_t k = etsim_et_trace_attr_find(t, i, name_id);
    if (k < 0) return 0;
    const etsim_et_label_t *l = etsim_et_set_label(s, r, (size_t)k);
    if (l) {
      *out = l->i;
      return 1;
    }
  }
  return etsim_et_trace_attr_int(t, i, name_id, out);
}

const char *etsim_et_set_attr_str(const etsim_et_set_t *s, size_t r, size_t i, uint32_t name_id) {
  const etsim_et_trace_t *t = s->ranks[r];
  if (s->attr_label && name_id != UINT32_MAX) {
    int64_t k = etsim_et_trace_attr_find(t, i, name_id);
    if (k < 0) return NULL;
    const etsim_et_label_t *l = etsim_et_set_label(s, r, (size_t)k);
    if (l) return l->s;
  }
  return etsim_et_trace_attr_str(t, i, name_id);
}

void etsim_et_set_free(etsim_et_set_t *s) {
  if (!s) return;
  for (size_t i = 0; s->attr_label && i < s->n_traces; i++) etsim_free(s->attr_label[i]);
  etsim_free(s->attr_label);
  etsim_free(s->label_off);
  etsim_free(s->labels);
  if (s->label_strs) etsim_intern_free(s->label_strs);
  etsim_free(s->label_strs);
  for (size_t i = 0; s->traces && i < s->n_traces; i++) etsim_et_trace_free(s->traces[i]);
  etsim_free(s->traces);
  etsim_free(s->ranks);
  etsim_et_free_paths(s->paths, s->n_traces);
  etsim_free(s->rank_trace);
  etsim_et_free_paths(s->files, s->n_files);
  etsim_free(s->rank_file);
  etsim_free(s);
}

int etsim_et_set_broadcast(etsim_et_set_t *s, size_t n, etsim_error_t *err) {
  if (s->n_ranks != 1 || s->n_traces != 1)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: only a one-rank set can be given to %zu ranks",
                           s->paths[0], n);
  etsim_et_trace_t **r = etsim_malloc((n ? n : 1) * sizeof *r);
  uint32_t *rt = etsim_calloc(n ? n : 1, sizeof *rt);
  uint32_t *rf = etsim_calloc(n ? n : 1, sizeof *rf);
  if (!r || !rt || !rf) {
    etsim_free(r);
    etsim_free(rt);
    etsim_free(rf);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory for %zu ranks", s->paths[0], n);
  }
  for (size_t i = 0; i < n; i++) r[i] = s->traces[0];
  etsim_free(s->ranks);
  etsim_free(s->rank_trace);
  etsim_free(s->rank_file);
  s->ranks = r;
  s->rank_trace = rt;
  s->rank_file = rf;
  s->n_ranks = n;
  return 0;
}

int etsim_et_manifest_write(const char *prefix, size_t n_ranks, const char *const *files,
                            size_t n_files, const uint32_t *rank_file, etsim_error_t *err) {
  size_t len = strlen(prefix) + 32;
  char *path = etsim_malloc(len);
  if (!path) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  snprintf(path, len, "%s.manifest.json", prefix);
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) {
    etsim_free(path);
    return rc;
  }
  /* Each file's ranks in order (a counting sort): one pass over the ranks
   * per file was files x ranks, 4 G steps for 65,536 rank files. */
  size_t *off = etsim_calloc(n_files + 2, sizeof *off);
  uint32_t *by_file = etsim_malloc((n_ranks + 1) * sizeof *by_file);
  if (!off || !by_file) {
    etsim_free(off);
    etsim_free(by_file);
    etsim_outfile_abort(&o);
    etsim_free(path);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t r = 0; r < n_ranks; r++)
    if (rank_file[r] < n_files) off[rank_file[r] + 2]++;
  for (size_t f = 0; f < n_files; f++) off[f + 2] += off[f + 1];
  for (size_t r = 0; r < n_ranks; r++)
    if (rank_file[r] < n_files) by_file[off[rank_file[r] + 1]++] = (uint32_t)r;
  FILE *fp = o.fp;
  fprintf(fp, "{\"etsim_trace_set\": 1, \"npus\": %zu, \"classes\": [", n_ranks);
  for (size_t f = 0; f < n_files; f++) {
    fprintf(fp, "%s\n  {\"file\": \"%s\", \"ranks\": \"", f ? "," : "", files[f]);
    /* Runs of consecutive ranks become "a-b". */
    int first = 1;
    for (size_t k = off[f]; k < off[f + 1]; k++) {
      size_t r = by_file[k], e = r;
      while (k + 1 < off[f + 1] && by_file[k + 1] == e + 1) e = by_file[++k];
      if (e > r) fprintf(fp, "%s%zu-%zu", first ? "" : ",", r, e);
      else fprintf(fp, "%s%zu", first ? "" : ",", r);
      first = 0;
    }
    fputs("\"}", fp);
  }
  fputs("\n]}\n", fp);
  etsim_free(off);
  etsim_free(by_file);
  rc = etsim_outfile_commit(&o, err);
  etsim_free(path);
  return rc;
}
