/* The sweep section of the HTML report, from a sweep's points (one row per
 * point: every axis value and the summary figures; points.jsonl, one JSON
 * object per line, or points.csv with a header).
 *
 * Which columns are axes and which are results: named by the caller
 * (--axes, --metrics); else from the row's shape ("axes": {...} and
 * "results" / "summary" / "metrics": {...} objects, or columns named
 * "axis.X" / "result.X"); else guessed: text columns and numeric columns
 * with few, repeated values are axes, the other numeric columns results.
 * The page says which rule decided.  A point whose "status" is not ok, or
 * that has an "error", is counted and listed, not drawn.
 *
 * Charts: one line chart per result over the x axis (one line per value of
 * a second axis; each point the median over the other axes, every point
 * drawn faintly behind), and the Pareto front of two results.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 256
#define MAX_METRIC_CHARTS 8
#define MAX_SERIES 8
#define MAX_TIPS 2000

enum { ROLE_NONE = 0, ROLE_AXIS, ROLE_METRIC };

typedef struct col {
  char *name;       /* as in the row ("axes.bw" for a nested value) */
  const char *show; /* without the axis./result. prefix */
  int numeric;      /* every present value is a number */
  int role;
  size_t distinct;
  double scale;    /* value x scale is in `unit` (times and sizes, by the name's suffix) */
  double base;     /* seconds per unit of a time, -1 for bytes, 0 for plain numbers */
  char unit[8];    /* "ms", "MiB"; "" for plain numbers */
  char label[160]; /* for an axis: "last_done (us)" */
  double *v;       /* per row, NAN when absent or text */
  const char **s;  /* per row, text values (NULL when absent or numeric) */
} col_t;

typedef struct sweep {
  const rin_t *in;
  size_t n_rows;
  const json_t **row;
  int *ok;
  col_t c[MAX_COLS];
  size_t n_cols;
  const char *rule;
} sweep_t;

static int prefixed(const char *name, const char *const *pfx, const char **rest) {
  for (size_t i = 0; pfx[i]; i++) {
    size_t n = strlen(pfx[i]);
    if (!strncmp(name, pfx[i], n) && name[n] == '.') {
      *rest = name + n + 1;
      return 1;
    }
  }
  return 0;
}

static const char *const axis_pfx[] = {"axes", "axis", NULL};
static const char *const metric_pfx[] = {"results", "result", "summary", "metrics", NULL};

static col_t *col_of(sweep_t *w, const char *name) {
  for (size_t i = 0; i < w->n_cols; i++)
    if (!strcmp(w->c[i].name, name)) return &w->c[i];
  if (w->n_cols == MAX_COLS) return NULL;
  col_t *c = &w->c[w->n_cols++];
  memset(c, 0, sizeof *c);
  c->name = etsim_strdup(name);
  c->v = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *c->v);
  c->s = etsim_calloc(w->n_rows ? w->n_rows : 1, sizeof *c->s);
  if (!c->name || !c->v || !c->s) return NULL;
  for (size_t r = 0; r < w->n_rows; r++) c->v[r] = NAN;
  c->numeric = 1;
  const char *rest;
  c->show =
      prefixed(c->name, axis_pfx, &rest) || prefixed(c->name, metric_pfx, &rest) ? rest : c->name;
  return c;
}

static int set_value(sweep_t *w, size_t r, const char *name, const json_t *v) {
  if (json_is_null(v)) return 0;
  col_t *c = col_of(w, name);
  if (!c) return ETSIM_ENOMEM;
  if (json_is_number(v)) c->v[r] = json_number_value(v);
  else if (json_is_string(v)) {
    c->s[r] = json_string_value(v);
    c->numeric = 0;
  } else if (json_is_boolean(v)) {
    c->s[r] = json_is_true(v) ? "true" : "false";
    c->numeric = 0;
  }
  return 0;
}

static int is_ok(const json_t *row) {
  const char *st = etsim_report__str_or(row, "status", "ok");
  const json_t *e = json_object_get(row, "error");
  if (e && !json_is_null(e) && !(json_is_string(e) && !json_string_value(e)[0])) return 0;
  return !strcmp(st, "ok") || !strcmp(st, "done") || !strcmp(st, "success");
}

