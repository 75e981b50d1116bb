/*
 * shard.c — DLRM embedding-table sharding: shard sizes and cost model after
 * TorchRec's planner (torchrec/distributed/planner: enumerators,
 * shard_estimators, partitioners; read for the formulas, not copied),
 * longest-processing-time placement under a memory cap, and a local search
 * over per-table sharding types.  docs/shard.md states every formula.
 */
#include "etsim/shard.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- models */

static const char *const type_names[ETSIM_SHARD_N_TYPES] = {"tw", "rw", "cw", "dp", "twrw", "twcw"};

const char *etsim_shard_type_name(int t) {
  return t >= 0 && t < ETSIM_SHARD_N_TYPES ? type_names[t] : "?";
}

int etsim_shard_type_parse(const char *s) {
  for (int t = 0; t < ETSIM_SHARD_N_TYPES; t++)
    if (strcmp(s, type_names[t]) == 0) return t;
  return -1;
}

/* MLPerf DLRM (Criteo 1TB) table sizes, facebookresearch/dlrm and the
 * MLPerf training reference. */
static const uint64_t criteo_1tb_rows[26] = {
    40000000, 39060,    17295,    7424,     20265,  3,     7122, 1543, 63,
    40000000, 3067956,  405282,   10,       2209,   11938, 155,  4,    976,
    14,       40000000, 40000000, 40000000, 590152, 12973, 108,  36};
/* MLPerf v2 DCNv2 multi-hot sizes per table. */
static const uint32_t dcnv2_hot[26] = {3, 2, 1, 2, 6, 1, 1,  1,   1,  7,  3, 8, 1,
                                       6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
/* Criteo Kaggle (Display Advertising Challenge) table sizes, dlrm's
 * default --ln-emb for the Kaggle data set. */
static const uint64_t kaggle_rows[26] = {
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};

static int set_tables(etsim_shard_model_t *m, size_t n, etsim_error_t *err) {
  m->tables = etsim_calloc(n, sizeof *m->tables);
  if (!m->tables) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  m->n_tables = n;
  return 0;
}

void etsim_shard_model_free(etsim_shard_model_t *m) {
  if (!m) return;
  etsim_free(m->tables);
  m->tables = NULL;
  m->n_tables = 0;
}

int etsim_shard_model_preset(const char *name, etsim_shard_model_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  int rc;
  if (strcmp(name, "mlperf-dlrm") == 0 || strcmp(name, "mlperf-dlrm-dcnv2") == 0) {
    int v2 = name[11] == '-';
    if ((rc = set_tables(m, 26, err))) return rc;
    for (int t = 0; t < 26; t++) {
      snprintf(m->tables[t].name, sizeof m->tables[t].name, "t%d", t);
      m->tables[t].rows = criteo_1tb_rows[t];
      m->tables[t].dim = 128;
      m->tables[t].pooling = v2 ? dcnv2_hot[t] : 1;
      m->tables[t].elem_bytes = 4;
    }
    static const uint32_t bot[] = {13, 512, 256, 128};
    memcpy(m->bot, bot, sizeof bot);
    m->n_bot = 4;
    if (v2) {
      static const uint32_t top[] = {1024, 1024, 512, 256, 1};
      memcpy(m->top, top, sizeof top);
      m->n_top = 5;
      m->interaction = ETSIM_DLRM_DCN;
      m->dcn_layers = 3;
      m->dcn_rank = 512;
      m->batch = 65536 / 8; /* global 65,536 on 8 GPUs */
    } else {
      static const uint32_t top[] = {1024, 1024, 512, 256, 1};
      memcpy(m->top, top, sizeof top);
      m->n_top = 5;
      m->interaction = ETSIM_DLRM_DOT;
      m->batch = 2048;
    }
  } else if (strcmp(name, "criteo-kaggle") == 0) {
    if ((rc = set_tables(m, 26, err))) return rc;
    for (int t = 0; t < 26; t++) {
      snprintf(m->tables[t].name, sizeof m->tables[t].name, "t%d", t);
      m->tables[t].rows = kaggle_rows[t];
      m->tables[t].dim = 16;
      m->tables[t].pooling = 1;
      m->tables[t].elem_bytes = 4;
    }
    static const uint32_t bot[] = {13, 512, 256, 64, 16};
    memcpy(m->bot, bot, sizeof bot);
    m->n_bot = 5;
    static const uint32_t top[] = {512, 256, 1};
    memcpy(m->top, top, sizeof top);
    m->n_top = 3;
    m->batch = 128;
  } else if (strcmp(name, "synthetic-large") == 0) {
    /* 512 tables: rows log-uniform in [1e3, 1e8), dims from {32, 64,
     * 128, 256}, heavy-tailed pooling; fixed seed. */
    if ((rc = set_tables(m, 512, err))) return rc;
    etsim_rng_t r;
    etsim_rng_seed(&r, 20260101);
    static const uint32_t dims[4] = {32, 64, 128, 256};
    for (size_t t = 0; t < 512; t++) {
      snprintf(m->tables[t].name, sizeof m->tables[t].name, "t%zu", t);
      m->tables[t].rows = (uint64_t)pow(10.0, 3.0 + 5.0 * etsim_rng_uniform(&r));
      m->tables[t].dim = dims[etsim_rng_below(&r, 4)];
      m->tables[t].pooling = floor(1.0 / pow(1.0 - etsim_rng_uniform(&r) * 0.99, 1.0 / 1.5));
      m->tables[t].elem_bytes = 4;
    }
    static const uint32_t bot[] = {256, 512, 256, 128};
    memcpy(m->bot, bot, sizeof bot);
    m->n_bot = 4;
    static const uint32_t top[] = {1024, 512, 256, 1};
    memcpy(m->top, top, sizeof top);
    m->n_top = 4;
    m->batch = 1024;
  } else {
    return etsim_error_set(err, ETSIM_ENOTFOUND,
                           "unknown DLRM preset '%s' (mlperf-dlrm, "
                           "mlperf-dlrm-dcnv2, criteo-kaggle, synthetic-large)",
                           name);
  }
  snprintf(m->name, sizeof m->name, "%s", name);
  return 0;
}

int etsim_shard_model_check(const etsim_shard_model_t *m, etsim_error_t *err) {
  if (!m->n_tables) return etsim_error_set(err, ETSIM_EINVAL, "%s: no embedding tables", m->name);
  for (size_t t = 0; t < m->n_tables; t++) {
    const etsim_shard_table_t *x = &m->tables[t];
    if (!x->rows || !x->dim || !x->elem_bytes || !(x->pooling > 0))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: table %zu ('%s'): rows, dim, pooling and "
                             "elem_bytes must be positive (%llu rows, dim %u, "
                             "pooling %g, %u bytes)",
                             m->name, t, x->name, (unsigned long long)x->rows, x->dim, x->pooling,
                             x->elem_bytes);
  }
  if (m->n_bot < 2 || m->n_top < 1)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: the bottom MLP needs its input and at least one "
                           "layer, the top MLP at least one layer",
                           m->name);
  if (m->interaction == ETSIM_DLRM_DOT)
    for (size_t t = 0; t < m->n_tables; t++)
      if (m->tables[t].dim != m->bot[m->n_bot - 1])
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: table %zu has dim %u but the dot "
                               "interaction needs every table at the bottom "
                               "MLP's output width %u",
                               m->name, t, m->tables[t].dim, m->bot[m->n_bot - 1]);
  return 0;
}

