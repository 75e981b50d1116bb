/*
 * llm.c — transformer LLM training traces: one iteration per rank under
 * data (DP), tensor (TP, Megatron-style), pipeline (PP), sequence/context
 * (SP) and expert (EP) parallelism, with micro-batches, GPipe or 1F1B,
 * ZeRO 0-3 and full activation recomputation.
 *
 * Rank layout, innermost first: tp, sp, ep, dp, pp (Megatron's order), so
 * rank = tp_i + tp*(sp_i + sp*(ep_i + ep*(dp_i + dp*pp_i))).  Communicators
 * (ids from 1 in the communicator-group JSON; groups of one rank need no
 * communication and get none): TP; SP; EP; the replicas of dense weights
 * (sp x ep x dp); the replicas of expert weights (sp x dp).
 *
 * Per micro-batch and layer, forward: attention COMP (with SP: QKV, the
 * all-gather of K and V over SP, then attention), TP all-reduce, MLP COMP
 * (MoE: router, EP all-to-all, experts, EP all-to-all), TP all-reduce.
 * Backward mirrors it at twice the FLOPs (SP: reduce-scatter of dK, dV),
 * after a recomputed forward when --recompute.  The first stage embeds
 * (vocabulary-parallel: a TP all-reduce), the last stage runs the LM head
 * (its backward all-reduces the input gradient over TP).  Stages exchange
 * activations and gradients by send/recv (tag 2*mb forward, 2*mb+1
 * backward).  Gradients: ZeRO 0 all-reduces each layer's gradients after
 * its last backward, ZeRO 1/2 reduce-scatter them and all-gather the
 * updated parameters after the optimizer, ZeRO 3 all-gathers each layer's
 * parameters before every forward and backward and reduce-scatters its
 * gradients after every backward.  Every COMP carries num_ops (FLOPs),
 * tensor_size (bytes touched) and a roofline duration on the platform.
 * docs/gen.md has the closed forms that tests/gen/test_llm.c checks.
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NONE_ID UINT64_MAX

/* ------------------------------------------------------------ presets */

