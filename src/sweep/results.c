/* The results folder of a sweep and the scheduler that fills it.
 *
 *   points.jsonl  one JSON object per point: {"point", "id", "status",
 *                 "error", "axes": {key: value}, "results": {figure:
 *                 value}[, "warnings": [...]]}
 *   points.csv    the same, flat: point,id,status,error,<axes>,<results>
 *   sweep.json    the spec, the base run's fingerprint, counts and times
 *   times.csv     CPU seconds per point run, appended by every run
 *
 * Rows are appended as points finish (one write each, so a killed run
 * leaves at most one torn last line, which the next run drops) and the
 * files are rewritten in point order — through a temporary name — when the
 * run opens and when it closes: the same spec gives the same bytes however
 * many executors ran it, locally or over MPI.
 */
#include "sweep/sweep_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { ST_TODO = 0, ST_RUNNING, ST_KEPT, ST_DONE };

struct etsim_sweep_sched {
  const etsim_sweep_spec_t *spec;
  char *dir;
  etsim_sweep_sched_opts_t opts;
  uint8_t *state;
  char **rows;
  uint8_t *failed;
  size_t todo, resumed, done, n_failed, running, started;
  /* points by trace set: group g's points are pts[off[g] .. off[g+1]) */
  size_t n_groups, *off, *pts, *cursor, *left, *workers;
  size_t *slot_group, n_slots;
  FILE *jsonl, *csv, *times;
  struct timespec t0;
  etsim_progress_t pace; /* the house's progress wording (base.h) */
  const char **results;
  size_t n_results;
};

/* ---------------------------------------------------------------- CSV */

void etsim_sweep__csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* CSV text through a memory stream. */
static char *csv_line(const etsim_sweep_spec_t *s, const json_t *row) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  const char **names = NULL;
  size_t n_res = etsim_sweep__result_names(s, &names);
  if (!n_res) {
    fclose(f);
    free(buf);
    return NULL;
  }
  if (!row) {
    fputs("point,id,status,error", f);
    for (size_t k = 0; k < s->n_cols; k++) {
      fputc(',', f);
      etsim_sweep__csv_field(f, s->cols[k].name);
    }
    for (size_t k = 0; k < n_res; k++) {
      fputc(',', f);
      etsim_sweep__csv_field(f, names[k]);
    }
  } else {
    json_t *axes = json_object_get(row, "axes"), *res = json_object_get(row, "results");
    fprintf(f, "%lld,", (long long)json_integer_value(json_object_get(row, "point")));
    const char *id = json_string_value(json_object_get(row, "id"));
    const char *st = json_string_value(json_object_get(row, "status"));
    const char *er = json_string_value(json_object_get(row, "error"));
    etsim_sweep__csv_field(f, id ? id : "");
    fputc(',', f);
    etsim_sweep__csv_field(f, st ? st : "");
    fputc(',', f);
    etsim_sweep__csv_field(f, er ? er : "");
    for (size_t k = 0; k < s->n_cols + n_res; k++) {
      json_t *v = k < s->n_cols ? json_object_get(axes, s->cols[k].name)
                                : json_object_get(res, names[k - s->n_cols]);
      fputc(',', f);
      if (!v || json_is_null(v)) continue;
      char *t = etsim_sweep__scalar_text(v);
      if (t) etsim_sweep__csv_field(f, t);
      etsim_free(t);
    }
  }
  etsim_sweep__result_names_free(names, n_res);
  if (fclose(f)) {
    free(buf);
    return NULL;
  }
  /* open_memstream's buffer is malloc's: hand back an etsim copy */
  char *r = etsim_strdup(buf);
  free(buf);
  return r;
}

char *etsim_sweep__csv_header(const etsim_sweep_spec_t *s) { return csv_line(s, NULL); }

char *etsim_sweep__row_csv(const etsim_sweep_spec_t *s, const char *row) {
  json_t *j = json_loads(row, 0, NULL);
  if (!j) return NULL;
  char *r = csv_line(s, j);
  json_decref(j);
  return r;
}

/* ------------------------------------------------------------- files */