static int skip_name(const char *n) {
  static const char *skip[] = {"status", "error", "point", "index", "id", "point_id", NULL};
  for (size_t i = 0; skip[i]; i++)
    if (!strcmp(n, skip[i])) return 1;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct values of a column over the ok rows; sorted into *vals / *strs
 * when asked (caller frees). */
static size_t distinct(const sweep_t *w, const col_t *c, double **vals, const char ***strs) {
  size_t n = 0, k = 0;
  double *v = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *v);
  const char **s = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *s);
  if (!v || !s) {
    etsim_free(v);
    etsim_free(s);
    return 0;
  }
  if (c->numeric) {
    for (size_t r = 0; r < w->n_rows; r++)
      if (w->ok[r] && isfinite(c->v[r])) v[n++] = c->v[r];
    etsim_qsort(v, n, sizeof *v, cmp_double);
    for (size_t i = 0; i < n; i++)
      if (!k || v[i] != v[k - 1]) v[k++] = v[i];
  } else {
    for (size_t r = 0; r < w->n_rows; r++)
      if (w->ok[r] && c->s[r]) s[n++] = c->s[r];
    etsim_qsort(s, n, sizeof *s, cmp_str);
    for (size_t i = 0; i < n; i++)
      if (!k || strcmp(s[i], s[k - 1])) s[k++] = s[i];
  }
  if (vals) *vals = v;
  else etsim_free(v);
  if (strs) *strs = s;
  else etsim_free(s);
  return k;
}

static int in_list(const char *list, const char *name, const char *show) {
  size_t ln = strlen(name), ls = strlen(show);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if ((n == ln && !strncmp(p, name, n)) || (n == ls && !strncmp(p, show, n))) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* Every name of a comma list must be a column. */
static int check_list(const sweep_t *w, const char *list, const char *opt, etsim_error_t *err) {
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(n < 127 ? n : 127), p);
    char *colon = strchr(name, ':');
    if (colon) *colon = 0;
    int found = 0;
    for (size_t i = 0; i < w->n_cols && !found; i++)
      found = !strcmp(w->c[i].name, name) || !strcmp(w->c[i].show, name);
    if (!found)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: %s: no column '%s' in the points", w->in->path,
                             opt, name);
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* Names that say "a result" even when a result takes few values (a cost
 * set by one axis): unit suffixes of times and words of outcomes.  Sizes,
 * bandwidths and memory are left out: sweeps vary them. */
static int looks_like_metric(const char *n) {
  static const char *suffix[] = {"_ns", "_us", "_ms", "_s", NULL};
  static const char *words[] = {"time", "throughput", "exposed", "util",        "slowdown",
                                "fct",  "cost",       "iter",    "flops",       "events",
                                "wall", "cpu",        "speed",   "samples_per", NULL};
  size_t len = strlen(n);
  for (size_t i = 0; suffix[i]; i++) {
    size_t k = strlen(suffix[i]);
    if (len > k && !strcmp(n + len - k, suffix[i])) return 1;
  }
  for (size_t i = 0; words[i]; i++)
    if (strstr(n, words[i])) return 1;
  return 0;
}

/* Whether every name of a JSON array of strings is a column of the points
 * (used for the axes: a CSV leaves a result that is always null empty). */
static int all_columns(const sweep_t *w, const json_t *names) {
  if (!json_is_array(names)) return 0;
  size_t i;
  const json_t *v;
  json_array_foreach(names, i, v) {
    int found = 0;
    for (size_t k = 0; json_is_string(v) && k < w->n_cols && !found; k++)
      found = !strcmp(w->c[k].show, json_string_value(v));
    if (!found) return 0;
  }
  return 1;
}

/* `etsim sweep` writes sweep.json beside points.csv, naming which columns
 * are axes and which results ("columns": {"axes": [...], "results":
 * [...]}); a CSV's header alone does not say.  Used when every axis it
 * names is a column of these points, so a stray file is not believed. */
static json_t *sibling_columns(const sweep_t *w) {
  const char *path = w->in->path, *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  char *sj = etsim_malloc(dir + sizeof "sweep.json");
  if (!sj) return NULL;
  memcpy(sj, path, dir);
  memcpy(sj + dir, "sweep.json", sizeof "sweep.json");
  json_t *root = json_load_file(sj, 0, NULL);
  etsim_free(sj);
  const json_t *cols = json_object_get(root, "columns");
  const json_t *ax = json_object_get(cols, "axes"), *res = json_object_get(cols, "results");
  if (!all_columns(w, ax) || !json_array_size(ax) || !json_array_size(res)) {
    json_decref(root);
    return NULL;
  }
  return root;
}

