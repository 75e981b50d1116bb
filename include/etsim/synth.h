/*
 * etsim/synth.h — LayerDAG: learn a generator of DAGs from real DAGs and
 * Chakra traces, and sample new ones that are valid by construction.
 *
 * A DAG is split into layers by Kahn depth (layer 1 = nodes without
 * predecessors, layer k+1 = nodes whose predecessors all lie in layers
 * <= k).  The model generates one layer at a time: (1) how many nodes, (2)
 * their categorical attributes by discrete diffusion, (3) their incoming
 * edges from all earlier nodes by discrete (Bernoulli) diffusion, all
 * conditioned on a causal message-passing encoding of the graph so far and
 * on a graph label y.  Edges only point from earlier to later layers, so
 * every sample is acyclic.  See docs/synth.md for the model in detail.
 *
 * Data come either from the plain-text DAG format of the TPU Tile dataset
 * (one categorical channel) or from Chakra traces (three channels: op
 * class, log2 duration bin, log2 communication-size bin).
 */
#ifndef ETSIM_SYNTH_H
#define ETSIM_SYNTH_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETSIM_SYNTH_MAX_CH 4

/* What the categories mean: free ids (text data) or the Chakra mapping. */
enum { ETSIM_SYNTH_KIND_TEXT = 0, ETSIM_SYNTH_KIND_TRACE = 1 };

/* Chakra channels (KIND_TRACE): 0 node class, 1 collective type, 2 log2
 * duration bin, 3 log2 communication-size bin.  Node classes: */
enum {
  ETSIM_SYNTH_OP_GEMM = 0,
  ETSIM_SYNTH_OP_CONV,
  ETSIM_SYNTH_OP_ATTN,
  ETSIM_SYNTH_OP_NORM,
  ETSIM_SYNTH_OP_ELEMWISE,
  ETSIM_SYNTH_OP_COMP_OTHER,
  ETSIM_SYNTH_OP_CPU,
  ETSIM_SYNTH_OP_MEM_LOAD,
  ETSIM_SYNTH_OP_MEM_STORE,
  ETSIM_SYNTH_OP_SEND,
  ETSIM_SYNTH_OP_RECV,
  ETSIM_SYNTH_OP_COLL,
  ETSIM_SYNTH_OP_COUNT
};
#define ETSIM_SYNTH_TRACE_CH 4
#define ETSIM_SYNTH_COLL_BINS (1 + ETSIM_COLL_TYPE_COUNT) /* 0: n/a, 1 + etsim_coll_type_t */
#define ETSIM_SYNTH_DUR_BINS 24                           /* 0: 0 us, b: [2^(b-1), 2^b) us */
#define ETSIM_SYNTH_SIZE_BINS 48 /* 0: n/a (not communication), b: [2^(b-1), 2^b) bytes */
#define ETSIM_SYNTH_BIN_VALUES (ETSIM_SYNTH_DUR_BINS + ETSIM_SYNTH_SIZE_BINS)

/* One DAG: node i has categories x[i * n_ch + c]; edges src[k] -> dst[k]. */
typedef struct etsim_synth_dag {
  uint32_t n_nodes, n_edges;
  uint32_t *x;
  uint32_t *src, *dst;
  double y;  /* graph label */
  double y2; /* its second component, read when the data have n_labels 2
                (e.g. a trace's communication share next to its time) */
} etsim_synth_dag_t;

/* A set of DAGs with one category layout. */
typedef struct etsim_synth_data {
  int kind; /* ETSIM_SYNTH_KIND_* */
  uint32_t n_ch;
  uint32_t n_cls[ETSIM_SYNTH_MAX_CH]; /* categories per channel */
  /* Label components per DAG: 1 (y; 0 reads as 1) or 2 (y and y2).  The
   * loaders leave it 0; whoever sets y2 sets it to 2. */
  uint32_t n_labels;
  size_t n_graphs, cap;
  etsim_synth_dag_t *g; /* owned */
  /* KIND_TRACE: per duration bin (ns), then per size bin (bytes), the sum
   * and the number of the real values that fell in it.  A trace written
   * from the data gives a bin with values their mean, and a bin without
   * its midpoint (docs/synth.md, Output). */
  double bin_sum[ETSIM_SYNTH_BIN_VALUES], bin_n[ETSIM_SYNTH_BIN_VALUES];
} etsim_synth_data_t;

