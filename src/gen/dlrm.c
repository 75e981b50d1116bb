/*
 * dlrm.c — DLRM training traces from an embedding sharding plan.
 *
 * Per rank, forward: the input all-to-all of indices (8 bytes per lookup,
 * sent to every shard that holds the ids' rows: all of a TW/CW table, the
 * row fraction of an RW/TWRW shard), the embedding lookups, the output
 * exchange (all-to-all of pooled vectors for TW/CW/TWCW and, folded in,
 * TWRW's cross-host part; reduce-scatter over all ranks for RW, over the
 * host for TWRW), the bottom MLP (which depends only on the dense input,
 * so it overlaps all of that), the interaction and the top MLP.  Backward
 * mirrors it at twice the FLOPs: top MLP, interaction, the embedding
 * gradient exchange (all-to-all with the splits swapped, all-gather for RW
 * and TWRW), the embedding update, the bottom MLP; dense gradients are
 * all-reduced in buckets as they fill (DDP), data-parallel tables are
 * all-reduced whole.  Uneven all-to-alls carry their per-peer byte counts
 * in int64 lists `in_split` (sent to peer p) and `out_split` (received
 * from peer p); comm_size is the bytes this rank sends.
 */
#include "gen_int.h"

#include "etsim/shard.h"

#include <math.h>
#include <stdlib.h>

#define NONE_ID UINT64_MAX

typedef struct {
  const etsim_gen_dlrm_opts_t *o;
  const etsim_shard_model_t *m;
  const etsim_shard_plan_t *p;
  size_t P, Pl;
  uint64_t B, obytes;
  double flops_per_ns, bytes_per_ns;
  etsim_gen_buf_t *buf;
  etsim_gen_nb_t *b;
  uint64_t next_id, cur;
  etsim_error_t *err;
  int rc;
  int64_t *in1, *out1, *in2, *out2; /* splits per peer */
  int measure;                      /* pass 1: only the maxima below */
  int64_t max_sent1, max_sent2, max_recv2;
  char pg_host[24];
} dctx_t;

static uint64_t emit(dctx_t *c) {
  if (c->rc) return NONE_ID;
  if ((c->rc = etsim_gen_enc_node(c->buf, &c->b->n, c->err))) return NONE_ID;
  return c->next_id++;
}

static void dep(dctx_t *c, uint64_t a) {
  if (a == NONE_ID) return;
  for (size_t i = 0; i < c->b->n.n_data_deps; i++)
    if (c->b->deps[i] == a) return;
  etsim_gen_nb_dep(c->b, a);
}

static uint64_t comp(dctx_t *c, const char *name, uint64_t flops, uint64_t bytes, uint64_t d0,
                     uint64_t d1) {
  etsim_gen_nb_start(c->b, c->next_id, ETSIM_ET_COMP_NODE, name);
  etsim_gen_nb_bool(c->b, "is_cpu_op", 0);
  etsim_gen_nb_i64(c->b, "num_ops", (int64_t)flops);
  etsim_gen_nb_u64(c->b, "tensor_size", bytes);
  double ns = fmax((double)flops / c->flops_per_ns, (double)bytes / c->bytes_per_ns);
  etsim_gen_nb_time_ns(c->b, (uint64_t)llround(ns));
  dep(c, d0);
  dep(c, d1);
  return emit(c);
}

static uint64_t coll(dctx_t *c, const char *name, int type, uint64_t size, const char *pg,
                     const int64_t *in, const int64_t *out, uint64_t d0, uint64_t d1) {
  etsim_gen_nb_start(c->b, c->next_id, ETSIM_ET_COMM_COLL_NODE, name);
  etsim_gen_nb_bool(c->b, "is_cpu_op", 0);
  etsim_gen_nb_i64(c->b, "comm_type", type);
  etsim_gen_nb_i64(c->b, "comm_size", (int64_t)size);
  if (pg) etsim_gen_nb_str(c->b, "pg_name", pg);
  if (in) {
    etsim_attr_t *a = etsim_gen_nb_attr(c->b, "in_split", ETSIM_ATTR_INT64_LIST);
    a->v.list.n = c->P;
    a->v.list.v = in;
    a = etsim_gen_nb_attr(c->b, "out_split", ETSIM_ATTR_INT64_LIST);
    a->v.list.n = c->P;
    a->v.list.v = out;
  }
  dep(c, d0);
  dep(c, d1);
  return emit(c);
}

