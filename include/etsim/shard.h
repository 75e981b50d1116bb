/*
 * etsim/shard.h — DLRM models and the embedding-table sharding planner.
 *
 * A model is its embedding tables (rows, dimension, pooling factor,
 * element bytes) and its dense part (bottom MLP, interaction, top MLP).
 * The planner splits tables table-wise (TW), row-wise (RW), column-wise
 * (CW), data-parallel (DP) or hierarchically (TWRW, TWCW: one host's ranks
 * row- or column-wise) with TorchRec's shard sizes, rates every shard with
 * TorchRec's cost model (docs/shard.md), places shards largest first on
 * the least-loaded rank that still has memory, and searches per-table type
 * choices for the plan whose slowest rank is fastest.
 */
#ifndef ETSIM_SHARD_H
#define ETSIM_SHARD_H

#include "etsim/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- models */

typedef struct etsim_shard_table {
  char name[32];
  uint64_t rows;
  uint32_t dim;
  double pooling;      /* lookups per sample (multi-hot size) */
  uint32_t elem_bytes; /* bytes per weight (4: fp32) */
} etsim_shard_table_t;

enum { ETSIM_DLRM_DOT = 0, ETSIM_DLRM_DCN = 1 };

typedef struct etsim_shard_model {
  char name[48];
  size_t n_tables;
  etsim_shard_table_t *tables; /* owned */
  uint32_t bot[8];             /* bottom MLP widths, bot[0] = dense features */
  size_t n_bot;
  uint32_t top[8]; /* top MLP widths after the interaction output */
  size_t n_top;
  int interaction; /* ETSIM_DLRM_* */
  uint32_t dcn_layers, dcn_rank;
  uint32_t batch; /* default per-rank batch */
} etsim_shard_model_t;

/* mlperf-dlrm, mlperf-dlrm-dcnv2, criteo-kaggle, synthetic-large (seeded).
 * 0 or ENOTFOUND (err lists the names). */
int etsim_shard_model_preset(const char *name, etsim_shard_model_t *out, etsim_error_t *err);
/* A model from JSON: {"name": .., "tables": [{"name", "rows", "dim",
 * "pooling", "elem_bytes"}], "bottom_mlp": [..], "top_mlp": [..],
 * "interaction": "dot"|"dcn", "dcn_layers", "dcn_rank", "batch"}.
 * Errors name the file and the key or table. */
int etsim_shard_model_load(const char *path, etsim_shard_model_t *out, etsim_error_t *err);
void etsim_shard_model_free(etsim_shard_model_t *m);
/* Check a model (positive rows/dims, sane MLPs): 0 or EINVAL. */
int etsim_shard_model_check(const etsim_shard_model_t *m, etsim_error_t *err);

/* Forward FLOPs of one sample: bottom MLP, interaction, top MLP. */
uint64_t etsim_shard_fwd_flops(const etsim_shard_model_t *m);
/* Inputs of the top MLP (interaction output + bottom MLP output). */
uint64_t etsim_shard_top_inputs(const etsim_shard_model_t *m);

/* ----------------------------------------------------------- planning */

enum {
  ETSIM_SHARD_TW = 0,
  ETSIM_SHARD_RW = 1,
  ETSIM_SHARD_CW = 2,
  ETSIM_SHARD_DP = 3,
  ETSIM_SHARD_TWRW = 4,
  ETSIM_SHARD_TWCW = 5,
  ETSIM_SHARD_N_TYPES = 6
};
const char *etsim_shard_type_name(int type); /* "tw", ... */
int etsim_shard_type_parse(const char *s);   /* -1 when unknown */

/* Constants of the cost model (TorchRec's defaults from
 * etsim_shard_defaults). Bandwidths in GB/s. */
typedef struct etsim_shard_costs {
  double hbm_gbps;        /* embedding kernels (897) */
  double intra_host_gbps; /* per rank, inside a host (600) */
  double inter_host_gbps; /* per rank, across hosts (12.5) */
  uint32_t index_bytes;   /* 8 */
  uint32_t output_bytes;  /* pooled embeddings on the wire (4: fp32) */
  double bwd_factor;      /* backward compute = factor x forward (2) */
  double optimizer_mult;  /* optimizer state per weight (0: SGD) */
  uint32_t cw_block;      /* requested column-wise block (128) */
} etsim_shard_costs_t;

enum { ETSIM_SHARD_OBJ_TIME = 0, ETSIM_SHARD_OBJ_MEMORY = 1 };

typedef struct etsim_shard_opts {
  size_t ranks, ranks_per_host;
  double hbm_gb;  /* per rank (0: 32) */
  uint32_t batch; /* per rank (0: the model's) */
  unsigned types; /* bit (1 << ETSIM_SHARD_*) per allowed type (0: all) */
  int objective;  /* ETSIM_SHARD_OBJ_* */
  etsim_shard_costs_t costs;
} etsim_shard_opts_t;

void etsim_shard_defaults(etsim_shard_opts_t *o);

typedef struct etsim_shard {
  uint32_t table, rank;
  uint64_t row_off, rows;
  uint32_t col_off, cols;
  double fwd_ms, bwd_ms, fwd_comm_ms, bwd_comm_ms;
  uint64_t hbm_bytes;
} etsim_shard_t;

typedef struct etsim_shard_plan {
  size_t n_ranks, ranks_per_host;
  uint32_t batch;
  int *table_type; /* per table */
  size_t n_tables;
  etsim_shard_t *shards; /* grouped by table, in table order */
  size_t n_shards;
  size_t *table_first;  /* shards of table t: [first[t], first[t+1]) */
  double *rank_ms;      /* per rank: sum of shard costs */
  uint64_t *rank_bytes; /* per rank: HBM used */
  double max_ms;        /* the slowest rank */
  uint64_t max_bytes;
} etsim_shard_plan_t;

/*
 * Plan `m` on o->ranks ranks.  Fails with EINVAL (bad options, no allowed
 * type) or ERANGE when a table cannot be placed in memory under any allowed
 * type, naming the table and its size.  *out owned (etsim_shard_plan_free).
 */
int etsim_shard_plan(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                     etsim_shard_plan_t *out, etsim_error_t *err);
/* Place and rate a fixed per-table choice (types[t]); same errors. */
int etsim_shard_place(const etsim_shard_model_t *m, const etsim_shard_opts_t *o, const int *types,
                      etsim_shard_plan_t *out, etsim_error_t *err);
void etsim_shard_plan_free(etsim_shard_plan_t *p);

/* Read a plan written by etsim_shard_plan_write for model m: table count,
 * types and shards must agree with m and name ranks below the plan's
 * "ranks".  Costs are recomputed with o's constants (o->ranks and
 * o->ranks_per_host are taken from the file). */
int etsim_shard_plan_read(const char *path, const etsim_shard_model_t *m, etsim_shard_opts_t *o,
                          etsim_shard_plan_t *out, etsim_error_t *err);

/* Write the plan as JSON (atomically); "-" is stdout. */
int etsim_shard_plan_write(const etsim_shard_plan_t *p, const etsim_shard_model_t *m,
                           const char *path, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_SHARD_H */
