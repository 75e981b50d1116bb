/*
 * planio.c — plans as JSON.  The writer records the shards, the iteration
 * options and the memory levels; the reader checks every value's type and
 * range and that each table's shards tile it as its type says, so a plan
 * that reads is one `gen dlrm` can turn into a trace that runs.
 */
#include "shard_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int etsim_shard_plan_write(const etsim_shard_plan_t *p, const etsim_shard_model_t *m,
                           const char *path, etsim_error_t *err) {
  if (p->n_tables != m->n_tables)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: the plan has %zu tables, model %s has %zu", path,
                           p->n_tables, m->name, m->n_tables);
  etsim_outfile_t of;
  int rc = etsim_outfile_open(&of, path, err);
  if (rc) return rc;
  FILE *fp = of.fp;
  const etsim_shard_step_t *s = &p->step;
  fputs("{\"etsim_shard_plan\": 2, \"model\": ", fp);
  etsim_shard__json_str(fp, m->name);
  fprintf(fp, ", \"ranks\": %zu, \"ranks_per_host\": %zu, \"batch\": %u, \"label\": ", p->n_ranks,
          p->ranks_per_host, p->batch);
  etsim_shard__json_str(fp, p->label);
  fprintf(fp, ", \"max_rank_ms\": %.6f, \"estimate_us\": %.3f,\n", p->max_ms, p->est.iter_ns / 1e3);
  fprintf(fp,
          " \"step\": {\"a2a_precision\": \"%s\", \"ar_precision\": \"%s\", \"pipeline\": %s, "
          "\"iterations\": %u, \"peak_tflops\": %.17g, \"mem_gbps\": %.17g, \"bucket_bytes\": "
          "%llu},\n",
          etsim_shard_prec_name(s->a2a_prec), etsim_shard_prec_name(s->ar_prec),
          s->pipeline ? "true" : "false", s->iterations, s->peak_tflops, s->mem_gbps,
          (unsigned long long)s->bucket_bytes);
  if (p->tiered) {
    const etsim_shard_tiers_t *k = &p->tiers;
    fprintf(fp,
            " \"tiers\": {\"ddr_gb\": %.17g, \"ssd_gb\": %.17g, \"ddr_gbps\": %.17g, "
            "\"ssd_gbps\": %.17g, \"ddr_latency_us\": %.17g, \"ssd_latency_us\": %.17g, "
            "\"ddr_granule\": %u, \"ssd_granule\": %u, \"zipf_alpha\": %.17g},\n",
            k->ddr_gb, k->ssd_gb, k->ddr_gbps, k->ssd_gbps, k->ddr_latency_us, k->ssd_latency_us,
            k->ddr_granule, k->ssd_granule, k->zipf_alpha);
  }
  fputs(" \"tables\": [", fp);
  for (size_t t = 0; t < p->n_tables; t++) {
    const etsim_shard_table_t *x = &m->tables[t];
    fprintf(fp, "%s\n  {\"name\": ", t ? "," : "");
    etsim_shard__json_str(fp, x->name);
    fprintf(
        fp, ", \"rows\": %llu, \"dim\": %u, \"pooling\": %.17g, \"type\": \"%s\", \"shards\": [",
        (unsigned long long)x->rows, x->dim, x->pooling, etsim_shard_type_name(p->table_type[t]));
    for (size_t i = p->table_first[t]; i < p->table_first[t + 1]; i++) {
      const etsim_shard_t *sh = &p->shards[i];
      fprintf(fp,
              "%s{\"rank\": %u, \"rows\": [%llu, %llu], \"cols\": [%u, %u], \"ms\": %.6f, "
              "\"bytes\": %llu",
              i > p->table_first[t] ? ", " : "", sh->rank, (unsigned long long)sh->row_off,
              (unsigned long long)sh->rows, sh->col_off, sh->cols, etsim_shard__total(sh),
              (unsigned long long)sh->hbm_bytes);
      if (p->tiered)
        fprintf(fp,
                ", \"hbm_rows\": %llu, \"ddr_rows\": %llu, \"hbm_hit\": %.17g, \"ddr_hit\": %.17g",
                (unsigned long long)sh->hbm_rows, (unsigned long long)sh->ddr_rows, sh->hbm_hit,
                sh->ddr_hit);
      fputc('}', fp);
    }
    fputs("]}", fp);
  }
  fputs("\n ],\n \"ranks_summary\": [", fp);
  for (size_t r = 0; r < p->n_ranks; r++)
    fprintf(fp, "%s\n  {\"rank\": %zu, \"ms\": %.6f, \"hbm_bytes\": %llu}", r ? "," : "", r,
            p->rank_ms[r], (unsigned long long)p->rank_bytes[r]);
  fputs("\n ]}\n", fp);
  return etsim_outfile_commit(&of, err);
}

