/* The network section of the HTML report, from the Perfetto timelines of
 * `etsim netsim --timeline` and `etsim sim --net-timeline` (layout in
 * etsim/netpkt.h) and the summaries of `etsim netsim --json`.
 *
 * A timeline is read event by event (jansson on one event at a time, so a
 * file with 100,000 messages never becomes one big tree): message slices
 * give each message's FCT and slowdown; counters give each port's
 * throughput, queue and paused share as step functions, which are then
 * averaged (queue: maximum) into a fixed number of time buckets.  The FCT
 * distributions of all network inputs share one chart, one line per input
 * (typically one per congestion control); long distributions are drawn
 * from a few hundred quantiles.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 120    /* time buckets of the over-time charts */
#define HEAT_COLS 150  /* ... and of the heat map */
#define TOP_PORTS 5    /* lines per over-time chart */
#define HEAT_ROWS 96   /* ports in the heat map */
#define CDF_POINTS 400 /* quantiles per distribution */
#define RATE_MSGS 8    /* sending-rate lines */

enum { M_TX = 0, M_Q, M_PAUSE, M_N };

typedef struct step {
  double *t, *v;
  size_t n, cap;
} step_t;

typedef struct port {
  int64_t pid;
  char *key; /* "p2>16" */
  step_t s[M_N];
  double sum[M_N]; /* integral over time (queue: maximum) */
} port_t;

struct rnet {
  port_t *ports;
  size_t n_ports, cap_ports;
  etsim_intern_t ids; /* "pid/key" -> port index + 1 */
  char **names;       /* process names, by pid (pids are small: node + 1) */
  size_t n_names;
  double *fct, *slow;
  size_t n_msgs, cap_msgs;
  step_t rate[RATE_MSGS];
  double t_end;
};

static int step_add(step_t *s, double t, double v) {
  size_t c = s->cap;
  if (s->n == c) {
    size_t c2 = c;
    if (etsim_grow((void **)&s->t, &c2, s->n + 1, sizeof *s->t)) return ETSIM_ENOMEM;
    c2 = c;
    if (etsim_grow((void **)&s->v, &c2, s->n + 1, sizeof *s->v)) return ETSIM_ENOMEM;
    s->cap = c2;
  }
  s->t[s->n] = t;
  s->v[s->n++] = v;
  return 0;
}

void etsim_report__net_free(rnet_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n_ports; i++) {
    etsim_free(t->ports[i].key);
    for (int m = 0; m < M_N; m++) {
      etsim_free(t->ports[i].s[m].t);
      etsim_free(t->ports[i].s[m].v);
    }
  }
  for (int m = 0; m < RATE_MSGS; m++) {
    etsim_free(t->rate[m].t);
    etsim_free(t->rate[m].v);
  }
  for (size_t i = 0; i < t->n_names; i++) etsim_free(t->names[i]);
  etsim_free(t->names);
  etsim_free(t->ports);
  etsim_free(t->fct);
  etsim_free(t->slow);
  etsim_intern_free(&t->ids);
  etsim_free(t);
}

