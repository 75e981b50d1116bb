/*
 * plan.c — placement and search.
 *
 * Placement of a per-table type choice follows TorchRec's greedy
 * partitioner: uniform types (RW, DP) on every rank first, then host types
 * (TWRW, TWCW) on the least-loaded host, then TW and CW blocks largest
 * first on the least-loaded rank that still has memory (a heap keyed on
 * (load, rank)), so placing T tables on P ranks costs O(T log P) plus the
 * shards written.  Memory is HBM, or HBM + DDR + SSD when those levels are
 * given (tiers.c then decides which rows stay in HBM).
 *
 * The search rates whole plans by the estimated iteration (step.c):
 * candidates are each allowed type alone, TorchRec's per-table cheapest
 * type, and "small tables one way, large another" hybrids at several size
 * thresholds; the best is improved by moving groups of similar tables (the
 * largest tables one by one, the rest in size bands) to other types while
 * the estimate drops.  A work budget on the shards written bounds the
 * search, so 100,000 tables on 4,096 ranks plan in seconds.
 */
#include "shard_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Plans larger than this many shards are not built (8 Mi shards, about
 * 800 MB); the search skips candidates that would be. */
#define MAX_SHARDS (1u << 23)
/* Shards the search may write in all its evaluations. */
#define WORK_BUDGET (12u << 20)

void etsim_shard_plan_free(etsim_shard_plan_t *p) {
  if (!p) return;
  etsim_free(p->table_type);
  etsim_free(p->shards);
  etsim_free(p->table_first);
  etsim_free(p->rank_ms);
  etsim_free(p->rank_bytes);
  memset(p, 0, sizeof *p);
}

void etsim_shard_plans_free(etsim_shard_plan_t *p, size_t n) {
  if (!p) return;
  for (size_t i = 0; i < n; i++) etsim_shard_plan_free(&p[i]);
  etsim_free(p);
}

void etsim_shard__sum_loads(etsim_shard_plan_t *p) {
  memset(p->rank_ms, 0, p->n_ranks * sizeof *p->rank_ms);
  memset(p->rank_bytes, 0, p->n_ranks * sizeof *p->rank_bytes);
  for (size_t i = 0; i < p->n_shards; i++) {
    p->rank_ms[p->shards[i].rank] += etsim_shard__total(&p->shards[i]);
    p->rank_bytes[p->shards[i].rank] += p->shards[i].hbm_bytes;
  }
  p->max_ms = 0;
  p->max_bytes = 0;
  for (size_t r = 0; r < p->n_ranks; r++) {
    if (p->rank_ms[r] > p->max_ms) p->max_ms = p->rank_ms[r];
    if (p->rank_bytes[r] > p->max_bytes) p->max_bytes = p->rank_bytes[r];
  }
}

static uint64_t table_bytes(const etsim_shard_table_t *x) {
  return x->rows * x->dim * (uint64_t)x->elem_bytes;
}

/* Shards table t makes as type ty. */
static size_t n_shards_of(const etsim_shard__ctx_t *c, size_t t, int ty) {
  const etsim_shard_table_t *x = &c->m->tables[t];
  switch (ty) {
    case ETSIM_SHARD_RW:
    case ETSIM_SHARD_DP:
      return c->P;
    case ETSIM_SHARD_TWRW:
      return c->Pl;
    case ETSIM_SHARD_CW:
    case ETSIM_SHARD_TWCW: {
      uint32_t b = etsim_shard__cw_block(x->dim, c->o->costs.cw_block);
      return (x->dim + b - 1) / b;
    }
    default:
      return 1;
  }
}

/* ---------------------------------------------------------- a min-heap */

typedef struct {
  double key;
  uint32_t r;
} hnode_t;

static int hless(const hnode_t *a, const hnode_t *b) {
  return a->key < b->key || (a->key == b->key && a->r < b->r);
}