static char *path_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = etsim_malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Rewrite points.jsonl and points.csv with the rows held, in point order. */
static int rewrite(etsim_sweep_sched_t *s, etsim_error_t *err) {
  const etsim_sweep_spec_t *sp = s->spec;
  char *pj = path_in(s->dir, "points.jsonl"), *pc = path_in(s->dir, "points.csv");
  char *head = etsim_sweep__csv_header(sp);
  int rc = pj && pc && head ? 0 : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  etsim_outfile_t oj, oc;
  int have_j = 0, have_c = 0;
  if (!rc && !(rc = etsim_outfile_open(&oj, pj, err))) have_j = 1;
  if (!rc && !(rc = etsim_outfile_open(&oc, pc, err))) have_c = 1;
  if (!rc) {
    fprintf(oc.fp, "%s\n", head);
    for (size_t p = 0; p < sp->n_points && !rc; p++) {
      if (!s->rows[p]) continue;
      fprintf(oj.fp, "%s\n", s->rows[p]);
      char *line = etsim_sweep__row_csv(sp, s->rows[p]);
      if (!line) rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: a row does not read back", pc);
      else fprintf(oc.fp, "%s\n", line);
      etsim_free(line);
    }
  }
  if (!rc) {
    rc = etsim_outfile_commit(&oj, err);
    have_j = 0;
  }
  if (!rc) {
    rc = etsim_outfile_commit(&oc, err);
    have_c = 0;
  }
  if (have_j) etsim_outfile_abort(&oj);
  if (have_c) etsim_outfile_abort(&oc);
  etsim_free(pj);
  etsim_free(pc);
  etsim_free(head);
  return rc;
}

static double since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static int write_meta(etsim_sweep_sched_t *s, int complete, double cpu_s, int workers,
                      const char *how, etsim_error_t *err) {
  json_t *m = json_object(), *axes = json_array(), *res = json_array();
  int e = !m || !axes || !res;
  e |= json_object_set_new(m, "spec", json_string(s->spec->path));
  char fp[32];
  snprintf(fp, sizeof fp, "%016llx", (unsigned long long)s->spec->fingerprint);
  e |= json_object_set_new(m, "fingerprint", json_string(fp));
  e |= json_object_set_new(m, "complete", json_boolean(complete));
  e |= json_object_set_new(m, "points", json_integer((json_int_t)s->spec->n_points));
  size_t ok = 0, failed = 0;
  for (size_t p = 0; p < s->spec->n_points; p++)
    if (s->rows[p]) {
      if (s->failed[p]) failed++;
      else ok++;
    }
  e |= json_object_set_new(m, "ok", json_integer((json_int_t)ok));
  e |= json_object_set_new(m, "failed", json_integer((json_int_t)failed));
  e |= json_object_set_new(m, "resumed", json_integer((json_int_t)s->resumed));
  e |= json_object_set_new(m, "ran", json_integer((json_int_t)s->done));
  e |= json_object_set_new(m, "trace_sets", json_integer((json_int_t)s->spec->n_groups));
  if (how) e |= json_object_set_new(m, "how", json_string(how));
  if (workers) e |= json_object_set_new(m, "workers", json_integer(workers));
  if (complete) {
    e |= json_object_set_new(m, "wall_s", json_real(round(since(&s->t0) * 1000) / 1000));
    e |= json_object_set_new(m, "cpu_s", json_real(round(cpu_s * 1000) / 1000));
  }
  for (size_t k = 0; k < s->spec->n_cols; k++)
    e |= json_array_append_new(axes, json_string(s->spec->cols[k].name));
  for (size_t k = 0; k < s->n_results; k++)
    e |= json_array_append_new(res, json_string(s->results[k]));
  json_t *cols = json_object();
  e |= !cols;
  e |= json_object_set_new(cols, "axes", axes);
  e |= json_object_set_new(cols, "results", res);
  e |= json_object_set_new(m, "columns", cols);
  char *path = path_in(s->dir, "sweep.json");
  char *text = e ? NULL : etsim_sweep__dump(m);
  json_decref(m);
  int rc = 0;
  if (!path || !text) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  etsim_outfile_t o;
  if (!rc && !(rc = etsim_outfile_open(&o, path, err))) {
    fprintf(o.fp, "%s\n", text);
    rc = etsim_outfile_commit(&o, err);
  }
  etsim_free(path);
  etsim_free(text);
  return rc;
}

