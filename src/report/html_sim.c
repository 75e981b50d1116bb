/* The simulation section of the HTML report, from sim's JSON document:
 * key figures, where the iteration goes (compute and exposed communication
 * per collective and per dimension), every NPU's finish with the critical
 * NPU marked, how busy each dimension is per NPU, and an overview of the
 * collectives on a few NPUs linking to the Perfetto timeline.
 *
 * More than MAX_BARS NPUs are shown in groups (the group's slowest NPU,
 * whiskers from its fastest to its slowest), more than MAX_ROWS as heat-map
 * rows of group means; the page says so.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BARS 128
#define MAX_ROWS 64
#define MAX_LANES 16
#define MAX_DIMS 8
#define GREY RPT_GREY

typedef struct npu {
  double finish, compute, exposed, exposed_nc, bytes;
  double busy[MAX_DIMS], exp_dim[MAX_DIMS];
} npu_t;

/* A time unit that keeps numbers short: ns, us or ms by the iteration. */
typedef struct tunit {
  double div;
  const char *name;
} tunit_t;

static tunit_t unit_for(double total_ns) {
  if (total_ns < 1e4) return (tunit_t){1, "ns"};
  if (total_ns < 1e7) return (tunit_t){1e3, "\xc2\xb5s"};
  return (tunit_t){1e6, "ms"};
}

static void fmt_time(char *s, size_t cap, double ns, tunit_t u) {
  char v[20];
  etsim_report__num(v, sizeof v, ns / u.div);
  snprintf(s, cap, "%s %s", v, u.name);
}

static int read_npus(const rin_t *in, npu_t **out, size_t *n_out, int *ndims, etsim_error_t *err) {
  const json_t *a = json_object_get(in->doc, "npus");
  if (!json_is_array(a) || !json_array_size(a))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: npus: missing or empty", in->path);
  size_t n = json_array_size(a);
  npu_t *p = etsim_calloc(n, sizeof *p);
  if (!p) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  *ndims = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *o = json_array_get(a, i);
    char where[48];
    snprintf(where, sizeof where, "npus[%zu]", i);
    if (etsim_report__get_num(in, o, "finish_ns", where, &p[i].finish, err) ||
        etsim_report__get_num(in, o, "compute_ns", where, &p[i].compute, err)) {
      etsim_free(p);
      return ETSIM_EFORMAT;
    }
    p[i].exposed = etsim_report__num_or(o, "exposed_comm_ns", p[i].finish - p[i].compute);
    p[i].exposed_nc = etsim_report__num_or(o, "exposed_comm_no_compute_ns", NAN);
    p[i].bytes = etsim_report__num_or(o, "comm_bytes", 0);
    const json_t *bd = json_object_get(o, "coll_busy_ns_by_dim");
    const json_t *ed = json_object_get(o, "coll_exposed_ns_by_dim");
    size_t nd = json_is_array(bd) ? json_array_size(bd) : 0;
    if (nd > MAX_DIMS) nd = MAX_DIMS;
    if (i == 0) *ndims = (int)nd;
    else if ((int)nd != *ndims) {
      etsim_free(p);
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: %s.coll_busy_ns_by_dim: %zu dimensions, npus[0] has %d", in->path,
                             where, nd, *ndims);
    }
    for (size_t d = 0; d < nd; d++) {
      const json_t *v = json_array_get(bd, d), *e = json_array_get(ed, d);
      p[i].busy[d] = json_is_number(v) ? json_number_value(v) : NAN;
      p[i].exp_dim[d] = json_is_number(e) ? json_number_value(e) : NAN;
    }
  }
  *out = p;
  *n_out = n;
  return 0;
}

static const char *dim_name(const json_t *topo, int d, char *buf, size_t cap) {
  const json_t *t = json_is_array(topo) ? json_array_get(topo, (size_t)d) : NULL;
  if (t)
    snprintf(buf, cap, "dim %d %s(%lld)", d, etsim_report__str_or(t, "kind", ""),
             (long long)etsim_report__num_or(t, "npus", 0));
  else snprintf(buf, cap, "dim %d", d);
  return buf;
}