static int is_a2a(int ty) {
  return ty == ETSIM_SHARD_TW || ty == ETSIM_SHARD_CW || ty == ETSIM_SHARD_TWCW;
}

/* Index bytes rank-to-owner for shard s (the fraction of a table's ids it
 * holds, 8 bytes each). */
static int64_t idx_bytes(const dctx_t *c, const etsim_shard_t *s, int ty) {
  const etsim_shard_table_t *x = &c->m->tables[s->table];
  double lookups = (double)c->B * x->pooling;
  if (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_TWRW) lookups *= (double)s->rows / (double)x->rows;
  return (int64_t)llround(lookups) * 8;
}

/* Forward GEMMs of an MLP with widths w[0..n): B x w[i] by w[i] x w[i+1]. */
static uint64_t mlp_fwd(dctx_t *c, const char *tag, const uint32_t *w, size_t n, uint64_t start) {
  char name[64];
  uint64_t prev = start;
  for (size_t i = 0; i + 1 < n; i++) {
    uint64_t a = w[i], o = w[i + 1];
    snprintf(name, sizeof name, "%s_fwd_%zu", tag, i);
    prev = comp(c, name, 2 * c->B * a * o, 4 * (c->B * a + a * o + c->B * o), prev, NONE_ID);
  }
  return prev;
}