static const etsim_gen_llm_model_t presets[] = {
    /* Brown et al. 2020, table 2.1: 96 layers, d_model 12288, 96 heads,
     * context 2048; GPT-2 BPE vocabulary of 50257. */
    {"gpt3-175b", 96, 12288, 96, 96, 49152, 50257, 2048, 0, 0, 0},
    /* Llama 3 herd of models (2024), table 3; vocabulary 128K (128256). */
    {"llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 0, 0, 1},
    {"llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, 0, 0, 1},
    {"llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, 0, 0, 1},
    /* Jiang et al. 2024 (Mixtral of experts), table 1: 8 experts, top 2,
     * context 32768, vocabulary 32000. */
    {"mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, 8, 2, 1},
};

int etsim_gen_llm_preset(const char *name, etsim_gen_llm_model_t *out, etsim_error_t *err) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0) {
      *out = presets[i];
      return 0;
    }
  return etsim_error_set(err, ETSIM_ENOTFOUND,
                         "unknown model preset '%s' (gpt3-175b, llama3-8b, "
                         "llama3-70b, llama3-405b, mixtral-8x7b)",
                         name);
}

/* ------------------------------------------------------------- setup */

enum { D_TP, D_SP, D_EP, D_DP, D_PP, N_DIMS };
enum { K_TP, K_SP, K_EP, K_DPD, K_DPE, N_KINDS };
static const unsigned kind_mask[N_KINDS] = {1u << D_TP, 1u << D_SP, 1u << D_EP,
                                            (1u << D_SP) | (1u << D_EP) | (1u << D_DP),
                                            (1u << D_SP) | (1u << D_DP)};

typedef struct {
  const etsim_gen_llm_opts_t *o;
  const etsim_gen_llm_model_t *m;
  uint64_t n[N_DIMS], stride[N_DIMS];
  uint64_t npus;
  uint64_t h, d, kv_l, f, V, s, sl, b, E, E_l, k, e;
  uint32_t M;
  double peak_flops_per_ns, bytes_per_ns;
  /* Communicators: effective mask, first id, size. */
  unsigned mask[N_KINDS];
  uint32_t first_id[N_KINDS];
  uint64_t gsize[N_KINDS];
  uint64_t n_groups_total;
} llm_t;

static uint64_t group_size(const llm_t *g, unsigned mask) {
  uint64_t s = 1;
  for (int d = 0; d < N_DIMS; d++)
    if (mask & (1u << d)) s *= g->n[d];
  return s;
}

/* Index of rank r's group among the groups of `mask` (mixed radix over the
 * dimensions outside the mask). */
static uint64_t group_index(const llm_t *g, unsigned mask, const uint64_t *c) {
  uint64_t idx = 0, mul = 1;
  for (int d = 0; d < N_DIMS; d++)
    if (!(mask & (1u << d))) {
      idx += c[d] * mul;
      mul *= g->n[d];
    }
  return idx;
}

/* More layers than any model has by a factor of 100. */
#define GEN_LLM_MAX_LAYERS 100000u

static int setup(llm_t *g, const etsim_gen_llm_opts_t *o, etsim_error_t *err) {
  memset(g, 0, sizeof *g);
  g->o = o;
  const etsim_gen_llm_model_t *m = g->m = &o->model;
  const char *mn = m->name ? m->name : "the model";
  uint32_t v[N_DIMS] = {o->tp, o->sp, o->ep, o->dp, o->pp};
  static const char *flag[N_DIMS] = {"--tp", "--sp", "--ep", "--dp", "--pp"};
  g->npus = 1;
  for (int d = 0; d < N_DIMS; d++) {
    g->n[d] = v[d] ? v[d] : 1;
    g->stride[d] = g->npus;
    g->npus *= g->n[d];
    if (g->npus > (1u << 24))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "gen llm: dp x tp x pp x sp x ep is over 16777216 "
                             "NPUs");
  }
  (void)flag;
  if (!m->layers || !m->hidden || !m->heads || !m->kv_heads || !m->ffn || !m->vocab || !m->seq)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: %s: layers, hidden, heads, kv-heads, ffn, "
                           "vocab and seq must all be positive",
                           mn);
  if (o->npus && o->npus != g->npus)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --npus %zu is not dp x tp x pp x sp x ep = "
                           "%llu x %llu x %llu x %llu x %llu = %llu",
                           o->npus, (unsigned long long)g->n[D_DP], (unsigned long long)g->n[D_TP],
                           (unsigned long long)g->n[D_PP], (unsigned long long)g->n[D_SP],
                           (unsigned long long)g->n[D_EP], (unsigned long long)g->npus);
  uint64_t t = g->n[D_TP];
  if (m->hidden % m->heads)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: %s: %llu attention heads do not divide the "
                           "hidden size %llu",
                           mn, (unsigned long long)m->heads, (unsigned long long)m->hidden);
  if (m->heads % m->kv_heads)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: %s: %llu key/value heads do not divide "
                           "the %llu attention heads",
                           mn, (unsigned long long)m->kv_heads, (unsigned long long)m->heads);
  if (m->heads % t)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --tp %llu does not divide the %llu "
                           "attention heads of %s",
                           (unsigned long long)t, (unsigned long long)m->heads, mn);
  if (m->kv_heads % t)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --tp %llu does not divide the %llu "
                           "key/value heads of %s",
                           (unsigned long long)t, (unsigned long long)m->kv_heads, mn);
  if (m->ffn % t)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --tp %llu does not divide the FFN size "
                           "%llu of %s",
                           (unsigned long long)t, (unsigned long long)m->ffn, mn);
  if (g->n[D_PP] > m->layers)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --pp %llu is more than the %llu layers of "
                           "%s",
                           (unsigned long long)g->n[D_PP], (unsigned long long)m->layers, mn);
  if (m->seq % g->n[D_SP])
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --sp %llu does not divide the sequence "
                           "length %llu",
                           (unsigned long long)g->n[D_SP], (unsigned long long)m->seq);
  if (m->experts == 0 && g->n[D_EP] > 1)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --ep %llu needs a mixture-of-experts "
                           "model; %s is dense",
                           (unsigned long long)g->n[D_EP], mn);
  if (m->experts && (m->experts % g->n[D_EP] || !m->top_k || m->top_k > m->experts))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen llm: --ep %llu must divide the %llu experts of "
                           "%s (and top-k %llu must be 1..experts)",
                           (unsigned long long)g->n[D_EP], (unsigned long long)m->experts, mn,
                           (unsigned long long)m->top_k);
  if (o->zero < 0 || o->zero > 3)
    return etsim_error_set(err, ETSIM_EINVAL, "gen llm: --zero %d is not 0..3", o->zero);
  /* Sizes are counted in 64-bit integers: refuse a model whose largest
   * count (FLOPs of one iteration, bytes of its parameters) would not fit,
   * and layer counts that would only make the output huge. */
  if (m->layers > GEN_LLM_MAX_LAYERS)
    return etsim_error_set(err, ETSIM_ERANGE, "gen llm: %s: %llu layers is more than %u", mn,
                           (unsigned long long)m->layers, GEN_LLM_MAX_LAYERS);
  {
    double h = (double)m->hidden, f = (double)m->ffn, L = (double)m->layers, V = (double)m->vocab;
    double E = m->experts ? (double)m->experts : 1;
    double tok = (double)(o->mbs ? o->mbs : 1) * (double)m->seq; /* one micro-batch */
    double layer = 6 * (4 * h * h + 3 * h * f * E) * tok + 12 * tok * (double)m->seq * h;
    double flops = fmax(layer, 6 * V * h * tok);
    double bytes =
        (L * (4 * h * h + 3 * h * f * E) + 2 * V * h) * 8 * (o->dtype_bytes ? o->dtype_bytes : 2);
    if (!(flops < 0x1p62) || !(bytes < 0x1p62))
      return etsim_error_set(err, ETSIM_ERANGE,
                             "gen llm: %s: a layer of one micro-batch counts %.3g FLOPs and the "
                             "parameters and their state %.3g bytes, beyond the 2^62 that 64-bit "
                             "counts hold (check --hidden, --ffn, --seq, --vocab, --mbs)",
                             mn, flops, bytes);
  }
  g->h = m->hidden;
  g->d = m->hidden / m->heads;
  g->kv_l = m->kv_heads / t;
  g->f = m->ffn;
  /* The vocabulary is padded to a multiple of TP (Megatron pads further,
   * to 128 x TP; this keeps the published size whenever it divides). */
  g->V = (m->vocab + t - 1) / t * t;
  g->s = m->seq;
  g->sl = m->seq / g->n[D_SP];
  g->b = o->mbs ? o->mbs : 1;
  g->E = m->experts;
  g->E_l = m->experts / g->n[D_EP];
  g->k = m->top_k;
  g->e = o->dtype_bytes ? o->dtype_bytes : 2;
  g->M = o->microbatches ? o->microbatches : (uint32_t)g->n[D_PP];
  double peak = o->peak_tflops > 0 ? o->peak_tflops : 989.0;
  double bw = o->mem_gbps > 0 ? o->mem_gbps : 3350.0;
  g->peak_flops_per_ns = peak * 1e3;
  g->bytes_per_ns = bw;
  /* Communicators: kinds whose effective dimensions coincide share ids. */
  uint32_t next = 1;
  for (int k = 0; k < N_KINDS; k++) {
    unsigned eff = 0;
    for (int d = 0; d < N_DIMS; d++)
      if ((kind_mask[k] & (1u << d)) && g->n[d] > 1) eff |= 1u << d;
    g->mask[k] = eff;
    g->gsize[k] = group_size(g, eff);
    g->first_id[k] = 0;
    if (g->gsize[k] < 2) continue;
    for (int j = 0; j < k; j++)
      if (g->mask[j] == eff && g->first_id[j]) g->first_id[k] = g->first_id[j];
    if (!g->first_id[k]) {
      g->first_id[k] = next;
      next += (uint32_t)(g->npus / g->gsize[k]);
    }
  }
  g->n_groups_total = next - 1;
  return 0;
}

/* ---------------------------------------------------------- emission */

