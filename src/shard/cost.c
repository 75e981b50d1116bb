/*
 * cost.c — prices: TorchRec's per-shard cost model (for load balancing),
 * collective times from a calibration curve or closed forms, kernel
 * rooflines, and the names and checks of the options.  docs/shard.md
 * states every formula.
 */
#include "shard_int.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static const char *const type_names[ETSIM_SHARD_N_TYPES] = {"tw", "rw", "cw", "dp", "twrw", "twcw"};
static const char *const prec_names[ETSIM_SHARD_N_PRECS] = {"fp32", "fp16", "bf16", "fp8", "int8"};
static const char *const coll_names[ETSIM_SHARD_N_COLLS] = {"all-to-all", "reduce-scatter",
                                                            "all-gather", "all-reduce"};

const char *etsim_shard_type_name(int t) {
  return t >= 0 && t < ETSIM_SHARD_N_TYPES ? type_names[t] : "?";
}

int etsim_shard_type_parse(const char *s) {
  for (int t = 0; t < ETSIM_SHARD_N_TYPES; t++)
    if (strcmp(s, type_names[t]) == 0) return t;
  return -1;
}

const char *etsim_shard_prec_name(int p) {
  return p >= 0 && p < ETSIM_SHARD_N_PRECS ? prec_names[p] : "?";
}

int etsim_shard_prec_parse(const char *s) {
  for (int p = 0; p < ETSIM_SHARD_N_PRECS; p++)
    if (strcmp(s, prec_names[p]) == 0) return p;
  return -1;
}

uint32_t etsim_shard_prec_bytes(int p) {
  return p == ETSIM_SHARD_PREC_FP32 ? 4 : p <= ETSIM_SHARD_PREC_BF16 ? 2 : 1;
}

int etsim_shard_prec_quantized(int p) {
  return p == ETSIM_SHARD_PREC_FP8 || p == ETSIM_SHARD_PREC_INT8;
}

const char *etsim_shard_coll_name(int c) {
  return c >= 0 && c < ETSIM_SHARD_N_COLLS ? coll_names[c] : "?";
}

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
  o->step.a2a_prec = ETSIM_SHARD_PREC_FP32;
  o->step.ar_prec = ETSIM_SHARD_PREC_FP32;
  o->step.iterations = 1;
  o->step.peak_tflops = 989;
  o->step.mem_gbps = 3350;
  o->step.bucket_bytes = 25u << 20;
  o->tiers.ddr_gbps = 25;
  o->tiers.ssd_gbps = 3;
  o->tiers.ddr_latency_us = 5;
  o->tiers.ssd_latency_us = 100;
  o->tiers.ddr_granule = 64;
  o->tiers.ssd_granule = 4096;
  o->tiers.zipf_alpha = 1.05;
}

static int finite_in(double v, double lo, double hi) { return isfinite(v) && v >= lo && v <= hi; }

int etsim_shard__check_step(const etsim_shard_step_t *s, const etsim_shard_tiers_t *k,
                            etsim_error_t *err) {
  const char *bad = NULL;
  if (s->a2a_prec < 0 || s->a2a_prec >= ETSIM_SHARD_N_PRECS) bad = "a2a precision";
  else if (s->ar_prec < 0 || s->ar_prec >= ETSIM_SHARD_N_PRECS) bad = "all-reduce precision";
  else if (s->iterations < 1 || s->iterations > 64) bad = "iterations (1..64)";
  else if (s->pipeline && s->iterations < 2) bad = "iterations (pipelining needs 2 or more)";
  else if (!finite_in(s->peak_tflops, 1e-3, 1e6)) bad = "peak TFLOPS (0.001..1e6)";
  else if (!finite_in(s->mem_gbps, 1e-3, 1e6)) bad = "memory GB/s (0.001..1e6)";
  else if (s->bucket_bytes < 1024 || s->bucket_bytes > (1ull << 40)) bad = "bucket bytes";
  else if (!finite_in(k->ddr_gb, 0, 1e6) || !finite_in(k->ssd_gb, 0, 1e9)) bad = "DDR/SSD GB";
  else if (!finite_in(k->ddr_gbps, 1e-3, 1e6) || !finite_in(k->ssd_gbps, 1e-3, 1e6))
    bad = "DDR/SSD GB/s";
  else if (!finite_in(k->ddr_latency_us, 0, 1e6) || !finite_in(k->ssd_latency_us, 0, 1e6))
    bad = "DDR/SSD latency";
  else if (k->ddr_granule < 1 || k->ddr_granule > (1u << 20) || k->ssd_granule < 1 ||
           k->ssd_granule > (1u << 20))
    bad = "DDR/SSD granule (1..1048576 bytes)";
  else if (!finite_in(k->zipf_alpha, 0, 10)) bad = "Zipf alpha (0..10)";
  if (bad) return etsim_error_set(err, ETSIM_EINVAL, "shard: bad option: %s", bad);
  return 0;
}

