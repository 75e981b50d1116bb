/*
 * model.c — DLRM models: the presets (MLPerf DLRM and DCNv2, Criteo Kaggle,
 * a seeded synthetic model and a trillion-parameter-class one), the JSON
 * reader with a range check on every value, and the dense part's FLOPs.
 */
#include "shard_int.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

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

static void set_mlp(uint32_t *dst, size_t *n, const uint32_t *src, size_t k) {
  memcpy(dst, src, k * sizeof *src);
  *n = k;
}

int etsim_shard_model_preset(const char *name, etsim_shard_model_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  int rc;
  static const uint32_t top5[] = {1024, 1024, 512, 256, 1};
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
    set_mlp(m->bot, &m->n_bot, bot, 4);
    set_mlp(m->top, &m->n_top, top5, 5);
    if (v2) {
      m->interaction = ETSIM_DLRM_DCN;
      m->dcn_layers = 3;
      m->dcn_rank = 512;
      m->batch = 65536 / 8; /* global 65,536 on 8 GPUs */
    } else {
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
    set_mlp(m->bot, &m->n_bot, bot, 5);
    static const uint32_t top[] = {512, 256, 1};
    set_mlp(m->top, &m->n_top, top, 3);
    m->batch = 128;
  } else if (strcmp(name, "synthetic-large") == 0) {
    /* 512 tables: rows log-uniform in [1e3, 1e8), dims from {32, 64,
     * 128, 256}, heavy-tailed pooling; fixed seed.  The dimensions differ,
     * so the interaction is DCNv2 (a dot product needs one width). */
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
    set_mlp(m->bot, &m->n_bot, bot, 4);
    static const uint32_t top[] = {1024, 512, 256, 1};
    set_mlp(m->top, &m->n_top, top, 4);
    m->interaction = ETSIM_DLRM_DCN;
    m->dcn_layers = 2;
    m->dcn_rank = 256;
    m->batch = 1024;
  } else if (strcmp(name, "dlrm-1t") == 0) {
    /* A trillion-parameter-class model (not a published configuration):
     * 400 tables of dimension 128 in three size classes — 40 of about
     * 1.3e8 rows, 160 of about 1.5e7, 200 of about 3e6 — about 8.0e9 rows
     * or 1.0e12 FP32 weights (4 TB), with heavy-tailed pooling; DCNv2 over
     * the 51,328 pooled features; batch 512 per GPU. */
    if ((rc = set_tables(m, 400, err))) return rc;
    etsim_rng_t r;
    etsim_rng_seed(&r, 2022);
    for (size_t t = 0; t < 400; t++) {
      etsim_shard_table_t *x = &m->tables[t];
      snprintf(x->name, sizeof x->name, "t%zu", t);
      double u = etsim_rng_uniform(&r), v = etsim_rng_uniform(&r);
      if (t < 40) {
        x->rows = (uint64_t)(1.3e8 * (0.8 + 0.4 * u));
        x->pooling = 1 + floor(4 * v);
      } else if (t < 200) {
        x->rows = (uint64_t)(1.5e7 * (0.5 + u));
        x->pooling = floor(10 + 30 * v);
      } else {
        x->rows = (uint64_t)(3e6 * (0.2 + 1.6 * u));
        x->pooling = floor(1.0 / pow(1.0 - v * 0.98, 1.0 / 1.2));
      }
      x->dim = 128;
      x->elem_bytes = 4;
    }
    static const uint32_t bot[] = {1024, 1024, 512, 128};
    set_mlp(m->bot, &m->n_bot, bot, 4);
    static const uint32_t top[] = {1024, 512, 256, 1};
    set_mlp(m->top, &m->n_top, top, 4);
    m->interaction = ETSIM_DLRM_DCN;
    m->dcn_layers = 1;
    m->dcn_rank = 256;
    m->batch = 512;
  } else {
    return etsim_error_set(err, ETSIM_ENOTFOUND,
                           "unknown DLRM preset '%s' (mlperf-dlrm, mlperf-dlrm-dcnv2, "
                           "criteo-kaggle, synthetic-large, dlrm-1t)",
                           name);
  }
  snprintf(m->name, sizeof m->name, "%s", name);
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

uint64_t etsim_shard_dense_params(const etsim_shard_model_t *m) {
  uint64_t p = 0;
  for (size_t k = 0; k + 1 < m->n_bot; k++)
    p += (uint64_t)m->bot[k] * m->bot[k + 1] + m->bot[k + 1];
  uint64_t in = etsim_shard_top_inputs(m);
  if (m->interaction == ETSIM_DLRM_DCN) p += (uint64_t)m->dcn_layers * (2 * in * m->dcn_rank + in);
  for (size_t k = 0; k < m->n_top; k++) {
    p += in * m->top[k] + m->top[k];
    in = m->top[k];
  }
  return p;
}

/* The same sums in double, to refuse models whose totals would overflow
 * the 64-bit counters before computing them. */
static double fwd_flops_d(const etsim_shard_model_t *m, double *top_in) {
  double f = 0, d = m->bot[m->n_bot - 1], D = d;
  for (size_t i = 0; i + 1 < m->n_bot; i++) f += 2.0 * m->bot[i] * m->bot[i + 1];
  if (m->interaction == ETSIM_DLRM_DCN) {
    for (size_t t = 0; t < m->n_tables; t++) D += m->tables[t].dim;
    f += 4.0 * D * m->dcn_rank * m->dcn_layers;
  } else {
    double F = (double)m->n_tables + 1;
    D = F * (F - 1) / 2 + d;
    f += 2 * F * F * d;
  }
  double in = D;
  for (size_t i = 0; i < m->n_top; i++) {
    f += 2 * in * m->top[i];
    in = m->top[i];
  }
  *top_in = D;
  return f;
}

int etsim_shard_model_check(const etsim_shard_model_t *m, etsim_error_t *err) {
  if (!m->n_tables || m->n_tables > ETSIM_SHARD_MAX_TABLES)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %zu embedding tables (1 to %u)", m->name,
                           m->n_tables, ETSIM_SHARD_MAX_TABLES);
  double emb_bytes = 0;
  for (size_t t = 0; t < m->n_tables; t++) {
    const etsim_shard_table_t *x = &m->tables[t];
    const char *bad =
        !x->rows || x->rows > ETSIM_SHARD_MAX_ROWS                   ? "rows"
        : !x->dim || x->dim > ETSIM_SHARD_MAX_DIM                    ? "dim"
        : !(x->pooling > 0 && x->pooling <= ETSIM_SHARD_MAX_POOLING) ? "pooling"
        : (x->elem_bytes != 1 && x->elem_bytes != 2 && x->elem_bytes != 4 && x->elem_bytes != 8)
            ? "elem_bytes"
            : NULL;
    if (bad)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: tables[%zu] ('%s').%s is out of range: rows 1..2^40, dim "
                             "1..%u, pooling in (0, %g], elem_bytes 1, 2, 4 or 8 (%llu rows, "
                             "dim %u, pooling %g, %u bytes)",
                             m->name, t, x->name, bad, ETSIM_SHARD_MAX_DIM, ETSIM_SHARD_MAX_POOLING,
                             (unsigned long long)x->rows, x->dim, x->pooling, x->elem_bytes);
    emb_bytes += (double)x->rows * x->dim * x->elem_bytes;
  }
  if (emb_bytes > 0x1p62)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %.3g bytes of embedding tables (at most 2^62)",
                           m->name, emb_bytes);
  if (m->n_bot < 2 || m->n_bot > ETSIM_SHARD_MAX_LAYERS || m->n_top < 1 ||
      m->n_top > ETSIM_SHARD_MAX_LAYERS)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: the bottom MLP needs its input and 1 to %d layers, the top MLP "
                           "1 to %d layers",
                           m->name, ETSIM_SHARD_MAX_LAYERS - 1, ETSIM_SHARD_MAX_LAYERS);
  for (size_t i = 0; i < m->n_bot + m->n_top; i++) {
    uint32_t w = i < m->n_bot ? m->bot[i] : m->top[i - m->n_bot];
    if (!w || w > ETSIM_SHARD_MAX_WIDTH)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: %s[%zu] = %u is outside 1..%u", m->name,
                             i < m->n_bot ? "bottom_mlp" : "top_mlp",
                             i < m->n_bot ? i : i - m->n_bot, w, ETSIM_SHARD_MAX_WIDTH);
  }
  if (m->interaction == ETSIM_DLRM_DCN) {
    if (!m->dcn_layers || m->dcn_layers > 64 || !m->dcn_rank || m->dcn_rank > ETSIM_SHARD_MAX_WIDTH)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: dcn_layers %u (1..64) or dcn_rank %u (1..%u) out of range",
                             m->name, m->dcn_layers, m->dcn_rank, ETSIM_SHARD_MAX_WIDTH);
  } else if (m->interaction == ETSIM_DLRM_DOT) {
    for (size_t t = 0; t < m->n_tables; t++)
      if (m->tables[t].dim != m->bot[m->n_bot - 1])
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: tables[%zu] has dim %u but the dot interaction needs every "
                               "table at the bottom MLP's output width %u (use \"interaction\": "
                               "\"dcn\" for mixed widths)",
                               m->name, t, m->tables[t].dim, m->bot[m->n_bot - 1]);
  } else {
    return etsim_error_set(err, ETSIM_EINVAL, "%s: unknown interaction %d", m->name,
                           m->interaction);
  }
  if (!m->batch || m->batch > ETSIM_SHARD_MAX_BATCH)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: batch %u is outside 1..%u", m->name, m->batch,
                           ETSIM_SHARD_MAX_BATCH);
  double top_in, f = fwd_flops_d(m, &top_in);
  /* Three passes (forward, two backward GEMMs) of the largest batch must
   * stay in 62 bits, and so must the top MLP's first weight matrix. */
  if (f * 3 * ETSIM_SHARD_MAX_BATCH > 0x1p62 || top_in * m->top[0] > 0x1p40)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: the dense part is too large (%.3g FLOPs per sample, %.3g "
                           "interaction outputs)",
                           m->name, f, top_in);
  return 0;
}

