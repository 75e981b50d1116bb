/*
 * etsim/shard.h — DLRM models, the embedding-table sharding planner, and the
 * training-iteration model that the planner and `gen dlrm` share.
 *
 * A model is its embedding tables (rows, dimension, pooling factor,
 * element bytes) and its dense part (bottom MLP, interaction, top MLP).
 * The planner splits tables table-wise (TW), row-wise (RW), column-wise
 * (CW), data-parallel (DP) or hierarchically (TWRW, TWCW: one host's ranks
 * row- or column-wise) with TorchRec's shard sizes, places shards largest
 * first on the least-loaded rank with memory left, decides which rows live
 * in HBM, DDR or SSD when those levels are given, and chooses per-table
 * types by the estimated iteration time.
 *
 * The estimate comes from the iteration's dependency graph (the "step"),
 * the same graph `gen dlrm` writes as Chakra nodes: per rank the input
 * all-to-all, embedding fetch and lookup, (de)quantisation, the pooled
 * exchange, the dense MLPs, the backward pass with gradient exchange and
 * bucketed all-reduces, optionally several iterations pipelined.  The
 * estimator runs that graph for the slowest rank under ASTRA-sim's issue
 * rules (one compute and one communication op in flight, ready nodes in id
 * order), pricing collectives from a calibration table measured by
 * simulating each collective on the target platform (etsim_shard_calib_t;
 * the CLI fills it with the simulator, which this module may not call),
 * or from closed forms when there is none.  docs/shard.md has the formulas.
 */
#ifndef ETSIM_SHARD_H
#define ETSIM_SHARD_H

#include "etsim/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- models */

/* Input limits: anything outside is refused with the key named. */
#define ETSIM_SHARD_MAX_TABLES (1u << 22)
#define ETSIM_SHARD_MAX_ROWS (1ull << 40)
#define ETSIM_SHARD_MAX_DIM 65536u
#define ETSIM_SHARD_MAX_POOLING 1e6
#define ETSIM_SHARD_MAX_WIDTH 65536u
#define ETSIM_SHARD_MAX_BATCH (1u << 24)
#define ETSIM_SHARD_MAX_RANKS (1u << 20)
#define ETSIM_SHARD_MAX_LAYERS 8

typedef struct etsim_shard_table {
  char name[32];
  uint64_t rows;
  uint32_t dim;
  double pooling;      /* lookups per sample (multi-hot size) */
  uint32_t elem_bytes; /* bytes per weight: 1, 2, 4 or 8 */
} etsim_shard_table_t;

enum { ETSIM_DLRM_DOT = 0, ETSIM_DLRM_DCN = 1 };

typedef struct etsim_shard_model {
  char name[48];
  size_t n_tables;
  etsim_shard_table_t *tables; /* owned */
  uint32_t bot[ETSIM_SHARD_MAX_LAYERS];
  size_t n_bot; /* bottom MLP widths, bot[0] = dense features */
  uint32_t top[ETSIM_SHARD_MAX_LAYERS];
  size_t n_top;    /* top MLP widths after the interaction output */
  int interaction; /* ETSIM_DLRM_* */
  uint32_t dcn_layers, dcn_rank;
  uint32_t batch; /* default per-rank batch */
} etsim_shard_model_t;

/* mlperf-dlrm, mlperf-dlrm-dcnv2, criteo-kaggle, synthetic-large (seeded),
 * dlrm-1t (a seeded trillion-parameter-class model, docs/shard.md).
 * 0 or ENOTFOUND (err lists the names). */
int etsim_shard_model_preset(const char *name, etsim_shard_model_t *out, etsim_error_t *err);
/* A model from JSON: {"name": .., "tables": [{"name", "rows", "dim",
 * "pooling", "elem_bytes"}], "bottom_mlp": [..], "top_mlp": [..],
 * "interaction": "dot"|"dcn", "dcn_layers", "dcn_rank", "batch"}.
 * Every value is type- and range-checked; errors name the file and key
 * (tables[3].pooling).  Unknown keys are errors (they are usually typos). */
int etsim_shard_model_load(const char *path, etsim_shard_model_t *out, etsim_error_t *err);
void etsim_shard_model_free(etsim_shard_model_t *m);
/* Check a model against the limits above and that its per-iteration
 * FLOPs and bytes fit 64 bits: 0 or EINVAL naming the table or key. */
int etsim_shard_model_check(const etsim_shard_model_t *m, etsim_error_t *err);

