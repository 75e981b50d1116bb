/* The replay sections of the HTML report: how close a replay came to the
 * trace it replayed (etsim replay --json), node by node (--csv), and the
 * dry run's per-rank times (--dry-run --json).
 *
 * Measured against recorded is drawn on log-log axes around y = x with the
 * +-10 % and +-25 % bands the fidelity report counts, so a point's distance
 * from the diagonal is its relative error whatever its size.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KINDS 8
#define MAX_BARS 128

static void pct(char *s, size_t cap, double v) {
  if (isfinite(v)) snprintf(s, cap, "%.1f %%", 100 * v);
  else snprintf(s, cap, "-");
}

static int report(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  const json_t *d = in->doc, *it = json_object_get(d, "iteration"),
               *pn = json_object_get(d, "per_node");
  double meas;
  if (etsim_report__get_num(in, it, "measured_median_us", "iteration", &meas, err))
    return ETSIM_EFORMAT;
  double span = etsim_report__num_or(it, "recorded_span_us", 0);
  double rec = span > 0 ? span : etsim_report__num_or(it, "dry_run_us", NAN);
  char id[32], title[256], k_r[32], k_m[32], k_rec[48], k_err[32], k_md[32], k_w[32], k_sp[32],
      k_10[32], k_25[32], k_cov[64];
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Replay: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  snprintf(k_r, sizeof k_r, "%lld ranks, %lld nodes",
           (long long)etsim_report__num_or(d, "ranks", 0),
           (long long)etsim_report__num_or(d, "nodes", 0));
  etsim_report__time_us(k_m, sizeof k_m, meas);
  etsim_report__time_us(k_rec, sizeof k_rec - 16, rec);
  strcat(k_rec, span > 0 ? " (span)" : " (dry run)");
  if (isfinite(rec) && rec > 0) snprintf(k_err, sizeof k_err, "%+.1f %%", 100 * (meas - rec) / rec);
  else snprintf(k_err, sizeof k_err, "-");
  pct(k_md, sizeof k_md, etsim_report__num_or(pn, "mdape", NAN));
  pct(k_w, sizeof k_w, etsim_report__num_or(pn, "weighted_error", NAN));
  snprintf(k_sp, sizeof k_sp, "%.3f", etsim_report__num_or(pn, "spearman", NAN));
  pct(k_10, sizeof k_10, etsim_report__num_or(pn, "within10", NAN));
  pct(k_25, sizeof k_25, etsim_report__num_or(pn, "within25", NAN));
  const json_t *cov = json_object_get(d, "coverage");
  snprintf(k_cov, sizeof k_cov, "%lld of %lld nodes",
           (long long)etsim_report__num_or(cov, "nodes_mapped", 0),
           (long long)etsim_report__num_or(cov, "nodes", 0));
  const char *kv[] = {"run",
                      k_r,
                      "iteration measured (median)",
                      k_m,
                      "iteration recorded",
                      k_rec,
                      "iteration error",
                      k_err,
                      "per node: median abs. error",
                      k_md,
                      "duration-weighted error",
                      k_w,
                      "Spearman rank correlation",
                      k_sp,
                      "within 10 %",
                      k_10,
                      "within 25 %",
                      k_25,
                      "mapped to kernels",
                      k_cov};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
  /* time by category, measured against recorded */
  const json_t *cats = json_object_get(d, "categories");
  const char *cn[16];
  double m[16], r[16];
  size_t nc = 0;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)cats, k, v) {
    if (nc == 16) break;
    double a = etsim_report__num_or(v, "measured_us", 0),
           z = etsim_report__num_or(v, "recorded_us", 0);
    if (!(a > 0) && !(z > 0)) continue;
    cn[nc] = k;
    m[nc] = a;
    r[nc++] = z;
  }
  if (nc) {
    int lg = 0;
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < nc; i++) {
      if (m[i] > 0 && m[i] < lo) lo = m[i];
      if (r[i] > 0 && r[i] < lo) lo = r[i];
      hi = m[i] > hi ? m[i] : hi;
      hi = r[i] > hi ? r[i] : hi;
    }
    lg = lo > 0 && hi / lo > 100;
    const char *sn[2] = {"measured", "recorded"};
    const double *vv[2] = {m, r};
    etsim_report__bars(b, &(rbars_t){"replay-categories", "Time by kind of node",
                                     lg ? "Summed over ranks and nodes; log scale."
                                        : "Summed over ranks and nodes.",
                                     "kind", "time (\xc2\xb5s)", nc, cn, 2, sn, vv, (int[]){0, 1},
                                     0, lg, NULL, NULL, -1, NULL, NULL});
  }
  /* communication nodes with a recorded time */
  const json_t *comm = json_object_get(d, "communication");
  size_t n = json_array_size(comm), k2 = 0;
  double *x = etsim_malloc((n ? n : 1) * sizeof *x), *y = etsim_malloc((n ? n : 1) * sizeof *y);
  char **tips = etsim_calloc(n ? n : 1, sizeof *tips);
  if (x && y && tips) {
    for (size_t i = 0; i < n; i++) {
      const json_t *c = json_array_get(comm, i);
      double rr = etsim_report__num_or(c, "recorded_us", 0),
             mm = etsim_report__num_or(c, "measured_us", 0);
      if (!(rr > 0) || !(mm > 0)) continue;
      char t[200], by[32];
      etsim_report__bytes(by, sizeof by, etsim_report__num_or(c, "bytes", NAN));
      snprintf(t, sizeof t, "rank %lld node %lld %s %s: measured %.4g us, recorded %.4g us",
               (long long)etsim_report__num_or(c, "rank", 0),
               (long long)etsim_report__num_or(c, "id", 0), etsim_report__str_or(c, "type", ""), by,
               mm, rr);
      x[k2] = rr;
      y[k2] = mm;
      tips[k2++] = n <= 4000 ? etsim_strdup(t) : NULL;
    }
    if (k2) {
      rseries_t s = {"communication nodes", x, y, k2, 1, RS_POINTS, (const char *const *)tips, 0};
      etsim_report__xy(b, &(rxy_t){"replay-scatter",
                                   "Communication: measured against recorded",
                                   "One point per communication node and rank. Dashed: equal; "
                                   "shaded: within 10 % and 25 %. replay --csv gives every node.",
                                   {"recorded (\xc2\xb5s, log scale)", 1, 0, NAN, NAN},
                                   {"measured (\xc2\xb5s, log scale)", 1, 0, NAN, NAN},
                                   &s,
                                   1,
                                   1,
                                   0,
                                   0});
    } else if (n) {
      etsim_report__note(b, "No communication node has a recorded time to compare with.");
    }
  }
  for (size_t i = 0; tips && i < k2; i++) etsim_free(tips[i]);
  etsim_free(tips);
  etsim_free(x);
  etsim_free(y);
  const json_t *mc = json_object_get(d, "machine");
  if (mc)
    etsim_report__note(b, "Machine: sgemm %.1f GFLOP/s, triad %.1f GB/s, ridge %.2f FLOP/byte.",
                       etsim_report__num_or(mc, "gemm_gflops", NAN),
                       etsim_report__num_or(mc, "stream_gbps", NAN),
                       etsim_report__num_or(mc, "ridge_flop_per_byte", NAN));
  etsim_report__section_end(b);
  return b->oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : 0;
}