/* Where the iteration goes: compute, then exposed communication per
 * collective type, for the average NPU and the critical one.  These add up
 * to the finish time; per dimension they do not (a chunk's phases on two
 * dimensions can run at once), so dimensions get their own chart. */
static void breakdown(rbuf_t *b, const rin_t *in, const npu_t *p, size_t n, size_t crit, tunit_t u,
                      const char *id) {
  const json_t *types = json_object_get(in->doc, "by_type");
  size_t nt = json_is_array(types) ? json_array_size(types) : 0;
  if (nt > 8) nt = 8;
  enum { MAXSEG = 3 + 8 };
  const char *seg[MAXSEG];
  int col[MAXSEG];
  char names[MAXSEG][64];
  size_t ns = 0;
  seg[ns] = "compute";
  col[ns++] = 0;
  static const int type_col[8] = {1, 4, 5, 7, 6, 2, 1, 4};
  for (size_t k = 0; k < nt; k++) {
    snprintf(names[ns], sizeof names[ns], "exposed %s",
             etsim_report__str_or(json_array_get(types, k), "type", "?"));
    seg[ns] = names[ns];
    col[ns++] = type_col[k];
  }
  size_t s_nc = ns;
  seg[ns] = "communication, no compute running";
  col[ns++] = 3;
  size_t s_idle = ns;
  seg[ns] = "other (idle, or not attributed)";
  col[ns++] = GREY;
  double *val = etsim_calloc(2 * ns, sizeof *val);
  if (!val) return;
  double avg_fin = 0, avg_comp = 0;
  for (size_t i = 0; i < n; i++) {
    avg_fin += p[i].finish / (double)n;
    avg_comp += p[i].compute / (double)n;
  }
  double used = avg_comp;
  val[0] = avg_comp / u.div;
  for (size_t k = 0; k < nt; k++) {
    double e = etsim_report__num_or(json_array_get(types, k), "exposed_ns_sum", 0) / (double)n;
    val[1 + k] = e / u.div;
    used += e;
  }
  if (avg_fin - used > avg_fin * 1e-6) val[s_idle] = (avg_fin - used) / u.div;
  const npu_t *c = &p[crit];
  val[ns] = c->compute / u.div;
  double nc = isfinite(c->exposed_nc) ? c->exposed_nc : c->exposed;
  val[ns + s_nc] = nc / u.div;
  if (c->finish - c->compute - nc > c->finish * 1e-6)
    val[ns + s_idle] = (c->finish - c->compute - nc) / u.div;
  char r2[64], xl[48];
  snprintf(r2, sizeof r2, "critical NPU %zu", crit);
  const char *rows[2] = {"mean NPU", r2};
  snprintf(xl, sizeof xl, "time (%s)", u.name);
  etsim_report__hstack(b, &(rhstack_t){id, "Where the iteration goes",
                                       "Mean NPU: compute and the communication time each "
                                       "collective type leaves exposed. Critical NPU: compute, "
                                       "communication while no compute runs, and the rest.",
                                       xl, 2, ns, rows, seg, val, col});
  etsim_free(val);
}

/* Per dimension: how long collectives run there and how much of it no
 * compute hides, for the mean NPU. */
