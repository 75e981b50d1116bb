/*
 * step.c — one training iteration as a dependency graph, shared by the
 * planner's estimate and `gen dlrm`'s traces, and the estimator that runs
 * it.
 *
 * A plan's "flow" is each rank's work and traffic: lookups and their
 * bytes, fetches from DDR/SSD, what it owns of every all-to-all, the
 * row-wise and host reduce-scatter sizes and the data-parallel tables.
 * From it, the graph of rank r per iteration is:
 *
 *   sparse forward: input all-to-all (ids, 8 bytes each) -> fetch of rows
 *     below HBM -> lookup -> [quantize] -> TWRW host reduce-scatter ->
 *     pooled all-to-all -> RW reduce-scatter -> [dequantize]
 *   dense: bottom MLP (needs only the dense input), interaction (needs the
 *     pooled embeddings), top MLP, then backward: top MLP (gradients
 *     all-reduced in DDP buckets as they fill), interaction, [quantize],
 *     gradient all-to-all, RW all-gather, TWRW host all-gather,
 *     [dequantize], embedding update [+ write-back below HBM], bottom MLP,
 *     data-parallel tables all-reduced in buckets, dense optimizer.
 *
 * Every collective also depends on the rank's previous collective, so all
 * ranks issue them in one order (the simulator, like NCCL on one stream,
 * matches collectives by order).  With several iterations the next sparse
 * forward starts after this optimizer step; pipelined, it is issued before
 * this iteration's dense part and its lookup waits only for this lookup
 * and the update two iterations back (rows read by the next batch may miss
 * this batch's update, a one-iteration staleness), so its all-to-all
 * overlaps this iteration's dense compute.
 *
 * all-to-all comm_size is the largest of any rank's sent or received bytes:
 * the simulator runs an all-to-all as even, and its slowest member bounds
 * it; the exact bytes per peer are in the split lists.
 */
#include "shard_int.h"

#include <math.h>
#include <string.h>

#define NONE UINT32_MAX

struct etsim_shard_flow {
  const etsim_shard_model_t *m;
  const etsim_shard_plan_t *p;
  etsim_shard_step_t step;
  size_t P, Pl, H;
  uint64_t B, obytes, arbytes;
  /* per rank, index P = the maximum over ranks */
  double *look_ops, *look_bytes, *look_ns;
  double *fetch_ns, *fetch_bytes, *wb_ns, *wb_bytes;
  double *out_elems;                 /* pooled elements this rank sends (a2a and TWRW part) */
  int64_t *idx_owned, *pooled_owned; /* bytes every peer sends r / r sends every peer */
  uint64_t *host_rs;                 /* per host (index H = max): TWRW host reduce-scatter */
  uint64_t rw_bytes, a2a_in, a2a_out, in_elems;
  uint64_t *dp; /* bytes of each data-parallel table, in table order */
  size_t n_dp;
  int any_fetch, any_host;
};

void etsim_shard_flow_free(etsim_shard_flow_t *f) {
  if (!f) return;
  etsim_free(f->look_ops);
  etsim_free(f->idx_owned);
  etsim_free(f->host_rs);
  etsim_free(f->dp);
  etsim_free(f);
}

static int is_a2a(int ty) {
  return ty == ETSIM_SHARD_TW || ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW;
}