int etsim_shard__setup(etsim_shard__ctx_t *c, const etsim_shard_model_t *m,
                       const etsim_shard_opts_t *o, etsim_error_t *err) {
  memset(c, 0, sizeof *c);
  c->m = m;
  c->o = o;
  c->P = o->ranks;
  c->Pl = o->ranks_per_host ? o->ranks_per_host : o->ranks;
  if (!c->P || c->P > ETSIM_SHARD_MAX_RANKS || !c->Pl || c->P % c->Pl)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: %zu ranks with %zu per host: need 1..%u ranks, a whole "
                           "number of hosts",
                           o->ranks, c->Pl, ETSIM_SHARD_MAX_RANKS);
  c->hosts = c->P / c->Pl;
  c->B = o->batch ? o->batch : m->batch ? m->batch : 512;
  if (c->B > ETSIM_SHARD_MAX_BATCH)
    return etsim_error_set(err, ETSIM_EINVAL, "shard: batch %.0f is outside 1..%u", c->B,
                           ETSIM_SHARD_MAX_BATCH);
  const etsim_shard_costs_t *k = &o->costs;
  if (!finite_in(k->hbm_gbps, 1e-3, 1e7) || !finite_in(k->intra_host_gbps, 1e-3, 1e7) ||
      !finite_in(k->inter_host_gbps, 1e-3, 1e7) || !finite_in(o->hbm_gb, 1e-6, 1e6) ||
      !finite_in(k->bwd_factor, 0, 100) || !finite_in(k->optimizer_mult, 0, 100) ||
      k->index_bytes < 1 || k->index_bytes > 8 || k->cw_block < 1 || k->cw_block > 65536)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: bandwidths, HBM (up to 1e6 GB), optimizer state and the "
                           "column block must be positive and finite");
  int rc = etsim_shard__check_step(&o->step, &o->tiers, err);
  if (rc) return rc;
  c->hbm = k->hbm_gbps * 1e6;
  c->intra = k->intra_host_gbps * 1e6;
  c->inter = k->inter_host_gbps * 1e6;
  c->comm = c->hosts > 1 ? c->inter : c->intra;
  c->cap = (uint64_t)(o->hbm_gb * 1e9);
  c->tiered = o->tiers.ddr_gb > 0 || o->tiers.ssd_gb > 0;
  c->cap_total = c->cap + (uint64_t)((o->tiers.ddr_gb + o->tiers.ssd_gb) * 1e9);
  c->obytes = etsim_shard_prec_bytes(o->step.a2a_prec);
  /* The batch enters every byte count: recheck the totals with it. */
  etsim_shard_model_t mb = *m;
  mb.batch = (uint32_t)c->B;
  return etsim_shard_model_check(&mb, err);
}

uint32_t etsim_shard__cw_block(uint32_t d, uint32_t want) {
  for (uint32_t b = (want + 3) / 4 * 4; b < d; b += 4)
    if (d % b == 0) return b;
  return d;
}