/* Every node of every rank (replay --csv): measured against recorded, one
 * colour per kind of kernel. */
static int nodes_csv(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  size_t n = json_array_size(in->doc);
  char id[32], title[256];
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Replay nodes: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  if (n && !json_object_get(json_array_get(in->doc, 0), "measured_us")) {
    etsim_report__note(b,
                       "A dry run's CSV: its times are the recorded ones, so there is nothing "
                       "to compare.");
    etsim_report__section_end(b);
    return 0;
  }
  const char *kinds[MAX_KINDS];
  size_t nk = 0, cnt[MAX_KINDS] = {0}, in10 = 0, in25 = 0, total = 0;
  double *x = etsim_malloc((n ? n : 1) * sizeof *x), *y = etsim_malloc((n ? n : 1) * sizeof *y);
  int *kind = etsim_malloc((n ? n : 1) * sizeof *kind);
  if (!x || !y || !kind) {
    etsim_free(x);
    etsim_free(y);
    etsim_free(kind);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *o = json_array_get(in->doc, i);
    double r = etsim_report__num_or(o, "recorded_us", 0),
           m = etsim_report__num_or(o, "measured_us", 0);
    if (!(r > 0) || !(m > 0)) continue;
    const char *kd = etsim_report__str_or(o, "kind", "other");
    size_t k = 0;
    while (k < nk && strcmp(kinds[k], kd)) k++;
    if (k == nk) {
      if (nk < MAX_KINDS) kinds[nk++] = kd;
      else k = nk - 1;
    }
    x[total] = r;
    y[total] = m;
    kind[total++] = (int)k;
    cnt[k]++;
    double e = fabs(m - r) / r;
    in10 += e <= 0.10;
    in25 += e <= 0.25;
  }
  if (!total) {
    etsim_report__note(b, "No node has both a recorded and a measured time.");
  } else {
    /* one series per kind: gather its points together */
    double *sx = etsim_malloc(total * sizeof *sx), *sy = etsim_malloc(total * sizeof *sy);
    rseries_t s[MAX_KINDS];
    char names[MAX_KINDS][48];
    if (sx && sy) {
      size_t at = 0;
      for (size_t k = 0; k < nk; k++) {
        size_t a = at;
        for (size_t i = 0; i < total; i++)
          if (kind[i] == (int)k) {
            sx[at] = x[i];
            sy[at++] = y[i];
          }
        snprintf(names[k], sizeof names[k], "%s (%zu)", kinds[k], cnt[k]);
        s[k] = (rseries_t){names[k], sx + a, sy + a, at - a, (int)k, RS_POINTS, NULL, 0};
      }
      char note[300];
      snprintf(note, sizeof note,
               "%zu nodes with a recorded time: %.1f %% within 10 %%, %.1f %% within 25 %%. "
               "Dashed: equal; shaded: the bands.%s",
               total, 100.0 * (double)in10 / (double)total, 100.0 * (double)in25 / (double)total,
               total > 4000 ? " More than 4,000 points of a kind are thinned evenly." : "");
      etsim_report__xy(b, &(rxy_t){"replay-nodes",
                                   "Every node: measured against recorded",
                                   note,
                                   {"recorded (\xc2\xb5s, log scale)", 1, 0, NAN, NAN},
                                   {"measured (\xc2\xb5s, log scale)", 1, 0, NAN, NAN},
                                   s,
                                   nk,
                                   1,
                                   0,
                                   0});
    }
    etsim_free(sx);
    etsim_free(sy);
  }
  etsim_free(x);
  etsim_free(y);
  etsim_free(kind);
  etsim_report__section_end(b);
  return b->oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : 0;
}

