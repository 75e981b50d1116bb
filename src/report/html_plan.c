/* The sharding sections of the HTML report: a plan (etsim shard -o
 * plan.json) as embedding cost and memory per rank, and the candidates the
 * planner weighed (etsim shard --json) as estimate against simulation.
 *
 * Cost per rank is the sum of its shards' estimated milliseconds, stacked
 * by sharding type, with the slowest rank marked (it sets the embedding
 * part of the iteration).  More than MAX_BARS ranks are drawn in groups.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BARS 128
#define MAX_TYPES 8

static int type_index(const char **types, size_t *nt, const char *t) {
  for (size_t i = 0; i < *nt; i++)
    if (!strcmp(types[i], t)) return (int)i;
  if (*nt == MAX_TYPES) return (int)*nt - 1;
  types[*nt] = t;
  return (int)(*nt)++;
}

/* A plan's embedding cost per rank by sharding type, and its HBM. */
typedef struct {
  size_t ranks;
  const char *types[MAX_TYPES]; /* in order of first use */
  size_t nt, count[MAX_TYPES];  /* tables of each type */
  double *ms;                   /* ranks x MAX_TYPES: estimated ms */
  double *hbm;                  /* per rank: bytes */
  double *tot;                  /* per rank: ms of all types */
  size_t slow;                  /* the rank with the most */
} ptab_t;

/* Sum every shard's cost and bytes onto its rank, take the summary's HBM
 * figures when given, and find the slowest rank. */
static int sum_shards(const rin_t *in, ptab_t *p, etsim_error_t *err) {
  const json_t *tables = json_object_get(in->doc, "tables");
  size_t ranks = p->ranks;
  for (size_t t = 0; t < json_array_size(tables); t++) {
    const json_t *tab = json_array_get(tables, t), *sh = json_object_get(tab, "shards");
    int ty = type_index(p->types, &p->nt, etsim_report__str_or(tab, "type", "?"));
    p->count[ty]++;
    for (size_t k = 0; k < json_array_size(sh); k++) {
      const json_t *s = json_array_get(sh, k);
      char where[64];
      double r, m;
      snprintf(where, sizeof where, "tables[%zu].shards[%zu]", t, k);
      if (etsim_report__get_num(in, s, "rank", where, &r, err) ||
          etsim_report__get_num(in, s, "ms", where, &m, err))
        return ETSIM_EFORMAT;
      if (!(r >= 0 && r < (double)ranks))
        return etsim_error_set(err, ETSIM_EFORMAT, "%s: %s.rank: %g is not a rank of %zu", in->path,
                               where, r, ranks);
      p->ms[(size_t)r * MAX_TYPES + (size_t)ty] += m;
      p->hbm[(size_t)r] += etsim_report__num_or(s, "bytes", 0);
    }
  }
  /* the summary's HBM figure when there is one (it includes dense parts) */
  const json_t *rs = json_object_get(in->doc, "ranks_summary");
  for (size_t k = 0; json_is_array(rs) && k < json_array_size(rs); k++) {
    const json_t *o = json_array_get(rs, k);
    double r = etsim_report__num_or(o, "rank", -1), h = etsim_report__num_or(o, "hbm_bytes", NAN);
    if (r >= 0 && r < (double)ranks && isfinite(h)) p->hbm[(size_t)r] = h;
  }
  p->tot = etsim_calloc(ranks, sizeof *p->tot);
  if (!p->tot) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t r = 0; r < ranks; r++) {
    for (size_t t = 0; t < p->nt; t++) p->tot[r] += p->ms[r * MAX_TYPES + t];
    if (p->tot[r] > p->tot[p->slow]) p->slow = r;
  }
  return 0;
}

/* The section's heading and its facts table. */
static void plan_facts(rbuf_t *b, const rin_t *in, const ptab_t *p) {
  const json_t *d = in->doc;
  char id[32], title[256], k_ranks[48], k_est[32], k_max[32], k_batch[32], k_types[200] = "";
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Sharding plan: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  snprintf(k_ranks, sizeof k_ranks, "%zu (%lld per host)", p->ranks,
           (long long)etsim_report__num_or(d, "ranks_per_host", 0));
  etsim_report__num(k_est, sizeof k_est, etsim_report__num_or(d, "estimate_us", NAN) / 1e3);
  strcat(k_est, " ms");
  snprintf(k_max, sizeof k_max, "%.3f ms (rank %zu)", p->tot[p->slow], p->slow);
  etsim_report__num(k_batch, sizeof k_batch, etsim_report__num_or(d, "batch", NAN));
  for (size_t t = 0; t < p->nt; t++) {
    size_t k = strlen(k_types);
    snprintf(k_types + k, sizeof k_types - k, "%s%s %zu", t ? ", " : "", p->types[t], p->count[t]);
  }
  const char *kv[] = {"model",
                      etsim_report__str_or(d, "model", "?"),
                      "ranks",
                      k_ranks,
                      "batch",
                      k_batch,
                      "tables",
                      k_types,
                      "estimated iteration",
                      k_est,
                      "slowest embedding rank",
                      k_max,
                      "planner",
                      etsim_report__str_or(d, "label", NULL)};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
}