void etsim_synth_data_init(etsim_synth_data_t *d);
void etsim_synth_data_free(etsim_synth_data_t *d);
/* Append a copy of g (x, src, dst copied).  0 or ETSIM_ENOMEM. */
int etsim_synth_data_add(etsim_synth_data_t *d, const etsim_synth_dag_t *g);

/*
 * Read the text format of ../shared/datasets/tpu_tile (README there) and
 * append its graphs.  Errors name "file:line".  A cyclic graph, an edge
 * index out of range or a self-loop is an error.  n_cls[0] becomes at least
 * max(x) + 1 (and at least min_classes).
 */
int etsim_synth_data_load_text(etsim_synth_data_t *d, const char *path, uint32_t min_classes,
                               etsim_error_t *err);
/* Write in the same format (a comment line first). */
int etsim_synth_data_write_text(const etsim_synth_data_t *d, const char *path, const char *comment,
                                etsim_error_t *err);

/* How a Chakra trace becomes training DAGs. */
typedef struct etsim_synth_trace_opts {
  uint32_t max_nodes;  /* window size: consecutive layers, at most this many
                          nodes per DAG (default 400) */
  int keep_transitive; /* 1: keep edges implied by other paths */
  int use_ctrl;        /* 1: control dependencies count as edges too */
  double y;            /* label of every window (e.g. a simulated time) */
  double y2;           /* its second component (default 0; see n_labels) */
} etsim_synth_trace_opts_t;
void etsim_synth_trace_opts_default(etsim_synth_trace_opts_t *o);

/*
 * Append the DAGs of one Chakra trace: node categories from type, name,
 * comm_type, duration and comm_size; data_deps as edges (to nodes in the
 * file); the transitive reduction unless keep_transitive (traces carry many
 * edges that other paths imply); then windows of consecutive layers of at
 * most max_nodes nodes, each a DAG of its own (its first layer the sources).
 * The data must be KIND_TRACE (an empty set becomes one).
 */
int etsim_synth_data_load_trace(etsim_synth_data_t *d, const char *path,
                                const etsim_synth_trace_opts_t *o, etsim_error_t *err);

/* Layer (1-based Kahn depth) of every node into layer[n_nodes]; returns the
 * number of layers, or ETSIM_EFORMAT naming a node on a cycle. */
int etsim_synth_layers(const etsim_synth_dag_t *g, uint32_t *layer, etsim_error_t *err);

/* ------------------------------------------------------------------ model */