/* ------------------------------------------------------------- JSON */

static int key_error(etsim_error_t *err, const char *path, const char *key, const char *what) {
  return etsim_error_set(err, ETSIM_EFORMAT, "%s: %s: %s", path, key, what);
}

/* An integer in [lo, hi] or absent (then *out = dflt). */
static int get_int(json_t *o, const char *name, int64_t lo, int64_t hi, int64_t dflt, int64_t *out,
                   const char *path, const char *where, etsim_error_t *err) {
  json_t *v = json_object_get(o, name);
  char key[96];
  snprintf(key, sizeof key, "%s%s", where, name);
  if (!v) {
    if (dflt == INT64_MIN) return key_error(err, path, key, "missing");
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
    char what[96];
    snprintf(what, sizeof what, "must be an integer in %lld..%lld", (long long)lo, (long long)hi);
    return key_error(err, path, key, what);
  }
  *out = json_integer_value(v);
  return 0;
}

static int check_keys(json_t *o, const char *const *known, const char *path, const char *where,
                      etsim_error_t *err) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = 0;
    for (size_t i = 0; known[i] && !ok; i++) ok = strcmp(k, known[i]) == 0;
    if (!ok) {
      char key[128];
      snprintf(key, sizeof key, "%s%s", where, k);
      return key_error(err, path, key, "unknown key");
    }
  }
  return 0;
}