typedef struct {
  const llm_t *g;
  etsim_et_buf_t *buf;
  etsim_et_nb_t *b;
  uint64_t next_id;
  uint64_t cur;            /* last node of the compute chain */
  uint64_t last_grad_comm; /* gradient collectives are kept in one order */
  char pg[N_KINDS][16];    /* "" when the rank's group has one member */
  uint64_t rank, c[N_DIMS];
  uint64_t stage, l0, l1; /* layers [l0, l1) */
  char name[128];
  etsim_error_t *err;
  int rc;
  /* --tensors: (name, bytes) pairs for the next node's "outputs" [0] and
   * "inputs" [1] (ASTRA-sim's tensor attributes), the model states the
   * first node writes, and the ZeRO-3 gathers of the current layer */
  char tname[2][8][64], tsize[2][8][24];
  const char *tv[2][16];
  int tn[2];
  uint64_t state[3];
  int state_done;
  char z3[2][64];
  uint64_t z3_bytes[2];
  int n_z3;
} rk_t;

/* Queue a tensor for the next node: written (in = 0) or read (in = 1). */
static void tens(rk_t *r, int in, const char *name, uint64_t bytes) {
  if (!r->g->o->tensors || !bytes || r->tn[in] == 8) return;
  int k = r->tn[in]++;
  size_t len = strlen(name);
  if (len >= sizeof r->tname[in][k]) len = sizeof r->tname[in][k] - 1;
  memcpy(r->tname[in][k], name, len);
  r->tname[in][k][len] = 0;
  snprintf(r->tsize[in][k], sizeof r->tsize[in][k], "%llu", (unsigned long long)bytes);
  r->tv[in][2 * k] = r->tname[in][k];
  r->tv[in][2 * k + 1] = r->tsize[in][k];
}

static uint64_t emit(rk_t *r) {
  if (r->rc) return NONE_ID;
  if (r->g->o->tensors && !r->state_done) {
    /* the model states live from the first node to the end */
    static const char *const what[3] = {"params", "grads", "optimizer"};
    r->state_done = 1;
    for (int k = 0; k < 3; k++) tens(r, 0, what[k], r->state[k]);
  }
  for (int in = 0; in < 2; in++)
    if (r->tn[in]) {
      etsim_attr_t *a = etsim_et_nb_attr(r->b, in ? "inputs" : "outputs", ETSIM_ATTR_STRING_LIST);
      a->v.list.n = (size_t)(2 * r->tn[in]);
      a->v.list.v = r->tv[in];
    }
  r->rc = etsim_et_enc_node(r->buf, &r->b->n, r->err);
  r->tn[0] = r->tn[1] = 0;
  if (r->rc) return NONE_ID;
  return r->next_id++;
}

static void deps2(rk_t *r, uint64_t a, uint64_t b) {
  if (a != NONE_ID) etsim_et_nb_dep(r->b, a);
  if (b != NONE_ID && b != a) etsim_et_nb_dep(r->b, b);
}

/* A compute node on the chain (after `cur`, `extra` and `extra2`). */
static uint64_t comp2(rk_t *r, uint64_t flops, uint64_t bytes, uint64_t extra, uint64_t extra2) {
  const llm_t *g = r->g;
  etsim_et_nb_start(r->b, r->next_id, ETSIM_ET_COMP_NODE, r->name);
  double ns = fmax((double)flops / g->peak_flops_per_ns, (double)bytes / g->bytes_per_ns);
  etsim_et_nb_bool(r->b, "is_cpu_op", 0);
  etsim_et_nb_i64(r->b, "num_ops", (int64_t)flops);
  etsim_et_nb_u64(r->b, "tensor_size", bytes);
  etsim_et_nb_time_ns(r->b, (uint64_t)llround(ns));
  deps2(r, r->cur, extra);
  if (extra2 != NONE_ID && extra2 != extra && extra2 != r->cur) etsim_et_nb_dep(r->b, extra2);
  uint64_t id = emit(r);
  r->cur = id;
  return id;
}

static uint64_t comp(rk_t *r, uint64_t flops, uint64_t bytes, uint64_t extra) {
  return comp2(r, flops, bytes, extra, NONE_ID);
}

/* A collective on communicator kind k (none when the group is one rank).
 * On the chain when `chain`, else hanging off `dep`. */
static uint64_t coll(rk_t *r, int type, uint64_t size, int k, int chain, uint64_t dep) {
  if (!r->pg[k][0]) return NONE_ID;
  etsim_et_nb_start(r->b, r->next_id, ETSIM_ET_COMM_COLL_NODE, r->name);
  etsim_et_nb_bool(r->b, "is_cpu_op", 0);
  etsim_et_nb_i64(r->b, "comm_type", type);
  etsim_et_nb_i64(r->b, "comm_size", (int64_t)size);
  etsim_et_nb_str(r->b, "pg_name", r->pg[k]);
  if (chain) deps2(r, r->cur, dep);
  else deps2(r, dep, NONE_ID);
  uint64_t id = emit(r);
  if (chain && id != NONE_ID) r->cur = id;
  return id;
}

static uint64_t p2p(rk_t *r, int send, uint64_t peer, uint64_t tag, uint64_t size, uint64_t dep) {
  etsim_et_nb_start(r->b, r->next_id, send ? ETSIM_ET_COMM_SEND_NODE : ETSIM_ET_COMM_RECV_NODE,
                    r->name);
  etsim_et_nb_bool(r->b, "is_cpu_op", 0);
  etsim_et_nb_i32(r->b, "comm_src", (int32_t)(send ? r->rank : peer));
  etsim_et_nb_i32(r->b, "comm_dst", (int32_t)(send ? peer : r->rank));
  etsim_et_nb_i32(r->b, "comm_tag", (int32_t)tag);
  etsim_et_nb_i64(r->b, "comm_size", (int64_t)size);
  deps2(r, dep, NONE_ID);
  return emit(r);
}

#define NAME(r, ...) snprintf((r)->name, sizeof(r)->name, __VA_ARGS__)

/* Names are built from a prefix ("L12_mb3_fwd_") and a suffix by copying:
 * formatting millions of them with snprintf cost more than encoding. */
static char *put_u(char *p, uint64_t v) {
  char t[24];
  int n = 0;
  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = t[--n];
  return p;
}

