/* Planning the parallelism of a transformer: the candidates.
 *
 * Every split of the NPUs into DP x TP x PP (x SP x EP) that the model
 * allows (TP divides the heads, key/value heads and FFN; PP at most the
 * layers; SP divides the sequence; EP the experts), every micro-batch size
 * that divides the global batch, every ZeRO stage and with or without
 * recomputation.  Two prunings, both stated to the user:
 *
 *  - memory: the generator's model (etsim_gen_llm_memory, docs/sim.md
 *    "Memory capacity"), the largest pipeline stage against the capacity;
 *  - dominance: of two candidates with the same split and micro-batching,
 *    one is skipped when the other fits and does no more work and moves no
 *    more bytes by construction of the generator — ZeRO 2 makes the same
 *    trace as ZeRO 1 (it only saves memory), ZeRO 3 adds parameter
 *    gathers to ZeRO 2's traffic, and recomputation adds a forward pass
 *    (and its TP collectives) to the same ZeRO stage.  ZeRO 0 and 1 are not
 *    comparable (1 shards the optimizer step, 0 all-reduces instead of
 *    reduce-scatter + all-gather), so both are kept.
 *
 * The survivors become a sweep spec (a zipped axis) that the sweep runs.
 */
#include "sweep/sweep_int.h"

#include "etsim/gen.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Global batches the models were trained with, in sequences (their
 * papers): GPT-3 175B 3.2 M tokens of 2,048 (Brown et al. 2020, table
 * 2.1); Llama 3 8 M tokens of 8,192 in the middle of pre-training (Llama 3
 * herd paper, section 3.4.1); Mixtral: not published, 4 M tokens assumed. */
static uint32_t published_batch(const char *preset, uint64_t seq) {
  if (!preset) return 0;
  if (!strcmp(preset, "gpt3-175b")) return 1536;
  if (!strncmp(preset, "llama3-", 7)) return 1024;
  if (!strcmp(preset, "mixtral-8x7b")) return (uint32_t)(4194304 / (seq ? seq : 32768));
  return 0;
}

static int model_of(const etsim_sweep_plan_opts_t *o, etsim_gen_llm_model_t *m,
                    etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  if (o->preset && strcmp(o->preset, "custom")) {
    int rc = etsim_gen_llm_preset(o->preset, m, err);
    if (rc) return rc;
  } else {
    m->name = "custom";
  }
  if (o->layers) m->layers = o->layers;
  if (o->hidden) m->hidden = o->hidden;
  if (o->heads) m->heads = o->heads;
  if (o->kv_heads) m->kv_heads = o->kv_heads;
  if (o->ffn) m->ffn = o->ffn;
  if (o->vocab) m->vocab = o->vocab;
  if (o->seq) m->seq = o->seq;
  if (o->experts) m->experts = o->experts;
  if (o->top_k) m->top_k = o->top_k;
  if (o->gated >= 0) m->gated = o->gated;
  if (!m->layers || !m->hidden || !m->heads || !m->kv_heads || !m->ffn || !m->vocab || !m->seq)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "plan: a custom model needs --layers, --hidden, --heads, --kv-heads, "
                           "--ffn, --vocab and --seq");
  return 0;
}

static void fill_opts(const etsim_sweep_plan_opts_t *o, const etsim_gen_llm_model_t *m,
                      const etsim_sweep_cand_t *c, etsim_gen_llm_opts_t *g) {
  memset(g, 0, sizeof *g);
  g->model = *m;
  g->dp = c->dp, g->tp = c->tp, g->pp = c->pp, g->sp = c->sp, g->ep = c->ep;
  g->microbatches = c->microbatches;
  g->mbs = c->mbs;
  g->schedule = o->schedule;
  g->zero = c->zero;
  g->recompute = c->recompute;
  g->peak_tflops = o->peak_tflops;
  g->mem_gbps = o->mem_gbps;
  g->flash = o->flash;
}

/* The largest stage's memory, or ETSIM_EINVAL when the generator refuses
 * the split. */
static int memory_of(const etsim_sweep_plan_opts_t *o, const etsim_gen_llm_model_t *m,
                     const etsim_sweep_cand_t *c, uint64_t *out) {
  etsim_gen_llm_opts_t g;
  fill_opts(o, m, c, &g);
  uint64_t worst = 0;
  for (uint32_t s = 0; s < c->pp; s++) {
    etsim_gen_llm_mem_t mem;
    int rc = etsim_gen_llm_memory(&g, s, &mem, NULL);
    if (rc) return rc;
    if (mem.total > worst) worst = mem.total;
  }
  *out = worst;
  return 0;
}