typedef struct etsim_synth_config {
  int hidden;      /* encoder and head width (default 64) */
  int mp_layers;   /* causal message-passing layers (default 2) */
  int pair_hidden; /* edge scorer width (default 32) */
  int t_attr;      /* attribute diffusion steps (default 64) */
  int t_edge;      /* edge diffusion steps (default 16) */
  int epochs;      /* default 40 */
  int batch;       /* graphs per optimiser step (default 16) */
  float lr;        /* Adam learning rate (default 2e-3) */
  uint64_t seed;   /* default 1 */
  /* Training only: a layer whose prefix has more nodes than this scores a
   * sample of its candidate parents (an unbiased estimate of the same
   * loss, so deep graphs train in time linear in their edges); 0 scores
   * every pair.  Default 256. */
  int exact_candidates;
  /* Which heads read category histograms (docs/synth.md, Model item 1),
   * a mask of ETSIM_SYNTH_HIST_*: the denoisers read those of the last
   * layer, the prefix and its childless nodes; the size head that of the
   * last layer.  ETSIM_SYNTH_CTX_PROGRESS gives the denoisers how far the
   * graph is through its depth (trace data only; dropped for text DAGs).
   * ETSIM_SYNTH_CTX_RECENT gives them how many layers ago each node class
   * last occurred (trace data only, like the progress). */
  int ctx_hist;
  /* Training only: the probability that a graph's label is dropped from
   * the denoisers' context (its label features zeroed, a "null label")
   * for one epoch, so the model learns the unconditional denoisers that
   * classifier-free guidance needs (etsim_synth_model_set_guidance).
   * The stop and size heads keep the label.  Default 0. */
  float label_drop;
  /* FiLM label conditioning of the attribute denoiser: both hidden
   * layers' pre-activations q become q * (1 + gamma(y)) + beta(y), with
   * gamma and beta linear in the label features and initialised to zero,
   * so training starts from the model without it.  Model version 8 (a
   * file without it stays version 7).  Default 0. */
  int label_film;
  /* Label scale of the edge denoiser: the per-candidate part of its
   * hidden layer (the earlier node's embedding and gap terms) is
   * multiplied per unit by 1 + gamma(y), gamma linear in the label
   * features and initialised to zero, so the label can change which
   * candidates a new node takes, not only a shift shared by all of them.
   * Model version 9 (a file without it stays version 7 or 8).  Default 0. */
  int label_edge;
  /* Training only: an exponential moving average of the parameters,
   * a <- ema * a + (1 - ema) * w after every optimiser step (Polyak
   * averaging, as diffusion models are usually sampled from).  Validation
   * scores the average, and the best epoch's average is the model; the
   * optimiser's own trajectory is unchanged.  0 (the default) keeps the
   * raw parameters, bit for bit as before; in [0, 1). */
  float ema;
  /* Node-count conditioning of the stop and size heads (a deviation from
   * LayerDAG, which conditions on the label only): both also read the
   * target node count n (log features), the size head also the nodes
   * still to come; n is a training graph's own count, and at sampling
   * etsim_synth_sample_sized's nodes[i] (else the training mean).  Its
   * weights start at zero, after all others.  Model version 10 (a file
   * without it stays version 7, 8 or 9).  ETSIM_SYNTH_SIZE_COND_STOP
   * conditions the stop head alone (the same count features and map; the
   * size head as without the option, no parameters of its own): model
   * version 11.  0 (default) off, 1 (ETSIM_SYNTH_SIZE_COND_HEADS) both
   * heads, 2 the stop head only. */
  int size_cond;
  /* Successor messages (issue 25, LayerDAG's bidirectional encoder, in
   * one cheap step): at every layer step a prefix node's embedding also
   * reflects the children it has in the prefix, Z_l(u) = Z(u) +
   * W_succ (sum of its children's Z) / (1 + their number), and every
   * reader of node embeddings at that step (the prefix pool of the
   * context, the edge denoiser's candidates and noisy parents) reads
   * Z_l.  W_succ starts at zero, after all other parameters, so training
   * starts from exactly the causal model.  Model version 12 (a file
   * without it stays as before).  Default 0. */
  int succ_msg;
  /* Self-attention among the nodes of a new layer in the attribute
   * denoiser (LayerDAG's transformer, one single-head block): after its
   * first hidden layer h, h + Wo softmax(Q K^T / sqrt(H)) V with Q, K, V
   * = h Wq, h Wk, h Wv, within each layer (same graph, same diffusion
   * step).  Wo starts at zero, so training starts from the model without
   * it; the layer-mean input stays.  O(n^2) per layer of n nodes.  Model
   * version 13 (a file without it keeps its version).  Default 0. */
  int attn;
  /* Bidirectional encoder per layer step (issue 25, LayerDAG's BiMPNN):
   * at every layer step l the K message-passing layers run again on the
   * prefix (layers <= l) with messages in both directions, a node's
   * layer-k pre-activation gaining mp_rev[k] times the sum over its
   * children in the prefix, and every reader of node embeddings at step
   * l (the prefix pool of the context, the edge denoiser's candidates and
   * noisy parents) reads those.  mp_rev starts at zero, after all other
   * parameters, so training starts from exactly the causal model.  The
   * encoder work per graph is O(L N), quadratic in depth: not for deep
   * traces.  Excludes succ_msg.  Model version 14.  Default 0. */
  int bidir;
} etsim_synth_config_t;
#define ETSIM_SYNTH_SIZE_COND_HEADS 1
#define ETSIM_SYNTH_SIZE_COND_STOP 2
#define ETSIM_SYNTH_HIST_DENOISE 1
#define ETSIM_SYNTH_HIST_SIZE 2
#define ETSIM_SYNTH_CTX_PROGRESS 4
#define ETSIM_SYNTH_CTX_RECENT 8
void etsim_synth_config_default(etsim_synth_config_t *c);