uint64_t etsim_shard_top_inputs(const etsim_shard_model_t *m) {
  uint64_t d = m->bot[m->n_bot - 1];
  if (m->interaction == ETSIM_DLRM_DCN) {
    uint64_t D = d;
    for (size_t t = 0; t < m->n_tables; t++) D += m->tables[t].dim;
    return D;
  }
  uint64_t F = m->n_tables + 1;
  return F * (F - 1) / 2 + d; /* pairwise dots without self terms */
}

uint64_t etsim_shard_fwd_flops(const etsim_shard_model_t *m) {
  uint64_t f = 0;
  for (size_t i = 0; i + 1 < m->n_bot; i++) f += 2ull * m->bot[i] * m->bot[i + 1];
  uint64_t d = m->bot[m->n_bot - 1];
  if (m->interaction == ETSIM_DLRM_DCN) {
    uint64_t D = etsim_shard_top_inputs(m);
    f += 4ull * D * m->dcn_rank * m->dcn_layers; /* D x r, r x D per layer */
  } else {
    uint64_t F = m->n_tables + 1;
    f += 2 * F * F * d; /* the batched F x d by d x F product */
  }
  uint64_t in = etsim_shard_top_inputs(m);
  for (size_t i = 0; i < m->n_top; i++) {
    f += 2 * in * m->top[i];
    in = m->top[i];
  }
  return f;
}