/* b does no more work and moves no more bytes than a (same split). */
static int dominates(const etsim_sweep_cand_t *b, const etsim_sweep_cand_t *a) {
  if (b->recompute > a->recompute) return 0;
  int zd = b->zero == a->zero || (b->zero == 1 && a->zero >= 2) || (b->zero == 2 && a->zero == 3);
  return zd && (b->zero != a->zero || b->recompute != a->recompute);
}

int etsim_sweep_plan_candidates(const etsim_sweep_plan_opts_t *o, etsim_sweep_cand_t **out,
                                size_t *n_out, etsim_sweep_plan_stats_t *st, etsim_error_t *err) {
  etsim_gen_llm_model_t m;
  int rc = model_of(o, &m, err);
  if (rc) return rc;
  memset(st, 0, sizeof *st);
  uint32_t N = o->npus;
  if (!N) return etsim_error_set(err, ETSIM_EINVAL, "plan: --npus is required");
  uint32_t B = o->global_batch ? o->global_batch : published_batch(o->preset, m.seq);
  if (!B) B = N;
  double hbm = o->hbm_gib > 0 ? o->hbm_gib : 80;
  st->global_batch = B;
  st->hbm_gib = hbm;
  uint64_t cap_bytes = (uint64_t)(hbm * 1073741824.0);
  uint32_t max_tp = o->max_tp ? o->max_tp : N, max_pp = o->max_pp ? o->max_pp : N;
  uint32_t max_sp = o->max_sp ? o->max_sp : 1, max_mbs = o->max_mbs ? o->max_mbs : 4;
  etsim_sweep_cand_t *v = NULL, layout[32];
  size_t n = 0, cap = 0;
  for (uint32_t tp = 1; tp <= N && tp <= max_tp; tp++) {
    if (N % tp || m.heads % tp || m.kv_heads % tp || m.ffn % tp) continue;
    for (uint32_t pp = 1; pp <= N / tp && pp <= max_pp && pp <= m.layers; pp++) {
      if ((N / tp) % pp) continue;
      for (uint32_t sp = 1; sp <= N / tp / pp && sp <= max_sp; sp++) {
        if ((N / tp / pp) % sp || m.seq % sp) continue;
        uint32_t rest = N / tp / pp / sp;
        for (uint32_t ep = 1; ep <= rest; ep++) {
          if (rest % ep) continue;
          if (ep > 1 && (!m.experts || m.experts % ep)) continue;
          uint32_t dp = rest / ep;
          st->layouts++;
          if (B % (dp * ep)) continue; /* the batch does not split over the replicas */
          uint32_t per = B / (dp * ep);
          for (uint32_t mbs = 1; mbs <= max_mbs && mbs <= per; mbs *= 2) {
            if (per % mbs) continue;
            /* this split and micro-batching: every ZeRO stage x recompute */
            size_t nl = 0;
            for (int rec = 0; rec < 2; rec++)
              for (int z = 0; z < 4; z++) {
                etsim_sweep_cand_t c = {dp, tp, pp, sp, ep, per / mbs, mbs, z, rec, 0};
                st->considered++;
                if (memory_of(o, &m, &c, &c.mem_bytes)) continue; /* the generator refuses */
                if (c.mem_bytes > cap_bytes) {
                  st->over_memory++;
                  continue;
                }
                layout[nl++] = c;
              }
            for (size_t i = 0; i < nl; i++) {
              int dom = 0;
              for (size_t j = 0; j < nl && !o->exhaustive && !dom; j++)
                dom = j != i && dominates(&layout[j], &layout[i]);
              if (dom) {
                st->dominated++;
                continue;
              }
              if (etsim_grow((void **)&v, &cap, n + 1, sizeof *v)) {
                etsim_free(v);
                return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
              }
              v[n++] = layout[i];
            }
          }
        }
      }
    }
  }
  st->kept = n;
  *out = v;
  *n_out = n;
  return 0;
}

static int put_list(FILE *f, const char *key, const etsim_sweep_cand_t *c, size_t n, size_t off,
                    int is_bool) {
  fprintf(f, "      %s: [", key);
  for (size_t i = 0; i < n; i++) {
    const char *p = (const char *)&c[i] + off;
    if (is_bool) fprintf(f, "%s%s", i ? ", " : "", *(const int *)p ? "true" : "false");
    else if (off == offsetof(etsim_sweep_cand_t, zero))
      fprintf(f, "%s%d", i ? ", " : "", *(const int *)p);
    else fprintf(f, "%s%u", i ? ", " : "", *(const uint32_t *)p);
  }
  fprintf(f, "]\n");
  return 0;
}