typedef struct etsim_synth_model etsim_synth_model_t;

/* Per-epoch progress: mean training losses (count, attr, edge) and the
 * validation loss; return nonzero to stop. */
typedef struct etsim_synth_progress {
  int epoch, epochs;
  double train_loss, loss_count, loss_attr, loss_edge, val_loss;
  int best; /* this epoch gave the best validation loss so far */
  double seconds;
} etsim_synth_progress_t;
typedef int (*etsim_synth_progress_fn)(void *user, const etsim_synth_progress_t *p);

/*
 * Train on `train`, validate on `val` (may be NULL: a seeded 10% of train is
 * held out).  Deterministic for a given seed.  The returned model holds
 * the parameters of the epoch with the best validation loss.
 */
int etsim_synth_train(const etsim_synth_data_t *train, const etsim_synth_data_t *val,
                      const etsim_synth_config_t *cfg, etsim_synth_progress_fn fn, void *user,
                      etsim_synth_model_t **out, etsim_error_t *err);
void etsim_synth_model_free(etsim_synth_model_t *m);

/* Mean loss of the model on data (fixed noise draws from `seed`): total and
 * the three parts (any out pointer may be NULL). */
int etsim_synth_model_loss(etsim_synth_model_t *m, const etsim_synth_data_t *d, uint64_t seed,
                           double *total, double *count, double *attr, double *edge,
                           etsim_error_t *err);

/* Versioned binary model file ("ETSYNTH1" magic, version, config, data
 * statistics, parameters, checksum).  Load fails with a clear message on
 * another version, truncation or a bad checksum. */
#define ETSIM_SYNTH_MODEL_VERSION 14
int etsim_synth_model_save(const etsim_synth_model_t *m, const char *path, etsim_error_t *err);
int etsim_synth_model_load(etsim_synth_model_t **out, const char *path, etsim_error_t *err);
/* Category layout the model generates (kind, n_ch, n_cls) and its number
 * of parameters. */
void etsim_synth_model_info(const etsim_synth_model_t *m, int *kind, uint32_t *n_ch,
                            uint32_t *n_cls, size_t *n_params);
/* A label typical of the training data (its median). */
double etsim_synth_model_label(const etsim_synth_model_t *m);
/* Label components the model conditions on: 1, or 2 when it was trained
 * on data with n_labels 2 (y and y2). */
uint32_t etsim_synth_model_n_labels(const etsim_synth_model_t *m);
/* Sampling temperature of the edge denoiser (default 1, as trained): its
 * logits are divided by tau > 0 at every reverse step, so tau < 1 sharpens
 * the predicted edges.  Not saved with the model.  ETSIM_EINVAL for tau
 * not in (0, 100]. */
int etsim_synth_model_set_edge_temp(etsim_synth_model_t *m, double tau, etsim_error_t *err);
/* The same for the attribute denoiser: its logits (after guidance) are
 * divided by tau at every reverse step, so tau < 1 draws each node's
 * categories closer to their most probable ones.  Not saved with the
 * model.  ETSIM_EINVAL for tau not in (0, 100]. */
int etsim_synth_model_set_attr_temp(etsim_synth_model_t *m, double tau, etsim_error_t *err);
/* At most k parents per sampled node (0, the default: no cap): a node
 * given more keeps its k most probable ones, among them its most probable
 * parent in the previous layer.  Not saved with the model. */
void etsim_synth_model_set_max_parents(etsim_synth_model_t *m, uint32_t k);
/* Per category of the first channel, a cap on a sampled node's parents
 * read from real DAGs d (the training data): the largest k such that at
 * least a share q of d's nodes of that category that have a parent have
 * k or more (q = 0.1: the in-degree that a tenth of them reach).  A
 * category no node of d with a parent holds is not capped, and a lower
 * --max-parents cap still applies.  Not saved with the model.
 * ETSIM_EINVAL when q is not in (0, 1] or d's categories do not fit the
 * model's; ETSIM_ENOMEM. */