/* ------------------------------------------------------------- reading */

typedef struct {
  const char *path;
  etsim_error_t *err;
} rd_t;

static int bad(rd_t *r, const char *key, const char *what) {
  return etsim_error_set(r->err, ETSIM_EFORMAT, "%s: %s: %s", r->path, key, what);
}

/* An integer in [lo, hi]; absent is an error unless dflt is given. */
static int rd_u64(rd_t *r, json_t *o, const char *name, const char *where, uint64_t lo, uint64_t hi,
                  const uint64_t *dflt, uint64_t *out) {
  char key[160];
  snprintf(key, sizeof key, "%s%s", where, name);
  json_t *v = json_object_get(o, name);
  if (!v) {
    if (!dflt) return bad(r, key, "missing");
    *out = *dflt;
    return 0;
  }
  /* jansson holds integers as long long: a negative or non-integer value
   * is refused here rather than wrapped. */
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < lo ||
      (uint64_t)json_integer_value(v) > hi) {
    char what[96];
    snprintf(what, sizeof what, "must be an integer in %llu..%llu", (unsigned long long)lo,
             (unsigned long long)hi);
    return bad(r, key, what);
  }
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int rd_num(rd_t *r, json_t *o, const char *name, const char *where, double lo, double hi,
                  double *inout) {
  json_t *v = json_object_get(o, name);
  if (!v) return 0;
  char key[160];
  snprintf(key, sizeof key, "%s%s", where, name);
  double x = json_number_value(v);
  if (!json_is_number(v) || !isfinite(x) || x < lo || x > hi) {
    char what[96];
    snprintf(what, sizeof what, "must be a number in [%g, %g]", lo, hi);
    return bad(r, key, what);
  }
  *inout = x;
  return 0;
}

/* A [offset, count] pair within 0..limit. */
static int rd_range(rd_t *r, json_t *a, const char *key, uint64_t limit, uint64_t *off,
                    uint64_t *n) {
  json_t *x = json_array_get(a, 0), *y = json_array_get(a, 1);
  if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_integer(x) || !json_is_integer(y) ||
      json_integer_value(x) < 0 || json_integer_value(y) < 0 ||
      (uint64_t)json_integer_value(x) > limit ||
      (uint64_t)json_integer_value(y) > limit - (uint64_t)json_integer_value(x)) {
    char what[128];
    snprintf(what, sizeof what, "must be [offset, count], non-negative integers within the %llu",
             (unsigned long long)limit);
    return bad(r, key, what);
  }
  *off = (uint64_t)json_integer_value(x);
  *n = (uint64_t)json_integer_value(y);
  return 0;
}