static void hpush(hnode_t *h, size_t *n, hnode_t v) {
  size_t i = (*n)++;
  while (i) {
    size_t p = (i - 1) / 2;
    if (!hless(&v, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = v;
}

static hnode_t hpop(hnode_t *h, size_t *n) {
  hnode_t top = h[0], v = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < *n && hless(&h[l], &v)) m = l;
    if (l + 1 < *n && hless(&h[l + 1], m == i ? &v : &h[l])) m = l + 1;
    if (m == i) break;
    h[i] = h[m];
    i = m;
  }
  if (*n) h[i] = v;
  return top;
}

/* ------------------------------------------------------------ placement */

typedef struct {
  uint64_t bytes;
  uint32_t t;
} order_t;

static int cmp_order(const void *a, const void *b) {
  const order_t *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

static int too_big(const etsim_shard__ctx_t *c, size_t t, int ty, uint64_t need,
                   etsim_error_t *err) {
  const etsim_shard_table_t *x = &c->m->tables[t];
  uint64_t cap = c->tiered ? c->cap_total : c->cap;
  return etsim_error_set(err, ETSIM_ERANGE,
                         "%s: table %zu ('%s', %llu rows x %u, %.2f GB) does not fit as %s: a "
                         "shard needs %.2f GB and no rank has that much of its %.2f GB %s left",
                         c->m->name, t, x->name, (unsigned long long)x->rows, x->dim,
                         (double)table_bytes(x) / 1e9, etsim_shard_type_name(ty), need / 1e9,
                         cap / 1e9, c->tiered ? "HBM + DDR + SSD" : "HBM");
}

typedef struct {
  const etsim_shard__ctx_t *c;
  const int *types;
  uint64_t cap;        /* memory a rank may fill: HBM, or all tiers */
  double *ms, *by;     /* per rank: placed on that rank alone */
  double *h_ms, *h_by; /* per host: TWRW shards (one on each host rank) */
  double *h_load;      /* per host: its ranks' loads summed */
  double *h_maxby;     /* per host: the fullest rank's own bytes */
  double u_ms, u_by;   /* every rank: RW and DP */
  uint32_t *host;      /* per table (host types) */
  uint32_t *first;     /* per table: its block ranks in blk[] */
  uint32_t *blk;
  size_t bk;    /* blk[] entries written */
  order_t *ord; /* the tables of the step being placed */
  hnode_t *heap, *aside;
} pstate_t;

/* Shards and column blocks the plan will have, or an error when it would
 * be too large to build. */
static int count_shards(const etsim_shard__ctx_t *c, const int *types, size_t *ns_out,
                        size_t *nblk_out, etsim_error_t *err) {
  size_t ns = 0, nblk = 0;
  for (size_t t = 0; t < c->m->n_tables; t++) {
    if (types[t] < 0 || types[t] >= ETSIM_SHARD_N_TYPES)
      return etsim_error_set(err, ETSIM_EINVAL, "shard: table %zu: bad type %d", t, types[t]);
    size_t k = n_shards_of(c, t, types[t]);
    ns += k;
    if (types[t] != ETSIM_SHARD_RW && types[t] != ETSIM_SHARD_DP && types[t] != ETSIM_SHARD_TWRW)
      nblk += k;
    if (ns > MAX_SHARDS)
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s: the plan would have more than %u shards (tables %zu and on "
                             "are not placed); allow fewer row-wise and data-parallel tables "
                             "or use fewer ranks",
                             c->m->name, MAX_SHARDS, t);
  }
  *ns_out = ns;
  *nblk_out = nblk;
  return 0;
}

/* The tables of type a or b into s->ord, largest first; returns how many. */
static size_t order_of(pstate_t *s, int a, int b) {
  const etsim_shard__ctx_t *c = s->c;
  size_t T = c->m->n_tables, no = 0;
  if (c->by_size) {
    for (size_t i = 0; i < T; i++) {
      uint32_t t = c->by_size[i];
      if (s->types[t] == a || s->types[t] == b) s->ord[no++] = (order_t){0, t};
    }
  } else {
    for (size_t t = 0; t < T; t++)
      if (s->types[t] == a || s->types[t] == b)
        s->ord[no++] = (order_t){table_bytes(&c->m->tables[t]), (uint32_t)t};
    etsim_qsort(s->ord, no, sizeof *s->ord, cmp_order);
  }
  return no;
}

/* Pop heap nodes (hosts when by_host, else ranks) until one has room for
 * `need` more bytes; the others go back.  Returns the node's r, or
 * UINT32_MAX when none has room. */
static uint32_t pop_fitting(pstate_t *s, size_t *nh, double need, int by_host) {
  size_t na = 0;
  uint32_t best = UINT32_MAX;
  while (*nh) {
    hnode_t v = hpop(s->heap, nh);
    double sum = by_host ? s->u_by + s->h_by[v.r] + s->h_maxby[v.r]
                         : s->u_by + s->h_by[v.r / s->c->Pl] + s->by[v.r];
    if (sum + need <= (double)s->cap) {
      best = v.r;
      break;
    }
    s->aside[na++] = v;
  }
  for (size_t i = 0; i < na; i++) hpush(s->heap, nh, s->aside[i]);
  return best;
}

/* 1. Uniform types: every rank gets one shard (costs of the largest). */
static int place_uniform(pstate_t *s, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  int rc = 0;
  for (size_t t = 0; t < c->m->n_tables && !rc; t++) {
    int ty = s->types[t];
    if (ty != ETSIM_SHARD_RW && ty != ETSIM_SHARD_DP) continue;
    const etsim_shard_table_t *x = &c->m->tables[t];
    etsim_shard_t sh;
    etsim_shard__rate(c, ty, x, ty == ETSIM_SHARD_DP ? x->rows : (x->rows + c->P - 1) / c->P,
                      x->dim, &sh);
    if (s->u_by + (double)sh.hbm_bytes > (double)s->cap) rc = too_big(c, t, ty, sh.hbm_bytes, err);
    s->u_ms += etsim_shard__total(&sh);
    s->u_by += (double)sh.hbm_bytes;
  }
  return rc;
}

/* TWCW table t's column blocks on the least-loaded ranks of host h that
 * have room. */
static int place_host_blocks(pstate_t *s, size_t t, uint32_t h, uint32_t blk,
                             const etsim_shard_t *sh, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  size_t Pl = c->Pl;
  s->first[t] = (uint32_t)s->bk;
  for (uint32_t col = 0; col < c->m->tables[t].dim; col += blk) {
    size_t r0 = SIZE_MAX;
    for (size_t r = h * Pl; r < (h + 1) * Pl; r++)
      if (s->u_by + s->h_by[h] + s->by[r] + (double)sh->hbm_bytes <= (double)s->cap &&
          (r0 == SIZE_MAX || s->ms[r] < s->ms[r0]))
        r0 = r;
    if (r0 == SIZE_MAX) return too_big(c, t, s->types[t], sh->hbm_bytes, err);
    s->blk[s->bk++] = (uint32_t)r0;
    s->ms[r0] += etsim_shard__total(sh);
    s->by[r0] += (double)sh->hbm_bytes;
    s->h_load[h] += etsim_shard__total(sh);
    if (s->by[r0] > s->h_maxby[h]) s->h_maxby[h] = s->by[r0];
  }
  return 0;
}

/* 2. Host types, largest first, on the least-loaded host with room (a
 * heap of hosts keyed on their load). */
static int place_host(pstate_t *s, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  size_t Pl = c->Pl, nh = 0;
  size_t no = order_of(s, ETSIM_SHARD_TWRW, ETSIM_SHARD_TWCW);
  for (size_t h = 0; no && h < c->hosts; h++) hpush(s->heap, &nh, (hnode_t){0, (uint32_t)h});
  for (size_t k = 0; k < no; k++) {
    size_t t = s->ord[k].t;
    int ty = s->types[t];
    const etsim_shard_table_t *x = &c->m->tables[t];
    etsim_shard_t sh;
    uint32_t blk = etsim_shard__cw_block(x->dim, c->o->costs.cw_block);
    if (ty == ETSIM_SHARD_TWRW) etsim_shard__rate(c, ty, x, (x->rows + Pl - 1) / Pl, x->dim, &sh);
    else etsim_shard__rate(c, ty, x, x->rows, blk, &sh);
    uint32_t best = pop_fitting(s, &nh, (double)sh.hbm_bytes, 1);
    if (best == UINT32_MAX) return too_big(c, t, ty, sh.hbm_bytes, err);
    s->host[t] = best;
    if (ty == ETSIM_SHARD_TWRW) {
      s->h_ms[best] += etsim_shard__total(&sh);
      s->h_by[best] += (double)sh.hbm_bytes;
      s->h_load[best] += (double)Pl * etsim_shard__total(&sh);
    } else {
      int rc = place_host_blocks(s, t, best, blk, &sh, err);
      if (rc) return rc;
    }
    hpush(s->heap, &nh, (hnode_t){s->h_load[best], best});
  }
  return 0;
}

/* 3. TW and CW, largest first, on the least-loaded rank with room. */
static int place_blocks(pstate_t *s, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  size_t Pl = c->Pl, nh = 0;
  size_t no = order_of(s, ETSIM_SHARD_TW, ETSIM_SHARD_CW);
  for (size_t r = 0; r < c->P; r++)
    hpush(s->heap, &nh, (hnode_t){s->ms[r] + s->h_ms[r / Pl], (uint32_t)r});
  for (size_t k = 0; k < no; k++) {
    size_t t = s->ord[k].t;
    int ty = s->types[t];
    const etsim_shard_table_t *x = &c->m->tables[t];
    uint32_t blk =
        ty == ETSIM_SHARD_TW ? x->dim : etsim_shard__cw_block(x->dim, c->o->costs.cw_block);
    etsim_shard_t sh;
    etsim_shard__rate(c, ty, x, x->rows, blk, &sh);
    s->first[t] = (uint32_t)s->bk;
    for (uint32_t col = 0; col < x->dim; col += blk) {
      uint32_t r0 = pop_fitting(s, &nh, (double)sh.hbm_bytes, 0);
      if (r0 == UINT32_MAX) return too_big(c, t, ty, sh.hbm_bytes, err);
      s->blk[s->bk++] = r0;
      s->ms[r0] += etsim_shard__total(&sh);
      s->by[r0] += (double)sh.hbm_bytes;
      hpush(s->heap, &nh, (hnode_t){s->ms[r0] + s->h_ms[r0 / Pl], r0});
    }
  }
  return 0;
}

/* The row shards of RW, DP and TWRW table t from shard w on; returns the
 * next w.  Tail shards with fewer rows are rated once per row count. */
static size_t write_rows(const pstate_t *s, size_t t, etsim_shard_plan_t *p, size_t w) {
  const etsim_shard__ctx_t *c = s->c;
  int ty = s->types[t];
  const etsim_shard_table_t *x = &c->m->tables[t];
  size_t lo = ty == ETSIM_SHARD_TWRW ? s->host[t] * c->Pl : 0;
  size_t parts = ty == ETSIM_SHARD_TWRW ? c->Pl : c->P;
  uint64_t per = ty == ETSIM_SHARD_DP ? x->rows : (x->rows + parts - 1) / parts;
  etsim_shard_t full, last;
  etsim_shard__rate(c, ty, x, per, x->dim, &full);
  uint64_t last_rows = UINT64_MAX;
  for (size_t i = 0; i < parts; i++) {
    uint64_t off = ty == ETSIM_SHARD_DP ? 0 : per * i, n = per;
    if (ty != ETSIM_SHARD_DP) {
      if (off > x->rows) off = x->rows; /* empty tail shards sit at the end */
      n = x->rows - off < per ? x->rows - off : per;
    }
    etsim_shard_t sh;
    if (n == per) {
      sh = full;
    } else {
      if (n != last_rows) etsim_shard__rate(c, ty, x, n, x->dim, &last);
      last_rows = n;
      sh = last;
    }
    sh.table = (uint32_t)t;
    sh.rank = (uint32_t)(lo + i);
    sh.row_off = off;
    sh.col_off = 0;
    p->shards[w++] = sh;
  }
  return w;
}

/* The column blocks of TW, CW and TWCW table t from shard w on, on the
 * ranks placement chose; returns the next w. */
static size_t write_cols(const pstate_t *s, size_t t, etsim_shard_plan_t *p, size_t w) {
  const etsim_shard__ctx_t *c = s->c;
  int ty = s->types[t];
  const etsim_shard_table_t *x = &c->m->tables[t];
  uint32_t blk =
      ty == ETSIM_SHARD_TW ? x->dim : etsim_shard__cw_block(x->dim, c->o->costs.cw_block);
  etsim_shard_t proto;
  etsim_shard__rate(c, ty, x, x->rows, blk, &proto);
  size_t j = s->first[t];
  for (uint32_t col = 0; col < x->dim; col += blk) {
    etsim_shard_t sh = proto;
    sh.table = (uint32_t)t;
    sh.rank = s->blk[j++];
    sh.row_off = 0;
    sh.col_off = col;
    p->shards[w++] = sh;
  }
  return w;
}

/* Write the ns shards in table order and sum the loads. */
static int write_plan(const pstate_t *s, size_t ns, etsim_shard_plan_t *p, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  size_t T = c->m->n_tables, P = c->P;
  p->n_ranks = P;
  p->ranks_per_host = c->Pl;
  p->batch = (uint32_t)c->B;
  p->n_tables = T;
  p->step = c->o->step;
  p->tiers = c->o->tiers;
  p->table_type = etsim_malloc((T ? T : 1) * sizeof *p->table_type);
  p->shards = etsim_malloc((ns ? ns : 1) * sizeof *p->shards);
  p->table_first = etsim_malloc((T + 1) * sizeof *p->table_first);
  p->rank_ms = etsim_malloc(P * sizeof *p->rank_ms);
  p->rank_bytes = etsim_malloc(P * sizeof *p->rank_bytes);
  if (!p->table_type || !p->shards || !p->table_first || !p->rank_ms || !p->rank_bytes)
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t w = 0;
  for (size_t t = 0; t < T; t++) {
    int ty = s->types[t];
    p->table_type[t] = ty;
    p->table_first[t] = w;
    if (ty == ETSIM_SHARD_RW || ty == ETSIM_SHARD_DP || ty == ETSIM_SHARD_TWRW)
      w = write_rows(s, t, p, w);
    else w = write_cols(s, t, p, w);
  }
  p->table_first[T] = w;
  p->n_shards = w;
  etsim_shard__sum_loads(p);
  return 0;
}

/* Place every table of `types` and write the plan (shards in table
 * order, rated, loads summed).  Tiers and the estimate are not done here. */
static int place(const etsim_shard__ctx_t *c, const int *types, etsim_shard_plan_t *p,
                 etsim_error_t *err) {
  size_t T = c->m->n_tables, P = c->P, H = c->hosts;
  memset(p, 0, sizeof *p);
  size_t ns = 0, nblk = 0;
  int rc = count_shards(c, types, &ns, &nblk, err);
  if (rc) return rc;
  pstate_t s = {.c = c, .types = types, .cap = c->tiered ? c->cap_total : c->cap};
  s.ms = etsim_calloc(2 * P, sizeof *s.ms);
  s.h_ms = etsim_calloc(4 * H, sizeof *s.h_ms);
  s.host = etsim_calloc(2 * T, sizeof *s.host);
  s.blk = etsim_malloc((nblk ? nblk : 1) * sizeof *s.blk);
  s.ord = etsim_malloc((T ? T : 1) * sizeof *s.ord);
  size_t hn = P > H ? P : H;
  s.heap = etsim_malloc(hn * sizeof *s.heap);
  s.aside = etsim_malloc(hn * sizeof *s.aside);
  if (!s.ms || !s.h_ms || !s.host || !s.blk || !s.ord || !s.heap || !s.aside) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  s.by = s.ms + P;
  s.h_by = s.h_ms + H;
  s.h_load = s.h_by + H;
  s.h_maxby = s.h_load + H;
  s.first = s.host + T;
  rc = place_uniform(&s, err);
  if (!rc) rc = place_host(&s, err);
  if (!rc) rc = place_blocks(&s, err);
  if (!rc) rc = write_plan(&s, ns, p, err);
done:
  etsim_free(s.ms);
  etsim_free(s.h_ms);
  etsim_free(s.host);
  etsim_free(s.blk);
  etsim_free(s.ord);
  etsim_free(s.heap);
  etsim_free(s.aside);
  if (rc) etsim_shard_plan_free(p);
  return rc;
}

/* Place, fill the tiers and estimate. */
static int build(const etsim_shard__ctx_t *c, const int *types, const char *label,
                 etsim_shard_plan_t *p, etsim_error_t *err) {
  int rc = place(c, types, p, err);
  if (!rc) rc = etsim_shard__place_tiers(c, p, err);
  if (!rc) rc = etsim_shard_estimate(c->m, p, c->o, &p->est, err);
  if (!rc) snprintf(p->label, sizeof p->label, "%s", label ? label : "");
  if (rc) etsim_shard_plan_free(p);
  return rc;
}

int etsim_shard_place(const etsim_shard_model_t *m, const etsim_shard_opts_t *o, const int *types,
                      etsim_shard_plan_t *out, etsim_error_t *err) {
  etsim_shard__ctx_t c;
  int rc = etsim_shard__setup(&c, m, o, err);
  if (rc) return rc;
  return build(&c, types, "fixed", out, err);
}

/* --------------------------------------------------------------- search */

typedef struct {
  int *types; /* owned */
  double score, iter_ns;
  char label[48];
} cand_t;

typedef struct {
  const etsim_shard__ctx_t *c;
  size_t T;
  cand_t *v;
  size_t n, cap;
  uint64_t *hashes;
  uint64_t work;
  int last_rc;
  etsim_error_t last_err;
} search_t;

static uint64_t hash_types(const int *t, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint64_t)t[i]) * 1099511628211ull;
  return h;
}