static int named_in(const json_t *names, const char *show) {
  size_t i;
  const json_t *v;
  json_array_foreach(names, i, v) if (!strcmp(json_string_value(v), show)) return 1;
  return 0;
}

static void classify(sweep_t *w, const etsim_report_html_opts_t *o) {
  size_t ok_rows = 0;
  for (size_t r = 0; r < w->n_rows; r++) ok_rows += (size_t)w->ok[r];
  int named = 0, shaped = 0;
  for (size_t i = 0; i < w->n_cols; i++) {
    col_t *c = &w->c[i];
    const char *rest;
    c->distinct = distinct(w, c, NULL, NULL);
    if (skip_name(c->name)) continue;
    if (o && (o->axes || o->metrics)) {
      named = 1;
      if (o->axes && in_list(o->axes, c->name, c->show)) c->role = ROLE_AXIS;
      else if (o->metrics && in_list(o->metrics, c->name, c->show)) c->role = ROLE_METRIC;
      else if (o->axes && !o->metrics && c->numeric && c->distinct > 1) c->role = ROLE_METRIC;
      else if (o->metrics && !o->axes && c->distinct > 1) c->role = ROLE_AXIS;
      continue;
    }
    if (prefixed(c->name, axis_pfx, &rest)) {
      c->role = ROLE_AXIS;
      shaped = 1;
    } else if (prefixed(c->name, metric_pfx, &rest)) {
      c->role = c->numeric ? ROLE_METRIC : ROLE_NONE;
      shaped = 1;
    }
  }
  if (named) {
    w->rule = "named by --axes / --metrics";
    return;
  }
  if (shaped) {
    w->rule = "from the rows' \"axes\" and \"results\" objects";
    return;
  }
  json_t *sj = sibling_columns(w);
  if (sj) {
    const json_t *cols = json_object_get(sj, "columns");
    for (size_t i = 0; i < w->n_cols; i++) {
      col_t *c = &w->c[i];
      if (skip_name(c->name)) continue;
      if (named_in(json_object_get(cols, "axes"), c->show)) c->role = ROLE_AXIS;
      else if (named_in(json_object_get(cols, "results"), c->show) && c->numeric)
        c->role = ROLE_METRIC;
    }
    json_decref(sj);
    w->rule = "as sweep.json beside the points names them";
    return;
  }
  w->rule =
      "guessed: text columns and numeric columns with few repeated values are axes, other "
      "numeric columns results (name them with --axes and --metrics)";
  for (size_t i = 0; i < w->n_cols; i++) {
    col_t *c = &w->c[i];
    if (skip_name(c->name) || c->distinct < 2) continue;
    if (!c->numeric) c->role = ROLE_AXIS;
    else if (looks_like_metric(c->name)) c->role = ROLE_METRIC;
    else if (c->distinct <= 24 && c->distinct * 2 <= ok_rows) c->role = ROLE_AXIS;
    else c->role = ROLE_METRIC;
  }
}

/* Units from the name's suffix, so axes say what they measure and numbers
 * stay short: times (_ns, _us, _ms, _s) in ns, us, ms or s and sizes
 * (_bytes) in B, KiB, MiB or GiB, chosen by the largest value of the
 * column, as the other sections choose theirs; _gbps and _pct named. */