static void dim_bars(rbuf_t *b, const rin_t *in, const npu_t *p, size_t n, int ndims, tunit_t u,
                     const char *id) {
  if (!ndims) return;
  double busy[MAX_DIMS] = {0}, expo[MAX_DIMS] = {0};
  char names[MAX_DIMS][48];
  const char *cat[MAX_DIMS];
  for (int d = 0; d < ndims; d++) {
    for (size_t i = 0; i < n; i++) {
      busy[d] += isfinite(p[i].busy[d]) ? p[i].busy[d] / (double)n / u.div : 0;
      expo[d] += isfinite(p[i].exp_dim[d]) ? p[i].exp_dim[d] / (double)n / u.div : 0;
    }
    cat[d] = dim_name(json_object_get(in->doc, "topology"), d, names[d], sizeof names[d]);
  }
  const char *sn[2] = {"collectives running", "exposed (no compute running)"};
  const double *v[2] = {busy, expo};
  char yl[48];
  snprintf(yl, sizeof yl, "time per NPU (%s)", u.name);
  etsim_report__bars(b, &(rbars_t){id, "Communication per network dimension",
                                   "Mean over NPUs. Phases of one chunk can run on several "
                                   "dimensions at once, so dimensions do not add up to the "
                                   "exposed time above.",
                                   "network dimension", yl, (size_t)ndims, cat, 2, sn, v,
                                   (int[]){2, 3}, 0, 0, NULL, NULL, -1, NULL, NULL});
}

/* Every NPU's finish, compute and exposed communication stacked. */
static void finish_bars(rbuf_t *b, const npu_t *p, size_t n, size_t crit, tunit_t u,
                        const char *id) {
  size_t groups = n <= MAX_BARS ? n : MAX_BARS, per = (n + groups - 1) / groups;
  groups = (n + per - 1) / per;
  double *comp = etsim_calloc(groups, sizeof(double)), *expo = etsim_calloc(groups, sizeof(double));
  double *lo = etsim_calloc(groups, sizeof(double)), *hi = etsim_calloc(groups, sizeof(double));
  char **cat = etsim_calloc(groups, sizeof(char *)), **tips = etsim_calloc(groups, sizeof(char *));
  if (!comp || !expo || !lo || !hi || !cat || !tips) goto out;
  for (size_t g = 0; g < groups; g++) {
    size_t a = g * per, z = a + per < n ? a + per : n, top = a;
    lo[g] = INFINITY;
    hi[g] = -INFINITY;
    for (size_t i = a; i < z; i++) {
      if (p[i].finish > p[top].finish) top = i;
      if (p[i].finish < lo[g]) lo[g] = p[i].finish;
      if (p[i].finish > hi[g]) hi[g] = p[i].finish;
    }
    comp[g] = p[top].compute / u.div;
    expo[g] = (p[top].finish - p[top].compute) / u.div;
    lo[g] /= u.div;
    hi[g] /= u.div;
    char s[48];
    snprintf(s, sizeof s, "%zu", a); /* a group is named by its first NPU */
    cat[g] = etsim_strdup(s);
    if (per > 1) {
      char t[160];
      snprintf(t, sizeof t, "NPUs %zu-%zu: slowest NPU %zu; finish %.4g to %.4g %s", a, z - 1, top,
               lo[g], hi[g], u.name);
      tips[g] = etsim_strdup(t);
    }
  }
  char ml[96], yl[48], note[256], xl[64];
  char ft[32];
  fmt_time(ft, sizeof ft, p[crit].finish, u);
  snprintf(ml, sizeof ml, "critical: NPU %zu, %s", crit, ft);
  snprintf(yl, sizeof yl, "time (%s)", u.name);
  snprintf(xl, sizeof xl, per == 1 ? "NPU" : "NPU (the first of each group of %zu)", per);
  if (per > 1)
    snprintf(note, sizeof note,
             "%zu NPUs in %zu groups of %zu: each bar is its group's slowest NPU, the whisker "
             "spans the group's fastest to slowest finish.",
             n, groups, per);
  else
    snprintf(note, sizeof note, "Exposed communication = finish - compute (ASTRA-sim's measure).");
  const char *sn[2] = {"compute", "exposed communication"};
  const double *v[2] = {comp, expo};
  int cols[2] = {0, 1};
  etsim_report__bars(
      b, &(rbars_t){id, "Finish time per NPU", note, xl, yl, groups, (const char *const *)cat, 2,
                    sn, v, cols, 1, 0, per > 1 ? lo : NULL, per > 1 ? hi : NULL, (long)(crit / per),
                    ml, (const char *const *)tips});
out:
  for (size_t g = 0; cat && g < groups; g++) etsim_free(cat[g]);
  for (size_t g = 0; tips && g < groups; g++) etsim_free(tips[g]);
  etsim_free(cat);
  etsim_free(tips);
  etsim_free(comp);
  etsim_free(expo);
  etsim_free(lo);
  etsim_free(hi);
}