static port_t *port_get(rnet_t *t, int64_t pid, const char *key) {
  char k[160];
  snprintf(k, sizeof k, "%lld/%s", (long long)pid, key);
  int64_t id = etsim_intern_put(&t->ids, k, strlen(k));
  if (id < 1) return NULL;
  size_t i = (size_t)id - 1; /* id 0 is the interner's "" */
  if (i == t->n_ports) {
    if (etsim_grow((void **)&t->ports, &t->cap_ports, t->n_ports + 1, sizeof *t->ports))
      return NULL;
    port_t *p = &t->ports[t->n_ports++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->key = etsim_strdup(key);
    if (!p->key) return NULL;
  }
  return i < t->n_ports ? &t->ports[i] : NULL;
}

static int on_event(rnet_t *t, const json_t *e) {
  const char *ph = etsim_report__str_or(e, "ph", "");
  const char *name = etsim_report__str_or(e, "name", "");
  double ts = etsim_report__num_or(e, "ts", NAN);
  double pidd = etsim_report__num_or(e, "pid", -1);
  const json_t *args = json_object_get(e, "args");
  if (isfinite(ts) && ts > t->t_end) t->t_end = ts;
  if (!strcmp(ph, "M") && !strcmp(name, "process_name")) {
    if (!(pidd >= 0 && pidd < 1e8)) return 0;
    size_t pid = (size_t)pidd;
    if (pid >= t->n_names) {
      size_t cap = t->n_names;
      if (etsim_grow((void **)&t->names, &cap, pid + 1, sizeof *t->names)) return ETSIM_ENOMEM;
      memset(t->names + t->n_names, 0, (cap - t->n_names) * sizeof *t->names);
      t->n_names = cap;
    }
    etsim_free(t->names[pid]);
    t->names[pid] = etsim_strdup(etsim_report__str_or(args, "name", "?"));
    return 0;
  }
  if (!strcmp(ph, "b") && !strcmp(etsim_report__str_or(e, "cat", ""), "msg")) {
    double f = etsim_report__num_or(args, "fct_us", NAN),
           s = etsim_report__num_or(args, "slowdown", NAN);
    if (!isfinite(f)) return 0;
    size_t c = t->cap_msgs;
    if (etsim_grow((void **)&t->fct, &c, t->n_msgs + 1, sizeof *t->fct)) return ETSIM_ENOMEM;
    c = t->cap_msgs;
    if (etsim_grow((void **)&t->slow, &c, t->n_msgs + 1, sizeof *t->slow)) return ETSIM_ENOMEM;
    t->cap_msgs = c;
    t->fct[t->n_msgs] = f;
    t->slow[t->n_msgs++] = s;
    if (isfinite(ts) && ts + f > t->t_end) t->t_end = ts + f;
    return 0;
  }
  if (strcmp(ph, "C") || !isfinite(ts) || !json_is_object(args)) return 0;
  int m = !strcmp(name, "tx Gb/s")     ? M_TX
          : !strcmp(name, "queue KB")  ? M_Q
          : !strcmp(name, "paused %")  ? M_PAUSE
          : !strcmp(name, "rate Gb/s") ? M_N
                                       : -1;
  if (m < 0) return 0;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)args, key, v) {
    if (!json_is_number(v)) continue;
    if (m == M_N) { /* "msg 3": the sending rate of message 3 */
      int k = atoi(key + (strncmp(key, "msg ", 4) ? 0 : 4));
      if (k >= 0 && k < RATE_MSGS && step_add(&t->rate[k], ts, json_number_value(v)))
        return ETSIM_ENOMEM;
      continue;
    }
    port_t *p = port_get(t, (int64_t)pidd, key);
    if (!p || step_add(&p->s[m], ts, json_number_value(v))) return ETSIM_ENOMEM;
  }
  return 0;
}

int etsim_report__net_parse(const char *path, const char *text, size_t n, rnet_t **out,
                            etsim_error_t *err) {
  rnet_t *t = etsim_calloc(1, sizeof *t);
  if (!t || etsim_intern_init(&t->ids)) {
    etsim_free(t);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  const char *p = strstr(text, "\"traceEvents\"");
  p = p ? strchr(p, '[') : NULL;
  if (!p) {
    etsim_report__net_free(t);
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: traceEvents: not an array", path);
  }
  const char *end = text + n;
  p++;
  size_t k = 0;
  for (;; k++) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ',')) p++;
    if (p >= end) {
      etsim_report__net_free(t);
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: traceEvents: unterminated (after %zu events)",
                             path, k);
    }
    if (*p == ']') break;
    json_error_t je;
    json_t *e = json_loadb(p, (size_t)(end - p), JSON_DISABLE_EOF_CHECK, &je);
    if (!e) {
      etsim_report__net_free(t);
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: traceEvents[%zu] (offset %zu): %s", path, k,
                             (size_t)(p - text) + (size_t)je.position, je.text);
    }
    int rc = json_is_object(e) ? on_event(t, e) : 0;
    json_decref(e);
    if (rc) {
      etsim_report__net_free(t);
      return etsim_error_set(err, rc, "%s: out of memory", path);
    }
    p += je.position;
  }
  /* per-port totals: integrals of the step functions up to the end */
  for (size_t i = 0; i < t->n_ports; i++)
    for (int m = 0; m < M_N; m++) {
      step_t *s = &t->ports[i].s[m];
      double acc = 0;
      for (size_t j = 0; j < s->n; j++) {
        double t1 = j + 1 < s->n ? s->t[j + 1] : t->t_end;
        if (m == M_Q) acc = s->v[j] > acc ? s->v[j] : acc;
        else acc += s->v[j] * (t1 - s->t[j]);
      }
      t->ports[i].sum[m] = acc;
    }
  *out = t;
  return 0;
}

/* ------------------------------------------------------------- drawing */