int etsim_synth_model_set_parent_caps(etsim_synth_model_t *m, const etsim_synth_data_t *d, double q,
                                      etsim_error_t *err);
/* Classifier-free guidance of the attribute and edge denoisers (default
 * 0): at every reverse step their logits become (1 + w)·cond − w·uncond,
 * uncond the same denoiser with the label features zeroed (the null label
 * of config label_drop).  w = 0 samples exactly as without guidance.  Not
 * saved with the model.  ETSIM_EINVAL for w not in [0, 20]. */
int etsim_synth_model_set_guidance(etsim_synth_model_t *m, double w, etsim_error_t *err);
/* The edge denoiser's own guidance weight w, the attribute denoiser's
 * staying that of etsim_synth_model_set_guidance (until this is called the
 * edge denoiser follows that one).  Not saved with the model.  ETSIM_EINVAL
 * for w not in [0, 20]. */
int etsim_synth_model_set_guidance_edge(etsim_synth_model_t *m, double w, etsim_error_t *err);

/*
 * Sample n DAGs into `out` (initialised, kind and layout set from the
 * model); labels[i] conditions graph i (NULL: the training median; a
 * two-component model takes its second component at the training median).
 * Deterministic for a seed.
 */
int etsim_synth_sample(etsim_synth_model_t *m, size_t n, const double *labels, uint64_t seed,
                       etsim_synth_data_t *out, etsim_error_t *err);

typedef struct etsim_synth_sample_stats {
  size_t nodes;     /* sampled nodes (trace models) */
  size_t projected; /* of them, nodes whose attributes broke a rule */
  size_t run_cut;   /* layers whose first node was held to a class that
                       does not communicate, after as many communication-
                       only layers as training has in a row (trace models
                       of version 7, with project; docs/synth.md) */
} etsim_synth_sample_stats_t;
/* As etsim_synth_sample, with labels[i * label_dim + j] component j of
 * graph i's label (label_dim 1 or 2, at most etsim_synth_model_n_labels:
 * else ETSIM_EINVAL; a component the model reads and labels lack takes its
 * training median).  With `project` (what etsim_synth_sample does), a
 * trace node that breaks an attribute rule redraws the offending channel
 * from the model's last clean prediction restricted to allowed values; st
 * (may be NULL) counts them. */
int etsim_synth_sample_ex(etsim_synth_model_t *m, size_t n, const double *labels,
                          uint32_t label_dim, uint64_t seed, int project,
                          etsim_synth_sample_stats_t *st, etsim_synth_data_t *out,
                          etsim_error_t *err);

/* As etsim_synth_sample_ex, with graph i the closest in node count to
 * nodes[i] of `tries` draws at its label (the earliest on ties; it stops at
 * an exact match): rejection sampling from the model given its label and
 * about nodes[i] nodes (docs/synth.md, "Size matching").  Draw 0 is graph
 * i of etsim_synth_sample_ex with the same seed, so tries = 1 samples
 * exactly as it does (for a model without node-count conditioning); st
 * counts the graphs kept.  A model trained with config size_cond also
 * conditions graph i on nodes[i] (etsim_synth_sample_ex: on the training
 * mean).  ETSIM_EINVAL without nodes or with tries 0. */
int etsim_synth_sample_sized(etsim_synth_model_t *m, size_t n, const double *labels,
                             uint32_t label_dim, const uint32_t *nodes, uint32_t tries,
                             uint64_t seed, int project, etsim_synth_sample_stats_t *st,
                             etsim_synth_data_t *out, etsim_error_t *err);

/*
 * Write DAG g (KIND_TRACE categories) as a Chakra trace: op classes become
 * node types and comm_type, bins become duration_micros and comm_size,
 * edges data_deps.
 */
int etsim_synth_write_trace(const etsim_synth_data_t *d, size_t gi, const char *path,
                            etsim_error_t *err);

/* ------------------------------------------------------------- baseline */

