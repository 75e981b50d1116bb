/*
 * test_llm.c — `gen llm` against closed forms.
 *
 * One iteration's FLOPs summed over every rank equal 6 x matrix parameters
 * x tokens plus attention (12 L h s per token), x 4/3 with recomputation;
 * TP all-reduces are b*s*h*bytes and as many as the schedule implies; DP
 * gradient all-reduce (ZeRO 0), reduce-scatter + all-gather (ZeRO 1/2) and
 * per-layer gathers (ZeRO 3) move the stage's parameter bytes / TP; every
 * pipeline send has its receive (src, dst, tag, size); every member of a
 * communicator issues the same collectives in the same order and the
 * communicator-group JSON lists exactly the ranks that use each group;
 * 1F1B and GPipe orders; traces validate; bad splits are refused with
 * nothing written; identical ranks share files.
 */
#include "test_util.h"

#include "etsim/etcheck.h"
#include "etsim/gen.h"

#include <dirent.h>
#include <sys/stat.h>

static const etsim_gen_llm_model_t tiny = {"tiny", 4, 256, 8, 4, 512, 1000, 128, 0, 0, 1};
static const etsim_gen_llm_model_t tiny_moe = {"tiny-moe", 4, 256, 8, 4, 512, 1000, 128, 4, 2, 1};

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static int run_id;

/* Generate into a fresh folder; returns the prefix (static storage). */
static const char *gen(etsim_gen_llm_opts_t *o, etsim_et_set_report_t *rep) {
  static char prefix[4300];
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/r%d", tmp, run_id++);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(prefix, sizeof prefix, "%s/llm", dir);
  o->prefix = prefix;
  etsim_error_t err = {0};
  int rc = etsim_gen_llm(o, rep, &err);
  TU_OK(rc, err);
  return prefix;
}

static etsim_et_set_t *load_set(const char *prefix) {
  etsim_error_t err = {0};
  etsim_et_set_t *s = NULL;
  if (etsim_et_set_load(&s, prefix, 0, &err)) print_error("%s\n", err.msg);
  assert_non_null(s);
  return s;
}