static int build(dctx_t *c, size_t r, uint64_t *nodes) {
  const etsim_shard_model_t *m = c->m;
  const etsim_shard_plan_t *p = c->p;
  size_t P = c->P, host = r / c->Pl;
  c->next_id = 0;
  c->rc = 0;
  c->buf->n = 0;
  etsim_et_meta_t meta = {"1.0.0", 0, NULL};
  if ((c->rc = etsim_gen_enc_meta(c->buf, &meta, c->err))) return c->rc;
  snprintf(c->pg_host, sizeof c->pg_host, "%zu", host + 1);
  const char *pgh = P / c->Pl > 1 ? c->pg_host : NULL;
  /* Splits. */
  memset(c->in1, 0, P * sizeof *c->in1);
  memset(c->out1, 0, P * sizeof *c->out1);
  memset(c->in2, 0, P * sizeof *c->in2);
  memset(c->out2, 0, P * sizeof *c->out2);
  uint64_t lookups = 0, lookup_bytes = 0, rw_bytes = 0, twrw_bytes = 0, dp_tables = 0;
  for (size_t t = 0; t < m->n_tables; t++) {
    int ty = p->table_type[t];
    const etsim_shard_table_t *x = &m->tables[t];
    for (size_t i = p->table_first[t]; i < p->table_first[t + 1]; i++) {
      const etsim_shard_t *s = &p->shards[i];
      if (ty == ETSIM_SHARD_DP) {
        if (s->rank == r) {
          uint64_t l = (uint64_t)llround((double)c->B * x->pooling);
          lookups += l * s->cols;
          lookup_bytes += l * s->cols * x->elem_bytes;
        }
        continue;
      }
      int64_t ib = idx_bytes(c, s, ty);
      c->in1[s->rank] += ib; /* r sends its ids to the owner */
      if (s->rank == r) {
        for (size_t q = 0; q < P; q++) c->out1[q] += ib; /* every rank sends r the same share */
        uint64_t l = (uint64_t)(ib / 8) * P;
        lookups += l * s->cols;
        lookup_bytes += l * s->cols * x->elem_bytes;
      }
      int64_t pooled = (int64_t)(c->B * s->cols * c->obytes);
      if (is_a2a(ty)) {
        if (s->rank == r)
          for (size_t q = 0; q < P; q++) c->in2[q] += pooled;
        c->out2[s->rank] += pooled;
      } else if (ty == ETSIM_SHARD_TWRW) {
        /* After the host reduce-scatter each host rank sends 1/Pl of the
         * pooled vectors of every peer's batch. */
        int64_t part = pooled / (int64_t)c->Pl;
        if (s->rank == r)
          for (size_t q = 0; q < P; q++) c->in2[q] += part;
        c->out2[s->rank] += part;
        if (s->rank == r) twrw_bytes += P * c->B * s->cols * c->obytes;
      } else if (ty == ETSIM_SHARD_RW && s->rank == r) {
        rw_bytes += P * c->B * s->cols * c->obytes;
      }
    }
    if (ty == ETSIM_SHARD_DP) dp_tables++;
  }
  int64_t sent1 = 0, sent2 = 0, recv2 = 0;
  for (size_t q = 0; q < P; q++) {
    sent1 += c->in1[q];
    sent2 += c->in2[q];
    recv2 += c->out2[q];
  }
  /* ASTRA-sim runs an all-to-all with one comm_size on every rank (and the
   * validator checks they agree): use the largest rank's bytes, so the
   * collective lasts as long as its slowest member; the exact bytes per
   * peer are in in_split / out_split. */
  if (c->measure) {
    c->max_sent1 = sent1 > c->max_sent1 ? sent1 : c->max_sent1;
    c->max_sent2 = sent2 > c->max_sent2 ? sent2 : c->max_sent2;
    c->max_recv2 = recv2 > c->max_recv2 ? recv2 : c->max_recv2;
    return 0;
  }
  /* Forward. */
  uint64_t a1 = c->max_sent1 ? coll(c, "input_dist_alltoall", ETSIM_COLL_ALL_TO_ALL,
                                    (uint64_t)c->max_sent1, NULL, c->in1, c->out1, NONE_ID, NONE_ID)
                             : NONE_ID;
  uint64_t look = comp(c, "emb_lookup", lookups, lookup_bytes, a1, NONE_ID);
  uint64_t o1 = c->max_sent2 ? coll(c, "emb_output_alltoall", ETSIM_COLL_ALL_TO_ALL,
                                    (uint64_t)c->max_sent2, NULL, c->in2, c->out2, look, NONE_ID)
                             : NONE_ID;
  uint64_t o2 = rw_bytes ? coll(c, "emb_output_rw_reducescatter", ETSIM_COLL_REDUCE_SCATTER,
                                rw_bytes, NULL, NULL, NULL, look, o1)
                         : NONE_ID;
  uint64_t o3 = twrw_bytes ? coll(c, "emb_output_twrw_reducescatter", ETSIM_COLL_REDUCE_SCATTER,
                                  twrw_bytes, pgh, NULL, NULL, look, o2 != NONE_ID ? o2 : o1)
                           : NONE_ID;
  uint64_t emb_done = o3 != NONE_ID ? o3 : o2 != NONE_ID ? o2 : o1 != NONE_ID ? o1 : look;
  uint64_t bot = mlp_fwd(c, "bot_mlp", m->bot, m->n_bot, NONE_ID);
  uint64_t F = m->n_tables + 1, d = m->bot[m->n_bot - 1];
  uint64_t D = etsim_shard_top_inputs(m);
  uint64_t inter_f = m->interaction == ETSIM_DLRM_DCN ? 4 * c->B * D * m->dcn_rank * m->dcn_layers
                                                      : 2 * c->B * F * F * d;
  uint64_t inter_b = 4 * c->B * (m->interaction == ETSIM_DLRM_DCN ? 2 * D : F * d + D);
  uint64_t it = comp(c, "interaction_fwd", inter_f, inter_b, bot, emb_done);
  uint32_t topw[10];
  topw[0] = (uint32_t)D;
  memcpy(topw + 1, m->top, m->n_top * sizeof *topw);
  uint64_t top = mlp_fwd(c, "top_mlp", topw, m->n_top + 1, it);
  /* Backward. */
  uint64_t topb;
  uint64_t bucket = 0, bucket_cap = c->o->bucket_bytes ? c->o->bucket_bytes : 25u << 20;
  uint64_t last_ar = NONE_ID;
  char name[64];
  int nb = 0;
  /* Top MLP backward, gradients bucketed as each layer finishes. */
  uint64_t prev = top;
  for (size_t k = m->n_top; k-- > 0;) {
    uint64_t a = topw[k], o = topw[k + 1];
    snprintf(name, sizeof name, "top_mlp_bwd_%zu", k);
    prev = comp(c, name, 4 * c->B * a * o, 8 * (c->B * a + a * o + c->B * o), prev, NONE_ID);
    bucket += 4 * (a * o + o);
    if (bucket >= bucket_cap) {
      snprintf(name, sizeof name, "dense_grad_allreduce_%d", nb++);
      last_ar = coll(c, name, ETSIM_COLL_ALL_REDUCE, bucket, NULL, NULL, NULL, prev, last_ar);
      bucket = 0;
    }
  }
  topb = prev;
  uint64_t itb = comp(c, "interaction_bwd", 2 * inter_f, 2 * inter_b, topb, NONE_ID);
  if (m->interaction == ETSIM_DLRM_DCN) bucket += 4 * m->dcn_layers * 2 * D * m->dcn_rank;
  /* Embedding gradients back to their owners. */
  uint64_t g = itb;
  if (twrw_bytes)
    g = coll(c, "emb_grad_twrw_allgather", ETSIM_COLL_ALL_GATHER, twrw_bytes / c->Pl, pgh, NULL,
             NULL, g, NONE_ID);
  if (rw_bytes)
    g = coll(c, "emb_grad_rw_allgather", ETSIM_COLL_ALL_GATHER, rw_bytes / P, NULL, NULL, NULL, g,
             NONE_ID);
  /* The reverse of the output exchange: each rank sends back the
   * gradients of what it received. */
  if (c->max_recv2)
    g = coll(c, "emb_grad_alltoall", ETSIM_COLL_ALL_TO_ALL, (uint64_t)c->max_recv2, NULL, c->out2,
             c->in2, g, NONE_ID);
  uint64_t upd = comp(c, "emb_bwd_update", 2 * lookups, 2 * lookup_bytes, g, NONE_ID);
  /* Bottom MLP backward (from the interaction's input gradient). */
  prev = itb;
  for (size_t k = m->n_bot - 1; k-- > 0;) {
    uint64_t a = m->bot[k], o = m->bot[k + 1];
    snprintf(name, sizeof name, "bot_mlp_bwd_%zu", k);
    prev = comp(c, name, 4 * c->B * a * o, 8 * (c->B * a + a * o + c->B * o), prev, NONE_ID);
    bucket += 4 * (a * o + o);
    if (bucket >= bucket_cap || k == 0) {
      snprintf(name, sizeof name, "dense_grad_allreduce_%d", nb++);
      last_ar = coll(c, name, ETSIM_COLL_ALL_REDUCE, bucket, NULL, NULL, NULL, prev, last_ar);
      bucket = 0;
    }
  }
  /* Data-parallel tables: whole-table gradient all-reduce. */
  for (size_t t = 0; t < m->n_tables; t++)
    if (p->table_type[t] == ETSIM_SHARD_DP) {
      const etsim_shard_table_t *x = &m->tables[t];
      snprintf(name, sizeof name, "dp_table_%zu_grad_allreduce", t);
      last_ar = coll(c, name, ETSIM_COLL_ALL_REDUCE, x->rows * x->dim * (uint64_t)x->elem_bytes,
                     NULL, NULL, NULL, upd, last_ar);
    }
  uint64_t params = 0;
  for (size_t k = 0; k + 1 < m->n_bot; k++)
    params += (uint64_t)m->bot[k] * m->bot[k + 1] + m->bot[k + 1];
  for (size_t k = 0; k < m->n_top; k++) params += (uint64_t)topw[k] * topw[k + 1] + topw[k + 1];
  comp(c, "dense_optimizer", 2 * params, 12 * params, prev, last_ar);
  (void)dp_tables;
  *nodes = c->next_id;
  return c->rc;
}