/* The id of a row as the key of the point map. */
static int id_key(const char *id, uint64_t *out) {
  if (!id || strlen(id) != 16) return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(id, &end, 16);
  if (errno || *end) return 0;
  *out = v;
  return 1;
}

/* Read an earlier run's rows. */
static int resume(etsim_sweep_sched_t *s, etsim_error_t *err) {
  const etsim_sweep_spec_t *sp = s->spec;
  char *pm = path_in(s->dir, "sweep.json"), *pj = path_in(s->dir, "points.jsonl");
  int rc = pm && pj ? 0 : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (!rc) {
    json_t *m = json_load_file(pm, 0, NULL);
    const char *fp = m ? json_string_value(json_object_get(m, "fingerprint")) : NULL;
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)sp->fingerprint);
    if (fp && strcmp(fp, want))
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: these results come from a different base run (its network, "
                           "system, generator or derived keys differ); write to another folder "
                           "or start again with --restart",
                           s->dir);
    json_decref(m);
  }
  FILE *f = !rc ? fopen(pj, "rb") : NULL;
  etsim_u64map_t ids;
  etsim_u64map_init(&ids);
  if (f) {
    for (size_t p = 0; p < sp->n_points && !rc; p++) {
      uint64_t k = 0;
      id_key(sp->ids[p], &k);
      if (etsim_u64map_put(&ids, k, (uint32_t)p, NULL) < 0)
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
    char *line = NULL;
    size_t cap = 0, n_bad = 0, n_stale = 0;
    ssize_t len;
    while (!rc && (len = getline(&line, &cap, f)) > 0) {
      while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
      if (!len) continue;
      json_t *row = json_loads(line, 0, NULL);
      uint64_t k;
      uint32_t p;
      const char *st = row ? json_string_value(json_object_get(row, "status")) : NULL;
      if (!row || !st || !id_key(json_string_value(json_object_get(row, "id")), &k)) {
        n_bad++;
      } else if (!etsim_u64map_get(&ids, k, &p)) {
        n_stale++;
      } else if (!strcmp(st, "ok") || (!strcmp(st, "failed") && !s->opts.retry_failed)) {
        /* the row's position is the point's in this spec */
        json_object_set_new(row, "point", json_integer((json_int_t)p));
        char *text = etsim_sweep__dump(row);
        if (!text) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        else {
          etsim_free(s->rows[p]);
          s->rows[p] = text;
          if (s->state[p] != ST_KEPT) s->resumed++;
          s->state[p] = ST_KEPT;
          s->failed[p] = strcmp(st, "ok") != 0;
        }
      }
      json_decref(row);
    }
    free(line);
    fclose(f);
    if (n_bad)
      etsim_warn("%s: %zu unreadable line(s) dropped (a run killed while writing leaves one)", pj,
                 n_bad);
    if (n_stale) etsim_warn("%s: %zu row(s) of points no longer in the spec dropped", pj, n_stale);
  }
  etsim_u64map_free(&ids);
  etsim_free(pm);
  etsim_free(pj);
  return rc;
}