static int64_t iattr(const etsim_et_trace_t *t, size_t i, uint32_t k) {
  int64_t v = -1;
  etsim_et_trace_attr_int(t, i, k, &v);
  return v;
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* Model FLOPs over all ranks (every COMP but the optimizer). */
static uint64_t total_flops(const etsim_et_set_t *s) {
  uint64_t f = 0;
  for (size_t r = 0; r < s->n_ranks; r++) {
    const etsim_et_trace_t *t = s->ranks[r];
    for (size_t i = 0; i < t->n_nodes; i++)
      if (t->type[i] == ETSIM_ET_COMP_NODE && strcmp(t->name[i], "optimizer"))
        f += (uint64_t)iattr(t, i, t->k_num_ops);
  }
  return f;
}

/* Closed form: per token, per layer, forward FLOPs (matrices + attention). */
static uint64_t layer_tok_flops(const etsim_gen_llm_model_t *m, uint64_t tp) {
  uint64_t h = m->hidden, d = h / m->heads, f = m->ffn;
  uint64_t x = 2 * h * (h + 2 * m->kv_heads * d) + 2 * h * h + 4 * m->seq * h;
  if (m->experts)
    x += m->top_k * 3 * 2 * h * f + 2 * h * m->experts * tp; /* router on
                                                                 every TP rank */
  else x += (m->gated ? 3 : 2) * 2 * h * f;
  return x;
}

static uint64_t padded_vocab(const etsim_gen_llm_model_t *m, uint64_t tp) {
  return (m->vocab + tp - 1) / tp * tp;
}

static void finding(void *user, int severity, const char *line) {
  (void)user;
  if (severity == ETSIM_CHECK_PROBLEM) print_error("problem: %s\n", line);
}

/* Every distinct trace validates; every send has its receive; per
 * communicator, all members issue the same collectives in one order and
 * the group file lists exactly the ranks using each id. */
static void check_set(const char *prefix, const etsim_et_set_t *s) {
  for (size_t k = 0; k < s->n_traces; k++)
    assert_int_equal(etsim_et_validate(s->traces[k], finding, NULL), 0);
  /* Sends and receives as (src, dst, tag, size) multisets. */
  typedef struct {
    int64_t v[4];
  } q_t;
  size_t ns = 0, nr = 0, cap = 1024;
  q_t *snd = malloc(cap * sizeof *snd), *rcv = malloc(cap * sizeof *rcv);
  /* Communicators: id -> hash of (type, size) sequence and member list. */
  enum { MAXG = 4096 };
  static uint64_t seq_hash[MAXG][64];
  static int seq_rank[MAXG][64];
  static int nmem[MAXG];
  memset(nmem, 0, sizeof nmem);
  for (size_t r = 0; r < s->n_ranks; r++) {
    const etsim_et_trace_t *t = s->ranks[r];
    uint64_t h[MAXG] = {0};
    int used[MAXG] = {0};
    for (size_t i = 0; i < t->n_nodes; i++) {
      int ty = t->type[i];
      if (ty == ETSIM_ET_COMM_SEND_NODE || ty == ETSIM_ET_COMM_RECV_NODE) {
        q_t q = {{iattr(t, i, t->k_comm_src), iattr(t, i, t->k_comm_dst),
                  iattr(t, i, t->k_comm_tag), iattr(t, i, t->k_comm_size)}};
        if (ty == ETSIM_ET_COMM_SEND_NODE) assert_int_equal(q.v[0], (int64_t)r);
        else assert_int_equal(q.v[1], (int64_t)r);
        if (ns + 1 >= cap || nr + 1 >= cap) {
          cap *= 2;
          snd = realloc(snd, cap * sizeof *snd);
          rcv = realloc(rcv, cap * sizeof *rcv);
        }
        if (ty == ETSIM_ET_COMM_SEND_NODE) snd[ns++] = q;
        else rcv[nr++] = q;
      } else if (ty == ETSIM_ET_COMM_COLL_NODE) {
        const char *pg = etsim_et_trace_attr_str(t, i, t->k_pg_name);
        assert_non_null(pg);
        int id = atoi(pg);
        TU_GT(id, 0);
        TU_LT(id, MAXG);
        h[id] = (h[id] ^ (uint64_t)iattr(t, i, t->k_comm_type)) * 1000003 +
                (uint64_t)iattr(t, i, t->k_comm_size);
        used[id] = 1;
      }
    }
    for (int id = 1; id < MAXG; id++)
      if (used[id]) {
        TU_LT(nmem[id], 64);
        seq_hash[id][nmem[id]] = h[id];
        seq_rank[id][nmem[id]++] = (int)r;
      }
  }
  assert_int_equal(ns, nr);
  for (size_t i = 0; i < ns; i++) {
    size_t j = 0;
    while (j < nr && memcmp(&snd[i], &rcv[j], sizeof snd[i]) != 0) j++;
    if (j == nr)
      print_error("send %lld->%lld tag %lld has no receive\n", (long long)snd[i].v[0],
                  (long long)snd[i].v[1], (long long)snd[i].v[2]);
    TU_LT(j, nr);
    rcv[j] = rcv[--nr];
  }
  free(snd);
  free(rcv);
  for (int id = 1; id < MAXG; id++)
    for (int k = 1; k < nmem[id]; k++) TU_EQ(seq_hash[id][k], seq_hash[id][0]);
  /* The group file: "  "id": [a, b, ...]" lines. */
  char path[4300];
  snprintf(path, sizeof path, "%s.comm_group.json", prefix);
  size_t len;
  char *json = (char *)tu_read(path, &len);
  assert_non_null(json);
  int groups = 0;
  for (char *p = strchr(json, '"'); p; p = strchr(p + 1, '"')) {
    int id = atoi(p + 1);
    p = strchr(p + 1, '"');
    char *q = strchr(p, '[');
    char *end = strchr(q, ']');
    int members[64], n = 0;
    for (char *x = q + 1; x < end;) {
      members[n++] = (int)strtol(x, &x, 10);
      while (x < end && (*x == ',' || *x == ' ')) x++;
    }
    groups++;
    TU_GT(id, 0);
    TU_LT(id, MAXG);
    if (nmem[id] != n)
      print_error("group %d: %d members in the file, %d ranks use it\n", id, n, nmem[id]);
    assert_int_equal(nmem[id], n);
    for (int k = 0; k < n; k++) assert_int_equal(seq_rank[id][k], members[k]);
    p = end;
  }
  (void)groups;
  free(json);
}

/* --------------------------------------------------------------- FLOPs */

static void test_gpt3_flops_closed_form(void **state) {
  (void)state;
  etsim_gen_llm_opts_t o = {0};
  etsim_error_t err = {0};
  assert_int_equal(etsim_gen_llm_preset("gpt3-175b", &o.model, &err), 0);
  o.tp = 8;
  o.pp = 16;
  o.microbatches = 2;
  etsim_et_set_report_t rep;
  const char *prefix = gen(&o, &rep);
  assert_int_equal(rep.n_ranks, 128);
  etsim_et_set_t *s = load_set(prefix);
  const etsim_gen_llm_model_t *m = &o.model;
  uint64_t T = 2 * m->seq; /* tokens: 2 micro-batches of one sequence */
  uint64_t h = m->hidden, Vp = padded_vocab(m, 8);
  assert_int_equal(Vp, 50264);
  /* 6 x (matrix parameters: layers + LM head) x tokens + attention. */
  uint64_t params = m->layers * (12 * h * h) + Vp * h;
  uint64_t want = 6 * params * T + 12 * m->layers * h * m->seq * T;
  assert_int_equal(total_flops(s), want);
  assert_int_equal(want, layer_tok_flops(m, 8) * 3 * m->layers * T + 6 * h * Vp * T);
  /* 174.6 G matrix parameters in the layers: GPT-3's 175 B. */
  TU_GT(params, 174e9);
  TU_LT(params, 176e9);
  check_set(prefix, s);
  etsim_et_set_free(s);
}

static void test_flops_recompute_moe_sp(void **state) {
  (void)state;
  struct {
    const etsim_gen_llm_model_t *m;
    uint32_t dp, tp, pp, sp, ep, M, mbs;
    int recompute, sched;
  } cases[] = {
      {&tiny, 2, 2, 2, 1, 1, 4, 1, 0, ETSIM_GEN_SCHED_1F1B},
      {&tiny, 1, 2, 2, 1, 1, 3, 2, 1, ETSIM_GEN_SCHED_GPIPE},
      {&tiny, 1, 1, 2, 4, 1, 2, 1, 0, ETSIM_GEN_SCHED_1F1B},
      {&tiny_moe, 1, 2, 1, 1, 2, 2, 1, 0, ETSIM_GEN_SCHED_1F1B},
      {&tiny_moe, 2, 1, 2, 2, 2, 2, 1, 1, ETSIM_GEN_SCHED_1F1B},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    etsim_gen_llm_opts_t o = {0};
    o.model = *cases[c].m;
    o.dp = cases[c].dp;
    o.tp = cases[c].tp;
    o.pp = cases[c].pp;
    o.sp = cases[c].sp;
    o.ep = cases[c].ep;
    o.microbatches = cases[c].M;
    o.mbs = cases[c].mbs;
    o.recompute = cases[c].recompute;
    o.schedule = cases[c].sched;
    etsim_et_set_report_t rep;
    const char *prefix = gen(&o, &rep);
    etsim_et_set_t *s = load_set(prefix);
    assert_int_equal(s->n_ranks, o.dp * o.tp * o.pp * o.sp * o.ep);
    uint64_t T = (uint64_t)o.dp * o.ep * o.microbatches * o.mbs * o.model.seq;
    uint64_t want =
        layer_tok_flops(&o.model, o.tp) * o.model.layers * (3 + (uint64_t)o.recompute) * T +
        6 * o.model.hidden * padded_vocab(&o.model, o.tp) * T;
    if (total_flops(s) != want)
      print_error("case %zu: %llu FLOPs, closed form %llu\n", c, (unsigned long long)total_flops(s),
                  (unsigned long long)want);
    assert_int_equal(total_flops(s), want);
    check_set(prefix, s);
    etsim_et_set_free(s);
  }
}

/* ---------------------------------------------------- collective sizes */

/* Per rank: sum of sizes of collectives whose name contains `sub`. */
static uint64_t sum_named(const etsim_et_trace_t *t, const char *sub, int type, size_t *count) {
  uint64_t s = 0;
  size_t n = 0;
  for (size_t i = 0; i < t->n_nodes; i++)
    if (t->type[i] == ETSIM_ET_COMM_COLL_NODE && has(t->name[i], sub) &&
        iattr(t, i, t->k_comm_type) == type) {
      s += (uint64_t)iattr(t, i, t->k_comm_size);
      n++;
    }
  if (count) *count = n;
  return s;
}

static void test_collective_sizes(void **state) {
  (void)state;
  const etsim_gen_llm_model_t *m = &tiny;
  uint64_t h = m->hidden, d = h / m->heads, e = 2, b = 2, s = m->seq;
  for (int zero = 0; zero <= 3; zero++)
    for (int rc = 0; rc < 2; rc++) {
      etsim_gen_llm_opts_t o = {0};
      o.model = *m;
      o.dp = 2;
      o.tp = 2;
      o.pp = 2;
      o.microbatches = 3;
      o.mbs = (uint32_t)b;
      o.zero = zero;
      o.recompute = rc;
      etsim_et_set_report_t rep;
      const char *prefix = gen(&o, &rep);
      etsim_et_set_t *set = load_set(prefix);
      uint64_t t = 2, M = 3, nl = m->layers / 2;
      uint64_t layer_params = (h * (h + 2 * m->kv_heads * d) + h * h + 3 * h * m->ffn) / t;
      uint64_t head = h * padded_vocab(m, t) / t;
      for (size_t r = 0; r < set->n_ranks; r++) {
        const etsim_et_trace_t *tr = set->ranks[r];
        uint64_t stage = r / 4;
        /* Every TP all-reduce is b*s*h*bytes; per micro-batch and layer 2
         * forward, 2 backward (+2 recomputed), one for the embedding on
         * the first stage and one for the LM head's input gradient on the
         * last. */
        size_t n_tp = 0;
        for (size_t i = 0; i < tr->n_nodes; i++)
          if (has(tr->name[i], "tp_allreduce")) {
            assert_int_equal(iattr(tr, i, tr->k_comm_size), b * s * h * e);
            assert_int_equal(iattr(tr, i, tr->k_comm_type), ETSIM_COLL_ALL_REDUCE);
            n_tp++;
          }
        assert_int_equal(n_tp, M * nl * (4 + 2 * (uint64_t)rc) + M);
        /* Gradients: the stage's parameters / TP, in bytes. */
        uint64_t stage_bytes = e * (nl * layer_params + head);
        size_t cnt;
        if (zero == 0) {
          assert_int_equal(sum_named(tr, "_grad_", ETSIM_COLL_ALL_REDUCE, &cnt), stage_bytes);
          assert_int_equal(cnt, nl + 1);
        } else {
          uint64_t rs = sum_named(tr, "_grad_", ETSIM_COLL_REDUCE_SCATTER, &cnt);
          assert_int_equal(rs, (zero == 3 ? M : 1) * stage_bytes);
          assert_int_equal(sum_named(tr, "_grad_", ETSIM_COLL_ALL_REDUCE, NULL), 0);
          /* ASTRA-sim's all-gather size is the per-rank input: / DP. */
          if (zero < 3)
            assert_int_equal(2 * sum_named(tr, "param_allgather", ETSIM_COLL_ALL_GATHER, NULL),
                             stage_bytes);
          else
            assert_int_equal(2 * sum_named(tr, "zero3_allgather", ETSIM_COLL_ALL_GATHER, &cnt),
                             2 * M * nl * layer_params * e);
        }
        /* Pipeline messages: activations forward, gradients backward. */
        size_t sends = 0;
        for (size_t i = 0; i < tr->n_nodes; i++)
          if (tr->type[i] == ETSIM_ET_COMM_SEND_NODE) {
            assert_int_equal(iattr(tr, i, tr->k_comm_size), b * s * h * e);
            assert_int_equal(iattr(tr, i, tr->k_comm_dst),
                             stage == 0 ? (int64_t)r + 4 : (int64_t)r - 4);
            sends++;
          }
        assert_int_equal(sends, M);
        /* The optimizer: 12 FLOPs per parameter of the rank's shard. */
        for (size_t i = 0; i < tr->n_nodes; i++)
          if (strcmp(tr->name[i], "optimizer") == 0)
            assert_int_equal(iattr(tr, i, tr->k_num_ops),
                             12 * (nl * layer_params + head) / (zero ? 2 : 1));
      }
      check_set(prefix, set);
      etsim_et_set_free(set);
    }
}

static void test_moe_and_sp_sizes(void **state) {
  (void)state;
  etsim_gen_llm_opts_t o = {0};
  o.model = tiny_moe;
  o.tp = 2;
  o.ep = 2;
  o.sp = 2;
  o.dp = 2;
  o.microbatches = 2;
  etsim_et_set_report_t rep;
  const char *prefix = gen(&o, &rep);
  etsim_et_set_t *set = load_set(prefix);
  const etsim_gen_llm_model_t *m = &tiny_moe;
  uint64_t h = m->hidden, d = h / m->heads, e = 2, sl = m->seq / 2, kvl = 2;
  const etsim_et_trace_t *t = set->ranks[5];
  size_t a2a = 0, ag = 0, rs = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    if (has(t->name[i], "_ep_")) {
      assert_int_equal(iattr(t, i, t->k_comm_type), ETSIM_COLL_ALL_TO_ALL);
      assert_int_equal(iattr(t, i, t->k_comm_size), sl * m->top_k * h * e);
      a2a++;
    }
    if (has(t->name[i], "cp_allgather")) {
      assert_int_equal(iattr(t, i, t->k_comm_size), 2 * sl * kvl * d * e);
      ag++;
    }
    if (has(t->name[i], "cp_reducescatter")) {
      assert_int_equal(iattr(t, i, t->k_comm_size), 2 * sl * kvl * d * e * 2);
      rs++;
    }
  }
  assert_int_equal(a2a, 4 * m->layers * 2); /* 2 fwd + 2 bwd per layer, mb */
  assert_int_equal(ag, m->layers * 2);
  assert_int_equal(rs, m->layers * 2);
  /* Expert gradients over sp x dp (4 ranks), the rest over sp x ep x dp. */
  size_t n;
  uint64_t xbytes = sum_named(t, "grad_allreduce_experts", ETSIM_COLL_ALL_REDUCE, &n);
  assert_int_equal(xbytes, e * m->layers * (m->experts / 2) * 3 * h * m->ffn / 2);
  check_set(prefix, set);
  etsim_et_set_free(set);
}