static void units(sweep_t *w) {
  static const struct {
    const char *suffix;
    double s;         /* seconds per unit; -1 bytes; 0 a fixed unit, named */
    const char *unit; /* the fixed unit */
  } sfx[] = {{"_ns", 1e-9, NULL},  {"_us", 1e-6, NULL},  {"_ms", 1e-3, NULL}, {"_s", 1, NULL},
             {"_bytes", -1, NULL}, {"_gbps", 0, "Gb/s"}, {"_pct", 0, "%"}};
  for (size_t i = 0; i < w->n_cols; i++) {
    col_t *c = &w->c[i];
    c->scale = 1;
    c->base = 0;
    c->unit[0] = 0;
    snprintf(c->label, sizeof c->label, "%s", c->show);
    if (!c->numeric) continue;
    size_t len = strlen(c->show), k = 0;
    while (k < sizeof sfx / sizeof *sfx) {
      size_t n = strlen(sfx[k].suffix);
      if (len > n && !strcmp(c->show + len - n, sfx[k].suffix)) break;
      k++;
    }
    if (k == sizeof sfx / sizeof *sfx) continue;
    c->base = sfx[k].s;
    if (sfx[k].unit) {
      snprintf(c->unit, sizeof c->unit, "%s", sfx[k].unit);
      snprintf(c->label, sizeof c->label, "%.*s (%s)", (int)(len - strlen(sfx[k].suffix)), c->show,
               c->unit);
      continue;
    }
    double top = 0;
    for (size_t r = 0; r < w->n_rows; r++)
      if (w->ok[r] && isfinite(c->v[r]) && fabs(c->v[r]) > top) top = fabs(c->v[r]);
    if (sfx[k].s < 0) { /* bytes */
      static const char *bu[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int e = 0;
      while (top >= 10240 && e < 4) top /= 1024, e++;
      c->scale = 1 / pow(1024, e);
      snprintf(c->unit, sizeof c->unit, "%s", bu[e]);
    } else {
      double us = top * sfx[k].s * 1e6, per;
      const char *u = "\xc2\xb5s";
      if (us >= 1e7) per = 1, u = "s";
      else if (us >= 1e4) per = 1e-3, u = "ms";
      else if (us >= 1 || us == 0) per = 1e-6;
      else per = 1e-9, u = "ns";
      c->scale = sfx[k].s / per;
      snprintf(c->unit, sizeof c->unit, "%s", u);
    }
    snprintf(c->label, sizeof c->label, "%.*s (%s)", (int)(len - strlen(sfx[k].suffix)), c->show,
             c->unit);
  }
}

/* A value of a column in the unit that suits it: "668 us", "1.5 MiB",
 * "7.51". */
static void col_num(char *out, size_t cap, const col_t *c, double v) {
  if (c->base > 0) etsim_report__time_us(out, cap, v * c->base * 1e6);
  else if (c->base < 0) etsim_report__bytes(out, cap, v);
  else {
    char n[32];
    etsim_report__num(n, sizeof n, v);
    snprintf(out, cap, "%s%s%s", n, c->unit[0] ? " " : "", c->unit);
  }
}

static col_t *find_col(sweep_t *w, const char *name) {
  for (size_t i = 0; name && i < w->n_cols; i++)
    if (!strcmp(w->c[i].name, name) || !strcmp(w->c[i].show, name)) return &w->c[i];
  return NULL;
}

static double median(double *v, size_t n) {
  if (!n) return NAN;
  etsim_qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The axes' values of a row, for tooltips: "tp=8, bw=100". */
static void axes_text(const sweep_t *w, size_t r, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < w->n_cols && k + 1 < cap; i++) {
    const col_t *c = &w->c[i];
    if (c->role != ROLE_AXIS) continue;
    char v[48];
    if (c->s[r]) snprintf(v, sizeof v, "%s", c->s[r]);
    else etsim_report__num(v, sizeof v, c->v[r]);
    int m = snprintf(buf + k, cap - k, "%s%s=%s", k ? ", " : "", c->show, v);
    if (m < 0) break;
    k += (size_t)m;
  }
}

static int same_key(const col_t *c, size_t r, double v, const char *s) {
  if (c->numeric) return c->v[r] == v;
  return c->s[r] && s && !strcmp(c->s[r], s);
}

/* A metric over the x axis: one line per value of the series axis. */
static void metric_chart(rbuf_t *b, sweep_t *w, col_t *x, col_t *ser, col_t *m, size_t idx) {
  double *xv = NULL, *sv = NULL;
  const char **xs = NULL, **ss = NULL;
  size_t nx = distinct(w, x, &xv, &xs), ns = ser ? distinct(w, ser, &sv, &ss) : 1;
  if (ns > MAX_SERIES) ns = MAX_SERIES;
  size_t npt = nx * ns;
  double *px = etsim_malloc((npt ? npt : 1) * sizeof *px),
         *py = etsim_malloc((npt ? npt : 1) * sizeof *py);
  double *tmp = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *tmp);
  double *fx = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *fx);
  double *fy = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *fy);
  rseries_t *s = etsim_calloc(ns + 1, sizeof *s);
  char(*names)[80] = etsim_malloc((ns ? ns : 1) * sizeof *names);
  if (!px || !py || !tmp || !fx || !fy || !s || !names || !x->numeric) goto out;
  size_t nf = 0, others = 0;
  for (size_t i = 0; i < w->n_cols; i++)
    others += w->c[i].role == ROLE_AXIS && &w->c[i] != x && &w->c[i] != ser;
  for (size_t r = 0; r < w->n_rows; r++)
    if (w->ok[r] && isfinite(x->v[r]) && isfinite(m->v[r])) {
      fx[nf] = x->v[r] * x->scale;
      fy[nf++] = m->v[r] * m->scale;
    }
  s[0] = (rseries_t){NULL, fx, fy, nf, 0, RS_POINTS, NULL, 1};
  int ylog = 0, xlog = 0;
  double lo = INFINITY, hi = -INFINITY, xlo = INFINITY, xhi = -INFINITY;
  for (size_t i = 0; i < nf; i++) {
    if (fy[i] < lo) lo = fy[i];
    if (fy[i] > hi) hi = fy[i];
    if (fx[i] < xlo) xlo = fx[i];
    if (fx[i] > xhi) xhi = fx[i];
  }
  ylog = lo > 0 && hi / lo > 1000;
  xlog = xlo > 0 && xhi / xlo >= 64;
  for (size_t k = 0; k < ns; k++) {
    size_t n = 0;
    for (size_t i = 0; i < nx; i++) {
      size_t c = 0;
      for (size_t r = 0; r < w->n_rows; r++)
        if (w->ok[r] && x->v[r] == xv[i] && isfinite(m->v[r]) &&
            (!ser || same_key(ser, r, sv ? sv[k] : 0, ss ? ss[k] : NULL)))
          tmp[c++] = m->v[r];
      if (!c) continue;
      px[k * nx + n] = xv[i] * x->scale;
      py[k * nx + n] = median(tmp, c) * m->scale;
      n++;
    }
    if (ser) {
      if (ser->numeric) {
        char v[32];
        etsim_report__num(v, sizeof v, sv[k]);
        snprintf(names[k], sizeof names[k], "%s = %s", ser->show, v);
      } else snprintf(names[k], sizeof names[k], "%s = %s", ser->show, ss[k]);
    } else snprintf(names[k], sizeof names[k], "%s", m->show);
    s[k + 1] = (rseries_t){names[k], px + k * nx, py + k * nx, n, (int)k, RS_LINE_POINTS, NULL, 0};
  }
  char note[300], xl[200], id[32], title[160];
  snprintf(note, sizeof note, "%s%s%s",
           others ? "Each point is the median over the other axes' values; every point is drawn "
                    "light grey behind."
                  : "Grey: every point.",
           xlog ? " Log x axis." : "", ylog ? " Log y axis." : "");
  snprintf(xl, sizeof xl, "%s%s", x->label, xlog ? ", log scale" : "");
  snprintf(title, sizeof title, "%s over %s", m->show, x->show);
  snprintf(id, sizeof id, "sweep-line");
  (void)idx;
  etsim_report__xy(b, &(rxy_t){id,
                               title,
                               note,
                               {xl, xlog, 0, NAN, NAN},
                               {m->label, ylog, !ylog, NAN, NAN},
                               s,
                               ns + 1,
                               0,
                               0,
                               0});