/* Cost per rank, stacked by type, and HBM per rank; past MAX_BARS ranks
 * a bar is a group's slowest (largest) rank, whiskers span the group. */
static int plan_bars(rbuf_t *b, const ptab_t *p, etsim_error_t *err) {
  size_t ranks = p->ranks, nt = p->nt, slow = p->slow;
  const double *tot = p->tot;
  size_t groups = ranks <= MAX_BARS ? ranks : MAX_BARS, per = (ranks + groups - 1) / groups;
  groups = (ranks + per - 1) / per;
  double *val[MAX_TYPES], *lo = etsim_calloc(groups, sizeof *lo),
                          *hi = etsim_calloc(groups, sizeof *hi);
  double *hb = etsim_calloc(groups, sizeof *hb), *hlo = etsim_calloc(groups, sizeof *hlo),
         *hhi = etsim_calloc(groups, sizeof *hhi);
  char **cat = etsim_calloc(groups, sizeof *cat);
  for (size_t t = 0; t < nt; t++) val[t] = etsim_calloc(groups, sizeof(double));
  int ok = lo && hi && hb && hlo && hhi && cat, rc = 0;
  for (size_t t = 0; t < nt; t++) ok = ok && val[t];
  if (ok) {
    for (size_t g = 0; g < groups; g++) {
      size_t a = g * per, z = a + per < ranks ? a + per : ranks, top = a;
      lo[g] = hlo[g] = INFINITY;
      hi[g] = hhi[g] = -INFINITY;
      for (size_t r = a; r < z; r++) {
        if (tot[r] > tot[top]) top = r;
        lo[g] = tot[r] < lo[g] ? tot[r] : lo[g];
        hi[g] = tot[r] > hi[g] ? tot[r] : hi[g];
        double h = p->hbm[r] / 1073741824.0;
        hlo[g] = h < hlo[g] ? h : hlo[g];
        hhi[g] = h > hhi[g] ? h : hhi[g];
      }
      for (size_t t = 0; t < nt; t++) val[t][g] = p->ms[top * MAX_TYPES + t];
      hb[g] = hhi[g];
      char s[48];
      if (per == 1) snprintf(s, sizeof s, "%zu", a);
      else snprintf(s, sizeof s, "%zu-%zu", a, z - 1);
      cat[g] = etsim_strdup(s);
    }
    char note[300], ml[64], xl[48];
    snprintf(ml, sizeof ml, "slowest: rank %zu, %.3f ms", slow, tot[slow]);
    snprintf(xl, sizeof xl, per > 1 ? "ranks (groups of %zu)" : "rank", per);
    snprintf(note, sizeof note,
             "The planner's estimate of each rank's embedding work (lookups, and their "
             "backward and update) by sharding type.%s",
             per > 1 ? " Each bar is its group's slowest rank; whiskers span the group." : "");
    int cols[MAX_TYPES] = {0, 1, 2, 3, 4, 5, 6, 7};
    etsim_report__bars(
        b, &(rbars_t){"shard-cost", "Embedding cost per rank", note, xl, "cost (ms)", groups,
                      (const char *const *)cat, nt, p->types, (const double *const *)val, cols, 1,
                      0, per > 1 ? lo : NULL, per > 1 ? hi : NULL, (long)(slow / per), ml, NULL});
    const double *hv[1] = {hb};
    const char *hn[1] = {"HBM"};
    etsim_report__bars(
        b, &(rbars_t){"shard-hbm", "HBM used per rank",
                      per > 1 ? "The group's largest; whiskers span the group."
                              : "Embedding rows kept in HBM (and dense state when "
                                "the plan gives it).",
                      xl, "HBM (GiB)", groups, (const char *const *)cat, 1, hn, hv, (int[]){5}, 0,
                      0, per > 1 ? hlo : NULL, per > 1 ? hhi : NULL, -1, NULL, NULL});
  } else {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t g = 0; cat && g < groups; g++) etsim_free(cat[g]);
  etsim_free(cat);
  for (size_t t = 0; t < nt; t++) etsim_free(val[t]);
  etsim_free(lo);
  etsim_free(hi);
  etsim_free(hb);
  etsim_free(hlo);
  etsim_free(hhi);
  return rc;
}