static double score_of(const etsim_shard__ctx_t *c, const etsim_shard_plan_t *p) {
  if (c->o->objective == ETSIM_SHARD_OBJ_MEMORY)
    return (double)p->max_bytes + p->est.iter_ns * 1e-12; /* memory, then time */
  return p->est.iter_ns;
}

/* Rate a type vector (once); returns its score or INFINITY. */
static double evaluate(search_t *s, const int *types, const char *label) {
  uint64_t h = hash_types(types, s->T);
  for (size_t i = 0; i < s->n; i++)
    if (s->hashes[i] == h && memcmp(s->v[i].types, types, s->T * sizeof *types) == 0)
      return s->v[i].score;
  size_t ns = s->T; /* per-table work, then the shards written */
  for (size_t t = 0; t < s->T; t++) ns += n_shards_of(s->c, t, types[t]);
  /* Plans too large to build fail at once (place counts first): they cost
   * no budget.  The first candidate is always rated. */
  if (ns <= MAX_SHARDS + s->T) {
    if (s->n && s->work + ns > WORK_BUDGET) return INFINITY;
    s->work += ns;
  }
  etsim_shard_plan_t p;
  etsim_error_t e = {0};
  int rc = build(s->c, types, label, &p, &e);
  double sc = INFINITY, it = INFINITY;
  if (rc) {
    /* Remember the most telling failure: memory over shard counts. */
    if (rc == ETSIM_ERANGE || !s->last_rc || s->last_rc == ETSIM_EUNSUPPORTED) {
      s->last_rc = rc;
      s->last_err = e;
    }
    if (rc == ETSIM_ENOMEM) return -1;
  } else {
    sc = score_of(s->c, &p);
    it = p.est.iter_ns;
    etsim_shard_plan_free(&p);
  }
  if (etsim_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) return -1;
  uint64_t *nh = etsim_realloc(s->hashes, s->cap * sizeof *nh);
  if (!nh) return -1;
  s->hashes = nh;
  int *copy = etsim_malloc((s->T ? s->T : 1) * sizeof *copy);
  if (!copy) return -1;
  memcpy(copy, types, s->T * sizeof *copy);
  s->v[s->n] = (cand_t){copy, sc, it, ""};
  snprintf(s->v[s->n].label, sizeof s->v[s->n].label, "%s", label);
  s->hashes[s->n++] = h;
  return sc;
}