/* A path the spec can use from its own folder. */
static void abs_path(const char *p, char *out, size_t cap) {
  char *r = p ? realpath(p, NULL) : NULL;
  snprintf(out, cap, "%s", r ? r : p ? p : "");
  free(r);
}

int etsim_sweep_plan_write_spec(const etsim_sweep_plan_opts_t *o, const etsim_sweep_cand_t *c,
                                size_t n, const char *path, etsim_error_t *err) {
  etsim_gen_llm_model_t m;
  int rc = model_of(o, &m, err);
  if (rc) return rc;
  if (!n) return etsim_error_set(err, ETSIM_EINVAL, "plan: no candidate to simulate");
  etsim_outfile_t out;
  if ((rc = etsim_outfile_open(&out, path, err))) return rc;
  FILE *f = out.fp;
  char net[PATH_MAX], sys[PATH_MAX], mem[PATH_MAX];
  abs_path(o->network, net, sizeof net);
  abs_path(o->system, sys, sizeof sys);
  abs_path(o->memory, mem, sizeof mem);
  fprintf(f, "# Written by etsim plan: the candidates left after pruning, one point each.\n");
  fprintf(f, "name: plan\nbase:\n  gen:\n    kind: llm\n");
  if (o->preset && strcmp(o->preset, "custom")) fprintf(f, "    preset: %s\n", o->preset);
  const struct {
    const char *k;
    uint64_t v;
    int given;
  } ov[] = {{"layers", m.layers, o->layers || !o->preset || !strcmp(o->preset, "custom")},
            {"hidden", m.hidden, o->hidden || !o->preset || !strcmp(o->preset, "custom")},
            {"heads", m.heads, o->heads || !o->preset || !strcmp(o->preset, "custom")},
            {"kv-heads", m.kv_heads, o->kv_heads || !o->preset || !strcmp(o->preset, "custom")},
            {"ffn", m.ffn, o->ffn || !o->preset || !strcmp(o->preset, "custom")},
            {"vocab", m.vocab, o->vocab || !o->preset || !strcmp(o->preset, "custom")},
            {"seq", m.seq, o->seq || !o->preset || !strcmp(o->preset, "custom")},
            {"experts", m.experts, o->experts != 0},
            {"top-k", m.top_k, o->top_k != 0},
            {"gated", (uint64_t)m.gated, o->gated >= 0}};
  for (size_t i = 0; i < sizeof ov / sizeof *ov; i++)
    if (ov[i].given) fprintf(f, "    %s: %llu\n", ov[i].k, (unsigned long long)ov[i].v);
  fprintf(f, "    schedule: %s\n", o->schedule == ETSIM_GEN_SCHED_GPIPE ? "gpipe" : "1f1b");
  if (o->peak_tflops > 0) fprintf(f, "    peak-tflops: %.17g\n", o->peak_tflops);
  if (o->mem_gbps > 0) fprintf(f, "    mem-gbps: %.17g\n", o->mem_gbps);
  if (o->flash) fprintf(f, "    flash-attention: true\n");
  fprintf(f, "    tensors: true\n");
  fprintf(f, "  network: \"%s\"\n  system: \"%s\"\n", net, sys);
  if (o->memory) fprintf(f, "  memory: \"%s\"\n", mem);
  fprintf(f, "  sim:\n    backend: %s\n    hbm-gb: %.17g\n", o->backend ? o->backend : "analytical",
          o->hbm_gib > 0 ? o->hbm_gib : 80.0);
  fprintf(f, "axes:\n  - zip:\n");
  put_list(f, "gen.dp", c, n, offsetof(etsim_sweep_cand_t, dp), 0);
  put_list(f, "gen.tp", c, n, offsetof(etsim_sweep_cand_t, tp), 0);
  put_list(f, "gen.pp", c, n, offsetof(etsim_sweep_cand_t, pp), 0);
  put_list(f, "gen.sp", c, n, offsetof(etsim_sweep_cand_t, sp), 0);
  put_list(f, "gen.ep", c, n, offsetof(etsim_sweep_cand_t, ep), 0);
  put_list(f, "gen.microbatches", c, n, offsetof(etsim_sweep_cand_t, microbatches), 0);
  put_list(f, "gen.mbs", c, n, offsetof(etsim_sweep_cand_t, mbs), 0);
  put_list(f, "gen.zero", c, n, offsetof(etsim_sweep_cand_t, zero), 0);
  put_list(f, "gen.recompute", c, n, offsetof(etsim_sweep_cand_t, recompute), 1);
  return etsim_outfile_commit(&out, err);
}