out:
  etsim_free(xv);
  etsim_free(sv);
  etsim_free(xs);
  etsim_free(ss);
  etsim_free(px);
  etsim_free(py);
  etsim_free(tmp);
  etsim_free(fx);
  etsim_free(fy);
  etsim_free(s);
  etsim_free(names);
}

typedef struct pt {
  double a, b;
  size_t r;
} pt_t;

static int cmp_pt(const void *x, const void *y) {
  const pt_t *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->r < q->r ? -1 : p->r > q->r;
}

/* "name" or "name:max" of --pareto; 0 when it is not a result column. */
static col_t *pareto_col(sweep_t *w, const char *spec, size_t len, int *maximise) {
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), spec);
  char *c = strchr(name, ':');
  *maximise = 0;
  if (c) {
    *maximise = !strcmp(c + 1, "max");
    *c = 0;
  }
  return find_col(w, name);
}

/* The points no other point beats on both results (minimising each, or
 * maximising where asked): sort by the first, keep each that improves the
 * second. */
static void pareto(rbuf_t *b, sweep_t *w, col_t *ma, int maxa, col_t *mb, int maxb) {
  pt_t *p = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *p);
  double *ax = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *ax);
  double *ay = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *ay);
  double *fx = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *fx);
  double *fy = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *fy);
  char **tips = etsim_calloc(w->n_rows ? w->n_rows : 1, sizeof *tips);
  const char **atips = etsim_calloc(w->n_rows ? w->n_rows : 1, sizeof *atips);
  size_t n = 0, nf = 0;
  if (!p || !ax || !ay || !fx || !fy || !tips || !atips) goto out;
  for (size_t r = 0; r < w->n_rows; r++)
    if (w->ok[r] && isfinite(ma->v[r]) && isfinite(mb->v[r]))
      p[n++] = (pt_t){maxa ? -ma->v[r] : ma->v[r], maxb ? -mb->v[r] : mb->v[r], r};
  etsim_qsort(p, n, sizeof *p, cmp_pt);
  double best = INFINITY;
  for (size_t i = 0; i < n; i++) {
    ax[i] = ma->v[p[i].r] * ma->scale;
    ay[i] = mb->v[p[i].r] * mb->scale;
    if (p[i].b < best) {
      best = p[i].b;
      fx[nf] = ax[i];
      fy[nf] = ay[i];
      char t[400], va[48], vb[48];
      axes_text(w, p[i].r, t, sizeof t - 80);
      col_num(va, sizeof va, ma, ma->v[p[i].r]);
      col_num(vb, sizeof vb, mb, mb->v[p[i].r]);
      size_t k = strlen(t);
      snprintf(t + k, sizeof t - k, ": %s %s, %s %s", ma->show, va, mb->show, vb);
      tips[nf] = etsim_strdup(t);
      nf++;
    }
  }
  /* tooltips for the other points too, unless there are many */
  char **otips = NULL;
  if (n <= MAX_TIPS && (otips = etsim_calloc(n ? n : 1, sizeof *otips)))
    for (size_t i = 0; i < n; i++) {
      char t[400];
      axes_text(w, p[i].r, t, sizeof t);
      otips[i] = etsim_strdup(t);
      atips[i] = otips[i];
    }
  int lx = 0, ly = 0;
  {
    double lo = INFINITY, hi = -INFINITY, lo2 = INFINITY, hi2 = -INFINITY;
    for (size_t i = 0; i < n; i++) {
      lo = ax[i] < lo ? ax[i] : lo;
      hi = ax[i] > hi ? ax[i] : hi;
      lo2 = ay[i] < lo2 ? ay[i] : lo2;
      hi2 = ay[i] > hi2 ? ay[i] : hi2;
    }
    lx = lo > 0 && hi / lo > 1000;
    ly = lo2 > 0 && hi2 / lo2 > 1000;
  }
  rseries_t s[2] = {{"every point", ax, ay, n, 5, RS_POINTS, otips ? atips : NULL, 0},
                    {"Pareto front", fx, fy, nf, 3, RS_LINE_POINTS, (const char *const *)tips, 0}};
  char title[200], note[300], xl[200], yl[200];
  snprintf(title, sizeof title, "Pareto front: %s against %s", mb->show, ma->show);
  snprintf(note, sizeof note,
           "%zu of %zu points are on the front (no other point is better on both: %s is better "
           "%s, %s %s). Hover over a point for its axes.",
           nf, n, ma->show, maxa ? "higher" : "lower", mb->show, maxb ? "higher" : "lower");
  snprintf(xl, sizeof xl, "%s, %s is better", ma->label, maxa ? "higher" : "lower");
  snprintf(yl, sizeof yl, "%s, %s is better", mb->label, maxb ? "higher" : "lower");
  etsim_report__xy(b, &(rxy_t){"sweep-pareto",
                               title,
                               note,
                               {xl, lx, 0, NAN, NAN},
                               {yl, ly, 0, NAN, NAN},
                               s,
                               2,
                               0,
                               0,
                               0});
  for (size_t i = 0; otips && i < n; i++) etsim_free(otips[i]);
  etsim_free(otips);