static double pen(uint32_t d) { return d >= 128 ? 1.0 : d >= 64 ? 1.15 : 1.75; }

double etsim_shard__row_bytes(const etsim_shard__ctx_t *c, const etsim_shard_table_t *x,
                              uint32_t cols) {
  return (double)cols * x->elem_bytes * (1 + c->o->costs.optimizer_mult);
}

uint64_t etsim_shard__io_bytes(const etsim_shard__ctx_t *c, int ty, const etsim_shard_table_t *x,
                               uint32_t cols) {
  double P = (double)c->P, Pl = (double)c->Pl, B = c->B, L = x->pooling;
  double i = c->o->costs.index_bytes, o = c->obytes, d = cols;
  switch (ty) {
    case ETSIM_SHARD_RW:
      return (uint64_t)(B * L * i + P * B * d * o);
    case ETSIM_SHARD_TWRW:
      return (uint64_t)(P * B * L / Pl * i + P * B * d * o);
    case ETSIM_SHARD_DP:
      return (uint64_t)(B * L * i + B * d * o);
    default:
      return (uint64_t)(P * B * L * i + P * B * d * o);
  }
}

void etsim_shard__rate(const etsim_shard__ctx_t *c, int ty, const etsim_shard_table_t *x,
                       uint64_t rows, uint32_t cols, etsim_shard_t *s) {
  const etsim_shard_costs_t *k = &c->o->costs;
  double P = (double)c->P, Pl = (double)c->Pl, B = c->B, L = x->pooling;
  double i = k->index_bytes, o = c->obytes, e = x->elem_bytes;
  double d = cols, dd = cols < 32 ? 32 : cols, pn = pen(cols);
  double w = (double)rows * cols * e; /* weight bytes */
  double fwd = 0, fc = 0, bc = 0, extra_bwd = 0;
  switch (ty) {
    case ETSIM_SHARD_TW:
    case ETSIM_SHARD_CW:
    case ETSIM_SHARD_TWCW:
      fwd = (P * B * L * i + P * B * L * dd * e + P * B * d * o) * pn / c->hbm;
      fc = bc = P * B * d * o / c->comm;
      break;
    case ETSIM_SHARD_RW:
      fwd = (B * L * i + B * L * dd * e + P * B * d * o) * pn / c->hbm;
      fc = P * B * d * o / c->comm; /* reduce-scatter */
      bc = fc;                      /* all-gather */
      extra_bwd = 2.455 * P * B * d * o / c->hbm;
      break;
    case ETSIM_SHARD_TWRW:
      fwd = (P * B * L / Pl * i + P * B * L / Pl * dd * e + P * B * d * o) * pn / c->hbm;
      fc = bc = P * B * d * o / (c->intra) + B * (P / Pl) * d * o / c->inter;
      break;
    case ETSIM_SHARD_DP: {
      fwd = (B * L * i + B * L * dd * e) * pn / c->hbm;
      double n = c->hosts < 2 ? 1 : 2;
      double ar = c->hosts > 1 ? c->inter * Pl : c->intra;
      bc = w * (2 * n - 1) / n / ar * (P > 2 * Pl ? 2 : 1);
      extra_bwd = 9.22 * w / c->hbm;
      break;
    }
  }
  s->rows = rows;
  s->cols = cols;
  s->fwd_ms = fwd;
  s->bwd_ms = k->bwd_factor * fwd + extra_bwd;
  s->fwd_comm_ms = fc;
  s->bwd_comm_ms = bc;
  s->hbm_rows = rows;
  s->ddr_rows = 0;
  s->hbm_hit = s->ddr_hit = 1;
  s->hbm_bytes = (uint64_t)(w * (1 + k->optimizer_mult)) + etsim_shard__io_bytes(c, ty, x, cols);
}

/* ------------------------------------------------------- collectives */

