/*
 * dlrm.c — DLRM training traces from an embedding sharding plan.
 *
 * The iteration's graph is the shard module's (etsim_shard_flow_dag, so the
 * planner's estimate and the trace can never drift apart); this file only
 * writes it as Chakra nodes per rank: COMP nodes with num_ops,
 * tensor_size and their roofline time, COMM_COLL nodes with comm_type,
 * comm_size, pg_name (the host group for host-wise collectives) and, for
 * the all-to-alls on up to 1,024 ranks, the bytes sent to and received
 * from each peer in int64 lists in_split / out_split.  Larger sets leave
 * the lists out: they grow with the square of the ranks, and comm_size
 * (the slowest member's bytes) is what simulators run.
 */
#include "gen_int.h"

#include "etsim/shard.h"

#include <math.h>
#include <stdlib.h>

#define MAX_SPLIT_RANKS 1024

static const int coll_type[ETSIM_SHARD_N_COLLS] = {ETSIM_COLL_ALL_TO_ALL, ETSIM_COLL_REDUCE_SCATTER,
                                                   ETSIM_COLL_ALL_GATHER, ETSIM_COLL_ALL_REDUCE};

/* Rank r's trace into buf. */
static int encode(const etsim_shard_flow_t *f, const etsim_shard_dag_t *d, size_t r, size_t P,
                  size_t Pl, etsim_et_buf_t *buf, etsim_et_nb_t *b, int64_t *sp,
                  etsim_error_t *err) {
  buf->n = 0;
  etsim_et_meta_t meta = {"1.0.0", 0, NULL};
  int rc = etsim_et_enc_meta(buf, &meta, err);
  char pg[24];
  snprintf(pg, sizeof pg, "%u", etsim_shard_host_group(r, Pl));
  for (size_t i = 0; i < d->n && !rc; i++) {
    const etsim_shard_node_t *v = &d->v[i];
    if (v->type == ETSIM_SHARD_NODE_COMP) {
      etsim_et_nb_start(b, i, ETSIM_ET_COMP_NODE, v->name);
      etsim_et_nb_bool(b, "is_cpu_op", 0);
      etsim_et_nb_i64(b, "num_ops", (int64_t)v->flops);
      etsim_et_nb_u64(b, "tensor_size", v->bytes);
      etsim_et_nb_time_ns(b, v->dur_ns);
    } else {
      etsim_et_nb_start(b, i, ETSIM_ET_COMM_COLL_NODE, v->name);
      etsim_et_nb_bool(b, "is_cpu_op", 0);
      etsim_et_nb_i64(b, "comm_type", coll_type[v->coll]);
      etsim_et_nb_i64(b, "comm_size", (int64_t)v->bytes);
      if (v->scope == ETSIM_SHARD_SCOPE_HOST) etsim_et_nb_str(b, "pg_name", pg);
      if (v->split != ETSIM_SHARD_SPLIT_NONE && P <= MAX_SPLIT_RANKS) {
        int64_t *in = sp + (size_t)(v->split - 1) * 2 * P, *out = in + P;
        etsim_shard_flow_splits(f, r, v->split, in, out);
        etsim_attr_t *a = etsim_et_nb_attr(b, "in_split", ETSIM_ATTR_INT64_LIST);
        a->v.list.n = P;
        a->v.list.v = in;
        a = etsim_et_nb_attr(b, "out_split", ETSIM_ATTR_INT64_LIST);
        a->v.list.n = P;
        a->v.list.v = out;
      }
    }
    for (int k = 0; k < v->n_deps; k++) etsim_et_nb_dep(b, v->deps[k]);
    rc = etsim_et_enc_node(buf, &b->n, err);
  }
  return rc;
}

int etsim_gen_dlrm(const etsim_gen_dlrm_opts_t *o, etsim_et_set_report_t *rep, etsim_error_t *err) {
  const etsim_shard_model_t *m = o->model;
  if (!o->plan || !m || !o->prefix || o->plan->n_tables != m->n_tables)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen dlrm: need a model, a plan for its %zu tables and an output "
                           "prefix",
                           m ? m->n_tables : 0);
  etsim_shard_plan_t plan = *o->plan; /* shallow: the step may be overridden */
  if (o->peak_tflops > 0) plan.step.peak_tflops = o->peak_tflops;
  if (o->mem_gbps > 0) plan.step.mem_gbps = o->mem_gbps;
  if (o->bucket_bytes) plan.step.bucket_bytes = o->bucket_bytes;
  size_t P = plan.n_ranks, Pl = plan.ranks_per_host ? plan.ranks_per_host : P;
  for (size_t i = 0; i < plan.n_shards; i++)
    if (plan.shards[i].rank >= P)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "gen dlrm: the plan puts a shard of table %u on rank %u, but has %zu "
                             "ranks",
                             plan.shards[i].table, plan.shards[i].rank, P);
  etsim_shard_flow_t *f = NULL;
  int rc = etsim_shard_flow_make(m, &plan, &f, err);
  if (rc) return rc;
  etsim_et_buf_t buf = {0};
  etsim_shard_dag_t d = {0};
  etsim_et_nb_t *b = etsim_malloc(sizeof *b);
  int64_t *sp = P <= MAX_SPLIT_RANKS ? etsim_malloc(6 * P * sizeof *sp) : NULL;
  etsim_et_set_writer_t *set = NULL;
  char *gpath = NULL;
  size_t *off = NULL;
  uint32_t *ranks = NULL;
  if (!b || (P <= MAX_SPLIT_RANKS && !sp)) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  if ((rc = etsim_et_set_writer_open(&set, o->prefix, P, o->format, err))) goto done;
  uint64_t all = 0, written = 0;
  for (size_t r = 0; r < P; r++) {
    size_t before = etsim_et_set_writer_n_files(set);
    if ((rc = etsim_shard_flow_dag(f, r, &d, err)) ||
        (rc = encode(f, &d, r, P, Pl, &buf, b, sp, err)) ||
        (rc = etsim_et_set_writer_rank(set, r, buf.p, buf.n, err)))
      goto done;
    all += d.n;
    if (etsim_et_set_writer_n_files(set) != before) written += d.n;
  }
  const char *gp = o->comm_group_path;
  if (!gp) {
    if ((rc = etsim_et_comm_groups_path(o->prefix, 0, &gpath, err))) goto done;
    gp = gpath;
  }
  size_t hosts = P / Pl;
  off = etsim_malloc((hosts + 1) * sizeof *off);
  ranks = etsim_malloc(P * sizeof *ranks);
  if (!off || !ranks) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t h = 0; h <= hosts; h++) off[h] = h * Pl;
  for (size_t r = 0; r < P; r++) ranks[r] = (uint32_t)r;
  if ((rc = etsim_et_comm_groups_write(gp, hosts > 1 && Pl > 1 ? hosts : 0, 1, off, ranks, err)))
    goto done;
  etsim_et_set_report_t rr = {P, etsim_et_set_writer_n_files(set), written,
                              etsim_et_set_writer_bytes(set), all};
  rc = etsim_et_set_writer_commit(set, err);
  set = NULL;
  if (rc) remove(gp);
  else if (rep) *rep = rr;
done:
  etsim_et_set_writer_abort(set);
  etsim_et_buf_free(&buf);
  etsim_shard_dag_free(&d);
  etsim_shard_flow_free(f);
  etsim_free(b);
  etsim_free(sp);
  etsim_free(gpath);
  etsim_free(off);
  etsim_free(ranks);
  return rc;
}