/* ------------------------------------------------------------ schedules */

static void order(const etsim_et_trace_t *t, const char *fwd, const char *bwd, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    const char *nme = t->name[i];
    if (strncmp(nme, "mb", 2) != 0) continue;
    const char *u = strchr(nme, '_');
    if (strcmp(u + 1, fwd) == 0 || strcmp(u + 1, bwd) == 0) {
      out[k++] = strcmp(u + 1, fwd) == 0 ? 'F' : 'B';
      out[k++] = nme[2];
    }
  }
  out[k] = 0;
}

static void test_schedules(void **state) {
  (void)state;
  char got[256];
  for (int sched = 0; sched < 2; sched++) {
    etsim_gen_llm_opts_t o = {0};
    o.model = tiny;
    o.pp = 4;
    o.microbatches = 6;
    o.schedule = sched;
    etsim_et_set_report_t rep;
    const char *prefix = gen(&o, &rep);
    assert_int_equal(rep.n_files, 4); /* one per stage */
    etsim_et_set_t *set = load_set(prefix);
    order(set->ranks[0], "fwd_embed", "bwd_embed", got);
    assert_string_equal(got, sched == ETSIM_GEN_SCHED_1F1B ? "F0F1F2F3B0F4B1F5B2B3B4B5"
                                                           : "F0F1F2F3F4F5B0B1B2B3B4B5");
    order(set->ranks[3], "fwd_lm_head", "bwd_lm_head", got);
    assert_string_equal(got, sched == ETSIM_GEN_SCHED_1F1B ? "F0B0F1B1F2B2F3B3F4B4F5B5"
                                                           : "F0F1F2F3F4F5B0B1B2B3B4B5");
    order(set->ranks[1], "fwd_recv_act", "bwd_recv_grad", got);
    assert_string_equal(got, sched == ETSIM_GEN_SCHED_1F1B ? "F0F1F2B0F3B1F4B2F5B3B4B5"
                                                           : "F0F1F2F3F4F5B0B1B2B3B4B5");
    check_set(prefix, set);
    etsim_et_set_free(set);
  }
}