static double curve_ns(const etsim_shard_curve_t *c, double b) {
  if (c->n == 1) return c->ns[0] * (b > c->bytes[0] ? b / c->bytes[0] : 1);
  if (b <= c->bytes[0]) return c->ns[0];
  uint32_t k = 1;
  while (k + 1 < c->n && b > c->bytes[k]) k++;
  double x0 = c->bytes[k - 1], x1 = c->bytes[k], y0 = c->ns[k - 1], y1 = c->ns[k];
  double v = y0 + (y1 - y0) * (b - x0) / (x1 - x0);
  return v > 0 ? v : 0;
}

double etsim_shard__coll_ns(const etsim_shard_opts_t *o, size_t P, size_t Pl, int coll, int scope,
                            double S) {
  if (S <= 0 || P < 2) return 0;
  if (scope == ETSIM_SHARD_SCOPE_HOST && Pl < 2) return 0;
  const etsim_shard_calib_t *cal = o->calib;
  if (cal && cal->ranks == P && cal->ranks_per_host == Pl && cal->c[coll][scope].n)
    return curve_ns(&cal->c[coll][scope], S);
  /* Closed forms (ns = bytes / GB/s): rings inside a host, then across. */
  double intra = o->costs.intra_host_gbps, inter = o->costs.inter_host_gbps;
  double p = (double)P, pl = (double)Pl, h = p / pl;
  if (scope == ETSIM_SHARD_SCOPE_HOST) {
    switch (coll) {
      case ETSIM_SHARD_COLL_AG:
        return S * (pl - 1) / intra;
      case ETSIM_SHARD_COLL_AR:
        return 2 * S * (pl - 1) / pl / intra;
      default:
        return S * (pl - 1) / pl / intra;
    }
  }
  if (h < 2) {
    switch (coll) {
      case ETSIM_SHARD_COLL_AG:
        return S * (p - 1) / intra;
      case ETSIM_SHARD_COLL_AR:
        return 2 * S * (p - 1) / p / intra;
      default:
        return S * (p - 1) / p / intra;
    }
  }
  switch (coll) {
    case ETSIM_SHARD_COLL_A2A:
      return S * (pl - 1) / p / intra + S * (p - pl) / p / inter;
    case ETSIM_SHARD_COLL_RS:
      return S * (pl - 1) / pl / intra + S / pl * (h - 1) / h / inter;
    case ETSIM_SHARD_COLL_AG:
      return S * p * (pl - 1) / pl / intra + S * p / pl * (h - 1) / h / inter;
    default:
      return 2 * (S * (pl - 1) / pl / intra + S / pl * (h - 1) / h / inter);
  }
}

double etsim_shard__comp_ns(const etsim_shard_step_t *s, double flops, double bytes) {
  return fmax(flops / (s->peak_tflops * 1e3), bytes / s->mem_gbps);
}

/* ------------------------------------------------------ calibration */

int etsim_shard_calib_save(const etsim_shard_calib_t *c, const char *path, etsim_error_t *err) {
  etsim_outfile_t of;
  int rc = etsim_outfile_open(&of, path, err);
  if (rc) return rc;
  FILE *fp = of.fp;
  fprintf(fp, "{\"etsim_shard_calib\": 1, \"ranks\": %u, \"ranks_per_host\": %u, \"source\": ",
          c->ranks, c->ranks_per_host);
  etsim_shard__json_str(fp, c->source);
  fputs(",\n \"curves\": [", fp);
  int first = 1;
  for (int k = 0; k < ETSIM_SHARD_N_COLLS; k++)
    for (int s = 0; s < ETSIM_SHARD_N_SCOPES; s++) {
      const etsim_shard_curve_t *cv = &c->c[k][s];
      if (!cv->n) continue;
      fprintf(fp, "%s\n  {\"coll\": \"%s\", \"scope\": \"%s\", \"bytes\": [", first ? "" : ",",
              coll_names[k], s ? "host" : "world");
      for (uint32_t i = 0; i < cv->n; i++) fprintf(fp, "%s%.17g", i ? ", " : "", cv->bytes[i]);
      fputs("], \"ns\": [", fp);
      for (uint32_t i = 0; i < cv->n; i++) fprintf(fp, "%s%.17g", i ? ", " : "", cv->ns[i]);
      fputs("]}", fp);
      first = 0;
    }
  fputs("\n ]}\n", fp);
  return etsim_outfile_commit(&of, err);
}