static int plan(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  const json_t *d = in->doc, *tables = json_object_get(d, "tables");
  double ranks_d;
  if (etsim_report__get_num(in, d, "ranks", NULL, &ranks_d, err)) return ETSIM_EFORMAT;
  if (!(ranks_d >= 1 && ranks_d <= (double)(1u << 24)))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: ranks: must be 1 to 2^24", in->path);
  if (!json_is_array(tables))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: tables: missing", in->path);
  ptab_t p = {.ranks = (size_t)ranks_d};
  p.ms = etsim_calloc(p.ranks * MAX_TYPES, sizeof *p.ms);
  p.hbm = etsim_calloc(p.ranks, sizeof *p.hbm);
  int rc = 0;
  if (!p.ms || !p.hbm) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (!rc) rc = sum_shards(in, &p, err);
  if (!rc) {
    plan_facts(b, in, &p);
    rc = plan_bars(b, &p, err);
    etsim_report__section_end(b);
  }
  etsim_free(p.tot);
  etsim_free(p.ms);
  etsim_free(p.hbm);
  return rc;
}

/* The candidates: estimate and (when simulated) simulation, side by side. */
static int cands(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  const json_t *d = in->doc, *c = json_object_get(d, "candidates");
  if (!json_is_array(c) || !json_array_size(c))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: candidates: missing or empty", in->path);
  size_t n = json_array_size(c);
  double chosen = etsim_report__num_or(d, "chosen", -1);
  double *est = etsim_calloc(n, sizeof *est), *sim = etsim_calloc(n, sizeof *sim);
  const char **cat = etsim_calloc(n, sizeof *cat);
  if (!est || !sim || !cat) {
    etsim_free(est);
    etsim_free(sim);
    etsim_free(cat);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  int any_sim = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *o = json_array_get(c, i);
    char where[48];
    snprintf(where, sizeof where, "candidates[%zu]", i);
    if (etsim_report__get_num(in, o, "estimate_us", where, &est[i], err)) {
      etsim_free(est);
      etsim_free(sim);
      etsim_free(cat);
      return ETSIM_EFORMAT;
    }
    est[i] /= 1e3;
    sim[i] = etsim_report__num_or(o, "simulated_us", NAN) / 1e3;
    any_sim |= isfinite(sim[i]);
    cat[i] = etsim_report__str_or(o, "label", "?");
  }
  char id[32], title[256];
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Sharding candidates: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  const char *sn[2] = {"planner's estimate", "simulated"};
  const double *v[2] = {est, sim};
  char ml[96];
  snprintf(ml, sizeof ml, "chosen: %s",
           chosen >= 0 && chosen < (double)n ? cat[(size_t)chosen] : "?");
  etsim_report__bars(b, &(rbars_t){"shard-candidates", "Iteration time of each candidate plan",
                                   any_sim ? "The planner simulates its finalists on the given "
                                             "platform and keeps the fastest."
                                           : "Estimates only (shard --network --system simulates "
                                             "the finalists).",
                                   "candidate", "iteration (ms)", n, cat, any_sim ? 2 : 1, sn, v,
                                   (int[]){0, 1}, 0, 0, NULL, NULL, (long)chosen, ml, NULL});
  etsim_report__put(b,
                    "<table><tr><th class=\"l\">candidate</th><th class=\"l\">tables</th>"
                    "<th>estimate (ms)</th><th>simulated (ms)</th><th>error</th>"
                    "<th>largest HBM (GB)</th></tr>\n");
  for (size_t i = 0; i < n; i++) {
    const json_t *o = json_array_get(c, i);
    char e[32], s[32], er[32], h[32];
    etsim_report__num(e, sizeof e, est[i]);
    etsim_report__num(s, sizeof s, sim[i]);
    if (isfinite(sim[i]) && sim[i] > 0)
      snprintf(er, sizeof er, "%+.1f %%", 100 * (est[i] - sim[i]) / sim[i]);
    else snprintf(er, sizeof er, "-");
    etsim_report__num(h, sizeof h, etsim_report__num_or(o, "max_hbm_gb", NAN));
    etsim_report__fmt(b, "<tr%s><td class=\"l\">",
                      (double)i == chosen ? " style=\"font-weight:600\"" : "");
    etsim_report__esc(b, cat[i]);
    etsim_report__put(b, "</td><td class=\"l\">");
    etsim_report__esc(b, etsim_report__str_or(o, "types", ""));
    etsim_report__fmt(b, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", e, s, er, h);
  }
  etsim_report__put(b, "</table>\n");
  etsim_report__section_end(b);
  etsim_free(est);
  etsim_free(sim);
  etsim_free(cat);
  return b->oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : 0;
}

int etsim_report__plan(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  return in->kind == RK_PLAN ? plan(b, in, err) : cands(b, in, err);
}
