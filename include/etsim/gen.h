/*
 * etsim/gen.h — workload generators: collective microbenchmarks,
 * transformer LLM and DLRM training traces.
 *
 * Generators produce one Chakra trace per rank, encoded in memory and
 * written by et's set writer (etsim_et_enc_*, etsim_et_set_writer_*).
 * Ranks whose traces are byte-identical share one file through a
 * `<prefix>.manifest.json` (docs/traces.md); ETSIM_ET_OUT_RANK_FILES
 * writes plain `<prefix>.<rank>.et` files for tools that do not read
 * manifests.  Nothing is left at the output paths when a generator fails.
 * docs/gen.md describes the models.
 */
#ifndef ETSIM_GEN_H
#define ETSIM_GEN_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------- microbenchmarks */

/* Pseudo collective type for a ring of point-to-point sends and receives. */
#define ETSIM_GEN_SEND_RECV (-1)

enum {
  ETSIM_GEN_IDS_AUTO = 0,     /* CONTINUE for ETSIM_ET_OUT_RANK_FILES, else RESTART */
  ETSIM_GEN_IDS_RESTART = 1,  /* every rank's ids start at 0 */
  ETSIM_GEN_IDS_CONTINUE = 2, /* ids count on across ranks, as ASTRA-sim's
                                 microbenchmark scripts number them */
};

typedef struct etsim_gen_micro_opts {
  const int *colls; /* ETSIM_COLL_* or ETSIM_GEN_SEND_RECV, in issue order */
  size_t n_colls;
  uint64_t size_bytes; /* comm_size of every collective (bytes) */
  size_t npus;
  size_t count;     /* repetitions of the whole list (0 means 1) */
  uint64_t comp_ns; /* a COMP node of this many ns before each collective */
  int format;       /* ETSIM_ET_OUT_* */
  int ids;          /* ETSIM_GEN_IDS_* */
  const char *prefix;
  const int *dims; /* involved_dim of every collective (0/1), or NULL */
  size_t n_dims;
  /* comm_root of broadcast, reduce, gather and scatter (an etsim
   * attribute: the root NPU); written when has_root */
  int has_root;
  uint32_t root;
} etsim_gen_micro_opts_t;

/* Write the microbenchmark set; *rep (may be NULL) says what was written. */
int etsim_gen_micro(const etsim_gen_micro_opts_t *o, etsim_et_set_report_t *rep,
                    etsim_error_t *err);

/* "all-reduce", "all_reduce", "allreduce", "ALL_REDUCE", "send-recv" ...
 * to an ETSIM_COLL_* value or ETSIM_GEN_SEND_RECV; -2 when unknown. */
int etsim_gen_coll_parse(const char *s);

/* ------------------------------------------------------ transformer LLM */

/* A decoder-only transformer.  Dense models have experts = 0. */
typedef struct etsim_gen_llm_model {
  const char *name;
  uint64_t layers, hidden, heads, kv_heads, ffn, vocab, seq;
  uint64_t experts, top_k; /* MoE: experts per layer, experts per token */
  int gated;               /* SwiGLU FFN (3 matrices) instead of GELU (2) */
} etsim_gen_llm_model_t;

/* Fill *out with a preset: gpt3-175b, llama3-8b, llama3-70b, llama3-405b,
 * mixtral-8x7b.  0, or ETSIM_ENOTFOUND with the known names in err. */
int etsim_gen_llm_preset(const char *name, etsim_gen_llm_model_t *out, etsim_error_t *err);

enum { ETSIM_GEN_SCHED_1F1B = 0, ETSIM_GEN_SCHED_GPIPE = 1 };

typedef struct etsim_gen_llm_opts {
  etsim_gen_llm_model_t model;
  uint32_t dp, tp, pp, sp, ep; /* 0 means 1; NPUs = dp*tp*pp*sp*ep */
  size_t npus;                 /* 0, or must equal the product */
  uint32_t microbatches;       /* per iteration and data-parallel rank (0: pp) */
  uint32_t mbs;                /* sequences per micro-batch (0: 1) */
  int schedule;                /* ETSIM_GEN_SCHED_* */
  int zero;                    /* 0..3 */
  int recompute;               /* full activation recomputation */
  double peak_tflops;          /* per NPU (0: 989, H100 SXM BF16 dense) */
  double mem_gbps;             /* per NPU (0: 3350, H100 SXM HBM3) */
  uint32_t dtype_bytes;        /* activations, weights, gradients (0: 2) */
  int format;                  /* ETSIM_ET_OUT_* */
  const char *prefix;
  const char *comm_group_path; /* default <prefix>.comm_group.json */
  /* Memory (etsim_gen_llm_memory): tensors = write ASTRA-sim's "inputs" /
   * "outputs" tensor attributes (name, bytes) so `etsim sim` tracks each
   * NPU's memory; flash = attention that keeps no score matrix */
  int tensors;
  int flash;
} etsim_gen_llm_opts_t;