static void mkpre(char *out, int with_layer, uint64_t l, uint32_t mb, const char *ph) {
  char *p = out;
  if (with_layer) {
    *p++ = 'L';
    p = put_u(p, l);
    *p++ = '_';
  }
  memcpy(p, "mb", 2);
  p = put_u(p + 2, mb);
  *p++ = '_';
  size_t n = strlen(ph);
  memcpy(p, ph, n);
  p += n;
  *p++ = '_';
  *p = 0;
}

static void nm(rk_t *r, const char *pre, const char *suffix) {
  size_t a = strlen(pre), b = strlen(suffix);
  memcpy(r->name, pre, a);
  memcpy(r->name + a, suffix, b + 1);
}

/* Matrix parameters of one layer on this rank: dense (attention, router)
 * and expert parts. */
static uint64_t layer_dense_params(const llm_t *g) {
  uint64_t t = g->n[D_TP];
  uint64_t p = g->h * (g->h + 2 * g->kv_l * t * g->d) / t + g->h * g->h / t;
  if (g->E) p += g->h * g->E; /* router, replicated over TP */
  else p += (g->m->gated ? 3 : 2) * g->h * g->f / t;
  return p;
}

static uint64_t layer_expert_params(const llm_t *g) {
  return g->E ? g->E_l * 3 * g->h * g->f / g->n[D_TP] : 0;
}

/* Forward FLOPs and bytes of the attention block (QKV, core, projection),
 * and of the MLP block, for one micro-batch on this rank. */
static void attn_cost(const llm_t *g, uint64_t *qkv_f, uint64_t *core_f, uint64_t *qkv_b,
                      uint64_t *core_b) {
  uint64_t t = g->n[D_TP], tok = g->b * g->sl, hl = g->h / t;
  uint64_t qkv_cols = hl + 2 * g->kv_l * g->d;
  *qkv_f = 2 * tok * g->h * qkv_cols;
  *core_f = 4 * tok * g->s * hl + 2 * tok * hl * g->h;
  *qkv_b = g->e * (tok * g->h + g->h * qkv_cols + tok * qkv_cols);
  *core_b = g->e * (2 * tok * qkv_cols + 2 * g->b * g->s * g->kv_l * g->d + hl * g->h + tok * g->h);
}

static void mlp_cost(const llm_t *g, uint64_t *flops, uint64_t *bytes, uint64_t *router_f) {
  uint64_t t = g->n[D_TP], tok = g->b * g->sl, fl = g->f / t;
  uint64_t mats = g->m->gated ? 3 : 2;
  if (g->E) {
    uint64_t at = tok * g->k; /* token-expert assignments on this rank */
    *flops = 2 * at * g->h * fl * 3;
    *bytes = g->e * (3 * g->E_l * g->h * fl + 2 * at * g->h + 2 * at * fl);
    *router_f = 2 * tok * g->h * g->E;
  } else {
    *flops = 2 * tok * g->h * fl * mats;
    *bytes = g->e * (mats * g->h * fl + 2 * tok * g->h + tok * fl * (mats - 1));
    *router_f = 0;
  }
}

/* ZeRO 3: all-gather a layer's parameters (off the chain, in order).
 * With --tensors each gather writes the layer's whole parameters, named
 * from `what`, read (and so freed) by the layer's last compute. */
static uint64_t zero3_gather(rk_t *r, uint64_t prev, const char *what) {
  const llm_t *g = r->g;
  uint64_t dep = prev != NONE_ID ? prev : r->cur, last = NONE_ID;
  r->n_z3 = 0;
  if (r->pg[K_DPD][0]) {
    snprintf(r->z3[r->n_z3], sizeof r->z3[0], "%.50s.dense", what);
    r->z3_bytes[r->n_z3] = layer_dense_params(g) * g->e;
    tens(r, 0, r->z3[r->n_z3], r->z3_bytes[r->n_z3]);
    r->n_z3++;
    last = coll(r, ETSIM_COLL_ALL_GATHER, layer_dense_params(g) * g->e / g->gsize[K_DPD], K_DPD, 0,
                dep);
  }
  if (g->E && r->pg[K_DPE][0]) {
    snprintf(r->z3[r->n_z3], sizeof r->z3[0], "%.50s.experts", what);
    r->z3_bytes[r->n_z3] = layer_expert_params(g) * g->e;
    tens(r, 0, r->z3[r->n_z3], r->z3_bytes[r->n_z3]);
    r->n_z3++;
    uint64_t x = coll(r, ETSIM_COLL_ALL_GATHER, layer_expert_params(g) * g->e / g->gsize[K_DPE],
                      K_DPE, 0, last != NONE_ID ? last : dep);
    last = x != NONE_ID ? x : last;
  }
  return last;
}

/* The ZeRO-3 parameters gathered last are read by the next node. */
static void read_z3(rk_t *r) {
  for (int k = 0; k < r->n_z3; k++) tens(r, 1, r->z3[k], r->z3_bytes[k]);
  r->n_z3 = 0;
}

static uint64_t act_layer_bytes(const llm_t *g);
static uint64_t act_ckpt_bytes(const llm_t *g);