out:
  for (size_t i = 0; tips && i < nf; i++) etsim_free(tips[i]);
  etsim_free(tips);
  etsim_free(atips);
  etsim_free(p);
  etsim_free(ax);
  etsim_free(ay);
  etsim_free(fx);
  etsim_free(fy);
}

static void failed_table(rbuf_t *b, const sweep_t *w, size_t n_bad) {
  if (!n_bad) return;
  etsim_report__fmt(b,
                    "<h3>Failed points (%zu)</h3>\n<table><tr><th class=\"l\">point</th>"
                    "<th class=\"l\">error</th></tr>\n",
                    n_bad);
  size_t shown = 0;
  for (size_t r = 0; r < w->n_rows && shown < 20; r++) {
    if (w->ok[r]) continue;
    char t[400];
    axes_text(w, r, t, sizeof t);
    const json_t *e = json_object_get(w->row[r], "error");
    etsim_report__put(b, "<tr><td class=\"l\">");
    etsim_report__esc(b, t[0] ? t : "(no axes)");
    etsim_report__put(b, "</td><td class=\"l\">");
    etsim_report__esc(b, json_is_string(e) ? json_string_value(e)
                                           : etsim_report__str_or(w->row[r], "status", "failed"));
    etsim_report__put(b, "</td></tr>\n");
    shown++;
  }
  etsim_report__put(b, "</table>\n");
  if (n_bad > shown) etsim_report__note(b, "The first %zu of %zu failed points.", shown, n_bad);
}