/*
 * The memory of one rank of pipeline stage `stage` (bytes), as the
 * generator models it and --tensors writes it into the traces:
 *   model states (ZeRO paper, Rajbhandari et al. 2020, mixed-precision
 *   Adam): parameters and gradients of dtype_bytes each and 12 bytes of
 *   optimizer state (fp32 master weights, momentum, variance) per
 *   parameter; ZeRO 1 shards the optimizer state over the data-parallel
 *   group, ZeRO 2 the gradients as well, ZeRO 3 the parameters too;
 *   activations (Korthikanti et al. 2022, generalised to grouped-query
 *   attention, gated MLPs, experts and context parallelism): per layer and
 *   micro-batch s b (10 h + (4 h + 4 kv d + m f)/t) + 5 a s_l s b / t bytes
 *   (m = 4, 6 for a gated MLP, times top-k for experts; the last term is
 *   the attention scores, 0 with flash), 2 s b h with full recomputation,
 *   scaled by dtype_bytes / 2; the stage holds min(micro-batches, pp -
 *   stage) micro-batches at once under 1F1B, all of them under GPipe;
 *   ZeRO 3 adds one layer's gathered parameters.
 */
typedef struct etsim_gen_llm_mem {
  uint64_t params, grads, optimizer; /* model states on the rank */
  uint64_t act_layer;                /* one layer, one micro-batch, as stored */
  uint64_t act_working;              /* recomputation: one layer's full activations */
  uint64_t layers;                   /* on the stage */
  uint32_t in_flight;                /* micro-batches held at once */
  uint64_t activations;              /* peak: layers x in_flight x act_layer + act_working */
  uint64_t zero3_layer;              /* ZeRO 3: one layer's gathered parameters */
  uint64_t total;                    /* params + grads + optimizer + activations + zero3_layer */
} etsim_gen_llm_mem_t;

int etsim_gen_llm_memory(const etsim_gen_llm_opts_t *o, uint32_t stage, etsim_gen_llm_mem_t *out,
                         etsim_error_t *err);

/*
 * Write one training iteration per rank (docs/gen.md gives the model, the
 * node names and the closed forms the tests check) and the communicator
 * groups.  An impossible split fails with ETSIM_EINVAL and a message naming
 * the flag; nothing is written then.
 */
int etsim_gen_llm(const etsim_gen_llm_opts_t *o, etsim_et_set_report_t *rep, etsim_error_t *err);

/* ------------------------------------------------------------------ DLRM */

struct etsim_shard_model;
struct etsim_shard_plan;

typedef struct etsim_gen_dlrm_opts {
  const struct etsim_shard_model *model;
  const struct etsim_shard_plan *plan; /* ranks, hosts, batch and the step come from it */
  double peak_tflops;                  /* > 0: overrides plan->step.peak_tflops */
  double mem_gbps;                     /* > 0: overrides plan->step.mem_gbps */
  uint64_t bucket_bytes;               /* > 0: overrides plan->step.bucket_bytes */
  int format;                          /* ETSIM_ET_OUT_* */
  const char *prefix;
  const char *comm_group_path; /* default <prefix>.comm_group.json */
} etsim_gen_dlrm_opts_t;

/*
 * One DLRM training run per rank from a sharding plan (docs/shard.md):
 * the graph of etsim_shard_flow_dag written as Chakra nodes — input
 * all-to-all of indices, fetches of rows kept below HBM, embedding
 * lookups, (de)quantisation for FP8/int8, the pooled all-to-all
 * (reduce-scatters for row-wise tables), the bottom MLP overlapping them,
 * interaction, top MLP, the mirrored backward with the gradient exchange,
 * embedding update, dense gradients all-reduced in buckets as they fill and
 * data-parallel tables all-reduced; plan->step.iterations iterations,
 * pipelined or not.  Uneven all-to-alls carry per-peer bytes in int64
 * lists in_split / out_split (up to 1,024 ranks).
 */
int etsim_gen_dlrm(const etsim_gen_dlrm_opts_t *o, etsim_et_set_report_t *rep, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_GEN_H */