/* A model from JSON. */
int etsim_shard_model_load(const char *path, etsim_shard_model_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
  int rc = 0;
  json_t *tabs = json_object_get(root, "tables");
  if (!json_is_object(root) || !json_is_array(tabs) || !json_array_size(tabs)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: a DLRM model needs \"tables\", a non-empty array",
                         path);
    goto done;
  }
  const char *nm = json_string_value(json_object_get(root, "name"));
  snprintf(m->name, sizeof m->name, "%s", nm ? nm : "model");
  if ((rc = set_tables(m, json_array_size(tabs), err))) goto done;
  for (size_t t = 0; t < m->n_tables; t++) {
    json_t *x = json_array_get(tabs, t);
    json_t *rows = json_object_get(x, "rows"), *dim = json_object_get(x, "dim");
    json_t *pool = json_object_get(x, "pooling"), *eb = json_object_get(x, "elem_bytes");
    const char *tn = json_string_value(json_object_get(x, "name"));
    if (!json_is_integer(rows) || !json_is_integer(dim) || json_integer_value(rows) <= 0 ||
        json_integer_value(dim) <= 0 || json_integer_value(dim) > 65536 ||
        (pool && !json_is_number(pool)) || (eb && !json_is_integer(eb))) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: tables[%zu]: needs positive integers \"rows\" "
                           "and \"dim\" (<= 65536); \"pooling\" a number, "
                           "\"elem_bytes\" an integer",
                           path, t);
      goto done;
    }
    snprintf(m->tables[t].name, sizeof m->tables[t].name, "%s", tn ? tn : "");
    if (!tn) snprintf(m->tables[t].name, sizeof m->tables[t].name, "t%zu", t);
    m->tables[t].rows = (uint64_t)json_integer_value(rows);
    m->tables[t].dim = (uint32_t)json_integer_value(dim);
    m->tables[t].pooling = pool ? json_number_value(pool) : 1;
    m->tables[t].elem_bytes = eb ? (uint32_t)json_integer_value(eb) : 4;
  }
  static const char *const keys[2] = {"bottom_mlp", "top_mlp"};
  for (int k = 0; k < 2; k++) {
    json_t *a = json_object_get(root, keys[k]);
    uint32_t *dst = k ? m->top : m->bot;
    size_t *n = k ? &m->n_top : &m->n_bot;
    if (!json_is_array(a) || json_array_size(a) > 8) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: \"%s\" must be an array of at most 8 widths",
                           path, keys[k]);
      goto done;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
      json_t *w = json_array_get(a, i);
      if (!json_is_integer(w) || json_integer_value(w) <= 0) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: %s[%zu]: not a positive integer", path,
                             keys[k], i);
        goto done;
      }
      dst[(*n)++] = (uint32_t)json_integer_value(w);
    }
  }
  const char *inter = json_string_value(json_object_get(root, "interaction"));
  if (inter && strcmp(inter, "dcn") == 0) {
    m->interaction = ETSIM_DLRM_DCN;
    m->dcn_layers = (uint32_t)json_integer_value(json_object_get(root, "dcn_layers"));
    m->dcn_rank = (uint32_t)json_integer_value(json_object_get(root, "dcn_rank"));
    if (!m->dcn_layers || !m->dcn_rank) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: interaction \"dcn\" needs positive "
                           "\"dcn_layers\" and \"dcn_rank\"",
                           path);
      goto done;
    }
  } else if (inter && strcmp(inter, "dot") != 0) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: \"interaction\": '%s' is not dot or dcn", path,
                         inter);
    goto done;
  }
  json_t *batch = json_object_get(root, "batch");
  m->batch = json_is_integer(batch) ? (uint32_t)json_integer_value(batch) : 512;
  rc = etsim_shard_model_check(m, err);
  if (rc) etsim_error_prefix(err, "%s", path);
done:
  json_decref(root);
  if (rc) etsim_shard_model_free(m);
  return rc;
}

/* ------------------------------------------------------------ costs */

void etsim_shard_defaults(etsim_shard_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->hbm_gb = 32;
  o->costs.hbm_gbps = 897;
  o->costs.intra_host_gbps = 600;
  o->costs.inter_host_gbps = 12.5;
  o->costs.index_bytes = 8;
  o->costs.output_bytes = 4;
  o->costs.bwd_factor = 2;
  o->costs.optimizer_mult = 0;
  o->costs.cw_block = 128;
}

/* TorchRec's column-wise block: the smallest multiple-of-4 divisor of d
 * that is >= the requested size and < d, else d itself. */
static uint32_t cw_block(uint32_t d, uint32_t want) {
  for (uint32_t b = (want + 3) / 4 * 4; b < d; b += 4)
    if (d % b == 0) return b;
  return d;
}

static double pen(uint32_t d) { return d >= 128 ? 1.0 : d >= 64 ? 1.15 : 1.75; }

typedef struct {
  const etsim_shard_model_t *m;
  const etsim_shard_opts_t *o;
  size_t P, Pl, hosts;
  double B;
  double hbm, intra, inter, comm; /* bytes per ms */
  uint64_t cap;
} ctx_t;

/* Cost and memory of one shard of table t under type ty with `rows` x
 * `cols` (the shard's size). */
static void rate(const ctx_t *c, int ty, const etsim_shard_table_t *x, uint64_t rows, uint32_t cols,
                 etsim_shard_t *s) {
  const etsim_shard_costs_t *k = &c->o->costs;
  double P = (double)c->P, Pl = (double)c->Pl, B = c->B, L = x->pooling;
  double i = k->index_bytes, o = k->output_bytes, e = x->elem_bytes;
  double d = cols, dd = cols < 32 ? 32 : cols, pn = pen(cols);
  double w = (double)rows * cols * e; /* weight bytes */
  double fwd = 0, fc = 0, bc = 0, io = 0, extra_bwd = 0;
  switch (ty) {
    case ETSIM_SHARD_TW:
    case ETSIM_SHARD_CW:
    case ETSIM_SHARD_TWCW:
      fwd = (P * B * L * i + P * B * L * dd * e + P * B * d * o) * pn / c->hbm;
      fc = bc = P * B * d * o / c->comm;
      io = P * B * L * i + P * B * d * o;
      break;
    case ETSIM_SHARD_RW:
      fwd = (B * L * i + B * L * dd * e + P * B * d * o) * pn / c->hbm;
      fc = P * B * d * o / c->comm; /* reduce-scatter */
      bc = fc;                      /* all-gather */
      extra_bwd = 2.455 * P * B * d * o / c->hbm;
      io = B * L * i + P * B * d * o;
      break;
    case ETSIM_SHARD_TWRW:
      fwd = (P * B * L / Pl * i + P * B * L / Pl * dd * e + P * B * d * o) * pn / c->hbm;
      fc = bc = P * B * d * o / (c->intra) + B * (P / Pl) * d * o / c->inter;
      io = P * B * L / Pl * i + P * B * d * o;
      break;
    case ETSIM_SHARD_DP: {
      fwd = (B * L * i + B * L * dd * e) * pn / c->hbm;
      double n = c->hosts < 2 ? 1 : 2;
      double ar = c->hosts > 1 ? c->inter * Pl : c->intra;
      bc = w * (2 * n - 1) / n / ar * (P > 2 * Pl ? 2 : 1);
      extra_bwd = 9.22 * w / c->hbm;
      io = B * L * i + B * d * o;
      break;
    }
  }
  s->rows = rows;
  s->cols = cols;
  s->fwd_ms = fwd;
  s->bwd_ms = k->bwd_factor * fwd + extra_bwd;
  s->fwd_comm_ms = fc;
  s->bwd_comm_ms = bc;
  s->hbm_bytes = (uint64_t)(w * (1 + k->optimizer_mult) + io);
}