/* The dry run: per rank the virtual time, the critical path and the span. */
static int dry(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  const json_t *pr = json_object_get(in->doc, "per_rank");
  size_t n = json_array_size(pr);
  if (!n) return etsim_error_set(err, ETSIM_EFORMAT, "%s: per_rank: missing or empty", in->path);
  size_t groups = n <= MAX_BARS ? n : MAX_BARS, per = (n + groups - 1) / groups;
  groups = (n + per - 1) / per;
  double *v[3];
  for (int k = 0; k < 3; k++) v[k] = etsim_calloc(groups, sizeof(double));
  char **cat = etsim_calloc(groups, sizeof *cat);
  int rc = 0;
  if (!v[0] || !v[1] || !v[2] || !cat) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  static const char *keys[3] = {"dry_run_us", "critical_path_us", "recorded_span_us"};
  for (size_t i = 0; i < n; i++) {
    const json_t *o = json_array_get(pr, i);
    char where[48];
    snprintf(where, sizeof where, "per_rank[%zu]", i);
    for (int k = 0; k < 3; k++) {
      double x;
      if (etsim_report__get_num(in, o, keys[k], where, &x, err)) {
        rc = ETSIM_EFORMAT;
        goto out;
      }
      if (x > v[k][i / per]) v[k][i / per] = x;
    }
  }
  for (size_t g = 0; g < groups; g++) {
    char s[48];
    if (per == 1) snprintf(s, sizeof s, "%zu", g);
    else
      snprintf(s, sizeof s, "%zu-%zu", g * per, (g + 1) * per - 1 < n ? (g + 1) * per - 1 : n - 1);
    cat[g] = etsim_strdup(s);
  }
  char id[32], title[256], xl[48];
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Replay dry run: %s", in->label);
  snprintf(xl, sizeof xl, per > 1 ? "ranks (groups of %zu, each its largest)" : "rank", per);
  etsim_report__section(b, id, title, in->path);
  const char *sn[3] = {"dry run (one compute lane)", "critical path (no resource limit)",
                       "recorded span"};
  etsim_report__bars(
      b, &(rbars_t){"replay-dry", "Dry run per rank",
                    "Recorded durations on a virtual clock: the dry run follows the "
                    "replay's scheduling; the critical path ignores resources.",
                    xl, "time (\xc2\xb5s)", groups, (const char *const *)cat, 3, sn,
                    (const double *const *)v, (int[]){0, 1, 2}, 0, 0, NULL, NULL, -1, NULL, NULL});
  etsim_report__section_end(b);
out:
  for (size_t g = 0; cat && g < groups; g++) etsim_free(cat[g]);
  etsim_free(cat);
  for (int k = 0; k < 3; k++) etsim_free(v[k]);
  return rc;
}

int etsim_report__replay(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  if (in->kind == RK_REPLAY) return report(b, in, err);
  if (in->kind == RK_REPLAY_CSV) return nodes_csv(b, in, err);
  return dry(b, in, err);
}