/*
 * Non-learned references, fitted to data:
 *  - etsim_synth_baseline: layered random DAGs with the empirical marginals
 *    (number of layers drawn from the data, i.i.d. layer sizes from their
 *    marginal, attributes from their marginal, one parent in the previous
 *    layer plus Poisson extra parents anywhere earlier to match the mean
 *    in-degree).  It copies the layer statistics by construction.
 *  - etsim_synth_baseline_daggen: the parametric model of DAGGEN-style
 *    task-graph generators: node count from the data, a width n^fat per
 *    level varied by +-regularity, extra parents by density within `jump`
 *    levels, all four fitted to the data; attributes from their marginal.
 */
int etsim_synth_baseline(const etsim_synth_data_t *fit, size_t n, uint64_t seed,
                         etsim_synth_data_t *out, etsim_error_t *err);
int etsim_synth_baseline_daggen(const etsim_synth_data_t *fit, size_t n, uint64_t seed,
                                etsim_synth_data_t *out, etsim_error_t *err);

/* ---------------------------------------------------------- surrogate */

/*
 * The paper's evaluation regressor (LayerDAG, src/eval/discriminator): a
 * bidirectional MPNN (parent and child messages, ReLU, K layers, jumping-
 * knowledge concatenation, sum pooling, a two-layer head) that predicts a
 * graph's label.  Smooth-L1 loss on the raw label, Adam, and the epoch with
 * the best validation Pearson is kept (early stop after `patience` epochs
 * without a better one).  docs/synth.md has the protocol.
 */
typedef struct etsim_synth_surrogate_config {
  int hidden;    /* width per channel (default 128, the paper's TPU value) */
  int mp_layers; /* message-passing layers (default 4) */
  int epochs;    /* at most (default 500) */
  int patience;  /* epochs without a better validation Pearson (default 100) */
  int batch;     /* graphs per step (default 256) */
  float lr;      /* Adam learning rate (default 1e-3) */
  uint64_t seed; /* initialisation, shuffling and the held-out split */
} etsim_synth_surrogate_config_t;
void etsim_synth_surrogate_config_default(etsim_synth_surrogate_config_t *c);

typedef struct etsim_synth_scores {
  size_t n;
  double pearson, spearman, mae;
} etsim_synth_scores_t;

/* Pearson, Spearman (ties get mean ranks) and MAE of pred against y.
 * 0 or ETSIM_EINVAL (n = 0) / ETSIM_ENOMEM. */
int etsim_synth_score(const double *pred, const double *y, size_t n, etsim_synth_scores_t *out);

typedef struct etsim_synth_surrogate etsim_synth_surrogate_t;

typedef struct etsim_synth_surrogate_progress {
  int epoch, epochs;
  double train_loss;        /* mean weighted smooth-L1 over the epoch */
  etsim_synth_scores_t val; /* on the validation set */
  int best;
} etsim_synth_surrogate_progress_t;
typedef int (*etsim_synth_surrogate_progress_fn)(void *user,
                                                 const etsim_synth_surrogate_progress_t *p);

/*
 * Train on `train` (graph i weighs weights[i] in the loss; NULL: all 1) and
 * select on `val` (NULL: a seeded 10% of train is held out).  Categories
 * are embedded per channel with the larger of the two sets' n_cls.
 * Deterministic for a seed.
 */
int etsim_synth_surrogate_fit(const etsim_synth_data_t *train, const double *weights,
                              const etsim_synth_data_t *val,
                              const etsim_synth_surrogate_config_t *cfg,
                              etsim_synth_surrogate_progress_fn fn, void *user,
                              etsim_synth_surrogate_t **out, etsim_error_t *err);
/*
 * Train an existing regressor further (pre-train on one set, then fine-tune
 * on another): the same loop as _fit from s's current weights, Adam
 * restarted, cfg's epochs (>= 0), patience, batch, lr and seed (its hidden
 * and mp_layers are ignored: s's; its batch is also the one s predicts
 * with from then on).  The starting weights are the epoch-0
 * candidate of the selection on `val` (NULL: a seeded 10% of train), so
 * zero epochs leave s exactly as it was; the progress callback also sees
 * epoch 0 (train_loss NaN).  Categories must lie in s's vocabulary.  On
 * return s holds the selected weights (after an error, the best seen until
 * then).
 */