/* Forward of layer l for micro-batch mb (phase "fwd" or "recompute"). */
static uint64_t layer_fwd(rk_t *r, uint64_t l, uint32_t mb, const char *ph, uint64_t dep,
                          uint64_t dep2) {
  const llm_t *g = r->g;
  uint64_t qf, cf, qb, cb, mf, mbytes, rf;
  attn_cost(g, &qf, &cf, &qb, &cb);
  mlp_cost(g, &mf, &mbytes, &rf);
  uint64_t act = g->b * g->sl * g->h * g->e;
  char pre[64], tn[64];
  mkpre(pre, 1, l, mb, ph);
  /* --tensors: the first compute writes what the layer keeps for its
   * backward (everything, or only its input under recomputation; the
   * recomputed forward writes everything again) */
  int re = ph[0] == 'r';
  snprintf(tn, sizeof tn, "%s.L%llu.mb%u", re ? "actr" : "act", (unsigned long long)l, mb);
  tens(r, 0, tn, g->o->recompute && !re ? act_ckpt_bytes(g) : act_layer_bytes(g));
  int z3 = r->n_z3 && !re; /* the recomputation leaves them to the backward */
  if (r->pg[K_SP][0]) {
    nm(r, pre, "qkv");
    comp2(r, qf, qb, dep, dep2);
    nm(r, pre, "cp_allgather_kv");
    coll(r, ETSIM_COLL_ALL_GATHER, 2 * g->b * g->sl * g->kv_l * g->d * g->e, K_SP, 1, NONE_ID);
    nm(r, pre, "attn");
    comp(r, cf, cb, NONE_ID);
  } else {
    nm(r, pre, "attn");
    comp2(r, qf + cf, qb + cb, dep, dep2);
  }
  nm(r, pre, "attn_tp_allreduce");
  coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
  if (g->E) {
    nm(r, pre, "router");
    comp(r, rf, g->e * (g->b * g->sl * (g->h + g->E) + g->h * g->E), NONE_ID);
    uint64_t a2a = g->b * g->sl * g->k * g->h * g->e;
    nm(r, pre, "ep_dispatch");
    coll(r, ETSIM_COLL_ALL_TO_ALL, a2a, K_EP, 1, NONE_ID);
    nm(r, pre, "experts");
    if (z3) read_z3(r);
    comp(r, mf, mbytes, NONE_ID);
    nm(r, pre, "ep_combine");
    coll(r, ETSIM_COLL_ALL_TO_ALL, a2a, K_EP, 1, NONE_ID);
  } else {
    nm(r, pre, "mlp");
    if (z3) read_z3(r);
    comp(r, mf, mbytes, NONE_ID);
  }
  nm(r, pre, "mlp_tp_allreduce");
  coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
  return r->cur;
}

/* Gradient synchronisation of layer l's buckets after its backward. */
static void grad_sync(rk_t *r, const char *what, uint64_t dense_params, uint64_t expert_params,
                      uint32_t mb) {
  const llm_t *g = r->g;
  int type = g->o->zero ? ETSIM_COLL_REDUCE_SCATTER : ETSIM_COLL_ALL_REDUCE;
  uint64_t after = r->cur;
  for (int part = 0; part < 2; part++) {
    uint64_t p = part ? expert_params : dense_params;
    int k = part ? K_DPE : K_DPD;
    if (!p || !r->pg[k][0]) continue;
    NAME(r, "%s_mb%u_grad_%s%s", what, mb,
         type == ETSIM_COLL_ALL_REDUCE ? "allreduce" : "reducescatter", part ? "_experts" : "");
    /* After the layer's backward and the previous gradient collective, so
     * every member issues them in one order. */
    etsim_et_nb_start(r->b, r->next_id, ETSIM_ET_COMM_COLL_NODE, r->name);
    etsim_et_nb_bool(r->b, "is_cpu_op", 0);
    etsim_et_nb_i64(r->b, "comm_type", type);
    etsim_et_nb_i64(r->b, "comm_size", (int64_t)(p * g->e));
    etsim_et_nb_str(r->b, "pg_name", r->pg[k]);
    deps2(r, after, r->last_grad_comm);
    uint64_t id = emit(r);
    if (id != NONE_ID) r->last_grad_comm = id;
  }
}

static uint64_t layers_on_stage(const llm_t *g, uint64_t stage, uint64_t *first) {
  uint64_t L = g->m->layers, P = g->n[D_PP], q = L / P, rem = L % P;
  *first = stage * q + (stage < rem ? stage : rem);
  return q + (stage < rem ? 1 : 0);
}

static void fwd_pass(rk_t *r, uint32_t mb) {
  const llm_t *g = r->g;
  char pre[64];
  uint64_t act = g->b * g->sl * g->h * g->e;
  uint64_t P = g->n[D_PP], pstride = g->stride[D_PP];
  uint64_t recv = NONE_ID;
  if (r->stage > 0) {
    mkpre(pre, 0, 0, mb, "fwd");
    nm(r, pre, "recv_act");
    recv = p2p(r, 0, r->rank - pstride, 2ull * mb, act, NONE_ID);
  }
  if (r->stage == 0) {
    mkpre(pre, 0, 0, mb, "fwd");
    nm(r, pre, "embed");
    comp(r, 0, g->e * (2 * g->b * g->sl * g->h) + 8 * g->b * g->sl, recv);
    mkpre(pre, 0, 0, mb, "fwd");
    nm(r, pre, "embed_tp_allreduce");
    coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
    recv = NONE_ID;
  }
  uint64_t ag = NONE_ID;
  for (uint64_t l = r->l0; l < r->l1; l++) {
    if (g->o->zero == 3) {
      /* Gathers run ahead of the compute, one after another. */
      mkpre(pre, 1, l, mb, "fwd");
      nm(r, pre, "zero3_allgather");
      char what[64];
      snprintf(what, sizeof what, "z3.L%llu.mb%u.fwd", (unsigned long long)l, mb);
      uint64_t x = zero3_gather(r, ag, what);
      ag = x != NONE_ID ? x : ag;
    }
    layer_fwd(r, l, mb, "fwd", recv, ag);
    recv = NONE_ID;
  }
  if (r->stage == P - 1) {
    uint64_t t = g->n[D_TP], tok = g->b * g->sl;
    mkpre(pre, 0, 0, mb, "fwd");
    nm(r, pre, "lm_head");
    comp(r, 2 * tok * g->h * (g->V / t), g->e * (tok * g->h + g->h * g->V / t + tok * g->V / t),
         NONE_ID);
  } else {
    mkpre(pre, 0, 0, mb, "fwd");
    nm(r, pre, "send_act");
    p2p(r, 1, r->rank + pstride, 2ull * mb, act, r->cur);
  }
}