int etsim_sweep_sched_open(etsim_sweep_sched_t **out, const etsim_sweep_spec_t *spec,
                           const char *dir, const etsim_sweep_sched_opts_t *opts,
                           etsim_error_t *err) {
  etsim_sweep_sched_t *s = etsim_calloc(1, sizeof *s);
  if (!s) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  clock_gettime(CLOCK_MONOTONIC, &s->t0);
  etsim_progress_init(&s->pace, "sweep", 0); /* the callers pace the lines */
  s->spec = spec;
  if (opts) s->opts = *opts;
  size_t n = spec->n_points, ng = spec->n_groups;
  s->dir = etsim_strdup(dir);
  s->state = etsim_calloc(n, 1);
  s->failed = etsim_calloc(n, 1);
  s->rows = etsim_calloc(n, sizeof *s->rows);
  s->n_groups = ng;
  s->off = etsim_calloc(ng + 1, sizeof *s->off);
  s->pts = etsim_calloc(n, sizeof *s->pts);
  s->cursor = etsim_calloc(ng + 1, sizeof *s->cursor);
  s->left = etsim_calloc(ng + 1, sizeof *s->left);
  s->workers = etsim_calloc(ng + 1, sizeof *s->workers);
  int rc = 0;
  if (!s->dir || !s->state || !s->failed || !s->rows || !s->off || !s->pts || !s->cursor ||
      !s->left || !s->workers) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  s->n_results = etsim_sweep__result_names(spec, &s->results);
  if (!s->n_results) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  if ((rc = etsim_sweep__mkdirs(dir, err))) goto fail;
  if (!s->opts.restart && (rc = resume(s, err))) goto fail;
  /* groups, in point order */
  for (size_t p = 0; p < n; p++) s->off[spec->group[p] + 1]++;
  for (size_t g = 0; g < ng; g++) s->off[g + 1] += s->off[g];
  for (size_t p = 0; p < n; p++) {
    size_t g = spec->group[p];
    s->pts[s->off[g] + s->cursor[g]++] = p;
    if (s->state[p] == ST_TODO) {
      s->left[g]++;
      s->todo++;
    }
  }
  memset(s->cursor, 0, (ng + 1) * sizeof *s->cursor);
  for (size_t p = 0; p < n; p++) s->n_failed += s->failed[p];
  if ((rc = write_meta(s, 0, 0, 0, NULL, err))) goto fail;
  if ((rc = rewrite(s, err))) goto fail;
  char *pj = path_in(dir, "points.jsonl"), *pc = path_in(dir, "points.csv"),
       *pt = path_in(dir, "times.csv");
  struct stat st;
  int new_times = pt && stat(pt, &st) != 0;
  s->jsonl = pj ? fopen(pj, "a") : NULL;
  s->csv = pc ? fopen(pc, "a") : NULL;
  s->times = pt ? fopen(pt, "a") : NULL;
  if (!s->jsonl || !s->csv || !s->times)
    rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot append: %s", dir, strerror(errno));
  else if (new_times) fprintf(s->times, "point,id,cpu_s\n");
  etsim_free(pj);
  etsim_free(pc);
  etsim_free(pt);
  if (rc) goto fail;
  *out = s;
  return 0;
fail:
  etsim_sweep_sched_abort(s);
  return rc;
}

size_t etsim_sweep_sched_todo(const etsim_sweep_sched_t *s) { return s->todo; }
size_t etsim_sweep_sched_resumed(const etsim_sweep_sched_t *s) { return s->resumed; }

static long take(etsim_sweep_sched_t *s, size_t g) {
  while (s->cursor[g] < s->off[g + 1] - s->off[g]) {
    size_t p = s->pts[s->off[g] + s->cursor[g]++];
    if (s->state[p] != ST_TODO) continue;
    s->state[p] = ST_RUNNING;
    s->left[g]--;
    s->todo--;
    s->running++;
    s->started++;
    return (long)p;
  }
  return -1;
}

long etsim_sweep_sched_next(etsim_sweep_sched_t *s, size_t slot) {
  if (s->opts.limit && s->started >= s->opts.limit) return -1;
  if (slot >= s->n_slots) {
    size_t n = slot + 1;
    size_t *ng = etsim_realloc(s->slot_group, n * sizeof *ng);
    if (!ng) return -1;
    for (size_t i = s->n_slots; i < n; i++) ng[i] = SIZE_MAX;
    s->slot_group = ng;
    s->n_slots = n;
  }
  size_t g = s->slot_group[slot];
  if (g != SIZE_MAX && s->left[g]) return take(s, g);
  /* a set nobody holds, the one with most points; else share the largest */
  size_t best = SIZE_MAX;
  for (int pass = 0; pass < 2 && best == SIZE_MAX; pass++)
    for (size_t k = 0; k < s->n_groups; k++) {
      if (!s->left[k] || (pass == 0 && s->workers[k])) continue;
      if (best == SIZE_MAX || s->left[k] > s->left[best]) best = k;
    }
  if (best == SIZE_MAX) return -1;
  if (g != SIZE_MAX) s->workers[g]--;
  s->workers[best]++;
  s->slot_group[slot] = best;
  return take(s, best);
}