int etsim_synth_surrogate_finetune(etsim_synth_surrogate_t *s, const etsim_synth_data_t *train,
                                   const double *weights, const etsim_synth_data_t *val,
                                   const etsim_synth_surrogate_config_t *cfg,
                                   etsim_synth_surrogate_progress_fn fn, void *user,
                                   etsim_error_t *err);
/* pred[d->n_graphs]; a category outside the training vocabulary is an
 * error naming the graph and node. */
int etsim_synth_surrogate_predict(etsim_synth_surrogate_t *s, const etsim_synth_data_t *d,
                                  double *pred, etsim_error_t *err);
size_t etsim_synth_surrogate_params(const etsim_synth_surrogate_t *s);
/* The regressor's weights and layout (width, layers, channels and their
 * categories, batch size) to a file, and back: a loaded regressor predicts
 * exactly as the saved one and can be fine-tuned (its other training
 * settings are not kept: pass them to _finetune).  Damage, truncation and another format
 * version are errors naming the file. */
int etsim_synth_surrogate_save(const etsim_synth_surrogate_t *s, const char *path,
                               etsim_error_t *err);
int etsim_synth_surrogate_load(etsim_synth_surrogate_t **out, const char *path, etsim_error_t *err);
void etsim_synth_surrogate_free(etsim_synth_surrogate_t *s);

/* --------------------------------------------------------------- eval */

typedef struct etsim_synth_eval {
  size_t n_real, n_gen;
  double validity;           /* fraction of generated DAGs that are valid */
  double attr_validity;      /* fraction obeying the attribute rule (trace) */
  double w1_layers;          /* W1 distance of the number of layers */
  double w1_nodes, w1_edges; /* W1 of node and edge counts */
  double mmd_layer_size;     /* Gaussian-kernel MMD^2 of layer-size hists */
  double mmd_in_degree, mmd_out_degree;
  double attr_tv[ETSIM_SYNTH_MAX_CH]; /* total variation of marginals */
  uint32_t n_ch;
  /* Surrogate protocol (when requested): regressor trained on generated
   * DAGs (and on real training DAGs), tested on the real set. */
  int has_surrogate, has_real_surrogate;
  double gen_pearson, gen_spearman, gen_mae;
  double real_pearson, real_spearman, real_mae;
} etsim_synth_eval_t;

/* Surrogates of the evaluation protocol. */
enum {
  ETSIM_SYNTH_SURROGATE_NONE = 0,
  ETSIM_SYNTH_SURROGATE_RIDGE = 1, /* ridge regression of log(label) on counts */
  ETSIM_SYNTH_SURROGATE_BIMPNN = 2 /* the paper's regressor (configured by sc) */
};

/* Compare generated against real; real_train (may be NULL) gives the
 * "trained on real graphs" surrogate row.  `surrogate` is one of
 * ETSIM_SYNTH_SURROGATE_*; the BiMPNN is trained with sc (NULL: defaults)
 * and selected on a seeded 10% of its own training set. */
int etsim_synth_evaluate(const etsim_synth_data_t *real, const etsim_synth_data_t *gen,
                         const etsim_synth_data_t *real_train, int surrogate,
                         const etsim_synth_surrogate_config_t *sc, etsim_synth_eval_t *out,
                         etsim_error_t *err);
/* Whether one DAG is valid: acyclic, indices in range, no self-loop or
 * duplicate edge, categories in range; 1 or 0, or ETSIM_ENOMEM when it
 * cannot allocate its scratch (so no caller counts that as invalid). */
int etsim_synth_dag_valid(const etsim_synth_data_t *d, const etsim_synth_dag_t *g);
/* Trace data (KIND_TRACE): 1 when every node obeys the attribute rules (a
 * collective type exactly on collectives, a size exactly on
 * communication), else 0; other data: 1. */
int etsim_synth_attr_valid(const etsim_synth_data_t *d, const etsim_synth_dag_t *g);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_SYNTH_H */