/* How busy each dimension is: collective chunks running there over the
 * iteration, per NPU (group means when there are many). */
static void dim_heat(rbuf_t *b, const rin_t *in, const npu_t *p, size_t n, int ndims, double total,
                     const char *id) {
  if (!ndims || !(total > 0)) return;
  size_t rows = n <= MAX_ROWS ? n : MAX_ROWS, per = (n + rows - 1) / rows;
  rows = (n + per - 1) / per;
  double *v = etsim_calloc(rows * (size_t)ndims, sizeof *v);
  char **rn = etsim_calloc(rows, sizeof(char *)),
       **cn = etsim_calloc((size_t)ndims, sizeof(char *));
  if (!v || !rn || !cn) goto out;
  for (size_t r = 0; r < rows; r++) {
    size_t a = r * per, z = a + per < n ? a + per : n;
    for (int d = 0; d < ndims; d++) {
      double s = 0;
      for (size_t i = a; i < z; i++) s += isfinite(p[i].busy[d]) ? p[i].busy[d] : 0;
      v[r * (size_t)ndims + (size_t)d] = 100 * s / (double)(z - a) / total;
    }
    char s[48];
    if (per == 1) snprintf(s, sizeof s, "NPU %zu", a);
    else snprintf(s, sizeof s, "%zu-%zu", a, z - 1);
    rn[r] = etsim_strdup(s);
  }
  for (int d = 0; d < ndims; d++) {
    char s[48];
    cn[d] = etsim_strdup(dim_name(json_object_get(in->doc, "topology"), d, s, sizeof s));
  }
  char note[256];
  snprintf(note, sizeof note,
           "Share of the iteration during which collective chunks run on each dimension%s. On "
           "the analytical backend chunks do not queue for links, so this is demand, not "
           "contention.%s",
           per > 1 ? " (mean over each group of NPUs)" : "", per > 1 ? "" : "");
  if (per > 1) {
    size_t k = strlen(note);
    snprintf(note + k, sizeof note - k, " %zu NPUs in %zu rows of %zu.", n, rows, per);
  }
  etsim_report__heat(b, &(rheat_t){id, "Dimension utilisation per NPU", note, "network dimension",
                                   per > 1 ? "NPUs" : "NPU", "% busy", rows, (size_t)ndims, v,
                                   (const char *const *)rn, (const char *const *)cn, 0, NAN, 0, 0});
out:
  for (size_t r = 0; rn && r < rows; r++) etsim_free(rn[r]);
  for (int d = 0; cn && d < ndims; d++) etsim_free(cn[d]);
  etsim_free(rn);
  etsim_free(cn);
  etsim_free(v);
}

/* The busiest links, when the run kept per-link statistics ("links"). */
static void link_bars(rbuf_t *b, const json_t *links, const char *id) {
  size_t n = json_array_size(links), k = n < 12 ? n : 12;
  if (!n) return;
  size_t *idx = etsim_malloc(n * sizeof *idx);
  double *v = etsim_malloc(k * sizeof *v);
  const char **rows = etsim_malloc(k * sizeof *rows);
  if (!idx || !v || !rows) goto out;
  for (size_t i = 0; i < n; i++) idx[i] = i;
  /* the k busiest, busiest first (selection: k is small) */
  for (size_t i = 0; i < k; i++) {
    size_t best = i;
    for (size_t j = i + 1; j < n; j++)
      if (etsim_report__num_or(json_array_get(links, idx[j]), "busy_fraction", 0) >
          etsim_report__num_or(json_array_get(links, idx[best]), "busy_fraction", 0))
        best = j;
    size_t t = idx[i];
    idx[i] = idx[best];
    idx[best] = t;
    const json_t *l = json_array_get(links, idx[i]);
    v[i] = 100 * etsim_report__num_or(l, "busy_fraction", 0);
    rows[i] = etsim_report__str_or(l, "link", "?");
  }
  char note[200];
  snprintf(note, sizeof note,
           "The %zu busiest of %zu links with traffic: time sending over the iteration. Over "
           "100 %% means the analytical model let messages overlap on one link.",
           k, n);
  const char *seg[1] = {"busy"};
  etsim_report__hstack(b, &(rhstack_t){id, "Busiest links", note, "busy (% of the iteration)", k, 1,
                                       rows, seg, v, (int[]){2}});
out:
  etsim_free(idx);
  etsim_free(v);
  etsim_free(rows);
}