/* A step function averaged (or maximised) over nb equal buckets of
 * [0, t_end): out[k] for bucket k. */
static void bucket(const step_t *s, double t_end, size_t nb, int use_max, double *out) {
  double w = t_end / (double)nb;
  for (size_t k = 0; k < nb; k++) out[k] = 0;
  if (!(w > 0)) return;
  for (size_t j = 0; j < s->n; j++) {
    double a = s->t[j], z = j + 1 < s->n ? s->t[j + 1] : t_end, v = s->v[j];
    if (z > t_end) z = t_end;
    if (!(z > a)) {
      if (use_max && a < t_end) {
        size_t k = (size_t)(a / w);
        if (k < nb && v > out[k]) out[k] = v;
      }
      continue;
    }
    size_t k0 = (size_t)(a / w), k1 = (size_t)(z / w);
    if (k1 >= nb) k1 = nb - 1;
    for (size_t k = k0; k <= k1 && k < nb; k++) {
      if (use_max) {
        if (v > out[k]) out[k] = v;
        continue;
      }
      double lo = a > k * w ? a : k * w, hi = z < (k + 1) * w ? z : (k + 1) * w;
      if (hi > lo) out[k] += v * (hi - lo) / w;
    }
  }
}

static const char *port_name(const rnet_t *t, const port_t *p, char *buf, size_t cap) {
  const char *node =
      p->pid >= 0 && (size_t)p->pid < t->n_names && t->names[p->pid] ? t->names[p->pid] : "node";
  /* "p2>16" is port 2, towards node 16: "switch 9 \u2192 16" (one link per node pair) */
  const char *gt = strchr(p->key, '>');
  if (p->key[0] == 'p' && gt) snprintf(buf, cap, "%s \xe2\x86\x92 %s", node, gt + 1);
  else snprintf(buf, cap, "%s %s", node, p->key);
  return buf;
}

typedef struct rank {
  size_t i;
  double v;
} rank_t;