static void bwd_pass(rk_t *r, uint32_t mb, int last_mb) {
  const llm_t *g = r->g;
  char pre[64];
  uint64_t act = g->b * g->sl * g->h * g->e;
  uint64_t P = g->n[D_PP], pstride = g->stride[D_PP], t = g->n[D_TP];
  uint64_t tok = g->b * g->sl;
  uint64_t recv = NONE_ID;
  int sync = g->o->zero == 3 || last_mb;
  if (r->stage < P - 1) {
    mkpre(pre, 0, 0, mb, "bwd");
    nm(r, pre, "recv_grad");
    recv = p2p(r, 0, r->rank + pstride, 2ull * mb + 1, act, NONE_ID);
  } else {
    mkpre(pre, 0, 0, mb, "bwd");
    nm(r, pre, "lm_head");
    comp(r, 4 * tok * g->h * (g->V / t), 2 * g->e * (tok * g->h + g->h * g->V / t + tok * g->V / t),
         NONE_ID);
    mkpre(pre, 0, 0, mb, "bwd");
    nm(r, pre, "lm_head_tp_allreduce");
    coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
    if (sync) grad_sync(r, "lm_head", g->h * g->V / t, 0, mb);
  }
  uint64_t qf, cf, qb, cb, mf, mbytes, rf;
  attn_cost(g, &qf, &cf, &qb, &cb);
  mlp_cost(g, &mf, &mbytes, &rf);
  for (uint64_t l = r->l1; l-- > r->l0;) {
    uint64_t dep = recv, ag = NONE_ID;
    recv = NONE_ID;
    if (g->o->zero == 3) {
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "zero3_allgather");
      char what[64];
      snprintf(what, sizeof what, "z3.L%llu.mb%u.bwd", (unsigned long long)l, mb);
      ag = zero3_gather(r, NONE_ID, what);
    }
    if (g->o->recompute) {
      layer_fwd(r, l, mb, "recompute", dep, ag);
      dep = ag = NONE_ID;
    }
    if (g->E) {
      uint64_t a2a = tok * g->k * g->h * g->e;
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "ep_combine");
      coll(r, ETSIM_COLL_ALL_TO_ALL, a2a, K_EP, 1, dep);
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "experts");
      comp2(r, 2 * mf, 2 * mbytes, dep, ag);
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "ep_dispatch");
      coll(r, ETSIM_COLL_ALL_TO_ALL, a2a, K_EP, 1, NONE_ID);
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "router");
      comp(r, 2 * rf, 2 * g->e * (tok * (g->h + g->E) + g->h * g->E), NONE_ID);
    } else {
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "mlp");
      comp2(r, 2 * mf, 2 * mbytes, dep, ag);
    }
    mkpre(pre, 1, l, mb, "bwd");
    nm(r, pre, "mlp_tp_allreduce");
    coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
    /* --tensors: the layer's last backward compute frees what its
     * forward (and recomputation, and ZeRO-3 gather) left */
    char tn[64];
    snprintf(tn, sizeof tn, "act.L%llu.mb%u", (unsigned long long)l, mb);
    if (r->pg[K_SP][0]) {
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "attn");
      comp(r, 2 * cf, 2 * cb, NONE_ID);
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "cp_reducescatter_kv");
      coll(r, ETSIM_COLL_REDUCE_SCATTER, 2 * g->b * g->sl * g->kv_l * g->d * g->e * g->n[D_SP],
           K_SP, 1, NONE_ID);
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "qkv");
      tens(r, 1, tn, g->o->recompute ? act_ckpt_bytes(g) : act_layer_bytes(g));
      snprintf(tn, sizeof tn, "actr.L%llu.mb%u", (unsigned long long)l, mb);
      if (g->o->recompute) tens(r, 1, tn, act_layer_bytes(g));
      read_z3(r);
      comp(r, 2 * qf, 2 * qb, NONE_ID);
    } else {
      mkpre(pre, 1, l, mb, "bwd");
      nm(r, pre, "attn");
      tens(r, 1, tn, g->o->recompute ? act_ckpt_bytes(g) : act_layer_bytes(g));
      snprintf(tn, sizeof tn, "actr.L%llu.mb%u", (unsigned long long)l, mb);
      if (g->o->recompute) tens(r, 1, tn, act_layer_bytes(g));
      read_z3(r);
      comp(r, 2 * (qf + cf), 2 * (qb + cb), NONE_ID);
    }
    mkpre(pre, 1, l, mb, "bwd");
    nm(r, pre, "attn_tp_allreduce");
    coll(r, ETSIM_COLL_ALL_REDUCE, act, K_TP, 1, NONE_ID);
    if (sync) {
      char what[32];
      snprintf(what, sizeof what, "L%llu", (unsigned long long)l);
      grad_sync(r, what, layer_dense_params(g), layer_expert_params(g), mb);
    }
  }
  if (r->stage == 0) {
    mkpre(pre, 0, 0, mb, "bwd");
    nm(r, pre, "embed");
    comp(r, 0, g->e * (2 * tok * g->h) + 8 * tok, NONE_ID);
    if (sync) grad_sync(r, "embed", g->h * g->V / t, 0, mb);
  } else {
    mkpre(pre, 0, 0, mb, "bwd");
    nm(r, pre, "send_grad");
    p2p(r, 1, r->rank - pstride, 2ull * mb + 1, act, r->cur);
  }
}

/* Parameters on this rank (matrices), dense and expert parts. */
static void rank_params(const rk_t *r, uint64_t *dense, uint64_t *expert) {
  const llm_t *g = r->g;
  uint64_t n = r->l1 - r->l0, t = g->n[D_TP];
  *dense = n * layer_dense_params(g);
  *expert = n * layer_expert_params(g);
  if (r->stage == 0) *dense += g->h * g->V / t;
  if (r->stage == g->n[D_PP] - 1) *dense += g->h * g->V / t;
}