static double total(const etsim_shard_t *s) {
  return s->fwd_ms + s->bwd_ms + s->fwd_comm_ms + s->bwd_comm_ms;
}

/* ------------------------------------------------------------ placement */

void etsim_shard_plan_free(etsim_shard_plan_t *p) {
  if (!p) return;
  etsim_free(p->table_type);
  etsim_free(p->shards);
  etsim_free(p->table_first);
  etsim_free(p->rank_ms);
  etsim_free(p->rank_bytes);
  memset(p, 0, sizeof *p);
}

static int setup(ctx_t *c, const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                 etsim_error_t *err) {
  memset(c, 0, sizeof *c);
  c->m = m;
  c->o = o;
  c->P = o->ranks;
  c->Pl = o->ranks_per_host ? o->ranks_per_host : o->ranks;
  if (!c->P || c->P > (1u << 20) || c->P % c->Pl)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: %zu ranks with %zu per host: need 1..1048576 "
                           "ranks, a whole number of hosts",
                           o->ranks, c->Pl);
  c->hosts = c->P / c->Pl;
  c->B = o->batch ? o->batch : m->batch ? m->batch : 512;
  const etsim_shard_costs_t *k = &o->costs;
  if (!(k->hbm_gbps > 0) || !(k->intra_host_gbps > 0) || !(k->inter_host_gbps > 0) ||
      !(o->hbm_gb > 0))
    return etsim_error_set(err, ETSIM_EINVAL, "shard: bandwidths and HBM must be positive");
  c->hbm = k->hbm_gbps * 1e6;
  c->intra = k->intra_host_gbps * 1e6;
  c->inter = k->inter_host_gbps * 1e6;
  c->comm = c->hosts > 1 ? c->inter : c->intra;
  c->cap = (uint64_t)(o->hbm_gb * 1e9);
  return etsim_shard_model_check(m, err);
}

/* Placement state: per-rank loads and each table's shards. */
typedef struct {
  double *ms;
  uint64_t *bytes;
  etsim_shard_t **sh; /* per table */
  size_t *n, *cap;
  int *type;
} state_t;

static void state_free(state_t *st, size_t T) {
  if (st->sh)
    for (size_t t = 0; t < T; t++) etsim_free(st->sh[t]);
  etsim_free(st->sh);
  etsim_free(st->n);
  etsim_free(st->cap);
  etsim_free(st->type);
  etsim_free(st->ms);
  etsim_free(st->bytes);
  memset(st, 0, sizeof *st);
}

static int state_init(state_t *st, size_t T, size_t P) {
  memset(st, 0, sizeof *st);
  st->ms = etsim_calloc(P, sizeof *st->ms);
  st->bytes = etsim_calloc(P, sizeof *st->bytes);
  st->sh = etsim_calloc(T, sizeof *st->sh);
  st->n = etsim_calloc(T, sizeof *st->n);
  st->cap = etsim_calloc(T, sizeof *st->cap);
  st->type = etsim_calloc(T, sizeof *st->type);
  return st->ms && st->bytes && st->sh && st->n && st->cap && st->type ? 0 : ETSIM_ENOMEM;
}

static int push(state_t *st, size_t t, const etsim_shard_t *s) {
  if (etsim_grow((void **)&st->sh[t], &st->cap[t], st->n[t] + 1, sizeof *st->sh[t]))
    return ETSIM_ENOMEM;
  st->sh[t][st->n[t]++] = *s;
  st->ms[s->rank] += total(s);
  st->bytes[s->rank] += s->hbm_bytes;
  return 0;
}

/* Take table t's shards off the loads (they stay in sh[t] for restore). */
static void unplace(state_t *st, size_t t) {
  for (size_t i = 0; i < st->n[t]; i++) {
    st->ms[st->sh[t][i].rank] -= total(&st->sh[t][i]);
    st->bytes[st->sh[t][i].rank] -= st->sh[t][i].hbm_bytes;
  }
  st->n[t] = 0;
}

typedef struct {
  uint64_t bytes;
  uint32_t t;
} order_t;