static int read_step(rd_t *r, json_t *root, etsim_shard_opts_t *o) {
  json_t *s = json_object_get(root, "step");
  if (s) {
    if (!json_is_object(s)) return bad(r, "step", "must be an object");
    static const char *const pk[2] = {"a2a_precision", "ar_precision"};
    int *dst[2] = {&o->step.a2a_prec, &o->step.ar_prec};
    for (int i = 0; i < 2; i++) {
      json_t *v = json_object_get(s, pk[i]);
      if (!v) continue;
      int pr = json_is_string(v) ? etsim_shard_prec_parse(json_string_value(v)) : -1;
      char key[48];
      snprintf(key, sizeof key, "step.%s", pk[i]);
      if (pr < 0) return bad(r, key, "must be fp32, fp16, bf16, fp8 or int8");
      *dst[i] = pr;
    }
    json_t *pl = json_object_get(s, "pipeline");
    if (pl && !json_is_boolean(pl)) return bad(r, "step.pipeline", "must be true or false");
    if (pl) o->step.pipeline = json_is_true(pl);
    uint64_t it, bb, d_it = o->step.iterations, d_bb = o->step.bucket_bytes;
    int rc;
    if ((rc = rd_u64(r, s, "iterations", "step.", 1, 64, &d_it, &it)) ||
        (rc = rd_u64(r, s, "bucket_bytes", "step.", 1024, 1ull << 40, &d_bb, &bb)) ||
        (rc = rd_num(r, s, "peak_tflops", "step.", 1e-3, 1e6, &o->step.peak_tflops)) ||
        (rc = rd_num(r, s, "mem_gbps", "step.", 1e-3, 1e6, &o->step.mem_gbps)))
      return rc;
    o->step.iterations = (uint32_t)it;
    o->step.bucket_bytes = bb;
  }
  json_t *k = json_object_get(root, "tiers");
  if (k) {
    if (!json_is_object(k)) return bad(r, "tiers", "must be an object");
    etsim_shard_tiers_t *t = &o->tiers;
    uint64_t g1, g2, d1 = t->ddr_granule, d2 = t->ssd_granule;
    int rc;
    if ((rc = rd_num(r, k, "ddr_gb", "tiers.", 0, 1e6, &t->ddr_gb)) ||
        (rc = rd_num(r, k, "ssd_gb", "tiers.", 0, 1e9, &t->ssd_gb)) ||
        (rc = rd_num(r, k, "ddr_gbps", "tiers.", 1e-3, 1e6, &t->ddr_gbps)) ||
        (rc = rd_num(r, k, "ssd_gbps", "tiers.", 1e-3, 1e6, &t->ssd_gbps)) ||
        (rc = rd_num(r, k, "ddr_latency_us", "tiers.", 0, 1e6, &t->ddr_latency_us)) ||
        (rc = rd_num(r, k, "ssd_latency_us", "tiers.", 0, 1e6, &t->ssd_latency_us)) ||
        (rc = rd_num(r, k, "zipf_alpha", "tiers.", 0, 10, &t->zipf_alpha)) ||
        (rc = rd_u64(r, k, "ddr_granule", "tiers.", 1, 1u << 20, &d1, &g1)) ||
        (rc = rd_u64(r, k, "ssd_granule", "tiers.", 1, 1u << 20, &d2, &g2)))
      return rc;
    t->ddr_granule = (uint32_t)g1;
    t->ssd_granule = (uint32_t)g2;
  }
  return 0;
}

typedef struct {
  uint64_t off, n;
  uint32_t rank;
} span_t;

static int cmp_span(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->n < y->n ? -1 : x->n > y->n;
}

/* Spans sorted by offset must tile [0, total): each starts where the last
 * ended (empty spans allowed). */
static int tiles(span_t *v, size_t n, uint64_t total) {
  etsim_qsort(v, n, sizeof *v, cmp_span);
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].off != at) return 0;
    at += v[i].n;
  }
  return at == total;
}