/* Forward FLOPs of one sample: bottom MLP, interaction, top MLP. */
uint64_t etsim_shard_fwd_flops(const etsim_shard_model_t *m);
/* Inputs of the top MLP (interaction output + bottom MLP output). */
uint64_t etsim_shard_top_inputs(const etsim_shard_model_t *m);
/* Parameters of the bottom MLP, interaction and top MLP. */
uint64_t etsim_shard_dense_params(const etsim_shard_model_t *m);

/* ------------------------------------------------ iteration options */

enum {
  ETSIM_SHARD_PREC_FP32 = 0,
  ETSIM_SHARD_PREC_FP16 = 1,
  ETSIM_SHARD_PREC_BF16 = 2,
  ETSIM_SHARD_PREC_FP8 = 3,
  ETSIM_SHARD_PREC_INT8 = 4,
  ETSIM_SHARD_N_PRECS = 5
};
const char *etsim_shard_prec_name(int prec); /* "fp32", ... */
int etsim_shard_prec_parse(const char *s);   /* -1 when unknown */
uint32_t etsim_shard_prec_bytes(int prec);   /* 4, 2, 2, 1, 1 */
/* FP8 and int8 need explicit quantize/dequantize kernels; FP16/BF16 casts
 * are fused into the kernels that produce and consume the data. */
int etsim_shard_prec_quantized(int prec);

/* How one training iteration runs (both the planner's estimate and the
 * trace `gen dlrm` writes follow it). */
typedef struct etsim_shard_step {
  int a2a_prec;          /* pooled embeddings and their gradients on the wire */
  int ar_prec;           /* dense and data-parallel gradient all-reduces */
  int pipeline;          /* next batch's embedding stage overlaps this batch */
  uint32_t iterations;   /* iterations in the trace (1..64) */
  double peak_tflops;    /* dense compute roofline (989) */
  double mem_gbps;       /* HBM bandwidth of the kernels (3350) */
  uint64_t bucket_bytes; /* DDP gradient bucket (25 MiB) */
} etsim_shard_step_t;

/* Multi-level embedding memory: HBM caches the hottest rows over DDR and
 * SSD.  A level with 0 GB is absent; with both absent every row is in
 * HBM (the plain case). */
typedef struct etsim_shard_access etsim_shard_access_t;
typedef struct etsim_shard_tiers {
  double ddr_gb, ssd_gb;                 /* capacity per rank */
  double ddr_gbps, ssd_gbps;             /* bandwidth per rank (GB/s) */
  double ddr_latency_us, ssd_latency_us; /* per fetch stage */
  uint32_t ddr_granule, ssd_granule;     /* bytes moved per row access at least (64, 4096) */
  double zipf_alpha;                     /* access skew: row i of n gets i^-alpha (1.05) */
  const etsim_shard_access_t *access;    /* measured access counts instead (borrowed) */
} etsim_shard_tiers_t;

/* Access counts from a trace file: lines "TABLE ROW [COUNT]" (table index
 * or name, row id, default count 1), '#' comments.  Errors name the file
 * and line.  *out owned (etsim_shard_access_free). */
int etsim_shard_access_load(const char *path, const etsim_shard_model_t *m,
                            etsim_shard_access_t **out, etsim_error_t *err);
void etsim_shard_access_free(etsim_shard_access_t *a);
/* Fraction of table t's lookups that hit its hottest `frac` of rows
 * (0..1) under the tiers' Zipf skew or access counts. */
double etsim_shard_hit_fraction(const etsim_shard_tiers_t *k, const etsim_shard_model_t *m,
                                size_t t, double frac);

/* ---------------------------------------------------------- calibration */

enum {
  ETSIM_SHARD_COLL_A2A = 0,
  ETSIM_SHARD_COLL_RS = 1,
  ETSIM_SHARD_COLL_AG = 2,
  ETSIM_SHARD_COLL_AR = 3,
  ETSIM_SHARD_N_COLLS = 4
};
enum { ETSIM_SHARD_SCOPE_WORLD = 0, ETSIM_SHARD_SCOPE_HOST = 1, ETSIM_SHARD_N_SCOPES = 2 };
const char *etsim_shard_coll_name(int coll); /* "all-to-all", ... */

#define ETSIM_SHARD_CAL_POINTS 16
/* Time of one collective against its comm_size: points in increasing
 * bytes, linear between them and along the last segment beyond. */
typedef struct etsim_shard_curve {
  uint32_t n;
  double bytes[ETSIM_SHARD_CAL_POINTS], ns[ETSIM_SHARD_CAL_POINTS];
} etsim_shard_curve_t;