static int cmp_order(const void *a, const void *b) {
  const order_t *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

static int too_big(const ctx_t *c, const etsim_shard_table_t *x, size_t t, int ty, uint64_t need,
                   etsim_error_t *err) {
  return etsim_error_set(err, ETSIM_ERANGE,
                         "%s: table %zu ('%s', %llu rows x %u, %.2f GB) does "
                         "not fit as %s: a shard needs %.2f GB and no rank has "
                         "that much of its %.2f GB HBM left",
                         c->m->name, t, x->name, (unsigned long long)x->rows, x->dim,
                         (double)x->rows * x->dim * x->elem_bytes / 1e9, type_names[ty], need / 1e9,
                         c->cap / 1e9);
}

/* Least-loaded rank among [lo, hi) that fits `bytes`; SIZE_MAX if none. */
static size_t pick(const state_t *st, const ctx_t *c, size_t lo, size_t hi, uint64_t bytes) {
  size_t best = SIZE_MAX;
  for (size_t r = lo; r < hi; r++)
    if (st->bytes[r] + bytes <= c->cap && (best == SIZE_MAX || st->ms[r] < st->ms[best])) best = r;
  return best;
}

/* Place table t as type ty on the current loads.  On failure the table's
 * partial shards are taken off again (n[t] = 0). */
static int place_table(const ctx_t *c, state_t *st, size_t t, int ty, etsim_error_t *err) {
  const etsim_shard_table_t *x = &c->m->tables[t];
  size_t P = c->P;
  st->type[t] = ty;
  st->n[t] = 0;
  int rc = 0;
  if (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_DP || ty == ETSIM_SHARD_TWRW) {
    size_t lo = 0, hi = P;
    if (ty == ETSIM_SHARD_TWRW) {
      double best = INFINITY;
      for (size_t h = 0; h < c->hosts; h++) {
        double load = 0;
        for (size_t r = h * c->Pl; r < (h + 1) * c->Pl; r++) load += st->ms[r];
        if (load < best) {
          best = load;
          lo = h * c->Pl;
        }
      }
      hi = lo + c->Pl;
    }
    size_t parts = hi - lo;
    uint64_t per_rows = ty == ETSIM_SHARD_DP ? x->rows : (x->rows + parts - 1) / parts;
    /* Shard sizes repeat: rate each distinct size once. */
    etsim_shard_t full = {0}, last = {0};
    rate(c, ty, x, per_rows, x->dim, &full);
    uint64_t last_rows = (uint64_t)-1;
    for (size_t r = lo; r < hi; r++) {
      uint64_t off = ty == ETSIM_SHARD_DP ? 0 : per_rows * (r - lo);
      uint64_t n =
          ty == ETSIM_SHARD_DP
              ? x->rows
              : (off >= x->rows ? 0 : (x->rows - off < per_rows ? x->rows - off : per_rows));
      etsim_shard_t s;
      if (n == per_rows) s = full;
      else {
        if (n != last_rows) {
          rate(c, ty, x, n, x->dim, &last);
          last_rows = n;
        }
        s = last;
      }
      s.table = (uint32_t)t;
      s.rank = (uint32_t)r;
      s.row_off = off;
      s.col_off = 0;
      if (st->bytes[r] + s.hbm_bytes > c->cap) {
        rc = too_big(c, x, t, ty, s.hbm_bytes, err);
        break;
      }
      if (push(st, t, &s)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        break;
      }
    }
  } else {
    size_t lo = 0, hi = P;
    if (ty == ETSIM_SHARD_TWCW) {
      double best = INFINITY;
      for (size_t h = 0; h < c->hosts; h++) {
        double load = 0;
        for (size_t r = h * c->Pl; r < (h + 1) * c->Pl; r++) load += st->ms[r];
        if (load < best) {
          best = load;
          lo = h * c->Pl;
        }
      }
      hi = lo + c->Pl;
    }
    uint32_t blk = ty == ETSIM_SHARD_TW ? x->dim : cw_block(x->dim, c->o->costs.cw_block);
    etsim_shard_t proto = {0};
    rate(c, ty, x, x->rows, blk, &proto);
    for (uint32_t col = 0; col < x->dim; col += blk) {
      etsim_shard_t s = proto;
      size_t r = pick(st, c, lo, hi, s.hbm_bytes);
      if (r == SIZE_MAX) {
        rc = too_big(c, x, t, ty, s.hbm_bytes, err);
        break;
      }
      s.table = (uint32_t)t;
      s.rank = (uint32_t)r;
      s.col_off = col;
      if (push(st, t, &s)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        break;
      }
    }
  }
  if (rc) unplace(st, t);
  return rc;
}

/* Place every table: uniform types first, then the rest largest first. */
static int place_all(const ctx_t *c, state_t *st, const int *types, etsim_error_t *err) {
  size_t T = c->m->n_tables;
  int rc = 0;
  for (size_t t = 0; t < T && !rc; t++)
    if (types[t] == ETSIM_SHARD_RW || types[t] == ETSIM_SHARD_DP)
      rc = place_table(c, st, t, types[t], err);
  if (rc) return rc;
  order_t *ord = etsim_malloc((T ? T : 1) * sizeof *ord);
  if (!ord) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t no = 0;
  for (size_t t = 0; t < T; t++)
    if (types[t] != ETSIM_SHARD_RW && types[t] != ETSIM_SHARD_DP) {
      const etsim_shard_table_t *x = &c->m->tables[t];
      ord[no].bytes = x->rows * x->dim * (uint64_t)x->elem_bytes;
      ord[no++].t = (uint32_t)t;
    }
  etsim_qsort(ord, no, sizeof *ord, cmp_order);
  for (size_t k = 0; k < no && !rc; k++) rc = place_table(c, st, ord[k].t, types[ord[k].t], err);
  etsim_free(ord);
  return rc;
}

/* The state as a plan (shards flattened in table order). */
static int to_plan(const ctx_t *c, const state_t *st, etsim_shard_plan_t *p, etsim_error_t *err) {
  size_t T = c->m->n_tables, P = c->P, n = 0;
  memset(p, 0, sizeof *p);
  for (size_t t = 0; t < T; t++) n += st->n[t];
  p->n_ranks = P;
  p->ranks_per_host = c->Pl;
  p->batch = (uint32_t)c->B;
  p->n_tables = T;
  p->table_type = etsim_malloc(T * sizeof *p->table_type);
  p->shards = etsim_malloc((n ? n : 1) * sizeof *p->shards);
  p->table_first = etsim_malloc((T + 1) * sizeof *p->table_first);
  p->rank_ms = etsim_malloc(P * sizeof *p->rank_ms);
  p->rank_bytes = etsim_malloc(P * sizeof *p->rank_bytes);
  if (!p->table_type || !p->shards || !p->table_first || !p->rank_ms || !p->rank_bytes) {
    etsim_shard_plan_free(p);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  size_t k = 0;
  for (size_t t = 0; t < T; t++) {
    p->table_type[t] = st->type[t];
    p->table_first[t] = k;
    memcpy(p->shards + k, st->sh[t], st->n[t] * sizeof *p->shards);
    k += st->n[t];
  }
  p->table_first[T] = k;
  p->n_shards = k;
  /* Sum loads afresh (no drift from the search's add/subtract). */
  memset(p->rank_ms, 0, P * sizeof *p->rank_ms);
  memset(p->rank_bytes, 0, P * sizeof *p->rank_bytes);
  for (size_t i = 0; i < k; i++) {
    p->rank_ms[p->shards[i].rank] += total(&p->shards[i]);
    p->rank_bytes[p->shards[i].rank] += p->shards[i].hbm_bytes;
  }
  for (size_t r = 0; r < P; r++) {
    if (p->rank_ms[r] > p->max_ms) p->max_ms = p->rank_ms[r];
    if (p->rank_bytes[r] > p->max_bytes) p->max_bytes = p->rank_bytes[r];
  }
  return 0;
}

int etsim_shard_place(const etsim_shard_model_t *m, const etsim_shard_opts_t *o, const int *types,
                      etsim_shard_plan_t *out, etsim_error_t *err) {
  ctx_t c;
  int rc = setup(&c, m, o, err);
  if (rc) return rc;
  for (size_t t = 0; t < m->n_tables; t++)
    if (types[t] < 0 || types[t] >= ETSIM_SHARD_N_TYPES)
      return etsim_error_set(err, ETSIM_EINVAL, "shard: table %zu: bad type %d", t, types[t]);
  state_t st;
  if (state_init(&st, m->n_tables, c.P)) {
    state_free(&st, m->n_tables);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  rc = place_all(&c, &st, types, err);
  if (!rc) rc = to_plan(&c, &st, out, err);
  state_free(&st, m->n_tables);
  return rc;
}

static double state_score(const ctx_t *c, const state_t *st, int objective) {
  double best = 0;
  for (size_t r = 0; r < c->P; r++) {
    double v = objective == ETSIM_SHARD_OBJ_MEMORY ? (double)st->bytes[r] : st->ms[r];
    if (v > best) best = v;
  }
  return best;
}

int etsim_shard_plan(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                     etsim_shard_plan_t *out, etsim_error_t *err) {
  ctx_t c;
  int rc = setup(&c, m, o, err);
  if (rc) return rc;
  unsigned allowed = o->types ? o->types : (1u << ETSIM_SHARD_N_TYPES) - 1;
  if (c.hosts == 1) allowed &= ~((1u << ETSIM_SHARD_TWRW) | (1u << ETSIM_SHARD_TWCW));
  if (!allowed)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: no sharding type allowed (twrw/twcw need "
                           "more than one host)");
  size_t T = m->n_tables;
  int *types = etsim_malloc(T * sizeof *types);
  etsim_shard_t *saved = NULL;
  size_t saved_cap = 0;
  state_t st;
  if (!types || state_init(&st, T, c.P)) {
    etsim_free(types);
    state_free(&st, T);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  /* Start: per table, the allowed type whose costliest shard is cheapest
   * (ties to the earlier type). */
  for (size_t t = 0; t < T; t++) {
    double best = INFINITY;
    types[t] = -1;
    for (int ty = 0; ty < ETSIM_SHARD_N_TYPES; ty++) {
      if (!(allowed & (1u << ty))) continue;
      const etsim_shard_table_t *x = &m->tables[t];
      etsim_shard_t s;
      uint64_t rows = x->rows;
      uint32_t cols = x->dim;
      if (ty == ETSIM_SHARD_RW) rows = (rows + c.P - 1) / c.P;
      else if (ty == ETSIM_SHARD_TWRW) rows = (rows + c.Pl - 1) / c.Pl;
      else if (ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW)
        cols = cw_block(cols, o->costs.cw_block);
      rate(&c, ty, x, rows, cols, &s);
      double v = o->objective == ETSIM_SHARD_OBJ_MEMORY ? (double)s.hbm_bytes : total(&s);
      if (v < best) {
        best = v;
        types[t] = ty;
      }
    }
  }
  /* Place; while a table does not fit, move the largest table not yet at
   * the most sharded allowed type (RW, TWRW, CW, TWCW, TW, DP) there. */
  static const int fallback[ETSIM_SHARD_N_TYPES] = {ETSIM_SHARD_RW, ETSIM_SHARD_TWRW,
                                                    ETSIM_SHARD_CW, ETSIM_SHARD_TWCW,
                                                    ETSIM_SHARD_TW, ETSIM_SHARD_DP};
  int most = -1;
  for (int f = 0; f < ETSIM_SHARD_N_TYPES && most < 0; f++)
    if (allowed & (1u << fallback[f])) most = fallback[f];
  for (;;) {
    etsim_error_t e2 = {0};
    for (size_t t = 0; t < T; t++) st.n[t] = 0;
    memset(st.ms, 0, c.P * sizeof *st.ms);
    memset(st.bytes, 0, c.P * sizeof *st.bytes);
    rc = place_all(&c, &st, types, &e2);
    if (rc != ETSIM_ERANGE) {
      if (rc && err) *err = e2;
      break;
    }
    size_t worst = SIZE_MAX;
    uint64_t wb = 0;
    for (size_t t = 0; t < T; t++) {
      uint64_t b = m->tables[t].rows * m->tables[t].dim * (uint64_t)m->tables[t].elem_bytes;
      if (types[t] != most && b > wb) {
        wb = b;
        worst = t;
      }
    }
    if (worst == SIZE_MAX) {
      if (err) *err = e2;
      break;
    }
    types[worst] = most;
  }
  /* Local search: move one table with a shard on the slowest rank to
   * another type, on the current loads, while that lowers the objective. */
  size_t rounds = 4 * T + 16;
  for (size_t round = 0; !rc && round < rounds; round++) {
    size_t R = 0;
    for (size_t r = 1; r < c.P; r++)
      if ((o->objective == ETSIM_SHARD_OBJ_MEMORY ? (double)st.bytes[r] > (double)st.bytes[R]
                                                  : st.ms[r] > st.ms[R]))
        R = r;
    uint32_t cand[4];
    double cv[4];
    size_t nc = 0;
    for (size_t t = 0; t < T; t++) {
      double v = 0;
      for (size_t i = 0; i < st.n[t]; i++)
        if (st.sh[t][i].rank == R) v += total(&st.sh[t][i]);
      if (v <= 0) continue;
      if (nc < 4) {
        cand[nc] = (uint32_t)t;
        cv[nc++] = v;
      } else {
        size_t mi = 0;
        for (size_t j = 1; j < 4; j++)
          if (cv[j] < cv[mi]) mi = j;
        if (v > cv[mi]) {
          cand[mi] = (uint32_t)t;
          cv[mi] = v;
        }
      }
    }
    double cur = state_score(&c, &st, o->objective), bestv = cur;
    int best_ty = -1;
    size_t best_t = 0;
    for (size_t j = 0; j < nc; j++) {
      size_t t = cand[j];
      int old = st.type[t];
      size_t nold = st.n[t];
      if (etsim_grow((void **)&saved, &saved_cap, nold ? nold : 1, sizeof *saved)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        break;
      }
      memcpy(saved, st.sh[t], nold * sizeof *saved);
      for (int ty = 0; ty < ETSIM_SHARD_N_TYPES; ty++) {
        if (!(allowed & (1u << ty)) || ty == old) continue;
        unplace(&st, t);
        if (place_table(&c, &st, t, ty, NULL) == 0) {
          double v = state_score(&c, &st, o->objective);
          if (v < bestv * (1 - 1e-9)) {
            bestv = v;
            best_ty = ty;
            best_t = t;
          }
          unplace(&st, t);
        }
        /* Restore the old shards. */
        for (size_t i = 0; i < nold; i++) push(&st, t, &saved[i]);
        st.type[t] = old;
      }
    }
    if (rc || best_ty < 0) break;
    unplace(&st, best_t);
    if ((rc = place_table(&c, &st, best_t, best_ty, err))) break;
  }
  if (!rc) rc = to_plan(&c, &st, out, err);
  etsim_free(saved);
  etsim_free(types);
  state_free(&st, T);
  return rc;
}

/* ------------------------------------------------------------ output */

int etsim_shard_plan_write(const etsim_shard_plan_t *p, const etsim_shard_model_t *m,
                           const char *path, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *fp = o.fp;
  fprintf(fp,
          "{\"etsim_shard_plan\": 1, \"model\": \"%s\", \"ranks\": %zu, "
          "\"ranks_per_host\": %zu, \"batch\": %u, \"max_rank_ms\": %.6f,\n"
          " \"tables\": [",
          m->name, p->n_ranks, p->ranks_per_host, p->batch, p->max_ms);
  for (size_t t = 0; t < p->n_tables; t++) {
    const etsim_shard_table_t *x = &m->tables[t];
    fprintf(fp,
            "%s\n  {\"name\": \"%s\", \"rows\": %llu, \"dim\": %u, "
            "\"pooling\": %g, \"type\": \"%s\", \"shards\": [",
            t ? "," : "", x->name, (unsigned long long)x->rows, x->dim, x->pooling,
            type_names[p->table_type[t]]);
    for (size_t i = p->table_first[t]; i < p->table_first[t + 1]; i++) {
      const etsim_shard_t *s = &p->shards[i];
      fprintf(fp,
              "%s{\"rank\": %u, \"rows\": [%llu, %llu], \"cols\": [%u, %u], "
              "\"ms\": %.6f, \"bytes\": %llu}",
              i > p->table_first[t] ? ", " : "", s->rank, (unsigned long long)s->row_off,
              (unsigned long long)s->rows, s->col_off, s->cols, total(s),
              (unsigned long long)s->hbm_bytes);
    }
    fputs("]}", fp);
  }
  fputs("\n ],\n \"ranks_summary\": [", fp);
  for (size_t r = 0; r < p->n_ranks; r++)
    fprintf(fp, "%s\n  {\"rank\": %zu, \"ms\": %.6f, \"hbm_bytes\": %llu}", r ? "," : "", r,
            p->rank_ms[r], (unsigned long long)p->rank_bytes[r]);
  fputs("\n ]}\n", fp);
  return etsim_outfile_commit(&o, err);
}

int etsim_shard_plan_read(const char *path, const etsim_shard_model_t *m, etsim_shard_opts_t *o,
                          etsim_shard_plan_t *out, etsim_error_t *err) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
  int rc = 0;
  json_t *ranks = json_object_get(root, "ranks");
  json_t *rph = json_object_get(root, "ranks_per_host");
  json_t *tabs = json_object_get(root, "tables");
  json_t *batch = json_object_get(root, "batch");
  state_t st;
  memset(&st, 0, sizeof st);
  if (!json_is_integer(ranks) || json_integer_value(ranks) <= 0 || !json_is_integer(rph) ||
      json_integer_value(rph) <= 0 || !json_is_array(tabs)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: a plan needs \"ranks\", \"ranks_per_host\" "
                         "(positive integers) and \"tables\"",
                         path);
    goto done;
  }
  o->ranks = (size_t)json_integer_value(ranks);
  o->ranks_per_host = (size_t)json_integer_value(rph);
  if (json_is_integer(batch) && json_integer_value(batch) > 0)
    o->batch = (uint32_t)json_integer_value(batch);
  if (json_array_size(tabs) != m->n_tables) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: %zu tables in the plan, %zu in model %s", path,
                         json_array_size(tabs), m->n_tables, m->name);
    goto done;
  }
  ctx_t c;
  if ((rc = setup(&c, m, o, err))) goto done;
  if (state_init(&st, m->n_tables, c.P)) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t t = 0; t < m->n_tables; t++) {
    json_t *x = json_array_get(tabs, t);
    const char *tn = json_string_value(json_object_get(x, "type"));
    int ty = tn ? etsim_shard_type_parse(tn) : -1;
    json_t *sh = json_object_get(x, "shards");
    if (ty < 0 || !json_is_array(sh) || !json_array_size(sh)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: tables[%zu]: needs a \"type\" (tw, rw, cw, "
                           "dp, twrw, twcw) and a non-empty \"shards\" array",
                           path, t);
      goto done;
    }
    st.type[t] = ty;
    for (size_t k = 0; k < json_array_size(sh); k++) {
      json_t *y = json_array_get(sh, k);
      json_t *rk = json_object_get(y, "rank"), *rw = json_object_get(y, "rows"),
             *cl = json_object_get(y, "cols");
      if (!json_is_integer(rk) || !json_is_array(rw) || !json_is_array(cl) ||
          json_array_size(rw) != 2 || json_array_size(cl) != 2) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: tables[%zu].shards[%zu]: needs \"rank\", "
                             "\"rows\": [offset, count], \"cols\": [offset, "
                             "count]",
                             path, t, k);
        goto done;
      }
      json_int_t r = json_integer_value(rk);
      if (r < 0 || (size_t)r >= c.P) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: tables[%zu].shards[%zu]: rank %lld is not "
                             "among the plan's %zu ranks",
                             path, t, k, (long long)r, c.P);
        goto done;
      }
      uint64_t ro = (uint64_t)json_integer_value(json_array_get(rw, 0));
      uint64_t rn = (uint64_t)json_integer_value(json_array_get(rw, 1));
      uint64_t co = (uint64_t)json_integer_value(json_array_get(cl, 0));
      uint64_t cn = (uint64_t)json_integer_value(json_array_get(cl, 1));
      if (ro + rn > m->tables[t].rows || co + cn > m->tables[t].dim || !cn) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: tables[%zu].shards[%zu]: rows %llu+%llu or "
                             "cols %llu+%llu outside the %llu x %u table",
                             path, t, k, (unsigned long long)ro, (unsigned long long)rn,
                             (unsigned long long)co, (unsigned long long)cn,
                             (unsigned long long)m->tables[t].rows, m->tables[t].dim);
        goto done;
      }
      etsim_shard_t s = {0};
      rate(&c, ty, &m->tables[t], rn, (uint32_t)cn, &s);
      s.table = (uint32_t)t;
      s.rank = (uint32_t)r;
      s.row_off = ro;
      s.col_off = (uint32_t)co;
      if (push(&st, t, &s)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        goto done;
      }
    }
  }
  rc = to_plan(&c, &st, out, err);
done:
  state_free(&st, m->n_tables);
  json_decref(root);
  return rc;
}