int etsim_shard_calib_load(const char *path, etsim_shard_calib_t *c, etsim_error_t *err) {
  memset(c, 0, sizeof *c);
  json_t *root;
  int rc0 = etsim_json_load(path, 0, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  json_t *r = json_object_get(root, "ranks"), *rl = json_object_get(root, "ranks_per_host");
  json_t *cs = json_object_get(root, "curves");
  if (!json_is_integer(json_object_get(root, "etsim_shard_calib")) || !json_is_integer(r) ||
      json_integer_value(r) < 1 || json_integer_value(r) > ETSIM_SHARD_MAX_RANKS ||
      !json_is_integer(rl) || json_integer_value(rl) < 1 ||
      json_integer_value(r) % json_integer_value(rl) || !json_is_array(cs)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: a calibration needs \"etsim_shard_calib\", \"ranks\" and "
                         "\"ranks_per_host\" (whole hosts) and a \"curves\" array",
                         path);
    goto done;
  }
  c->ranks = (uint32_t)json_integer_value(r);
  c->ranks_per_host = (uint32_t)json_integer_value(rl);
  const char *src = json_string_value(json_object_get(root, "source"));
  snprintf(c->source, sizeof c->source, "%s", src ? src : path);
  for (size_t i = 0; i < json_array_size(cs); i++) {
    json_t *x = json_array_get(cs, i);
    const char *cn = json_string_value(json_object_get(x, "coll"));
    const char *sn = json_string_value(json_object_get(x, "scope"));
    json_t *b = json_object_get(x, "bytes"), *t = json_object_get(x, "ns");
    int k = -1, s = sn && strcmp(sn, "world") == 0 ? 0 : sn && strcmp(sn, "host") == 0 ? 1 : -1;
    for (int j = 0; cn && j < ETSIM_SHARD_N_COLLS; j++)
      if (strcmp(cn, coll_names[j]) == 0) k = j;
    size_t n = json_array_size(b);
    if (k < 0 || s < 0 || !json_is_array(b) || !json_is_array(t) || n < 1 ||
        n > ETSIM_SHARD_CAL_POINTS || json_array_size(t) != n) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: curves[%zu]: needs \"coll\" (all-to-all, reduce-scatter, "
                           "all-gather, all-reduce), \"scope\" (world, host) and \"bytes\" and "
                           "\"ns\" arrays of 1 to %d equal-length entries",
                           path, i, ETSIM_SHARD_CAL_POINTS);
      goto done;
    }
    etsim_shard_curve_t *cv = &c->c[k][s];
    cv->n = (uint32_t)n;
    for (size_t j = 0; j < n; j++) {
      json_t *bj = json_array_get(b, j), *tj = json_array_get(t, j);
      double bv = json_number_value(bj), tv = json_number_value(tj);
      if (!json_is_number(bj) || !json_is_number(tj) || !(bv > 0) || !isfinite(bv) || !(tv >= 0) ||
          !isfinite(tv) || (j && !(bv > cv->bytes[j - 1]))) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: curves[%zu].bytes[%zu] / ns[%zu]: sizes must be positive and "
                             "increasing, times non-negative and finite",
                             path, i, j, j);
        goto done;
      }
      cv->bytes[j] = bv;
      cv->ns[j] = tv;
    }
  }
done:
  json_decref(root);
  return rc;
}

void etsim_shard__json_str(FILE *fp, const char *s) {
  fputc('"', fp);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(fp, "\\%c", ch);
    else if (ch < 0x20) fprintf(fp, "\\u%04x", ch);
    else fputc(ch, fp);
  }
  fputc('"', fp);
}