/* Check table t's shards (already range-checked) against its type. */
static int check_layout(rd_t *r, const etsim_shard__ctx_t *c, size_t t, int ty,
                        const etsim_shard_t *sh, size_t n, span_t *sp, uint8_t *seen) {
  const etsim_shard_table_t *x = &c->m->tables[t];
  size_t P = c->P, Pl = c->Pl;
  char key[48];
  snprintf(key, sizeof key, "tables[%zu].shards", t);
  const char *why = NULL;
  size_t want = ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_DP ? P
                : ty == ETSIM_SHARD_TWRW                     ? Pl
                : ty == ETSIM_SHARD_TW                       ? 1
                                                             : 0;
  if (want && n != want) {
    char what[160];
    snprintf(what, sizeof what, "a %s table needs exactly %zu shards (%s), not %zu",
             etsim_shard_type_name(ty), want,
             ty == ETSIM_SHARD_TWRW ? "one on each rank of one host"
             : ty == ETSIM_SHARD_TW ? "the whole table"
                                    : "one on each rank",
             n);
    return bad(r, key, what);
  }
  memset(seen, 0, P);
  size_t host = sh[0].rank / Pl;
  for (size_t i = 0; i < n && !why; i++) {
    int full_rows = sh[i].row_off == 0 && sh[i].rows == x->rows;
    int full_cols = sh[i].col_off == 0 && sh[i].cols == x->dim;
    if ((ty == ETSIM_SHARD_TWRW || ty == ETSIM_SHARD_TWCW) && sh[i].rank / Pl != host)
      why = "all shards of a host-wise table must be on the ranks of one host";
    else if ((ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_DP || ty == ETSIM_SHARD_TWRW) &&
             seen[sh[i].rank]++)
      why = "a rank holds two shards of this table";
    else if ((ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_TWRW) && !full_cols)
      why = "row-wise shards take every column";
    else if ((ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW) && !full_rows)
      why = "column-wise shards take every row";
    else if ((ty == ETSIM_SHARD_TW || ty == ETSIM_SHARD_DP) && !(full_rows && full_cols))
      why = "table-wise and data-parallel shards hold the whole table";
    sp[i] = ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW
                ? (span_t){sh[i].col_off, sh[i].cols, sh[i].rank}
                : (span_t){sh[i].row_off, sh[i].rows, sh[i].rank};
  }
  if (!why && (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_TWRW) && !tiles(sp, n, x->rows))
    why = "the row ranges must cover the table's rows once, without gaps or overlaps";
  if (!why && (ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW) && !tiles(sp, n, x->dim))
    why = "the column blocks must cover the dimension once, without gaps or overlaps";
  return why ? bad(r, key, why) : 0;
}

/* Shard y of table t (type ty): its rank, rows and columns, rated, and
 * with tiers its HBM and DDR rows and hit rates.  sw names it in errors. */
static int read_shard(rd_t *r, const etsim_shard__ctx_t *c, size_t t, int ty, json_t *y,
                      const char *sw, etsim_shard_t *s) {
  const etsim_shard_table_t *mt = &c->m->tables[t];
  char key[192];
  int rc;
  if (!json_is_object(y)) return bad(r, sw, "must be an object");
  uint64_t rank, ro, rn, co, cn;
  if ((rc = rd_u64(r, y, "rank", sw, 0, c->P - 1, NULL, &rank))) return rc;
  snprintf(key, sizeof key, "%srows", sw);
  if ((rc = rd_range(r, json_object_get(y, "rows"), key, mt->rows, &ro, &rn))) return rc;
  snprintf(key, sizeof key, "%scols", sw);
  if ((rc = rd_range(r, json_object_get(y, "cols"), key, mt->dim, &co, &cn))) return rc;
  if (!cn) return bad(r, key, "a shard needs at least one column");
  etsim_shard__rate(c, ty, mt, rn, (uint32_t)cn, s);
  s->table = (uint32_t)t;
  s->rank = (uint32_t)rank;
  s->row_off = ro;
  s->col_off = (uint32_t)co;
  if (c->tiered && ty != ETSIM_SHARD_DP) {
    uint64_t hr, dr, dflt_h = rn, dflt_d = 0;
    double hh = 1, dh = 1;
    if ((rc = rd_u64(r, y, "hbm_rows", sw, 0, rn, &dflt_h, &hr)) ||
        (rc = rd_u64(r, y, "ddr_rows", sw, 0, rn - hr, &dflt_d, &dr)) ||
        (rc = rd_num(r, y, "hbm_hit", sw, 0, 1, &hh)) ||
        (rc = rd_num(r, y, "ddr_hit", sw, hh, 1, &dh)))
      return rc;
    s->hbm_rows = hr;
    s->ddr_rows = dr;
    s->hbm_hit = hh;
    s->ddr_hit = dh;
    s->hbm_bytes = (uint64_t)((double)hr * etsim_shard__row_bytes(c, mt, s->cols)) +
                   etsim_shard__io_bytes(c, ty, mt, s->cols);
  }
  return 0;
}