typedef struct etsim_shard_calib {
  uint32_t ranks, ranks_per_host; /* the platform it was measured on */
  etsim_shard_curve_t c[ETSIM_SHARD_N_COLLS][ETSIM_SHARD_N_SCOPES];
  char source[160]; /* what produced it (network and system files) */
} etsim_shard_calib_t;

/* JSON {"etsim_shard_calib": 1, "ranks", "ranks_per_host", "source",
 * "curves": [{"coll": "all-to-all", "scope": "world"|"host", "bytes":
 * [..], "ns": [..]}]}; errors name the file and key. */
int etsim_shard_calib_load(const char *path, etsim_shard_calib_t *out, etsim_error_t *err);
int etsim_shard_calib_save(const etsim_shard_calib_t *c, const char *path, etsim_error_t *err);

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

/* Constants of TorchRec's per-shard cost model (etsim_shard_defaults),
 * which weighs shards for load balancing.  Bandwidths in GB/s. */
typedef struct etsim_shard_costs {
  double hbm_gbps;        /* embedding kernels (897) */
  double intra_host_gbps; /* per rank, inside a host (600) */
  double inter_host_gbps; /* per rank, across hosts (12.5) */
  uint32_t index_bytes;   /* 8 */
  uint32_t output_bytes;  /* pooled embeddings on the wire (from step.a2a_prec: 4 for fp32) */
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
  etsim_shard_step_t step;
  etsim_shard_tiers_t tiers;
  const etsim_shard_calib_t *calib; /* NULL: closed-form collective times */
} etsim_shard_opts_t;

void etsim_shard_defaults(etsim_shard_opts_t *o);

typedef struct etsim_shard {
  uint32_t table, rank;
  uint64_t row_off, rows;
  uint32_t col_off, cols;
  double fwd_ms, bwd_ms, fwd_comm_ms, bwd_comm_ms;
  uint64_t hbm_bytes;          /* HBM the shard takes (weights cached there + buffers) */
  uint64_t hbm_rows, ddr_rows; /* rows in HBM and DDR; the rest are on SSD */
  double hbm_hit, ddr_hit;     /* share of its lookups served from HBM, from HBM or DDR */
} etsim_shard_t;

/* The estimated iteration (etsim_shard_estimate). */
typedef struct etsim_shard_est {
  double iter_ns;                            /* total / iterations */
  double total_ns;                           /* all iterations, slowest rank */
  double comp_ns;                            /* compute busy */
  double coll_ns[ETSIM_SHARD_N_COLLS];       /* collective busy, by type */
  double coll_exp_ns[ETSIM_SHARD_N_COLLS];   /* ... while no compute runs */
  double emb_ns, fetch_ns, quant_ns, mlp_ns; /* compute by kind */
} etsim_shard_est_t;

typedef struct etsim_shard_plan {
  size_t n_ranks, ranks_per_host;
  uint32_t batch;
  int *table_type; /* per table */
  size_t n_tables;
  etsim_shard_t *shards; /* grouped by table, in table order */
  size_t n_shards;
  size_t *table_first;  /* shards of table t: [first[t], first[t+1]) */
  double *rank_ms;      /* per rank: sum of TorchRec shard costs */
  uint64_t *rank_bytes; /* per rank: HBM used */
  double max_ms;        /* the most loaded rank */
  uint64_t max_bytes;
  etsim_shard_step_t step;   /* how the iteration runs */
  etsim_shard_tiers_t tiers; /* memory levels (access: borrowed, may be NULL) */
  int tiered;                /* rows may live below HBM */
  etsim_shard_est_t est;     /* the estimated iteration */
  char label[48];            /* how the planner built it ("tw", "dp<64MB+twrw", ...) */
} etsim_shard_plan_t;

/*
 * Plan `m` on o->ranks ranks: build candidate per-table type choices
 * (each allowed type alone, size-threshold hybrids, TorchRec's per-table
 * cheapest choice), improve the best by moving groups of similar tables
 * to other types, and keep the plan with the lowest estimated iteration
 * time (or, for OBJ_MEMORY, the lowest peak memory).  Fails with EINVAL
 * (bad options, no allowed type) or ERANGE when no candidate fits in
 * memory, naming the largest table and the memory per rank.  *out owned
 * (etsim_shard_plan_free).
 */
int etsim_shard_plan(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                     etsim_shard_plan_t *out, etsim_error_t *err);
/*
 * The planner's finalists: up to `max` distinct plans by estimate, best
 * first, then (with `singles`) every allowed type alone that fits, so a
 * caller can simulate them and keep the fastest.  *out is an owned array
 * of *n plans (etsim_shard_plans_free).
 */
int etsim_shard_plan_finalists(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                               size_t max, int singles, etsim_shard_plan_t **out, size_t *n,
                               etsim_error_t *err);