static void search_free(search_t *s) {
  for (size_t i = 0; i < s->n; i++) etsim_free(s->v[i].types);
  etsim_free(s->v);
  etsim_free(s->hashes);
}

static int cmp_u64_idx(const void *a, const void *b) {
  const order_t *x = a, *y = b; /* ascending bytes */
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

static unsigned allowed_types(const etsim_shard__ctx_t *c) {
  unsigned a = c->o->types ? c->o->types : (1u << ETSIM_SHARD_N_TYPES) - 1;
  if (c->hosts == 1 || c->Pl == 1) a &= ~((1u << ETSIM_SHARD_TWRW) | (1u << ETSIM_SHARD_TWCW));
  return a;
}

/* Run the search; s->v then holds every rated candidate. */
static int run_search(search_t *s, etsim_error_t *err) {
  const etsim_shard__ctx_t *c = s->c;
  const etsim_shard_model_t *m = c->m;
  size_t T = m->n_tables;
  unsigned allowed = allowed_types(c);
  if (!allowed)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "shard: no sharding type allowed (twrw and twcw need more than one "
                           "host of more than one rank)");
  int *ty = etsim_malloc(T * sizeof *ty), *best = etsim_malloc(T * sizeof *best);
  order_t *asc = etsim_malloc(T * sizeof *asc);
  int rc = 0;
  if (!ty || !best || !asc) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  char label[48];
#define EVAL(lbl)                                               \
  do {                                                          \
    if (evaluate(s, ty, (lbl)) < 0) {                           \
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory"); \
      goto done;                                                \
    }                                                           \
  } while (0)
  /* Each allowed type alone. */
  for (int k = 0; k < ETSIM_SHARD_N_TYPES; k++) {
    if (!(allowed & (1u << k))) continue;
    for (size_t t = 0; t < T; t++) ty[t] = k;
    EVAL(etsim_shard_type_name(k));
  }
  /* TorchRec's choice per table: the type whose costliest shard is
   * cheapest. */
  for (size_t t = 0; t < T; t++) {
    double bv = INFINITY;
    ty[t] = -1;
    for (int k = 0; k < ETSIM_SHARD_N_TYPES; k++) {
      if (!(allowed & (1u << k))) continue;
      const etsim_shard_table_t *x = &m->tables[t];
      uint64_t rows = x->rows;
      uint32_t cols = x->dim;
      if (k == ETSIM_SHARD_RW) rows = (rows + c->P - 1) / c->P;
      else if (k == ETSIM_SHARD_TWRW) rows = (rows + c->Pl - 1) / c->Pl;
      else if (k == ETSIM_SHARD_CW || k == ETSIM_SHARD_TWCW)
        cols = etsim_shard__cw_block(cols, c->o->costs.cw_block);
      etsim_shard_t sh;
      etsim_shard__rate(c, k, x, rows, cols, &sh);
      double v = c->o->objective == ETSIM_SHARD_OBJ_MEMORY ? (double)sh.hbm_bytes
                                                           : etsim_shard__total(&sh);
      if (ty[t] < 0 || v < bv) {
        bv = v;
        ty[t] = k;
      }
    }
  }
  EVAL("torchrec");
  /* Hybrids: the smallest share q of the tables one way, the rest another. */
  for (size_t t = 0; t < T; t++) asc[t] = (order_t){table_bytes(&m->tables[t]), (uint32_t)t};
  etsim_qsort(asc, T, sizeof *asc, cmp_u64_idx);
  static const double qs[] = {0.5, 0.75, 0.9, 0.97};
  static const int small[] = {ETSIM_SHARD_DP, ETSIM_SHARD_TW};
  for (size_t a = 0; a < 2; a++) {
    if (!(allowed & (1u << small[a]))) continue;
    for (int big = 0; big < ETSIM_SHARD_N_TYPES; big++) {
      if (big == small[a] || !(allowed & (1u << big))) continue;
      for (size_t qi = 0; qi < sizeof qs / sizeof *qs; qi++) {
        size_t cut = (size_t)(qs[qi] * (double)T);
        if (cut == 0 || cut >= T) continue;
        for (size_t i = 0; i < T; i++) ty[asc[i].t] = i < cut ? small[a] : big;
        snprintf(label, sizeof label, "%s<%.0fMB+%s", etsim_shard_type_name(small[a]),
                 (double)asc[cut].bytes / 1e6, etsim_shard_type_name(big));
        EVAL(label);
      }
    }
  }
  /* Improve the best by moving groups of tables: the 8 largest one by
   * one, the rest in up to 12 size bands. */
  size_t bi = SIZE_MAX;
  for (size_t i = 0; i < s->n; i++)
    if (isfinite(s->v[i].score) && (bi == SIZE_MAX || s->v[i].score < s->v[bi].score)) bi = i;
  if (bi != SIZE_MAX) {
    memcpy(best, s->v[bi].types, T * sizeof *best);
    double bs = s->v[bi].score;
    char blabel[48];
    snprintf(blabel, sizeof blabel, "%s", s->v[bi].label);
    size_t n_ind = T < 8 ? T : 8, rest = T - n_ind, bands = rest < 12 ? rest : 12;
    size_t n_groups = n_ind + bands;
    for (int round = 0; round < 6; round++) {
      double rb = bs;
      size_t rg = SIZE_MAX;
      int rt = -1;
      for (size_t g = 0; g < n_groups; g++) {
        size_t lo, hi; /* positions in descending size order */
        if (g < n_ind) lo = g, hi = g + 1;
        else lo = n_ind + (g - n_ind) * rest / bands, hi = n_ind + (g - n_ind + 1) * rest / bands;
        for (int k = 0; k < ETSIM_SHARD_N_TYPES; k++) {
          if (!(allowed & (1u << k))) continue;
          memcpy(ty, best, T * sizeof *ty);
          int change = 0;
          for (size_t i = lo; i < hi; i++) {
            size_t t = asc[T - 1 - i].t;
            change |= ty[t] != k;
            ty[t] = k;
          }
          if (!change) continue;
          snprintf(label, sizeof label, "%.24s+g%u:%s", blabel, (unsigned)g,
                   etsim_shard_type_name(k));
          double v = evaluate(s, ty, label);
          if (v < 0) {
            rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
            goto done;
          }
          if (v < rb * (1 - 1e-9)) {
            rb = v;
            rg = g;
            rt = k;
          }
        }
      }
      if (rg == SIZE_MAX) break;
      size_t lo, hi;
      if (rg < n_ind) lo = rg, hi = rg + 1;
      else lo = n_ind + (rg - n_ind) * rest / bands, hi = n_ind + (rg - n_ind + 1) * rest / bands;
      for (size_t i = lo; i < hi; i++) best[asc[T - 1 - i].t] = rt;
      bs = rb;
      snprintf(blabel, sizeof blabel, "search");
      if (s->work >= WORK_BUDGET) break;
    }
    /* The improved plan under its own label. */
    for (size_t i = 0; i < s->n; i++)
      if (memcmp(s->v[i].types, best, T * sizeof *best) == 0 && strchr(s->v[i].label, '+') &&
          strstr(s->v[i].label, ":"))
        snprintf(s->v[i].label, sizeof s->v[i].label, "search");
  }
#undef EVAL
done:
  etsim_free(ty);
  etsim_free(best);
  etsim_free(asc);
  return rc;
}

static int cmp_cand(const void *a, const void *b) {
  const cand_t *x = *(const cand_t *const *)a, *y = *(const cand_t *const *)b;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return 0;
}

int etsim_shard_plan_finalists(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                               size_t max, int singles, etsim_shard_plan_t **out, size_t *n_out,
                               etsim_error_t *err) {
  *out = NULL;
  *n_out = 0;
  etsim_shard__ctx_t c;
  int rc = etsim_shard__setup(&c, m, o, err);
  if (rc) return rc;
  /* Tables by size once for every placement of the search. */
  size_t T = m->n_tables;
  order_t *ord = etsim_malloc((T ? T : 1) * sizeof *ord);
  uint32_t *by_size = etsim_malloc((T ? T : 1) * sizeof *by_size);
  if (!ord || !by_size) {
    etsim_free(ord);
    etsim_free(by_size);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t t = 0; t < T; t++) ord[t] = (order_t){table_bytes(&m->tables[t]), (uint32_t)t};
  etsim_qsort(ord, T, sizeof *ord, cmp_order);
  for (size_t t = 0; t < T; t++) by_size[t] = ord[t].t;
  etsim_free(ord);
  c.by_size = by_size;
  search_t s = {&c, T, NULL, 0, 0, NULL, 0, 0, {0}};
  rc = run_search(&s, err);
  cand_t **by = NULL;
  etsim_shard_plan_t *plans = NULL;
  size_t np = 0;
  if (!rc && !(by = etsim_malloc((s.n ? s.n : 1) * sizeof *by)))
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (rc) goto done;
  size_t nb = 0;
  for (size_t i = 0; i < s.n; i++)
    if (isfinite(s.v[i].score)) by[nb++] = &s.v[i];
  if (!nb) {
    if (err) *err = s.last_err;
    rc = s.last_rc ? s.last_rc : etsim_error_set(err, ETSIM_ERANGE, "%s: no plan fits", m->name);
    goto done;
  }
  etsim_qsort(by, nb, sizeof *by, cmp_cand);
  if (!(plans = etsim_calloc(max + ETSIM_SHARD_N_TYPES + 1, sizeof *plans))) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < nb && np < (max ? max : 1); i++) {
    /* Different type vectors can give the same plan (CW of a table no
     * wider than the block is TW): keep one. */
    if (i && by[i]->score == by[i - 1]->score) continue;
    if ((rc = build(&c, by[i]->types, by[i]->label, &plans[np++], err))) {
      np--;
      goto done;
    }
  }
  if (singles) {
    unsigned allowed = allowed_types(&c);
    for (int k = 0; k < ETSIM_SHARD_N_TYPES; k++) {
      if (!(allowed & (1u << k))) continue;
      for (size_t i = 0; i < nb; i++) {
        int uniform = 1;
        for (size_t t = 0; t < m->n_tables && uniform; t++) uniform = by[i]->types[t] == k;
        if (!uniform) continue;
        int dup = 0;
        for (size_t j = 0; j < np && !dup; j++)
          dup = memcmp(plans[j].table_type, by[i]->types, m->n_tables * sizeof(int)) == 0;
        if (!dup) {
          if ((rc = build(&c, by[i]->types, by[i]->label, &plans[np++], err))) {
            np--;
            goto done;
          }
        }
      }
    }
  }
done:
  etsim_free(by);
  etsim_free(by_size);
  search_free(&s);
  if (rc) {
    etsim_shard_plans_free(plans, np);
    return rc;
  }
  *out = plans;
  *n_out = np;
  return 0;
}

int etsim_shard_plan(const etsim_shard_model_t *m, const etsim_shard_opts_t *o,
                     etsim_shard_plan_t *out, etsim_error_t *err) {
  etsim_shard_plan_t *v;
  size_t n;
  int rc = etsim_shard_plan_finalists(m, o, 1, 0, &v, &n, err);
  if (rc) return rc;
  *out = v[0];
  memset(&v[0], 0, sizeof v[0]);
  etsim_shard_plans_free(v, n);
  return 0;
}