static int cmp_rank(const void *a, const void *b) {
  const rank_t *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Ports ordered by a total, largest first; returns how many are above 0. */
static size_t top_ports(const rnet_t *t, int m, rank_t *r) {
  size_t k = 0;
  for (size_t i = 0; i < t->n_ports; i++) r[i] = (rank_t){i, t->ports[i].sum[m]};
  etsim_qsort(r, t->n_ports, sizeof *r, cmp_rank);
  while (k < t->n_ports && r[k].v > 0) k++;
  return k;
}

/* One over-time chart: the top ports by a metric, bucketed. */
static void over_time(rbuf_t *b, const rnet_t *t, int m, const rank_t *r, size_t nr, const char *id,
                      const char *title, const char *ylabel, const char *note) {
  size_t k = nr < TOP_PORTS ? nr : TOP_PORTS;
  double *x = etsim_malloc((BUCKETS + 1) * sizeof *x);
  double *y = etsim_malloc(k * (BUCKETS + 1) * sizeof *y);
  rseries_t *s = etsim_calloc(k ? k : 1, sizeof *s);
  char(*names)[96] = etsim_malloc((k ? k : 1) * sizeof *names);
  if (!x || !y || !s || !names) goto out;
  for (size_t i = 0; i <= BUCKETS; i++) x[i] = t->t_end * (double)i / BUCKETS;
  for (size_t j = 0; j < k; j++) {
    const port_t *p = &t->ports[r[j].i];
    bucket(&p->s[m], t->t_end, BUCKETS, m == M_Q, y + j * (BUCKETS + 1));
    y[j * (BUCKETS + 1) + BUCKETS] = y[j * (BUCKETS + 1) + BUCKETS - 1];
    s[j] = (rseries_t){port_name(t, p, names[j], sizeof names[j]),
                       x,
                       y + j * (BUCKETS + 1),
                       BUCKETS + 1,
                       (int)j,
                       RS_STEP,
                       NULL,
                       0};
  }
  char full[400];
  snprintf(full, sizeof full,
           "%s%s%zu port%s shown of %zu with traffic; %d time buckets of %.3g us%s.",
           note ? note : "", note ? " " : "", k, k == 1 ? "" : "s", t->n_ports, BUCKETS,
           t->t_end / BUCKETS, m == M_Q ? " (each its largest queue)" : " (each its mean)");
  etsim_report__xy(b, &(rxy_t){id,
                               title,
                               full,
                               {"time (\xc2\xb5s)", 0, 1, 0, NAN},
                               {ylabel, 0, 1, 0, NAN},
                               s,
                               k,
                               0,
                               0,
                               0});
out:
  etsim_free(x);
  etsim_free(y);
  etsim_free(s);
  etsim_free(names);
}

/* Every port with traffic: throughput over time as a heat map. */
static void port_heat(rbuf_t *b, const rnet_t *t, const rank_t *r, size_t nr, const char *id) {
  size_t rows = nr < HEAT_ROWS ? nr : HEAT_ROWS;
  if (!rows) return;
  /* rows in node order, so a switch's ports sit together */
  rank_t *o = etsim_malloc(rows * sizeof *o);
  double *v = etsim_malloc(rows * HEAT_COLS * sizeof *v);
  char **rn = etsim_calloc(rows, sizeof *rn);
  if (!o || !v || !rn) goto out;
  for (size_t j = 0; j < rows; j++) o[j] = (rank_t){r[j].i, -(double)r[j].i};
  etsim_qsort(o, rows, sizeof *o, cmp_rank);
  for (size_t j = 0; j < rows; j++) {
    char nm[96];
    bucket(&t->ports[o[j].i].s[M_TX], t->t_end, HEAT_COLS, 0, v + j * HEAT_COLS);
    rn[j] = etsim_strdup(port_name(t, &t->ports[o[j].i], nm, sizeof nm));
  }
  char note[200];
  snprintf(note, sizeof note, "%s%zu time buckets of %.3g us, each the port's mean throughput.",
           nr > rows ? "The busiest ports by bytes sent; " : "Every port with traffic; ",
           (size_t)HEAT_COLS, t->t_end / HEAT_COLS);
  etsim_report__heat(b,
                     &(rheat_t){id, "Throughput of every port over time", note, "time (\xc2\xb5s)",
                                "port (node \xe2\x86\x92 peer)", "Gb/s", rows, HEAT_COLS, v,
                                (const char *const *)rn, NULL, 0, NAN, 0, t->t_end});
out:
  for (size_t j = 0; rn && j < rows; j++) etsim_free(rn[j]);
  etsim_free(rn);
  etsim_free(o);
  etsim_free(v);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A sorted copy's quantiles as (value, fraction) points of a CDF. */
static size_t cdf(const double *v, size_t n, double *x, double *y) {
  double *s = etsim_malloc((n ? n : 1) * sizeof *s);
  size_t m = 0;
  if (!s) return 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) s[m++] = v[i];
  etsim_qsort(s, m, sizeof *s, cmp_double);
  size_t k = 0;
  if (m <= CDF_POINTS)
    for (size_t i = 0; i < m; i++) {
      x[k] = s[i];
      y[k++] = (double)(i + 1) / (double)m;
    }
  else
    for (size_t q = 0; q <= CDF_POINTS; q++) {
      size_t i = q * (m - 1) / CDF_POINTS;
      x[k] = s[i];
      y[k++] = (double)(i + 1) / (double)m;
    }
  etsim_free(s);
  return k;
}

static double quantile(const double *v, size_t n, double q) {
  double *s = etsim_malloc((n ? n : 1) * sizeof *s);
  if (!s || !n) {
    etsim_free(s);
    return NAN;
  }
  memcpy(s, v, n * sizeof *s);
  etsim_qsort(s, n, sizeof *s, cmp_double);
  double r = s[(size_t)(q * (double)(n - 1) + 0.5)];
  etsim_free(s);
  return r;
}

/* The FCT distributions of every network input, one line each. */
static void fct_cdfs(rbuf_t *b, const rin_t *ins, size_t n) {
  size_t k = 0, total = 0;
  for (size_t i = 0; i < n; i++)
    if (ins[i].kind == RK_NETTL && ins[i].net->n_msgs) k++;
  if (!k) {
    for (size_t i = 0; i < n; i++)
      if (ins[i].kind == RK_NETTL) {
        etsim_report__note(b,
                           "No message completed in the network timelines: no FCT "
                           "distribution.");
        break;
      }
    return;
  }
  double *xs = etsim_malloc(2 * k * (CDF_POINTS + 1) * sizeof *xs);
  double *ys = etsim_malloc(2 * k * (CDF_POINTS + 1) * sizeof *ys);
  rseries_t *s1 = etsim_calloc(k, sizeof *s1), *s2 = etsim_calloc(k, sizeof *s2);
  if (!xs || !ys || !s1 || !s2) goto out;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    const rnet_t *t = ins[i].net;
    if (ins[i].kind != RK_NETTL || !t->n_msgs) continue;
    double *x1 = xs + 2 * j * (CDF_POINTS + 1), *y1 = ys + 2 * j * (CDF_POINTS + 1);
    double *x2 = x1 + CDF_POINTS + 1, *y2 = y1 + CDF_POINTS + 1;
    size_t m1 = cdf(t->slow, t->n_msgs, x1, y1), m2 = cdf(t->fct, t->n_msgs, x2, y2);
    s1[j] = (rseries_t){ins[i].label, x1, y1, m1, (int)j, RS_STEP, NULL, 0};
    s2[j] = (rseries_t){ins[i].label, x2, y2, m2, (int)j, RS_STEP, NULL, 0};
    total += t->n_msgs;
    j++;
  }
  char note[240];
  snprintf(note, sizeof note,
           "%zu completed messages over %zu input%s; a distribution of more than %d messages is "
           "drawn from %d quantiles. Slowdown = FCT / the FCT alone on an idle network.",
           total, k, k == 1 ? "" : "s", CDF_POINTS, CDF_POINTS);
  etsim_report__xy(b, &(rxy_t){"net-fct-cdf",
                               "FCT slowdown distribution",
                               note,
                               {"FCT slowdown (x, log scale)", 1, 0, NAN, NAN},
                               {"fraction of messages", 0, 1, 0, 1},
                               s1,
                               k,
                               0,
                               0,
                               0});
  etsim_report__xy(b, &(rxy_t){"net-fct-abs",
                               "Flow completion time distribution",
                               NULL,
                               {"FCT (\xc2\xb5s, log scale)", 1, 0, NAN, NAN},
                               {"fraction of messages", 0, 1, 0, 1},
                               s2,
                               k,
                               0,
                               0,
                               0});
out:
  etsim_free(xs);
  etsim_free(ys);
  etsim_free(s1);
  etsim_free(s2);
}