void etsim_shard_plans_free(etsim_shard_plan_t *p, size_t n);
/* Place and rate a fixed per-table choice (types[t]); same errors. */
int etsim_shard_place(const etsim_shard_model_t *m, const etsim_shard_opts_t *o, const int *types,
                      etsim_shard_plan_t *out, etsim_error_t *err);
void etsim_shard_plan_free(etsim_shard_plan_t *p);

/* Estimate the plan's iteration under o's step options, tiers and
 * calibration (plan->est is filled the same way by the planner). */
int etsim_shard_estimate(const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                         const etsim_shard_opts_t *o, etsim_shard_est_t *out, etsim_error_t *err);

/* Read a plan written by etsim_shard_plan_write for model m: every key is
 * type- and range-checked, each table's shards must tile it as its type
 * says (one per rank for RW and DP, one host's ranks for TWRW/TWCW, column
 * blocks covering the dimension once, row ranges covering the rows once),
 * and o->ranks, o->ranks_per_host, o->batch, o->step and o->tiers' sizes
 * are taken from the file.  Errors name the file and key. */
int etsim_shard_plan_read(const char *path, const etsim_shard_model_t *m, etsim_shard_opts_t *o,
                          etsim_shard_plan_t *out, etsim_error_t *err);

/* Write the plan as JSON (atomically); "-" is stdout. */
int etsim_shard_plan_write(const etsim_shard_plan_t *p, const etsim_shard_model_t *m,
                           const char *path, etsim_error_t *err);

/* ----------------------------------------- the iteration as a graph */

/* One node of a rank's iteration (what `gen dlrm` writes as Chakra). */
enum { ETSIM_SHARD_NODE_COMP = 0, ETSIM_SHARD_NODE_COLL = 1 };
enum {
  ETSIM_SHARD_SPLIT_NONE = 0,
  ETSIM_SHARD_SPLIT_INPUT,
  ETSIM_SHARD_SPLIT_OUTPUT,
  ETSIM_SHARD_SPLIT_GRAD
};
enum {
  ETSIM_SHARD_KIND_MLP = 0,
  ETSIM_SHARD_KIND_EMB,
  ETSIM_SHARD_KIND_FETCH,
  ETSIM_SHARD_KIND_QUANT,
  ETSIM_SHARD_KIND_OTHER
};
#define ETSIM_SHARD_NODE_DEPS 4
typedef struct etsim_shard_node {
  char name[48];
  uint8_t type;  /* ETSIM_SHARD_NODE_* */
  uint8_t coll;  /* ETSIM_SHARD_COLL_* */
  uint8_t scope; /* ETSIM_SHARD_SCOPE_* */
  uint8_t split; /* ETSIM_SHARD_SPLIT_*: which per-peer byte lists an all-to-all carries */
  uint8_t kind;  /* ETSIM_SHARD_KIND_* (compute) */
  uint8_t n_deps;
  uint32_t deps[ETSIM_SHARD_NODE_DEPS]; /* indices of earlier nodes */
  uint64_t flops, bytes;                /* compute: num_ops, tensor_size; collective: comm_size */
  uint64_t dur_ns;                      /* compute time */
} etsim_shard_node_t;

typedef struct etsim_shard_dag {
  etsim_shard_node_t *v;
  size_t n, cap;
} etsim_shard_dag_t;
void etsim_shard_dag_free(etsim_shard_dag_t *d);

/* A plan's per-rank traffic and work, computed once (O(shards + ranks)). */
typedef struct etsim_shard_flow etsim_shard_flow_t;
int etsim_shard_flow_make(const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                          etsim_shard_flow_t **out, etsim_error_t *err);
void etsim_shard_flow_free(etsim_shard_flow_t *f);
/* Rank r's iteration graph; r = SIZE_MAX gives the slowest rank (each
 * per-rank quantity at its maximum), which the estimator runs. */
int etsim_shard_flow_dag(const etsim_shard_flow_t *f, size_t r, etsim_shard_dag_t *d,
                         etsim_error_t *err);
/* Bytes rank r sends to (in) and receives from (out) each peer in the
 * all-to-all `split` (n_ranks entries each). */
void etsim_shard_flow_splits(const etsim_shard_flow_t *f, size_t r, int split, int64_t *in,
                             int64_t *out);
/* Communicator id of rank r's host group in the comm-group file (1-based;
 * hosts are consecutive ranks). */
static inline uint32_t etsim_shard_host_group(size_t r, size_t ranks_per_host) {
  return (uint32_t)(r / ranks_per_host + 1);
}

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_SHARD_H */