int etsim_shard_flow_make(const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                          etsim_shard_flow_t **out, etsim_error_t *err) {
  if (!p->n_ranks || p->n_tables != m->n_tables || !p->ranks_per_host ||
      p->n_ranks % p->ranks_per_host)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: a plan for %zu tables on %zu ranks (%zu per host) does not "
                           "fit model %s (%zu tables)",
                           p->n_tables, p->n_ranks, p->ranks_per_host, m->name, m->n_tables);
  etsim_shard_flow_t *f = etsim_calloc(1, sizeof *f);
  if (!f) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t P = p->n_ranks, n1 = P + 1;
  f->m = m;
  f->p = p;
  f->step = p->step;
  f->P = P;
  f->Pl = p->ranks_per_host;
  f->H = P / f->Pl;
  f->B = p->batch;
  f->obytes = etsim_shard_prec_bytes(p->step.a2a_prec);
  f->arbytes = etsim_shard_prec_bytes(p->step.ar_prec);
  f->look_ops = etsim_calloc(8 * n1, sizeof *f->look_ops);
  f->idx_owned = etsim_calloc(2 * n1, sizeof *f->idx_owned);
  f->host_rs = etsim_calloc(f->H + 1, sizeof *f->host_rs);
  f->dp = etsim_malloc((m->n_tables ? m->n_tables : 1) * sizeof *f->dp);
  if (!f->look_ops || !f->idx_owned || !f->host_rs || !f->dp) {
    etsim_shard_flow_free(f);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  f->look_bytes = f->look_ops + n1;
  f->look_ns = f->look_bytes + n1;
  f->fetch_ns = f->look_ns + n1;
  f->fetch_bytes = f->fetch_ns + n1;
  f->wb_ns = f->fetch_bytes + n1;
  f->wb_bytes = f->wb_ns + n1;
  f->out_elems = f->wb_bytes + n1;
  f->pooled_owned = f->idx_owned + n1;
  const etsim_shard_tiers_t *k = &p->tiers;
  double *ddr = etsim_calloc(2 * P, sizeof *ddr), *ssd = ddr ? ddr + P : NULL;
  if (!ddr) {
    etsim_shard_flow_free(f);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  double B = (double)f->B, rw_cols = 0;
  for (size_t t = 0; t < m->n_tables; t++) {
    const etsim_shard_table_t *x = &m->tables[t];
    int ty = p->table_type[t];
    if (ty == ETSIM_SHARD_DP) f->dp[f->n_dp++] = x->rows * x->dim * (uint64_t)x->elem_bytes;
    for (size_t i = p->table_first[t]; i < p->table_first[t + 1]; i++) {
      const etsim_shard_t *s = &p->shards[i];
      size_t r = s->rank;
      double ids = B * x->pooling; /* one rank's batch */
      if (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_TWRW) ids *= (double)s->rows / (double)x->rows;
      double look = ty == ETSIM_SHARD_DP ? ids : ids * (double)P; /* ids this shard serves */
      if (ty != ETSIM_SHARD_DP) f->idx_owned[r] += (int64_t)llround(ids) * 8;
      f->look_ops[r] += look * s->cols;
      f->look_bytes[r] += look * s->cols * x->elem_bytes + look * 8;
      double rowb = (double)s->cols * x->elem_bytes;
      ddr[r] += look * (s->ddr_hit - s->hbm_hit) * fmax(rowb, k->ddr_granule);
      ssd[r] += look * (1 - s->ddr_hit) * fmax(rowb, k->ssd_granule);
      double pooled = B * s->cols; /* elements to each peer */
      if (is_a2a(ty)) {
        f->pooled_owned[r] += (int64_t)(pooled * (double)f->obytes);
        f->out_elems[r] += pooled * (double)P;
      } else if (ty == ETSIM_SHARD_TWRW) {
        /* After the host reduce-scatter each host rank sends 1/Pl of the
         * pooled vectors of every peer's batch. */
        double part = pooled / (double)f->Pl;
        f->pooled_owned[r] += (int64_t)(part * (double)f->obytes);
        f->out_elems[r] += part * (double)P;
        f->host_rs[r / f->Pl] += (uint64_t)((double)P * pooled) * f->obytes;
      } else if (ty == ETSIM_SHARD_RW && r == 0) {
        rw_cols += s->cols;
      }
    }
  }
  /* Every host rank holds one shard of each TWRW table of its host, so
   * the per-rank sums above add Pl shards: divide back. */
  for (size_t h = 0; h < f->H; h++) {
    f->host_rs[h] /= f->Pl;
    if (f->host_rs[h] > f->host_rs[f->H]) f->host_rs[f->H] = f->host_rs[h];
    if (f->host_rs[h] && f->Pl > 1) f->any_host = 1;
  }
  f->rw_bytes = (uint64_t)((double)P * B * rw_cols) * f->obytes;
  int64_t sent1 = 0, max_idx = 0, recv2 = 0, max_pooled = 0;
  double max_out = 0;
  for (size_t r = 0; r < P; r++) {
    sent1 += f->idx_owned[r];
    recv2 += f->pooled_owned[r];
    if (f->idx_owned[r] > max_idx) max_idx = f->idx_owned[r];
    if (f->pooled_owned[r] > max_pooled) max_pooled = f->pooled_owned[r];
    if (f->out_elems[r] > max_out) max_out = f->out_elems[r];
    f->look_ns[r] = etsim_shard__comp_ns(&f->step, f->look_ops[r], f->look_bytes[r]);
    double fn = 0, wn = 0;
    if (ddr[r] > 0) {
      fn += k->ddr_latency_us * 1e3 + ddr[r] / k->ddr_gbps;
      wn += k->ddr_latency_us * 1e3 + 2 * ddr[r] / k->ddr_gbps;
    }
    if (ssd[r] > 0) {
      fn += k->ssd_latency_us * 1e3 + ssd[r] / k->ssd_gbps;
      wn += k->ssd_latency_us * 1e3 + 2 * ssd[r] / k->ssd_gbps;
    }
    f->fetch_ns[r] = fn;
    f->fetch_bytes[r] = ddr[r] + ssd[r];
    f->wb_ns[r] = wn;
    f->wb_bytes[r] = 2 * (ddr[r] + ssd[r]);
    if (fn > 0) f->any_fetch = 1;
    double *cols[] = {f->look_ops,    f->look_bytes, f->look_ns,  f->fetch_ns,
                      f->fetch_bytes, f->wb_ns,      f->wb_bytes, f->out_elems};
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
      if (cols[c][r] > cols[c][P]) cols[c][P] = cols[c][r];
  }
  etsim_free(ddr);
  f->idx_owned[P] = max_idx;
  f->pooled_owned[P] = max_pooled;
  int64_t recv1 = max_idx * (int64_t)P, sent2 = max_pooled * (int64_t)P;
  f->a2a_in = (uint64_t)(sent1 > recv1 ? sent1 : recv1);
  f->a2a_out = (uint64_t)(sent2 > recv2 ? sent2 : recv2);
  f->in_elems = (uint64_t)(recv2 / (int64_t)f->obytes);
  *out = f;
  return 0;
}

void etsim_shard_flow_splits(const etsim_shard_flow_t *f, size_t r, int split, int64_t *in,
                             int64_t *out) {
  for (size_t q = 0; q < f->P; q++) {
    switch (split) {
      case ETSIM_SHARD_SPLIT_INPUT: /* r sends its ids to each owner q */
        in[q] = f->idx_owned[q];
        out[q] = f->idx_owned[r];
        break;
      case ETSIM_SHARD_SPLIT_OUTPUT: /* owners send pooled vectors */
        in[q] = f->pooled_owned[r];
        out[q] = f->pooled_owned[q];
        break;
      default: /* gradients go back the way the vectors came */
        in[q] = f->pooled_owned[q];
        out[q] = f->pooled_owned[r];
        break;
    }
  }
}

/* ---------------------------------------------------------------- graph */

void etsim_shard_dag_free(etsim_shard_dag_t *d) {
  if (!d) return;
  etsim_free(d->v);
  memset(d, 0, sizeof *d);
}

typedef struct {
  const etsim_shard_flow_t *f;
  etsim_shard_dag_t *d;
  size_t r;   /* rank, or P for the maximum */
  uint32_t k; /* iteration */
  uint32_t last_coll;
  int rc;
} bld_t;

static uint32_t add(bld_t *b, const char *name, int type, uint32_t d0, uint32_t d1, uint32_t d2,
                    uint32_t d3) {
  if (b->rc) return NONE;
  etsim_shard_dag_t *d = b->d;
  if (etsim_grow((void **)&d->v, &d->cap, d->n + 1, sizeof *d->v)) {
    b->rc = ETSIM_ENOMEM;
    return NONE;
  }
  etsim_shard_node_t *n = &d->v[d->n];
  memset(n, 0, sizeof *n);
  if (b->k) snprintf(n->name, sizeof n->name, "%s#%u", name, b->k);
  else snprintf(n->name, sizeof n->name, "%s", name);
  n->type = (uint8_t)type;
  uint32_t deps[4] = {d0, d1, d2, d3};
  for (int i = 0; i < 4; i++) {
    if (deps[i] == NONE) continue;
    int dup = 0;
    for (int j = 0; j < n->n_deps; j++) dup |= n->deps[j] == deps[i];
    if (!dup) n->deps[n->n_deps++] = deps[i];
  }
  return (uint32_t)d->n++;
}

static uint32_t comp(bld_t *b, const char *name, int kind, double flops, double bytes, double ns,
                     uint32_t d0, uint32_t d1, uint32_t d2, uint32_t d3) {
  uint32_t i = add(b, name, ETSIM_SHARD_NODE_COMP, d0, d1, d2, d3);
  if (i == NONE) return NONE;
  etsim_shard_node_t *n = &b->d->v[i];
  n->kind = (uint8_t)kind;
  n->flops = (uint64_t)llround(flops);
  n->bytes = (uint64_t)llround(bytes);
  if (ns < 0) ns = etsim_shard__comp_ns(&b->f->step, flops, bytes);
  n->dur_ns = (uint64_t)llround(ns);
  return i;
}

static uint32_t coll(bld_t *b, const char *name, int c, int scope, uint64_t size, int split,
                     uint32_t d0, uint32_t d1, uint32_t d2) {
  uint32_t i = add(b, name, ETSIM_SHARD_NODE_COLL, b->last_coll, d0, d1, d2);
  if (i == NONE) return NONE;
  etsim_shard_node_t *n = &b->d->v[i];
  n->coll = (uint8_t)c;
  n->scope = (uint8_t)scope;
  n->split = (uint8_t)split;
  n->bytes = size ? size : 1;
  b->last_coll = i;
  return i;
}

static uint32_t first_of(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a != NONE ? a : b != NONE ? b : c != NONE ? c : d;
}

/* Quantize (fp8/int8): read fp32 twice (row ranges, then the values),
 * write one byte per element; dequantize reads one and writes four. */
static uint32_t quant(bld_t *b, const char *name, double elems, int prec, uint32_t d0, uint32_t d1,
                      uint32_t d2, uint32_t d3) {
  double q = etsim_shard_prec_bytes(prec);
  return comp(b, name, ETSIM_SHARD_KIND_QUANT, 4 * elems, elems * (8 + q), -1, d0, d1, d2, d3);
}
static uint32_t dequant(bld_t *b, const char *name, double elems, int prec, uint32_t d0,
                        uint32_t d1, uint32_t d2, uint32_t d3) {
  double q = etsim_shard_prec_bytes(prec);
  return comp(b, name, ETSIM_SHARD_KIND_QUANT, 2 * elems, elems * (4 + q), -1, d0, d1, d2, d3);
}

typedef struct {
  uint32_t lookup, update, opt;
  uint32_t emb[3]; /* what the interaction waits for: the pooled exchange */
} iter_ids_t;

/* Forward GEMMs of an MLP with widths w[0..n): B x w[i] by w[i] x w[i+1]. */
static uint32_t mlp_fwd(bld_t *b, const char *tag, const uint32_t *w, size_t n, uint32_t start,
                        uint32_t dep2) {
  char name[48];
  uint32_t prev = start;
  double B = (double)b->f->B;
  for (size_t i = 0; i + 1 < n; i++) {
    double a = w[i], o = w[i + 1];
    snprintf(name, sizeof name, "%s_fwd_%zu", tag, i);
    prev = comp(b, name, ETSIM_SHARD_KIND_MLP, 2 * B * a * o, 4 * (B * a + a * o + B * o), -1, prev,
                i ? NONE : dep2, NONE, NONE);
  }
  return prev;
}

/* A dense all-reduce of `bytes` fp32 gradients after node `dep`. */
static uint32_t allreduce(bld_t *b, const char *name, uint64_t bytes, uint32_t dep) {
  const etsim_shard_flow_t *f = b->f;
  int prec = f->step.ar_prec;
  uint64_t wire = bytes / 4 * f->arbytes;
  char nm[48];
  if (!etsim_shard_prec_quantized(prec))
    return coll(b, name, ETSIM_SHARD_COLL_AR, ETSIM_SHARD_SCOPE_WORLD, wire, 0, dep, NONE, NONE);
  snprintf(nm, sizeof nm, "%s_quantize", name);
  uint32_t q = quant(b, nm, (double)bytes / 4, prec, dep, NONE, NONE, NONE);
  uint32_t a = coll(b, name, ETSIM_SHARD_COLL_AR, ETSIM_SHARD_SCOPE_WORLD, wire, 0, q, NONE, NONE);
  snprintf(nm, sizeof nm, "%s_dequantize", name);
  return dequant(b, nm, (double)bytes / 4, prec, a, NONE, NONE, NONE);
}

/* The sparse forward of iteration k. */
static void sparse_fwd(bld_t *b, iter_ids_t *it, uint32_t k) {
  const etsim_shard_flow_t *f = b->f;
  size_t r = b->r;
  int pipe = f->step.pipeline, qa = etsim_shard_prec_quantized(f->step.a2a_prec);
  b->k = k;
  uint32_t pre = !pipe && k ? it[k - 1].opt : NONE;
  uint32_t pre_upd = !pipe && k ? it[k - 1].update : NONE;
  uint32_t a1 = f->a2a_in
                    ? coll(b, "input_dist_alltoall", ETSIM_SHARD_COLL_A2A, ETSIM_SHARD_SCOPE_WORLD,
                           f->a2a_in, ETSIM_SHARD_SPLIT_INPUT, pre, pre_upd, NONE)
                    : NONE;
  uint32_t fe = f->any_fetch ? comp(b, "emb_fetch", ETSIM_SHARD_KIND_FETCH, 0, f->fetch_bytes[r],
                                    f->fetch_ns[r], a1, pre, NONE, NONE)
                             : NONE;
  uint32_t lk =
      comp(b, "emb_lookup", ETSIM_SHARD_KIND_EMB, f->look_ops[r], f->look_bytes[r], f->look_ns[r],
           a1, fe, pipe && k ? it[k - 1].lookup : pre, pipe && k >= 2 ? it[k - 2].update : pre_upd);
  it[k].lookup = lk;
  double oe = f->out_elems[r] + (double)f->rw_bytes / f->obytes;
  uint32_t src = lk;
  if (qa && (f->a2a_out || f->rw_bytes || f->any_host))
    src = quant(b, "emb_output_quantize", oe, f->step.a2a_prec, lk, NONE, NONE, NONE);
  size_t h = r == f->P ? f->H : r / f->Pl;
  uint32_t hr = f->host_rs[h] && f->Pl > 1
                    ? coll(b, "emb_output_twrw_reducescatter", ETSIM_SHARD_COLL_RS,
                           ETSIM_SHARD_SCOPE_HOST, f->host_rs[h], 0, src, NONE, NONE)
                    : NONE;
  uint32_t o = f->a2a_out
                   ? coll(b, "emb_output_alltoall", ETSIM_SHARD_COLL_A2A, ETSIM_SHARD_SCOPE_WORLD,
                          f->a2a_out, ETSIM_SHARD_SPLIT_OUTPUT, src, hr, NONE)
                   : NONE;
  uint32_t rs = f->rw_bytes ? coll(b, "emb_output_rw_reducescatter", ETSIM_SHARD_COLL_RS,
                                   ETSIM_SHARD_SCOPE_WORLD, f->rw_bytes, 0, src, hr, NONE)
                            : NONE;
  uint32_t *done = it[k].emb;
  done[0] = o;
  done[1] = rs;
  done[2] = hr;
  if (first_of(rs, o, hr, NONE) == NONE) {
    done[0] = src;
  } else if (qa) {
    done[0] = dequant(b, "emb_output_dequantize",
                      (double)f->in_elems + (double)f->rw_bytes / f->obytes / (double)f->P,
                      f->step.a2a_prec, o, rs, hr, NONE);
    done[1] = done[2] = NONE;
  }
}

/* The dense part and the backward pass of iteration k. */
static void dense(bld_t *b, iter_ids_t *it, uint32_t k) {
  const etsim_shard_flow_t *f = b->f;
  const etsim_shard_model_t *m = f->m;
  size_t r = b->r;
  int qa = etsim_shard_prec_quantized(f->step.a2a_prec);
  double B = (double)f->B;
  b->k = k;
  uint32_t pre = k ? it[k - 1].opt : NONE;
  uint32_t bot = mlp_fwd(b, "bot_mlp", m->bot, m->n_bot, NONE, pre);
  double F = (double)m->n_tables + 1, dd = m->bot[m->n_bot - 1];
  double D = (double)etsim_shard_top_inputs(m);
  double inter_f = m->interaction == ETSIM_DLRM_DCN ? 4 * B * D * m->dcn_rank * m->dcn_layers
                                                    : 2 * B * F * F * dd;
  double inter_b = 4 * B * (m->interaction == ETSIM_DLRM_DCN ? 2 * D : F * dd + D);
  uint32_t itf = comp(b, "interaction_fwd", ETSIM_SHARD_KIND_MLP, inter_f, inter_b, -1, bot,
                      it[k].emb[0], it[k].emb[1], it[k].emb[2]);
  uint32_t topw[ETSIM_SHARD_MAX_LAYERS + 1];
  topw[0] = (uint32_t)D;
  memcpy(topw + 1, m->top, m->n_top * sizeof *topw);
  uint32_t prev = mlp_fwd(b, "top_mlp", topw, m->n_top + 1, itf, NONE);
  /* Backward: top MLP, gradients bucketed as each layer finishes. */
  uint64_t bucket = 0, cap = f->step.bucket_bytes;
  uint32_t last_ar = NONE;
  char name[48];
  int nb = 0;
  for (size_t l = m->n_top; l-- > 0;) {
    double a = topw[l], o = topw[l + 1];
    snprintf(name, sizeof name, "top_mlp_bwd_%zu", l);
    prev = comp(b, name, ETSIM_SHARD_KIND_MLP, 4 * B * a * o, 8 * (B * a + a * o + B * o), -1, prev,
                NONE, NONE, NONE);
    bucket += 4 * (uint64_t)(a * o + o);
    if (bucket >= cap) {
      snprintf(name, sizeof name, "dense_grad_allreduce_%d", nb++);
      last_ar = allreduce(b, name, bucket, prev);
      bucket = 0;
    }
  }
  uint32_t itb = comp(b, "interaction_bwd", ETSIM_SHARD_KIND_MLP, 2 * inter_f, 2 * inter_b, -1,
                      prev, NONE, NONE, NONE);
  if (m->interaction == ETSIM_DLRM_DCN)
    bucket += 4 * (uint64_t)m->dcn_layers * (2 * (uint64_t)D * m->dcn_rank + (uint64_t)D);
  /* Embedding gradients back to their owners. */
  size_t h = r == f->P ? f->H : r / f->Pl;
  uint32_t gsrc = itb;
  double ge = (double)f->in_elems + (double)f->rw_bytes / f->obytes / (double)f->P;
  if (qa && (f->a2a_out || f->rw_bytes || f->any_host))
    gsrc = quant(b, "emb_grad_quantize", ge, f->step.a2a_prec, itb, NONE, NONE, NONE);
  uint32_t ga = f->a2a_out
                    ? coll(b, "emb_grad_alltoall", ETSIM_SHARD_COLL_A2A, ETSIM_SHARD_SCOPE_WORLD,
                           f->a2a_out, ETSIM_SHARD_SPLIT_GRAD, gsrc, NONE, NONE)
                    : NONE;
  uint32_t gr = f->rw_bytes ? coll(b, "emb_grad_rw_allgather", ETSIM_SHARD_COLL_AG,
                                   ETSIM_SHARD_SCOPE_WORLD, f->rw_bytes / f->P, 0, gsrc, NONE, NONE)
                            : NONE;
  uint32_t gh = f->host_rs[h] && f->Pl > 1
                    ? coll(b, "emb_grad_twrw_allgather", ETSIM_SHARD_COLL_AG,
                           ETSIM_SHARD_SCOPE_HOST, f->host_rs[h] / f->Pl, 0, gsrc, NONE, NONE)
                    : NONE;
  uint32_t gd = first_of(gh, gr, ga, gsrc);
  if (qa && gd != gsrc)
    gd = dequant(b, "emb_grad_dequantize", f->out_elems[r] + (double)f->rw_bytes / f->obytes,
                 f->step.a2a_prec, ga, gr, gh, NONE);
  uint32_t prev_upd = k ? it[k - 1].update : NONE;
  uint32_t upd =
      qa ? comp(b, "emb_bwd_update", ETSIM_SHARD_KIND_EMB, 2 * f->look_ops[r], 2 * f->look_bytes[r],
                2 * f->look_ns[r], gd, prev_upd, NONE, NONE)
         : comp(b, "emb_bwd_update", ETSIM_SHARD_KIND_EMB, 2 * f->look_ops[r], 2 * f->look_bytes[r],
                2 * f->look_ns[r], ga != NONE ? ga : itb, gr, gh, prev_upd);
  if (f->any_fetch)
    upd = comp(b, "emb_writeback", ETSIM_SHARD_KIND_FETCH, 0, f->wb_bytes[r], f->wb_ns[r], upd,
               NONE, NONE, NONE);
  it[k].update = upd;
  /* Bottom MLP backward (from the interaction's input gradient). */
  prev = itb;
  for (size_t l = m->n_bot - 1; l-- > 0;) {
    double a = m->bot[l], o = m->bot[l + 1];
    snprintf(name, sizeof name, "bot_mlp_bwd_%zu", l);
    prev = comp(b, name, ETSIM_SHARD_KIND_MLP, 4 * B * a * o, 8 * (B * a + a * o + B * o), -1, prev,
                NONE, NONE, NONE);
    bucket += 4 * (uint64_t)(a * o + o);
    if (bucket >= cap || l == 0) {
      snprintf(name, sizeof name, "dense_grad_allreduce_%d", nb++);
      last_ar = allreduce(b, name, bucket, prev);
      bucket = 0;
    }
  }
  /* Data-parallel tables: their gradients all-reduced in buckets, as DDP
   * does for replicated parameters. */
  uint64_t dpb = 0;
  int nd = 0;
  for (size_t i = 0; i < f->n_dp; i++) {
    dpb += f->dp[i];
    if (dpb >= cap || i + 1 == f->n_dp) {
      snprintf(name, sizeof name, "dp_tables_grad_allreduce_%d", nd++);
      last_ar = allreduce(b, name, dpb, upd);
      dpb = 0;
    }
  }
  double params = (double)etsim_shard_dense_params(m);
  it[k].opt = comp(b, "dense_optimizer", ETSIM_SHARD_KIND_OTHER, 2 * params, 12 * params, -1, prev,
                   last_ar, upd, NONE);
}

int etsim_shard_flow_dag(const etsim_shard_flow_t *f, size_t r, etsim_shard_dag_t *d,
                         etsim_error_t *err) {
  if (r == SIZE_MAX) r = f->P;
  if (r > f->P) return etsim_error_set(err, ETSIM_EINVAL, "shard: rank %zu of %zu", r, f->P);
  d->n = 0;
  uint32_t K = f->step.iterations ? f->step.iterations : 1;
  iter_ids_t it[64];
  memset(it, 0xff, sizeof it);
  bld_t b = {f, d, r, 0, NONE, 0};
  sparse_fwd(&b, it, 0);
  for (uint32_t k = 0; k < K && !b.rc; k++) {
    if (f->step.pipeline && k + 1 < K) sparse_fwd(&b, it, k + 1);
    dense(&b, it, k);
    if (!f->step.pipeline && k + 1 < K) sparse_fwd(&b, it, k + 1);
  }
  if (b.rc) return etsim_error_set(err, b.rc, "out of memory");
  return 0;
}

/* ------------------------------------------------------------ estimate */

/*
 * Run rank r's graph as the simulator's workload layer does: ready nodes
 * issue in ascending index while their resource (one compute, one
 * collective) is free; collectives last their calibrated time.
 */
static int run_dag(const etsim_shard_dag_t *d, const etsim_shard_opts_t *o, size_t P, size_t Pl,
                   etsim_shard_est_t *e, etsim_error_t *err) {
  size_t n = d->n;
  memset(e, 0, sizeof *e);
  if (!n) return 0;
  uint32_t *left = etsim_calloc(n, sizeof *left);
  uint32_t *coff = etsim_calloc(n + 1, sizeof *coff);
  uint32_t *chd = etsim_malloc(n * ETSIM_SHARD_NODE_DEPS * sizeof *chd);
  double *end = etsim_malloc(n * sizeof *end), *dur = etsim_malloc(n * sizeof *dur);
  uint8_t *st = etsim_calloc(n, 1); /* 0 wait, 1 ready, 2 running, 3 done */
  int rc = 0;
  if (!left || !coff || !chd || !end || !dur || !st) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    const etsim_shard_node_t *v = &d->v[i];
    left[i] = v->n_deps;
    for (int j = 0; j < v->n_deps; j++) coff[v->deps[j] + 1]++;
    dur[i] = v->type == ETSIM_SHARD_NODE_COLL
                 ? etsim_shard__coll_ns(o, P, Pl, v->coll, v->scope, (double)v->bytes)
                 : (double)v->dur_ns;
    if (!v->n_deps) st[i] = 1;
  }
  for (size_t i = 0; i < n; i++) coff[i + 1] += coff[i];
  {
    uint32_t *pos = etsim_malloc((n + 1) * sizeof *pos);
    if (!pos) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    memcpy(pos, coff, (n + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++)
      for (int j = 0; j < d->v[i].n_deps; j++) chd[pos[d->v[i].deps[j]]++] = (uint32_t)i;
    etsim_free(pos);
  }
  double t = 0;
  size_t done_n = 0, comp_run = SIZE_MAX, comm_run = SIZE_MAX;
  while (done_n < n) {
    for (size_t i = 0; i < n; i++) { /* issue pass in index order */
      if (st[i] != 1) continue;
      int is_comm = d->v[i].type == ETSIM_SHARD_NODE_COLL;
      size_t *slot = is_comm ? &comm_run : &comp_run;
      if (*slot != SIZE_MAX) continue;
      *slot = i;
      st[i] = 2;
      end[i] = t + dur[i];
    }
    double next = INFINITY;
    if (comp_run != SIZE_MAX) next = end[comp_run];
    if (comm_run != SIZE_MAX && end[comm_run] < next) next = end[comm_run];
    if (!isfinite(next)) {
      rc = etsim_error_set(err, ETSIM_EINTERNAL, "shard: the iteration graph is stuck");
      goto done;
    }
    double dt = next - t;
    if (comm_run != SIZE_MAX) {
      int c = d->v[comm_run].coll;
      e->coll_ns[c] += dt;
      if (comp_run == SIZE_MAX) e->coll_exp_ns[c] += dt;
    }
    if (comp_run != SIZE_MAX) {
      e->comp_ns += dt;
      switch (d->v[comp_run].kind) {
        case ETSIM_SHARD_KIND_EMB:
          e->emb_ns += dt;
          break;
        case ETSIM_SHARD_KIND_FETCH:
          e->fetch_ns += dt;
          break;
        case ETSIM_SHARD_KIND_QUANT:
          e->quant_ns += dt;
          break;
        default:
          e->mlp_ns += dt;
      }
    }
    t = next;
    size_t fin[2] = {comp_run, comm_run};
    for (int s = 0; s < 2; s++) {
      size_t i = fin[s];
      if (i == SIZE_MAX || end[i] > t) continue;
      st[i] = 3;
      done_n++;
      if (s) comm_run = SIZE_MAX;
      else comp_run = SIZE_MAX;
      for (uint32_t c = coff[i]; c < coff[i + 1]; c++)
        if (--left[chd[c]] == 0) st[chd[c]] = 1;
    }
  }
  e->total_ns = t;
done:
  etsim_free(left);
  etsim_free(coff);
  etsim_free(chd);
  etsim_free(end);
  etsim_free(dur);
  etsim_free(st);
  return rc;
}

int etsim_shard_estimate(const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                         const etsim_shard_opts_t *o, etsim_shard_est_t *out, etsim_error_t *err) {
  etsim_shard_flow_t *f;
  int rc = etsim_shard_flow_make(m, p, &f, err);
  if (rc) return rc;
  etsim_shard_dag_t d = {0};
  rc = etsim_shard_flow_dag(f, SIZE_MAX, &d, err);
  if (!rc) rc = run_dag(&d, o, p->n_ranks, p->ranks_per_host, out, err);
  if (!rc) out->iter_ns = out->total_ns / (p->step.iterations ? p->step.iterations : 1);
  etsim_shard_dag_free(&d);
  etsim_shard_flow_free(f);
  return rc;
}