/* Per-link utilisation as a heat map: a row per NPU, a column per dimension
 * and direction ("dim 1 out": links the NPU sends on; "dim 1 in": a
 * switch's links towards it), each cell the busiest such link.  Link names
 * are those of etsim_net_link_name ("NPU 3 dim 1 (Switch) out", "NPU 3 ->
 * NPU 4 (dim 0 Ring)", "switch -> NPU 3 (dim 1 Switch)"); when they do not
 * read that way the chart is left out. */
static void link_heat(rbuf_t *b, const json_t *links, size_t n_npus, const char *id) {
  size_t n = json_array_size(links);
  if (!n || !n_npus) return;
  enum { MAXC = 2 * MAX_DIMS };
  int used[MAXC] = {0};
  size_t rows = n_npus <= MAX_ROWS ? n_npus : MAX_ROWS, per = (n_npus + rows - 1) / rows;
  rows = (n_npus + per - 1) / per;
  double *cell = etsim_malloc(rows * MAXC * sizeof *cell);
  if (!cell) return;
  for (size_t i = 0; i < rows * MAXC; i++) cell[i] = NAN;
  for (size_t k = 0; k < n; k++) {
    const json_t *l = json_array_get(links, k);
    const char *name = etsim_report__str_or(l, "link", ""), *d = strstr(name, "dim ");
    unsigned npu, dim;
    int in = strncmp(name, "switch -> NPU ", 14) == 0;
    if (!d || sscanf(in ? name + 14 : name, in ? "%u" : "NPU %u", &npu) != 1 ||
        sscanf(d, "dim %u", &dim) != 1 || npu >= n_npus || dim >= MAX_DIMS) {
      etsim_free(cell);
      return;
    }
    size_t c = 2 * dim + (size_t)in, r = npu / per;
    double v = 100 * etsim_report__num_or(l, "busy_fraction", 0);
    if (!(cell[r * MAXC + c] >= v)) cell[r * MAXC + c] = v;
    used[c] = 1;
  }
  /* keep the columns that occur */
  size_t cols = 0, map[MAXC];
  char names[MAXC][24];
  const char *cn[MAXC];
  for (size_t c = 0; c < MAXC; c++)
    if (used[c]) {
      snprintf(names[cols], sizeof names[cols], "dim %zu %s", c / 2, c % 2 ? "in" : "out");
      cn[cols] = names[cols];
      map[cols++] = c;
    }
  double *v = etsim_malloc(rows * (cols ? cols : 1) * sizeof *v);
  char **rn = etsim_calloc(rows, sizeof *rn);
  if (v && rn) {
    for (size_t r = 0; r < rows; r++) {
      for (size_t c = 0; c < cols; c++) v[r * cols + c] = cell[r * MAXC + map[c]];
      char s[48];
      if (per == 1) snprintf(s, sizeof s, "NPU %zu", r);
      else
        snprintf(s, sizeof s, "%zu-%zu", r * per,
                 (r + 1) * per - 1 < n_npus ? (r + 1) * per - 1 : n_npus - 1);
      rn[r] = etsim_strdup(s);
    }
    char note[240];
    snprintf(note, sizeof note,
             "Each cell: the busiest link %s in that dimension and direction (time sending over "
             "the iteration). Grey: no such link or no traffic.",
             per > 1 ? "of the group of NPUs" : "of the NPU");
    etsim_report__heat(b, &(rheat_t){id, "Link utilisation per NPU", note,
                                     "dimension and direction", per > 1 ? "NPUs" : "NPU", "% busy",
                                     rows, cols, v, (const char *const *)rn, cn, 0, NAN, 0, 0});
  }
  for (size_t r = 0; rn && r < rows; r++) etsim_free(rn[r]);
  etsim_free(rn);
  etsim_free(v);
  etsim_free(cell);
}