static int build_rank(const llm_t *g, uint64_t rank, etsim_et_buf_t *buf, etsim_et_nb_t *b,
                      uint64_t *nodes, etsim_error_t *err) {
  rk_t r;
  memset(&r, 0, sizeof r);
  r.g = g;
  r.buf = buf;
  r.b = b;
  r.err = err;
  r.rank = rank;
  r.cur = r.last_grad_comm = NONE_ID;
  uint64_t rem = rank;
  for (int d = 0; d < N_DIMS; d++) {
    r.c[d] = rem % g->n[d];
    rem /= g->n[d];
  }
  for (int k = 0; k < N_KINDS; k++)
    if (g->first_id[k])
      snprintf(r.pg[k], sizeof r.pg[k], "%llu",
               (unsigned long long)(g->first_id[k] + group_index(g, g->mask[k], r.c)));
  r.stage = r.c[D_PP];
  uint64_t n = layers_on_stage(g, r.stage, &r.l0);
  r.l1 = r.l0 + n;
  if (g->o->tensors) {
    etsim_gen_llm_mem_t mem;
    etsim_gen_llm_memory(g->o, (uint32_t)r.stage, &mem, NULL);
    r.state[0] = mem.params;
    r.state[1] = mem.grads;
    r.state[2] = mem.optimizer;
  }
  etsim_et_meta_t meta = {"1.0.0", 0, NULL};
  buf->n = 0;
  int rc = etsim_et_enc_meta(buf, &meta, err);
  if (rc) return rc;
  uint32_t M = g->M;
  uint64_t P = g->n[D_PP];
  if (g->o->schedule == ETSIM_GEN_SCHED_GPIPE) {
    for (uint32_t m = 0; m < M; m++) fwd_pass(&r, m);
    for (uint32_t m = 0; m < M; m++) bwd_pass(&r, m, m == M - 1);
  } else {
    uint64_t warm = P - r.stage - 1;
    if (warm > M) warm = M;
    uint32_t f = 0, bw = 0;
    for (; f < warm; f++) fwd_pass(&r, f);
    while (f < M) {
      fwd_pass(&r, f++);
      bwd_pass(&r, bw, bw == M - 1);
      bw++;
    }
    while (bw < M) {
      bwd_pass(&r, bw, bw == M - 1);
      bw++;
    }
  }
  /* Optimizer (Adam, mixed precision): 12 FLOPs and 16 bytes of state and
   * weights per parameter of this rank's shard. */
  uint64_t dense, expert;
  rank_params(&r, &dense, &expert);
  uint64_t shard = dense, xshard = expert;
  if (g->o->zero >= 1) {
    shard = dense / g->gsize[K_DPD];
    xshard = expert / g->gsize[K_DPE];
  }
  NAME(&r, "optimizer");
  comp(&r, 12 * (shard + xshard), 16 * (shard + xshard), r.last_grad_comm);
  if (g->o->zero == 1 || g->o->zero == 2) {
    uint64_t prev = r.cur;
    for (int part = 0; part < 2; part++) {
      uint64_t p = part ? expert : dense;
      int k = part ? K_DPE : K_DPD;
      if (!p || !r.pg[k][0]) continue;
      NAME(&r, "param_allgather%s", part ? "_experts" : "");
      uint64_t id = coll(&r, ETSIM_COLL_ALL_GATHER, p * g->e / g->gsize[k], k, 0, prev);
      if (id != NONE_ID) prev = id;
    }
  }
  *nodes = r.next_id;
  return r.rc;
}