/* Table t of the plan, x: its type, the model's rows and dim, and its
 * shards from p->shards[*w] on, checked against the type's layout. */
static int read_table(rd_t *r, const etsim_shard__ctx_t *c, size_t t, json_t *x,
                      etsim_shard_plan_t *p, size_t *w, span_t *sp, uint8_t *seen) {
  const etsim_shard_model_t *m = c->m;
  const etsim_shard_table_t *mt = &m->tables[t];
  char where[64];
  snprintf(where, sizeof where, "tables[%zu].", t);
  if (!json_is_object(x)) return bad(r, where, "must be an object");
  json_t *tn = json_object_get(x, "type"), *sh = json_object_get(x, "shards");
  int ty = json_is_string(tn) ? etsim_shard_type_parse(json_string_value(tn)) : -1;
  char key[192];
  snprintf(key, sizeof key, "%stype", where);
  if (ty < 0) return bad(r, key, "must be one of tw, rw, cw, dp, twrw, twcw");
  if ((ty == ETSIM_SHARD_TWRW || ty == ETSIM_SHARD_TWCW) && c->hosts < 2)
    return bad(r, key, "twrw and twcw need more than one host");
  /* Facts the writer copied from the model must still match it. */
  json_t *xr = json_object_get(x, "rows"), *xd = json_object_get(x, "dim");
  if ((xr && (!json_is_integer(xr) || (uint64_t)json_integer_value(xr) != mt->rows)) ||
      (xd && (!json_is_integer(xd) || (uint64_t)json_integer_value(xd) != mt->dim))) {
    snprintf(key, sizeof key, "%srows", where);
    return etsim_error_set(r->err, ETSIM_EFORMAT,
                           "%s: %s: the plan's table is not model %s's (%llu x %u there)", r->path,
                           key, m->name, (unsigned long long)mt->rows, mt->dim);
  }
  snprintf(key, sizeof key, "%sshards", where);
  if (!json_is_array(sh) || !json_array_size(sh)) return bad(r, key, "must be a non-empty array");
  p->table_type[t] = ty;
  p->table_first[t] = *w;
  size_t first = *w;
  for (size_t k = 0; k < json_array_size(sh); k++) {
    char sw[96];
    snprintf(sw, sizeof sw, "%sshards[%zu].", where, k);
    int rc = read_shard(r, c, t, ty, json_array_get(sh, k), sw, &p->shards[*w]);
    if (rc) return rc;
    ++*w;
  }
  return check_layout(r, c, t, ty, p->shards + first, *w - first, sp, seen);
}

/* The plan's header: ranks, hosts, batch and step into o, and a table
 * count that matches the model. */