int etsim_gen_dlrm(const etsim_gen_dlrm_opts_t *o, etsim_gen_report_t *rep, etsim_error_t *err) {
  const etsim_shard_plan_t *p = o->plan;
  const etsim_shard_model_t *m = o->model;
  if (!p || !m || !o->prefix || p->n_tables != m->n_tables)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen dlrm: need a model, a plan for its %zu tables "
                           "and an output prefix",
                           m ? m->n_tables : 0);
  for (size_t i = 0; i < p->n_shards; i++)
    if (p->shards[i].rank >= p->n_ranks)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "gen dlrm: the plan puts a shard of table %u on "
                             "rank %u, but has %zu ranks",
                             p->shards[i].table, p->shards[i].rank, p->n_ranks);
  dctx_t c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.m = m;
  c.p = p;
  c.P = p->n_ranks;
  c.Pl = p->ranks_per_host ? p->ranks_per_host : p->n_ranks;
  c.B = p->batch;
  c.obytes = 4;
  c.flops_per_ns = (o->peak_tflops > 0 ? o->peak_tflops : 989.0) * 1e3;
  c.bytes_per_ns = o->mem_gbps > 0 ? o->mem_gbps : 3350.0;
  c.err = err;
  etsim_gen_buf_t buf = {0};
  c.buf = &buf;
  c.b = etsim_malloc(sizeof *c.b);
  c.in1 = etsim_calloc(4 * c.P, sizeof *c.in1);
  int rc = 0;
  etsim_gen_set_t *set = NULL;
  char *gpath = NULL;
  if (!c.b || !c.in1) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  c.out1 = c.in1 + c.P;
  c.in2 = c.out1 + c.P;
  c.out2 = c.in2 + c.P;
  if ((rc = etsim_gen_set_open(&set, o->prefix, c.P, o->format, err))) goto done;
  uint64_t all = 0, written = 0;
  c.measure = 1;
  for (size_t r = 0; r < c.P; r++) {
    uint64_t nodes;
    if ((rc = build(&c, r, &nodes))) goto done;
  }
  c.measure = 0;
  for (size_t r = 0; r < c.P; r++) {
    uint64_t nodes;
    size_t before = etsim_gen_set_n_files(set);
    if ((rc = build(&c, r, &nodes)) || (rc = etsim_gen_set_rank(set, r, buf.p, buf.n, err)))
      goto done;
    all += nodes;
    if (etsim_gen_set_n_files(set) != before) written += nodes;
  }
  const char *gp = o->comm_group_path;
  if (!gp) {
    size_t l = strlen(o->prefix) + 32;
    if (!(gpath = etsim_malloc(l))) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    snprintf(gpath, l, "%s.comm_group.json", o->prefix);
    gp = gpath;
  }
  {
    size_t hosts = c.P / c.Pl;
    size_t *off = etsim_malloc((hosts + 1) * sizeof *off);
    uint32_t *ranks = etsim_malloc(c.P * sizeof *ranks);
    if (!off || !ranks) {
      etsim_free(off);
      etsim_free(ranks);
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    for (size_t h = 0; h <= hosts; h++) off[h] = h * c.Pl;
    for (size_t r = 0; r < c.P; r++) ranks[r] = (uint32_t)r;
    rc = etsim_gen_write_comm_groups(gp, hosts > 1 ? hosts : 0, 1, off, ranks, err);
    etsim_free(off);
    etsim_free(ranks);
    if (rc) goto done;
  }
  etsim_gen_report_t rr = {c.P, etsim_gen_set_n_files(set), written, etsim_gen_set_bytes(set), all};
  rc = etsim_gen_set_commit(set, err);
  set = NULL;
  if (rc) remove(gp);
  else if (rep) *rep = rr;
done:
  etsim_gen_set_abort(set);
  etsim_gen_buf_free(&buf);
  etsim_free(c.b);
  etsim_free(c.in1);
  etsim_free(gpath);
  return rc;
}