static void summaries(rbuf_t *b, const rin_t *ins, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ins[i].kind == RK_NETSUM;
  if (!k) return;
  etsim_report__put(b,
                    "<h3>Run summaries</h3>\n<table><tr><th class=\"l\">run</th><th "
                    "class=\"l\">cc</th><th>flows done</th><th>last done (\xc2\xb5s)</th>"
                    "<th>slowdown median</th><th>p99</th><th>max</th><th>PFC pauses</th>"
                    "<th>paused (\xc2\xb5s)</th><th>ECN marks</th><th>drops</th></tr>\n");
  for (size_t i = 0; i < n; i++) {
    const json_t *d = ins[i].doc;
    if (ins[i].kind != RK_NETSUM) continue;
    char v[10][32];
    etsim_report__num(v[0], 32, etsim_report__num_or(d, "flows_done", NAN));
    etsim_report__num(v[1], 32, etsim_report__num_or(d, "flows", NAN));
    etsim_report__num(v[2], 32, etsim_report__num_or(d, "last_done_ns", NAN) / 1e3);
    etsim_report__num(v[3], 32, etsim_report__num_or(d, "slowdown_median", NAN));
    etsim_report__num(v[4], 32, etsim_report__num_or(d, "slowdown_p99", NAN));
    etsim_report__num(v[5], 32, etsim_report__num_or(d, "slowdown_max", NAN));
    etsim_report__num(v[6], 32, etsim_report__num_or(d, "pauses", NAN));
    etsim_report__num(v[7], 32, etsim_report__num_or(d, "paused_us", NAN));
    etsim_report__num(v[8], 32, etsim_report__num_or(d, "ecn_marks", NAN));
    etsim_report__num(
        v[9], 32,
        etsim_report__num_or(d, "drops_buffer", NAN) + etsim_report__num_or(d, "drops_error", 0));
    etsim_report__put(b, "<tr><td class=\"l\">");
    etsim_report__esc(b, ins[i].label);
    etsim_report__put(b, "</td><td class=\"l\">");
    etsim_report__esc(b, etsim_report__str_or(d, "cc", etsim_report__str_or(d, "backend", "")));
    etsim_report__fmt(b,
                      "</td><td>%s of %s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                      "<td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                      v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
  }
  etsim_report__put(b, "</table>\n");
}

/* The sending rates of the first messages, as congestion control set them. */
static void rates(rbuf_t *b, const rnet_t *t, const char *id) {
  rseries_t s[RATE_MSGS];
  char names[RATE_MSGS][24];
  size_t k = 0;
  for (int m = 0; m < RATE_MSGS; m++) {
    if (!t->rate[m].n) continue;
    snprintf(names[k], sizeof names[k], "message %d", m);
    s[k] = (rseries_t){names[k], t->rate[m].t, t->rate[m].v, t->rate[m].n, m, RS_STEP, NULL, 0};
    k++;
  }
  if (!k) return;
  etsim_report__xy(b, &(rxy_t){id,
                               "Sending rate of the first messages",
                               "The rate congestion control allows each message, sampled with "
                               "the ports.",
                               {"time (\xc2\xb5s)", 0, 1, 0, NAN},
                               {"rate (Gb/s)", 0, 1, 0, NAN},
                               s,
                               k,
                               0,
                               0,
                               0});
}

static void one_timeline(rbuf_t *b, const rin_t *in) {
  const rnet_t *t = in->net;
  etsim_report__put(b, "<h3>");
  etsim_report__esc(b, in->label);
  etsim_report__put(b, "</h3><p class=\"from\"><a href=\"");
  etsim_report__esc(b, in->href ? in->href : in->path);
  etsim_report__put(b, "\">");
  etsim_report__esc(b, in->path);
  etsim_report__put(b,
                    "</a> (open it in <a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a> for "
                    "every message and port)</p>\n");
  char k_msgs[32], k_end[32], k_med[32], k_p99[32], k_ports[32], k_q[32], k_pause[32];
  etsim_report__num(k_msgs, sizeof k_msgs, (double)t->n_msgs);
  etsim_report__time_us(k_end, sizeof k_end, t->t_end);
  etsim_report__num(k_med, sizeof k_med, quantile(t->slow, t->n_msgs, 0.5));
  etsim_report__num(k_p99, sizeof k_p99, quantile(t->slow, t->n_msgs, 0.99));
  etsim_report__num(k_ports, sizeof k_ports, (double)t->n_ports);
  double qmax = 0, paused = 0;
  for (size_t i = 0; i < t->n_ports; i++) {
    if (t->ports[i].sum[M_Q] > qmax) qmax = t->ports[i].sum[M_Q];
    paused += t->ports[i].sum[M_PAUSE] / 100;
  }
  etsim_report__num(k_q, sizeof k_q, qmax);
  strcat(k_q, " KB");
  etsim_report__time_us(k_pause, sizeof k_pause, paused);
  const char *kv[] = {"messages completed",
                      k_msgs,
                      "span",
                      k_end,
                      "slowdown median",
                      k_med,
                      "slowdown p99",
                      k_p99,
                      "ports with traffic",
                      t->n_ports ? k_ports : NULL,
                      "largest queue",
                      t->n_ports ? k_q : NULL,
                      "paused (all ports)",
                      t->n_ports ? k_pause : NULL};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
  if (!t->n_ports) {
    etsim_report__note(b,
                       "No port counters in this timeline (the flow level records messages "
                       "only).");
    return;
  }
  rank_t *r = etsim_malloc(t->n_ports * sizeof *r);
  if (!r) {
    b->oom = 1;
    return;
  }
  size_t nr = top_ports(t, M_TX, r);
  over_time(b, t, M_TX, r, nr, "net-throughput", "Port throughput over time", "throughput (Gb/s)",
            "The ports that sent the most.");
  port_heat(b, t, r, nr, "net-heat");
  nr = top_ports(t, M_Q, r);
  if (nr)
    over_time(b, t, M_Q, r, nr, "net-queue", "Egress queue over time", "queue (KB)",
              "The ports with the largest queues.");
  else etsim_report__note(b, "No egress queue built up on any port.");
  nr = top_ports(t, M_PAUSE, r);
  if (nr)
    over_time(b, t, M_PAUSE, r, nr, "net-pause", "PFC pause share over time",
              "time paused (% of bucket)", "The ports paused longest.");
  else etsim_report__note(b, "No port was paused by PFC.");
  etsim_free(r);
  rates(b, t, "net-rate");
}

int etsim_report__netsim(rbuf_t *b, const rin_t *ins, size_t n, etsim_error_t *err) {
  etsim_report__section(b, "network", "Network", NULL);
  fct_cdfs(b, ins, n);
  summaries(b, ins, n);
  for (size_t i = 0; i < n; i++)
    if (ins[i].kind == RK_NETTL) one_timeline(b, &ins[i]);
  etsim_report__section_end(b);
  return b->oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : 0;
}