static int write_groups(const llm_t *g, const char *path, etsim_error_t *err) {
  uint64_t ng = g->n_groups_total;
  if (!ng) {
    size_t off0[1] = {0};
    return etsim_et_comm_groups_write(path, 0, 1, off0, NULL, err);
  }
  size_t *off = etsim_malloc((ng + 1) * sizeof *off);
  uint32_t *ranks = NULL;
  uint64_t total = 0;
  for (int k = 0; k < N_KINDS; k++) {
    int first = g->first_id[k] != 0;
    for (int j = 0; j < k && first; j++)
      if (g->first_id[j] == g->first_id[k]) first = 0;
    if (first) total += g->npus;
  }
  ranks = etsim_malloc(total * sizeof *ranks);
  if (!off || !ranks) {
    etsim_free(off);
    etsim_free(ranks);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  /* Group id -> members: walk every rank once per kind, placing it in its
   * group in rank order (counting sort by group index). */
  size_t pos = 0;
  uint64_t gid = 0;
  for (int k = 0; k < N_KINDS; k++) {
    int first = g->first_id[k] != 0;
    for (int j = 0; j < k && first; j++)
      if (g->first_id[j] == g->first_id[k]) first = 0;
    if (!first) continue;
    uint64_t gs = g->gsize[k], count = g->npus / gs;
    for (uint64_t q = 0; q < count; q++) off[gid + q] = pos + q * gs;
    uint64_t *fill = etsim_calloc(count, sizeof *fill);
    if (!fill) {
      etsim_free(off);
      etsim_free(ranks);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
    for (uint64_t rk = 0; rk < g->npus; rk++) {
      uint64_t c[N_DIMS], rem = rk;
      for (int d = 0; d < N_DIMS; d++) {
        c[d] = rem % g->n[d];
        rem /= g->n[d];
      }
      uint64_t q = group_index(g, g->mask[k], c);
      ranks[pos + q * gs + fill[q]++] = (uint32_t)rk;
    }
    etsim_free(fill);
    pos += g->npus;
    gid += count;
  }
  off[gid] = pos;
  int rc = etsim_et_comm_groups_write(path, gid, 1, off, ranks, err);
  etsim_free(off);
  etsim_free(ranks);
  return rc;
}

int etsim_gen_llm(const etsim_gen_llm_opts_t *o, etsim_et_set_report_t *rep, etsim_error_t *err) {
  llm_t g;
  int rc = setup(&g, o, err);
  if (rc) return rc;
  if (!o->prefix) return etsim_error_set(err, ETSIM_EINVAL, "gen llm: no output prefix");
  etsim_et_set_writer_t *set;
  if ((rc = etsim_et_set_writer_open(&set, o->prefix, (size_t)g.npus, o->format, err))) return rc;
  etsim_et_nb_t *b = etsim_malloc(sizeof *b);
  etsim_et_buf_t buf = {0};
  char *gpath = NULL;
  uint64_t written = 0, all = 0, rank_nodes = 0;
  if (!b) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  /* A rank's trace is fixed by its stage, its communicators and, with
   * pipeline stages, its own number (send/recv peers).  So without
   * pipelining, ranks in the same groups of every kind share a file; this
   * is decided from the group indices instead of comparing bytes. */
  etsim_u64map_t first;
  etsim_u64map_init(&first);
  for (uint64_t r = 0; r < g.npus && !rc; r++) {
    uint64_t nodes, c[N_DIMS], sig = 0, rem = r;
    for (int d = 0; d < N_DIMS; d++) {
      c[d] = rem % g.n[d];
      rem /= g.n[d];
    }
    for (int k = 0; k < N_KINDS; k++)
      if (g.first_id[k]) sig = etsim_hash_u64(sig * 1000003 + group_index(&g, g.mask[k], c) + 1);
    uint32_t like;
    if (o->format == ETSIM_ET_OUT_MANIFEST && g.n[D_PP] == 1 &&
        etsim_u64map_get(&first, sig, &like)) {
      uint64_t c2[N_DIMS];
      rem = like;
      for (int d = 0; d < N_DIMS; d++) {
        c2[d] = rem % g.n[d];
        rem /= g.n[d];
      }
      int same = 1;
      for (int k = 0; k < N_KINDS; k++)
        if (g.first_id[k] && group_index(&g, g.mask[k], c) != group_index(&g, g.mask[k], c2))
          same = 0;
      if (same) {
        rc = etsim_et_set_writer_rank_like(set, (size_t)r, like, NULL, 0, err);
        all += rank_nodes; /* without pipelining every rank has as many */
        continue;
      }
    }
    if ((rc = build_rank(&g, r, &buf, b, &nodes, err))) break;
    if (o->format == ETSIM_ET_OUT_RANK_FILES)
      rc = etsim_et_set_writer_rank(set, (size_t)r, buf.p, buf.n, err);
    else if (!(rc = etsim_et_set_writer_begin_rank(set, (size_t)r, err)) &&
             !(rc = etsim_et_set_writer_write(set, buf.p, buf.n, err)))
      rc = etsim_et_set_writer_end_rank(set, err);
    if (g.n[D_PP] == 1 && etsim_u64map_put(&first, sig, (uint32_t)r, NULL) < 0)
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    rank_nodes = nodes;
    all += nodes;
    written += nodes;
  }
  etsim_u64map_free(&first);
  if (rc) goto fail;
  const char *gp = o->comm_group_path;
  if (!gp) {
    if ((rc = etsim_et_comm_groups_path(o->prefix, 0, &gpath, err))) goto fail;
    gp = gpath;
  }
  if ((rc = write_groups(&g, gp, err))) goto fail;
  etsim_et_set_report_t rr = {(size_t)g.npus, etsim_et_set_writer_n_files(set), written,
                              etsim_et_set_writer_bytes(set), all};
  rc = etsim_et_set_writer_commit(set, err);
  set = NULL;
  if (rc) remove(gp);
  else if (rep) *rep = rr;
fail:
  etsim_et_set_writer_abort(set);
  etsim_et_buf_free(&buf);
  etsim_free(b);
  etsim_free(gpath);
  return rc;
}

/* ------------------------------------------------------------ memory */

/* What one layer keeps for the backward of one micro-batch (the header's
 * formula, after Korthikanti et al. 2022, "Reducing Activation
 * Recomputation in Large Transformer Models", eq. 2): replicated inputs of
 * the two blocks and norms and dropout masks (10 s b h), the attention and
 * MLP internals split over TP, and the attention scores unless flash. */
static uint64_t act_layer_bytes(const llm_t *g) {
  uint64_t t = g->n[D_TP], sb = g->sl * g->b, h = g->h;
  uint64_t kvd = g->kv_l * t * g->d; /* keys' (and values') width */
  uint64_t mlp = (g->m->gated ? 6 : 4) * g->f * (g->E ? g->k : 1);
  uint64_t bytes = 10 * sb * h + sb * (4 * h + 4 * kvd + mlp) / t;
  if (!g->o->flash) bytes += 5 * g->m->heads * g->sl * g->s * g->b / t;
  return bytes * g->e / 2;
}

/* Full recomputation keeps only the layer's input. */
static uint64_t act_ckpt_bytes(const llm_t *g) { return 2 * g->sl * g->b * g->h * g->e / 2; }

int etsim_gen_llm_memory(const etsim_gen_llm_opts_t *o, uint32_t stage, etsim_gen_llm_mem_t *out,
                         etsim_error_t *err) {
  llm_t g;
  int rc = setup(&g, o, err);
  if (rc) return rc;
  if (stage >= g.n[D_PP])
    return etsim_error_set(err, ETSIM_EINVAL, "gen llm: stage %u of %llu pipeline stages", stage,
                           (unsigned long long)g.n[D_PP]);
  memset(out, 0, sizeof *out);
  uint64_t first, t = g.n[D_TP];
  uint64_t nl = layers_on_stage(&g, stage, &first);
  uint64_t dense = nl * layer_dense_params(&g), expert = nl * layer_expert_params(&g);
  if (stage == 0) dense += g.h * g.V / t;
  if (stage == g.n[D_PP] - 1) dense += g.h * g.V / t;
  uint64_t nd = g.gsize[K_DPD] ? g.gsize[K_DPD] : 1, ne = g.gsize[K_DPE] ? g.gsize[K_DPE] : 1;
  /* model states: e bytes of parameters and of gradients, 12 of
   * optimizer state per parameter; sharded from ZeRO 3, 2 and 1 on */
  out->params = o->zero >= 3 ? (dense / nd + expert / ne) * g.e : (dense + expert) * g.e;
  out->grads = o->zero >= 2 ? (dense / nd + expert / ne) * g.e : (dense + expert) * g.e;
  out->optimizer = o->zero >= 1 ? (dense / nd + expert / ne) * 12 : (dense + expert) * 12;
  out->layers = nl;
  uint64_t warm = g.n[D_PP] - stage;
  out->in_flight = o->schedule == ETSIM_GEN_SCHED_GPIPE || warm > g.M ? g.M : (uint32_t)warm;
  out->act_layer = o->recompute ? act_ckpt_bytes(&g) : act_layer_bytes(&g);
  out->act_working = o->recompute ? act_layer_bytes(&g) : 0;
  out->activations = nl * out->in_flight * out->act_layer + out->act_working;
  out->zero3_layer = o->zero >= 3 ? (layer_dense_params(&g) + layer_expert_params(&g)) * g.e : 0;
  out->total = out->params + out->grads + out->optimizer + out->activations + out->zero3_layer;
  return 0;
}