/* ------------------------------------------------------ groups, sharing */

static void test_groups_and_sharing(void **state) {
  (void)state;
  etsim_gen_llm_opts_t o = {0};
  o.model = tiny;
  o.dp = 2;
  o.tp = 2;
  o.pp = 2;
  etsim_et_set_report_t rep;
  const char *prefix = gen(&o, &rep);
  char path[4300];
  snprintf(path, sizeof path, "%s.comm_group.json", prefix);
  size_t n;
  char *json = (char *)tu_read(path, &n);
  assert_string_equal(json,
                      "{\n  \"1\": [0, 1],\n  \"2\": [2, 3],\n  \"3\": [4, 5],"
                      "\n  \"4\": [6, 7],\n  \"5\": [0, 2],\n  \"6\": [1, 3],"
                      "\n  \"7\": [4, 6],\n  \"8\": [5, 7]\n}\n");
  free(json);
  assert_int_equal(rep.n_files, 8);
  /* Pure data parallelism: one communicator, every rank the same trace. */
  etsim_gen_llm_opts_t d = {0};
  d.model = tiny;
  d.dp = 8;
  prefix = gen(&d, &rep);
  assert_int_equal(rep.n_files, 1);
  assert_int_equal(rep.rank_nodes, 8 * rep.n_nodes);
  etsim_et_set_t *set = load_set(prefix);
  assert_int_equal(etsim_et_validate_set(set, finding, NULL), 0);
  etsim_et_set_free(set);
  /* Plain per-rank files on request. */
  d.format = ETSIM_ET_OUT_RANK_FILES;
  prefix = gen(&d, &rep);
  snprintf(path, sizeof path, "%s.7.et", prefix);
  assert_int_equal(access(path, R_OK), 0);
  snprintf(path, sizeof path, "%s.manifest.json", prefix);
  assert_int_not_equal(access(path, F_OK), 0);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_splits(void **state) {
  (void)state;
  etsim_error_t err = {0};
  etsim_gen_llm_model_t m;
  assert_int_equal(etsim_gen_llm_preset("gpt4", &m, &err), ETSIM_ENOTFOUND);
  TU_CONTAINS(err.msg, "unknown model preset 'gpt4'");
  assert_int_equal(etsim_gen_llm_preset("llama3-8b", &m, &err), 0);
  struct {
    uint32_t dp, tp, pp, sp, ep;
    size_t npus;
    int zero;
    const char *msg;
  } cases[] = {
      {1, 5, 1, 1, 1, 0, 0, "--tp 5 does not divide the 32 attention heads of llama3-8b"},
      {1, 16, 1, 1, 1, 0, 0, "--tp 16 does not divide the 8 key/value heads"},
      {1, 1, 33, 1, 1, 0, 0, "--pp 33 is more than the 32 layers of llama3-8b"},
      {2, 2, 2, 1, 1, 16, 0, "--npus 16 is not dp x tp x pp x sp x ep = 2 x 2 x 2 x 1 x 1 = 8"},
      {1, 1, 1, 3, 1, 0, 0, "--sp 3 does not divide the sequence length 8192"},
      {1, 1, 1, 1, 2, 0, 0, "--ep 2 needs a mixture-of-experts model"},
      {1, 1, 1, 1, 1, 0, 4, "--zero 4 is not 0..3"},
  };
  char dir[4200], prefix[4300];
  snprintf(dir, sizeof dir, "%s/bad", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(prefix, sizeof prefix, "%s/x", dir);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    etsim_gen_llm_opts_t o = {0};
    o.model = m;
    o.dp = cases[c].dp;
    o.tp = cases[c].tp;
    o.pp = cases[c].pp;
    o.sp = cases[c].sp;
    o.ep = cases[c].ep;
    o.npus = cases[c].npus;
    o.zero = cases[c].zero;
    o.prefix = prefix;
    assert_int_equal(etsim_gen_llm(&o, NULL, &err), ETSIM_EINVAL);
    if (!strstr(err.msg, cases[c].msg)) print_error("case %zu: '%s'\n", c, err.msg);
    TU_CONTAINS(err.msg, cases[c].msg);
    assert_int_equal(count_files(dir), 0);
  }
  etsim_gen_llm_opts_t o = {0};
  assert_int_equal(etsim_gen_llm_preset("mixtral-8x7b", &o.model, &err), 0);
  o.ep = 3;
  o.prefix = prefix;
  assert_int_equal(etsim_gen_llm(&o, NULL, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "--ep 3 must divide the 8 experts");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt3_flops_closed_form),
      cmocka_unit_test(test_flops_recompute_moe_sp),
      cmocka_unit_test(test_collective_sizes),
      cmocka_unit_test(test_moe_and_sp_sizes),
      cmocka_unit_test(test_schedules),
      cmocka_unit_test(test_groups_and_sharing),
      cmocka_unit_test(test_bad_splits),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