int etsim_sweep_sched_done(etsim_sweep_sched_t *s, size_t point, const char *row, double cpu_s,
                           etsim_error_t *err) {
  if (point >= s->spec->n_points || s->state[point] != ST_RUNNING)
    return etsim_error_set(err, ETSIM_EINTERNAL, "sweep: point %zu was not running", point);
  json_t *j = json_loads(row, 0, NULL);
  const char *st = j ? json_string_value(json_object_get(j, "status")) : NULL;
  long long pi = j ? (long long)json_integer_value(json_object_get(j, "point")) : -1;
  int ok = st && pi == (long long)point;
  int failed = st && strcmp(st, "ok") != 0;
  json_decref(j);
  if (!ok)
    return etsim_error_set(err, ETSIM_EINTERNAL, "sweep: point %zu came back without its row",
                           point);
  char *copy = etsim_strdup(row);
  char *line = copy ? etsim_sweep__row_csv(s->spec, row) : NULL;
  if (!line) {
    etsim_free(copy);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  s->rows[point] = copy;
  s->state[point] = ST_DONE;
  s->failed[point] = (uint8_t)failed;
  s->n_failed += (size_t)failed;
  s->running--;
  s->done++;
  /* one write each, flushed: a killed run keeps every finished row */
  fprintf(s->jsonl, "%s\n", row);
  fprintf(s->csv, "%s\n", line);
  fprintf(s->times, "%zu,%s,%.3f\n", point, s->spec->ids[point], cpu_s);
  etsim_free(line);
  if (fflush(s->jsonl) || fflush(s->csv) || fflush(s->times))
    return etsim_error_set(err, ETSIM_EIO, "%s: cannot write the rows: %s", s->dir,
                           strerror(errno));
  return 0;
}

void etsim_sweep_sched_progress(const etsim_sweep_sched_t *s, size_t *done, size_t *failed,
                                size_t *running, double *elapsed_s) {
  if (done) *done = s->done;
  if (failed) *failed = s->n_failed;
  if (running) *running = s->running;
  if (elapsed_s) *elapsed_s = since(&s->t0);
}

void etsim_sweep_sched_progress_line(const etsim_sweep_sched_t *s, char *buf, size_t cap) {
  size_t total = s->spec->n_points, finished = s->resumed + s->done;
  size_t left = s->todo + s->running;
  if (s->opts.limit) {
    size_t can = s->opts.limit > s->started ? s->opts.limit - s->started : 0;
    if (s->todo > can) left = can + s->running;
  }
  /* the share of this run's work done: points finished before it do not
   * speed up its estimate of the time left */
  double frac = s->done + left ? (double)s->done / (double)(s->done + left) : 1;
  etsim_progress_t p = s->pace; /* formatting does not change the schedule */
  if (!etsim_progress_line(&p, buf, cap, frac, "%zu of %zu points, %zu failed, %zu running",
                           finished, total, s->n_failed, s->running) &&
      cap)
    buf[0] = 0;
}

int etsim_sweep_sched_close(etsim_sweep_sched_t *s, double cpu_s, int workers, const char *how,
                            etsim_error_t *err) {
  int rc = 0;
  FILE *fs[3] = {s->jsonl, s->csv, s->times};
  for (int i = 0; i < 3; i++)
    if (fs[i] && fclose(fs[i]) && !rc)
      rc = etsim_error_set(err, ETSIM_EIO, "%s: %s", s->dir, strerror(errno));
  s->jsonl = s->csv = s->times = NULL;
  if (!rc) rc = rewrite(s, err);
  if (!rc) rc = write_meta(s, s->todo == 0 && s->running == 0, cpu_s, workers, how, err);
  etsim_sweep_sched_abort(s);
  return rc;
}

void etsim_sweep_sched_abort(etsim_sweep_sched_t *s) {
  if (!s) return;
  if (s->jsonl) fclose(s->jsonl);
  if (s->csv) fclose(s->csv);
  if (s->times) fclose(s->times);
  if (s->rows)
    for (size_t p = 0; p < s->spec->n_points; p++) etsim_free(s->rows[p]);
  etsim_free(s->rows);
  etsim_free(s->state);
  etsim_free(s->failed);
  etsim_free(s->off);
  etsim_free(s->pts);
  etsim_free(s->cursor);
  etsim_free(s->left);
  etsim_free(s->workers);
  etsim_free(s->slot_group);
  etsim_sweep__result_names_free(s->results, s->n_results);
  etsim_free(s->dir);
  etsim_free(s);
}