static int cmp_span(const void *a, const void *b) {
  const rspan_t *x = a, *y = b;
  if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
  return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Collectives on a few NPUs over the iteration: the critical one first. */
static void overview(rbuf_t *b, const rin_t *in, size_t n, size_t crit, double total, tunit_t u,
                     const char *id) {
  const json_t *colls = json_object_get(in->doc, "collectives");
  size_t nc = json_is_array(colls) ? json_array_size(colls) : 0;
  etsim_report__put(b, "<h3>Timeline overview</h3>\n");
  if (in->link) {
    etsim_report__put(b, "<p>The full timeline: <a href=\"");
    etsim_report__esc(b, in->link_href ? in->link_href : in->link);
    etsim_report__put(b, "\">");
    etsim_report__esc(b, in->link);
    etsim_report__put(b,
                      "</a> (open it in <a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a>:"
                      " Open trace file).</p>\n");
  } else {
    etsim_report__note(b, "etsim sim --timeline FILE writes the full Perfetto timeline.");
  }
  if (!nc) {
    etsim_report__note(b, "No collective was recorded in this result.");
    return;
  }
  size_t lanes = n < MAX_LANES ? n : MAX_LANES;
  long *lane_of = etsim_malloc(n * sizeof *lane_of);
  char **ln = etsim_calloc(lanes, sizeof(char *));
  rspan_t *sp = etsim_malloc(nc * sizeof *sp);
  const char *tn[16];
  int tc[16];
  size_t ntypes = 0;
  static const int type_col[16] = {1, 3, 4, 5, 7, 6, 2, 0, 1, 3, 4, 5, 7, 6, 2, 0};
  if (!lane_of || !ln || !sp) goto out;
  for (size_t i = 0; i < n; i++) lane_of[i] = -1;
  /* the critical NPU, then NPUs spread evenly over the ids */
  size_t used = 0;
  lane_of[crit] = (long)used;
  ln[used++] = NULL;
  for (size_t k = 0; used < lanes && k < lanes; k++) {
    size_t i = lanes > 1 ? k * (n - 1) / (lanes - 1) : 0;
    if (lane_of[i] >= 0) continue;
    lane_of[i] = (long)used++;
  }
  for (size_t i = 0; i < n && used < lanes; i++)
    if (lane_of[i] < 0) lane_of[i] = (long)used++;
  lanes = used;
  for (size_t i = 0; i < n; i++)
    if (lane_of[i] >= 0) {
      char s[48];
      snprintf(s, sizeof s, i == crit ? "NPU %zu (critical)" : "NPU %zu", i);
      ln[lane_of[i]] = etsim_strdup(s);
    }
  size_t m = 0;
  for (size_t k = 0; k < nc; k++) {
    const json_t *c = json_array_get(colls, k);
    double npu = etsim_report__num_or(c, "npu", -1), t0 = etsim_report__num_or(c, "start_ns", NAN),
           t1 = etsim_report__num_or(c, "end_ns", NAN);
    if (!(npu >= 0) || npu >= (double)n || !isfinite(t0) || !isfinite(t1)) continue;
    long l = lane_of[(size_t)npu];
    if (l < 0) continue;
    const char *ty = etsim_report__str_or(c, "type", "?");
    size_t t = 0;
    while (t < ntypes && strcmp(tn[t], ty)) t++;
    if (t == ntypes && ntypes < 16) {
      tn[ntypes] = ty;
      tc[ntypes] = type_col[ntypes];
      ntypes++;
    }
    if (t >= ntypes) t = ntypes - 1;
    sp[m++] = (rspan_t){(uint32_t)l, t0 / u.div, t1 / u.div, tc[t]};
  }
  etsim_qsort(sp, m, sizeof *sp, cmp_span);
  char xl[48], note[200];
  snprintf(xl, sizeof xl, "time (%s)", u.name);
  snprintf(note, sizeof note,
           "Collectives in flight on %zu of %zu NPUs (gaps: compute or waiting). Spans closer "
           "than half a pixel are drawn as one.",
           lanes, n);
  etsim_report__lanes(
      b, &(rlanes_t){id, "Collectives over the iteration", note, xl, lanes, (const char *const *)ln,
                     sp, m, total / u.div, ntypes, tn, tc, 0});
out:
  for (size_t l = 0; ln && l < lanes; l++) etsim_free(ln[l]);
  etsim_free(ln);
  etsim_free(lane_of);
  etsim_free(sp);
}

static void by_type_table(rbuf_t *b, const json_t *types, size_t n, tunit_t u) {
  size_t nt = json_is_array(types) ? json_array_size(types) : 0;
  if (!nt) return;
  etsim_report__fmt(b,
                    "<table><tr><th class=\"l\">collective</th><th>count per NPU</th><th>bytes "
                    "per NPU</th><th>exposed per NPU (%s)</th></tr>\n",
                    u.name);
  for (size_t k = 0; k < nt; k++) {
    const json_t *t = json_array_get(types, k);
    char c[32], by[32], ex[32];
    etsim_report__num(c, sizeof c, etsim_report__num_or(t, "count", 0) / (double)n);
    etsim_report__bytes(by, sizeof by, etsim_report__num_or(t, "bytes", 0) / (double)n);
    etsim_report__num(ex, sizeof ex,
                      etsim_report__num_or(t, "exposed_ns_sum", 0) / (double)n / u.div);
    etsim_report__put(b, "<tr><td class=\"l\">");
    etsim_report__esc(b, etsim_report__str_or(t, "type", "?"));
    etsim_report__fmt(b, "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", c, by, ex);
  }
  etsim_report__put(b, "</table>\n");
}

/* Several jobs (etsim sim --job): one row per job. */
static void jobs_table(rbuf_t *b, const json_t *jobs, tunit_t u) {
  size_t nj = json_is_array(jobs) ? json_array_size(jobs) : 0;
  if (!nj) return;
  etsim_report__fmt(b,
                    "<table><tr><th class=\"l\">job</th><th>NPUs</th><th>iteration (%s)</th>"
                    "<th>alone (%s)</th><th>slowdown</th></tr>\n",
                    u.name, u.name);
  for (size_t k = 0; k < nj; k++) {
    const json_t *j = json_array_get(jobs, k);
    const json_t *ids = json_object_get(j, "npus");
    char it[32], al[32] = "", sl[32] = "";
    etsim_report__num(it, sizeof it, etsim_report__num_or(j, "iteration_ns", NAN) / u.div);
    if (json_is_number(json_object_get(j, "alone_ns"))) {
      etsim_report__num(al, sizeof al, etsim_report__num_or(j, "alone_ns", NAN) / u.div);
      snprintf(sl, sizeof sl, "%.4fx", etsim_report__num_or(j, "slowdown", NAN));
    }
    etsim_report__fmt(b, "<tr><td class=\"l\">%zu ", k);
    etsim_report__esc(b, etsim_report__str_or(j, "name", "?"));
    etsim_report__fmt(b, "</td><td>%zu</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                      json_is_array(ids) ? json_array_size(ids) : 0, it, al, sl);
  }
  etsim_report__put(b, "</table>\n");
}

int etsim_report__sim(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  npu_t *p = NULL;
  size_t n = 0;
  int ndims = 0;
  double total = 0;
  if (etsim_report__get_num(in, in->doc, "total_ns", NULL, &total, err)) return ETSIM_EFORMAT;
  int rc = read_npus(in, &p, &n, &ndims, err);
  if (rc) return rc;
  size_t crit = 0;
  double sc = 0, se = 0, snc = 0, sb = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].finish > p[crit].finish) crit = i;
    sc += p[i].compute;
    se += p[i].exposed;
    snc += isfinite(p[i].exposed_nc) ? p[i].exposed_nc : 0;
    sb += p[i].bytes;
  }
  if (!(total > 0)) total = p[crit].finish;
  tunit_t u = unit_for(total);
  char id[32], k_npus[32], k_it[48], k_crit[32], k_comp[48], k_exp[48], k_nc[48], k_by[32],
      k_wall[48], k_topo[160] = "", k_ev[32];
  snprintf(id, sizeof id, "in%zu", in->index);
  char title[256];
  snprintf(title, sizeof title, "Simulation: %s", in->label);
  etsim_report__section(b, id, title, in->live ? "this run" : in->path);
  snprintf(k_npus, sizeof k_npus, "%zu", n);
  fmt_time(k_it, sizeof k_it, total, u);
  snprintf(k_crit, sizeof k_crit, "NPU %zu", crit);
  fmt_time(k_comp, sizeof k_comp, sc / (double)n, u);
  fmt_time(k_exp, sizeof k_exp, se / (double)n, u);
  fmt_time(k_nc, sizeof k_nc, snc / (double)n, u);
  etsim_report__bytes(k_by, sizeof k_by, sb / (double)n);
  const json_t *topo = json_object_get(in->doc, "topology");
  for (size_t d = 0; json_is_array(topo) && d < json_array_size(topo); d++) {
    const json_t *t = json_array_get(topo, d);
    size_t k = strlen(k_topo);
    snprintf(k_topo + k, sizeof k_topo - k, "%s%s(%lld, %g GB/s)", d ? " x " : "",
             etsim_report__str_or(t, "kind", "?"), (long long)etsim_report__num_or(t, "npus", 0),
             etsim_report__num_or(t, "bw_gbps", 0));
  }
  double wall =
      etsim_report__num_or(in->doc, "cpu_s", etsim_report__num_or(in->doc, "wall_s", NAN));
  snprintf(k_wall, sizeof k_wall, "%.3f s", wall);
  etsim_report__num(k_ev, sizeof k_ev, etsim_report__num_or(in->doc, "events", NAN));
  const char *kv[] = {"NPUs", k_npus, "iteration", k_it, "critical NPU", k_crit,
                      "compute per NPU (mean)", k_comp, "exposed communication (mean)", k_exp,
                      "communication, no compute (mean)", k_nc, "bytes moved per NPU (mean)", k_by,
                      /* the simulator's own cost, not simulated time */
                      json_is_number(json_object_get(in->doc, "cpu_s")) ? "CPU time of the run"
                                                                        : "wall time of the run",
                      isfinite(wall) ? k_wall : NULL, "events", k_ev};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
  if (k_topo[0]) etsim_report__note(b, "Network: %s.", k_topo);
  const char *red = etsim_report__str_or(in->doc, "reduction", "");
  if (red[0]) etsim_report__note(b, "Reduction: %s.", red);
  breakdown(b, in, p, n, crit, u, "sim-breakdown");
  dim_bars(b, in, p, n, ndims, u, "sim-dims");
  by_type_table(b, json_object_get(in->doc, "by_type"), n, u);
  jobs_table(b, json_object_get(in->doc, "jobs"), u);
  finish_bars(b, p, n, crit, u, "sim-finish");
  dim_heat(b, in, p, n, ndims, total, "sim-util");
  const json_t *links = json_object_get(in->doc, "links");
  if (json_is_array(links)) {
    link_heat(b, links, n, "sim-link-heat");
    link_bars(b, links, "sim-links");
  }
  overview(b, in, n, crit, total, u, "sim-timeline");
  etsim_report__section_end(b);
  etsim_free(p);
  return b->oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : 0;
}