int etsim_shard_model_load(const char *path, etsim_shard_model_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_REJECT_DUPLICATES, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  static const char *const top_keys[] = {"name",     "tables",      "bottom_mlp",
                                         "top_mlp",  "interaction", "dcn_layers",
                                         "dcn_rank", "batch",       NULL};
  static const char *const tab_keys[] = {"name", "rows", "dim", "pooling", "elem_bytes", NULL};
  json_t *tabs = json_object_get(root, "tables");
  if (!json_is_object(root) || !json_is_array(tabs) || !json_array_size(tabs) ||
      json_array_size(tabs) > ETSIM_SHARD_MAX_TABLES) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: a DLRM model is an object with \"tables\", an array of 1 to %u "
                         "tables",
                         path, ETSIM_SHARD_MAX_TABLES);
    goto done;
  }
  if ((rc = check_keys(root, top_keys, path, "", err))) goto done;
  json_t *nm = json_object_get(root, "name");
  if (nm && !json_is_string(nm)) {
    rc = key_error(err, path, "name", "must be a string");
    goto done;
  }
  snprintf(m->name, sizeof m->name, "%s", nm ? json_string_value(nm) : "model");
  if ((rc = set_tables(m, json_array_size(tabs), err))) goto done;
  for (size_t t = 0; t < m->n_tables; t++) {
    json_t *x = json_array_get(tabs, t);
    char where[48];
    snprintf(where, sizeof where, "tables[%zu].", t);
    if (!json_is_object(x)) {
      where[strlen(where) - 1] = 0;
      rc = key_error(err, path, where, "must be an object");
      goto done;
    }
    if ((rc = check_keys(x, tab_keys, path, where, err))) goto done;
    int64_t rows, dim, eb;
    if ((rc = get_int(x, "rows", 1, (int64_t)ETSIM_SHARD_MAX_ROWS, INT64_MIN, &rows, path, where,
                      err)) ||
        (rc = get_int(x, "dim", 1, ETSIM_SHARD_MAX_DIM, INT64_MIN, &dim, path, where, err)) ||
        (rc = get_int(x, "elem_bytes", 1, 8, 4, &eb, path, where, err)))
      goto done;
    if (eb != 1 && eb != 2 && eb != 4 && eb != 8) {
      char key[64];
      snprintf(key, sizeof key, "%selem_bytes", where);
      rc = key_error(err, path, key, "must be 1, 2, 4 or 8");
      goto done;
    }
    json_t *pool = json_object_get(x, "pooling");
    double L = pool ? json_number_value(pool) : 1;
    if (pool && (!json_is_number(pool) || !(L > 0) || L > ETSIM_SHARD_MAX_POOLING)) {
      char key[64], what[80];
      snprintf(key, sizeof key, "%spooling", where);
      snprintf(what, sizeof what, "must be a number in (0, %g]", ETSIM_SHARD_MAX_POOLING);
      rc = key_error(err, path, key, what);
      goto done;
    }
    json_t *tn = json_object_get(x, "name");
    if (tn && !json_is_string(tn)) {
      char key[64];
      snprintf(key, sizeof key, "%sname", where);
      rc = key_error(err, path, key, "must be a string");
      goto done;
    }
    if (tn) snprintf(m->tables[t].name, sizeof m->tables[t].name, "%s", json_string_value(tn));
    else snprintf(m->tables[t].name, sizeof m->tables[t].name, "t%zu", t);
    m->tables[t].rows = (uint64_t)rows;
    m->tables[t].dim = (uint32_t)dim;
    m->tables[t].pooling = L;
    m->tables[t].elem_bytes = (uint32_t)eb;
  }
  static const char *const keys[2] = {"bottom_mlp", "top_mlp"};
  for (int k = 0; k < 2; k++) {
    json_t *a = json_object_get(root, keys[k]);
    uint32_t *dst = k ? m->top : m->bot;
    size_t *n = k ? &m->n_top : &m->n_bot;
    if (!json_is_array(a) || json_array_size(a) < (size_t)(k ? 1 : 2) ||
        json_array_size(a) > ETSIM_SHARD_MAX_LAYERS) {
      rc = key_error(err, path, keys[k],
                     k ? "must be an array of 1 to 8 widths"
                       : "must be an array of 2 to 8 widths (the dense features first)");
      goto done;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
      json_t *w = json_array_get(a, i);
      if (!json_is_integer(w) || json_integer_value(w) <= 0 ||
          json_integer_value(w) > ETSIM_SHARD_MAX_WIDTH) {
        char key[48], what[64];
        snprintf(key, sizeof key, "%s[%zu]", keys[k], i);
        snprintf(what, sizeof what, "must be an integer in 1..%u", ETSIM_SHARD_MAX_WIDTH);
        rc = key_error(err, path, key, what);
        goto done;
      }
      dst[(*n)++] = (uint32_t)json_integer_value(w);
    }
  }
  json_t *inter = json_object_get(root, "interaction");
  const char *is = json_string_value(inter);
  if (inter && (!is || (strcmp(is, "dot") != 0 && strcmp(is, "dcn") != 0))) {
    rc = key_error(err, path, "interaction", "must be \"dot\" or \"dcn\"");
    goto done;
  }
  if (is && strcmp(is, "dcn") == 0) {
    int64_t l, r;
    m->interaction = ETSIM_DLRM_DCN;
    if ((rc = get_int(root, "dcn_layers", 1, 64, INT64_MIN, &l, path, "", err)) ||
        (rc = get_int(root, "dcn_rank", 1, ETSIM_SHARD_MAX_WIDTH, INT64_MIN, &r, path, "", err)))
      goto done;
    m->dcn_layers = (uint32_t)l;
    m->dcn_rank = (uint32_t)r;
  } else if (json_object_get(root, "dcn_layers") || json_object_get(root, "dcn_rank")) {
    rc = key_error(err, path, "dcn_layers", "only with \"interaction\": \"dcn\"");
    goto done;
  }
  int64_t b;
  if ((rc = get_int(root, "batch", 1, ETSIM_SHARD_MAX_BATCH, 512, &b, path, "", err))) goto done;
  m->batch = (uint32_t)b;
  rc = etsim_shard_model_check(m, err);
  if (rc) etsim_error_prefix(err, "%s", path);
done:
  json_decref(root);
  if (rc) etsim_shard_model_free(m);
  return rc;
}