static int read_header(rd_t *r, json_t *root, const etsim_shard_model_t *m, etsim_shard_opts_t *o) {
  uint64_t ranks, rph, batch, d_batch = m->batch;
  int rc;
  if (!json_is_object(root) || !json_is_integer(json_object_get(root, "etsim_shard_plan")))
    return bad(r, "etsim_shard_plan", "not a plan (written by 'etsim shard -o')");
  if ((rc = rd_u64(r, root, "ranks", "", 1, ETSIM_SHARD_MAX_RANKS, NULL, &ranks)) ||
      (rc = rd_u64(r, root, "ranks_per_host", "", 1, ranks, NULL, &rph)) ||
      (rc = rd_u64(r, root, "batch", "", 1, ETSIM_SHARD_MAX_BATCH, &d_batch, &batch)))
    return rc;
  if (ranks % rph) return bad(r, "ranks_per_host", "must divide \"ranks\"");
  json_t *tabs = json_object_get(root, "tables");
  if (!json_is_array(tabs) || json_array_size(tabs) != m->n_tables)
    return etsim_error_set(r->err, ETSIM_EFORMAT, "%s: tables: %zu in the plan, %zu in model %s",
                           r->path, json_array_size(tabs), m->n_tables, m->name);
  o->ranks = (size_t)ranks;
  o->ranks_per_host = (size_t)rph;
  o->batch = (uint32_t)batch;
  if ((rc = read_step(r, root, o))) return rc;
  if (!json_object_get(root, "tiers")) o->tiers.ddr_gb = o->tiers.ssd_gb = 0;
  return 0;
}

int etsim_shard_plan_read(const char *path, const etsim_shard_model_t *m, etsim_shard_opts_t *o,
                          etsim_shard_plan_t *out, etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_REJECT_DUPLICATES, &root, err);
  if (rc0) return rc0;
  rd_t r = {path, err};
  int rc = 0;
  etsim_shard_plan_t *p = out;
  span_t *sp = NULL;
  uint8_t *seen = NULL;
  json_t *tabs = json_object_get(root, "tables");
  if ((rc = read_header(&r, root, m, o))) goto done;
  etsim_shard__ctx_t c;
  if ((rc = etsim_shard__setup(&c, m, o, err))) {
    etsim_error_prefix(err, "%s", path);
    goto done;
  }
  size_t T = m->n_tables, P = c.P, ns = 0;
  for (size_t t = 0; t < T; t++)
    ns += json_array_size(json_object_get(json_array_get(tabs, t), "shards"));
  p->n_ranks = P;
  p->ranks_per_host = c.Pl;
  p->batch = (uint32_t)c.B;
  p->n_tables = T;
  p->step = o->step;
  p->tiers = o->tiers;
  p->tiered = c.tiered;
  const char *lb = json_string_value(json_object_get(root, "label"));
  snprintf(p->label, sizeof p->label, "%s", lb ? lb : "file");
  p->table_type = etsim_malloc((T ? T : 1) * sizeof *p->table_type);
  p->shards = etsim_malloc((ns ? ns : 1) * sizeof *p->shards);
  p->table_first = etsim_malloc((T + 1) * sizeof *p->table_first);
  p->rank_ms = etsim_malloc(P * sizeof *p->rank_ms);
  p->rank_bytes = etsim_malloc(P * sizeof *p->rank_bytes);
  sp = etsim_malloc((ns ? ns : 1) * sizeof *sp);
  seen = etsim_malloc(P);
  if (!p->table_type || !p->shards || !p->table_first || !p->rank_ms || !p->rank_bytes || !sp ||
      !seen) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  size_t w = 0;
  for (size_t t = 0; t < T && !rc; t++)
    rc = read_table(&r, &c, t, json_array_get(tabs, t), p, &w, sp, seen);
  if (rc) goto done;
  p->table_first[T] = w;
  p->n_shards = w;
  etsim_shard__sum_loads(p);
  rc = etsim_shard_estimate(m, p, o, &p->est, err);
done:
  etsim_free(sp);
  etsim_free(seen);
  json_decref(root);
  if (rc) etsim_shard_plan_free(out);
  return rc;
}