/* The best point of each result (lowest; --pareto's ":max" results highest). */
static void best_table(rbuf_t *b, const sweep_t *w, const etsim_report_html_opts_t *o) {
  etsim_report__put(b,
                    "<table><tr><th class=\"l\">result</th><th>best</th><th "
                    "class=\"l\">at</th></tr>\n");
  for (size_t i = 0; i < w->n_cols; i++) {
    const col_t *c = &w->c[i];
    if (c->role != ROLE_METRIC) continue;
    char spec[160];
    snprintf(spec, sizeof spec, "%s:max", c->show);
    int maxi = o && o->pareto && strstr(o->pareto, spec) != NULL;
    size_t best = SIZE_MAX;
    for (size_t r = 0; r < w->n_rows; r++)
      if (w->ok[r] && isfinite(c->v[r]) &&
          (best == SIZE_MAX || (maxi ? c->v[r] > c->v[best] : c->v[r] < c->v[best])))
        best = r;
    if (best == SIZE_MAX) continue;
    char v[48], t[400];
    col_num(v, sizeof v, c, c->v[best]);
    if (c->distinct == 1) snprintf(t, sizeof t, "the same at every point");
    else axes_text(w, best, t, sizeof t);
    etsim_report__put(b, "<tr><td class=\"l\">");
    etsim_report__esc(b, c->show);
    etsim_report__fmt(b, "%s</td><td>%s</td><td class=\"l\">", maxi ? " (max)" : "", v);
    etsim_report__esc(b, t);
    etsim_report__put(b, "</td></tr>\n");
  }
  etsim_report__put(b, "</table>\n");
}

int etsim_report__sweep(rbuf_t *b, const rin_t *in, const etsim_report_html_opts_t *o,
                        etsim_error_t *err) {
  sweep_t *w = etsim_calloc(1, sizeof *w);
  if (!w) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  w->in = in;
  w->n_rows = json_array_size(in->doc);
  w->row = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *w->row);
  w->ok = etsim_malloc((w->n_rows ? w->n_rows : 1) * sizeof *w->ok);
  int rc = 0;
  if (!w->row || !w->ok) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  size_t n_bad = 0;
  for (size_t r = 0; r < w->n_rows && !rc; r++) {
    const json_t *row = json_array_get(in->doc, r), *v;
    const char *k;
    w->row[r] = row;
    w->ok[r] = is_ok(row);
    n_bad += !w->ok[r];
    json_object_foreach((json_t *)row, k, v) {
      if (json_is_object(v)) { /* one level of nesting: "axes.bw" */
        const char *k2;
        const json_t *v2;
        json_object_foreach((json_t *)v, k2, v2) {
          char name[256];
          snprintf(name, sizeof name, "%s.%s", k, k2);
          if ((rc = set_value(w, r, name, v2))) break;
        }
      } else if ((rc = set_value(w, r, k, v))) {
        break;
      }
    }
  }
  if (rc) {
    rc =
        etsim_error_set(err, rc, "%s: out of memory (or more than %d columns)", in->path, MAX_COLS);
    goto out;
  }
  if (!w->n_rows) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: no points", in->path);
    goto out;
  }
  if (o && ((rc = check_list(w, o->axes, "--axes", err)) ||
            (rc = check_list(w, o->metrics, "--metrics", err)) ||
            (rc = check_list(w, o->pareto, "--pareto", err)) ||
            (rc = check_list(w, o->sweep_x, "--x", err)) ||
            (rc = check_list(w, o->sweep_series, "--series", err))))
    goto out;
  classify(w, o);
  units(w);
  /* the x axis: asked for, or the numeric axis with most values */
  col_t *x = o ? find_col(w, o->sweep_x) : NULL, *ser = o ? find_col(w, o->sweep_series) : NULL;
  if (!x)
    for (size_t i = 0; i < w->n_cols; i++) {
      col_t *c = &w->c[i];
      if (c->role == ROLE_AXIS && c->numeric && c != ser && (!x || c->distinct > x->distinct))
        x = c;
    }
  if (!ser)
    for (size_t i = 0; i < w->n_cols; i++) {
      col_t *c = &w->c[i];
      if (c->role != ROLE_AXIS || c == x || c->distinct > MAX_SERIES) continue;
      if (!ser || (!c->numeric && ser->numeric) ||
          (c->numeric == ser->numeric && c->distinct > ser->distinct))
        ser = c;
    }
  char id[32], title[256], k_pts[32], k_ok[32], k_bad[32], k_ax[32], k_met[32], axes[600] = "";
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Sweep: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  size_t n_met = 0, n_ax = 0, n_var = 0; /* n_var: results that differ between points */
  for (size_t i = 0; i < w->n_cols; i++) {
    col_t *c = &w->c[i];
    n_met += c->role == ROLE_METRIC;
    n_var += c->role == ROLE_METRIC && c->distinct > 1;
    if (c->role != ROLE_AXIS) continue;
    n_ax++;
    size_t k = strlen(axes);
    if (k + strlen(c->show) + 24 < sizeof axes)
      snprintf(axes + k, sizeof axes - k, "%s%s (%zu value%s)", k ? ", " : "", c->show, c->distinct,
               c->distinct == 1 ? "" : "s");
  }
  snprintf(k_pts, sizeof k_pts, "%zu", w->n_rows);
  snprintf(k_ok, sizeof k_ok, "%zu", w->n_rows - n_bad);
  snprintf(k_bad, sizeof k_bad, "%zu", n_bad);
  snprintf(k_ax, sizeof k_ax, "%zu", n_ax);
  snprintf(k_met, sizeof k_met, "%zu", n_met);
  /* counts on the cards (names are long); the names in the note and the table */
  const char *kv[] = {"points", k_pts, "ok", k_ok, "failed", k_bad, "axes", k_ax, "results", k_met};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
  etsim_report__note(b, "Axes: %s. Axes and results: %s.", axes[0] ? axes : "none", w->rule);
  if (!n_met) etsim_report__note(b, "No numeric result column: nothing to draw.");
  else best_table(b, w, o);
  if (n_met && !x)
    etsim_report__note(b, "No numeric axis to draw the results over (--x names one).");
  /* a result that is the same at every point gets no chart (the table has it) */
  size_t charts = 0;
  for (size_t i = 0; x && i < w->n_cols && charts < MAX_METRIC_CHARTS; i++)
    if (w->c[i].role == ROLE_METRIC && w->c[i].distinct > 1)
      metric_chart(b, w, x, ser, &w->c[i], charts++);
  if (n_var > charts && x)
    etsim_report__note(b,
                       "Line charts for the first %zu of the %zu results that differ between "
                       "points (--metrics chooses).",
                       charts, n_var);
  /* the Pareto front: --pareto's two results, or the first two */
  col_t *pa = NULL, *pb = NULL;
  int maxa = 0, maxb = 0;
  if (o && o->pareto) {
    const char *comma = strchr(o->pareto, ',');
    if (!comma) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "--pareto: two results 'A,B', not '%s'", o->pareto);
      goto out;
    }
    pa = pareto_col(w, o->pareto, (size_t)(comma - o->pareto), &maxa);
    pb = pareto_col(w, comma + 1, strlen(comma + 1), &maxb);
    if (pa && !pa->numeric) pa = NULL;
    if (pb && !pb->numeric) pb = NULL;
    if (!pa || !pb) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: --pareto '%s': both must be numeric columns",
                           in->path, o->pareto);
      goto out;
    }
  } else {
    for (size_t i = 0; i < w->n_cols; i++)
      if (w->c[i].role == ROLE_METRIC && w->c[i].distinct > 1) {
        if (!pa) pa = &w->c[i];
        else if (!pb) pb = &w->c[i];
      }
  }
  if (pa && pb) pareto(b, w, pa, maxa, pb, maxb);
  else if (n_met)
    etsim_report__note(
        b, "%s: no Pareto front.",
        n_var ? "One result differs between points" : "No result differs between points");
  failed_table(b, w, n_bad);
  etsim_report__section_end(b);
  if (b->oom) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
out:
  for (size_t i = 0; i < w->n_cols; i++) {
    etsim_free(w->c[i].name);
    etsim_free(w->c[i].v);
    etsim_free((void *)w->c[i].s);
  }
  etsim_free(w->row);
  etsim_free(w->ok);
  etsim_free(w);
  return rc;
}
